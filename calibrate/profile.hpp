#pragma once
/// Hardware profiles: every hardware figure the simulator uses, each with its provenance.
///
/// A profile is a versioned JSON document. Each number is a Figure {value, source}: the source
/// says whether it is a datasheet peak, a figure measured by someone else (and where), a value
/// fitted from measurements (with the fit's quality), or a stated assumption. The simulator
/// never hard-codes hardware; it asks the profile.
///
/// Compute: peak tensor throughput per dtype; achievable GEMM throughput follows
///   eff(M, N, K) = gemm_peak_efficiency * q(M) q(N) q(K) * s(M) s(N) s(K)
/// where q(d) = d / (ceil(d / tile) * tile) is tile quantization (work padded to whole tiles)
/// and s(d) = d / (d + gemm_half_dim) is the ramp of small dimensions (too few tiles or too
/// short a K loop to hide latency). Memory-bound operators run at hbm_GBps * hbm_efficiency.
///
/// Communication: NVLink and NIC peak bandwidth and latency, plus per-collective curves
/// (op, algorithm, scope) in the Hockney form t(S) = latency + S_bus / bus_bandwidth, where
/// S_bus = S * (bus factor of the op). `efficiency` is the achieved bus bandwidth divided by
/// the link-limited bound for that algorithm at that scale, which is what carries a curve
/// measured at one scale to another.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibrate/figure.hpp"
#include "calibrate/kernel_profile.hpp"

namespace twin::calibrate {

/// Quality of a fitted curve.
struct FitQuality {
  double r2 = 0.0;                    ///< on log(time)
  double median_abs_error_pct = 0.0;  ///< on bus bandwidth, in-sample
  double max_abs_error_pct = 0.0;
  double loo_median_abs_error_pct = 0.0;  ///< leave-one-size-out prediction error
  int points = 0;
};

/// A collective's latency-bandwidth curve for one algorithm at one scope.
struct CollectiveCurve {
  std::string op;         ///< all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast
  std::string algorithm;  ///< ring, tree, nvls, sharp, pairwise, pxn, direct ...
  std::string scope;      ///< intra_node or inter_node
  Figure latency_us;      ///< fixed cost per call
  Figure efficiency;      ///< achieved / link-limited bus bandwidth
  Figure bus_bandwidth_GBps;            ///< saturation bus bandwidth where measured (0 if not)
  double min_bytes = 0, max_bytes = 0;  ///< size range the curve was fitted on (0: any)
  int nodes = 0, gpus_per_node = 0;     ///< scale it was measured at (0: not measured)
  std::optional<FitQuality> fit;
};

struct Profile {
  static constexpr int kVersion = 1;
  int version = kVersion;
  std::string name;
  std::string description;
  std::string gpu_model;
  std::map<std::string, Figure> peak_tflops;  ///< by dtype: bf16, fp16, fp8, tf32, fp32
  Figure hbm_GB, hbm_GBps, hbm_efficiency;
  Figure gemm_peak_efficiency, gemm_tile, gemm_half_dim;
  Figure nvlink_GBps, nvlink_latency_us;            ///< per GPU per direction
  Figure nic_gbps, nic_efficiency, nic_latency_us;  ///< line rate, payload fraction achieved
  Figure overlap_compute_slowdown;                  ///< fraction compute slows while comm overlaps
  std::vector<CollectiveCurve> collectives;
  /// Kernel cost model figures (SMs, GEMM tiles, attention, HBM, launch, NCCL footprint).
  KernelProfile kernels;

  /// Achievable dense GEMM throughput fraction for an (M x K) x (K x N) product.
  [[nodiscard]] double gemm_efficiency(double m, double n, double k) const;
  /// Peak tensor throughput for a dtype, in FLOP/s; throws core::Error for an unknown dtype.
  [[nodiscard]] double peak_flops(const std::string& dtype) const;
  /// NIC payload bandwidth in bytes per second (line rate x payload efficiency).
  [[nodiscard]] double nic_payload_Bps() const;
  /// The curve for (op, algorithm, scope) that covers `size_bytes` — a fit may have split one
  /// algorithm's sizes into segments (protocol or channel-count switches) — or, outside every
  /// fitted range, the nearest one. Null if there is no curve for the key.
  [[nodiscard]] const CollectiveCurve* find_curve(const std::string& op,
                                                  const std::string& algorithm,
                                                  const std::string& scope,
                                                  double size_bytes = 0) const;
  /// Replaces every curve of the (op, algorithm, scope) of `curves` with `curves`.
  void replace_curves(const std::vector<CollectiveCurve>& curves);
};

/// Names of the profiles shipped in the binary (profiles/*.json).
std::vector<std::string> shipped_profile_names();
/// A shipped profile by name, or a profile file by path (anything with '/' or ending ".json").
/// Throws core::Error naming the file and field on any problem.
Profile load_profile(const std::string& name_or_path);
Profile parse_profile(const std::string& json_text, const std::string& source);
std::string to_json(const Profile& profile);

}  // namespace twin::calibrate
