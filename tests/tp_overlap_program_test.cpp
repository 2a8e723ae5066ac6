// Closed-form checks of TP communication overlap in the step program: Transformer Engine's
// userbuffers split the overlapped GEMMs into chunks, an FP8 ring-exchange reduce-scatter ends
// with a kernel summing the partials, and a BF16 pipelined one leaves its last chunk exposed.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "program_helpers.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

using test::block_of;
using test::eight_sequences;
using test::h100_bf16;
using test::h100_fp8;
using test::one_stage;
using test::small_model;

TEST(StepProgram, TpOverlapRunsTheGemmsBesideItsTransfersInChunks) {
  // TP 4 with sequence parallelism and userbuffers overlap: the all-gathered GEMMs (QKV, fc1)
  // run as 4 ring-exchange steps of T / 4 rows; in BF16 the reduce-scattered ones (proj, fc2)
  // are pipelined over 4 chunks with 16 SMs kept, in FP8 they are ring exchanges keeping one.
  // The data-gradient GEMMs of proj and fc2 take the all-gathered gradient in 4 steps too.
  const ModelSpec m = small_model();
  const ParallelismSpec p = one_stage(4);
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  auto shapes = [&](const KernelCoster& c) {
    std::map<std::string, std::string> out;
    for (const auto& b : chunk_program(m, p, t, layout, c, 0, 0).blocks)
      for (const auto* list : {&b.forward, &b.backward})
        for (const auto& k : *list) out[k.name] = k.shape;
    return out;
  };
  const KernelCoster& fp8 = h100_fp8();
  auto bf16 = shapes(h100_bf16());
  EXPECT_EQ(bf16["qkv"], "4 x 512x1536x4096");
  EXPECT_EQ(bf16["fc1"], "4 x 512x7168x4096");
  EXPECT_EQ(bf16["fc2"], "4 x 512x4096x3584 on 116 SMs");
  EXPECT_EQ(bf16["fc2 dgrad"], "4 x 512x3584x4096");
  EXPECT_EQ(bf16["qkv dgrad"], "2048x4096x1536");  // bulk overlap: one launch
  EXPECT_EQ(bf16["fc2 wgrad"], "4096x3584x2048");
  t.precision = "fp8";
  EXPECT_EQ(shapes(fp8)["fc2"], "4 x 512x4096x3584 on 131 SMs");
  t.precision = "bf16";
  t.tp_comm_overlap = false;
  EXPECT_EQ(shapes(h100_bf16())["qkv"], "2048x1536x4096");
}

TEST(StepProgram, RingExchangeReduceScatterEndsWithAKernelSummingThePartials) {
  // In FP8 the proj and fc2 outputs are reduce-scattered by a ring exchange: each of the t
  // ranks receives the others' partial sums of its T / t rows into the 16-bit buffer, and a
  // kernel adds the t partials: t + 1 tensors of T / t x h two-byte elements (read t, write 1).
  // The BF16 pipelined reduce-scatter reduces inside its communication kernels: no such kernel.
  const ModelSpec m = small_model();
  const ParallelismSpec p = one_stage(4);
  TrainingSpec t = eight_sequences();
  t.precision = "fp8";
  const Layout layout = make_layout(m, p, t, 8);
  std::map<std::string, Kernel> forward;
  for (const auto& b : chunk_program(m, p, t, layout, h100_fp8(), 0, 0).blocks)
    for (const auto& k : b.forward) forward[k.name] = k;
  const double T = 2048, h = m.hidden;
  for (const char* gemm : {"attention proj", "fc2"}) {
    const std::string name = std::string(gemm) + " output reduce (ring)";
    ASSERT_EQ(forward.count(name), 1u) << name;
    EXPECT_DOUBLE_EQ(forward[name].bytes, (4 + 1) * (T / 4) * h * 2) << name;
    EXPECT_EQ(forward[name].limiter, Limiter::memory) << name;
  }
  EXPECT_EQ(forward.count("qkv output reduce (ring)"), 0u);  // all-gathered, not reduced
  t.precision = "bf16";
  for (const auto& b : chunk_program(m, p, t, layout, h100_bf16(), 0, 0).blocks)
    for (const auto& k : b.forward) EXPECT_EQ(k.name.find("reduce (ring)"), std::string::npos);
}
std::vector<double> tails(const BlockProgram& b) {
  std::vector<double> out;
  for (const auto& g : b.tp_overlap_forward) out.push_back(g.tail);
  return out;
}

TEST(StepProgram, PipelinedReduceScatterLeavesItsLastChunkExposed) {
  // Two layers, each a GEMM pair of 1 ms beside an all-gather and a reduce-scatter; the
  // reduce-scatter pipelined over 4 chunks (tail 1/4): its last quarter runs after the GEMM.
  ChunkProgram chunk;
  BlockProgram b;
  b.count = 2;
  b.tp_collectives = 1;
  b.tp_overlap_forward = {{1e-3, 0.0}, {1e-3, 0.25}};
  chunk.blocks.push_back(b);
  // Collectives shorter than the GEMMs: only the tail shows, 0.25 x 0.5 ms per layer.
  TpOverlap o = tp_overlap(chunk, true, 0.5e-3);
  EXPECT_NEAR(o.exposed_s, 2 * 0.125e-3, 1e-15);
  EXPECT_NEAR(o.overlapped_s, 2 * (0.5e-3 + 0.375e-3), 1e-15);
  // Longer: the all-gather's excess (1 ms) and, for the reduce-scatter, its tail (0.5 ms) and
  // three quarters of the excess (0.75 ms).
  o = tp_overlap(chunk, true, 2e-3);
  EXPECT_NEAR(o.exposed_s, 2 * (1e-3 + 1.25e-3), 1e-15);
  EXPECT_NEAR(o.overlapped_s, 2 * (1e-3 + 0.75e-3), 1e-15);
  // Backward has no tail.
  b.tp_overlap_backward = {{1e-3}, {1e-3}};
  chunk.blocks = {b};
  EXPECT_NEAR(tp_overlap(chunk, false, 0.5e-3).exposed_s, 0.0, 1e-18);

  // The layers' tails: BF16 pipelines the proj and fc2 reduce-scatters, FP8 rings them.
  const ModelSpec m = small_model();
  const ParallelismSpec p = one_stage(4);
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const BlockProgram bf16 =
      block_of(chunk_program(m, p, t, layout, h100_bf16(), 0, 0), "dense layer");
  EXPECT_EQ(tails(bf16), (std::vector<double>{0, 0.25, 0, 0.25}));
  t.precision = "fp8";
  const BlockProgram fp8 =
      block_of(chunk_program(m, p, t, layout, h100_fp8(), 0, 0), "dense layer");
  EXPECT_EQ(tails(fp8), (std::vector<double>{0, 0, 0, 0}));
}

}  // namespace
}  // namespace twin::workload
