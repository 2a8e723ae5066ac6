// GEMMs as cuBLAS runs them (a set of CTA tiles, split-K, stream-K: workload/kernel_cost.hpp),
// compute rates under a board power limit, and the host's pace (workload/host_issue.hpp),
// against closed forms and the H200 measurements in data/calibration/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <vector>

#include "calibrate/profile.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/host_issue.hpp"
#include "workload/kernel_cost.hpp"

namespace twin::workload {
namespace {

double gemm_s(const KernelCoster& c, double m, double n, double k) {
  return c.gemm("g", m, n, k).time_s;
}

/// A 2048-row GEMM in eight 256-row chunks against the whole, as Transformer Engine's TP
/// overlap splits it.
double split_ratio(const KernelCoster& c, double n, double k) {
  return c.split_gemm("chunks", 2048, n, k, 8, 0).time_s / gemm_s(c, 2048, n, k);
}

TEST(GemmSelection, A2048RowGemmInEightChunksCostsAtMostAThirdMore) {
  const calibrate::Profile a100 = calibrate::load_profile("a100-sxm-80gb");
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const KernelCoster ca(a100, "bf16"), ch(h100, "bf16");
  // The shapes of the issue: 256 x 2304 x 6144 chunks of a 2048 x 6144 x 2304 GEMM on A100 (the
  // one-tile model gave 2.6x: 18 tiles of 256 x 128 on 108 SMs; 64 x 64 tiles and split K fill
  // them).
  for (auto [n, k] : {std::pair{6144.0, 2304.0}, std::pair{2304.0, 6144.0}}) {
    std::cout << "A100 2048x" << n << "x" << k << ": eight chunks " << split_ratio(ca, n, k)
              << "x\n";
    EXPECT_LE(split_ratio(ca, n, k), 1.3) << n << " x " << k;
  }
  // H100 on the MLP of a 12288-wide model at TP 4: measured on an H200 (CUDA graphs) 1.10x as
  // run, 1.12x at one clock.
  EXPECT_LE(split_ratio(ch, 12288, 3072), 1.3);
  EXPECT_NEAR(split_ratio(ch, 12288, 3072), 1.12, 0.05);
  // Where the chunks are smaller than the SMs can fill, the measured cost is higher and the model
  // follows it: 2048 x 6144 x 2304 on the H200, 1.36x at one clock.
  EXPECT_NEAR(split_ratio(ch, 6144, 2304), 1.36, 0.1);
}

TEST(GemmSelection, TheTileSetReproducesTheMeasuredH200Gemms) {
  // data/calibration/h200-sxm-2026-12-04*.json: TFLOP/s at 700 W scaled to the sustained
  // 1470 MHz by each run's own clock (CUDA-graph timings below 40 us). Compute-bound shapes: a
  // 128-row GEMM over an 8192 x 8192 weight reads its operands at 3.5 TB/s on the H200, above
  // the profile's STREAM rate (3.53 TB/s triad), and is left to the HBM model.
  struct Point {
    double m, n, k, tflops;
  };
  const std::vector<Point> measured = {
      {8192, 8192, 8192, 657.4},  {16384, 16384, 16384, 678.9}, {4096, 4096, 4096, 641.7},
      {8192, 28672, 4096, 659.6}, {8192, 8192, 256, 408.3},     {8192, 8192, 1024, 566.1},
      {2560, 2560, 4096, 493.6},  {2048, 6144, 2304, 602.8},    {256, 12288, 3072, 573.5},
      {1536, 1536, 4096, 532.2},  {256, 3072, 12288, 467.7}};
  const KernelCoster c(calibrate::load_profile("h200-sxm"), "bf16");
  std::vector<double> errors;
  for (const Point& p : measured) {
    const double model = 2.0 * p.m * p.n * p.k / gemm_s(c, p.m, p.n, p.k) / 1e12;
    errors.push_back(std::abs(model / p.tflops - 1));
    EXPECT_NEAR(model, p.tflops, 0.1 * p.tflops) << p.m << "x" << p.n << "x" << p.k;
  }
  std::sort(errors.begin(), errors.end());
  EXPECT_LT(errors[errors.size() / 2], 0.05);
}

TEST(GemmSelection, SplitKPaysForItsReductionKernel) {
  // 256 x 3072 x 12288: 48 tiles of 128 x 64 on 132 SMs; cuBLAS split its K (the H200 ran
  // nvjet ..._splitK_ and splitKreduce_kernel). Without split-K in the set it is slower; the
  // split GEMM's time includes the reduction kernel's start-up and its (4 s + 2) M N bytes.
  calibrate::Profile p = calibrate::load_profile("h100-sxm");
  const KernelCoster with(p, "bf16");
  p.kernels.gemm_tiles->split_k.clear();
  const KernelCoster without(p, "bf16");
  const double split = gemm_s(with, 256, 3072, 12288), whole = gemm_s(without, 256, 3072, 12288);
  EXPECT_LT(split, whole);
  EXPECT_GT(split, with.launch_s() * 2 + 6 * 256 * 3072 / with.hbm_Bps());
  // A GEMM that fills the SMs never splits.
  EXPECT_DOUBLE_EQ(gemm_s(with, 8192, 8192, 8192), gemm_s(without, 8192, 8192, 8192));
}

TEST(GemmSelection, StreamKSpreadsTheLastWave) {
  // One tile shape, 128 x 256, no split: 133 tiles on 132 SMs are two waves, or with stream-K
  // 133/132 of one plus one fp32 partial tile written and read per SM.
  calibrate::Profile p = calibrate::load_profile("h100-sxm");
  p.kernels.gemm_tiles->shapes = {{128, 256}};
  p.kernels.gemm_tiles->split_k.clear();
  const KernelCoster plain(p, "bf16");
  p.kernels.gemm_tiles->stream_k = true;
  const KernelCoster streamed(p, "bf16");
  const double m = 133 * 128, n = 256, k = 8192;
  const double per_sm = 989e12 * 0.73 / 132 * k / (k + 160);
  const double wave = 2.0 * 128 * 256 * k / per_sm;
  EXPECT_NEAR(gemm_s(plain, m, n, k) - plain.launch_s(), 2 * wave, 1e-12);
  EXPECT_NEAR(gemm_s(streamed, m, n, k) - plain.launch_s(),
              133.0 / 132 * wave + 8.0 * 128 * 256 / (plain.hbm_Bps() / 132), 1e-12);
}

TEST(PowerLimit, FiveHundredWattsSlowsComputeByTheClockRatio) {
  // H100/H200 SXM: 1470 MHz sustained at 700 W, 126 W idle, P - idle ~ f^3:
  // f(500) = 1470 ((500 - 126) / (700 - 126))^(1/3) = 1274.5 MHz.
  const calibrate::Profile p = calibrate::load_profile("h100-sxm");
  const double ratio = std::cbrt((500.0 - 126) / (700.0 - 126));
  EXPECT_NEAR(p.kernels.power_clock->clock_MHz(500), 1470 * ratio, 1e-9);
  const KernelCoster stock(p, "bf16"), capped(p, "bf16", "auto", 500);
  EXPECT_NEAR(capped.clock_ratio(), ratio, 1e-12);
  const double big = gemm_s(stock, 8192, 8192, 8192), slow = gemm_s(capped, 8192, 8192, 8192);
  EXPECT_NEAR((slow - capped.launch_s()) / (big - stock.launch_s()), 1 / ratio, 1e-9);
  // HBM's clock does not follow: a memory-bound kernel keeps its time.
  EXPECT_DOUBLE_EQ(capped.memory("m", 1e9).time_s, stock.memory("m", 1e9).time_s);
  // At the limit the rates were measured at, nothing moves; above the clock's ceiling it caps.
  EXPECT_DOUBLE_EQ(KernelCoster(p, "bf16", "auto", 700).clock_ratio(), 1.0);
  EXPECT_EQ(test::error_of([&] { KernelCoster(p, "bf16", "auto", 150); }).field(),
            "cluster.gpu_power_w");
  EXPECT_EQ(test::error_of([&] {
              KernelCoster(calibrate::load_profile("a100-sxm-80gb"), "bf16", "auto", 300);
            }).field(),
            "cluster.gpu_power_w");
}

TEST(PowerLimit, AComputeBoundStepSlowsByTheClockRatio) {
  // One H100, a wide model on long sequences, four micro-batches a step: GEMMs and attention are
  // most of the step, and both scale with the clock; the memory-bound rest (norms, activations,
  // the optimizer) does not, so the step slows by a little less than the clock.
  auto step = [](double watts) {
    const sim::Scenario s = sim::load_scenario(
        "",
        {"cluster.nodes=1", "cluster.gpus_per_node=1", "cluster.nics_per_node=1", "fabric.tiers=2",
         "model.preset=llama3-8b", "model.layers=2", "model.hidden=8192", "model.heads=64",
         "model.kv_heads=8", "model.ffn_hidden=28672", "model.vocab=512", "model.seq_len=8192",
         "parallelism.tp=1", "parallelism.pp=1", "parallelism.dp=1", "parallelism.virtual_stages=1",
         "training.global_batch=4", "cluster.gpu_power_w=" + std::to_string(watts)});
    return sim::simulate_step(s).step_time_s;
  };
  const double ratio = std::cbrt((500.0 - 126) / (700.0 - 126));
  const double slower = step(500) / step(0);
  std::cout << "Expectation: at most 1 / " << ratio << " = " << 1 / ratio << " and close to it\n"
            << "Actual result: " << slower << "\n";
  EXPECT_LE(slower, 1 / ratio + 1e-9);
  EXPECT_GT(slower, 1 + 0.7 * (1 / ratio - 1));
}

TEST(HostIssue, TinyKernelsRunAtTheHostsPace) {
  // Ten 1 us kernels issued at 25.4 us each: the last is issued at 254 us and ends 1 us later;
  // the device waited 255 - 10 us.
  std::vector<Kernel> ks(10);
  for (auto& k : ks) k.time_s = 1e-6;
  std::vector<const Kernel*> ptrs;
  for (const auto& k : ks) ptrs.push_back(&k);
  EXPECT_NEAR(host_wait_s(ptrs, 25.4e-6), 255e-6 - 10e-6, 1e-15);
  // Kernels that outlast their issue keep the device busy: only the first issue is waited for.
  for (auto& k : ks) k.time_s = 100e-6;
  EXPECT_NEAR(host_wait_s(ptrs, 25.4e-6), 25.4e-6, 1e-15);
  TrainingSpec t;
  EXPECT_NEAR(host_issue_s(t), 25.4e-6, 1e-18);
  t.framework = "compiled";
  EXPECT_NEAR(host_issue_s(t), 47.3e-6, 1e-18);
  t.cuda_graphs = true;
  EXPECT_EQ(host_issue_s(t), 0.0);
  t.framework = "jax";
  EXPECT_EQ(test::error_of([&] { (void)host_issue_s(t); }).field(), "training.framework");
}

TEST(HostIssue, AHostBoundToyStepRunsAtTheHostsPace) {
  // A toy model (hidden 64, 32 tokens) on one GPU: every kernel is a few us, under its 25.4 us
  // issue, so each chunk lasts its kernel count x 25.4 us (plus the last kernel); with CUDA
  // graphs the host cost goes and the step runs at the kernels' own pace.
  auto report = [](bool graphs) {
    const sim::Scenario s = sim::load_scenario(
        "", {"cluster.nodes=1", "cluster.gpus_per_node=1", "cluster.nics_per_node=1",
             "fabric.tiers=2", "model.preset=llama3-8b", "model.layers=2", "model.hidden=64",
             "model.heads=4", "model.kv_heads=4", "model.ffn_hidden=256", "model.vocab=512",
             "model.seq_len=32", "parallelism.tp=1", "parallelism.pp=1", "parallelism.dp=1",
             "parallelism.virtual_stages=1", "training.global_batch=1",
             std::string("training.cuda_graphs=") + (graphs ? "true" : "false")});
    return sim::simulate_step(s);
  };
  const sim::StepReport host = report(false), graph = report(true);
  const auto& chunk = host.program.chunks.at(0).at(0);
  int fwd = 0;
  for (const auto& b : chunk.blocks) fwd += b.count * static_cast<int>(b.forward.size());
  double last = 0;
  for (const auto& b : chunk.blocks)
    if (!b.forward.empty()) last = b.forward.back().time_s;
  EXPECT_NEAR(chunk.forward_s, fwd * 25.4e-6 + last, 1e-12);
  EXPECT_GT(chunk.host_wait_forward_s, 0.5 * chunk.forward_s);
  const auto& fast = graph.program.chunks.at(0).at(0);
  EXPECT_EQ(fast.host_wait_forward_s, 0.0);
  EXPECT_LT(graph.step_time_s, 0.5 * host.step_time_s);
}

}  // namespace
}  // namespace twin::workload
