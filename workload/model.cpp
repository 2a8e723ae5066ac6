#include "workload/model.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::workload {

double ModelSpec::attention_params() const {
  const double h = hidden, q = q_width();
  if (mla()) {
    const double a = heads, qk = a * qk_head_dim(), rq = q_lora_rank, rkv = kv_lora_rank;
    const double queries = rq > 0 ? h * rq + rq * qk : h * qk;
    const double keys_values = h * (rkv + qk_rope_head_dim) + rkv * a * (kv_channels() + v_dim());
    return queries + keys_values + a * v_dim() * h;
  }
  return h * (q + 2.0 * kv_width()) + q * h;
}

double ModelSpec::dense_mlp_params() const {
  return static_cast<double>(mlp_matrices()) * hidden * ffn_hidden;
}

double ModelSpec::expert_params() const {
  return static_cast<double>(mlp_matrices()) * hidden * expert_ffn_hidden;
}

double ModelSpec::moe_mlp_params() const {
  return (experts + shared_experts) * expert_params() + static_cast<double>(hidden) * experts;
}

double ModelSpec::total_params() const {
  const int dense_layers = layers - moe_layers();
  return layers * attention_params() + dense_layers * dense_mlp_params() +
         moe_layers() * moe_mlp_params() + embedding_params();
}

double ModelSpec::active_moe_mlp_params() const {
  return (top_k + shared_experts) * expert_params() + static_cast<double>(hidden) * experts;
}

double ModelSpec::active_params() const {
  const int dense_layers = layers - moe_layers();
  return layers * attention_params() + dense_layers * dense_mlp_params() +
         moe_layers() * active_moe_mlp_params() + embedding_params();
}

double ModelSpec::attention_entries(int layer, bool causal) const {
  const double s = seq_len;
  if (!causal) return s * s;
  if (windowed(layer)) {
    const double w = sliding_window;
    return s * w - w * (w - 1) / 2;
  }
  return s * (s + 1) / 2;
}

double ModelSpec::attention_score_flops(double sequences, bool causal) const {
  // QK^T over query/key heads and AV over value heads: 2 FLOPs per entry and head dimension.
  if (!causal) {
    const double tokens = sequences * seq_len;
    return layers * 2.0 * tokens * seq_len * heads * (qk_head_dim() + v_dim());
  }
  double entries = 0;
  for (int layer = 0; layer < layers; ++layer) entries += attention_entries(layer, true);
  return sequences * entries * 2.0 * heads * (qk_head_dim() + v_dim());
}

double ModelSpec::forward_flops(double sequences, bool causal) const {
  const double tokens = sequences * seq_len;
  // Matmul FLOPs are 2 per parameter per token over the active matrices, except the input
  // embedding (a lookup): the output projection (V h) counts once, whether or not it is the
  // embedding's own matrix (tied: active_params holds that matrix once, and it is the GEMM).
  const double matmul_params =
      active_params() - (tied_embeddings ? 0.0 : static_cast<double>(vocab) * hidden);
  // Each multi-token-prediction module: one layer like the last, its 2h x h projection and
  // the output layer again.
  const double mtp_layer =
      attention_params() + (moe_layer(layers - 1) ? active_moe_mlp_params() : dense_mlp_params());
  const double mtp_params =
      mtp_layers * (mtp_layer + 2.0 * hidden * hidden + static_cast<double>(vocab) * hidden);
  // The module's layer attends as the last layer does.
  const double per_entry = 2.0 * heads * (qk_head_dim() + v_dim());
  const double mtp_scores =
      layers == 0 ? 0
      : causal    ? mtp_layers * sequences * attention_entries(layers - 1, true) * per_entry
                  : mtp_layers * attention_score_flops(sequences) / layers;
  return 2.0 * tokens * (matmul_params + mtp_params) + attention_score_flops(sequences, causal) +
         mtp_scores;
}

double ModelSpec::training_flops(double sequences, bool causal) const {
  return 3.0 * forward_flops(sequences, causal);
}

namespace {

ModelSpec dense(const char* name, int layers, int hidden, int heads, int kv_heads, int ffn,
                int vocab, int seq, const char* mlp = "swiglu") {
  ModelSpec m;
  m.name = name;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.ffn_hidden = ffn;
  m.vocab = vocab;
  m.seq_len = seq;
  m.mlp = mlp;
  return m;
}

std::vector<ModelSpec> presets() {
  std::vector<ModelSpec> p;
  // GPT-3 175B (Brown et al. 2020): 96 layers, 12288 hidden, 96 heads, GELU MLP 4h, 2048 context.
  p.push_back(dense("gpt3-175b", 96, 12288, 96, 96, 49152, 50257, 2048, "gelu"));
  // Llama 3 (Dubey et al. 2024, Table 3): 8B, 70B, 405B; GQA with 8 KV heads; 128K vocabulary.
  p.push_back(dense("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192));
  p.push_back(dense("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192));
  p.push_back(dense("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192));
  // Mixtral 8x7B (Jiang et al. 2024): 32 layers, 4096 hidden, 8 experts top-2, expert FFN 14336.
  ModelSpec mixtral = dense("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 4096);
  mixtral.experts = 8;
  mixtral.top_k = 2;
  mixtral.expert_ffn_hidden = 14336;
  p.push_back(mixtral);
  // DBRX-like (Databricks 2024): 132B total / 36B active, 40 layers, 6144 hidden, 48 heads,
  // 8 KV heads, 16 experts top-4, expert FFN 10752, 100K vocabulary, 4K context.
  ModelSpec dbrx = dense("dbrx", 40, 6144, 48, 8, 10752, 100352, 4096);
  dbrx.experts = 16;
  dbrx.top_k = 4;
  dbrx.expert_ffn_hidden = 10752;
  p.push_back(dbrx);
  // DeepSeek-V3-like (DeepSeek-AI 2024): 61 layers, 7168 hidden, 128 heads, 256 routed experts
  // top-8 + 1 shared, expert FFN 2048, 129K vocabulary; all layers modelled as MoE (V3 keeps
  // its first 3 dense).
  // Multi-head latent attention is modelled as standard attention with 128 KV heads, which
  // overstates attention parameters; the preset is "like" V3, not V3.
  ModelSpec v3 = dense("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 4096);
  v3.experts = 256;
  v3.top_k = 8;
  v3.shared_experts = 1;
  v3.expert_ffn_hidden = 2048;
  v3.router_groups = 8;  // node-limited routing: a token's experts in its 4 best of 8 groups
  v3.router_group_topk = 4;
  v3.mtp_layers = 1;  // num_nextn_predict_layers 1
  p.push_back(v3);
  // GPT-OSS 120B (OpenAI 2025, openai/gpt-oss-120b config.json): 36 layers, 2880 hidden, 64
  // query heads of 64 and 8 KV heads, 128 experts top-4 of width 2880, 201,088 vocabulary;
  // sliding window of 128 tokens on every other layer, the first one windowed. Attention sinks
  // and the projections' biases are not modelled; 4,096 tokens as Megatron-Bridge trains it.
  ModelSpec oss = dense("gpt-oss-120b", 36, 2880, 64, 8, 2880, 201088, 4096);
  oss.head_dim = 64;
  oss.experts = 128;
  oss.top_k = 4;
  oss.expert_ffn_hidden = 2880;
  oss.sliding_window = 128;
  oss.full_attention_every = 2;
  p.push_back(oss);
  return p;
}

}  // namespace

std::vector<std::string> model_presets() {
  std::vector<std::string> names;
  for (const auto& m : presets()) names.push_back(m.name);
  return names;
}

ModelSpec model_preset(const std::string& name) {
  for (const auto& m : presets())
    if (m.name == name) return m;
  throw core::Error("model.preset", name,
                    "unknown preset; valid: " + core::quoted_list(model_presets()) +
                        core::did_you_mean(name, model_presets()));
}

void validate(const ModelSpec& m) {
  auto positive = [](int v, const char* field) {
    if (v <= 0) throw core::Error(field, std::to_string(v), "must be a positive integer");
  };
  positive(m.layers, "model.layers");
  positive(m.hidden, "model.hidden");
  positive(m.heads, "model.heads");
  positive(m.kv_heads, "model.kv_heads");
  positive(m.vocab, "model.vocab");
  positive(m.seq_len, "model.seq_len");
  if (m.head_dim < 0)
    throw core::Error("model.head_dim", std::to_string(m.head_dim),
                      "must be positive (or 0: hidden / heads)");
  if (m.head_dim == 0 && m.hidden % m.heads != 0)
    throw core::Error(
        "model.heads", std::to_string(m.heads),
        fmt::format("must divide model.hidden ({}), or set model.head_dim", m.hidden));
  if (m.heads % m.kv_heads != 0)
    throw core::Error("model.kv_heads", std::to_string(m.kv_heads),
                      fmt::format("must divide model.heads ({})", m.heads));
  if (m.mlp != "swiglu" && m.mlp != "gelu")
    throw core::Error("model.mlp", m.mlp, "must be 'swiglu' or 'gelu'");
  if (m.moe()) {
    positive(m.top_k, "model.top_k");
    positive(m.expert_ffn_hidden, "model.expert_ffn_hidden");
    if (m.top_k > m.experts)
      throw core::Error("model.top_k", std::to_string(m.top_k),
                        fmt::format("cannot exceed model.experts ({})", m.experts));
    if (m.moe_layer_every < 1 || m.layers % m.moe_layer_every != 0)
      throw core::Error("model.moe_layer_every", std::to_string(m.moe_layer_every),
                        fmt::format("must be >= 1 and divide model.layers ({})", m.layers));
    if (!(m.capacity_factor >= 1.0))
      throw core::Error("model.capacity_factor", fmt::format("{}", m.capacity_factor),
                        "must be >= 1");
    if (m.router_groups < 0 || (m.router_groups > 0 && m.experts % m.router_groups != 0))
      throw core::Error("model.router_groups", std::to_string(m.router_groups),
                        fmt::format("must divide model.experts ({}); 0: ungrouped", m.experts));
    if ((m.router_groups > 0) != (m.router_group_topk > 0) ||
        m.router_group_topk > m.router_groups ||
        (m.router_groups > 0 && m.top_k > m.router_group_topk * (m.experts / m.router_groups)))
      throw core::Error("model.router_group_topk", std::to_string(m.router_group_topk),
                        fmt::format("needs model.router_groups ({}) and must be at most it, with "
                                    "top_k ({}) experts in that many groups",
                                    m.router_groups, m.top_k));
  } else {
    positive(m.ffn_hidden, "model.ffn_hidden");
  }
  if (m.experts < 0)
    throw core::Error("model.experts", std::to_string(m.experts), "must not be negative");
  if (m.sliding_window < 0)
    throw core::Error("model.sliding_window", std::to_string(m.sliding_window),
                      "must not be negative (0: every layer attends to the whole causal prefix)");
  if (m.full_attention_every < 0)
    throw core::Error("model.full_attention_every", std::to_string(m.full_attention_every),
                      "must not be negative (0: every layer windowed)");
  if (m.full_attention_every > 0 && m.sliding_window == 0)
    throw core::Error("model.full_attention_every", std::to_string(m.full_attention_every),
                      "interleaves full-attention layers among windowed ones: it needs "
                      "model.sliding_window > 0");
  auto not_negative = [](int v, const char* field) {
    if (v < 0) throw core::Error(field, std::to_string(v), "must not be negative");
  };
  not_negative(m.q_lora_rank, "model.q_lora_rank");
  not_negative(m.kv_lora_rank, "model.kv_lora_rank");
  not_negative(m.qk_rope_head_dim, "model.qk_rope_head_dim");
  not_negative(m.v_head_dim, "model.v_head_dim");
  if (!m.mla() && (m.q_lora_rank > 0 || m.qk_rope_head_dim > 0 || m.v_head_dim > 0))
    throw core::Error("model.kv_lora_rank", std::to_string(m.kv_lora_rank),
                      "q_lora_rank, qk_rope_head_dim and v_head_dim describe multi-head latent "
                      "attention, which needs kv_lora_rank > 0");
  if (m.mla() && m.kv_heads != m.heads)
    throw core::Error("model.kv_heads", std::to_string(m.kv_heads),
                      fmt::format("multi-head latent attention expands the latent into every "
                                  "head: kv_heads must equal heads ({})",
                                  m.heads));
}

}  // namespace twin::workload
