#pragma once
/// Parallelism, placement and the per-GPU memory check.
///
/// Ranks are laid out TP fastest, then DP, then PP (Megatron's order): GPU g has
///   tp_rank = g mod tp, dp_rank = (g / tp) mod dp, pp_rank = g / (tp dp).
/// With tp = GPUs per node a TP group is one node (NVLink) and a DP group is the same local GPU
/// of dp nodes — one rail. HSDP shards over `hsdp_shard` consecutive DP ranks and replicates
/// across the rest.
///
/// Expert layers are laid out on their own over the same tp x dp ranks of a stage (Megatron-Core's
/// "MoE parallel folding"): within a stage, local rank r = tp_rank + tp dp_rank has
///   expert-TP rank r mod etp, EP rank (r / etp) mod ep, expert-DP rank r / (etp ep),
/// so ep x etp must divide tp x dp. With etp = tp (Megatron's default) an EP group is ep
/// consecutive DP ranks of one TP rank, experts split over the data-parallel replicas; with
/// etp < tp (e.g. Qwen3-235B's recipe: TP 2, ETP 1, EP 32 on DP 16) an EP group also spans the
/// TP ranks, whose sequence-parallel token shards then go to different experts.
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
///   embedding, the last the output layer (embeddings are untied) and the MTP modules; the
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

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "workload/model.hpp"

namespace twin::workload {

/// Megatron-Core's selective recompute modules the step models (`moe`, which reissues the
/// all-to-alls, is not among them).
inline constexpr std::array<std::string_view, 6> kRecomputeModules = {
    "core_attn", "layernorm", "mlp", "moe_act", "shared_experts", "mla_up_proj"};

struct ParallelismSpec {
  int tp = 8, pp = 8, dp = 64, ep = 1;
  /// Expert tensor parallelism: each expert's matrices split over etp ranks (0: as tp).
  int expert_tp = 0;
  /// The expert-TP size in effect: expert_tp, or tp when it is 0.
  [[nodiscard]] int etp() const { return expert_tp > 0 ? expert_tp : tp; }
  int cp = 1;  ///< context parallelism: the sequence split over cp ranks (ring attention)
  /// Layers per pipeline stage: empty = an even split; with stage_layers_auto the split that
  /// balances stage time (embedding and output layer + loss included) is chosen by the step.
  std::vector<int> stage_layers;
  bool stage_layers_auto = false;
  int zero = 1;            ///< 0..3 (3 = FSDP)
  int hsdp_shard = 0;      ///< >0: HSDP, shard over this many DP ranks, replicate across the rest
  int virtual_stages = 1;  ///< interleaved 1F1B chunks per stage (0: auto, best that fits)
  int micro_batch = 1;     ///< sequences per micro-batch
  bool sequence_parallel = true;
  std::string recompute = "none";  ///< none, selective, full
  /// With recompute full: only the first N layers of each pipeline chunk are recomputed, the
  /// others keep their activations (Megatron-Core's recompute_method block with
  /// recompute_num_layers N; fms-fsdp's selective_checkpointing fraction of the blocks).
  /// 0: every layer.
  int recompute_layers = 0;
  /// The layers of a chunk of `chunk_layers` that rerun their forward in backward.
  [[nodiscard]] int recomputed_layers(int chunk_layers) const {
    if (recompute != "full") return 0;
    return recompute_layers > 0 ? std::min(recompute_layers, chunk_layers) : chunk_layers;
  }
  /// "the first layer" / "the first N layers" (of each chunk) that recompute_layers reruns.
  [[nodiscard]] std::string recomputed_layers_text() const;
  /// With selective recompute, Megatron-Core's recompute_modules: which parts of a layer are
  /// recomputed in backward instead of kept (empty: core_attn, Megatron-Core's default).
  std::vector<std::string> recompute_modules;
  /// Whether selective recompute reruns `module` (one of kRecomputeModules).
  [[nodiscard]] bool recomputes(const std::string& module) const {
    if (recompute != "selective") return false;
    if (recompute_modules.empty()) return module == "core_attn";
    return std::find(recompute_modules.begin(), recompute_modules.end(), module) !=
           recompute_modules.end();
  }
  bool operator==(const ParallelismSpec&) const = default;
};

struct TrainingSpec {
  double global_batch = 1024;  ///< sequences per step
  double tokens = 15.0e12;     ///< token budget of the whole run
  std::string precision = "bf16";
  /// How FP8 tensors get their scale (Megatron-Core's fp8_recipe, Transformer Engine's
  /// recipes): "delayed" (DelayedScaling: from the amax history of earlier steps, so a fused norm
  /// writes FP8 directly and a grouped GEMM's inputs are cast by one multi-tensor kernel) or
  /// "tensorwise" (Float8CurrentScaling: from the tensor's own amax, an extra pass over it and a
  /// scale kernel before each cast, one chain per tensor of a group, nothing fused into a norm).
  std::string fp8_recipe = "delayed";
  [[nodiscard]] bool current_scaling() const {
    return precision == "fp8" && fp8_recipe == "tensorwise";
  }
  /// Software stack: flash or unfused attention, fused element-wise kernels, and Megatron-Core's
  /// overlap switches (TP communication with GEMMs, DP gradient reduce-scatter with backward,
  /// parameter all-gather with the next forward).
  std::string attention = "auto";
  bool fused_kernels = true;
  /// The loss over the vocabulary: "fused" (one pass over the bf16 logits that writes the
  /// gradient in place: Transformer Engine's parallel_cross_entropy, apex / flash-attn
  /// xentropy), "unfused" (the logits cast to fp32 and softmaxed op by op, the fp32 softmax kept
  /// for backward: Megatron's VocabParallelCrossEntropy, eager PyTorch), or "auto" (fused when
  /// fused_kernels is on).
  std::string cross_entropy = "auto";
  [[nodiscard]] bool fused_cross_entropy() const {
    return cross_entropy == "fused" || (cross_entropy == "auto" && fused_kernels);
  }
  bool tp_comm_overlap = true;
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  /// Megatron-Core's overlap_moe_expert_parallel_comm (Megatron-Bridge moe_a2a_overlap): the
  /// combined 1F1B schedule runs a forward and a backward of different micro-batches as one
  /// node, each one's EP all-to-alls hidden behind the other's compute.
  bool moe_a2a_overlap = false;
  /// How MoE tokens reach their experts. "alltoall": Megatron-Core's all-to-all dispatcher, one
  /// copy per (token, expert) permuted before an NCCL all-to-all and sorted by local expert
  /// after it. "flex": Megatron-Core's flex dispatcher over DeepEP / HybridEP, which sends a
  /// token once per destination GPU, across nodes once per destination node (forwarded there
  /// over NVLink), and permutes the tokens a rank receives once, by local expert.
  std::string moe_dispatcher = "alltoall";
  /// Megatron-LM's scatter_gather_tensors_in_pipeline (default on) and DeepSpeed's partitioned
  /// pipeline activations: without sequence parallelism every TP rank holds the whole activation,
  /// so each sends only its 1/tp share to the next stage, which all-gathers it over NVLink.
  bool pp_scatter_gather = true;
  /// Type of the parameters as FSDP / ZeRO all-gathers them: "bf16" (MixedPrecision
  /// param_dtype=bf16, Composer's PURE, Megatron) or "fp32" (param_dtype unset: the fp32 master
  /// weights are gathered and autocast casts them per GEMM, Composer 0.14's DEFAULT).
  std::string param_gather_dtype = "bf16";
  /// Type of the gradients as they are reduced across data-parallel ranks and kept for the
  /// optimizer: "bf16" (FSDP MixedPrecision reduce_dtype=bf16, Composer 0.14's PURE and
  /// DEFAULT) or "fp32" (later Composers' DEFAULT, Megatron-LM's bf16 default
  /// accumulate_allreduce_grads_in_fp32). fp32 doubles the reduce-scatter / all-reduce bytes and
  /// the gradient buffers.
  std::string grad_reduce_dtype = "bf16";
  /// How a sharded optimizer (zero 1) synchronizes gradients: "auto" reduce-scatters them
  /// (Megatron's distributed optimizer: each rank receives the sum of its shard);
  /// "all_reduce" all-reduces the whole gradient and each rank then updates its shard and
  /// all-gathers the parameters back (DeepSpeed's BF16_Optimizer, whose get_grads_for_reduction
  /// hands the engine the full fp32 gradient buffer): twice the gradient bytes.
  std::string grad_sync = "auto";
  /// Full recompute stops once the layer's saved tensors exist again (PyTorch's non-reentrant
  /// activation checkpointing, which stops early by default since PyTorch 2.1: FSDP's
  /// checkpoint_wrapper, torchtitan): the trailing residual add and, in 16 bits, the MLP's
  /// output GEMM, whose operands PyTorch's mm saves before it runs, are not rerun (Transformer
  /// Engine's FP8 GEMMs save after computing and are). Off: the whole forward is rerun
  /// (Megatron's and DeepSpeed's checkpointing, PyTorch's reentrant checkpoint and releases
  /// before 2.1).
  bool recompute_early_stop = false;
  [[nodiscard]] double param_gather_bytes() const { return bytes_of(param_gather_dtype); }
  [[nodiscard]] double grad_bytes() const { return bytes_of(grad_reduce_dtype); }
  double memory_reserve_GB = 4.0;
  double price_per_gpu_hour = 2.0;  ///< illustrative, for the cost line
  bool operator==(const TrainingSpec&) const = default;

 private:
  /// Bytes per element of the data-parallel dtypes above ("bf16" or "fp32").
  static double bytes_of(const std::string& dtype) { return dtype == "fp32" ? 4.0 : 2.0; }
};

struct Layout {
  /// dp here counts the replicas of a stage: data-parallel x context-parallel ranks, ordered CP
  /// fastest (Megatron's tp-cp-dp-pp order); gradients are reduced over all of them.
  int tp = 1, pp = 1, dp = 1, ep = 1, cp = 1;
  int etp = 1;  ///< expert tensor parallelism (the expert layout above)
  int v = 1;    ///< virtual stages (chunks per stage)
  int gpus = 0;
  int micro_batches = 0;     ///< per step per pipeline
  int layers_per_chunk = 0;  ///< the most layers of any chunk
  int shard_group = 1;       ///< ZeRO/FSDP shard group size (dp x cp, or hsdp_shard)
  /// Layers of chunk c of stage s at [c * pp + s]; chunks hold consecutive layers in that order.
  std::vector<int> chunk_layers;

  [[nodiscard]] int gpu(int tp_rank, int dp_rank, int pp_rank) const {
    return tp_rank + tp * (dp_rank + dp * pp_rank);
  }
  [[nodiscard]] int layers(int stage, int chunk) const {
    return chunk_layers[static_cast<std::size_t>(chunk * pp + stage)];
  }
  [[nodiscard]] int first_layer(int stage, int chunk) const;
  /// Sets the per-stage layer counts (each split as evenly as possible over the stage's chunks,
  /// earlier chunks taking the remainder).
  void set_stage_layers(const std::vector<int>& per_stage);
  /// Every TP group of a stage; every DP group of a stage (tp of them, of size dp) ...
  [[nodiscard]] std::vector<std::vector<int>> tp_groups(int stage) const;
  [[nodiscard]] std::vector<std::vector<int>> dp_groups(int stage, int size, int stride = 1) const;
  /// Every EP group of a stage (ep ranks each), and every expert-DP group (the ranks holding the
  /// same experts' shard, tp dp / (ep etp) each), in the expert layout above.
  [[nodiscard]] std::vector<std::vector<int>> ep_groups(int stage) const;
  [[nodiscard]] std::vector<std::vector<int>> expert_dp_groups(int stage) const;
  [[nodiscard]] int expert_dp() const { return tp * dp / (ep * etp); }
};

/// The per-stage layer counts that minimize the slowest stage's time, given one layer's time and
/// the extra time of the first stage (embedding) and the last (output layer + loss); ties are
/// broken by taking layers from the stage with the most work. E.g. 126 layers on 16 stages with
/// an output layer worth under one layer: 7, 8 x 14, 7.
std::vector<int> balance_stage_layers(int layers, int pp, double layer_s, double first_extra_s,
                                      double last_extra_s);

/// Validates parallelism against the model and cluster; throws core::Error naming the field.
Layout make_layout(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                   int gpus);

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
