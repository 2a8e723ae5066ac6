// Closed-form checks of the kernel cost models: GEMM wave quantization and pipeline depth, the
// launch floor, attention kinds and the profiles' measurements, FP8, and the hardware a GPU
// profile brings.
#include <gtest/gtest.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "calibrate/profile.hpp"
#include "program_helpers.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/kernel_cost.hpp"

namespace twin::workload {
namespace {

using test::h100_bf16;

/// A profile with the one-tile GEMM model (no kernels.gemm_tiles: its large tile, the
/// transpose and min x min, no split, K at half rate 128): the closed forms of waves and stages.
calibrate::Profile one_tile(const char* name) {
  calibrate::Profile p = calibrate::load_profile(name);
  p.kernels.gemm_tiles.reset();
  p.kernels.gemm_k_half.value = 128;
  return p;
}

const KernelCoster& one_tile_h100() {
  static const calibrate::Profile p = one_tile("h100-sxm");
  static const KernelCoster c(p, "bf16");
  return c;
}

TEST(GemmModel, OneTileMoreThanFullWavesCostsHalfAWaveMore) {
  // H100: 132 SMs, 128 x 256 tiles. 1408 x 3072 is 11 x 12 = 132 tiles: exactly one wave. One
  // more row needs 144 tiles of 128 x 256 (2 waves) or 288 of 128 x 128 (3 half-size waves):
  // 1.5 x the time of the full wave.
  const KernelCoster& c = one_tile_h100();
  const double K = 8192;
  const Kernel full = c.gemm("full", 1408, 3072, K);
  const Kernel more = c.gemm("one more", 1409, 3072, K);
  const double efficiency = c.profile().kernels.gemm_efficiency.at("bf16").value;
  const double per_sm = 989e12 / 132 * efficiency * K / (K + 128);
  const double wave = 2.0 * 128 * 256 * K / per_sm;
  std::cout << "Expectation: one wave " << wave * 1e6 << " us, one tile more 1.5 x that\n"
            << "Actual result: " << (full.time_s - c.launch_s()) * 1e6 << " us and "
            << (more.time_s - c.launch_s()) * 1e6 << " us\n";
  EXPECT_NEAR(full.time_s - c.launch_s(), wave, 1e-12);
  EXPECT_NEAR((more.time_s - c.launch_s()) / (full.time_s - c.launch_s()), 1.5, 1e-9);
  EXPECT_EQ(full.limiter, Limiter::compute);
  EXPECT_DOUBLE_EQ(full.flops, 2.0 * 1408 * 3072 * K);
}

TEST(GemmModel, ChunksAlongMAreQuantizedOneByOne) {
  // 1536 x 2816 is 12 x 11 = 132 tiles of 128 x 256: one full wave W (or 264 square tiles in 2
  // half-size waves, the same). In 4 chunks of 384 rows each chunk is 3 x 11 = 33 such tiles,
  // or 3 x 22 = 66 square tiles: one half-size wave, W / 2. The chunks run one after another:
  // 4 launches and 2 W. Keeping 16 SMs for communication (116 left) puts the whole GEMM's 264
  // square tiles in 3 half-size waves: 1.5 W.
  const KernelCoster& c = one_tile_h100();
  const double K = 4096;
  const Kernel whole = c.gemm("whole", 1536, 2816, K);
  const Kernel split = c.split_gemm("split", 1536, 2816, K, 4, 0);
  const Kernel margin = c.split_gemm("margin", 1536, 2816, K, 1, 16);
  const double w = whole.time_s - c.launch_s();
  std::cout << "Expectation: whole " << w * 1e6 << " us + launch; 4 chunks 4 launches + "
            << 2 * w * 1e6 << " us; 116 SMs " << 1.5 * w * 1e6 << " us + launch\n"
            << "Actual result: " << split.time_s * 1e6 << " us and " << margin.time_s * 1e6
            << " us\n";
  EXPECT_NEAR(split.time_s, 4 * c.launch_s() + 2 * w, 1e-12);
  EXPECT_NEAR(margin.time_s, c.launch_s() + 1.5 * w, 1e-12);
  EXPECT_EQ(split.limiter, Limiter::compute);
  EXPECT_DOUBLE_EQ(split.flops, whole.flops);
  EXPECT_EQ(split.shape, "4 x 384x2816x4096");
  EXPECT_EQ(margin.shape, "1 x 1536x2816x4096 on 116 SMs");
}

TEST(GemmModel, SmCountComesFromTheProfile) {
  // The same 132-tile GEMM on A100 (108 SMs) needs two waves of 256 x 128 / 128 x 256 tiles,
  // or 264 square tiles in 3 waves: 1.5 x a 128 x 256 wave at A100's per-SM rate.
  const calibrate::Profile a100 = one_tile("a100-sxm-80gb");
  const KernelCoster c(a100, "bf16");
  const double K = 8192;
  const double per_sm =
      312e12 / 108 * a100.kernels.gemm_efficiency.at("bf16").value * K / (K + 128);
  EXPECT_NEAR(c.gemm("g", 1408, 3072, K).time_s - c.launch_s(), 1.5 * 2.0 * 128 * 256 * K / per_sm,
              1e-12);
}

TEST(GemmModel, ReproducesTheMeasurementsItsEfficienciesCameFrom) {
  // Each derived efficiency came from one measured GEMM (kernels README 3b) divided by the
  // model's tile, wave and K factors there: the model gives back that measurement, to the 4
  // digits stored. H100's 16-bit rate is measured on an H200 (the same SMs and limit) and fitted
  // over 57 shapes (gemm_selection_test.cpp checks them).
  auto tflops = [](const calibrate::Profile& p, const char* dtype, double m, double n, double k) {
    const KernelCoster c(p, dtype);
    return 2.0 * m * n * k / (c.gemm("g", m, n, k).time_s - c.launch_s()) / 1e12;
  };
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  EXPECT_FALSE(h100.kernels.gemm16_efficiency_prior.has_value());
  EXPECT_NEAR(tflops(h100, "fp8", 6144, 12288, 12288), 1351.4, 0.5);
  EXPECT_NEAR(tflops(calibrate::load_profile("a100-sxm-80gb"), "bf16", 6144, 12288, 12288), 250.8,
              0.1);
  // The sustained rate is below the best a shape search found (MAMF's 794.5, kernels README 3a).
  EXPECT_LT(tflops(h100, "bf16", 2048, 2048, 13312), 794.5);
}

TEST(GemmModel, Fp8PipelineStagesHoldTwiceTheK) {
  // Shapes no efficiency was derived from (kernels README 3b, H100 FP8, cuBLASLt): within 3 %
  // with FP8's stages holding twice a 16-bit stage's K (k_half 320, not 160).
  const calibrate::Profile p = calibrate::load_profile("h100-sxm");
  const KernelCoster c(p, "fp8");
  auto tflops = [&](double m, double n, double k) {
    return 2.0 * m * n * k / c.gemm("g", m, n, k).time_s / 1e12;
  };
  EXPECT_NEAR(tflops(2048, 2048, 2048), 1011.3, 0.03 * 1011.3);
  EXPECT_NEAR(tflops(4096, 4096, 4096), 1216.9, 0.03 * 1216.9);
  EXPECT_NEAR(tflops(8192, 8192, 8192), 1290.1, 0.03 * 1290.1);
  // The same GEMM forced to 16-bit operands keeps the 16-bit stage: K / (K + 128) in the
  // one-tile model.
  const calibrate::Profile q = one_tile("h100-sxm");
  const KernelCoster c8(q, "fp8");
  const double K = 1024;
  const Kernel f8 = c8.gemm("f8", 1056, 2048, K), b16 = c8.gemm("b16", 1056, 2048, K, 1, true);
  const double peak8 = q.peak_flops("fp8") * q.kernels.gemm_efficiency.at("fp8").value;
  const double peak16 = q.peak_flops("bf16") * q.kernels.gemm_efficiency.at("bf16").value;
  EXPECT_NEAR((f8.time_s - c8.launch_s()) / (b16.time_s - c8.launch_s()),
              (peak16 / peak8) * (K + 256) / (K + 128), 1e-9);
}

TEST(KernelModel, LaunchFloorDominatesTinyKernels) {
  const KernelCoster& c = h100_bf16();
  // Memory-bound kernels stream at the STREAM rate times the fitted efficiency.
  const double rate = 2970e9 * c.profile().kernels.memory_bound_efficiency.value;
  const Kernel tiny = c.memory("bias", 4096);
  EXPECT_EQ(tiny.limiter, Limiter::launch);
  EXPECT_NEAR(tiny.time_s, 2.5e-6 + 4096 / rate, 1e-15);
  const Kernel big = c.memory("big", 1e9);
  EXPECT_EQ(big.limiter, Limiter::memory);
  EXPECT_NEAR(big.time_s, 2.5e-6 + 1e9 / rate, 1e-12);
  EXPECT_EQ(c.gemm("tiny gemm", 16, 16, 16).limiter, Limiter::launch);
}

TEST(KernelModel, Fp8NeedsItsEfficiencyInTheProfile) {
  const calibrate::Profile a100 = calibrate::load_profile("a100-sxm-80gb");
  const auto e = test::error_of([&] { KernelCoster(a100, "fp8"); });
  EXPECT_EQ(e.field(), "training.precision");
}

/// The step of the built-in scenario with the `base` overrides and then `extra`.
sim::StepReport step_with(std::vector<std::string> base, const std::vector<std::string>& extra) {
  base.insert(base.end(), extra.begin(), extra.end());
  return sim::simulate_step(sim::load_scenario("", base));
}

/// Seconds per step of the report's collectives whose names start with `prefix`, summed.
double seconds(const sim::StepReport& r, const std::string& prefix) {
  double sum = 0;
  for (const auto& [name, s] : r.collective_times)
    if (name.rfind(prefix, 0) == 0) sum += s;
  return sum;
}

TEST(Software, OlderStacksAreSlower) {
  const std::vector<std::string> base = {
      "cluster.nodes=4",         "fabric.tiers=2",     "fabric.switch_radix=16",
      "model.preset=llama3-8b",  "model.seq_len=2048", "parallelism.tp=4",
      "parallelism.pp=1",        "parallelism.dp=8",   "parallelism.virtual_stages=1",
      "training.global_batch=64"};
  auto step = [&](const std::vector<std::string>& extra) {
    return step_with(base, extra).step_time_s;
  };
  const double current = step({});
  EXPECT_GT(step({"training.attention=unfused"}), current);
  EXPECT_GT(step({"training.fused_kernels=false"}), current);
  // TP overlap pays off once the chunks it splits the GEMMs into are large: at 8k tokens (2048
  // rows a chunk). At 2k (512-row chunks) the chunking costs about what it hides.
  EXPECT_GT(step({"model.seq_len=8192", "training.tp_comm_overlap=false"}),
            1.05 * step({"model.seq_len=8192"}));
  EXPECT_GT(step({"training.overlap_grad_reduce=false"}), current);
  EXPECT_GT(step({"training.overlap_param_gather=false"}), current);
  EXPECT_LT(step({"training.precision=fp8"}), current);
}

TEST(Software, Fp32GatherAndReductionDoubleTheirBytes) {
  // FSDP on 2 nodes x 8 GPUs on 100 Gb/s NICs: the all-gather carries param_gather_dtype's bytes
  // per parameter and the reduce-scatter grad_reduce_dtype's; at hundreds of MB a layer both are
  // bandwidth-bound, so fp32 takes twice as long. fp32 gradients also take twice the gradient
  // memory.
  const std::vector<std::string> base = {"cluster.nodes=2",
                                         "cluster.nic_gbps=100",
                                         "fabric.tiers=2",
                                         "fabric.switch_radix=16",
                                         "model.preset=llama3-8b",
                                         "model.seq_len=2048",
                                         "parallelism.tp=1",
                                         "parallelism.pp=1",
                                         "parallelism.dp=16",
                                         "parallelism.zero=3",
                                         "parallelism.virtual_stages=1",
                                         "parallelism.micro_batch=1",
                                         "training.global_batch=16"};
  auto run = [&](const std::vector<std::string>& extra) { return step_with(base, extra); };
  const sim::StepReport bf16 = run({});
  const sim::StepReport gather32 = run({"training.param_gather_dtype=fp32"});
  const sim::StepReport reduce32 = run({"training.grad_reduce_dtype=fp32"});
  const double ag = seconds(bf16, "FSDP all_gather"), rs = seconds(bf16, "FSDP reduce_scatter");
  ASSERT_GT(ag, 0);
  ASSERT_GT(rs, 0);
  EXPECT_NEAR(seconds(gather32, "FSDP all_gather") / ag, 2.0, 0.05);
  EXPECT_DOUBLE_EQ(seconds(gather32, "FSDP reduce_scatter"), rs);
  EXPECT_NEAR(seconds(reduce32, "FSDP reduce_scatter") / rs, 2.0, 0.05);
  EXPECT_DOUBLE_EQ(seconds(reduce32, "FSDP all_gather"), ag);
  EXPECT_DOUBLE_EQ(reduce32.memory.gradients_GB, 2.0 * bf16.memory.gradients_GB);
  EXPECT_GE(gather32.step_time_s, bf16.step_time_s);
}

TEST(Software, AShardedOptimizerMayAllReduceItsGradientsAsZeroZeroDoes) {
  // Zero 1 on 2 nodes x 8 GPUs: Megatron's distributed optimizer reduce-scatters the gradients,
  // (N - 1) / N of their bytes per rank; DeepSpeed's BF16_Optimizer all-reduces them, as zero 0
  // does (the same collective, twice the bytes on a ring; NCCL's tuner may pick a tree), and both
  // gather the updated parameters back. 8 of Llama 3 8B's layers, so that zero 0 fits.
  const std::vector<std::string> base = {"cluster.nodes=2",
                                         "fabric.tiers=2",
                                         "fabric.switch_radix=16",
                                         "model.preset=llama3-8b",
                                         "model.seq_len=2048",
                                         "model.layers=8",
                                         "parallelism.tp=1",
                                         "parallelism.pp=1",
                                         "parallelism.dp=16",
                                         "parallelism.zero=1",
                                         "parallelism.virtual_stages=1",
                                         "parallelism.micro_batch=1",
                                         "training.global_batch=16"};
  const sim::StepReport scatter = step_with(base, {});
  const sim::StepReport all = step_with(base, {"training.grad_sync=all_reduce"});
  const double rs = seconds(scatter, "DP reduce_scatter"), ar = seconds(all, "DP all_reduce");
  ASSERT_GT(rs, 0);
  EXPECT_DOUBLE_EQ(seconds(all, "DP reduce_scatter"), 0);
  EXPECT_GT(ar, 1.2 * rs);
  EXPECT_DOUBLE_EQ(ar, seconds(step_with(base, {"parallelism.zero=0"}), "DP all_reduce"));
  EXPECT_DOUBLE_EQ(seconds(all, "DP param all_gather"), seconds(scatter, "DP param all_gather"));
  // The gradients of ZeRO-2 and FSDP are sharded: they can only be reduce-scattered.
  for (const char* zero : {"parallelism.zero=2", "parallelism.zero=3"})
    EXPECT_EQ(test::error_of([&] {
                step_with(base, {zero, "training.grad_sync=all_reduce"});
              }).field(),
              "training.grad_sync")
        << zero;
}

TEST(Model, TiedEmbeddingsAreOneMatrixOrTwoCopiesWhoseGradientsAreSummed) {
  // Llama 3 8B's 8 first layers on 2 nodes. One stage: a tied output layer is the embedding
  // itself, V h / t parameters fewer on the GPU. Two stages: each end keeps a copy, and after
  // the step's gradient synchronization the first and last stage all-reduce its gradient
  // (V h / t elements in the gradients' dtype), which the untied model does not.
  const std::vector<std::string> base = {
      "cluster.nodes=2",           "fabric.tiers=2",          "fabric.switch_radix=16",
      "model.preset=llama3-8b",    "model.seq_len=2048",      "model.layers=8",
      "parallelism.tp=2",          "parallelism.dp=8",        "parallelism.virtual_stages=1",
      "parallelism.micro_batch=1", "training.global_batch=32"};
  const sim::StepReport untied = step_with(base, {"parallelism.pp=1"});
  const sim::StepReport tied = step_with(base, {"parallelism.pp=1", "model.tied_embeddings=true"});
  const workload::ModelSpec m = workload::model_preset("llama3-8b");
  const double table_GB = static_cast<double>(m.vocab) * m.hidden / 2 * 2 / 1e9;  // bf16 weights
  EXPECT_NEAR(untied.memory.weights_GB - tied.memory.weights_GB, table_GB, 1e-9);
  EXPECT_DOUBLE_EQ(seconds(tied, "tied embedding"), 0.0);  // nothing to sum on one stage

  const sim::StepReport apart = step_with(base, {"parallelism.pp=2", "parallelism.dp=4"});
  const sim::StepReport copies =
      step_with(base, {"parallelism.pp=2", "parallelism.dp=4", "model.tied_embeddings=true"});
  EXPECT_DOUBLE_EQ(seconds(apart, "tied embedding"), 0.0);
  const double all_reduce = seconds(copies, "tied embedding all_reduce");
  EXPECT_GT(all_reduce, 0.0);
  // fp32 gradients: twice the bytes.
  const sim::StepReport fp32 =
      step_with(base, {"parallelism.pp=2", "parallelism.dp=4", "model.tied_embeddings=true",
                       "training.grad_reduce_dtype=fp32"});
  EXPECT_GT(seconds(fp32, "tied embedding all_reduce"), 1.5 * all_reduce);
  EXPECT_GE(copies.step_time_s, apart.step_time_s + all_reduce * (1 - 1e-9));
}

TEST(Software, OlderFlashAttentionKernelsAreSlower) {
  // The same causal attention (d 128, 4K) on H100: FlashAttention-3 forward > FA2 > FA1, from
  // the profile's measured tables.
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  auto fwd = [&](const char* kind) {
    return KernelCoster(h100, "bf16", kind)
        .flash_attention("a", true, 32, 4096, 4096, 128, true, 4096)
        .time_s;
  };
  EXPECT_LT(fwd("flash"), fwd("flash2"));
  EXPECT_LT(fwd("flash2"), fwd("flash1"));
  // FA2 forward at 4K, d 128: 319 TFLOP/s on half of 4 x 32 x 4096^2 x 128 FLOPs.
  EXPECT_NEAR(fwd("flash2"), 2.5e-6 + 0.5 * 4.0 * 32 * 4096.0 * 4096 * 128 / 319e12, 1e-12);
  auto j = nlohmann::ordered_json::parse(calibrate::to_json(h100));
  j["kernels"].erase("flash_attention_1");
  const calibrate::Profile without = calibrate::parse_profile(j.dump(), "no-fa1.json");
  EXPECT_EQ(test::error_of([&] { KernelCoster(without, "bf16", "flash1"); }).field(),
            "training.attention");
}

TEST(Software, CudnnFusedAttentionHasItsOwnMeasuredRates) {
  // Transformer Engine's FusedAttention on H100, causal, d 128 at 4K: forward 518 TFLOP/s (the
  // cuDNN bar of the FlashAttention-3 forward figure); backward the profile's FA-3 causal
  // backward (498) times cuDNN / FA-3 in the non-causal backward figure (499 / 542), stored
  // rounded to 0.1 TFLOP/s.
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const KernelCoster cudnn(h100, "bf16", "cudnn"), fa3(h100, "bf16", "flash");
  const double pairs = 32 * 4096.0 * 4096 / 2;  // 32 heads, the causal half of the square
  const double fwd_flops = 4.0 * pairs * 128;
  EXPECT_NEAR(cudnn.flash_attention("a", true, 32, 4096, 4096, 128, true, 4096).time_s,
              2.5e-6 + fwd_flops / 518e12, 1e-12);
  EXPECT_NEAR(cudnn.flash_attention("a", false, 32, 4096, 4096, 128, true, 4096).time_s,
              2.5e-6 + 2.5 * fwd_flops / (498.0 * 499 / 542 * 1e12), 1e-7);
  // Slower than FlashAttention-3 in both directions at this shape.
  EXPECT_GT(cudnn.flash_attention("a", true, 32, 4096, 4096, 128, true, 4096).time_s,
            fa3.flash_attention("a", true, 32, 4096, 4096, 128, true, 4096).time_s);
  // A100's profile has no cuDNN measurements: the scenario field is named, not a default used.
  const calibrate::Profile a100 = calibrate::load_profile("a100-sxm-80gb");
  const core::Error e = test::error_of([&] { KernelCoster(a100, "bf16", "cudnn"); });
  EXPECT_EQ(e.field(), "training.attention");
  EXPECT_NE(std::string(e.what()).find("kernels.cudnn_attention"), std::string::npos);
  // auto is what Transformer Engine runs: cuDNN where the profile measures it, else flash.
  EXPECT_EQ(KernelCoster(h100, "bf16", "auto").attention_kernel(), "cudnn");
  EXPECT_EQ(KernelCoster(a100, "bf16", "auto").attention_kernel(), "flash");
  EXPECT_EQ(KernelCoster(h100, "bf16", "auto")
                .flash_attention("a", true, 32, 4096, 4096, 128, true, 4096)
                .time_s,
            cudnn.flash_attention("a", true, 32, 4096, 4096, 128, true, 4096).time_s);
  // A kind no profile table answers to is refused too, not costed with another kernel's rates.
  EXPECT_EQ(test::error_of([&] { KernelCoster(h100, "bf16", "sparse"); }).field(),
            "training.attention");
}

TEST(Fp8, OutputLayerStaysInBf16) {
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const KernelCoster fp8(h100, "fp8"), bf16(h100, "bf16");
  EXPECT_DOUBLE_EQ(fp8.gemm("logits", 8192, 16032, 8192, 1, true).time_s,
                   bf16.gemm("logits", 8192, 16032, 8192).time_s);
  EXPECT_LT(fp8.gemm("fc1", 8192, 16032, 8192).time_s, bf16.gemm("fc1", 8192, 16032, 8192).time_s);
}

TEST(Fp8, MfuIsAgainstTheBf16Peak) {
  const sim::Scenario s = sim::load_scenario("", {"training.precision=fp8"});
  const sim::StepReport r = sim::simulate_step(s);
  EXPECT_DOUBLE_EQ(r.peak_tflops, 989.0);
  EXPECT_NEAR(r.mfu, r.tflops_per_gpu / 989.0, 1e-12);
}

TEST(Hardware, NvlinkAndNicComeFromTheGpuProfile) {
  const sim::Scenario a100 = sim::load_scenario("", {"cluster.gpu=a100-sxm-80gb"});
  EXPECT_DOUBLE_EQ(a100.cluster.nvlink_GBps, 300.0);
  EXPECT_DOUBLE_EQ(a100.cluster.nic_gbps, 200.0);
  EXPECT_TRUE(a100.hardware_overrides.empty());
  const sim::Scenario forced =
      sim::load_scenario("", {"cluster.gpu=a100-sxm-80gb", "cluster.nvlink_GBps=450"});
  EXPECT_DOUBLE_EQ(forced.cluster.nvlink_GBps, 450.0);
  ASSERT_EQ(forced.hardware_overrides.size(), 1u);
  EXPECT_NE(forced.hardware_overrides[0].find("cluster.nvlink_GBps"), std::string::npos);
}

}  // namespace
}  // namespace twin::workload
