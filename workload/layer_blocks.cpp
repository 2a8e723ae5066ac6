#include "workload/detail/layer_blocks.hpp"

#include <fmt/format.h>

#include <tuple>
#include <utility>

namespace twin::workload::detail {

/// Transformer Engine's userbuffers overlap (Megatron-Core's tp_comm_overlap with sequence
/// parallelism), as the NeMo and Megatron-Bridge H100 configurations set it up
/// (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py, every H100 model there):
/// - an all-gather before a GEMM is a ring exchange over copy engines: the GEMM runs in t chunks
///   of T / t rows, one per step, each on every SM (QKV and fc1 forward, proj and fc2
///   data-gradient);
/// - the reduce-scatter after the proj and fc2 forward GEMMs is a ring exchange too in FP8 (t
///   chunks, one SM kept: num_sm 1 with set_sm_margin), which ends with a kernel summing the t
///   partials that arrived (GemmSplit::reduce_partials); in BF16 it is pipelined over 4 chunks on
///   the SMs left after the communication kernels' (8-32 in those files; Transformer Engine's
///   default 16 here), each chunk's rows reduce-scattered once computed, so the last chunk's
///   share runs after the GEMM (GemmSplit::reduce_tail);
/// - the bulk overlaps of the QKV and fc1 backward (all-gather of the input beside the
///   data-gradient GEMM, reduce-scatter of its output beside the weight-gradient GEMM) split
///   nothing and keep no SM margin.
/// Without the overlap (or without sequence parallelism, where TP all-reduces stay exposed)
/// every GEMM is one launch on every SM. The aggregate option (two chunks per step) is not
/// modelled: no H100 configuration there sets it.
constexpr int kPipelinedSplits = 4;
constexpr double kPipelinedSms = 16;
constexpr double kRingSms = 1;

Shape shape_of(const ModelSpec& m, const ParallelismSpec& p, const TrainingSpec& t) {
  Shape x{};
  if (t.tp_comm_overlap && p.sequence_parallel && p.tp > 1) {
    x.column = {.forward_chunks = p.tp};
    if (t.precision == "fp8")
      x.row = {.forward_chunks = p.tp,
               .dgrad_chunks = p.tp,
               .forward_reserved = kRingSms,
               .reduce_partials = p.tp};
    else
      x.row = {.forward_chunks = kPipelinedSplits,
               .dgrad_chunks = p.tp,
               .forward_reserved = kPipelinedSms,
               .reduce_tail = 1.0 / kPipelinedSplits};
  }
  if (p.sequence_parallel && p.tp > 1) {
    x.column.input_rows = 1.0 / p.tp;
    x.row.grad_rows = 1.0 / p.tp;
  }
  x.b = p.micro_batch;
  x.s = m.seq_len;
  x.s_local = static_cast<double>(m.seq_len) / p.cp;
  x.T = x.b * x.s_local;
  x.tp = p.tp;
  x.Tsp = p.sequence_parallel ? x.T / x.tp : x.T;
  x.h = m.hidden;
  x.q = m.q_width();
  x.kv = m.kv_width();
  x.f = m.ffn_hidden;
  x.fe = m.expert_ffn_hidden;
  x.head_dim = m.qk_head_dim();
  x.v_dim = m.v_dim();
  x.local_heads = static_cast<double>(m.heads) / p.tp;
  x.up = m.mlp_matrices() - 1;
  x.gelu = m.mlp == "gelu";
  x.rope = !x.gelu;  // the presets' convention: SwiGLU models use rotary embeddings
  return x;
}

namespace {

/// Multi-head latent attention's projections (Megatron-Core's MLA layer): the down-projections to
/// the query and key/value latents are not split over TP (every rank computes them on the
/// all-gathered tokens), their norms, the column-parallel up-projections to a / t heads, and the
/// rotary part of queries and the shared rotary key. As Megatron-Core's MLA layer spec builds
/// them, the input norm is a norm of its own and the down-projections plain linears that cast
/// its output for FP8 each, while each latent norm is fused into its up-projection (a
/// LayerNormLinear, which under delayed scaling writes the FP8 input itself). Returns the
/// forward and data-gradient time of the GEMMs that take the all-gathered input (what a TP
/// all-gather hides behind).
std::pair<double, double> mla_projections(BlockBuilder& bb, const Shape& x, const ModelSpec& m,
                                          bool recompute_up) {
  const double a_local = x.local_heads, rq = m.q_lora_rank, rkv = m.kv_lora_rank;
  const double rope = m.qk_rope_head_dim;
  double first = 0, first_bwd = 0;
  if (rq > 0) {
    first += bb.gemm("q down (latent)", x.T, rq, x.h);
    first_bwd += bb.last_dgrad_s();
    bb.elementwise("q latent norm", x.T * rq, 2, 5, 3);
    bb.gemm("q up", x.T, a_local * x.head_dim, rq, 1, recompute_up, Producer::norm);
  } else {
    first += bb.gemm("q", x.T, a_local * x.head_dim, x.h);
    first_bwd += bb.last_dgrad_s();
  }
  first += bb.gemm("kv down (latent + rotary key)", x.T, rkv + rope, x.h);
  first_bwd += bb.last_dgrad_s();
  bb.elementwise("kv latent norm", x.T * rkv, 2, 5, 3);
  bb.gemm("kv up", x.T, a_local * (m.kv_channels() + x.v_dim), rkv, 1, recompute_up,
          Producer::norm);
  bb.elementwise("rotary", x.T * (a_local + 1) * rope, 2, 6, 2, recompute_up);
  return {first, first_bwd};
}

// `window` > 0: a sliding-window layer (each query sees its `window` latest keys).
void attention_block(BlockBuilder& bb, const Shape& x, const ModelSpec& m, const ParallelismSpec& p,
                     const TrainingSpec& t, int window) {
  const bool selective = p.recomputes("core_attn");
  bb.elementwise("input norm", x.Tsp * x.h, 2, 5, 3, p.recomputes("layernorm"));
  double qkv = 0, qkv_bwd = 0;
  if (m.mla()) {
    std::tie(qkv, qkv_bwd) = mla_projections(bb, x, m, p.recomputes("mla_up_proj"));
  } else {
    qkv = bb.gemm("qkv", x.T, (x.q + 2 * x.kv) / x.tp, x.h, 1, false, Producer::norm, false,
                  x.column);
    qkv_bwd = bb.last_dgrad_s();
    // Per-head RMSNorm of the queries and keys (a norm's passes over T (q + kv) / t elements).
    if (m.qk_norm) bb.elementwise("q/k norm", x.T * (x.q + x.kv) / x.tp, 2, 5, 3);
    if (x.rope) bb.elementwise("rotary", x.T * (x.q + x.kv) / x.tp, 2, 6, 2);
  }
  const double bh = x.b * x.local_heads;
  // Every kernel the attention core adds below, forward, backward and recomputed, is marked as
  // such; its forward and backward time is what context parallelism's K/V exchange hides behind.
  const auto before_f = bb.block.forward.size(), before_b = bb.block.backward.size(),
             before_r = bb.block.recompute.size();
  if (t.attention != "unfused") {
    // Ring attention computes this rank's s/cp queries against all s keys, load-balanced so the
    // causal half is skipped evenly: 1/cp of the full causal work.
    // A sliding window computes only its band (context parallelism is refused with a window).
    Kernel f = bb.c_.flash_attention("flash attention fwd", true, bh, x.s_local, x.s, x.head_dim,
                                     true, x.s_local, x.v_dim, window);
    Kernel b = bb.c_.flash_attention("flash attention bwd", false, bh, x.s_local, x.s, x.head_dim,
                                     true, x.s_local, x.v_dim, window);
    if (selective) bb.block.recompute.push_back(f);
    bb.block.forward.push_back(std::move(f));
    // The measured backward rate times the whole backward call, which includes its dO.O
    // preprocessing kernel and the dQ conversion: neither is a kernel of its own here.
    bb.block.backward.push_back(std::move(b));
  } else {
    // Unfused attention materializes the whole s x s score tensor and masks it, a sliding
    // window's band included (Megatron's and PyTorch's unfused paths): the window saves nothing.
    const double scores = bh * x.s_local * x.s;  // elements of the s x s score tensor
    bb.weightless_gemm("attention QK^T", x.s_local, x.s, x.head_dim, bh, selective);
    // Fused: scale-mask-softmax (4 B) + dropout (5 B); unfused: scale, mask, softmax (4 B each)
    // and dropout (5 B). Backward 11 B fused, 19 B unfused.
    if (bb.fused_) {
      bb.memory("scale-mask-softmax", scores * 4, scores * 6, 1, selective);
      bb.memory("attention dropout", scores * 5, scores * 5, 1, selective);
    } else {
      bb.memory("scale, mask, softmax", scores * 12, scores * 14, 3, selective);
      bb.memory("attention dropout", scores * 5, scores * 5, 1, selective);
    }
    bb.weightless_gemm("attention AV", x.s_local, x.v_dim, x.s, bh, selective);
  }
  auto core = [](std::vector<Kernel>& kernels, std::size_t from) {
    double seconds = 0;
    for (auto i = from; i < kernels.size(); ++i) {
      kernels[i].attention = true;
      seconds += kernels[i].time_s;
    }
    return seconds;
  };
  bb.block.attention_forward_s += core(bb.block.forward, before_f);
  bb.block.attention_backward_s += core(bb.block.backward, before_b);
  core(bb.block.recompute, before_r);
  const double proj = bb.gemm("attention proj", x.T, x.h, x.local_heads * x.v_dim, 1, false,
                              Producer::none, false, x.row);
  bb.residual_add(x.Tsp * x.h);
  bb.block.tp_overlap_forward = {{qkv, x.column.reduce_tail}, {proj, x.row.reduce_tail}};
  bb.block.tp_overlap_backward = {{qkv_bwd}, {bb.last_dgrad_s()}};
}

void dense_mlp(BlockBuilder& bb, const Shape& x, const ParallelismSpec& p) {
  bb.elementwise("mlp norm", x.Tsp * x.h, 2, 5, 3, p.recomputes("layernorm"));
  const bool again = p.recomputes("mlp");
  const double fc1 =
      bb.gemm("fc1", x.T, x.up * x.f / x.tp, x.h, 1, again, Producer::norm, false, x.column);
  const double fc1_bwd = bb.last_dgrad_s();
  if (x.gelu)
    bb.elementwise("bias-gelu", x.T * x.f / x.tp, 2, 4, 2, again);
  else
    bb.elementwise("swiglu", x.T * x.f / x.tp, 3, 5, 2, again);
  const double fc2 = bb.gemm("fc2", x.T, x.h, x.f / x.tp, 1, again, Producer::none, false, x.row);
  bb.residual_add(x.Tsp * x.h);
  auto& forward = bb.block.tp_overlap_forward;
  forward.insert(forward.end(), {{fc1, x.column.reduce_tail}, {fc2, x.row.reduce_tail}});
  auto& backward = bb.block.tp_overlap_backward;
  backward.insert(backward.end(), {{fc1_bwd}, {bb.last_dgrad_s()}});
}

void moe_mlp(BlockBuilder& bb, const Shape& x, const ModelSpec& m, const Layout& layout,
             const ParallelismSpec& p, bool flex) {
  bb.elementwise("mlp norm", x.Tsp * x.h, 2, 5, 3, p.recomputes("layernorm"));
  bb.gemm("router", x.T, m.experts, x.h, 1, false, Producer::none, true);
  bb.memory("router softmax + top-k", x.T * m.experts * 4.0 * 2, x.T * m.experts * 4.0 * 2, 1);
  const double routed = x.T * m.top_k;
  // A permutation of `tokens` hidden states: one read and one write of 2 bytes an element,
  // its backward the same for the gradients.
  auto permutation = [&](const char* name, double tokens) {
    const double bytes = 2.0 * tokens * x.h * 2.0;
    bb.memory(name, bytes, bytes, 1);
  };
  // The all-to-all dispatcher lays out one copy of each token per chosen expert before sending;
  // DeepEP and HybridEP (flex) send the tokens as they are.
  if (!flex) permutation("token permute", routed);
  // Each rank dispatches its T / tp sequence-parallel tokens over the EP group; an expert-TP
  // group of etp ranks shares (all-gathers) its tokens: T k etp / tp routed tokens reach this
  // rank's E / ep experts, each split over etp (with etp = tp: T k tokens, f_e / tp).
  const int experts = m.experts / layout.ep;
  const double local = experts;
  const double etp = layout.etp;
  const double arriving = routed * etp / x.tp * m.capacity_factor;
  const double per_expert = arriving / local;
  // The tokens arrive grouped by the rank that sent them; with more than one expert on this rank
  // Megatron-Core's all-to-all dispatcher copies them into expert order before the grouped GEMMs
  // and back after ("permutation 2", sort_chunks_by_idxs; fused or not, one read and one write).
  // The flex dispatcher permutes what arrives into expert order instead (one copy per expert;
  // the bytes are taken as the arriving copies', an upper bound on what it reads).
  const bool sorts = local > 1 || flex;
  if (sorts) permutation(flex ? "permute by local expert" : "sort by local expert", arriving);
  bb.grouped_gemm("expert fc1 (grouped)", per_expert, x.up * x.fe / etp, x.h, experts);
  const bool act = p.recomputes("moe_act");
  if (x.gelu)
    bb.elementwise("expert bias-gelu", arriving * x.fe / etp, 2, 4, 2, act);
  else
    bb.elementwise("expert swiglu", arriving * x.fe / etp, 3, 5, 2, act);
  bb.grouped_gemm("expert fc2 (grouped)", per_expert, x.h, x.fe / etp, experts);
  if (sorts) permutation(flex ? "unpermute by local expert" : "unsort by local expert", arriving);
  if (!flex) permutation("token unpermute", routed);
  if (m.shared_experts > 0) {
    const bool shared = p.recomputes("shared_experts");
    bb.gemm("shared expert fc1", x.T, x.up * x.fe * m.shared_experts / x.tp, x.h, 1, shared);
    bb.elementwise("shared expert activation", x.T * x.fe * m.shared_experts / x.tp, 3, 5, 2,
                   shared);
    bb.gemm("shared expert fc2", x.T, x.h, x.fe * m.shared_experts / x.tp, 1, shared);
  }
  bb.residual_add(x.Tsp * x.h);
}

}  // namespace

LayerParams transformer_layer(BlockBuilder& bb, const Shape& x, const ModelSpec& model,
                              const Layout& layout, const ParallelismSpec& p, const TrainingSpec& t,
                              bool moe, int window) {
  attention_block(bb, x, model, p, t, window);
  LayerParams params;
  if (!moe) {
    dense_mlp(bb, x, p);
    params.shared = (model.attention_params() + model.dense_mlp_params()) / x.tp;
  } else {
    moe_mlp(bb, x, model, layout, p, t.moe_dispatcher == "flex");
    const double local = static_cast<double>(model.experts) / layout.ep;
    params.experts = local * model.expert_params() / layout.etp;
    params.shared = (model.attention_params() + model.shared_experts * model.expert_params() +
                     x.h * model.experts) /
                    x.tp;
    bb.block.ep_alltoalls = layout.ep > 1 ? 2 : 0;
  }
  bb.block.tp_collectives = p.tp > 1 ? 2 : 0;
  bb.block.cp_exchanges = p.cp > 1 ? p.cp - 1 : 0;
  // Parameter tensors: the QKV and output projections, fc1 and fc2 (or the router and each
  // local and shared expert's two), two norms; biases are left out of the count (their bytes
  // are in the parameters).
  const int local_experts = moe ? model.experts / layout.ep : 0;
  const int tensors = moe ? 5 + 2 * (local_experts + model.shared_experts) : 6;
  bb.accumulate_grads(t.grad_accumulation, params.shared + params.experts, tensors);
  return params;
}

void output_layer(BlockBuilder& bb, const Shape& x, const ModelSpec& model, const TrainingSpec& t) {
  bb.elementwise("final norm", x.Tsp * x.h, 2, 5, 3);
  bb.gemm("logits", x.T, model.vocab / x.tp, x.h, 1, false, Producer::none, true);
  const double logits = x.T * model.vocab / x.tp;
  if (t.fused_cross_entropy())
    bb.memory("fused cross-entropy", logits * 6, logits * 4, 1);
  else
    bb.memory("cross-entropy (fp32)", logits * 38, logits * 26, 6);
}

LayerParams mtp_module(BlockBuilder& bb, const Shape& x, const ModelSpec& model,
                       const Layout& layout, const ParallelismSpec& p, const TrainingSpec& t) {
  bb.memory("MTP embedding lookup", 4.0 * x.T * x.h, 10.0 * x.T * x.h, 1);
  bb.elementwise("MTP hidden norm", x.Tsp * x.h, 2, 5, 3);
  bb.elementwise("MTP embedding norm", x.Tsp * x.h, 2, 5, 3);
  bb.gemm("MTP projection", x.T, x.h / x.tp, 2 * x.h);
  const int last = model.layers - 1;
  LayerParams params = transformer_layer(bb, x, model, layout, p, t, model.moe_layer(last),
                                         model.windowed(last) ? model.sliding_window : 0);
  output_layer(bb, x, model, t);
  params.shared += 2.0 * x.h * x.h / x.tp;
  return params;
}

}  // namespace twin::workload::detail
