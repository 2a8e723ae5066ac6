// Training-step simulation cost: the default 4,096-GPU dense step, DBRX-like MoE on 4,096 GPUs
// (expert parallel and FSDP), and the dense step on 16,384 GPUs.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

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

BENCHMARK_MAIN();
