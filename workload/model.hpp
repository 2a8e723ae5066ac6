#pragma once
/// Transformer model specifications (dense and Mixture-of-Experts), presets, and the parameter
/// and FLOP counts derived from the layer shapes.
///
/// Per layer, with tokens T, hidden h, query heads a of width d (Megatron's kv_channels: h / a
/// unless `head_dim` says otherwise, as in Qwen3 and GPT-OSS), query width h_q = a d, KV width
/// h_kv = kv_heads d, MLP width f and m MLP matrices (3 for SwiGLU: gate, up, down; 2 for GELU):
///   attention projections: h (h_q + 2 h_kv) + h_q h parameters, 2 T x that FLOPs forward
///   attention scores:      4 T s h_q FLOPs forward (QK^T and AV, full square as Megatron counts)
///   dense MLP:             m h f parameters, 2 T m h f FLOPs forward
///   MoE MLP:               E experts of m h f_e (+ shared experts), router h E; a token uses
///                          top_k routed experts (+ shared): 2 T (top_k + shared) m h f_e FLOPs
/// Multi-head latent attention (DeepSeek-V2/V3, `kv_lora_rank` > 0): queries through a rank-r_q
/// bottleneck (h r_q + r_q a d_qk; or h a d_qk without one), keys and values from a shared
/// rank-r_kv latent plus a d_r-wide rotary key (h (r_kv + d_r) + r_kv a (d + d_v)), output a d_v h;
/// query/key heads d_qk = d + d_r wide, value heads d_v: scores 2 T s a (d_qk + d_v) FLOPs forward.
/// Logits: 2 T h V FLOPs forward; embedding and output matrices V h each (one V h matrix when
/// `tied_embeddings`).
/// Training FLOPs = 3 x forward (backward = 2 x forward). For GPT-style dense models (f = 4h, m=2,
/// no GQA) this is Narayanan et al.'s 72 B s l h^2 (1 + s/(6h) + V/(12 l h)).

#include <string>
#include <vector>

namespace twin::workload {

struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;  ///< width of one attention head; 0: hidden / heads
  // Multi-head latent attention (kv_lora_rank = 0: standard attention).
  int q_lora_rank = 0;       ///< rank of the query bottleneck (0: full-rank queries)
  int kv_lora_rank = 0;      ///< rank of the shared key/value latent (> 0: MLA)
  int qk_rope_head_dim = 0;  ///< MLA: rotary part of each query/key head, beyond head_dim
  int v_head_dim = 0;        ///< MLA: width of a value head (0: head_dim)
  int ffn_hidden = 0;
  int vocab = 0;
  int seq_len = 0;
  std::string mlp = "swiglu";  ///< swiglu (3 matrices) or gelu (2)
  // Mixture of experts (experts = 0: dense).
  int experts = 0;
  int top_k = 0;
  int expert_ffn_hidden = 0;
  int shared_experts = 0;
  int moe_layer_every = 1;       ///< every k-th layer is MoE (1: all)
  double capacity_factor = 1.0;  ///< tokens per expert relative to a perfect balance
  /// Group-limited routing (DeepSeek-V3's node-limited routing, Megatron-Core's
  /// moe_router_num_groups / moe_router_group_topk): the experts form `router_groups` equal
  /// groups in order, and a token's top_k experts come from its `router_group_topk` best
  /// groups (0: ungrouped).
  int router_groups = 0;
  int router_group_topk = 0;
  /// Queries and keys RMS-normed per head before rotary (Megatron-Core's qk_layernorm: Qwen3,
  /// OLMo 2, Gemma 3). Multi-head latent attention's latent norms are modelled with MLA itself.
  bool qk_norm = false;
  /// Multi-token prediction modules (DeepSeek-V3: 1; Megatron-Core's mtp_num_layers): each
  /// predicts one more token ahead with one transformer layer like the model's last, a
  /// projection of 2 hidden x hidden and its own loss over the shared output layer, on the
  /// last pipeline stage.
  int mtp_layers = 0;
  /// The output layer is the input embedding's matrix (GPT-2/3, BLOOM, MPT: Megatron's
  /// share_embeddings_and_output_weights, Hugging Face's tie_word_embeddings): V h parameters
  /// once. With pipeline parallelism the first and last stages each keep a copy and all-reduce
  /// its gradient between them at the end of every step (Megatron's
  /// _allreduce_word_embedding_grads, DeepSpeed's tied-module all-reduce).
  bool tied_embeddings = false;
  /// Whether the output layer is the embedding's own matrix on the GPU (tied and all on one
  /// stage): its parameters and gradient are the embedding's, counted once.
  [[nodiscard]] bool output_is_embedding(int pp) const { return tied_embeddings && pp == 1; }
  // Sliding-window attention (GPT-OSS, Gemma, Mistral): windowed layers let each query see its
  // `sliding_window` latest tokens (itself included) instead of the whole causal prefix.
  int sliding_window = 0;        ///< tokens each query sees in a windowed layer (0: none)
  int full_attention_every = 0;  ///< with a window: every k-th layer attends fully (0: none)

  [[nodiscard]] bool moe() const { return experts > 0; }
  /// Whether layer `layer` (0-based) attends over a sliding window: with full_attention_every
  /// k, layers k-1, 2k-1, ... attend fully (GPT-OSS: k = 2, the first layer windowed).
  [[nodiscard]] bool windowed(int layer) const {
    return has_window() && (full_attention_every == 0 || (layer + 1) % full_attention_every != 0);
  }
  /// Whether any layer's window is shorter than the sequence (a longer one is full attention).
  [[nodiscard]] bool has_window() const { return sliding_window > 0 && sliding_window < seq_len; }
  [[nodiscard]] int mlp_matrices() const { return mlp == "gelu" ? 2 : 3; }
  [[nodiscard]] int moe_layers() const { return moe() ? layers / moe_layer_every : 0; }
  /// Whether layer `layer` (0-based) has an MoE MLP: every moe_layer_every-th, the last included.
  [[nodiscard]] bool moe_layer(int layer) const {
    return moe() && (layer + 1) % moe_layer_every == 0;
  }
  /// Width of one attention head (Megatron's kv_channels).
  [[nodiscard]] int kv_channels() const { return head_dim > 0 ? head_dim : hidden / heads; }
  [[nodiscard]] int q_width() const { return kv_channels() * heads; }
  [[nodiscard]] int kv_width() const { return kv_channels() * kv_heads; }
  [[nodiscard]] bool mla() const { return kv_lora_rank > 0; }
  /// Width of a query/key head (head_dim + the MLA rotary part) and of a value head.
  [[nodiscard]] int qk_head_dim() const { return kv_channels() + (mla() ? qk_rope_head_dim : 0); }
  [[nodiscard]] int v_dim() const { return mla() && v_head_dim > 0 ? v_head_dim : kv_channels(); }

  /// Parameters of one transformer layer's attention block.
  [[nodiscard]] double attention_params() const;
  /// Parameters of one dense MLP, one expert, and one MoE layer's MLP (all experts + router).
  [[nodiscard]] double dense_mlp_params() const;
  [[nodiscard]] double expert_params() const;
  [[nodiscard]] double moe_mlp_params() const;
  /// Parameters of one MoE layer's MLP that a token touches (top_k routed + shared + router).
  [[nodiscard]] double active_moe_mlp_params() const;
  [[nodiscard]] double embedding_params() const {
    return (tied_embeddings ? 1.0 : 2.0) * vocab * hidden;
  }
  [[nodiscard]] double total_params() const;
  /// Parameters a token touches (MoE: top_k routed + shared experts).
  [[nodiscard]] double active_params() const;
  /// Model FLOPs of one training step on `sequences` sequences (3 x forward, no recompute).
  /// `causal`: the attention scores count only the entries the mask keeps (see
  /// attention_entries); otherwise the whole square.
  [[nodiscard]] double training_flops(double sequences, bool causal = false) const;
  /// Forward FLOPs for `sequences` sequences.
  [[nodiscard]] double forward_flops(double sequences, bool causal = false) const;
  /// Forward FLOPs of the attention-score part only (recomputed by selective recompute).
  [[nodiscard]] double attention_score_flops(double sequences, bool causal = false) const;
  /// (query, key) entries of one sequence's score matrix in layer `layer` (0-based): s^2, or
  /// with `causal` those the mask keeps, s (s + 1) / 2, and in a layer with a window w < s,
  /// s w - w (w - 1) / 2 (the first w queries see 1..w keys, the rest w each).
  [[nodiscard]] double attention_entries(int layer, bool causal) const;
  bool operator==(const ModelSpec&) const = default;
};

std::vector<std::string> model_presets();
/// A preset by name; throws core::Error naming `model.preset` with the valid names.
ModelSpec model_preset(const std::string& name);
/// Checks the shape; throws core::Error naming the model.* field.
void validate(const ModelSpec& model);

}  // namespace twin::workload
