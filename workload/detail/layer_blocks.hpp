#pragma once
/// The kernels of one block of a chunk (a transformer layer, the embedding, the output layer):
/// the builder that appends a block's forward, backward and recompute kernels with their costs,
/// a layer's shapes for one micro-batch, and the layer builders chunk_program() assembles into
/// chunks. The bytes and pass counts are workload/step_program.hpp's.

#include <fmt/format.h>

#include <string>
#include <vector>

#include "workload/kernel_cost.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"
#include "workload/step_program.hpp"

namespace twin::workload::detail {

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
  /// A ring-exchange reduce-scatter of the forward output over `reduce_partials` ranks
  /// (Transformer Engine's split_overlap_rs over userbuffers): the GEMM writes its output chunks
  /// into the communication buffer, the ring delivers every peer's partial sum of this rank's
  /// rows, and once the last has arrived a kernel on the compute stream adds them up (reads
  /// the t partials, writes the result; the buffer holds the 16-bit output: Transformer
  /// Engine keeps FP8 buffers for all-gathers and pipelined reduce-scatters only). 0: none.
  int reduce_partials = 0;
  /// A pipelined reduce-scatter of the forward output: the share of it left after the GEMM's
  /// last chunk (BlockProgram::OverlapGemm::tail), 1 / chunks; 0: none.
  double reduce_tail = 0;
};

/// What writes a GEMM's input: a fused norm, which emits the FP8 copy itself under delayed
/// scaling (Transformer Engine's LayerNormLinear), or a kernel that writes 16 bits (attention,
/// Megatron-Core's and PyTorch's activations, which run outside Transformer Engine's Linear).
enum class Producer { none, norm };

/// Builds one block's kernels; the bytes and pass counts are workload/step_program.hpp's.
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
    // A fused norm writes the FP8 input itself under delayed scaling, and its amax under current
    // scaling.
    const bool norm_writes = input == Producer::norm && fused_;
    if (fp8 && !(norm_writes && !current_scaling_))
      for (Kernel& q : quantize(name + " input", m * split.input_rows * k * batch, split.tensors,
                                norm_writes)) {
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
    if (split.reduce_partials > 1) {
      const double t = split.reduce_partials;
      Kernel r = c_.memory(name + " output reduce (ring)", (t + 1.0) * (m / t) * n * 2.0);
      if (recompute) block.recompute.push_back(r);
      block.forward.push_back(std::move(r));
    }
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
  /// it into the scale, then the cast-transpose; its multi-tensor cast is for delayed scaling
  /// only, so each expert's tensor pays the chain's start-ups. `amax_known`: the kernel that
  /// wrote the input also wrote its amax, so there is no amax pass (Transformer Engine's norms
  /// under current scaling write 16 bits and the amax in one pass, create_hp_tensor_with_amax,
  /// then quantize_with_amax scales and casts).
  std::vector<Kernel> quantize(const std::string& name, double elements, int tensors,
                               bool amax_known = false) const {
    if (!current_scaling_) return {c_.memory(name + " fp8 cast-transpose", 4.0 * elements)};
    std::vector<Kernel> out;
    if (!amax_known) out.push_back(c_.memory(name + " amax", 2.0 * elements, tensors));
    out.push_back(c_.memory(name + " fp8 scale", 0.0, tensors));
    out.push_back(c_.memory(name + " fp8 cast-transpose", 4.0 * elements, tensors));
    return out;
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

  /// training.grad_accumulation after the block's backward: its `params` parameters' 16-bit
  /// gradients into the fp32 buffer, one kernel per parameter tensor (`tensors`), streaming at
  /// the STREAM rate: "add" reads 2 + 4 and writes 4 bytes a parameter; "cast_add" casts first
  /// (read 2, write 4) and then adds (read 4 + 4, write 4); "fused" adds nothing (the
  /// weight-gradient GEMM accumulates).
  void accumulate_grads(const std::string& mode, double params, int tensors) {
    if (!(params > 0)) return;
    if (mode == "add") {
      block.backward.push_back(
          c_.stream("grad accumulate (fp32 += 16-bit)", 10.0 * params, tensors));
    } else if (mode == "cast_add") {
      block.backward.push_back(c_.stream("grad cast to fp32", 6.0 * params, tensors));
      block.backward.push_back(c_.stream("grad accumulate (fp32)", 12.0 * params, tensors));
    }
  }

  const KernelCoster& c_;
  bool fused_;
  bool autocast_;
  bool current_scaling_;

 private:
  double last_dgrad_s_ = 0;
};

/// A layer's sizes on this GPU for one micro-batch: T, T_sp, h, t as in step_program.hpp.
struct Shape {
  double T, Tsp, h, q, kv, f, fe, tp, s_local, s, head_dim, local_heads, b;
  double v_dim;  // width of a value head (MLA: narrower than query/key heads)
  // The column-parallel (QKV, fc1) and row-parallel (proj, fc2) GEMMs' launches.
  GemmSplit column, row;
  double up;  // MLP input matrices fused in fc1: 2 (SwiGLU gate + up) or 1 (GeLU)
  bool rope, gelu;
};

/// The layer's shapes under the scenario's parallelism, with the TP-overlap GEMM splits.
Shape shape_of(const ModelSpec& m, const ParallelismSpec& p, const TrainingSpec& t);

/// A layer's parameters on this GPU: those split over TP and those of its local experts.
struct LayerParams {
  double shared = 0, experts = 0;
};

/// One transformer layer's kernels and collectives (dense or MoE MLP; `window` > 0: sliding-
/// window attention).
LayerParams transformer_layer(BlockBuilder& bb, const Shape& x, const ModelSpec& model,
                              const Layout& layout, const ParallelismSpec& p, const TrainingSpec& t,
                              bool moe, int window);

/// The final norm, the logits GEMM over the vocabulary (in BF16 under Transformer Engine's FP8
/// recipe) and the cross-entropy.
void output_layer(BlockBuilder& bb, const Shape& x, const ModelSpec& model, const TrainingSpec& t);

/// One multi-token-prediction module (DeepSeek-V3, Megatron-Core's MultiTokenPredictionLayer),
/// on the last pipeline stage after the main loss: the tokens shifted by one more position are
/// embedded (the shared embedding), the main model's last hidden states and those embeddings
/// are normed and concatenated, projected back to h (a column-parallel (T, h / t, 2 h) GEMM on
/// the concatenation, which no norm writes), run through one transformer layer like the
/// model's last, and scored by the shared output layer with their own loss. Its layer is not
/// recomputed, whatever parallelism.recompute says, and its activations are not in the memory
/// model (which reports stage 0).
LayerParams mtp_module(BlockBuilder& bb, const Shape& x, const ModelSpec& model,
                       const Layout& layout, const ParallelismSpec& p, const TrainingSpec& t);

}  // namespace twin::workload::detail
