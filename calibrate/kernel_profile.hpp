#pragma once
/// The `kernels` section of a hardware profile: the figures the kernel cost models
/// (workload/kernel_cost.hpp) use, each with its provenance.
///
///   sm_count              streaming multiprocessors (108 on A100, 132 on H100 SXM): the width
///                         of a GEMM wave and the denominator of the SMs NCCL takes
///   gemm_tile_m, _n       the CTA tile of a large cuBLAS GEMM; the models also try the
///                         transposed tile and a square min x min tile, as cuBLAS's heuristics do
///   gemm_tiles            optional: the CTA tiles cuBLAS chooses among on this architecture
///                         (each also transposed), the split-K factors it may use and whether it
///                         streams K (stream-K), with their source; absent: gemm_tile_m x _n,
///                         its transpose and min x min, without split-K (workload/kernel_cost.hpp)
///   gemm_tile_half_intensity  with gemm_tiles: the operand intensity tm tn / (tm + tn) (MACs per
///                         element loaded per K step) at which a tile reaches half the rate per SM
///                         of an infinitely large one; smaller tiles reuse fewer operands
///   gemm_k_half           the K at which the K loop reaches half its asymptotic rate
///   gemm_efficiency       per dtype: the fraction of peak one SM sustains on a whole tile,
///                         derived from a measured large GEMM by dividing out the model's own
///                         tile, wave and K factors at the measured shape
///   gemm16_efficiency_prior  optional; present where no sustained 16-bit (BF16/FP16) GEMM
///                         was measured on the GPU and the rate is derived instead: the derived
///                         value. gemm_efficiency bf16 and fp16 are then fitted on published
///                         training runs (twin/validation_fit.hpp), and this is the value a fit
///                         uses when its training runs cannot determine them
///   power_clock           optional: the sustained SM clock of a compute-bound GPU under a board
///                         power limit, P = P_idle + (P_ref - P_idle) (f / f_ref)^alpha (dynamic
///                         power C V^2 f with the voltage rising with the clock: alpha = 3 when V
///                         is proportional to f), anchored where the GEMM rates were measured
///                         (P_ref, f_ref), up to the part's highest clock; what
///                         cluster.gpu_power_w scales compute rates with
///   hbm_achievable_GBps   STREAM-style bandwidth of element-wise kernels
///   memory_bound_efficiency  the fraction of that bandwidth the memory-bound kernels of a
///                         training framework reach (norms and their backward reductions,
///                         activations, casts, permutes, cross-entropy): fitted on published
///                         training runs (`clustertwin validate` refits it and reports the
///                         leave-one-family-out errors); optional, 1 (the STREAM rate) when absent
///   launch_overhead_us    per-kernel start-up cost of back-to-back kernels in one stream
///   nccl_channels         SMs one running NCCL collective occupies (one CTA per channel)
///   nccl_hbm_bytes_per_byte  HBM bytes a collective moves per byte it sends (reads the source,
///                         reads/writes the reduction or receive buffer)
///   flash_attention_2     the same for FlashAttention-2 (`training.attention: flash2`: stacks
///                         of 2023-24 such as PyTorch SDPA), flash_attention_1 for FlashAttention
///                         1 (`flash1`: early 2023 stacks), cudnn_attention for cuDNN's fused
///                         attention (`cudnn`: Transformer Engine's FusedAttention, which it
///                         prefers to FlashAttention on Hopper and later GPUs)
///   flash_attention       causal attention forward and backward TFLOP/s by head dimension and
///                         sequence length (FLOPs counted as the kernels' authors count them:
///                         forward 4 s^2 d per head and sequence, halved by the causal mask;
///                         backward 2.5 x forward)

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibrate/figure.hpp"

namespace twin::calibrate {

/// Measured attention kernel throughput on a (head dim x sequence length) grid.
struct AttentionTable {
  std::string implementation;  ///< e.g. "FlashAttention-2"
  std::string source;
  std::vector<double> head_dims;                            ///< ascending
  std::vector<double> seq_lens;                             ///< ascending
  std::vector<std::vector<double>> fwd_tflops, bwd_tflops;  ///< [head_dim][seq_len]

  /// Throughput at (head_dim, seq_len): linear in head dim and in log(seq len) between grid
  /// points, clamped at the head-dim edges and below the shortest length. Beyond the longest
  /// length each row follows R(s) = R_inf s / (s + s0), through its last two points: work grows
  /// as s^2 and the per-row overheads (softmax rescaling, the diagonal tiles of causal masking,
  /// epilogues) as s, so the rate approaches R_inf. A row that stops rising stays flat.
  [[nodiscard]] double tflops(bool forward, double head_dim, double seq_len) const;
};

/// A GPU's sustained SM clock against its board power limit (see power_clock above).
struct PowerClock {
  Figure reference_W;               ///< the limit the GEMM and attention rates were measured at
  Figure reference_clock_MHz;       ///< the sustained SM clock of a large GEMM at that limit
  Figure idle_W;                    ///< board power with nothing running
  Figure exponent;                  ///< alpha
  Figure max_clock_MHz;             ///< the part's highest SM clock
  Figure min_limit_W, max_limit_W;  ///< the range of limits the part accepts
  /// The sustained clock at `limit_W`, MHz; throws core::Error naming cluster.gpu_power_w
  /// outside [min_limit_W, max_limit_W].
  [[nodiscard]] double clock_MHz(double limit_W) const;
};

/// The tiles, split-K factors and stream-K of one architecture's GEMM library.
struct GemmTiles {
  std::vector<std::pair<double, double>> shapes;  ///< CTA tiles (M x N), each tried transposed
  std::vector<int> split_k;                       ///< K split factors besides 1
  bool stream_k = false;
  std::string source;
};

struct KernelProfile {
  bool present = false;  ///< false: the profile has no kernels section
  Figure sm_count, gemm_tile_m, gemm_tile_n, gemm_k_half;
  std::optional<GemmTiles> gemm_tiles;
  std::optional<PowerClock> power_clock;
  Figure gemm_tile_half_intensity{0.0, "none: no per-tile factor without gemm_tiles"};
  std::map<std::string, Figure> gemm_efficiency;  ///< by dtype
  std::optional<Figure> gemm16_efficiency_prior;  ///< derived 16-bit rate; absent when measured
  Figure hbm_achievable_GBps, launch_overhead_us, nccl_channels, nccl_hbm_bytes_per_byte;
  Figure memory_bound_efficiency{1.0,
                                 "absent from the profile: memory-bound kernels at the "
                                 "STREAM rate"};
  std::optional<AttentionTable> flash_attention;    ///< the GPU's current flash kernels
  std::optional<AttentionTable> flash_attention_2;  ///< FlashAttention-2 (2023-24 stacks)
  std::optional<AttentionTable> flash_attention_1;  ///< FlashAttention 1 (early 2023 stacks)
  std::optional<AttentionTable> cudnn_attention;    ///< cuDNN fused attention (TE on Hopper+)
};

/// A measured attention kernel a scenario can name (`training.attention`) and the profile table
/// holding its rates. `unfused` attention has no table and is not among them.
struct AttentionKernel {
  const char* name;         ///< the training.attention value
  const char* field;        ///< the table's key in the profile's kernels object
  const char* description;  ///< what the kernel is, for the schema and errors
  std::optional<AttentionTable> KernelProfile::*table;
};
/// Every measured attention kernel, the GPU's current flash kernels first.
[[nodiscard]] const std::vector<AttentionKernel>& attention_kernels();
/// The kernel called `name`, or nullptr.
[[nodiscard]] const AttentionKernel* find_attention_kernel(const std::string& name);
/// A value of `training.attention` and what it means.
struct AttentionChoice {
  std::string name, description;
};
/// Every value `training.attention` takes: auto, each measured kernel, unfused.
[[nodiscard]] const std::vector<AttentionChoice>& attention_choices();
/// Whether `name` is one of attention_choices().
[[nodiscard]] bool is_attention_choice(const std::string& name);
/// The kernel `name` runs on a GPU with these measurements: `auto` is Transformer Engine's choice
/// (cuDNN's fused attention where the profile measures it, else the GPU's flash kernels); any
/// other name is find_attention_kernel's. nullptr for an unknown name.
[[nodiscard]] const AttentionKernel* resolve_attention_kernel(const KernelProfile& k,
                                                              const std::string& name);

namespace detail {
/// Parses the `kernels` object (`json_text` is its JSON); throws core::Error naming
/// kernels.<field> and `source`.
KernelProfile parse_kernel_profile(const std::string& json_text, const std::string& source);
std::string kernel_profile_json(const KernelProfile& k);
}  // namespace detail

}  // namespace twin::calibrate
