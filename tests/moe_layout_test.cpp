// Closed-form checks of the expert layout (Megatron-Core's MoE parallel folding): EP groups over
// the TP x DP ranks of a stage, expert tensor parallelism, and the errors of bad input.
#include <gtest/gtest.h>

#include <map>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

ModelSpec moe_model() {
  ModelSpec m;
  m.name = "moe-test";
  m.layers = 4;
  m.hidden = 2048;
  m.heads = 16;
  m.kv_heads = 4;
  m.ffn_hidden = 768;
  m.vocab = 32000;
  m.seq_len = 4096;
  m.experts = 32;
  m.top_k = 4;
  m.expert_ffn_hidden = 768;
  return m;
}

ParallelismSpec folded(int expert_tp) {
  ParallelismSpec p;
  p.tp = 2;
  p.pp = 1;
  p.dp = 4;
  p.ep = 8;
  p.expert_tp = expert_tp;
  p.virtual_stages = 1;
  return p;
}

TEST(ExpertLayout, DefaultExpertTpKeepsEpGroupsOnConsecutiveDpRanks) {
  // etp = tp = 2, ep = 2 on dp 4: EP groups are two consecutive DP ranks of one TP rank
  // (GPUs t + 2 d), the same groups as dp_groups(stage, ep); expert DP 2 x 4 / (2 x 2) = 2.
  ParallelismSpec p = folded(0);
  p.ep = 2;
  TrainingSpec t;
  t.global_batch = 8;
  const Layout l = make_layout(moe_model(), p, t, 8);
  EXPECT_EQ(l.etp, 2);
  EXPECT_EQ(l.ep_groups(0), l.dp_groups(0, 2));
  EXPECT_EQ(l.expert_dp(), 2);
  const std::vector<std::vector<int>> expected = {{0, 2}, {4, 6}, {1, 3}, {5, 7}};
  EXPECT_EQ(l.ep_groups(0), expected);
  const std::vector<std::vector<int>> edp = {{0, 4}, {2, 6}, {1, 5}, {3, 7}};
  EXPECT_EQ(l.expert_dp_groups(0), edp);
}

TEST(ExpertLayout, EpFoldsOverTensorAndDataParallelRanks) {
  // Qwen3-235B's shape of layout: ep (8) > dp (4), allowed with expert_tp 1 because ep x etp
  // divides tp x dp = 8: one EP group of all 8 GPUs of the stage, no expert data parallelism.
  TrainingSpec t;
  t.global_batch = 8;
  const Layout l = make_layout(moe_model(), folded(1), t, 8);
  const std::vector<std::vector<int>> one = {{0, 1, 2, 3, 4, 5, 6, 7}};
  EXPECT_EQ(l.ep_groups(0), one);
  EXPECT_EQ(l.expert_dp(), 1);
}

TEST(ExpertLayout, WholeExpertsSeeTheTokensOfTheirTpGroupShare) {
  // Per GPU the expert FLOPs do not depend on the layout; with etp 1 each expert GEMM has
  // tp x the rows (tokens: T k etp / tp over E / ep experts) and the whole f_e, with etp 2 half.
  const ModelSpec m = moe_model();
  TrainingSpec t;
  t.global_batch = 8;
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const KernelCoster c(h100, "bf16");
  auto fc1 = [&](const ParallelismSpec& p) {
    const Layout l = make_layout(m, p, t, 8);
    for (const auto& b : chunk_program(m, p, t, l, c, 0, 0).blocks)
      for (const auto& k : b.forward)
        if (k.name == "expert fc1 (grouped)") return k;
    return Kernel{};
  };
  ParallelismSpec split = folded(0);
  split.ep = 2;  // etp 2 needs ep x 2 | 8
  ParallelismSpec whole = folded(1);
  whole.ep = 2;
  const Kernel a = fc1(split), b = fc1(whole);
  // T = 4096 tokens, k = 4: etp 2 -> 4096 x 4 x 2 / 2 / 16 experts = 1024 rows, 2 x 768 / 2.
  EXPECT_EQ(a.shape, "16x(1024x768x2048)");
  EXPECT_EQ(b.shape, "16x(512x1536x2048)");
  EXPECT_DOUBLE_EQ(a.flops, b.flops);
}

TEST(ExpertLayout, TokensAreSortedByLocalExpertWhenARankHoldsSeveral) {
  // ep 8, etp 1, tp 2: T k etp / tp = 4096 x 4 / 2 = 8192 tokens arrive, grouped by sender; with
  // 32 / 8 = 4 experts here the dispatcher copies them into expert order and back (one read and
  // one write of 8192 x 2048 x 2 bytes each way, forward and backward); with one expert per
  // rank there is nothing to sort.
  TrainingSpec t;
  t.global_batch = 8;
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const KernelCoster c(h100, "bf16");
  auto kernels = [&](const ModelSpec& m, bool forward) {
    const Layout l = make_layout(m, folded(1), t, 8);
    std::map<std::string, Kernel> out;
    for (const auto& b : chunk_program(m, folded(1), t, l, c, 0, 0).blocks)
      for (const auto& k : forward ? b.forward : b.backward) out[k.name] = k;
    return out;
  };
  const double bytes = 2.0 * 8192 * 2048 * 2;
  auto forward = kernels(moe_model(), true);
  auto backward = kernels(moe_model(), false);
  for (const std::string name : {"sort by local expert", "unsort by local expert"}) {
    ASSERT_TRUE(forward.count(name)) << name;
    EXPECT_DOUBLE_EQ(forward[name].bytes, bytes);
    EXPECT_DOUBLE_EQ(forward[name].time_s, c.launch_s() + bytes / c.memory_kernel_Bps());
    EXPECT_DOUBLE_EQ(backward[name + " bwd"].bytes, bytes);
  }
  ModelSpec one_each = moe_model();
  one_each.experts = 8;
  EXPECT_FALSE(kernels(one_each, true).count("sort by local expert"));
  EXPECT_FALSE(kernels(one_each, true).count("unsort by local expert"));
}

TEST(ExpertLayout, BadExpertLayoutNamesTheField) {
  TrainingSpec t;
  t.global_batch = 8;
  ParallelismSpec p = folded(3);  // does not divide tp 2
  EXPECT_EQ(test::error_of([&] { make_layout(moe_model(), p, t, 8); }).field(),
            "parallelism.expert_tp");
  p = folded(2);  // ep 8 x etp 2 = 16 does not divide tp x dp = 8
  EXPECT_EQ(test::error_of([&] { make_layout(moe_model(), p, t, 8); }).field(), "parallelism.ep");
  p = folded(1);
  p.sequence_parallel = false;  // the MoE layer takes the sequence-parallel shard
  EXPECT_EQ(test::error_of([&] { make_layout(moe_model(), p, t, 8); }).field(),
            "parallelism.expert_tp");
  EXPECT_EQ(test::error_of([&] { make_layout(moe_model(), folded(-1), t, 8); }).field(),
            "parallelism.expert_tp");
  // Through the scenario reader, as a user would write it.
  EXPECT_EQ(test::error_of([] {
              sim::simulate_step(sim::load_scenario("", {"parallelism.expert_tp=3"}));
            }).field(),
            "parallelism.expert_tp");
}

}  // namespace
}  // namespace twin::workload
