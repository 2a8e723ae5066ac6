#include "workload/step_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

namespace twin::workload {
namespace {

/// How Transformer Engine splits a layer's GEMM: its communication-overlapped GEMMs
/// (userbuffers, Megatron-Core's tp_comm_overlap with sequence parallelism) run in chunks along
/// M on the SMs the communication kernels leave, per pass, and in FP8 its inputs are quantized
/// in parts. Default: one launch on every SM, one tensor quantized whole.
struct GemmSplit {
  int forward_chunks = 1, dgrad_chunks = 1;
  double forward_reserved = 0, dgrad_reserved = 0, wgrad_reserved = 0;
  /// The share of the GEMM's rows whose FP8 input and output gradient this rank quantizes:
  /// with sequence parallelism a column-parallel GEMM's input and a row-parallel GEMM's output
  /// gradient are quantized on this rank's 1 / tp of the tokens and all-gathered in FP8.
  double input_rows = 1, grad_rows = 1;
  /// Tensors with their own FP8 scale (a grouped GEMM's experts), each quantized on its own.
  int tensors = 1;
};

/// What writes a GEMM's input: a fused norm, which emits the FP8 copy itself under delayed
/// scaling (Transformer Engine's LayerNormLinear), or a kernel that writes 16 bits (attention,
/// Megatron-Core's and PyTorch's activations, which run outside Transformer Engine's Linear).
enum class Producer { none, norm };

/// Builds one block's kernels; the bytes and pass counts are the header's.
class BlockBuilder {
 public:
  /// `autocast`: the weights are fp32 (FSDP gathers them unsharded in fp32, mixed precision's
  /// param_dtype unset) and torch.autocast casts each one to 16 bits where a GEMM uses it.
  /// `current_scaling`: FP8 tensors are scaled from their own amax (training.fp8_recipe
  /// tensorwise).
  BlockBuilder(const KernelCoster& coster, bool fused, bool autocast = false,
               bool current_scaling = false)
      : c_(coster), fused_(fused), autocast_(autocast), current_scaling_(current_scaling) {}

  BlockProgram block;

  /// A forward GEMM (m, n, k) and its backward data- and weight-gradient GEMMs; returns the
  /// forward time (last_dgrad_s() the data-gradient GEMM's). In FP8 (Transformer Engine's
  /// recipe) the input is quantized with a transposed copy for the weight gradient (quantize())
  /// unless the fused norm that wrote it emitted it (`input`, delayed scaling), and
  /// backward quantizes the output gradient the same way. Weights are cast once per step
  /// (cached across micro-batches), which is left out. Under autocast with fp32 weights
  /// (`autocast_`), each use casts the n x k weights to 16 bits (read 4, write 2 bytes each; the
  /// recomputed forward casts again) and backward casts their gradient back to fp32 (read 2,
  /// write 4); both are plain conversions, costed at the STREAM rate.
  double gemm(const std::string& name, double m, double n, double k, double batch = 1,
              bool recompute = false, Producer input = Producer::none, bool bf16 = false,
              const GemmSplit& split = {}) {
    if (autocast_) {
      Kernel cast = c_.stream(name + " weight cast (autocast)", 6.0 * n * k * batch);
      if (recompute) block.recompute.push_back(cast);
      block.forward.push_back(std::move(cast));
      block.backward.push_back(c_.stream(name + " weight grad cast", 6.0 * n * k * batch));
    }
    return weightless_gemm(name, m, n, k, batch, recompute, input, bf16, split);
  }
  /// A grouped GEMM of `experts` (m x k) x (k x n) products, one per local expert (Transformer
  /// Engine's GroupedLinear): in FP8 each expert's input and output gradient is a tensor with
  /// its own scale.
  double grouped_gemm(const std::string& name, double m, double n, double k, int experts) {
    return gemm(name, m, n, k, experts, false, Producer::none, false, {.tensors = experts});
  }
  /// A GEMM of two activations (the attention scores and their product with the values): as
  /// gemm() without weights to cast.
  double weightless_gemm(const std::string& name, double m, double n, double k, double batch = 1,
                         bool recompute = false, Producer input = Producer::none, bool bf16 = false,
                         const GemmSplit& split = {}) {
    const bool fp8 = c_.fp8() && !bf16;
    if (fp8 && !(input == Producer::norm && fused_ && !current_scaling_))
      for (Kernel& q : quantize(name + " input", m * split.input_rows * k * batch, split.tensors)) {
        if (recompute) block.recompute.push_back(q);
        block.forward.push_back(std::move(q));
      }
    if (fp8)
      for (Kernel& q : quantize(name + " grad", m * split.grad_rows * n * batch, split.tensors))
        block.backward.push_back(std::move(q));
    auto launch = [&](const std::string& label, double gm, double gn, double gk, int chunks,
                      double reserved) {
      return batch == 1 ? c_.split_gemm(label, gm, gn, gk, chunks, reserved, bf16)
                        : c_.gemm(label, gm, gn, gk, batch, bf16);
    };
    Kernel f = launch(name, m, n, k, split.forward_chunks, split.forward_reserved);
    const double fwd = f.time_s;
    if (recompute) block.recompute.push_back(f);
    block.forward.push_back(std::move(f));
    Kernel d = launch(name + " dgrad", m, k, n, split.dgrad_chunks, split.dgrad_reserved);
    Kernel w = launch(name + " wgrad", n, k, m, 1, split.wgrad_reserved);
    last_dgrad_s_ = d.time_s;
    block.backward.push_back(std::move(d));
    block.backward.push_back(std::move(w));
    return fwd;
  }
  /// Quantizes `elements` 16-bit values to FP8 with a transposed copy for the other GEMM that
  /// reads them (read 2, write 1 + 1 bytes an element), as `tensors` tensors of equal size.
  /// Delayed scaling: one cast-transpose kernel (one multi-tensor kernel for a group), the scale
  /// known from earlier steps. Current scaling (Transformer Engine's Float8CurrentScaling), per
  /// tensor: an amax pass over the input (read 2 bytes an element), a one-thread kernel turning
  /// it into the scale, then the cast-transpose. Transformer Engine runs a norm unfused and
  /// quantizes its output this way, and its multi-tensor cast is for delayed scaling only, so
  /// each expert's tensor pays the chain's start-ups.
  std::vector<Kernel> quantize(const std::string& name, double elements, int tensors) const {
    if (!current_scaling_) return {c_.memory(name + " fp8 cast-transpose", 4.0 * elements)};
    return {c_.memory(name + " amax", 2.0 * elements, tensors),
            c_.memory(name + " fp8 scale", 0.0, tensors),
            c_.memory(name + " fp8 cast-transpose", 4.0 * elements, tensors)};
  }
  [[nodiscard]] double last_dgrad_s() const { return last_dgrad_s_; }

  /// An element-wise step over `elements` 2-byte values: `fused_passes` bytes per element in
  /// one kernel when fused, else `unfused_passes` over `unfused_kernels` kernels. Backward moves
  /// twice the bytes in as many kernels.
  void elementwise(const std::string& name, double elements, double fused_passes,
                   double unfused_passes, int unfused_kernels, bool recompute = false) {
    const int kernels = fused_ ? 1 : unfused_kernels;
    const double bytes = elements * 2.0 * (fused_ ? fused_passes : unfused_passes);
    for (int i = 0; i < kernels; ++i) {
      const std::string label =
          kernels == 1 ? name : fmt::format("{} ({}/{})", name, i + 1, kernels);
      Kernel f = c_.memory(label, bytes / kernels);
      if (recompute) block.recompute.push_back(f);
      block.forward.push_back(std::move(f));
      block.backward.push_back(c_.memory(label + " bwd", 2.0 * bytes / kernels));
    }
  }

  /// The residual add closing a sub-layer (no dropout: nothing is kept for backward).
  void residual_add(double elements) {
    const std::size_t first = block.forward.size();
    elementwise("residual add", elements, 3, 5, 2);
    for (std::size_t i = first; i < block.forward.size(); ++i)
      block.forward[i].saves = Kernel::Saves::nothing;
  }

  /// Explicit forward and backward kernels over raw byte counts.
  void memory(const std::string& name, double fwd_bytes, double bwd_bytes, int kernels,
              bool recompute = false) {
    for (int i = 0; i < kernels; ++i) {
      const std::string label =
          kernels == 1 ? name : fmt::format("{} ({}/{})", name, i + 1, kernels);
      if (fwd_bytes > 0) {
        Kernel f = c_.memory(label, fwd_bytes / kernels);
        if (recompute) block.recompute.push_back(f);
        block.forward.push_back(std::move(f));
      }
      if (bwd_bytes > 0) block.backward.push_back(c_.memory(label + " bwd", bwd_bytes / kernels));
    }
  }

  const KernelCoster& c_;
  bool fused_;
  bool autocast_;
  bool current_scaling_;

 private:
  double last_dgrad_s_ = 0;
};

double sum_time(const std::vector<Kernel>& ks, bool tensor_only = false) {
  double s = 0;
  for (const auto& k : ks)
    if (!tensor_only || k.tensor_core) s += k.time_s;
  return s;
}

double sum_flops(const std::vector<Kernel>& ks) {
  double f = 0;
  for (const auto& k : ks) f += k.flops;
  return f;
}

struct Shape {
  double T, Tsp, h, q, kv, f, fe, tp, s_local, s, head_dim, local_heads, b;
  double v_dim;  // width of a value head (MLA: narrower than query/key heads)
  // The column-parallel (QKV, fc1) and row-parallel (proj, fc2) GEMMs' launches.
  GemmSplit column, row;
  double up;  // MLP input matrices fused in fc1: 2 (SwiGLU gate + up) or 1 (GeLU)
  bool rope, gelu;
};

/// Transformer Engine's userbuffers overlap (Megatron-Core's tp_comm_overlap with sequence
/// parallelism), as the NeMo and Megatron-Bridge H100 configurations set it up
/// (nemo/collections/llm/recipes/tp_overlap_configs/userbuffers.py, every H100 model there):
/// - an all-gather before a GEMM is a ring exchange over copy engines: the GEMM runs in t chunks
///   of T / t rows, one per step, each on every SM (QKV and fc1 forward, proj and fc2
///   data-gradient);
/// - the reduce-scatter after the proj and fc2 forward GEMMs is a ring exchange too in FP8 (t
///   chunks, one SM kept: num_sm 1 with set_sm_margin); in BF16 it is pipelined over 4 chunks on
///   the SMs left after the communication kernels' (8-32 in those files; Transformer Engine's
///   default 16 here);
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
      x.row = {.forward_chunks = p.tp, .dgrad_chunks = p.tp, .forward_reserved = kRingSms};
    else
      x.row = {.forward_chunks = kPipelinedSplits,
               .dgrad_chunks = p.tp,
               .forward_reserved = kPipelinedSms};
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
  double attn_f = 0, attn_b = 0;
  if (t.attention != "unfused") {
    // Ring attention computes this rank's s/cp queries against all s keys, load-balanced so the
    // causal half is skipped evenly: 1/cp of the full causal work.
    // A sliding window computes only its band (context parallelism is refused with a window).
    Kernel f = bb.c_.flash_attention("flash attention fwd", true, bh, x.s_local, x.s, x.head_dim,
                                     true, x.s_local, x.v_dim, window);
    Kernel b = bb.c_.flash_attention("flash attention bwd", false, bh, x.s_local, x.s, x.head_dim,
                                     true, x.s_local, x.v_dim, window);
    attn_f = f.time_s;
    attn_b = b.time_s;
    if (selective) bb.block.recompute.push_back(f);
    bb.block.forward.push_back(std::move(f));
    // The measured backward rate times the whole backward call, which includes its dO.O
    // preprocessing kernel and the dQ conversion: neither is a kernel of its own here.
    bb.block.backward.push_back(std::move(b));
  } else {
    // Unfused attention materializes the whole s x s score tensor and masks it, a sliding
    // window's band included (Megatron's and PyTorch's unfused paths): the window saves nothing.
    const double scores = bh * x.s_local * x.s;  // elements of the s x s score tensor
    const auto before_f = bb.block.forward.size(), before_b = bb.block.backward.size();
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
    for (auto i = before_f; i < bb.block.forward.size(); ++i) attn_f += bb.block.forward[i].time_s;
    for (auto i = before_b; i < bb.block.backward.size(); ++i)
      attn_b += bb.block.backward[i].time_s;
  }
  bb.block.attention_forward_s += attn_f;
  bb.block.attention_backward_s += attn_b;
  const double proj = bb.gemm("attention proj", x.T, x.h, x.local_heads * x.v_dim, 1, false,
                              Producer::none, false, x.row);
  bb.residual_add(x.Tsp * x.h);
  bb.block.tp_overlap_forward_s = {qkv, proj};
  bb.block.tp_overlap_backward_s = {qkv_bwd, bb.last_dgrad_s()};
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
  bb.block.tp_overlap_forward_s.insert(bb.block.tp_overlap_forward_s.end(), {fc1, fc2});
  bb.block.tp_overlap_backward_s.insert(bb.block.tp_overlap_backward_s.end(),
                                        {fc1_bwd, bb.last_dgrad_s()});
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

/// A layer's parameters on this GPU: those split over TP and those of its local experts.
struct LayerParams {
  double shared = 0, experts = 0;
};

/// One transformer layer's kernels and collectives (dense or MoE MLP; `window` > 0: sliding-
/// window attention).
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
  return params;
}

/// The final norm, the logits GEMM over the vocabulary (in BF16 under Transformer Engine's FP8
/// recipe) and the cross-entropy.
void output_layer(BlockBuilder& bb, const Shape& x, const ModelSpec& model, const TrainingSpec& t) {
  bb.elementwise("final norm", x.Tsp * x.h, 2, 5, 3);
  bb.gemm("logits", x.T, model.vocab / x.tp, x.h, 1, false, Producer::none, true);
  const double logits = x.T * model.vocab / x.tp;
  if (t.fused_cross_entropy())
    bb.memory("fused cross-entropy", logits * 6, logits * 4, 1);
  else
    bb.memory("cross-entropy (fp32)", logits * 38, logits * 26, 6);
}

/// One multi-token-prediction module (DeepSeek-V3, Megatron-Core's MultiTokenPredictionLayer),
/// on the last pipeline stage after the main loss: the tokens shifted by one more position are
/// embedded (the shared embedding), the main model's last hidden states and those embeddings
/// are normed and concatenated, projected back to h (a column-parallel (T, h / t, 2 h) GEMM on
/// the concatenation, which no norm writes), run through one transformer layer like the
/// model's last, and scored by the shared output layer with their own loss. Its layer is not
/// recomputed, whatever parallelism.recompute says, and its activations are not in the memory
/// model (which reports stage 0).
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

/// The recomputed forward of a layer whose recompute stops early: PyTorch's non-reentrant
/// checkpoint stops as soon as every tensor the layer's backward needs exists again. The
/// trailing kernels that keep nothing (the residual add) are not rerun, nor is a GEMM that ends
/// what is left if it keeps only its operands, saved before it runs (the MLP's output projection
/// in 16 bits; an FP8 GEMM saves after it has run and is rerun).
std::vector<Kernel> early_stopped(std::vector<Kernel> forward) {
  while (!forward.empty() && forward.back().saves == Kernel::Saves::nothing) forward.pop_back();
  if (!forward.empty() && forward.back().saves == Kernel::Saves::inputs) forward.pop_back();
  return forward;
}

/// Adds a layer block to the chunk. Full recompute reruns a layer's forward in its backward
/// (up to its last saved tensor with `early_stop`): the first `again` of the block's layers (all
/// of them without recompute_layers) go in a block of their own that does; the rest keep their
/// activations.
void add_layer_block(ChunkProgram& c, BlockProgram b, int again, bool early_stop) {
  if (again <= 0) {
    c.blocks.push_back(std::move(b));
    return;
  }
  BlockProgram rerun = b;
  rerun.recompute = early_stop ? early_stopped(rerun.forward) : rerun.forward;
  rerun.reruns_forward = true;
  rerun.count = again;
  if (again >= b.count) {
    c.blocks.push_back(std::move(rerun));
    return;
  }
  rerun.label += " (recomputed)";
  b.count -= again;
  c.blocks.push_back(std::move(rerun));
  c.blocks.push_back(std::move(b));
}

}  // namespace

ChunkProgram chunk_program(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                           const Layout& layout, const KernelCoster& coster, int stage, int chunk) {
  const Shape x = shape_of(model, p, t);
  ChunkProgram c;
  c.stage = stage;
  c.chunk = chunk;
  c.first_layer = layout.first_layer(stage, chunk);
  c.layers = layout.layers(stage, chunk);
  const bool fused = t.fused_kernels;
  // fp32 weights under autocast: FSDP's fp32 gather (Transformer Engine's FP8 casts its own).
  const bool autocast = t.param_gather_dtype == "fp32" && !coster.fp8();

  if (stage == 0 && chunk == 0) {
    BlockBuilder bb(coster, fused, autocast, t.current_scaling());
    bb.block.label = "embedding";
    bb.block.count = 1;
    bb.memory("embedding lookup", 4.0 * x.T * x.h, 10.0 * x.T * x.h, 1);
    c.blocks.push_back(std::move(bb.block));
    c.params += static_cast<double>(model.vocab) * x.h / x.tp;
  }
  // Layers of each kind (dense or MoE, full or sliding-window attention), and how many of them
  // are among the chunk's recomputed first layers.
  const int recomputed = p.recomputed_layers(c.layers);
  int count_of[2][2] = {}, again_of[2][2] = {};
  for (int l = c.first_layer; l < c.first_layer + c.layers; ++l) {
    const int is_moe = model.moe_layer(l) ? 1 : 0;
    const int windowed = model.windowed(l) ? 1 : 0;
    ++count_of[is_moe][windowed];
    if (l < c.first_layer + recomputed) ++again_of[is_moe][windowed];
  }
  for (int block = 0; block < 4; ++block) {
    const int kind = block / 2, windowed = block % 2;
    const int count = count_of[kind][windowed];
    if (count == 0) continue;
    BlockBuilder bb(coster, fused, autocast, t.current_scaling());
    bb.block.label = kind == 0 ? "dense layer" : "MoE layer";
    if (windowed) bb.block.label += fmt::format(" (sliding window {})", model.sliding_window);
    bb.block.count = count;
    const LayerParams params = transformer_layer(bb, x, model, layout, p, t, kind == 1,
                                                 windowed ? model.sliding_window : 0);
    c.params += count * (params.shared + params.experts);
    c.expert_params += count * params.experts;
    add_layer_block(c, std::move(bb.block), again_of[kind][windowed], t.recompute_early_stop);
  }
  if (stage == layout.pp - 1 && chunk == layout.v - 1) {
    BlockBuilder bb(coster, fused, autocast, t.current_scaling());
    bb.block.label = "output layer + loss";
    bb.block.count = 1;
    output_layer(bb, x, model, t);
    c.blocks.push_back(std::move(bb.block));
    c.params += static_cast<double>(model.vocab) * x.h / x.tp;
    if (model.mtp_layers > 0) {
      BlockBuilder mtp(coster, fused, autocast, t.current_scaling());
      mtp.block.label = "MTP module";
      mtp.block.count = model.mtp_layers;
      const LayerParams params = mtp_module(mtp, x, model, layout, p, t);
      c.params += model.mtp_layers * (params.shared + params.experts);
      c.expert_params += model.mtp_layers * params.experts;
      c.blocks.push_back(std::move(mtp.block));
    }
  }

  for (const auto& b : c.blocks) {
    const double n = b.count;
    c.forward_s += n * sum_time(b.forward);
    c.backward_s += n * (sum_time(b.backward) + sum_time(b.recompute));
    c.forward_tensor_s += n * sum_time(b.forward, true);
    c.backward_tensor_s += n * (sum_time(b.backward, true) + sum_time(b.recompute, true));
    c.attention_forward_s += n * b.attention_forward_s;
    c.attention_backward_s += n * b.attention_backward_s;
    c.forward_flops += n * sum_flops(b.forward);
    c.recompute_flops += n * sum_flops(b.recompute);
    c.tp_collectives += b.count * b.tp_collectives;
    c.ep_alltoalls += b.count * b.ep_alltoalls;
    c.cp_exchanges += b.count * b.cp_exchanges;
    c.kernels_per_microbatch +=
        b.count * static_cast<int>(b.forward.size() + b.backward.size() + b.recompute.size());
    if (b.ep_alltoalls > 0) {
      auto expert_s = [](const std::vector<Kernel>& ks) {
        double sum = 0;
        for (const auto& k : ks)
          if (k.name.starts_with("expert ")) sum += k.time_s;
        return sum;
      };
      // Per MoE layer: with recompute_layers the recomputed and the kept MoE layers are two
      // blocks, and their times are averaged over the layers.
      const double expert_f = expert_s(b.forward);
      const double expert_b = expert_s(b.backward) + expert_s(b.recompute);
      const std::array<double, 4> per_layer = {
          expert_f, sum_time(b.forward) - expert_f, expert_b,
          sum_time(b.backward) + sum_time(b.recompute) - expert_b};
      const std::array<double*, 4> fields = {&c.moe_expert_forward_s, &c.moe_other_forward_s,
                                             &c.moe_expert_backward_s, &c.moe_other_backward_s};
      const double seen = c.moe_layers;
      c.moe_layers += b.count;
      for (std::size_t i = 0; i < fields.size(); ++i)
        *fields[i] =
            seen == 0 ? per_layer[i] : (seen * *fields[i] + n * per_layer[i]) / c.moe_layers;
    }
    // Full recompute reruns each layer's forward, TP all-reduces (all-gathers, reduce-scatters)
    // included (Megatron's checkpointed forward); selective recompute only reruns the attention
    // core, which has none.
    if (b.reruns_forward) c.recompute_tp_collectives += b.count * b.tp_collectives;
  }
  c.tp_bytes = x.T * x.h * 2.0;
  c.ep_bytes = model.moe() ? x.T / x.tp * model.top_k * model.capacity_factor * x.h * 2.0 : 0.0;
  c.cp_bytes = 2.0 * x.T * x.kv / x.tp * 2.0;
  // With sequence parallelism the activation is already split over the TP ranks; without it,
  // scatter-gather sends each rank's 1/tp share (the next stage all-gathers it over NVLink).
  const bool scatter_gather = x.tp > 1 && !p.sequence_parallel && t.pp_scatter_gather;
  c.p2p_bytes = x.T * x.h * 2.0 / (p.sequence_parallel || scatter_gather ? x.tp : 1.0);
  if (c.tp_collectives > 0) {
    if (p.sequence_parallel) {
      c.collectives.push_back({"tp", "all_gather", c.tp_bytes, c.tp_collectives});
      c.collectives.push_back({"tp", "reduce_scatter", c.tp_bytes, c.tp_collectives});
    } else {
      c.collectives.push_back({"tp", "all_reduce", c.tp_bytes, c.tp_collectives});
    }
  }
  if (c.ep_alltoalls > 0) c.collectives.push_back({"ep", "alltoall", c.ep_bytes, c.ep_alltoalls});
  if (c.cp_exchanges > 0) c.collectives.push_back({"cp", "sendrecv", c.cp_bytes, c.cp_exchanges});
  if (layout.pp > 1) {
    c.collectives.push_back({"pp", "sendrecv", c.p2p_bytes, 1});
    if (scatter_gather) c.collectives.push_back({"pp", "all_gather", c.tp_bytes, 1});
  }
  return c;
}

OptimizerProgram optimizer_program(double local_params, double grad_params,
                                   const KernelCoster& coster, bool loss_scaling) {
  OptimizerProgram o;
  o.local_params = local_params;
  // Dynamic loss scaling (Megatron's _unscale_main_grads_and_check_for_nan, PyTorch's
  // GradScaler): one fused pass reads and rewrites each fp32 gradient. The found-inf flag's
  // all-reduce is a few bytes and is not costed.
  if (loss_scaling)
    o.kernels.push_back(coster.memory("unscale + inf/NaN check (loss scaling)", 8.0 * grad_params));
  o.kernels.push_back(coster.memory("grad norm (clipping)", 4.0 * grad_params));
  o.kernels.push_back(coster.memory("grad scale (clipping)", 8.0 * grad_params));
  o.kernels.push_back(coster.memory("adam (fp32 master, m, v)", 30.0 * local_params));
  o.seconds = sum_time(o.kernels);
  return o;
}

TpOverlap tp_overlap(const ChunkProgram& chunk, bool forward, double collective_s,
                     bool recomputed_only) {
  TpOverlap o;
  for (const auto& b : chunk.blocks) {
    if (b.tp_collectives == 0 || (recomputed_only && !b.reruns_forward)) continue;
    const auto& gemms = forward ? b.tp_overlap_forward_s : b.tp_overlap_backward_s;
    for (double g : gemms) {
      o.exposed_s += b.count * std::max(0.0, collective_s - g);
      o.overlapped_s += b.count * std::min(collective_s, g);
    }
    // Collectives with no GEMM beside them (an MoE layer's MLP pair: its expert GEMMs sit
    // between all-to-alls) stay exposed. A slot is an all-gather + reduce-scatter pair.
    const double unpaired = 2.0 * b.tp_collectives - static_cast<double>(gemms.size());
    o.exposed_s += b.count * std::max(0.0, unpaired) * collective_s;
  }
  return o;
}

double combined_1f1b_exposed(const ChunkProgram& f, const ChunkProgram& b, double scale,
                             double alltoall_s) {
  const int paired = std::min(f.moe_layers, b.moe_layers);
  const double a = alltoall_s;
  auto beyond = [a](double compute_s) { return std::max(0.0, a - compute_s); };
  const double per_pair =
      beyond(f.moe_other_forward_s * scale) + beyond(b.moe_expert_backward_s * scale) +
      beyond(f.moe_expert_forward_s * scale) + beyond(b.moe_other_backward_s * scale);
  const int unpaired = f.moe_layers + b.moe_layers - 2 * paired;
  return paired * per_pair + unpaired * 2.0 * a;
}

StepProgram step_program(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                         const Layout& layout, const KernelCoster& coster) {
  StepProgram prog;
  prog.chunks.resize(static_cast<std::size_t>(layout.pp));
  for (int s = 0; s < layout.pp; ++s) {
    double params = 0;
    for (int c = 0; c < layout.v; ++c) {
      prog.chunks[static_cast<std::size_t>(s)].push_back(
          chunk_program(model, p, t, layout, coster, s, c));
      params += prog.chunks[static_cast<std::size_t>(s)].back().params;
    }
    const double sharded = params / (p.zero >= 1 ? layout.shard_group : 1);
    // Megatron's distributed optimizer clips the gradient shard it owns.
    const double grads = params / (p.zero >= 1 ? layout.shard_group : 1);
    prog.optimizer.push_back(optimizer_program(sharded, grads, coster, t.precision == "fp16"));
  }
  return prog;
}

StageWeights stage_weights(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                           const Layout& layout, const KernelCoster& coster) {
  // A one-stage, one-chunk program of the whole model gives every block's time.
  Layout one = layout;
  one.pp = 1;
  one.v = 1;
  one.chunk_layers = {model.layers};
  const ChunkProgram c = chunk_program(model, p, t, one, coster, 0, 0);
  StageWeights w;
  double layer_total = 0;
  for (const auto& b : c.blocks) {
    const double per = sum_time(b.forward) + sum_time(b.backward) + sum_time(b.recompute);
    if (b.label == "embedding")
      w.embedding_s = per;
    else if (b.label == "output layer + loss" || b.label == "MTP module")
      w.output_s += b.count * per;
    else
      layer_total += b.count * per;
  }
  w.layer_s = layer_total / model.layers;
  return w;
}

std::string kernel_table(const StepProgram& program) {
  std::string out = fmt::format("{:<10}{:<40}{:<30}{:>10}{:>10}{:>11}  {}\n", "phase", "kernel",
                                "shape", "GFLOP", "MB", "time us", "limit");
  auto rows = [&](const char* phase, const std::vector<Kernel>& ks) {
    for (const auto& k : ks)
      out +=
          fmt::format("{:<10}{:<40}{:<30}{:>10.2f}{:>10.2f}{:>11.1f}  {}\n", phase, k.name, k.shape,
                      k.flops / 1e9, k.bytes / 1e6, k.time_s * 1e6, to_string(k.limiter));
  };
  std::vector<const BlockProgram*> seen;
  auto show = [&](const ChunkProgram& c) {
    for (const auto& b : c.blocks) {
      if (std::any_of(seen.begin(), seen.end(),
                      [&](const BlockProgram* s) { return s->label == b.label; }))
        continue;
      seen.push_back(&b);
      out += fmt::format("-- {} (x{} in stage {} chunk {}; per micro-batch) --\n", b.label, b.count,
                         c.stage, c.chunk);
      rows("forward", b.forward);
      rows("backward", b.backward);
      rows("recompute", b.recompute);
      out +=
          fmt::format("{:<80}{:>21.1f}\n", "   block total (forward + backward + recompute)",
                      (sum_time(b.forward) + sum_time(b.backward) + sum_time(b.recompute)) * 1e6);
    }
  };
  for (const auto& stage : program.chunks)
    for (const auto& c : stage) show(c);
  if (!program.optimizer.empty()) {
    out += "-- optimizer (stage 0) --\n";
    rows("step", program.optimizer.front().kernels);
  }
  return out;
}

}  // namespace twin::workload
