#pragma once
/// The per-GPU memory model and check.
///
/// Memory per GPU (bytes), after Rajbhandari et al. (ZeRO) and Korthikanti et al. (2022):
///   weights 2/param, gradients 2/param (bf16), optimizer 12/param (fp32 master + Adam m, v);
///   ZeRO 1 shards the optimizer, 2 also gradients, 3 also weights, over the shard group.
///   Activations per layer per micro-batch (s = seq_len / cp): the tensors kept for the
///     backward, counted one by one from the model's widths (Korthikanti et al.'s method): the
///     two norm inputs, each linear layer's input (1 byte in fp8, which Transformer Engine saves
///     quantized; sharded over t with sequence parallelism), Q, K and V as the attention kernel
///     reads them (grouped-query K and V are kv_heads wide), the attention output, fc1's output
///     and fc2's input (f wide, 2 f for SwiGLU's fc1), and for MoE layers the router input and
///     each routed copy's input, output, fc1 output and fc2 input. No dropout masks (none is
///     modelled). For bf16, 4h GeLU and multi-head attention this is s b h times 32/t with
///     sequence parallelism and 8 + 24/t without: Korthikanti et al.'s 34/t and 10 + 24/t less
///     the two hidden-dropout masks, without the 5 a s/(h t) score term flash attention never
///     stores (unfused attention adds it). Full recompute keeps the layer input (2/t_sp).
///     Selective recompute modules drop what they recompute: layernorm the two norm outputs,
///     mlp a dense layer's fc1 and activation outputs, moe_act the experts' activation outputs,
///     shared_experts their fc1 and activation outputs, mla_up_proj the up-projected queries,
///     keys and values; the layer input (2/t_sp) always stays. With recompute_layers N only
///     the first N layers of each chunk keep their input alone; the others keep everything.
///   Stage s holds pp - s micro-batches in flight (1F1B); interleaved over v chunks, the
///   2 (pp - s - 1) + (v - 1) pp + 1 chunk forwards before its first backward, each 1/v of its
///   layers (the first stage: pp (1 + (pp - 1)/(pp v))). The first stage also holds the input
///   embedding, the last the output layer (one matrix with the embedding when tied and pp = 1)
///   and the MTP modules; the
///   memory reported and checked is the fuller of the two. A fixed reserve covers the CUDA
///   context, NCCL buffers and fragmentation (`training.memory_reserve_GB`, stated, not
///   measured).
/// - working set: what exists only while one layer is worked on, on top of the above (the peak
///   is reached once, not held): with zero 3 the gathered parameters of the layer computed and
///   of the one prefetched (2 P_l param_gather bytes, FSDP's and ZeRO-3's prefetch of one layer
///   ahead), with zero >= 2 a layer's unsharded gradient before its reduce-scatter (P_l grad
///   bytes), with full recompute the rest of one layer's activations while its backward runs
///   (what the layer keeps without recompute, less its input); on the last stage, instead of
///   those two when larger, the logits and the loss: T V / t logits of 2 bytes, and
///   unfused, an fp32 copy and the fp32 softmax kept for backward (+ 8 bytes a logit). P_l is
///   a layer's parameters on this GPU (dense and MoE averaged). Selective recompute's one
///   module at a time is left out.

#include <string>
#include <vector>

#include "workload/model.hpp"
#include "workload/parallelism.hpp"

namespace twin::workload {

struct MemoryBreakdown {
  double weights_GB = 0, gradients_GB = 0, optimizer_GB = 0, activations_GB = 0, reserve_GB = 0;
  double working_GB = 0;  ///< the peak's one-layer-at-a-time part (see the header)
  int stage = 0;          ///< the pipeline stage these figures are of (the fuller)
  [[nodiscard]] double total_GB() const {
    return weights_GB + gradients_GB + optimizer_GB + activations_GB + reserve_GB + working_GB;
  }
};

/// One tensor a layer keeps for its backward: bytes per micro-batch on one GPU.
struct ActivationTensor {
  std::string name;
  double bytes = 0;
  /// The selective-recompute module that reruns what writes it, so drops it (empty: none).
  std::string recompute_module;
};

/// The tensors one layer keeps for its backward per micro-batch on one GPU, before any
/// recompute, averaged over dense and MoE layers (a term of only some layers is weighted by
/// their share and says so).
std::vector<ActivationTensor> activation_tensors(const ModelSpec& model, const ParallelismSpec& p,
                                                 const TrainingSpec& t);

/// Bytes one layer keeps for its backward per micro-batch on one GPU: activation_tensors()
/// after recompute (full keeps the layer input; selective drops its modules' tensors), plus the
/// s x s scores of unfused attention unless recomputed.
double activation_bytes_per_layer(const ModelSpec& model, const ParallelismSpec& p,
                                  const TrainingSpec& t);

/// The profiler view of the activation memory: each kept tensor of a layer (MB per micro-batch),
/// what recompute leaves, and the layer-micro-batches pipeline stage `stage` holds in flight,
/// which give `activations_GB`.
std::string activation_table(const ModelSpec& model, const ParallelismSpec& p,
                             const TrainingSpec& t, double activations_GB, int stage = 0);

/// Parameters held by one GPU of pipeline stage `stage`: its layers, the input embedding on the
/// first stage, the output layer and the MTP modules on the last.
double params_per_gpu(const ModelSpec& model, const Layout& layout, int stage = 0);
/// The memory of one GPU of the fuller of the first and the last pipeline stage (the first
/// holds the most micro-batches in flight, the last the output layer and the loss).
MemoryBreakdown memory_per_gpu(const ModelSpec& model, const ParallelismSpec& p,
                               const TrainingSpec& t, const Layout& layout);
/// Throws core::Error with the breakdown when it exceeds `capacity_GB`.
void check_memory(const MemoryBreakdown& m, double capacity_GB, const std::string& gpu);

}  // namespace twin::workload
