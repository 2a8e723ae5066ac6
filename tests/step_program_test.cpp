// Closed-form checks of the step program: unfused attention bytes, cross-entropy, casts and
// recompute, gradient accumulation, separate data- and weight-gradient GEMMs, Qwen3's q/k norm,
// the MTP module, FP8 current scaling, and the errors of bad input (pipeline_program_test.cpp,
// attention_program_test.cpp and tp_overlap_program_test.cpp hold the pipeline's, the
// attention variants' and TP communication overlap's).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "program_helpers.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/memory.hpp"
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

using test::block_kernels;
using test::block_of;
using test::by_name;
using test::eight_sequences;
using test::h100_bf16;
using test::h100_fp8;
using test::names;
using test::one_stage;
using test::small_model;

TEST(StepProgram, UnfusedAttentionMovesTheScoreTensors) {
  // Per layer and micro-batch, forward: fused scale-mask-softmax 4 B and dropout 5 B per score
  // element, b a / t s^2 elements (Korthikanti et al.'s 5 a s^2 b activation bytes + 4).
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  t.attention = "unfused";
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  const double elements = 1.0 * (32 / 2) * 2048.0 * 2048.0;
  double bytes = 0;
  for (const auto& k : block_kernels(prog, "dense layer"))
    if (k.name == "scale-mask-softmax" || k.name == "attention dropout") bytes += k.bytes;
  EXPECT_DOUBLE_EQ(bytes, 9.0 * elements);
  // Unfused PyTorch ops: scale, mask, softmax and dropout, 17 B per element.
  t.fused_kernels = false;
  const ChunkProgram slow = chunk_program(m, p, t, layout, c, 0, 0);
  double unfused = 0;
  for (const auto& k : block_kernels(slow, "dense layer"))
    if (k.name.find("softmax") != std::string::npos ||
        k.name.find("attention dropout") != std::string::npos)
      unfused += k.bytes;
  EXPECT_DOUBLE_EQ(unfused, 17.0 * elements);
  EXPECT_GT(slow.forward_s, prog.forward_s);
  // Flash attention is faster than either.
  t.attention = "flash";
  t.fused_kernels = true;
  EXPECT_LT(chunk_program(m, p, t, layout, c, 0, 0).forward_s, prog.forward_s);
}

TEST(StepProgram, CrossEntropyBytesFollowItsImplementation) {
  // The loss block of a TP 2 stage holding the output layer: T x V / tp logits per rank.
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  const double logits = 2048.0 * m.vocab / 2;
  auto loss_bytes = [&](const TrainingSpec& s, bool forward) {
    double bytes = 0;
    const ChunkProgram prog = chunk_program(m, p, s, layout, c, 0, 0);
    for (const auto& k : block_kernels(prog, "output layer + loss", forward))
      if (k.name.find("cross-entropy") != std::string::npos) bytes += k.bytes;
    return bytes;
  };
  // Fused (one pass): the bf16 logits read, the gradient written in place (6 + 4 B).
  EXPECT_DOUBLE_EQ(loss_bytes(t, true), 6.0 * logits);
  EXPECT_DOUBLE_EQ(loss_bytes(t, false), 4.0 * logits);
  // Megatron's VocabParallelCrossEntropy, op by op in fp32: cast (2 + 4), max (4), subtract
  // (4 + 4), exp (4 + 4), sum (4), divide (4 + 4) = 38 B forward.
  t.cross_entropy = "unfused";
  EXPECT_DOUBLE_EQ(loss_bytes(t, true), 38.0 * logits);
  EXPECT_DOUBLE_EQ(loss_bytes(t, false), 26.0 * logits);
  // auto follows fused_kernels; an explicit choice does not.
  t.cross_entropy = "auto";
  t.fused_kernels = false;
  EXPECT_DOUBLE_EQ(loss_bytes(t, true), 38.0 * logits);
  t.cross_entropy = "fused";
  EXPECT_DOUBLE_EQ(loss_bytes(t, true), 6.0 * logits);
}

TEST(StepProgram, Fp16RunsAtTheBf16RateAndUnscalesItsGradients) {
  // FP16 and BF16 share the tensor-core rate; dynamic loss scaling adds one read and write of
  // each fp32 gradient (8 B per parameter) before clipping and Adam.
  const calibrate::Profile& h100 = h100_bf16().profile();
  const KernelCoster fp16(h100, "fp16");
  EXPECT_DOUBLE_EQ(fp16.gemm("g", 4096, 4096, 4096).time_s,
                   h100_bf16().gemm("g", 4096, 4096, 4096).time_s);
  const OptimizerProgram plain = optimizer_program(1e9, 1e9, fp16);
  const OptimizerProgram scaled = optimizer_program(1e9, 1e9, fp16, true);
  ASSERT_EQ(scaled.kernels.size(), plain.kernels.size() + 1);
  EXPECT_DOUBLE_EQ(scaled.kernels.front().bytes, 8.0e9);
  EXPECT_NEAR(scaled.seconds - plain.seconds, scaled.kernels.front().time_s, 1e-12);
}

TEST(StepProgram, Fp32WeightsUnderAutocastAreCastWhereUsed) {
  // FSDP gathering fp32 weights (param_dtype unset): autocast casts each weight to bf16 where a
  // GEMM uses it (read 4 + write 2 bytes per weight) and backward casts its gradient back to
  // fp32 (read 2 + write 4). The attention-score GEMMs have no weights; bf16 gathers cast nothing.
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(1);
  TrainingSpec t = eight_sequences();
  t.attention = "unfused";
  const Layout layout = make_layout(m, p, t, 8);
  auto casts = [&](const TrainingSpec& s, bool forward) {
    std::map<std::string, double> bytes;
    const ChunkProgram prog = chunk_program(m, p, s, layout, h100_bf16(), 0, 0);
    for (const auto& k : block_kernels(prog, "dense layer", forward))
      if (k.name.find("cast") != std::string::npos) bytes[k.name] = k.bytes;
    return bytes;
  };
  EXPECT_TRUE(casts(t, true).empty());
  t.param_gather_dtype = "fp32";
  const auto fwd = casts(t, true);
  const double qkv_weights = static_cast<double>(m.hidden) * (m.q_width() + 2 * m.kv_width());
  EXPECT_DOUBLE_EQ(fwd.at("qkv weight cast (autocast)"), 6.0 * qkv_weights);
  EXPECT_DOUBLE_EQ(casts(t, false).at("qkv weight grad cast"), 6.0 * qkv_weights);
  EXPECT_EQ(fwd.count("attention QK^T weight cast (autocast)"), 0u);
  EXPECT_EQ(fwd.count("attention AV weight cast (autocast)"), 0u);
  // One cast per weight matrix of the layer: qkv, proj, fc1, fc2.
  EXPECT_EQ(fwd.size(), 4u);
  // A cast is a plain conversion, one read and one write stream: it runs at the STREAM rate,
  // not at the fitted fraction of it that the other memory-bound kernels reach.
  const KernelCoster& c = h100_bf16();
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  int checked = 0;
  for (const auto& k : block_kernels(prog, "dense layer")) {
    if (k.name.find("weight cast") == std::string::npos) continue;
    EXPECT_DOUBLE_EQ(k.time_s, c.launch_s() + k.bytes / c.hbm_Bps()) << k.name;
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  EXPECT_LT(c.memory_kernel_Bps(), c.hbm_Bps());
}

TEST(StepProgram, GradientAccumulationOutsideTheGemmStreamsEveryParameter) {
  // Without the fused accumulation each block's backward ends by adding its parameters' 16-bit
  // gradients into the fp32 buffer: one kernel per tensor, 10 bytes a parameter (read 2 + 4,
  // write 4), or DeepSpeed's cast then add, 6 + 12 bytes; at the STREAM rate.
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  auto kernels = [&](const char* mode, const char* block) {
    TrainingSpec s = t;
    s.grad_accumulation = mode;
    std::map<std::string, Kernel> out;
    for (const auto& k : block_kernels(chunk_program(m, p, s, layout, c, 0, 0), block, false))
      if (k.name.rfind("grad ", 0) == 0) out[k.name] = k;
    return out;
  };
  const double layer = (m.attention_params() + m.dense_mlp_params()) / 2;  // TP 2
  const double embedding = static_cast<double>(m.vocab) * m.hidden / 2;
  EXPECT_TRUE(kernels("fused", "dense layer").empty());
  auto add = kernels("add", "dense layer");
  ASSERT_EQ(add.size(), 1u);
  const Kernel& a = add.at("grad accumulate (fp32 += 16-bit)");
  EXPECT_DOUBLE_EQ(a.bytes, 10 * layer);
  // Six tensors (QKV, proj, fc1, fc2, two norms), each its own streaming kernel.
  EXPECT_DOUBLE_EQ(a.time_s, 6 * (c.launch_s() + a.bytes / 6 / c.hbm_Bps()));
  auto cast_add = kernels("cast_add", "dense layer");
  ASSERT_EQ(cast_add.size(), 2u);
  EXPECT_DOUBLE_EQ(cast_add.at("grad cast to fp32").bytes, 6 * layer);
  EXPECT_DOUBLE_EQ(cast_add.at("grad accumulate (fp32)").bytes, 12 * layer);
  EXPECT_DOUBLE_EQ(kernels("cast_add", "embedding").at("grad accumulate (fp32)").bytes,
                   12 * embedding);
  // The pass is part of each block: the one-stage chunk's backward grows by the layers' passes
  // and those of the embedding and the output layer (vocabulary x h / 2 parameters each).
  TrainingSpec s = t;
  const double fused = chunk_program(m, p, s, layout, c, 0, 0).backward_s;
  s.grad_accumulation = "add";
  const double vocab_pass =
      kernels("add", "embedding").at("grad accumulate (fp32 += 16-bit)").time_s;
  EXPECT_NEAR(chunk_program(m, p, s, layout, c, 0, 0).backward_s - fused,
              m.layers * a.time_s + 2 * vocab_pass, 1e-12);
}

TEST(StepProgram, EarlyStoppingRecomputeSkipsTheLastGemmAndTheResidualAdd) {
  // Full recompute reruns a layer's forward. PyTorch's non-reentrant checkpoint stops once the
  // backward's saved tensors exist again: the last of them are fc2's operands, saved before fc2
  // runs, so fc2 and the residual add after it are not rerun; everything before them is.
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(1);
  p.recompute = "full";
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  auto dense = [&](const TrainingSpec& s) {
    return block_of(chunk_program(m, p, s, layout, c, 0, 0), "dense layer");
  };
  const BlockProgram whole = dense(t);
  EXPECT_EQ(names(whole.recompute), names(whole.forward));
  ASSERT_GE(whole.forward.size(), 3u);
  const Kernel& fc2 = whole.forward[whole.forward.size() - 2];
  const Kernel& residual = whole.forward.back();
  ASSERT_EQ(fc2.name, "fc2");
  ASSERT_EQ(residual.name, "residual add");

  t.recompute_early_stop = true;
  const BlockProgram early = dense(t);
  std::vector<std::string> expected = names(whole.forward);
  expected.resize(expected.size() - 2);
  EXPECT_EQ(names(early.recompute), expected);
  EXPECT_EQ(names(early.forward), names(whole.forward));
  auto total = [](const std::vector<Kernel>& kernels) {
    double s = 0;
    for (const auto& k : kernels) s += k.time_s;
    return s;
  };
  EXPECT_NEAR(total(whole.recompute) - total(early.recompute), fc2.time_s + residual.time_s, 1e-12);

  // Under autocast fc2's bf16 weight is one of its saved operands: its cast is rerun.
  t.param_gather_dtype = "fp32";
  const auto cast = names(dense(t).recompute);
  EXPECT_EQ(cast.back(), "fc2 weight cast (autocast)");

  // Transformer Engine's FP8 GEMMs save their operands after computing: fc2 is rerun, only the
  // residual add is not.
  const KernelCoster& fp8 = h100_fp8();
  TrainingSpec f = eight_sequences();
  f.precision = "fp8";
  f.recompute_early_stop = true;
  const BlockProgram b = block_of(chunk_program(m, p, f, layout, fp8, 0, 0), "dense layer");
  std::vector<std::string> rerun = names(b.forward);
  rerun.pop_back();
  EXPECT_EQ(names(b.recompute), rerun);
  ASSERT_FALSE(b.recompute.empty());
  EXPECT_EQ(b.recompute.back().name, "fc2");
}

TEST(StepProgram, RecomputeModulesRerunTheirKernelsAndDropTheirActivations) {
  // Llama 3 8B shape, TP 2 with sequence parallelism, s = 2048, b = 1.
  const ModelSpec m = small_model();
  ParallelismSpec p;
  p.tp = 2;
  p.pp = 1;
  p.dp = 4;
  p.recompute = "selective";
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  auto recomputed = [&](const ParallelismSpec& q) {
    return names(block_of(chunk_program(m, q, t, layout, c, 0, 0), "dense layer").recompute);
  };
  // Megatron-Core's default module is the attention core.
  EXPECT_EQ(recomputed(p), std::vector<std::string>{"flash attention fwd"});
  ParallelismSpec q = p;
  q.recompute_modules = {"layernorm", "mlp"};
  EXPECT_EQ(recomputed(q),
            (std::vector<std::string>{"input norm", "mlp norm", "fc1", "swiglu", "fc2"}));
  // Memory: the two norm outputs (2 x 2 s b h / t) and the MLP's fc1 and activation outputs
  // (2 s b (2 f + f) / t) leave each layer's activations.
  const double s_b_h = 2048.0 * 4096;
  const double per_layer = 2.0 * 2.0 * s_b_h / 2 + 2.0 * 2048 * 3 * 14336 / 2;
  const double in_flight_layers = 32;  // pp 1: one micro-batch of every layer
  EXPECT_NEAR(memory_per_gpu(m, p, t, layout).activations_GB -
                  memory_per_gpu(m, q, t, layout).activations_GB,
              per_layer * in_flight_layers / 1e9, 1e-9);
}

TEST(StepProgram, BackwardHasItsOwnDataAndWeightGradientGemms) {
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(1);
  TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  bool dgrad = false, wgrad = false;
  for (const auto& b : prog.blocks)
    for (const auto& k : b.backward) {
      // fc2 forward is (T, h, f): dgrad (T, f, h), wgrad (h, f, T).
      if (k.name == "fc2 dgrad") dgrad = k.shape == "2048x14336x4096";
      if (k.name == "fc2 wgrad") wgrad = k.shape == "4096x14336x2048";
    }
  EXPECT_TRUE(dgrad);
  EXPECT_TRUE(wgrad);
}

TEST(StepProgram, QkNormNormsEveryQueryAndKeyHead) {
  // llama3-8b with per-head query and key norms (Qwen3's q_norm / k_norm), TP 1, T = 2048:
  // one fused norm kernel over T (q + kv) = 2048 x (4096 + 1024) elements, reading and writing
  // 2 bytes each, between the QKV GEMM and rotary; backward twice the bytes. The layer keeps
  // Q and K before their norms: 2 (a + kv_heads) d bytes a token more.
  ModelSpec m = small_model();
  const ParallelismSpec p = one_stage(1);
  const TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  const double before = activation_bytes_per_layer(m, p, t);
  EXPECT_EQ(names(block_kernels(chunk_program(m, p, t, layout, c, 0, 0), "dense layer"))[2],
            "rotary");
  m.qk_norm = true;
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  const std::vector<Kernel> fwd = block_kernels(prog, "dense layer");
  ASSERT_EQ(names(fwd)[2], "q/k norm");
  const double elements = 2048.0 * (4096 + 1024);
  EXPECT_DOUBLE_EQ(fwd[2].bytes, 4 * elements);
  EXPECT_DOUBLE_EQ(fwd[2].time_s, c.launch_s() + 4 * elements / c.memory_kernel_Bps());
  EXPECT_DOUBLE_EQ(by_name(block_kernels(prog, "dense layer", false))["q/k norm bwd"].bytes,
                   8 * elements);
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, t) - before, 2048.0 * 2 * (32 + 8) * 128);
}

TEST(StepProgram, MtpModuleRunsOneMoreLayerAndLossOnTheLastStage) {
  // One multi-token-prediction module on a one-stage llama3-8b (T = 2048, h 4096): the shifted
  // tokens' embedding, two norms, the (T, h, 2h) projection of their concatenation, a layer
  // like the last and the output layer + loss again: its kernels are exactly those.
  ModelSpec m = small_model();
  const ParallelismSpec p = one_stage(1);
  const TrainingSpec t = eight_sequences();
  const Layout layout = make_layout(m, p, t, 8);
  const KernelCoster& c = h100_bf16();
  const ChunkProgram plain = chunk_program(m, p, t, layout, c, 0, 0);
  m.mtp_layers = 1;
  const ChunkProgram prog = chunk_program(m, p, t, layout, c, 0, 0);
  const BlockProgram mtp = block_of(prog, "MTP module");
  EXPECT_EQ(mtp.count, 1);
  std::vector<std::string> expected = {"MTP embedding lookup", "MTP hidden norm",
                                       "MTP embedding norm", "MTP projection"};
  for (const std::string label : {"dense layer", "output layer + loss"})
    for (const auto& name : names(block_kernels(plain, label))) expected.push_back(name);
  EXPECT_EQ(names(mtp.forward), expected);
  const double T = 2048, h = 4096;
  EXPECT_DOUBLE_EQ(by_name(mtp.forward)["MTP projection"].flops, 2 * T * h * 2 * h);
  // Its parameters: the layer's and the projection's (embedding and output layer shared).
  EXPECT_DOUBLE_EQ(prog.params - plain.params,
                   m.attention_params() + m.dense_mlp_params() + 2 * h * h);
  // It sits with the loss: the stage balance counts it there.
  const StageWeights w = stage_weights(m, p, t, layout, c);
  auto time = [](const BlockProgram& b) {
    double s = 0;
    for (const auto* list : {&b.forward, &b.backward, &b.recompute})
      for (const auto& k : *list) s += k.time_s;
    return s;
  };
  EXPECT_NEAR(w.output_s, time(block_of(prog, "output layer + loss")) + time(mtp), 1e-12);
  // Model FLOPs: 2 per token per parameter of the layer, the projection and the logits, plus
  // one layer's attention scores.
  ModelSpec none = m;
  none.mtp_layers = 0;
  const double mtp_flops = m.forward_flops(8) - none.forward_flops(8);
  EXPECT_NEAR(mtp_flops,
              2 * 8 * T *
                      (m.attention_params() + m.dense_mlp_params() + 2 * h * h +
                       static_cast<double>(m.vocab) * h) +
                  none.attention_score_flops(8) / m.layers,
              1e-6 * mtp_flops);
}

TEST(StepProgram, CurrentScalingQuantizesAfterAnAmaxPassAndAScaleKernel) {
  // FP8, TP 1, T = 2048 tokens, h 4096. Delayed scaling: the fused input norm writes QKV's FP8
  // input, the attention output is cast by one kernel (read 2, write 1 + 1 bytes an element).
  // Current scaling: every quantization is an amax pass (read 2 bytes an element), a one-thread
  // scale kernel (start-up only) and the cast; the norm no longer writes FP8 but writes the amax
  // of its 16-bit output itself, so QKV's and fc1's inputs have no amax pass. The activation
  // (Megatron-Core's fused bias-SwiGLU) writes 16 bits either way: fc2's input is cast.
  const ModelSpec m = small_model();
  const KernelCoster& c = h100_fp8();
  TrainingSpec t = eight_sequences();
  t.precision = "fp8";
  const double T = 2048, h = 4096;
  auto kernels = [&](const ParallelismSpec& p, bool forward) {
    const Layout layout = make_layout(m, p, t, 8);
    return by_name(block_kernels(chunk_program(m, p, t, layout, c, 0, 0), "dense layer", forward));
  };
  auto delayed = kernels(one_stage(1), true);
  EXPECT_FALSE(delayed.count("qkv input fp8 cast-transpose"));
  EXPECT_FALSE(delayed.count("attention proj input amax"));
  EXPECT_DOUBLE_EQ(delayed["attention proj input fp8 cast-transpose"].bytes, 4 * T * h);

  t.fp8_recipe = "tensorwise";
  auto current = kernels(one_stage(1), true);
  EXPECT_FALSE(current.count("qkv input amax"));
  EXPECT_FALSE(current.count("fc1 input amax"));
  EXPECT_DOUBLE_EQ(current["attention proj input amax"].bytes, 2 * T * h);
  EXPECT_DOUBLE_EQ(current["attention proj input amax"].time_s,
                   c.launch_s() + 2 * T * h / c.memory_kernel_Bps());
  EXPECT_DOUBLE_EQ(current["qkv input fp8 scale"].time_s, c.launch_s());
  EXPECT_DOUBLE_EQ(current["qkv input fp8 cast-transpose"].time_s,
                   c.launch_s() + 4 * T * h / c.memory_kernel_Bps());
  EXPECT_DOUBLE_EQ(delayed["fc2 input fp8 cast-transpose"].bytes, 4 * T * m.ffn_hidden);
  EXPECT_DOUBLE_EQ(current["fc2 input amax"].bytes, 2 * T * m.ffn_hidden);
  auto current_bwd = kernels(one_stage(1), false);
  EXPECT_DOUBLE_EQ(current_bwd["fc1 grad amax"].bytes, 2 * T * 2 * m.ffn_hidden);

  // With sequence parallelism over TP 4 a column-parallel GEMM's input and a row-parallel GEMM's
  // output gradient are quantized on this rank's quarter of the tokens, then all-gathered.
  EXPECT_DOUBLE_EQ(kernels(one_stage(4), true)["qkv input fp8 cast-transpose"].bytes,
                   4 * T / 4 * h);
  EXPECT_DOUBLE_EQ(kernels(one_stage(4), false)["fc2 grad amax"].bytes, 2 * T / 4 * h);
  EXPECT_DOUBLE_EQ(kernels(one_stage(4), true)["attention proj input amax"].bytes, 2 * T * h / 4);
}

TEST(BadInput, SlidingWindowNamesTheField) {
  auto field = [](std::vector<std::string> sets) {
    return test::error_of([&] { sim::simulate_step(sim::load_scenario("", sets)); }).field();
  };
  EXPECT_EQ(field({"model.sliding_window=-1"}), "model.sliding_window");
  EXPECT_EQ(field({"model.full_attention_every=2"}), "model.full_attention_every");
  EXPECT_EQ(field({"model.sliding_window=128", "model.full_attention_every=-2"}),
            "model.full_attention_every");
  // Ring attention exchanges every K/V block; with a window it would not need to.
  EXPECT_EQ(field({"cluster.nodes=4", "fabric.tiers=2", "fabric.switch_radix=16",
                   "model.preset=llama3-8b", "model.sliding_window=1024", "parallelism.tp=4",
                   "parallelism.cp=2", "parallelism.pp=1", "parallelism.dp=4",
                   "parallelism.virtual_stages=1", "training.global_batch=16"}),
            "parallelism.cp");
}

TEST(BadInput, RecomputeEarlyStopNamesTheField) {
  auto error_of = [](const std::vector<std::string>& sets) {
    return test::error_of([&] { sim::simulate_step(sim::load_scenario("", sets)); });
  };
  // Early stopping shortens a full recompute; without one it would silently do nothing.
  const core::Error none =
      error_of({"parallelism.recompute=none", "training.recompute_early_stop=true"});
  EXPECT_EQ(none.field(), "training.recompute_early_stop");
  EXPECT_NE(std::string(none.what()).find("parallelism.recompute"), std::string::npos);
  // With TP the skipped GEMM's collective would also be skipped, which is not modelled.
  const core::Error tp =
      error_of({"parallelism.recompute=full", "training.recompute_early_stop=true"});
  EXPECT_EQ(tp.field(), "training.recompute_early_stop");
  EXPECT_NE(std::string(tp.what()).find("parallelism.tp"), std::string::npos);
}

TEST(BadInput, Fp8RecipeNamesTheField) {
  // A scaling recipe without FP8 GEMMs would silently do nothing.
  const core::Error e = test::error_of([] {
    sim::simulate_step(
        sim::load_scenario("", {"training.precision=bf16", "training.fp8_recipe=tensorwise"}));
  });
  EXPECT_EQ(e.field(), "training.fp8_recipe");
  EXPECT_NE(std::string(e.what()).find("training.precision"), std::string::npos);
  const core::Error unknown = test::error_of([] {
    sim::simulate_step(
        sim::load_scenario("", {"training.precision=fp8", "training.fp8_recipe=mxfp8"}));
  });
  EXPECT_EQ(unknown.field(), "training.fp8_recipe");
}

TEST(BadInput, RecomputeModulesNameTheField) {
  auto error_of = [](const std::vector<std::string>& sets) {
    return test::error_of([&] { sim::simulate_step(sim::load_scenario("", sets)); });
  };
  const core::Error without_selective = error_of({"parallelism.recompute_modules=[layernorm]"});
  EXPECT_EQ(without_selective.field(), "parallelism.recompute_modules");
  EXPECT_NE(std::string(without_selective.what()).find("selective"), std::string::npos);
  for (const char* module : {"moe", "attention"})
    EXPECT_EQ(error_of({"parallelism.recompute=selective",
                        fmt::format("parallelism.recompute_modules=[{}]", module)})
                  .field(),
              "parallelism.recompute_modules")
        << module;
}

TEST(BadInput, RecomputeLayersNameTheField) {
  auto field = [](std::vector<std::string> sets) {
    return test::error_of([&] { sim::simulate_step(sim::load_scenario("", sets)); }).field();
  };
  EXPECT_EQ(field({"parallelism.recompute_layers=2"}), "parallelism.recompute_layers");
  EXPECT_EQ(field({"parallelism.recompute=selective", "parallelism.recompute_layers=2"}),
            "parallelism.recompute_layers");
  EXPECT_EQ(field({"parallelism.recompute=full", "parallelism.recompute_layers=81"}),
            "parallelism.recompute_layers");
  EXPECT_EQ(field({"parallelism.recompute=full", "parallelism.recompute_layers=-1"}),
            "parallelism.recompute_layers");
}

TEST(BadInput, StageLayersCpAndAttentionNameTheField) {
  auto field = [](std::vector<std::string> sets) {
    return test::error_of([&] { sim::simulate_step(sim::load_scenario("", sets)); }).field();
  };
  EXPECT_EQ(field({"parallelism.virtual_stages=1", "parallelism.stage_layers=[20, 20, 20, 19]"}),
            "parallelism.stage_layers");
  EXPECT_EQ(field({"parallelism.virtual_stages=1", "parallelism.stage_layers=[40, 40]"}),
            "parallelism.stage_layers");
  EXPECT_EQ(field({"parallelism.cp=3", "parallelism.dp=42", "cluster.nodes=504"}),
            "parallelism.cp");
  EXPECT_EQ(field({"training.attention=sparse"}), "training.attention");
  EXPECT_EQ(field({"parallelism.virtual_stages=0"}), "parallelism.virtual_stages");
  // A profile without flash-attention measurements cannot run flash attention (auto falls back
  // from cuDNN to flash, and finds neither).
  auto j = nlohmann::ordered_json::parse(calibrate::to_json(calibrate::load_profile("h100-sxm")));
  j["kernels"].erase("flash_attention");
  j["kernels"].erase("cudnn_attention");
  const std::string path =
      (std::filesystem::temp_directory_path() / "clustertwin-no-flash.json").string();
  std::ofstream(path) << j.dump(2);
  EXPECT_EQ(field({"cluster.gpu=" + path}), "training.attention");
  EXPECT_GT(sim::simulate_step(
                sim::load_scenario("", {"cluster.gpu=" + path, "training.attention=unfused",
                                        "parallelism.recompute=selective"}))
                .step_time_s,
            0);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace twin::workload
