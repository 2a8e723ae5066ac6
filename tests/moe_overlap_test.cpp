// Megatron-Core's combined 1F1B (training.moe_a2a_overlap): the phase model of the all-to-alls
// it hides, the schedule it runs, and the errors of layouts it does not run on.
#include <gtest/gtest.h>

#include "core/error.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

ChunkProgram moe_chunk(int layers, double other_f, double expert_f, double other_b,
                       double expert_b) {
  ChunkProgram c;
  c.moe_layers = layers;
  c.moe_other_forward_s = other_f;
  c.moe_expert_forward_s = expert_f;
  c.moe_other_backward_s = other_b;
  c.moe_expert_backward_s = expert_b;
  return c;
}

TEST(CombinedOneFOneB, EachPhaseHidesOneAllToAllBehindOneComputePart) {
  // F: attention 0.5, experts 0.8; B: attention 1.5, experts 2.0; all-to-all 1.0. The four
  // phases leave 0.5 (F attention), 0 (B experts), 0.2 (F experts), 0 (B attention) exposed.
  const ChunkProgram f = moe_chunk(1, 0.5, 0.8, 9, 9);
  const ChunkProgram b = moe_chunk(1, 9, 9, 1.5, 2.0);
  EXPECT_NEAR(combined_1f1b_exposed(f, b, 1.0, 1.0), 0.7, 1e-12);
  // The compute scale (a straggler) stretches the compute parts: 2 x 0.5 and 2 x 0.8 hide it.
  EXPECT_NEAR(combined_1f1b_exposed(f, b, 2.0, 1.0), 0.0, 1e-12);
  // Layers without a partner run their dispatch and combine exposed: 3 forward MoE layers
  // against 1 backward one leave 2 x 2 all-to-alls.
  const ChunkProgram f3 = moe_chunk(3, 0.5, 0.8, 9, 9);
  EXPECT_NEAR(combined_1f1b_exposed(f3, b, 1.0, 1.0), 0.7 + 4.0, 1e-12);
  // All-to-alls faster than every phase are all hidden.
  EXPECT_DOUBLE_EQ(combined_1f1b_exposed(f, b, 1.0, 0.4), 0.0);
}

std::vector<std::string> moe_base() {
  // Mixtral 8x7B on 2 nodes, EP 8 within each half of the 16 data-parallel ranks.
  return {"cluster.nodes=2",
          "fabric.tiers=2",
          "fabric.switch_radix=16",
          "model.preset=mixtral-8x7b",
          "model.seq_len=2048",
          "parallelism.tp=1",
          "parallelism.pp=1",
          "parallelism.dp=16",
          "parallelism.ep=8",
          "parallelism.zero=1",
          "parallelism.virtual_stages=1",
          "training.global_batch=64"};
}

sim::StepReport run(std::vector<std::string> sets) {
  return sim::simulate_step(sim::load_scenario("", sets));
}

double part(const sim::StepReport& r, const std::string& name) {
  for (const auto& [n, s] : r.breakdown)
    if (n == name) return s;
  return -1;
}

TEST(CombinedOneFOneB, HidesAllToAllsAndNeverBeatsCompute) {
  const sim::StepReport plain = run(moe_base());
  auto sets = moe_base();
  sets.push_back("training.moe_a2a_overlap=true");
  const sim::StepReport combined = run(sets);
  ASSERT_GT(part(plain, "ep_comm"), 0);
  EXPECT_LT(part(combined, "ep_comm"), part(plain, "ep_comm"));
  EXPECT_LT(combined.step_time_s, plain.step_time_s);
  // What it hides cannot make the step shorter than its compute without the all-to-alls.
  EXPECT_GE(combined.step_time_s, part(plain, "compute"));
  // Every forward and backward of every micro-batch is still scheduled once.
  int ops = 0;
  for (const auto& op : combined.timeline)
    if (op.stream == "compute" && op.micro_batch >= 0) ++ops;
  EXPECT_EQ(ops, 2 * combined.micro_batches);
}

// What the combined schedule hides still takes SMs from the compute beside it: NCCL's all-to-all
// its channels (32 of H100's 132: compute slowed by 32 / 100 of the hidden time), the flex
// dispatcher the 20 Megatron-Core gives DeepEP (20 / 112). The EP groups here sit inside a node,
// where both dispatchers move the same bytes.
TEST(CombinedOneFOneB, HiddenAllToAllsSlowComputeByTheSmsTheirKernelsHold) {
  auto slowdown = [](const std::string& dispatcher) {
    auto sets = moe_base();
    sets.push_back("training.moe_dispatcher=" + dispatcher);
    const sim::StepReport plain = run(sets);
    sets.push_back("training.moe_a2a_overlap=true");
    const sim::StepReport combined = run(sets);
    const double hidden = part(plain, "ep_comm") - part(combined, "ep_comm");
    EXPECT_GT(hidden, 0) << dispatcher;
    return (part(combined, "compute") - part(plain, "compute")) / hidden;
  };
  EXPECT_NEAR(slowdown("alltoall"), 32.0 / 100.0, 0.01);
  EXPECT_NEAR(slowdown("flex"), 20.0 / 112.0, 0.01);
}

TEST(CombinedOneFOneB, RunsOnTheInterleavedSchedule) {
  auto sets = moe_base();
  sets.insert(sets.end(), {"parallelism.pp=2", "parallelism.dp=8", "parallelism.virtual_stages=2",
                           "training.moe_a2a_overlap=true"});
  const sim::StepReport r = run(sets);
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_EQ(r.virtual_stages, 2);
}

TEST(CombinedOneFOneB, LayoutsItDoesNotRunOnNameTheField) {
  auto error_of = [](std::vector<std::string> sets) -> std::string {
    try {
      run(sets);
    } catch (const core::Error& e) {
      return e.what();
    }
    return "";
  };
  auto with = [](std::vector<std::string> extra) {
    auto sets = moe_base();
    sets.insert(sets.end(), extra.begin(), extra.end());
    sets.push_back("training.moe_a2a_overlap=true");
    return sets;
  };
  EXPECT_NE(error_of(with({"parallelism.ep=1"})).find("training.moe_a2a_overlap"),
            std::string::npos);
  EXPECT_NE(error_of(with({"parallelism.recompute=full"})).find("full recompute"),
            std::string::npos);
  EXPECT_NE(error_of(with({"parallelism.pp=2", "parallelism.dp=8"})).find("interleaving"),
            std::string::npos);
}

}  // namespace
}  // namespace twin::workload
