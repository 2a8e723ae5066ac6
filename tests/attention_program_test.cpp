// Closed-form checks of the attention variants in the step program: multi-head latent
// attention, ring attention (context parallelism) and sliding-window attention.

#include <gtest/gtest.h>

#include <algorithm>

#include "calibrate/profile.hpp"
#include "program_helpers.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

using test::block_kernels;
using test::eight_sequences;
using test::h100_bf16;
using test::h100_fp8;
using test::names;
using test::one_stage;
using test::small_model;

ModelSpec deepseek_v3_attention() {
  ModelSpec m = small_model();  // llama3-8b's layers, DeepSeek-V3's attention
  m.hidden = 7168;
  m.heads = 128;
  m.kv_heads = 128;
  m.head_dim = 128;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  m.seq_len = 4096;
  return m;
}

TEST(Mla, ParametersAndScoreFlopsOfDeepSeekV3Attention) {
  // q: 7168 x 1536 + 1536 x 128 x 192; kv: 7168 x (512 + 64) + 512 x 128 x (128 + 128);
  // out: 128 x 128 x 7168 = 187,105,280 parameters per layer.
  const ModelSpec m = deepseek_v3_attention();
  EXPECT_DOUBLE_EQ(m.attention_params(), 187105280.0);
  // Scores: 2 T s a (192 + 128) per layer, full square.
  EXPECT_DOUBLE_EQ(m.attention_score_flops(1), m.layers * 2.0 * 4096 * 4096 * 128 * (192 + 128));
  // The flash kernel computes the causal half of that forward for its local heads.
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const KernelCoster& c = h100_bf16();
  const ChunkProgram prog = chunk_program(m, p, t, make_layout(m, p, t, 8), c, 0, 0);
  bool found = false;
  for (const auto& b : prog.blocks)
    for (const auto& k : b.forward)
      if (k.name == "flash attention fwd") {
        EXPECT_DOUBLE_EQ(k.flops, 2.0 * 64 * 4096 * 4096 * (192 + 128) * 0.5);
        EXPECT_EQ(k.shape, "64x(s 4096x4096, d 192/128)");
        found = true;
      }
  EXPECT_TRUE(found);
  // MLA fields without a latent, or with grouped KV heads, name the field.
  ModelSpec bad = small_model();
  bad.v_head_dim = 128;
  EXPECT_EQ(test::error_of([&] { validate(bad); }).field(), "model.kv_lora_rank");
  bad = deepseek_v3_attention();
  bad.kv_heads = 8;
  EXPECT_EQ(test::error_of([&] { validate(bad); }).field(), "model.kv_heads");
}

TEST(Mla, DownProjectionsCastTheirInputAndLatentNormsFeedTheUpProjections) {
  // Megatron-Core's MLA spec: the input norm stands alone and the down-projections are plain
  // linears, each casting its input for FP8; each latent norm is fused into its up-projection,
  // which under delayed scaling receives FP8 from it.
  const ModelSpec m = deepseek_v3_attention();
  const ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  t.precision = "fp8";
  const KernelCoster& fp8 = h100_fp8();
  std::vector<std::string> forward;
  for (const auto& b : chunk_program(m, p, t, make_layout(m, p, t, 8), fp8, 0, 0).blocks)
    for (const auto& name : names(b.forward)) forward.push_back(name);
  auto has = [&](const std::string& name) {
    return std::find(forward.begin(), forward.end(), name) != forward.end();
  };
  EXPECT_TRUE(has("q down (latent) input fp8 cast-transpose"));
  EXPECT_TRUE(has("kv down (latent + rotary key) input fp8 cast-transpose"));
  EXPECT_FALSE(has("q up input fp8 cast-transpose"));
  EXPECT_FALSE(has("kv up input fp8 cast-transpose"));
}

TEST(ContextParallel, RingAttentionExchangesKvBlocks) {
  // cp = 2, tp = 1: each rank holds T = s / 2 tokens and sends its K and V blocks,
  // 2 x T x h_kv x 2 bytes, once per layer forward (cp - 1 steps) around the ring.
  const ModelSpec m = model_preset("llama3-8b");
  ParallelismSpec p;
  p.tp = 1;
  p.cp = 2;
  p.pp = 1;
  p.dp = 4;
  const TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  EXPECT_EQ(layout.dp, 8);  // replicas of the stage: dp x cp
  const KernelCoster& c = h100_bf16();
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  EXPECT_DOUBLE_EQ(prog.cp_bytes, 2.0 * 4096 * 1024 * 2.0);
  EXPECT_EQ(prog.cp_exchanges, 32);
  // The attention kernels compute half the causal square of the whole sequence each.
  ParallelismSpec one = p;
  one.cp = 1;
  one.dp = 8;
  const ChunkProgram whole = chunk_program(m, one, t, make_layout(m, one, t, 8), c, 0, 0);
  EXPECT_NEAR(prog.forward_flops / whole.forward_flops, 0.5, 1e-9);
}

TEST(ContextParallel, StepRunsWithCpAndTrafficGrowsWithIt) {
  const sim::Scenario s = sim::load_scenario(
      "", {"cluster.nodes=4", "fabric.tiers=2", "fabric.switch_radix=16", "model.preset=llama3-8b",
           "parallelism.tp=4", "parallelism.cp=2", "parallelism.pp=1", "parallelism.dp=4",
           "parallelism.virtual_stages=1", "training.global_batch=16"});
  const sim::StepReport r = sim::simulate_step(s);
  EXPECT_GT(r.step_time_s, 0);
  bool found = false;
  for (const auto& [name, seconds] : r.collective_times)
    if (name.rfind("CP ring", 0) == 0) found = seconds > 0;
  EXPECT_TRUE(found);
}

TEST(KernelClasses, AttentionIsItsCoreKernelsWhereverTheyRun) {
  // The classes split the chunk's kernel time exactly: GEMMs are the tensor-core kernels
  // outside attention, the attention class the core's kernels (forward, backward and their
  // recomputed copies), the rest memory- or launch-bound.
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(1);
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const ChunkProgram flash = chunk_program(m, p, t, layout, h100_bf16(), 0, 0);
  const KernelClassTimes f = kernel_class_times(flash);
  EXPECT_NEAR(f.total(), flash.forward_s + flash.backward_s, 1e-12);
  EXPECT_NEAR(f.attention, flash.attention_forward_s + flash.attention_backward_s, 1e-12);
  EXPECT_NEAR(f.gemm + f.attention, flash.forward_tensor_s + flash.backward_tensor_s, 1e-12);
  EXPECT_GT(f.memory, 0.0);

  // Unfused attention under full recompute: the score GEMMs and the passes over the scores are
  // attention, and the rerun forward adds the forward's attention once more.
  t.attention = "unfused";
  p.recompute = "full";
  const ChunkProgram unfused = chunk_program(m, p, t, make_layout(m, p, t, 8), h100_bf16(), 0, 0);
  const KernelClassTimes u = kernel_class_times(unfused);
  EXPECT_NEAR(u.total(), unfused.forward_s + unfused.backward_s, 1e-12);
  EXPECT_NEAR(u.attention, 2 * unfused.attention_forward_s + unfused.attention_backward_s, 1e-12);
  const std::vector<std::string> core{"attention QK^T", "scale-mask-softmax", "attention dropout",
                                      "attention AV"};
  int marked = 0;
  for (const auto& k : block_kernels(unfused, "dense layer")) {
    EXPECT_EQ(k.attention, std::ranges::count(core, k.name) == 1) << k.name;
    marked += k.attention ? 1 : 0;
  }
  EXPECT_EQ(marked, 4);
}

TEST(SlidingWindow, WindowedLayersComputeTheirBandAtTheWindowsRate) {
  // A window w of s tokens: s w - w^2 / 2 query-key pairs of the causal triangle's s^2 / 2,
  // at the measured rate for length w. GPT-OSS's pattern: every second layer attends fully.
  ModelSpec m = small_model();  // 32 layers, 32 heads of 128, s = 2048
  m.sliding_window = 512;
  m.full_attention_every = 2;
  EXPECT_TRUE(m.windowed(0));
  EXPECT_FALSE(m.windowed(1));
  const ParallelismSpec p = one_stage(1);
  const TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  int full = 0, windowed = 0;
  for (const auto& b : prog.blocks) {
    if (b.label == "dense layer") full = b.count;
    if (b.label == "dense layer (sliding window 512)") windowed = b.count;
  }
  EXPECT_EQ(full, 16);
  EXPECT_EQ(windowed, 16);
  auto flash_fwd = [&](const std::string& label) {
    for (const auto& k : block_kernels(prog, label))
      if (k.name == "flash attention fwd") return k;
    ADD_FAILURE() << "no flash attention in " << label;
    return Kernel{};
  };
  const Kernel whole = flash_fwd("dense layer"),
               band = flash_fwd("dense layer (sliding window 512)");
  const double bh = 1.0 * 32, s = 2048, w = 512, d = 128;
  EXPECT_DOUBLE_EQ(whole.flops, 2.0 * bh * (s * s / 2) * 2 * d);
  EXPECT_DOUBLE_EQ(band.flops, 2.0 * bh * (s * w - w * w / 2) * 2 * d);
  // The table of the kernel the coster runs (auto: cuDNN on H100).
  const calibrate::KernelProfile kp = calibrate::load_profile("h100-sxm").kernels;
  const auto& table = kp.*(calibrate::find_attention_kernel(c.attention_kernel())->table);
  const double rate_w = table->tflops(true, 128, 512) * 1e12;
  EXPECT_NEAR(band.time_s,
              std::max(c.launch_s() + band.flops / rate_w, c.launch_s() + band.bytes / c.hbm_Bps()),
              1e-12);
  // A window as long as the sequence is plain causal attention; without one nothing changes.
  ModelSpec wide = m;
  wide.sliding_window = 2048;
  EXPECT_FALSE(wide.windowed(0));
  ModelSpec plain = m;
  plain.sliding_window = 0;
  plain.full_attention_every = 0;
  const ChunkProgram reference = chunk_program(plain, p, t, layout, c, 0, 0);
  EXPECT_DOUBLE_EQ(chunk_program(wide, p, t, layout, c, 0, 0).forward_s, reference.forward_s);
  EXPECT_LT(prog.forward_s, reference.forward_s);
  // Unfused attention masks the whole square: the window saves nothing there.
  TrainingSpec unfused = t;
  unfused.attention = "unfused";
  EXPECT_DOUBLE_EQ(chunk_program(m, p, unfused, layout, c, 0, 0).forward_s,
                   chunk_program(plain, p, unfused, layout, c, 0, 0).forward_s);
}

}  // namespace
}  // namespace twin::workload
