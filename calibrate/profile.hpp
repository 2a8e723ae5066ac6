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

/// A collective's measured correction for one algorithm and protocol at one scope.
///
/// `efficiency` is the achieved fraction of the link-limited bandwidth (NVLink protocol
/// overhead, NIC payload efficiency, pipeline losses). `latency_us`, when the curve was fitted
/// (source non-empty, `nodes` > 0), is the whole latency measured at that scale; the simulator
/// carries it to another scale with NCCL's step model (netsim/nccl_model.hpp): the latency there
/// is latency_us + L_model(there) - L_model(here). Unfitted curves carry no latency: NCCL's
/// model gives it.
struct CollectiveCurve {
  std::string op;         ///< all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast
  std::string algorithm;  ///< ring, tree, nvls, nvls_tree, sharp, pat, pairwise, pxn, direct ...
  std::string protocol = "simple";  ///< ll, ll128 or simple
  std::string scope;                ///< intra_node or inter_node
  Figure latency_us;                ///< measured latency at `nodes` x `gpus_per_node` (optional)
  Figure efficiency;                ///< achieved / link-limited bus bandwidth
  Figure bus_bandwidth_GBps;        ///< saturation bus bandwidth where measured (0 if not)
  double min_bytes = 0, max_bytes = 0;  ///< size range the curve was fitted on (0: any)
  int nodes = 0, gpus_per_node = 0;     ///< scale it was measured at (0: not measured)
  std::optional<FitQuality> fit;
};

/// The figures NCCL's tuner chooses an algorithm and protocol with, beyond the latency tables:
/// its topology search's speed steps and its view of the node's links (src/graph/search.cc,
/// topo.cc), and the per-channel bandwidth ceilings of ncclTopoTuneModel (src/graph/tuning.cc)
/// for the GPU's architecture (netsim/nccl_tuner.hpp says how they combine).
struct NcclTunerFigures {
  std::string source;
  std::vector<double> speeds_intra_GBps;  ///< search steps within a node, highest first
  std::vector<double> speeds_inter_GBps;  ///< search steps across nodes, highest first
  double nvlink_GBps = 0;                 ///< NCCL's NVLink bandwidth of one GPU (links x per link)
  double pcie_GBps = 0;                   ///< NCCL's PCIe bandwidth of a GPU's path to its NIC
  int max_channels = 16;                  ///< channels the search may find (MAXCHANNELS / 2)
  double dup_min_GBps = 25;  ///< ncclTopoDupChannels: graphs below this per-channel rate stay
  /// ... and, on this architecture, graphs below this rate with more than 4 channels stay
  /// (0: no such rule).
  double dup_keep_below_GBps = 0;
  /// Per-channel ceilings by "algorithm.protocol" or "algorithm" (every protocol) at 1, 2 and
  /// more nodes: perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws.
  std::map<std::string, std::vector<double>> per_channel_max_GBps;
};

/// NCCL's own cost model as tables (src/graph/tuning.cc), keyed by names as in the JSON; netsim
/// turns them into enum-indexed arrays (netsim/nccl_model.hpp) and rejects unknown names there.
/// A cell that is absent means the protocol is not available for that algorithm.
struct NcclFigures {
  std::string version;  ///< the NCCL release the constants come from
  std::string source;
  using ByProtocol = std::map<std::string, double>;
  using ByAlgorithm = std::map<std::string, ByProtocol>;
  ByAlgorithm base_latency_us;  ///< [algorithm][protocol]
  std::map<std::string, ByAlgorithm>
      hop_latency_us;                     ///< [nvlink|pcie|network][algorithm][protocol]
  ByAlgorithm bandwidth_factor;           ///< NCCL's per-algorithm/protocol refinements
  ByProtocol payload_efficiency;          ///< data bytes per byte on the wire
  std::vector<double> ll_max_busbw_GBps;  ///< LL cap at 1, 2, >2 nodes
  std::map<std::string, std::vector<double>> tree_size_factor;  ///< [protocol][log2(bytes/64)]
  double net_overhead_us = 0;      ///< per network step CPU proxy overhead
  double ring_plateau_factor = 1;  ///< NCCL's multi-node ring Simple latency multiplier
  double channels = 0;             ///< collective channels NCCL opens
  double p2p_channel_GBps = 0;     ///< one p2p channel's network throughput (0: not limited)
  double p2p_channels = 0;         ///< channels NCCL spreads p2p operations over
  std::map<std::string, std::string> fitted;  ///< "network.ring.simple" -> provenance of a fit
  /// NCCL's tuner (choice by NCCL's own tables); absent: "auto" takes the minimum simulated time.
  std::optional<NcclTunerFigures> tuner;
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
  std::optional<NcclFigures> nccl;  ///< NCCL's cost model; absent: curves alone (legacy)

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
  /// The same for one protocol and scale: the protocol's own curve, else the Simple curve (the
  /// path efficiency every protocol shares), else null. Curves fitted at a scale win over
  /// unfitted ones; among fitted curves the one measured nearest `nodes` (0: any), then the one
  /// whose size range is nearest.
  [[nodiscard]] const CollectiveCurve* find_curve(const std::string& op,
                                                  const std::string& algorithm,
                                                  const std::string& protocol,
                                                  const std::string& scope, double size_bytes,
                                                  int nodes) const;
  /// Replaces the curves of the (op, algorithm, protocol, scope) of `curves` that are unfitted
  /// or fitted at the same scale with `curves`.
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
