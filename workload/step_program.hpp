#pragma once
/// The training step as data: for every pipeline chunk (a stage's virtual stage) the ordered
/// kernels of one micro-batch's forward, backward and recompute, and the collectives it issues.
/// The twin's executor runs it; nothing here needs a network.
///
/// Per transformer layer, T = micro_batch x seq_len / cp tokens on this GPU, t = TP degree,
/// T_sp = T / t with sequence parallelism (the norm and residual regions), else T:
///   forward   norm | QKV GEMM (T, (h + 2 h_kv)/t, h) | [q/k norm] | rotary | attention
///             | proj GEMM (T, h, h/t)
///             | residual | norm | fc1 GEMM (T, m_up f/t, h) | activation | fc2 GEMM (T, h, f/t)
///             | residual
///   backward  per GEMM a data-gradient GEMM (T, K, N) and a weight-gradient GEMM (N, K, T) of
///             the forward (T, N, K); element-wise kernels move twice their forward bytes;
///             attention backward (flash: one kernel + the dO.O preprocessing pass)
///   recompute selective: the forward kernels of the recompute_modules again (core_attn, the
///             default: the attention core; layernorm: both norms; mlp: a dense layer's fc1,
///             activation and fc2; moe_act: the experts' activation; shared_experts; mla_up_proj:
///             MLA's q/kv up-projections and rotary); full: the whole layer forward again
/// Element-wise bytes (2-byte activations, per element of the tensor): fused kernels (Apex/TE
/// norms, bias-add fusions, fused SwiGLU, fused rotary) read and write once; unfused PyTorch ops
/// take several passes: norm 5 (stats, normalize, affine), rotary 3 per tensor, SwiGLU 5 (SiLU,
/// multiply), GeLU with bias 4, residual with bias 5 (fused 3).
/// Unfused attention: QK^T and AV as batched GEMMs over the full s x s square, and on the
/// scores (2 bytes each; Korthikanti et al.'s 5 a s^2 b activation terms): fused scale-mask-
/// softmax 4 B + dropout 5 B (mask 1 B) forward, 11 B backward; unfused scale, mask, softmax,
/// dropout 17 B forward, 19 B backward.
/// Output layer: final norm, logits GEMM (T, V/t, h), cross-entropy on T V / t logits: unfused in
/// fp32 (cast, max, subtract, exp, sum, divide: 38 B per logit forward, 26 B backward), fused
/// 6 B forward, 4 B backward. Embedding: lookup 4 T h bytes, gradient scatter 10 T h bytes.
/// MoE layer: router GEMM (T, E, h), permute and unpermute (2 T k h 2 bytes each), grouped
/// expert GEMMs over E_local experts of T k cf / E_local tokens each (cf: the busiest expert's
/// load over the mean, the load imbalance), shared experts as dense GEMMs. With E_local > 1 the
/// all-to-all dispatcher also sorts the tokens it receives (grouped by sender) into expert order
/// and back after the experts (Megatron-Core's sort_chunks_by_idxs, "permutation 2"): 2 A h 2
/// bytes each way, A the tokens arriving at the rank.
/// Collectives per layer and micro-batch, each direction: TP 2 all-reduces of T h 2 bytes (with
/// sequence parallelism 2 all-gathers + 2 reduce-scatters; full recompute reruns the forward with
/// its TP collectives, so backward issues twice as many), EP dispatch + combine all-to-alls of
/// (T / t) k cf h 2 bytes, CP (ring attention) cp - 1 exchanges of K and V, 2 (T h_kv / t) 2
/// bytes (backward also dK, dV: twice that); PP the chunk's output T h 2 / t bytes per rank (with
/// SP its shard; without, scatter-gather sends 1/t and the next stage all-gathers T h 2 over
/// NVLink, Megatron-LM's scatter_gather_tensors_in_pipeline; with pp_scatter_gather off, T h 2).
/// FP8 (Transformer Engine): each GEMM's input and output gradient are quantized with a
/// transposed copy, read 2 write 1 + 1 bytes an element (delayed scaling: one kernel, none when a
/// fused norm writes the input; a grouped GEMM's experts in one multi-tensor kernel; the MLP
/// activation writes 16 bits, as Megatron-Core's bias-activation fusions and PyTorch's do, and
/// fc2's input is cast); with current scaling (fp8_recipe tensorwise) each tensor (each
/// expert's) first has an amax pass (read 2 bytes an element) and a scale kernel, and norms no
/// longer emit FP8: a fused norm writes 16 bits and the amax in its own pass, then the scale
/// kernel and the cast follow. The output layer stays in BF16.
/// Optimizer (per local parameter): Adam with fp32 master weights and moments reads param, grad,
/// m, v (16 B) and writes param, m, v and the bf16 copy (14 B); gradient clipping reads the fp32
/// gradients again (4 B); parameters are sharded over the DP group for zero >= 1.

#include <string>
#include <vector>

#include "calibrate/profile.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"

namespace twin::workload {

/// Kernels of one kind of block (a dense layer, an MoE layer, the embedding, the output layer),
/// repeated `count` times in a chunk.
struct BlockProgram {
  /// "dense layer", "MoE layer" (with " (sliding window N)" for windowed-attention layers and
  /// " (recomputed)" for the layers recompute_layers reruns), "embedding", "output layer + loss"
  std::string label;
  int count = 0;
  std::vector<Kernel> forward, backward, recompute;
  /// The GEMM each TP collective of a layer can hide behind with TP overlap, in order: forward
  /// all-gather -> QKV, proj -> reduce-scatter, all-gather -> fc1, fc2 -> reduce-scatter;
  /// backward the data-gradient GEMMs of the same four.
  struct OverlapGemm {
    double gemm_s = 0;
    /// The share of the collective that runs after the GEMM's last chunk whatever the GEMM's
    /// length: a pipelined reduce-scatter sends each chunk's rows once that chunk is computed,
    /// so the last chunk's share has nothing to overlap with (1 / chunks); 0: none.
    double tail = 0;
  };
  std::vector<OverlapGemm> tp_overlap_forward, tp_overlap_backward;
  double attention_forward_s = 0, attention_backward_s = 0;  ///< CP exchange hides behind these
  int tp_collectives = 0;  ///< per direction: slots of all-reduce (or all-gather + reduce-scatter)
  int ep_alltoalls = 0;    ///< per direction
  int cp_exchanges = 0;    ///< ring-attention K/V exchanges per direction (forward)
  bool reruns_forward = false;  ///< full recompute: `recompute` is the whole forward again
};

/// One collective the program asks for (sizes per rank, counts per micro-batch per direction).
struct CollectiveRequest {
  std::string group;  ///< tp, cp, ep, pp
  std::string op;     ///< all_reduce, all_gather, reduce_scatter, alltoall, sendrecv
  double bytes = 0;
  int count = 0;
};

/// What one pipeline chunk (its layers on one stage) does per micro-batch.
struct ChunkProgram {
  int stage = 0, chunk = 0, first_layer = 0, layers = 0;
  std::vector<BlockProgram> blocks;
  std::vector<CollectiveRequest> collectives;
  double params = 0;         ///< parameters per GPU (dense + local experts)
  double expert_params = 0;  ///< of which expert parameters
  double tp_bytes = 0;       ///< one TP collective, the full tensor T h 2
  double ep_bytes = 0;       ///< one all-to-all per rank
  double cp_bytes = 0;       ///< one ring-attention step (K and V) per rank, forward
  double p2p_bytes = 0;      ///< activation to the next stage
  /// Of `params`, the embedding (also the output layer's matrix when tied on a one-stage
  /// pipeline): FSDP gathers it before the first layer and reduce-scatters its gradient after
  /// the last backward, with nothing to hide either behind.
  double embedding_params = 0;

  // Totals per micro-batch (seconds), from the kernels.
  double forward_s = 0, backward_s = 0;                ///< backward includes recompute
  double forward_tensor_s = 0, backward_tensor_s = 0;  ///< of which GEMM + attention kernels
  double attention_forward_s = 0, attention_backward_s = 0;
  double forward_flops = 0, recompute_flops = 0;
  int tp_collectives = 0, ep_alltoalls = 0, cp_exchanges = 0;
  int recompute_tp_collectives = 0;  ///< TP slots the recomputed forward issues again (full)
  /// MoE layers of this chunk and, per MoE layer, the time of the expert kernels (between the
  /// dispatch and the combine all-to-all) and of the rest of the layer, per direction (backward
  /// includes recompute): the phases the combined 1F1B schedule overlaps all-to-alls with.
  int moe_layers = 0;
  double moe_expert_forward_s = 0, moe_other_forward_s = 0;
  double moe_expert_backward_s = 0, moe_other_backward_s = 0;
  int kernels_per_microbatch = 0;
  /// Of forward_s and backward_s, the time the device waits for the host to issue kernels
  /// (workload/host_issue.hpp): 0 when every kernel outlasts its issue.
  double host_wait_forward_s = 0, host_wait_backward_s = 0;
};

/// A chunk's kernel time per micro-batch (forward, backward and recompute, every block times its
/// count) by what limits it: GEMMs (tensor-core kernels outside attention), the attention core,
/// memory-bound kernels and kernels at their launch floor (with the device's wait for the host,
/// which is launch-bound too). The four add up to forward_s + backward_s.
struct KernelClassTimes {
  double gemm = 0, attention = 0, memory = 0, launch = 0;
  [[nodiscard]] double total() const { return gemm + attention + memory + launch; }
  KernelClassTimes& operator+=(const KernelClassTimes& o) {
    gemm += o.gemm;
    attention += o.attention;
    memory += o.memory;
    launch += o.launch;
    return *this;
  }
};
KernelClassTimes kernel_class_times(const ChunkProgram& chunk);

/// The optimizer of one stage.
struct OptimizerProgram {
  std::vector<Kernel> kernels;
  double seconds = 0;
  double local_params = 0;  ///< parameters this GPU updates (sharded)
};

struct StepProgram {
  std::vector<std::vector<ChunkProgram>> chunks;  ///< [stage][chunk]
  std::vector<OptimizerProgram> optimizer;        ///< [stage]
};

/// The program of chunk `chunk` of stage `stage` (the first chunk of stage 0 holds the embedding,
/// the last chunk of the last stage the output layer and loss). Throws core::Error when the
/// attention kind has no data in the profile.
ChunkProgram chunk_program(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                           const Layout& layout, const KernelCoster& coster, int stage, int chunk);

/// Adam over `local_params`, gradient clipping over `grad_params` (the fp32 gradients this GPU
/// clips: its shard with a distributed optimizer). `loss_scaling` (FP16 training): the gradients
/// are first unscaled and checked for inf/NaN, one more read and write of each.
OptimizerProgram optimizer_program(double local_params, double grad_params,
                                   const KernelCoster& coster, bool loss_scaling = false);

/// TP communication left exposed per micro-batch when each TP collective of sequence
/// parallelism (an all-gather or reduce-scatter, `collective_s` = c each) runs beside the GEMM
/// (g) it overlaps with, and the GEMM time it overlapped (which runs slower by the SMs the
/// communication takes). Exposed per pair: max(0, c - g); with a tail share f (a pipelined
/// reduce-scatter of n chunks, f = 1 / n: chunk i's transfer beside chunk i + 1's GEMM, the
/// last one after all of them) f c + (1 - f) max(0, c - g). Overlapped: c - exposed.
struct TpOverlap {
  double exposed_s = 0, overlapped_s = 0;
};
/// `recomputed_only`: over the layers whose forward full recompute reruns in backward only.
TpOverlap tp_overlap(const ChunkProgram& chunk, bool forward, double collective_s,
                     bool recomputed_only = false);

/// EP all-to-all time left exposed when a forward of chunk `f` and a backward of chunk `b`
/// (compute scaled by `scale`) run as one node of Megatron-Core's combined 1F1B schedule, each
/// all-to-all taking `alltoall_s`. Per pair of MoE layers the schedule runs four phases, each
/// one all-to-all beside one compute part:
///   F attention | B combine-bwd,  B experts-bwd | F dispatch,
///   F experts   | B dispatch-bwd, B attention-bwd | F combine,
/// and a phase lasts the longer of the two. MoE layers of one chunk without a partner in the
/// other run their two all-to-alls exposed.
double combined_1f1b_exposed(const ChunkProgram& f, const ChunkProgram& b, double scale,
                             double alltoall_s);

/// The whole step's program for a layout (its chunk_layers already set).
StepProgram step_program(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                         const Layout& layout, const KernelCoster& coster);

/// Time of one layer (forward + backward), of the embedding and of the output layer + loss: what
/// `parallelism.stage_layers: auto` balances.
struct StageWeights {
  double layer_s = 0, embedding_s = 0, output_s = 0;
};
StageWeights stage_weights(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                           const Layout& layout, const KernelCoster& coster);

/// Nsight-like table of one stage-0 chunk's and the output layer's kernels per block: phase,
/// kernel, shape, GFLOP, MB, time, limiter.
std::string kernel_table(const StepProgram& program);

}  // namespace twin::workload
