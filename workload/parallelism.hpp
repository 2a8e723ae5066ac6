#pragma once
/// Parallelism and placement: the layout of ranks into TP, DP, PP, EP and CP groups.
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
  /// balances the time of every virtual stage (embedding and output layer + loss included) is
  /// chosen by the step.
  std::vector<int> stage_layers;
  bool stage_layers_auto = false;
  /// Megatron-Core's pipeline_model_parallel_layout (workload/pipeline_layout.hpp): the layers
  /// of every virtual stage; empty = stage_layers decides.
  std::string pipeline_layout;
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
  /// What issues the kernels from the host, and at what CPU cost per kernel
  /// (workload/host_issue.hpp): "te" (Megatron-Core with Transformer Engine), "megatron"
  /// (Megatron-LM without it), "eager" (plain PyTorch modules, FSDP stacks), "compiled"
  /// (torch.compile's Inductor).
  std::string framework = "te";
  /// The step's kernels replayed from captured CUDA graphs: no per-kernel host cost.
  bool cuda_graphs = false;
  /// The loss over the vocabulary: "fused" (one pass over the bf16 logits that writes the
  /// gradient in place: Transformer Engine's parallel_cross_entropy, apex / flash-attn
  /// xentropy), "unfused" (the logits cast to fp32 and softmaxed op by op, the fp32 softmax kept
  /// for backward: Megatron's VocabParallelCrossEntropy, eager PyTorch), or "auto" (fused when
  /// fused_kernels is on).
  std::string cross_entropy = "auto";
  [[nodiscard]] bool fused_cross_entropy() const {
    return cross_entropy == "fused" || (cross_entropy == "auto" && fused_kernels);
  }
  /// How model FLOPs (model TFLOP/s, MFU, HFU) count the attention scores: "full_square" (every
  /// entry of each s x s score matrix: PaLM's MFU, Narayanan et al.'s Megatron-LM formula, NeMo
  /// 24.x, MosaicML's MFU) or "causal" (the entries the causal mask, or a sliding window, keeps:
  /// Megatron-LM's num_floating_point_operations and NeMo / Megatron-Bridge's flops formulas
  /// since 2025). A convention of the report: the kernels' times do not depend on it.
  std::string model_flops = "full_square";
  [[nodiscard]] bool causal_flops() const { return model_flops == "causal"; }
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
  /// How each micro-batch's weight gradients reach the gradient buffer the optimizer reads:
  /// "fused" (the weight-gradient GEMM adds into the fp32 main gradient itself: Megatron-Core's
  /// and apex's gradient_accumulation_fusion; FSDP reduce-scatters every micro-batch's gradient
  /// instead of keeping it), "add" (after the backward each parameter's 16-bit gradient is
  /// added into its fp32 buffer by one mixed-dtype kernel, 10 bytes a parameter: Megatron's
  /// gradient hook without gradient_accumulation_fusion), "cast_add" (DeepSpeed's BF16_Optimizer,
  /// whose update_hp_grads runs after every micro-batch's backward: each gradient cast to fp32,
  /// 6 bytes a parameter, then added into the fp32 buffer, 12).
  std::string grad_accumulation = "fused";
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
  /// Sets every chunk's layers, [c * pp + s] as chunk_layers.
  void set_chunk_layers(std::vector<int> per_chunk);
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

}  // namespace twin::workload
