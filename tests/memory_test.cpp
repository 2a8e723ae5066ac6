// Closed forms of the memory model: the tensors a layer keeps for its backward, counted from the
// model's widths (Korthikanti et al.'s 32 s b h / t for their shape), and the table that lists
// them.
#include <gtest/gtest.h>

#include <string>

#include "workload/memory.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"

namespace twin::workload {
namespace {

TEST(Memory, ActivationsAreTheTensorsEachLayerKeeps) {
  // Korthikanti et al.'s shape: 4h GeLU MLP, multi-head attention, bf16, SP over t = 4, no
  // dropout: 32 s b h / t bytes per layer.
  ModelSpec m = model_preset("llama3-8b");
  m.mlp = "gelu";
  m.ffn_hidden = 4 * m.hidden;
  m.kv_heads = m.heads;
  ParallelismSpec p;
  p.tp = 4;
  p.sequence_parallel = true;
  p.micro_batch = 1;
  TrainingSpec t;
  const double sbh_t = static_cast<double>(m.seq_len) * m.hidden / p.tp;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, t), 32 * sbh_t);
  // Without SP the norm and linear inputs are whole on every rank: 8 + 24 / t.
  ParallelismSpec no_sp = p;
  no_sp.sequence_parallel = false;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, no_sp, t), (8 * 4 + 24) * sbh_t);
  // Grouped-query attention with 8 of 32 KV heads keeps K and V at a quarter of h: 4 h -> h.
  m.kv_heads = m.heads / 4;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, t), 29 * sbh_t);
  // FP8 keeps the QKV, fc1 and fc2 inputs in one byte (-1, -1, -4) and a quantized copy of the
  // attention output for the projection (+1): 24.
  t.precision = "fp8";
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, t), 24 * sbh_t);
  // SwiGLU with f = 8h/3 keeps fc1's 2f-wide output (2 bytes) and fc2's f-wide input (1 byte):
  // 5 f = 40/3 h instead of the GeLU MLP's 8 h + 4 h: 24 + 4/3.
  m.mlp = "swiglu";
  m.ffn_hidden = m.hidden * 8 / 3;
  // (f = 10922 is 8h/3 rounded down, 0.003 % short.)
  EXPECT_NEAR(activation_bytes_per_layer(m, p, t), (24 + 4.0 / 3) * sbh_t, 1e-3 * sbh_t);
}

TEST(Memory, TheActivationTableListsWhatTheTotalCounts) {
  ModelSpec m = model_preset("llama3-8b");
  ParallelismSpec p;
  p.tp = 2;
  p.sequence_parallel = true;
  p.micro_batch = 1;
  TrainingSpec t;
  t.precision = "fp8";
  double sum = 0;
  for (const auto& x : activation_tensors(m, p, t)) sum += x.bytes;
  EXPECT_DOUBLE_EQ(sum, activation_bytes_per_layer(m, p, t));
  const std::string table = activation_table(m, p, t, 32 * sum / 1e9);
  EXPECT_NE(table.find("K, V (8 KV heads)"), std::string::npos) << table;
  EXPECT_NE(table.find("QKV projection input, fp8"), std::string::npos) << table;
  EXPECT_NE(table.find("x 32.0 layer-micro-batches"), std::string::npos) << table;
  // Full recompute keeps the layer input alone (2 s b h / t with SP), and the table says so.
  p.recompute = "full";
  const double input = 2.0 * m.seq_len * m.hidden / p.tp;
  EXPECT_DOUBLE_EQ(activation_bytes_per_layer(m, p, t), input);
  EXPECT_NE(activation_table(m, p, t, 1.0).find("full recompute: the layer input"),
            std::string::npos);
}

/// Llama 3 8B at 2,048 tokens.
ModelSpec llama3_8b_2k() {
  ModelSpec m = model_preset("llama3-8b");
  m.seq_len = 2048;
  return m;
}

/// 8 GPUs without TP in `pp` stages, full recompute.
ParallelismSpec full_recompute_on_8(int pp, int zero, int micro_batch) {
  ParallelismSpec p;
  p.tp = 1;
  p.pp = pp;
  p.dp = 8 / pp;
  p.zero = zero;
  p.micro_batch = micro_batch;
  p.recompute = "full";
  return p;
}

// Expectation: the working set is what one layer at a time adds to the peak. FSDP (zero 3) on 8
// GPUs, pp 1, full recompute: the gathered layer and the prefetched one (2 P_l x 2 bytes), then
// the larger of a layer's unsharded gradient (P_l x 4 bytes, fp32 reduce) plus the rest of one
// recomputed layer's activations, and the loss over T V logits (2 bytes fused, 10 unfused).
// Megatron's zero 1 with pp > 1 and no recompute has none.
TEST(Memory, WorkingSetIsTheGatheredLayersAndTheLargerOfOneLayersBackwardAndTheLoss) {
  const ModelSpec m = llama3_8b_2k();
  const ParallelismSpec p = full_recompute_on_8(1, 3, 2);
  TrainingSpec t;
  t.global_batch = 16;
  t.grad_reduce_dtype = "fp32";
  const Layout layout = make_layout(m, p, t, 8);
  const double layer_params = m.attention_params() + m.dense_mlp_params();
  ParallelismSpec kept = p;
  kept.recompute = "none";
  const double rest_of_layer =
      activation_bytes_per_layer(m, kept, t) - activation_bytes_per_layer(m, p, t);
  const double logits = 2.0 * m.seq_len * static_cast<double>(m.vocab);
  const double backward = 4 * layer_params + rest_of_layer;
  t.cross_entropy = "fused";
  ASSERT_GT(backward, 2 * logits);
  EXPECT_NEAR(memory_per_gpu(m, p, t, layout).working_GB * 1e9, 4 * layer_params + backward,
              1e-6 * backward);
  t.cross_entropy = "unfused";
  ASSERT_LT(backward, 10 * logits);
  EXPECT_NEAR(memory_per_gpu(m, p, t, layout).working_GB * 1e9, 4 * layer_params + 10 * logits,
              1e-6 * logits);
  const MemoryBreakdown with = memory_per_gpu(m, p, t, layout);
  EXPECT_DOUBLE_EQ(with.total_GB(), with.weights_GB + with.gradients_GB + with.optimizer_GB +
                                        with.activations_GB + with.working_GB + with.reserve_GB);
  ParallelismSpec megatron;
  megatron.tp = 2;
  megatron.pp = 4;
  megatron.dp = 1;
  megatron.zero = 1;
  megatron.recompute = "none";
  EXPECT_DOUBLE_EQ(memory_per_gpu(m, megatron, t, make_layout(m, megatron, t, 8)).working_GB, 0);
}

// Expectation: with pipeline stages the check is of the fuller of the first and the last stage.
// Llama 3 8B on pp 2 (16 layers each), full recompute, unfused loss: the last stage holds one
// micro-batch's layer inputs (2 s h bytes a layer) where the first holds two, but also the
// output layer and the loss over T V logits at 10 bytes each, so it is the one reported.
// Interleaved over v = 2 the last stage holds (0 + 1 x 2 + 1) / 2 = 1.5 micro-batches.
TEST(Memory, TheLastPipelineStageHoldsTheOutputLayerAndTheLoss) {
  const ModelSpec m = llama3_8b_2k();
  const ParallelismSpec p = full_recompute_on_8(2, 1, 1);
  TrainingSpec t;
  t.global_batch = 32;
  t.cross_entropy = "unfused";
  const Layout layout = make_layout(m, p, t, 8);
  const double table = static_cast<double>(m.vocab) * m.hidden;
  EXPECT_DOUBLE_EQ(params_per_gpu(m, layout, 1) - params_per_gpu(m, layout, 0), 0.0);
  EXPECT_DOUBLE_EQ(params_per_gpu(m, layout, 0),
                   16 * (m.attention_params() + m.dense_mlp_params()) + table);
  const MemoryBreakdown mem = memory_per_gpu(m, p, t, layout);
  EXPECT_EQ(mem.stage, 1);
  const double input = 2.0 * m.seq_len * m.hidden;  // a recomputed layer keeps its input
  EXPECT_NEAR(mem.activations_GB * 1e9, 16 * input, 1e-6 * input);
  EXPECT_NEAR(mem.working_GB * 1e9, 10.0 * m.seq_len * m.vocab, 1.0);
  // With the fused loss (2 bytes a logit) the first stage, two micro-batches in flight and one
  // recomputed layer, is fuller.
  t.cross_entropy = "fused";
  const MemoryBreakdown fused = memory_per_gpu(m, p, t, layout);
  EXPECT_EQ(fused.stage, 0);
  EXPECT_NEAR(fused.activations_GB * 1e9, 2 * 16 * input, 1e-6 * input);
  ParallelismSpec kept = p;  // while a layer's backward runs, the rest of its activations
  kept.recompute = "none";
  EXPECT_NEAR(fused.working_GB * 1e9, activation_bytes_per_layer(m, kept, t) - input, 1.0);
  t.cross_entropy = "unfused";
  ParallelismSpec interleaved = p;
  interleaved.virtual_stages = 2;
  const MemoryBreakdown v2 = memory_per_gpu(m, interleaved, t, make_layout(m, interleaved, t, 8));
  EXPECT_EQ(v2.stage, 1);
  EXPECT_NEAR(v2.activations_GB * 1e9, 1.5 * 16 * input, 1e-6 * input);
}

}  // namespace
}  // namespace twin::workload
