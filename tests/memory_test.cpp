// Closed forms of the memory model: the tensors a layer keeps for its backward, counted from the
// model's widths (Korthikanti et al.'s 32 s b h / t for their shape), and the table that lists
// them.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace twin::workload
