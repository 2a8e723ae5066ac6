#pragma once
/// NCCL's cost model: latency per (algorithm, protocol) from its steps and hops, and the
/// bandwidth each protocol keeps of what the links allow.
///
/// The tables are NCCL's own (src/graph/tuning.cc, read to understand; the numbers and the
/// NCCL release they come from live in the profile's "nccl" section, fitted cells say so):
///   base[a][p]          fixed cost of a call (kernel launch, setup), us
///   hop[h][a][p]        latency of one step over a hop of kind h (NVLink, PCIe, network), us
/// With n ranks on N nodes (g = n/N per node), L = base + (steps and hops of the algorithm):
///   ring       all-reduce 2(n-1) steps of which 2N cross the network (N > 1); all-gather and
///              reduce-scatter n-1 steps, N-1 across; each intra-node step costs
///              max(hop_nvlink, net_overhead) when N > 1 (the CPU proxy posts every step,
///              x3 for Simple), an inter-node step hop_network. Broadcast: n steps.
///              Multi-node all-reduce with Simple: x ring_plateau_factor once the buffer gives
///              every rank of every channel at least 64 B (NCCL's "plateau effect of ring").
///   tree       2 ((g-1) hop_nvlink + log2(N) hop_network)      (up the tree and back down)
///   (across nodes an LL step within a node costs 1.8 hop_nvlink, as NCCL's table has it)
///   nvls       hop_nvlink (+ hop_network across nodes)           (no base: one kernel)
///   nvls_tree  base + hop_nvlink + 2 log2(N) hop_network
///   sharp      base + 2 (min(1, g-1) hop_nvlink + 0.4 (g-1)) + hop_network  (CollNet Direct)
///   pat        base + ceil(log2 n) hops (Parallel Aggregated Trees: log steps, one GPU/node)
///   ours       hierarchical: the sum of its three ring phases; pairwise, pxn, direct (NCCL's
///              grouped send/recv): base + one hop, with the Ring Simple cells.
/// Bandwidth: the flow engine gives the link-limited transfer time T_flow of the algorithm's
/// traffic (with contention); the protocol keeps a fraction of it:
///   T = T_flow / (path efficiency x payload_efficiency[p] x bandwidth_factor[a][p] x f_tree)
/// payload_efficiency is the protocol's format (LL 4 B of data per 8 B line: 0.5; LL128 120 of
/// 128 B: 0.9375; Simple 1); bandwidth_factor is the rest of NCCL's refinement per algorithm
/// and protocol (e.g. Ring LL runs at 1/4 of Simple in NCCL's model: 0.5 payload x 0.5); f_tree
/// NCCL's size correction for trees (powers of two from 64 B). LL's bus bandwidth is capped
/// at ll_max_busbw (1, 2, >2 nodes). Send/recv across nodes is capped at
/// p2p_channel_GBps x the channels NCCL gives one peer: max(1, p2p_channels x 4 / n) rounded
/// down to a power of two (NCCL halves the channels per peer until channels x ranks fits
/// 4 x its p2p channels).

#include <array>
#include <limits>
#include <string>

#include "calibrate/profile.hpp"
#include "netsim/vocabulary.hpp"

namespace twin::netsim {

/// A group's shape as the cost model sees it.
struct GroupScale {
  int ranks = 0;
  int nodes = 0;
  bool nvlink = true;  ///< GPUs of a node talk over NVLink (else PCIe)
};

class NcclModel {
 public:
  /// Builds the tables from the profile's "nccl" section. Throws core::Error naming the cell
  /// (e.g. "nccl.hop_latency_us.network.rign") for a name outside netsim's vocabulary, or when
  /// the profile has no "nccl" section.
  explicit NcclModel(const calibrate::Profile& profile);

  /// The profile defines this protocol for this algorithm.
  [[nodiscard]] bool available(Algorithm algorithm, Protocol protocol) const;
  /// Latency of one call, us.
  [[nodiscard]] double latency_us(CollectiveOp op, Algorithm algorithm, Protocol protocol,
                                  const GroupScale& scale, double bytes) const;
  /// Fraction of the link-limited bandwidth the protocol keeps (before the path efficiency).
  [[nodiscard]] double bandwidth_fraction(Algorithm algorithm, Protocol protocol,
                                          double bytes) const;
  /// Bus-bandwidth cap, GB/s (infinity when none applies).
  [[nodiscard]] double max_busbw_GBps(CollectiveOp op, Algorithm algorithm, Protocol protocol,
                                      const GroupScale& scale) const;
  /// NCCL's size correction of a tree's bandwidth (treeCorrectionFactor: powers of two of
  /// bytes / 64 B), 1 past the table.
  [[nodiscard]] double tree_correction(Protocol protocol, double bytes) const;
  [[nodiscard]] double payload_efficiency(Protocol protocol) const {
    return payload_[static_cast<std::size_t>(protocol)];
  }
  [[nodiscard]] const std::string& version() const { return version_; }

 private:
  using Table = std::array<std::array<double, kProtocols>, kAlgorithms>;
  [[nodiscard]] double base(Algorithm a, Protocol p) const;
  [[nodiscard]] double hop(HopKind h, Algorithm a, Protocol p) const;
  [[nodiscard]] double ring_latency_us(CollectiveOp op, Protocol p, const GroupScale& s,
                                       double bytes) const;

  static constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();
  std::string version_;
  Table base_{}, factor_{};
  std::array<Table, kHopKinds> hop_{};
  std::array<double, kProtocols> payload_{};
  std::array<std::vector<double>, kProtocols> tree_size_factor_;
  std::array<double, 3> ll_max_busbw_GBps_{};
  double net_overhead_us_ = 0, ring_plateau_ = 1, channels_ = 1;
  double p2p_channel_GBps_ = 0, p2p_channels_ = 0;
};

}  // namespace twin::netsim
