// Closed-form checks of the expert layout (Megatron-Core's MoE parallel folding): EP groups over
// the TP x DP ranks of a stage, expert tensor parallelism, and the errors of bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "program_helpers.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/moe_dispatch.hpp"
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
  const KernelCoster& c = test::h100_bf16();
  auto kernels = [&](const ModelSpec& m, bool forward) {
    const Layout l = make_layout(m, folded(1), t, 8);
    return test::kernels_by_name(chunk_program(m, folded(1), t, l, c, 0, 0), forward);
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

TEST(ExpertLayout, CurrentScalingQuantizesEachExpertsTokensOnItsOwn) {
  // The 8192 tokens arriving at a rank's 4 experts (as above), h 2048, in FP8. Delayed scaling:
  // one multi-tensor cast-transpose of all of them. Current scaling: per expert an amax pass, a
  // scale kernel and a cast, each paying its start-up: 4 x (t_launch + bytes / 4 / rate).
  TrainingSpec t;
  t.global_batch = 8;
  t.precision = "fp8";
  const KernelCoster& c = test::h100_fp8();
  const ModelSpec m = moe_model();
  auto forward = [&] {
    const Layout l = make_layout(m, folded(1), t, 8);
    return test::kernels_by_name(chunk_program(m, folded(1), t, l, c, 0, 0));
  };
  const double elements = 8192.0 * 2048;
  const double rate = c.memory_kernel_Bps();
  auto delayed = forward();
  EXPECT_DOUBLE_EQ(delayed["expert fc1 (grouped) input fp8 cast-transpose"].time_s,
                   c.launch_s() + 4 * elements / rate);
  EXPECT_FALSE(delayed.count("expert fc1 (grouped) input amax"));
  t.fp8_recipe = "tensorwise";
  auto current = forward();
  const Kernel amax = current["expert fc1 (grouped) input amax"];
  EXPECT_EQ(amax.shape, fmt::format("4 x {:.3g} B", 2 * elements / 4));
  EXPECT_DOUBLE_EQ(amax.time_s, 4 * (c.launch_s() + 2 * elements / 4 / rate));
  EXPECT_DOUBLE_EQ(current["expert fc1 (grouped) input fp8 scale"].time_s, 4 * c.launch_s());
  EXPECT_DOUBLE_EQ(current["expert fc1 (grouped) input fp8 cast-transpose"].time_s,
                   4 * (c.launch_s() + 4 * elements / 4 / rate));
}

TEST(FlexDispatch, HitProbabilityOfTopKDistinctExperts) {
  // One pick: the set's share. A set holding every expert: certain. Qwen3-30B on two nodes
  // (128 experts, 64 per node, top-8): 1 - (64 x 63 x ... x 57) / (128 x 127 x ... x 121).
  EXPECT_DOUBLE_EQ(expert_hit_probability(128, 16, 1), 16.0 / 128);
  EXPECT_DOUBLE_EQ(expert_hit_probability(128, 128, 8), 1.0);
  EXPECT_DOUBLE_EQ(expert_hit_probability(128, 125, 8), 1.0);  // fewer than 8 outside it
  double miss = 1;
  for (int i = 0; i < 8; ++i) miss *= (64.0 - i) / (128.0 - i);
  EXPECT_DOUBLE_EQ(expert_hit_probability(128, 64, 8), 1 - miss);
  EXPECT_NEAR(expert_hit_probability(128, 64, 8), 0.9969, 1e-4);
}

TEST(FlexDispatch, GroupLimitedRoutingReachesFewerNodes) {
  // DeepSeek-V3: 256 experts in 8 groups of 32, top-8 from the best 4 groups. A node holding one
  // whole group is hit when its group is selected (4 of 8) and one of the 8 lands in it (among
  // the 128 experts of the selected groups): 0.5 x hit(128, 32, 8), against hit(256, 32, 8)
  // ungrouped. A GPU holding 4 experts of a group: 0.5 x hit(128, 4, 8).
  ModelSpec m = model_preset("deepseek-v3");
  ASSERT_EQ(m.router_groups, 8);
  EXPECT_DOUBLE_EQ(expert_hit_probability(m, 32), 0.5 * expert_hit_probability(128, 32, 8));
  EXPECT_DOUBLE_EQ(expert_hit_probability(m, 4), 0.5 * expert_hit_probability(128, 4, 8));
  EXPECT_LT(expert_hit_probability(m, 32), expert_hit_probability(256, 32, 8));
  // Two whole groups: one selected (P = 2 x C(6,3) / C(8,4) = 4/7) or both (C(6,2) / C(8,4) =
  // 3/14).
  const double two =
      4.0 / 7 * expert_hit_probability(128, 32, 8) + 3.0 / 14 * expert_hit_probability(128, 64, 8);
  EXPECT_NEAR(expert_hit_probability(m, 64), two, 1e-12);
  // Every group: certain.
  EXPECT_DOUBLE_EQ(expert_hit_probability(m, 256), 1.0);
  // Ungrouped routing is the plain formula.
  m.router_groups = m.router_group_topk = 0;
  EXPECT_DOUBLE_EQ(expert_hit_probability(m, 32), expert_hit_probability(256, 32, 8));
  // Bad groupings name their field.
  ModelSpec bad = model_preset("deepseek-v3");
  bad.router_groups = 7;  // does not divide 256
  EXPECT_EQ(test::error_of([&] { validate(bad); }).field(), "model.router_groups");
  bad.router_groups = 8;
  bad.router_group_topk = 9;
  EXPECT_EQ(test::error_of([&] { validate(bad); }).field(), "model.router_group_topk");
  bad.router_group_topk = 0;  // groups without a group top-k
  EXPECT_EQ(test::error_of([&] { validate(bad); }).field(), "model.router_group_topk");
}

TEST(FlexDispatch, SendsOncePerNodeAcrossAndOncePerGpuWithin) {
  // EP 16 over two nodes of 8: rails pair GPU j of one node with GPU j of the other; a rank
  // sends each peer on its rail the tokens that hit that node, and each local peer the tokens
  // (its own and those it forwards from the other node) that hit that GPU.
  ModelSpec m = moe_model();
  m.experts = 128;
  m.top_k = 8;
  std::vector<int> group(16);
  for (int i = 0; i < 16; ++i) group[i] = i;
  const double token_bytes = 4096 * 2048 * 2.0;
  const FlexDispatch f = flex_dispatch(m, 16, {group}, 8, token_bytes);
  EXPECT_EQ(f.nodes, 2);
  EXPECT_EQ(f.per_node, 8);
  ASSERT_EQ(f.rails.size(), 8u);
  EXPECT_EQ(f.rails[3], (std::vector<int>{3, 11}));
  ASSERT_EQ(f.local.size(), 2u);
  EXPECT_EQ(f.local[1], (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_DOUBLE_EQ(f.rail_bytes, 2 * token_bytes * expert_hit_probability(128, 64, 8));
  EXPECT_DOUBLE_EQ(f.local_bytes, 8 * 2 * token_bytes * expert_hit_probability(128, 8, 8));
  // Across the nodes a rank sends about one copy of each token, where the all-to-all
  // dispatcher sends top_k x 8 / 16 = 4.
  EXPECT_NEAR(f.rail_bytes / f.nodes / token_bytes, 1.0, 0.01);
  // Inside one node there are no rails.
  std::vector<int> one_node(8);
  for (int i = 0; i < 8; ++i) one_node[i] = i;
  const FlexDispatch inside = flex_dispatch(m, 8, {one_node}, 8, token_bytes);
  EXPECT_TRUE(inside.rails.empty());
  EXPECT_EQ(inside.local.size(), 1u);
  // A group spread unevenly over its nodes is refused, naming the field.
  EXPECT_EQ(test::error_of([&] {
              flex_dispatch(m, 16, {{0, 1, 2, 8}}, 8, token_bytes);
            }).field(),
            "training.moe_dispatcher");
  // So are groups of different shapes.
  EXPECT_EQ(test::error_of([&] {
              flex_dispatch(m, 2, {{0, 1}, {8, 16}}, 8, token_bytes);
            }).field(),
            "training.moe_dispatcher");
}

TEST(FlexDispatch, PermutesOnceAndBeatsTheAllToAllAcrossNodes) {
  // The flex dispatcher has no per-(token, expert) permute before sending and no second sort:
  // one permute of the arriving tokens by local expert and one back. Across two nodes it moves
  // about a quarter of the all-to-all's bytes over the NICs (top-8), so the EP time drops.
  ModelSpec m = moe_model();
  TrainingSpec t;
  t.global_batch = 8;
  TrainingSpec flex = t;
  flex.moe_dispatcher = "flex";
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const KernelCoster c(h100, "bf16");
  auto names = [&](const TrainingSpec& spec) {
    const Layout l = make_layout(m, folded(1), spec, 8);
    std::vector<std::string> out;
    for (const auto& b : chunk_program(m, folded(1), spec, l, c, 0, 0).blocks)
      if (b.label == "MoE layer")
        for (const auto& k : b.forward) out.push_back(k.name);
    return out;
  };
  const auto plain = names(t), flexed = names(flex);
  auto has = [](const std::vector<std::string>& v, const std::string& n) {
    return std::find(v.begin(), v.end(), n) != v.end();
  };
  EXPECT_TRUE(has(plain, "token permute"));
  EXPECT_TRUE(has(plain, "sort by local expert"));
  EXPECT_FALSE(has(flexed, "token permute"));
  EXPECT_FALSE(has(flexed, "token unpermute"));
  EXPECT_FALSE(has(flexed, "sort by local expert"));
  EXPECT_TRUE(has(flexed, "permute by local expert"));
  EXPECT_TRUE(has(flexed, "unpermute by local expert"));
  // End to end on two nodes: EP 16 of a 128-expert top-8 model.
  const std::vector<std::string> sets = {
      "cluster.nodes=2",   "parallelism.tp=1",  "parallelism.pp=1",
      "parallelism.dp=16", "parallelism.ep=16", "training.global_batch=64",
      "model.experts=128", "model.top_k=8",     "model.expert_ffn_hidden=1024"};
  auto ep_comm = [&](const std::string& dispatcher) {
    auto with = sets;
    with.push_back("training.moe_dispatcher=" + dispatcher);
    const auto r = sim::simulate_step(sim::load_scenario(
        std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-moe.yaml", with));
    for (const auto& [name, seconds] : r.breakdown)
      if (name == "ep_comm") return seconds;
    return -1.0;
  };
  const double a2a = ep_comm("alltoall"), flexed_s = ep_comm("flex");
  EXPECT_GT(a2a, 0);
  EXPECT_GT(flexed_s, 0);
  EXPECT_LT(flexed_s, 0.5 * a2a);
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
  TrainingSpec flex = t;
  flex.moe_dispatcher = "flex";  // modelled with whole experts only
  p = folded(0);
  p.ep = 2;
  EXPECT_EQ(test::error_of([&] { make_layout(moe_model(), p, flex, 8); }).field(),
            "training.moe_dispatcher");
  EXPECT_EQ(
      test::error_of([] { sim::load_scenario("", {"training.moe_dispatcher=deepep"}); }).field(),
      "training.moe_dispatcher");
  // Through the scenario reader, as a user would write it.
  EXPECT_EQ(test::error_of([] {
              sim::simulate_step(sim::load_scenario("", {"parallelism.expert_tp=3"}));
            }).field(),
            "parallelism.expert_tp");
}

}  // namespace
}  // namespace twin::workload
