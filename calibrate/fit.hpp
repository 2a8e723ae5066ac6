#pragma once
/// Fitting latency-bandwidth curves to collective measurements (Eigen least squares).
///
/// Model (Hockney): t(S) = latency + S_bus / B, with S_bus = S * bus_factor(op, n). The bus
/// bandwidth it predicts, busbw(S) = S_bus / t(S), rises with size and saturates at B: the
/// latency term dominates small messages, the bandwidth term large ones.
///
/// The fit minimizes relative residuals, sum(((latency + S_bus_i / B) - t_i) / t_i)^2 — a
/// weighted linear least-squares problem in (latency, 1/B) — so a 64 KiB point counts as much
/// as a 16 GiB one. A negative latency is refitted with latency = 0.
///
/// NCCL switches algorithm or protocol with size (LL -> LL128 -> Simple, ring -> NVLS), which
/// changes both latency and bandwidth. fit_segments() also tries every split into two size
/// ranges (at least 3 points each) and keeps two segments when that at least halves the
/// relative residual sum of squares.

#include <vector>

#include "calibrate/profile.hpp"

namespace twin::calibrate {

struct SizePoint {
  double size_bytes = 0;
  double time_us = 0;
};

struct HockneyFit {
  double latency_us = 0;
  double bus_bandwidth_GBps = 0;
  double min_bytes = 0, max_bytes = 0;
  double weighted_ssr = 0;  ///< sum of squared relative residuals
  FitQuality quality;

  /// Predicted time for a message of `size_bytes`.
  [[nodiscard]] double time_us(double size_bytes, double bus_factor) const;
};

/// Fits one segment; needs at least 2 points with positive size and time. Throws core::Error.
HockneyFit fit_hockney(const std::vector<SizePoint>& points, double bus_factor);

/// One or two segments, ordered by size.
std::vector<HockneyFit> fit_segments(const std::vector<SizePoint>& points, double bus_factor);

/// Link-limited bus bandwidth (GB/s, at line rate) of an algorithm at a scale: the bound the
/// measured curve's efficiency is taken against.
///  ring/tree all-reduce, all-gather, reduce-scatter, broadcast: intra-node, each GPU's NVLink;
///    across nodes, min(NVLink, NICs per node x NIC rate) — one ring channel per NIC.
///  nvls all-reduce (in-NVSwitch reduction): each GPU moves about S (n+1)/n each way, so
///    algbw <= NVLink * n/(n+1) and busbw <= that * 2(n-1)/n.
///  sharp/nvls_tree all-reduce across nodes: each NIC carries S/G each way instead of the
///    ring's 2(N-1)/N * S/G, so busbw <= G * NIC * 2(N-1)/N (capped by NVLink * 2(N-1)/N).
///  alltoall: intra-node NVLink; across nodes each GPU's own NIC carries (N-G)/N of its data.
///  sendrecv: NVLink intra-node, one NIC across nodes.
/// `nics_per_node` 0 means one NIC per GPU.
double link_limited_busbw_GBps(const std::string& op, const std::string& algorithm, int nodes,
                               int gpus_per_node, const Profile& profile, int nics_per_node = 0);

}  // namespace twin::calibrate
