// Closed-form checks of the step program: unfused attention bytes, cross-entropy, casts and
// recompute, separate data- and weight-gradient GEMMs, TP overlap, balanced uneven pipeline
// stages, MLA, ring-attention traffic, sliding-window attention, and the errors of bad input.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
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
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

using test::by_name;
using test::eight_sequences;
using test::h100_bf16;
using test::h100_fp8;
using test::one_stage;

ModelSpec small_model() {
  ModelSpec m = model_preset("llama3-8b");
  m.seq_len = 2048;
  return m;
}

/// The program's block labelled `label` ("dense layer", "output layer + loss").
BlockProgram block_of(const ChunkProgram& prog, const std::string& label) {
  for (const auto& b : prog.blocks)
    if (b.label == label) return b;
  ADD_FAILURE() << "no block " << label;
  return {};
}

/// The forward or backward kernels of the program's block labelled `label`.
std::vector<Kernel> block_kernels(const ChunkProgram& prog, const std::string& label,
                                  bool forward = true) {
  BlockProgram b = block_of(prog, label);
  return forward ? b.forward : b.backward;
}

/// The kernels' names, in order.
std::vector<std::string> names(const std::vector<Kernel>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : kernels) out.push_back(k.name);
  return out;
}

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
  // scale kernel (start-up only) and the cast; the norm no longer writes FP8. The activation
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
  EXPECT_DOUBLE_EQ(current["qkv input amax"].bytes, 2 * T * h);
  EXPECT_DOUBLE_EQ(current["qkv input amax"].time_s,
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
  EXPECT_DOUBLE_EQ(kernels(one_stage(4), true)["qkv input amax"].bytes, 2 * T / 4 * h);
  EXPECT_DOUBLE_EQ(kernels(one_stage(4), false)["fc2 grad amax"].bytes, 2 * T / 4 * h);
  EXPECT_DOUBLE_EQ(kernels(one_stage(4), true)["attention proj input amax"].bytes, 2 * T * h / 4);
}

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

TEST(Pipeline, BalancedSplitOf126LayersOn16Stages) {
  // One layer takes 1; the embedding 0.05 and the output layer + loss 0.6 of a layer: the
  // slowest stage is 8 layers, so the first and last stage give up one each: 7, 8 x 14, 7.
  const auto split = balance_stage_layers(126, 16, 1.0, 0.05, 0.6);
  std::vector<int> expected(16, 8);
  expected.front() = 7;
  expected.back() = 7;
  EXPECT_EQ(split, expected);
  // Even work splits evenly.
  EXPECT_EQ(balance_stage_layers(32, 4, 1.0, 0.0, 0.0), std::vector<int>(4, 8));
}

TEST(Pipeline, AutoStageLayersRunsLlama405bOn16Stages) {
  const sim::Scenario s =
      sim::load_scenario("", {"model.preset=llama3-405b", "parallelism.pp=16", "parallelism.dp=32",
                              "parallelism.virtual_stages=1", "parallelism.stage_layers=auto",
                              "parallelism.recompute=full", "training.global_batch=512"});
  const sim::StepReport r = sim::simulate_step(s);
  ASSERT_EQ(r.stage_layers.size(), 16u);
  int sum = 0;
  for (int n : r.stage_layers) sum += n;
  EXPECT_EQ(sum, 126);
  EXPECT_EQ(r.stage_layers.back(), 7);  // the output layer of a 128K vocabulary is worth ~1
}

TEST(Pipeline, PlainOneFOneBSendsBlockTheSendingStage) {
  // Two stages, no interleaving: each forward of stage 0 hands its activation over with a
  // blocking send, so stage 0's next op starts no earlier than that transfer's end (which is
  // when stage 1's forward of the same micro-batch may start).
  const sim::StepReport r = sim::simulate_step(sim::load_scenario(
      "", {"cluster.nodes=2", "model.preset=llama3-8b", "parallelism.tp=8", "parallelism.pp=2",
           "parallelism.dp=1", "parallelism.virtual_stages=1", "training.global_batch=8"}));
  std::vector<const sim::TimelineOp*> stage0;
  std::vector<double> arrives(8, -1.0);
  for (const auto& op : r.timeline) {
    if (op.stream != "compute" || op.micro_batch < 0) continue;
    if (op.stage == 0) stage0.push_back(&op);
    if (op.stage == 1 && op.forward)
      arrives[static_cast<std::size_t>(op.micro_batch)] = op.p2p_end_s;
  }
  int checked = 0;
  for (std::size_t i = 0; i + 1 < stage0.size(); ++i) {
    if (!stage0[i]->forward) continue;
    const double arrival = arrives[static_cast<std::size_t>(stage0[i]->micro_batch)];
    ASSERT_GT(arrival, stage0[i]->end_s);  // the transfer takes time
    EXPECT_GE(stage0[i + 1]->start_s, arrival - 1e-12);
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Pipeline, ScatterGatherSendsOneTpShareAndGathersItOnNvlink) {
  // Llama 3 8B, TP 8 x PP 2 on 2 nodes, no sequence parallelism: each TP rank holds the whole
  // activation T h 2 = 2048 x 4096 x 2 bytes. Scatter-gather sends 1/8 of it across the fabric
  // and the next stage all-gathers T h 2 in its node; without it all 8 ranks send T h 2 each.
  auto run = [](bool scatter_gather) {
    return sim::simulate_step(sim::load_scenario(
        "", {"cluster.nodes=2", "model.preset=llama3-8b", "model.seq_len=2048", "parallelism.tp=8",
             "parallelism.pp=2", "parallelism.dp=1", "parallelism.sequence_parallel=false",
             "parallelism.virtual_stages=1", "training.global_batch=8",
             fmt::format("training.pp_scatter_gather={}", scatter_gather)}));
  };
  auto seconds = [](const sim::StepReport& r, const std::string& name) {
    for (const auto& [n, s] : r.collective_times)
      if (n == name) return s;
    return -1.0;
  };
  const sim::StepReport split = run(true), whole = run(false);
  const double activation = 2048.0 * 4096 * 2;
  EXPECT_DOUBLE_EQ(split.program.chunks[0][0].p2p_bytes, activation / 8);
  EXPECT_DOUBLE_EQ(whole.program.chunks[0][0].p2p_bytes, activation);
  // 2 MiB vs 16 MiB over one 400 Gb/s NIC per rank: the bandwidth term shrinks 8x; latency
  // keeps the ratio below 8.
  const double send_split = seconds(split, "PP send/recv s0");
  const double send_whole = seconds(whole, "PP send/recv s0");
  ASSERT_GT(send_split, 0);
  EXPECT_GT(send_whole / send_split, 4.0);
  EXPECT_GT(seconds(split, "PP all_gather s1"), 0);
  EXPECT_LT(seconds(whole, "PP all_gather s1"), 0);  // not issued
  EXPECT_LT(split.step_time_s, whole.step_time_s);
}

TEST(Pipeline, FullRecomputeReissuesTheForwardTpCollectives) {
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const KernelCoster& c = h100_bf16();
  for (const char* recompute : {"none", "selective", "full"}) {
    p.recompute = recompute;
    const ChunkProgram prog = chunk_program(m, p, t, make_layout(m, p, t, 8), c, 0, 0);
    EXPECT_EQ(prog.tp_collectives, 2 * m.layers);  // two slots per layer and direction
    EXPECT_EQ(prog.recompute_tp_collectives, p.recompute == "full" ? 2 * m.layers : 0);
  }
}

// recompute_layers (Megatron-Core's recompute_method block): the first N layers of a chunk rerun
// their forward, the others keep their activations. Everything that full recompute adds scales
// with N / L: the backward time, the reissued TP collectives, the hardware FLOPs; the memory is
// N layers' inputs plus (L - N) layers' full activations.
TEST(Pipeline, RecomputeLayersRecomputesTheFirstLayersOfEachChunk) {
  const ModelSpec m = small_model();  // 32 layers, one chunk
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const KernelCoster& c = h100_bf16();
  const Layout layout = make_layout(m, p, t, 8);
  auto program = [&](const char* recompute, int layers) {
    ParallelismSpec q = p;
    q.recompute = recompute;
    q.recompute_layers = layers;
    return chunk_program(m, q, t, layout, c, 0, 0);
  };
  const ChunkProgram none = program("none", 0), all = program("full", 0),
                     twelve = program("full", 12);
  const double L = m.layers;
  EXPECT_NEAR(twelve.backward_s - none.backward_s, 12 / L * (all.backward_s - none.backward_s),
              1e-12);
  EXPECT_DOUBLE_EQ(twelve.forward_s, all.forward_s);
  EXPECT_EQ(twelve.recompute_tp_collectives, 2 * 12);
  EXPECT_EQ(all.recompute_tp_collectives, 2 * m.layers);
  // The recomputed forward's TP transfers overlap the recomputed layers' GEMMs only.
  const double slot = 20e-6;
  EXPECT_NEAR(tp_overlap(twelve, true, slot, true).overlapped_s,
              12 / L * tp_overlap(all, true, slot, true).overlapped_s, 1e-15);
  EXPECT_DOUBLE_EQ(tp_overlap(twelve, true, slot).overlapped_s,
                   tp_overlap(all, true, slot).overlapped_s);
  ASSERT_EQ(twelve.blocks.size(), 4U);  // embedding, 12 recomputed, 20 kept, output layer
  EXPECT_EQ(twelve.blocks[1].label, "dense layer (recomputed)");
  EXPECT_EQ(twelve.blocks[1].count, 12);
  EXPECT_EQ(twelve.blocks[2].label, "dense layer");
  EXPECT_EQ(twelve.blocks[2].count, 20);
  EXPECT_TRUE(twelve.blocks[2].recompute.empty());
  // As many layers as the chunk has, or more, is every layer.
  EXPECT_DOUBLE_EQ(program("full", 32).backward_s, all.backward_s);
  // Memory: 12 layer inputs (2 s b h / t with SP) and 20 layers of everything.
  ParallelismSpec q = p;
  const double kept = memory_per_gpu(m, q, t, layout).activations_GB / L;
  q.recompute = "full";
  const double input = memory_per_gpu(m, q, t, layout).activations_GB / L;
  EXPECT_NEAR(input, 2.0 * 2048 * 4096 / 2 / 1e9, 1e-12);
  q.recompute_layers = 12;
  EXPECT_NEAR(memory_per_gpu(m, q, t, layout).activations_GB, 12 * input + 20 * kept, 1e-9);
  EXPECT_NE(activation_table(m, q, t, 1.0).find("the first 12 layers of each chunk recomputed"),
            std::string::npos);
}

// The hardware FLOPs of recompute_layers: the recomputed share of the layers' forward.
TEST(Pipeline, RecomputeLayersCountsItsShareOfTheHardwareFlops) {
  const std::vector<std::string> base = {"cluster.nodes=4",          "fabric.tiers=2",
                                         "fabric.switch_radix=16",   "model.preset=llama3-8b",
                                         "parallelism.tp=2",         "parallelism.pp=2",
                                         "parallelism.dp=8",         "parallelism.virtual_stages=2",
                                         "training.global_batch=64", "parallelism.recompute=full"};
  auto step = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return sim::simulate_step(sim::load_scenario("", extra));
  };
  const sim::StepReport all = step({}), three = step({"parallelism.recompute_layers=3"});
  // 32 layers in 4 chunks of 8: 3 of each 8 recomputed.
  EXPECT_NEAR(three.hardware_flops_per_step - three.model_flops_per_step,
              3.0 / 8 * (all.hardware_flops_per_step - all.model_flops_per_step),
              1e-9 * all.model_flops_per_step);
  EXPECT_LT(three.step_time_s, all.step_time_s);
}

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
