// NCCL's tuner restated: its graph in closed form, its bandwidth table for ring and tree, its
// predicted time, and the per-channel ceilings it encodes (the header states the equations).
#include "netsim/nccl_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.hpp"

namespace twin::netsim {
namespace {

/// 0, 1, 2 for 1, 2 and more nodes: the index of NCCL's per-node-count tables.
std::size_t node_index(int nodes) {
  return static_cast<std::size_t>(std::clamp(nodes, 1, 3) - 1);
}

/// Steps of an op as NCCL's ring counts them (its ratio n / steps turns bus into algorithm
/// bandwidth).
int ring_steps(CollectiveOp op, int ranks) {
  switch (op) {
    case CollectiveOp::all_reduce:
      return 2 * (ranks - 1);
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
      return ranks - 1;
    default:
      return ranks;
  }
}

}  // namespace

namespace {

const calibrate::NcclTunerFigures& tuner_figures(const calibrate::Profile& profile) {
  if (!profile.nccl || !profile.nccl->tuner)
    throw core::Error("nccl.tuner", profile.name,
                      "the profile has no NCCL tuner figures (search steps, link view, "
                      "per-channel ceilings)");
  return *profile.nccl->tuner;
}

}  // namespace

NcclTuner::NcclTuner(const calibrate::Profile& profile)
    : figures_(tuner_figures(profile)),
      model_(profile),
      ll_max_GBps_(profile.nccl->ll_max_busbw_GBps) {}

bool NcclTuner::tunes(CollectiveOp op) {
  return op == CollectiveOp::all_reduce || op == CollectiveOp::all_gather ||
         op == CollectiveOp::reduce_scatter || op == CollectiveOp::broadcast;
}

bool NcclTuner::nccls(Algorithm a) {
  switch (a) {
    case Algorithm::hierarchical:
    case Algorithm::pairwise:
    case Algorithm::pxn:
    case Algorithm::direct:
      return false;
    default:
      return true;
  }
}

NcclGraph NcclTuner::graph(const GroupScale& scale, const NcclLinks& links) const {
  const calibrate::NcclTunerFigures& f = figures_;
  NcclGraph g;
  if (scale.nodes > 1) {
    // Each channel leaves and enters every node through one NIC at bw: the highest step the
    // NIC and the PCIe path to it carry; a NIC carries as many whole channels as fit.
    const double max_bw = std::min(links.nic_GBps, f.pcie_GBps);
    double bw = f.speeds_inter_GBps.back();
    for (double s : f.speeds_inter_GBps)
      if (s <= max_bw) {
        bw = s;
        break;
      }
    const int per_nic = std::max(1, static_cast<int>(std::floor(links.nic_GBps / bw)));
    g = {std::clamp(std::max(1, links.nics_per_node) * per_nic, 1, f.max_channels), bw};
  } else {
    const double nvlink = links.nvlink_GBps > 0 ? links.nvlink_GBps : f.nvlink_GBps;
    for (double s : f.speeds_intra_GBps) {
      const int channels =
          std::min(f.max_channels, static_cast<int>(std::floor(nvlink / s + 1e-9)));
      if (channels >= 1 && channels * s > g.channels * g.bw_GBps + 1e-9) g = {channels, s};
    }
    if (g.channels == 0) g = {1, f.speeds_intra_GBps.back()};
  }
  // ncclTopoDupChannels.
  const bool keep =
      f.dup_keep_below_GBps > 0 && g.bw_GBps < f.dup_keep_below_GBps && g.channels > 4;
  if (g.bw_GBps >= f.dup_min_GBps && !keep) {
    const int dup = std::max(g.channels, std::min(2 * g.channels, f.max_channels));
    g.bw_GBps /= (dup + g.channels - 1) / g.channels;
    g.channels = dup;
  }
  return g;
}

double NcclTuner::per_channel_max(Algorithm a, Protocol p, int nodes) const {
  const auto& caps = figures_.per_channel_max_GBps;
  const std::string algo(to_text(a)), cell = algo + "." + std::string(to_text(p));
  double cap = std::numeric_limits<double>::infinity();
  for (const std::string& key : {algo, cell})
    if (auto it = caps.find(key); it != caps.end())
      cap = std::min(cap, it->second[node_index(nodes)]);
  return cap;
}

double NcclTuner::ll_max_GBps(int nodes) const {
  return ll_max_GBps_.at(node_index(nodes));
}

std::optional<double> NcclTuner::bandwidth_GBps(CollectiveOp op, Algorithm a, Protocol p,
                                                const GroupScale& s, const NcclGraph& g) const {
  if (a != Algorithm::ring && a != Algorithm::tree) return std::nullopt;
  if (a == Algorithm::tree && op != CollectiveOp::all_reduce) return std::nullopt;
  if (!model_.available(a, p)) return std::nullopt;
  const double ch = g.channels;
  const double ppn = static_cast<double>(s.ranks) / std::max(1, s.nodes);
  double bus = ch * g.bw_GBps;
  if (a == Algorithm::ring) {
    if (p == Protocol::ll)
      bus = std::min(ll_max_GBps(s.nodes),
                     bus * (s.nodes > 1 || op == CollectiveOp::all_reduce ? 1.0 / 4 : 1.0 / 3));
    if (p == Protocol::ll128)
      bus = std::min(bus * (ppn < 2 ? 0.7 : 0.92), ch * per_channel_max(a, p, s.nodes));
    return bus * s.ranks / ring_steps(op, s.ranks);
  }
  bus = std::min(bus * 0.92, ch * per_channel_max(a, Protocol::simple, s.nodes));
  if (p == Protocol::ll) bus = std::min(bus / 3.8, ll_max_GBps(s.nodes));
  if (p == Protocol::ll128)
    bus = std::min(bus * (s.nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   ch * per_channel_max(a, p, s.nodes));
  return bus * 0.5;
}

std::optional<double> NcclTuner::time_us(CollectiveOp op, Algorithm a, Protocol p,
                                         const GroupScale& s, const NcclGraph& g,
                                         double bytes) const {
  std::optional<double> bw = bandwidth_GBps(op, a, p, s, g);
  if (!bw || !(*bw > 0)) return std::nullopt;
  const double corrected = *bw * (a == Algorithm::tree ? model_.tree_correction(p, bytes) : 1.0);
  // latency_us carries the ring plateau and NCCL's LL and network-overhead rules.
  return model_.latency_us(op, a, p, s, bytes) + bytes / (1000.0 * corrected);
}

double NcclTuner::busbw_ceiling_GBps(CollectiveOp op, Algorithm a, Protocol p, const GroupScale& s,
                                     const NcclGraph& g) const {
  if (a != Algorithm::ring && a != Algorithm::tree) return std::numeric_limits<double>::infinity();
  const double cap = g.channels * per_channel_max(a, p, s.nodes);
  if (!std::isfinite(cap)) return cap;
  // NCCL's ring bus bandwidth is nccl-tests' busbw; a tree's algorithm bandwidth is half its
  // bus bandwidth, and nccl-tests counts 2(n-1)/n of the algorithm bandwidth.
  if (a == Algorithm::tree) return cap * 0.5 * busbw_factor(op, s.ranks);
  return cap;
}

}  // namespace twin::netsim
