#pragma once
/// Kernel cost models: the time of one GPU kernel from its shape and the hardware profile's
/// `kernels` section (every parameter there carries its source).
///
/// Every kernel: t = t_launch + max(t_compute, t_memory); the limiter is the largest of the three
/// terms (t_launch = kernels.launch_overhead_us, the measured start-up of back-to-back kernels).
///
/// GEMM (M x K) x (K x N), `batch` independent products, dtype d, as cuBLAS runs it: the library
/// holds kernels of several CTA tiles and may split K; its heuristic picks one, modelled as the
/// fastest of the profile's set (kernels.gemm_tiles: on Hopper the tiles cuBLAS 13 was seen
/// running on an H200, bench/gpu/gemm_kernel_choice.py; on Ampere cuBLAS's
/// ampere_bf16_s16816gemm tiles). For each tile (tm x tn), each also transposed, and each split
/// s of K (1 and kernels.gemm_tiles.split_k, the slices no shorter than 256):
///     tiles = batch ceil(M / tm) ceil(N / tn)           (tile quantization)
///     waves = ceil(s tiles / SMs)                        (wave quantization on the real SM count)
///     f_tile = (1 + i0 / I_ref) / (1 + i0 / I),  I = tm tn / (tm + tn)
///              (a tile's operand reuse: it loads tm + tn elements per K step for tm tn MACs,
///              so small tiles starve the tensor cores; i0 = gemm_tile_half_intensity, I_ref the
///              set's largest I, so f_tile = 1 on the large tiles eff_d was measured on)
///     t_compute = waves x 2 tm tn (K/s) / (peak_d / SMs x eff_d x f_tile x (K/s) / (K/s +
///     k_half_d)) split-K adds cuBLAS's reduction kernel (splitKreduce): a start-up and s fp32
///     partials read and the 16-bit output written, (4 s + 2) M N bytes at hbm_achievable.
///   Stream-K (where kernels.gemm_tiles.stream_k): the tiles' K iterations spread evenly over
///     the SMs, no wave quantization, each SM writing and reading back one fp32 partial tile.
///   Without kernels.gemm_tiles: {tile_m x tile_n, tile_n x tile_m, min x min}, f_tile = 1, no
///   split. The fastest candidate is taken; eff_d is
///   kernels.gemm_efficiency[d], derived from a measured large GEMM, or fitted on published runs
///   where the GPU has no sustained measurement in that dtype (H100 16-bit:
///   twin/validation_fit.hpp); and
///   k_half_d = k_half x 2 / bytes_d: the tile's K loop fills a pipeline of shared-memory stages
///   of a fixed size in bytes, so an FP8 stage holds twice the K of a 16-bit one (CUTLASS's
///   Hopper tiles: 128 x 256 x 64 in BF16, 128 x 256 x 128 in FP8). Against the H100 FP8 shapes
///   no efficiency was derived from (kernels README 3b), measured / modelled (with BF16's k_half):
///   2048^3 1011 / 1016 (1057); 4096^3 1217 / 1235 (1258); 8192^3 1290 / 1297 (1303);
///   1024 x 2145 x 1024 411 / 428 (460); 1024^3 274 / 330 (350).
///   t_memory = (M K + K N) bytes_d + M N 2 bytes (bf16 output) over hbm_achievable.
///   Split into c chunks along M on SMs - r SMs (communication-overlapped GEMMs):
///   t = c (t_launch + max(t_compute(M / c; SMs - r), t_memory(M / c))).
///   Measured on an H200 (CUDA graphs, bench/gpu/gemm_graph_times.py): a 2048-row GEMM costs
///   1.10-1.40x in eight 256-row chunks; the model gives 1.05-2.0x on the same five shapes.
///
/// Flash attention (causal): executed FLOPs per head and sequence 2 s_q s_k (d + d_v) forward
///   (4 s_q s_k d when value heads are as wide as query/key heads; halved by the mask), backward
///   2.5 x forward; t = FLOPs / measured TFLOP/s at (max(d, d_v), s) from the profile's table
///   (forward and backward separately; head widths beyond the table take its widest column).
///   Sliding window w < s (each query sees its w latest keys): the band has s w - w^2 / 2 of the
///   causal triangle's s^2 / 2 query-key pairs, and runs at the table's rate for length w: each
///   block of B queries touches about w / B key blocks with a partly masked block at each edge,
///   the useful fraction of causal attention over w tokens (a block-sparse kernel skips the
///   blocks outside the band). Below the table's shortest length the rate is that length's: a
///   band narrower than that is costed faster than it runs.
///
/// Memory-bound (element-wise, norms, softmax, cross-entropy, optimizer): t_memory = bytes /
///   (hbm_achievable x memory_bound_efficiency); no compute term. hbm_achievable is a STREAM
///   kernel's rate; memory_bound_efficiency is the fraction of it the kernels of training
///   frameworks reach, fitted on published runs (one value for every GPU kind; see
///   twin/validation_fit.hpp).
///
/// Streaming conversion (a dtype cast of a whole tensor: one read and one write stream, no
///   reduction, no reuse): t_memory = bytes / hbm_achievable, the STREAM copy it is. Only
///   kernels that are exactly that use it (autocast's fp32 -> 16-bit weight casts and their
///   gradients' casts back, and training.grad_accumulation's casts and adds of whole gradient
///   tensors, STREAM's own add); the fitted efficiency above stands for the kernels that are
///   not.

#include <string>
#include <utility>
#include <vector>

#include "calibrate/profile.hpp"

namespace twin::workload {

enum class Limiter { compute, memory, launch };
const char* to_string(Limiter l);

/// One kernel launch: what it is, what it moves and computes, and how long it takes.
struct Kernel {
  std::string name;   ///< e.g. "fc1 wgrad"
  std::string shape;  ///< e.g. "8192x7168x8192" (M x N x K) or "2.1e+08 B"
  double flops = 0;   ///< executed
  double bytes = 0;   ///< HBM traffic
  double time_s = 0;
  Limiter limiter = Limiter::launch;
  bool tensor_core = false;  ///< GEMM or attention (slowed by SMs taken); else HBM-bound
  /// Part of the attention core: a flash kernel, or unfused attention's score GEMMs and the
  /// passes over the s x s scores (scale, mask, softmax, dropout).
  bool attention = false;
  /// What autograd keeps of a forward kernel for backward, which decides where an
  /// early-stopping recompute ends (step_program.hpp): its outputs (an activation, attention's
  /// output and log-sum-exp: known once it has run; Transformer Engine's FP8 GEMMs, autograd
  /// Functions that save after computing), its inputs only (a 16-bit GEMM's operands, saved by
  /// PyTorch's mm before it runs), or nothing (a residual add).
  enum class Saves { outputs, inputs, nothing };
  Saves saves = Saves::outputs;
};

/// Costs kernels on one GPU type in one GEMM dtype. Throws core::Error when the profile has no
/// kernels section or no GEMM efficiency for the dtype.
class KernelCoster {
 public:
  /// `attention`: auto (Transformer Engine's choice: cudnn where the profile measures it, else
  /// flash), one of calibrate::attention_kernels() or unfused; a kind the profile has no table
  /// for, or an unknown one, throws core::Error naming training.attention.
  /// `power_W` > 0: the GPU's board power limit; GEMM and attention rates scale with the
  /// sustained SM clock there against the clock they were measured at (kernels.power_clock; a
  /// profile without one, or a limit outside the part's range, throws naming
  /// cluster.gpu_power_w). Memory-bound kernels keep their rate: HBM's clock does not follow.
  KernelCoster(const calibrate::Profile& profile, const std::string& dtype,
               const std::string& attention = "auto", double power_W = 0);

  /// (m x k) x (k x n), `batch` times; the operand dtype is the coster's.
  /// `bf16`: run in BF16 whatever the coster's dtype (FP8 recipes keep the output layer in BF16).
  [[nodiscard]] Kernel gemm(const std::string& name, double m, double n, double k, double batch = 1,
                            bool bf16 = false) const;
  /// The same GEMM split along M into `chunks` launches that run one after another on the SMs
  /// left after `reserved_sms` (Transformer Engine's communication-overlapped GEMMs: each chunk
  /// is quantized into tiles and waves on its own and pays its own start-up).
  [[nodiscard]] Kernel split_gemm(const std::string& name, double m, double n, double k, int chunks,
                                  double reserved_sms, bool bf16 = false) const;
  /// Flash attention over `batch_heads` (sequences x local query heads) of s_q queries against
  /// s_k keys; `table_seq` is the sequence length to look the measured rate up at.
  /// `v_head_dim` (0: head_dim) is the width of a value head (MLA: 128 against 192).
  /// `window` > 0: causal sliding-window attention over s_q = s_k tokens, each query seeing its
  /// `window` latest keys (a window of s_k or more is the full causal square).
  [[nodiscard]] Kernel flash_attention(const std::string& name, bool forward, double batch_heads,
                                       double s_q, double s_k, double head_dim, bool causal,
                                       double table_seq, double v_head_dim = 0,
                                       double window = 0) const;
  /// A memory-bound kernel moving `bytes` through HBM.
  [[nodiscard]] Kernel memory(const std::string& name, double bytes) const;
  /// The same bytes in `launches` equal kernels run one after another (one per tensor of a
  /// group, each paying its own start-up): launches x (t_launch + bytes / launches / rate).
  [[nodiscard]] Kernel memory(const std::string& name, double bytes, int launches) const;
  /// A dtype conversion streaming `bytes` (read + write) through HBM at the STREAM rate.
  [[nodiscard]] Kernel stream(const std::string& name, double bytes) const;
  /// The same in `launches` equal kernels run one after another (one per tensor).
  [[nodiscard]] Kernel stream(const std::string& name, double bytes, int launches) const;

  [[nodiscard]] double launch_s() const { return launch_s_; }
  /// Sustained SM clock at the power limit over the clock the rates were measured at.
  [[nodiscard]] double clock_ratio() const { return clock_ratio_; }
  /// The STREAM rate (GEMM and attention rooflines, the HBM traffic NCCL adds).
  [[nodiscard]] double hbm_Bps() const { return hbm_Bps_; }
  /// The rate of memory-bound kernels: hbm_Bps x memory_bound_efficiency.
  [[nodiscard]] double memory_kernel_Bps() const { return memory_Bps_; }
  [[nodiscard]] double sm_count() const { return sms_; }
  [[nodiscard]] bool fp8() const { return operand_bytes_ == 1.0; }
  [[nodiscard]] bool has_flash() const { return flash_ != nullptr; }
  /// The attention kernel the step runs: `auto` resolved (cudnn, flash, ...) or unfused.
  [[nodiscard]] const std::string& attention_kernel() const { return attention_; }
  [[nodiscard]] const calibrate::Profile& profile() const { return profile_; }

 private:
  Kernel finish(Kernel k, double compute_s, double memory_s) const;
  /// `bytes` moved by `launches` equal memory-bound kernels of `memory_s_each` each.
  [[nodiscard]] Kernel repeated(const std::string& name, double bytes, int launches,
                                double memory_s_each) const;
  /// When autograd saves a GEMM's operands: before it runs (PyTorch's mm) or after (FP8).
  [[nodiscard]] Kernel::Saves saves_of_gemm(bool bf16) const;
  /// A GEMM's compute term on `sms` SMs, and the time of the kernel that follows it (split-K's
  /// reduction; 0 without split).
  struct GemmTime {
    double compute_s = 0, after_s = 0;
  };
  [[nodiscard]] GemmTime gemm_compute_s(double m, double n, double k, double batch, bool bf16,
                                        double sms) const;
  const calibrate::Profile& profile_;
  const calibrate::AttentionTable* flash_ = nullptr;
  std::string attention_;
  double peak16_ = 0, eff16_ = 0;  // BF16, for GEMMs an FP8 recipe keeps in BF16
  double peak_ = 0, eff_ = 0, sms_ = 0, tile_m_ = 0, tile_n_ = 0, k_half_ = 0;
  std::vector<std::pair<double, double>> tiles_;  ///< every candidate, transposes included
  std::vector<int> split_k_;                      ///< 1 and the library's split factors
  bool stream_k_ = false;
  double half_intensity_ = 0, ref_intensity_ = 1;
  double operand_bytes_ = 2, hbm_Bps_ = 0, memory_Bps_ = 0, launch_s_ = 0, clock_ratio_ = 1;
};

}  // namespace twin::workload
