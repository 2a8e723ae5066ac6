#pragma once
/// What one pipeline chunk (layers_per_chunk layers on one stage) does for one micro-batch: its
/// compute time from the hardware profile, and the communication it issues (sizes per rank).
///
/// Compute (per GPU, T = micro_batch x seq_len tokens, TP degree t):
///   each GEMM: time = FLOPs / (peak(dtype) x gemm_efficiency(M, N, K)) with M = T,
///     N and K the weight's sharded dimensions (QKV: (h + 2 h_kv)/t x h, projection h x h/t,
///     MLP up/gate f/t x h, down h x f/t; MoE experts: M = tokens routed to each local expert);
///   attention scores (flash attention, causal): 4 T s h / t FLOPs with half skipped by the
///     causal mask, at the efficiency of a (T, s, h/heads) GEMM;
///   memory-bound work (norms, residuals, activation, rotary, dropout-free): about
///     2 bytes x T x (10 h + 3 f) per layer read and written, at HBM bandwidth x efficiency;
///   backward = 2 x forward GEMM FLOPs; recompute adds the forward (full) or the attention
///     scores (selective) to the backward.
/// Communication per layer per micro-batch (forward; backward repeats it):
///   TP: 2 all-reduces of T h 2 bytes (sequence parallel: 2 all-gathers + 2 reduce-scatters of
///     the same total), inside the TP group.
///   EP (MoE layers): dispatch and combine all-to-alls of (T/t) top_k cf h 2 bytes per rank.
///   PP: the chunk's output activation T h 2 bytes (/t with sequence parallelism) to the next
///   stage.

#include <string>

#include "calibrate/profile.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"

namespace twin::workload {

struct ChunkCost {
  double forward_s = 0;      ///< compute, one micro-batch
  double backward_s = 0;     ///< compute incl. recompute
  double forward_flops = 0;  ///< model FLOPs (per GPU)
  double recompute_flops = 0;
  int tp_collectives = 0;    ///< per direction (forward or backward)
  double tp_bytes = 0;       ///< per collective, per rank (the full tensor)
  int ep_alltoalls = 0;      ///< per direction
  double ep_bytes = 0;       ///< per all-to-all, per rank
  double p2p_bytes = 0;      ///< activation to the next stage
  double params = 0;         ///< parameters of this chunk per GPU (dense + local experts)
  double expert_params = 0;  ///< of which expert parameters
};

/// Cost of chunk `chunk` of stage `stage` (the first chunk of stage 0 holds the embedding, the
/// last chunk of the last stage the output layer).
ChunkCost chunk_cost(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                     const Layout& layout, const calibrate::Profile& profile, int stage, int chunk);

/// Optimizer step time per GPU: Adam reads and writes ~36 bytes per local parameter (fp32
/// master, m, v, bf16 weight and gradient) at HBM bandwidth x efficiency.
double optimizer_seconds(double local_params, const calibrate::Profile& profile);

}  // namespace twin::workload
