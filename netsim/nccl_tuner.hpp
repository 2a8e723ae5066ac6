#pragma once
/// NCCL's tuner: the (algorithm, protocol) the library itself runs, chosen by its own tables, and
/// the per-channel bandwidth ceilings those tables encode.
///
/// NCCL does not pick the fastest (algorithm, protocol) on the wire; it picks the minimum of its
/// own model (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime; the release is the
/// profile's nccl.version):
///   time(a, p) = latency(a, p) x [1.4 ring Simple multi-node all-reduce once every rank of every
///                channel gets >= 64 B] + bytes / (1000 x bw(a, p) x treeCorrection(p, size))
/// where latency is netsim/nccl_model.hpp's table and bw is an algorithm bandwidth built from the
/// topology search's graph: `channels` rings (or trees) of `bw` GB/s each,
///   busBw = channels x bw, then per cell:
///     ring LL      min(llMaxBw, busBw / 4)
///     ring LL128   min(busBw x 0.92 (0.7 with one GPU per node), channels x perChMaxRingLL128)
///     tree         min(busBw x 0.92, channels x perChMaxTree), then
///                  LL: min(/3.8, llMaxBw); LL128: min(x 7/9 on one node, 120/128 across,
///                  channels x perChMaxTreeLL128)
///   ring algorithm bandwidth = busBw x n / steps (2(n-1) all-reduce, n-1 gather/scatter);
///   tree = busBw / 2. The per-channel ceilings are indexed by 1, 2 and more nodes.
/// The graph (NCCL's search, src/graph/search.cc, restated in closed form rather than searched):
///   across nodes: bw = the highest search step <= min(NIC rate, PCIe to the NIC), every NIC
///     near the group's GPUs carrying floor(NIC rate / bw) channels, at most max_channels;
///   within a node: bw = the step whose whole channels fill the most of the GPU's NVLink
///     bandwidth (ties: the higher step);
///   then ncclTopoDupChannels doubles the channels (halving bw, at most max_channels) when
///     bw >= dup_min and, where the architecture has the rule, not (bw < dup_keep_below and
///     channels > 4).
///   E.g. H100 nodes with eight 400 Gb/s NICs: 8 channels of 48 GB/s (busBw 384) across nodes,
///   12 of 30 (360 of NVLink's 370.8) within one; A100 with eight 200 Gb/s NICs: 8 of 24 (192).
/// NVLS, NVLS-Tree and CollNet cells are not restated (their graph search is not): their time
/// in the choice is the simulated one, which is what NCCL's cells for them aim at. The tuner
/// applies to the ops NCCL tunes (all-reduce, all-gather, reduce-scatter, broadcast); all-to-all
/// and send/recv are NCCL's grouped point-to-point, which no tuner chooses.
/// Assumptions: an x86 Intel host (NCCL's LL ceilings and network overhead differ on AMD:
/// the profile's ll_max_busbw_GBps and net_overhead_us say which), LL128 enabled (NVLink within
/// nodes, GPUs on the NIC's PCIe switch), the tree graph as the ring's (the balanced-tree pattern
/// found: no x0.85).

#include <optional>
#include <vector>

#include "calibrate/profile.hpp"
#include "netsim/nccl_model.hpp"
#include "netsim/vocabulary.hpp"

namespace twin::netsim {

/// One topology-search graph: `channels` of `bw_GBps` each.
struct NcclGraph {
  int channels = 0;
  double bw_GBps = 0;
};

/// What NCCL sees of the hardware a communicator spans.
struct NcclLinks {
  double nic_GBps = 0;     ///< one NIC's line rate, GB/s (Gb/s / 8: NCCL's view)
  int nics_per_node = 0;   ///< NICs near the group's GPUs on one node
  double nvlink_GBps = 0;  ///< 0: the profile's NCCL view of NVLink
};

class NcclTuner {
 public:
  /// Throws core::Error when the profile's nccl section has no tuner figures (or no tables).
  explicit NcclTuner(const calibrate::Profile& profile);

  /// The ring/tree graph NCCL's search finds for a group of this scale on these links.
  [[nodiscard]] NcclGraph graph(const GroupScale& scale, const NcclLinks& links) const;
  /// NCCL's algorithm bandwidth for the cell, GB/s; nullopt where NCCL's table is not restated
  /// here (NVLS, NVLS-Tree, CollNet, ours) or the cell does not exist.
  [[nodiscard]] std::optional<double> bandwidth_GBps(CollectiveOp op, Algorithm a, Protocol p,
                                                     const GroupScale& scale,
                                                     const NcclGraph& graph) const;
  /// NCCL's predicted time of the cell, us (nullopt as bandwidth_GBps).
  [[nodiscard]] std::optional<double> time_us(CollectiveOp op, Algorithm a, Protocol p,
                                              const GroupScale& scale, const NcclGraph& graph,
                                              double bytes) const;
  /// The ceiling NCCL's per-channel tables put on a cell's bus bandwidth (nccl-tests busbw),
  /// GB/s; infinity where none applies.
  [[nodiscard]] double busbw_ceiling_GBps(CollectiveOp op, Algorithm a, Protocol p,
                                          const GroupScale& scale, const NcclGraph& graph) const;
  /// Whether NCCL's tuner chooses the algorithm of this op (else it is point-to-point).
  [[nodiscard]] static bool tunes(CollectiveOp op);
  /// Whether NCCL can run the algorithm at all (ours are not NCCL's).
  [[nodiscard]] static bool nccls(Algorithm a);

 private:
  [[nodiscard]] double per_channel_max(Algorithm a, Protocol p, int nodes) const;
  [[nodiscard]] double ll_max_GBps(int nodes) const;
  calibrate::NcclTunerFigures figures_;
  NcclModel model_;
  std::vector<double> ll_max_GBps_;
};

}  // namespace twin::netsim
