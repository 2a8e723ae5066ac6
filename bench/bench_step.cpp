// Training-step simulation cost: the default 4,096-GPU dense step, DBRX-like MoE on 4,096 GPUs
// (expert parallel and FSDP), and the dense step on 16,384 GPUs.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "twin/campaign.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"

namespace {

using namespace twin;

void run(benchmark::State& state, const std::string& path, const std::vector<std::string>& sets) {
  const sim::Scenario scenario = sim::load_scenario(path, sets);
  double step = 0;
  for (auto _ : state) step = sim::simulate_step(scenario).step_time_s;
  state.counters["gpus"] = scenario.cluster.gpus();
  state.counters["step_s"] = step;
}

const std::string kDir = CLUSTERTWIN_SOURCE_DIR "/scenarios/";

void BM_DenseDefault4096(benchmark::State& s) {
  run(s, "", {});
}
void BM_MoeExpertParallel4096(benchmark::State& s) {
  run(s, kDir + "moe-ep.yaml", {});
}
void BM_MoeFsdp4096(benchmark::State& s) {
  run(s, kDir + "moe-fsdp.yaml", {});
}
void BM_Dense16384(benchmark::State& s) {
  run(s, "", {"cluster.nodes=2048", "parallelism.dp=512", "training.global_batch=4096"});
}

BENCHMARK(BM_DenseDefault4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MoeExpertParallel4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MoeFsdp4096)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Dense16384)->Unit(benchmark::kMillisecond);

}  // namespace

namespace {

/// A 30-day campaign of the 4,096-GPU job at Llama 3 failure rates.
sim::CampaignInputs campaign_4096() {
  sim::CampaignInputs in;
  in.nodes = 512;
  in.gpus = 4096;
  in.work_s = 30 * 86400.0;
  in.straggler_slowdown = 1.1;
  return in;
}

// 1,000 trials, one thread.
void BM_Campaign1000Trials30Days4096(benchmark::State& state) {
  const sim::CampaignInputs in = campaign_4096();
  sim::CampaignOptions o;
  o.trials = 1000;
  o.threads = 2;
  double p50 = 0;
  for (auto _ : state) {
    std::vector<double> ettr;
    const double interval = 40 * 60.0;
    for (int t = 0; t < o.trials; ++t) ettr.push_back(sim::run_trial(in, interval, 1, t).ettr);
    p50 = sim::percentiles(ettr).p50;
  }
  state.counters["ettr_p50"] = p50;
}
BENCHMARK(BM_Campaign1000Trials30Days4096)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_CampaignFullReport1000(benchmark::State& state) {
  const sim::CampaignInputs in = campaign_4096();
  sim::CampaignOptions o;
  o.trials = 1000;
  o.threads = 2;
  for (auto _ : state) benchmark::DoNotOptimize(sim::run_campaign(in, o).ettr.p50);
}
BENCHMARK(BM_CampaignFullReport1000)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
