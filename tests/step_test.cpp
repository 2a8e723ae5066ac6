#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "netsim/collective.hpp"
#include "test_helpers.hpp"
#include "topology/fabric.hpp"
#include "twin/detail/pipeline_schedule.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"
#include "workload/step_program.hpp"

namespace twin::sim {
namespace {

const std::string kScenarios = std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/";

double breakdown(const StepReport& r, const std::string& key) {
  for (const auto& [k, v] : r.breakdown)
    if (k == key) return v;
  ADD_FAILURE() << "no breakdown entry " << key;
  return 0;
}

double utilization(const StepReport& r, const std::string& kind) {
  for (const auto& [k, v] : r.link_utilization)
    if (k == kind) return v;
  return 0;
}

TEST(ModelFlops, MatchNarayananClosedForms) {
  // GPT-3 175B: 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) model FLOPs per step, and with full
  // recomputation 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) hardware FLOPs.
  const workload::ModelSpec m = workload::model_preset("gpt3-175b");
  const double B = 1536, s = m.seq_len, l = m.layers, h = m.hidden, V = m.vocab;
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(m.training_flops(B) / model, 1.0, 1e-12);
  const double with_recompute = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  const double ours = m.training_flops(B) + m.forward_flops(B) - 2.0 * B * s * V * h;
  EXPECT_NEAR(ours / with_recompute, 1.0, 1e-12);
  // Tying the output layer to the embedding changes the parameters, not the GEMMs: the logits
  // still cost 2 V h per token (GPT-3 ties them; Narayanan's formula counts them once).
  workload::ModelSpec tied = m;
  tied.tied_embeddings = true;
  EXPECT_NEAR(tied.training_flops(B) / model, 1.0, 1e-12);
  EXPECT_NEAR(tied.total_params(), m.total_params() - V * h, 1.0);
  // Parameter counts of the presets land on their published sizes.
  EXPECT_NEAR(m.total_params() / 1e9, 175, 2);
  EXPECT_NEAR(workload::model_preset("llama3-70b").total_params() / 1e9, 70.6, 1);
  EXPECT_NEAR(workload::model_preset("llama3-405b").total_params() / 1e9, 405, 5);
  EXPECT_NEAR(workload::model_preset("mixtral-8x7b").total_params() / 1e9, 46.7, 1);
  EXPECT_NEAR(workload::model_preset("dbrx").total_params() / 1e9, 132, 3);
  EXPECT_NEAR(workload::model_preset("dbrx").active_params() / 1e9, 36, 2);
  // GPT-OSS 120B: 116.8B; 5.1B active counts one of the two embedding matrices.
  const workload::ModelSpec oss = workload::model_preset("gpt-oss-120b");
  EXPECT_NEAR(oss.total_params() / 1e9, 116.8, 0.5);
  EXPECT_NEAR((oss.active_params() - 1.0 * oss.vocab * oss.hidden) / 1e9, 5.1, 0.1);
  EXPECT_TRUE(oss.windowed(0));
  EXPECT_FALSE(oss.windowed(35));
}

TEST(ModelFlops, CausalCountsTheScoresTheMaskKeeps) {
  // Eight tokens: the whole square has 64 entries; the causal mask keeps 1 + 2 + ... + 8 = 36;
  // a window of 3 keeps 1 + 2 + 3 + 3 x 5 = 21 (s w - w (w - 1) / 2).
  workload::ModelSpec m = workload::model_preset("gpt-oss-120b");
  m.seq_len = 8;
  m.sliding_window = 3;
  ASSERT_TRUE(m.windowed(0));
  ASSERT_FALSE(m.windowed(1));
  EXPECT_DOUBLE_EQ(m.attention_entries(0, false), 64);
  EXPECT_DOUBLE_EQ(m.attention_entries(1, true), 36);
  EXPECT_DOUBLE_EQ(m.attention_entries(0, true), 21);
  // 36 layers alternating windowed and full: 18 x (21 + 36) entries, 2 FLOPs per entry and
  // head dimension (QK^T over 64-wide heads, AV over 64-wide heads, 64 heads).
  const double per_entry = 2.0 * 64 * (64 + 64);
  EXPECT_DOUBLE_EQ(m.attention_score_flops(2, true), 2 * 18 * (21 + 36) * per_entry);
  EXPECT_DOUBLE_EQ(m.attention_score_flops(2, false), 2 * 36 * 64 * per_entry);
  // Everything but the scores is the same in both conventions.
  EXPECT_DOUBLE_EQ(m.forward_flops(2, false) - m.forward_flops(2, true),
                   m.attention_score_flops(2, false) - m.attention_score_flops(2, true));

  // Llama 3 70B at 8,192 tokens against NeMo / Megatron-Bridge's llama3_flops: per sequence
  // s l h^2 (12 + 12 g/a + 18 f/h + 6 s/h + 6 V/(l h)), the score term halved (s^2/2; the
  // mask's s(s+1)/2 is 1/s more).
  const workload::ModelSpec l3 = workload::model_preset("llama3-70b");
  const double s = l3.seq_len, l = l3.layers, h = l3.hidden, f = l3.ffn_hidden, V = l3.vocab;
  const double g = l3.kv_heads, a = l3.heads;
  const double nemo = s * l * h * h * (12 + 12 * g / a + 18 * f / h + 6 * s / h + 6 * V / (l * h));
  EXPECT_NEAR(l3.training_flops(1, true) / nemo, 1.0, 1e-4);
  // Over the whole square the score term is 12 s/h: 7.2 % more for this model.
  const double square =
      s * l * h * h * (12 + 12 * g / a + 18 * f / h + 12 * s / h + 6 * V / (l * h));
  EXPECT_NEAR(l3.training_flops(1, false) / square, 1.0, 1e-12);
}

TEST(Step, TheFlopsConventionChangesTheReportNotTheStep) {
  Scenario s = load_scenario(kScenarios + "small-moe.yaml");
  const StepReport square = simulate_step(s);
  s.training.model_flops = "causal";
  const StepReport causal = simulate_step(s);
  EXPECT_DOUBLE_EQ(causal.step_time_s, square.step_time_s);
  const double ratio = s.model.training_flops(s.training.global_batch, true) /
                       s.model.training_flops(s.training.global_batch, false);
  EXPECT_LT(ratio, 1.0);
  EXPECT_NEAR(causal.mfu / square.mfu, ratio, 1e-12);
  EXPECT_NEAR(causal.tflops_per_gpu / square.tflops_per_gpu, ratio, 1e-12);
  EXPECT_NE(step_summary_text(s, causal).find("attention FLOPs counted causal"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(step_summary_json(s, causal))["model_flops"], "causal");
  EXPECT_EQ(causal.model_flops, "causal");
  EXPECT_EQ(step_summary_text(s, square).find("counted causal"), std::string::npos);
}

TEST(Step, DefaultScenarioIsTheReferenceClusterTrainingA70BModel) {
  const Scenario s = load_scenario("");
  const StepReport r = simulate_step(s);
  EXPECT_EQ(r.gpus, 4096);
  EXPECT_GT(r.mfu, 0.30);
  EXPECT_LT(r.mfu, 0.65);
  double sum = 0;
  for (const auto& [k, v] : r.breakdown) sum += v;
  EXPECT_NEAR(sum, r.step_time_s, 1e-9 * r.step_time_s);  // the breakdown accounts for the step
  EXPECT_NEAR(r.tokens_per_s, 1024.0 * 8192 / r.step_time_s, 1e-6);
  EXPECT_NEAR(r.time_to_train_days, 15e12 / (1024.0 * 8192) * r.step_time_s / 86400, 1e-9);
}

Scenario pipeline_only(int pp, int v, int micro_batches) {
  // One node, TP 1, DP 1: only the pipeline schedule and tiny NVLink transfers remain.
  Scenario s = load_scenario(
      "",
      {"cluster.nodes=1", "cluster.gpus_per_node=" + std::to_string(pp),
       "cluster.nics_per_node=" + std::to_string(pp), "fabric.tiers=2", "model.preset=llama3-8b",
       "parallelism.tp=1", "parallelism.pp=" + std::to_string(pp), "parallelism.dp=1",
       "parallelism.virtual_stages=" + std::to_string(v), "parallelism.recompute=full",
       "model.vocab=512", "training.global_batch=" + std::to_string(micro_batches)});
  return s;
}

TEST(Step, OneFOneBBubbleIsPpMinusOneMicroBatches) {
  // 1F1B: step = (m + pp - 1)(t_f + t_b) for equal stages; the idle share is (pp - 1)(t_f + t_b).
  const int pp = 4, m = 8;
  const StepReport r = simulate_step(pipeline_only(pp, 1, m));
  const double per_micro_batch = (breakdown(r, "compute") + breakdown(r, "tp_comm")) / m;
  EXPECT_NEAR(breakdown(r, "pipeline_bubble_and_p2p") / ((pp - 1) * per_micro_batch), 1.0, 0.05);
  // Interleaving with v = 2 halves the bubble.
  const StepReport v2 = simulate_step(pipeline_only(pp, 2, m));
  EXPECT_NEAR(breakdown(v2, "pipeline_bubble_and_p2p") / breakdown(r, "pipeline_bubble_and_p2p"),
              0.5, 0.08);
  EXPECT_LT(v2.step_time_s, r.step_time_s);
}

TEST(Step, GradientSyncOfAChunkDoesNotHoldUpThePipeline) {
  // Interleaved 1F1B, one GPU per node on 25 Gb/s NICs, with and without 4 data-parallel
  // replicas: a chunk's gradient reduce-scatter (hundreds of ms here) starts on its last
  // backward and runs on the communication stream; the input gradient of that backward leaves
  // for the previous stage at once. The bubble stays that of the pipeline alone, and only the
  // step's end waits for the last chunk's sync. (The distributed optimizer's parameter gather
  // goes after the optimizer here, so that the first forwards do not wait for it.)
  auto job = [](int dp) {
    return load_scenario(
        "", {"cluster.nodes=" + std::to_string(4 * dp), "cluster.gpus_per_node=1",
             "cluster.nics_per_node=1", "cluster.nic_gbps=25", "fabric.tiers=2",
             "model.preset=llama3-8b", "model.vocab=512", "parallelism.tp=1", "parallelism.pp=4",
             "parallelism.dp=" + std::to_string(dp), "parallelism.virtual_stages=2",
             "parallelism.recompute=full", "training.global_batch=" + std::to_string(8 * dp),
             "training.overlap_param_gather=false"});
  };
  const StepReport alone = simulate_step(job(1));
  const StepReport synced = simulate_step(job(4));
  const double per_micro_batch = breakdown(alone, "compute") / 8;
  // Within half a micro-batch: the syncs still slow the compute beside them (SM and HBM
  // contention), which the other stages wait for. Holding each backward until its chunk's sync
  // is done would add pp x the sync per chunk (about 3 s, 14 micro-batches, here).
  EXPECT_NEAR(breakdown(synced, "pipeline_bubble_and_p2p"),
              breakdown(alone, "pipeline_bubble_and_p2p"), 0.5 * per_micro_batch);
  EXPECT_GT(breakdown(synced, "dp_comm_exposed"), 0.0);
}

TEST(Step, TheFirstForwardWaitsForTheParameterGatherItCannotHide) {
  // Distributed optimizer, 8 replicas on 25 Gb/s NICs: the updated parameters' all-gather
  // (hundreds of ms) is dispatched bucket by bucket as the step's first forward runs, so that
  // forward lasts max(F, gather + F / layers): its last layer waits for the last bucket. The
  // later micro-batches reuse the parameters.
  auto job = [](bool overlap) {
    return load_scenario(
        "",
        {"cluster.nodes=8", "cluster.gpus_per_node=1", "cluster.nics_per_node=1",
         "cluster.nic_gbps=25", "fabric.tiers=2", "model.preset=llama3-8b", "model.vocab=512",
         "parallelism.tp=1", "parallelism.pp=1", "parallelism.dp=8", "parallelism.virtual_stages=1",
         "parallelism.recompute=full", "training.global_batch=32",
         std::string("training.overlap_param_gather=") + (overlap ? "true" : "false")});
  };
  const StepReport on = simulate_step(job(true));
  const StepReport off = simulate_step(job(false));
  double gather = 0;
  for (const auto& [name, seconds] : on.collective_times)
    if (name == "DP param all_gather s0 c0") gather = seconds;
  auto op = [&](const std::string& name) {
    for (const auto& o : on.timeline)
      if (o.stream == "compute" && o.name == name) return o;
    ADD_FAILURE() << name;
    return TimelineOp{};
  };
  const TimelineOp first = op("F c0 mb0"), second = op("F c0 mb1");
  ASSERT_GT(gather, first.compute_s);  // gather-bound
  EXPECT_NEAR(first.end_s - first.start_s, gather + first.compute_s / 32, 1e-9);
  EXPECT_NEAR(second.end_s - second.start_s, second.compute_s, 1e-9);
  // Without the overlap the whole gather follows the optimizer.
  EXPECT_LT(on.step_time_s, off.step_time_s);
  EXPECT_GT(breakdown(on, "dp_comm_exposed"), gather - first.compute_s);
}

TEST(Step, FsdpsEmbeddingGatherAndReduceScatterHideBehindNothing) {
  // FSDP over 8 GPUs on 100 Gb/s NICs, 2 micro-batches: every forward starts with the
  // embedding's all-gather (Llama 3 8B's 128256 x 4096 table), which nothing before it can hide,
  // and every backward ends with that table's gradient reduce-scatter, complete only once the
  // last layer's backward is done. Each lasts as the network simulation says, on the
  // communication stream, while the compute stream waits.
  const StepReport r = simulate_step(load_scenario(
      "",
      {"cluster.nodes=8", "cluster.gpus_per_node=1", "cluster.nics_per_node=1",
       "cluster.nic_gbps=100", "fabric.tiers=2", "model.preset=llama3-8b", "parallelism.tp=1",
       "parallelism.pp=1", "parallelism.dp=8", "parallelism.zero=3", "parallelism.virtual_stages=1",
       "parallelism.recompute=full", "training.global_batch=16"}));
  double gather = 0, scatter = 0;
  for (const auto& [name, seconds] : r.collective_times) {
    if (name == "FSDP embedding all_gather s0 c0") gather = seconds;
    if (name == "FSDP embedding reduce_scatter s0 c0") scatter = seconds;
  }
  ASSERT_GT(gather, 0.0);
  ASSERT_GT(scatter, 0.0);
  std::vector<TimelineOp> gathers, scatters, forwards, backwards;
  for (const auto& o : r.timeline) {
    if (o.stream == "comm" && o.name == "FSDP embedding all_gather c0") gathers.push_back(o);
    if (o.stream == "comm" && o.name == "FSDP embedding reduce_scatter c0") scatters.push_back(o);
    if (o.stream == "compute" && o.name.rfind("F c0 mb", 0) == 0) forwards.push_back(o);
    if (o.stream == "compute" && o.name.rfind("B c0 mb", 0) == 0) backwards.push_back(o);
  }
  ASSERT_EQ(gathers.size(), 2u);
  ASSERT_EQ(scatters.size(), 2u);
  ASSERT_EQ(forwards.size(), 2u);
  ASSERT_EQ(backwards.size(), 2u);
  EXPECT_DOUBLE_EQ(gathers[0].start_s, forwards[0].start_s);  // the step's first thing
  for (int mb = 0; mb < 2; ++mb) {
    EXPECT_NEAR(gathers[mb].end_s - gathers[mb].start_s, gather, 1e-12);
    EXPECT_NEAR(scatters[mb].end_s - scatters[mb].start_s, scatter, 1e-12);
    EXPECT_GE(gathers[mb].start_s, forwards[mb].start_s);
    EXPECT_DOUBLE_EQ(scatters[mb].end_s, backwards[mb].end_s);  // the backward waits for it
  }
  EXPECT_GE(breakdown(r, "dp_comm_exposed"), 2 * (gather + scatter) - 1e-12);
}

TEST(Step, ALaterChunksParameterGatherRunsWhileTheChunkBeforeComputes) {
  // Interleaved over 2 chunks: chunk 1's gather is dispatched with chunk 0's first forward and
  // runs after chunk 0's on the communication stream, while chunk 0's micro-batches compute;
  // here it ends before chunk 1's first forward, which then waits for nothing.
  const StepReport r = simulate_step(load_scenario(
      "",
      {"cluster.nodes=8", "cluster.gpus_per_node=1", "cluster.nics_per_node=1",
       "cluster.nic_gbps=400", "fabric.tiers=2", "model.preset=llama3-8b", "model.vocab=512",
       "parallelism.tp=1", "parallelism.pp=2", "parallelism.dp=4", "parallelism.virtual_stages=2",
       "parallelism.recompute=full", "training.global_batch=16"}));
  auto op = [&](const std::string& stream, const std::string& name) {
    for (const auto& o : r.timeline)
      if (o.stage == 0 && o.stream == stream && o.name == name) return o;
    ADD_FAILURE() << name;
    return TimelineOp{};
  };
  const TimelineOp gather0 = op("comm", "DP param all_gather c0"),
                   gather1 = op("comm", "DP param all_gather c1");
  const TimelineOp first0 = op("compute", "F c0 mb0"), first1 = op("compute", "F c1 mb0");
  EXPECT_DOUBLE_EQ(gather0.start_s, first0.start_s);
  EXPECT_DOUBLE_EQ(gather1.start_s, gather0.end_s);  // queued behind chunk 0's
  ASSERT_LT(gather1.end_s, first1.start_s);
  EXPECT_NEAR(first1.end_s - first1.start_s, first1.compute_s, 1e-9);
  // Dispatched only with chunk 1's own first forward, it would have held that forward (8
  // layers) up: gather + F / 8 > F.
  EXPECT_GT(gather1.end_s - gather1.start_s + first1.compute_s / 8, first1.compute_s);
}

TEST(Step, AStragglerSlowsEveryone) {
  Scenario s = load_scenario(kScenarios + "small-3tier.yaml");
  const StepReport healthy = simulate_step(s);
  s.slow_gpu = 5;  // stage 0
  s.slow_factor = 1.5;
  const StepReport slow = simulate_step(s);
  // Stage 0 of one replica computes 1.5x slower; the pipeline and the gradient all-reduce make
  // the whole job wait for it.
  EXPECT_GT(slow.step_time_s, 1.1 * healthy.step_time_s);
  s.slow_factor = 1.0;
  EXPECT_DOUBLE_EQ(simulate_step(s).step_time_s, healthy.step_time_s);
}

TEST(Step, SameScenarioSameResult) {
  const Scenario s = load_scenario(kScenarios + "small-moe.yaml");
  EXPECT_EQ(step_summary_json(s, simulate_step(s)), step_summary_json(s, simulate_step(s)));
}

TEST(Step, TimeSharesSplitTheCriticalStagesComputeByKernelClass) {
  // The four kernel classes add up to the critical stage's compute share; the rest of the step
  // is outside kernels. The MoE step spends part of it in all-to-alls.
  const Scenario s = load_scenario(kScenarios + "small-moe.yaml");
  const StepReport r = simulate_step(s);
  const TimeShares t = step_time_shares(r);
  double compute_s = 0;
  for (const auto& [name, seconds] : r.breakdown)
    if (name == "compute") compute_s = seconds;
  EXPECT_NEAR(t.gemm + t.attention + t.memory + t.launch, compute_s / r.step_time_s, 1e-12);
  EXPECT_NEAR(t.outside_kernels, 1.0 - compute_s / r.step_time_s, 1e-12);
  EXPECT_GT(t.gemm, 0.0);
  EXPECT_GT(t.attention, 0.0);
  EXPECT_GT(t.memory, 0.0);
  EXPECT_GT(t.outside_kernels, 0.0);
  const auto j = nlohmann::json::parse(step_summary_json(s, r));
  EXPECT_DOUBLE_EQ(j["time_shares"]["attention"].get<double>(), t.attention);
  EXPECT_NE(step_summary_text(s, r).find("GEMM "), std::string::npos);
  EXPECT_EQ(step_time_shares(StepReport{}).gemm, 0.0);  // no step, no shares
}

TEST(Step, NcclBesideComputeTakesItsSmsAndTheHbmTrafficOfTheGpusNicShare) {
  // H100: NCCL's 32 channels of 132 SMs leave a tensor-core kernel 100 of them, 32 % slower;
  // the flex dispatcher holds 20 SMs instead. Data-parallel traffic reads and writes 3 HBM
  // bytes per byte sent at the line rate of the GPU's NICs: at 47.5 GB/s out of 3 TB/s that is
  // 4.75 % of HBM for one NIC per GPU, half for a NIC two GPUs share, twice for two NICs, and
  // never more than half of HBM.
  const calibrate::KernelProfile k = calibrate::load_profile("h100-sxm").kernels;
  ASSERT_EQ(k.nccl_channels.value, 32.0);
  ASSERT_EQ(k.sm_count.value, 132.0);
  ASSERT_EQ(k.nccl_hbm_bytes_per_byte.value, 3.0);
  auto hbm_slowdown = [](double f) { return f / (1.0 - f); };
  const auto one = detail::Contention::of(k, false, 1.0, 47.5e9, 3000e9);
  EXPECT_NEAR(one.sm_slowdown, 0.32, 1e-12);
  EXPECT_NEAR(one.ep_sm_slowdown, 0.32, 1e-12);
  EXPECT_NEAR(one.dp_hbm_slowdown, hbm_slowdown(0.0475), 1e-12);
  EXPECT_NEAR(detail::Contention::of(k, true, 1.0, 47.5e9, 3000e9).ep_sm_slowdown, 20.0 / 112,
              1e-12);
  EXPECT_NEAR(detail::Contention::of(k, false, 0.5, 47.5e9, 3000e9).dp_hbm_slowdown,
              hbm_slowdown(0.02375), 1e-12);
  EXPECT_NEAR(detail::Contention::of(k, false, 2.0, 47.5e9, 3000e9).dp_hbm_slowdown,
              hbm_slowdown(0.095), 1e-12);
  EXPECT_NEAR(detail::Contention::of(k, false, 64.0, 47.5e9, 3000e9).dp_hbm_slowdown, 1.0, 1e-12);
  // A kernel of 1 s tensor-core and 1 s memory-bound time, half of it beside NCCL.
  EXPECT_NEAR(one.extra(1.0, 1.0, 1.0), 0.5 * (0.32 + hbm_slowdown(0.0475)), 1e-12);
}

TEST(Step, MoeWithFsdpLoadsTheFabricFarMoreThanDenseOfEqualActiveFlops) {
  const StepReport moe = simulate_step(load_scenario(kScenarios + "moe-fsdp.yaml"));
  const StepReport dense = simulate_step(load_scenario(kScenarios + "dense-fsdp.yaml"));
  EXPECT_GT(utilization(moe, "nic_leaf"), 2.0 * utilization(dense, "nic_leaf"));
  EXPECT_GT(moe.step_time_s, dense.step_time_s);
  // HSDP keeps the gathers under the leaves: less traffic through spines and cores (bytes per
  // step: the mean utilization times the step, on the same fabric).
  const StepReport hsdp = simulate_step(load_scenario(kScenarios + "moe-hsdp.yaml"));
  for (const char* kind : {"leaf_spine", "spine_core"})
    EXPECT_LT(utilization(hsdp, kind) * hsdp.step_time_s,
              0.8 * utilization(moe, kind) * moe.step_time_s)
        << kind;
}

TEST(Step, OversubscriptionCostsMoeMoreThanDense) {
  auto slowdown = [](const std::string& path) {
    const double base = simulate_step(load_scenario(path)).step_time_s;
    return simulate_step(load_scenario(path, {"fabric.oversubscription=2"})).step_time_s / base;
  };
  const double dense = slowdown("");
  const double moe = slowdown(kScenarios + "moe-ep.yaml");
  EXPECT_LT(dense, 1.05);
  EXPECT_GT(moe, dense + 0.05);
}

using test::error_of;

TEST(Step, BadJobsAreClearErrors) {
  auto run = [](std::vector<std::string> sets) { return simulate_step(load_scenario("", sets)); };
  EXPECT_EQ(error_of([&] { run({"parallelism.dp=64"}); }).field(), "parallelism");
  EXPECT_EQ(error_of([&] {
              run({"parallelism.tp=16", "parallelism.dp=64", "model.heads=8"});
            }).field(),
            "parallelism.tp");
  EXPECT_EQ(error_of([&] {
              run({"parallelism.pp=3", "parallelism.dp=170"});
            }).field(),
            "parallelism");
  EXPECT_EQ(error_of([&] { run({"parallelism.virtual_stages=3"}); }).field(), "parallelism.pp");
  EXPECT_EQ(error_of([&] { run({"parallelism.ep=2"}); }).field(), "parallelism.ep");
  const auto memory = error_of([&] {
    run({"model.preset=llama3-405b", "parallelism.pp=2", "parallelism.dp=256",
         "parallelism.virtual_stages=1"});
  });
  EXPECT_EQ(memory.field(), "parallelism");
  EXPECT_NE(memory.reason().find("does not fit"), std::string::npos);
  EXPECT_EQ(memory.kind(), core::Error::Kind::does_not_fit);
  // virtual_stages: auto rules out only interleavings that do not fit; an error of the scenario
  // itself is reported as it is, not as "no interleaving fits".
  const auto wrong_count = error_of([&] {
    run({"parallelism.virtual_stages=auto", "parallelism.pp=3", "parallelism.dp=170"});
  });
  EXPECT_EQ(wrong_count.field(), "parallelism");
  EXPECT_EQ(wrong_count.kind(), core::Error::Kind::input);
  const auto none_fits = error_of([&] {
    run({"model.preset=llama3-405b", "parallelism.pp=2", "parallelism.dp=256",
         "parallelism.virtual_stages=auto"});
  });
  EXPECT_EQ(none_fits.field(), "parallelism.virtual_stages");
  EXPECT_NE(none_fits.reason().find("no interleaving fits"), std::string::npos);
  EXPECT_EQ(error_of([&] { load_scenario("", {"model.preset=llama4"}); }).field(), "model.preset");
  EXPECT_EQ(error_of([&] { run({"training.global_batch=1000"}); }).field(),
            "training.global_batch");
  EXPECT_EQ(
      error_of([&] { simulate_step(load_scenario(kScenarios + "superpod-4su.yaml")); }).field(),
      "model");
}

TEST(Step, OutputsTimelineTraceAndHdf5) {
  const Scenario s = load_scenario(kScenarios + "small-moe.yaml");
  const StepReport r = simulate_step(s);
  EXPECT_FALSE(r.timeline.empty());
  const std::string trace = step_trace_json(r);
  EXPECT_NE(trace.find("\"traceEvents\""), std::string::npos);
  const std::string path = ::testing::TempDir() + "/results.h5";
  write_step_hdf5(path, r, std::vector<double>(r.link_bytes.size(), 50e9));
  EXPECT_GT(std::filesystem::file_size(path), 1000u);
}

}  // namespace
}  // namespace twin::sim

namespace twin::sim {
namespace {

TEST(Step, PerRankModeMatchesRankClassesInTheSymmetricCase) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {kScenarios + "small-3tier.yaml", {}},
      {kScenarios + "small-moe.yaml", {}},
      {kScenarios + "small-3tier.yaml",  // 128 GPUs, FSDP
       {"cluster.nodes=16", "fabric.switch_radix=16", "parallelism.pp=1", "parallelism.dp=16",
        "parallelism.zero=3", "training.global_batch=64"}},
  };
  for (const auto& [path, sets] : cases) {
    const Scenario s = load_scenario(path, sets);
    const StepReport classes = simulate_step(s);
    const StepReport ranks = simulate_step(s, "native", /*per_rank=*/true);
    EXPECT_EQ(classes.step_time_s, ranks.step_time_s) << path;
    for (std::size_t i = 0; i < classes.link_bytes.size(); ++i)
      ASSERT_NEAR(classes.link_bytes[i], ranks.link_bytes[i], 1e-6 * (1 + classes.link_bytes[i]))
          << path;
  }
}

}  // namespace
}  // namespace twin::sim

namespace twin::sim {
namespace {

TEST(Step, FabricFaultsFromTheScenarioSlowTheStep) {
  const Scenario healthy = load_scenario(kScenarios + "small-moe.yaml");
  const double base = simulate_step(healthy).step_time_s;
  // A leaf-spine cable at a quarter of its bandwidth: the all-to-alls through it wait for it.
  const Scenario degraded = load_scenario(
      kScenarios + "small-moe.yaml", {"perturbations.degraded_cables=[{cable: 70, factor: 0.25}]"});
  EXPECT_GT(simulate_step(degraded).step_time_s, base);
  // A dead spine: routes go around it and the step still runs.
  const Scenario spine = load_scenario(kScenarios + "small-moe.yaml",
                                       {"perturbations.failed_switches=[\"spine[1]\"]"});
  EXPECT_GT(simulate_step(spine).step_time_s, base);  // its traffic doubles up on other uplinks
  // Names and indices are checked against the fabric.
  const topology::Fabric fabric(healthy.cluster, healthy.fabric);
  EXPECT_THROW(fabric_state(load_scenario("", {"perturbations.failed_switches=[\"spine[999]\"]"}),
                            topology::Fabric(load_scenario("").cluster, load_scenario("").fabric)),
               core::Error);
  EXPECT_THROW(fabric_state(load_scenario(kScenarios + "small-moe.yaml",
                                          {"perturbations.failed_cables=[100000]"}),
                            fabric),
               core::Error);
  EXPECT_TRUE(fabric_state(healthy, fabric).healthy());
}

}  // namespace
}  // namespace twin::sim

namespace twin::sim {
namespace {

TEST(Step, CollectiveAlgorithmsCanBeChosenPerScenario) {
  const Scenario pairwise =
      load_scenario(kScenarios + "small-moe.yaml", {"collectives.alltoall=pairwise"});
  EXPECT_EQ(pairwise.algorithm_for("alltoall"), "pairwise");
  EXPECT_EQ(pairwise.algorithm_for("all_reduce"), "auto");
  // The step's expert all-to-all is netsim's pairwise all-to-all of the same groups and bytes:
  // every EP group of stage 0 at once, the largest chunk's dispatch buffer.
  const StepReport r = simulate_step(pairwise);
  const topology::Fabric fabric(pairwise.cluster, pairwise.fabric);
  const calibrate::Profile profile = calibrate::load_profile(pairwise.cluster.gpu);
  const auto& p = pairwise.parallelism;
  const workload::Layout layout =
      workload::make_layout(pairwise.model, p, pairwise.training, fabric.gpu_count());
  ASSERT_GT(layout.ep, 1);
  double bytes = 0;
  for (const auto& chunk : r.program.chunks[0]) bytes = std::max(bytes, chunk.ep_bytes);
  ASSERT_GT(bytes, 0);
  netsim::CollectiveSimulator net(fabric, nullptr, profile, netsim::make_engine("native"));
  const double expected =
      net.run("alltoall", "pairwise", layout.dp_groups(0, layout.ep), bytes).time_s;
  double actual = -1;
  for (const auto& [name, seconds] : r.collective_times)
    if (name == "EP alltoall s0") actual = seconds;
  EXPECT_DOUBLE_EQ(actual, expected);
  EXPECT_EQ(error_of([] { load_scenario("", {"collectives.all_reduce=rign"}); }).field(),
            "collectives.all_reduce");
}

// Data-parallel collectives go in the units the frameworks issue them in, each paying its own
// latency: FSDP one per transformer layer, Megatron's distributed optimizer buckets of
// max(40M, 1M x dp) parameters (one bucket when gradient reduction is not overlapped).
TEST(Step, DataParallelCollectivesGoLayerByLayerOrInBuckets) {
  const std::vector<std::string> base = {"cluster.nodes=4",         "fabric.tiers=2",
                                         "fabric.switch_radix=16",  "model.preset=llama3-8b",
                                         "parallelism.tp=1",        "parallelism.pp=1",
                                         "parallelism.dp=32",       "parallelism.virtual_stages=1",
                                         "training.global_batch=64"};
  // `part`: all the stage's parameters, the layers' alone, or the embedding's alone.
  enum class Part { all, layers, embedding };
  auto check = [&](std::vector<std::string> extra, const std::string& label, const char* op,
                   bool params_gathered, int units, Part part = Part::all) {
    extra.insert(extra.begin(), base.begin(), base.end());
    const Scenario s = load_scenario("", extra);
    const StepReport r = simulate_step(s);
    const topology::Fabric fabric(s.cluster, s.fabric);
    const calibrate::Profile profile = calibrate::load_profile(s.cluster.gpu);
    const workload::Layout layout =
        workload::make_layout(s.model, s.parallelism, s.training, fabric.gpu_count());
    const auto& chunk = r.program.chunks[0][0];
    const double params = part == Part::all      ? chunk.params
                          : part == Part::layers ? chunk.params - chunk.embedding_params
                                                 : chunk.embedding_params;
    const double bytes =
        (params_gathered ? s.training.param_gather_bytes() : s.training.grad_bytes()) * params;
    netsim::CollectiveSimulator net(fabric, nullptr, profile, netsim::make_engine("native"));
    const double one = net.run(op, "auto", layout.dp_groups(0, layout.dp), bytes / units).time_s;
    double actual = -1;
    for (const auto& [name, seconds] : r.collective_times)
      if (name == label) actual = seconds;
    EXPECT_NEAR(actual, units * one, 1e-12 * actual) << label << " in " << units;
    return units * one;
  };
  // FSDP: 32 layers, 32 all-gathers and reduce-scatters of a layer's parameters each; the
  // embedding (128256 x 4096 of Llama 3 8B's 8.0 B parameters) one of each on its own.
  check({"parallelism.zero=3"}, "FSDP all_gather s0 c0", "all_gather", true, 32, Part::layers);
  check({"parallelism.zero=3"}, "FSDP reduce_scatter s0 c0", "reduce_scatter", false, 32,
        Part::layers);
  check({"parallelism.zero=3"}, "FSDP embedding all_gather s0 c0", "all_gather", true, 1,
        Part::embedding);
  check({"parallelism.zero=3"}, "FSDP embedding reduce_scatter s0 c0", "reduce_scatter", false, 1,
        Part::embedding);
  // Distributed optimizer, dp 32: the stage's parameters in buckets of 40M.
  const double dense =
      simulate_step(load_scenario("", {base.begin(), base.end()})).program.chunks[0][0].params;
  const int buckets = static_cast<int>(std::ceil(dense / 40e6));
  EXPECT_GT(buckets, 150);
  const double bucketed = check({}, "DP reduce_scatter s0 c0", "reduce_scatter", false, buckets);
  const double whole = check({"training.overlap_grad_reduce=false"}, "DP reduce_scatter s0 c0",
                             "reduce_scatter", false, 1);
  EXPECT_GT(bucketed, whole);  // every bucket pays the ring's latency
}

}  // namespace
}  // namespace twin::sim
