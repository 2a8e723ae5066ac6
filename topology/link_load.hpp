#pragma once
/// Static link load of a traffic pattern: how many flows (or fractions of flows, with adaptive
/// routing) each link carries when every flow of the pattern is active at once.
///
/// This is the routing-only view of contention, before any bandwidth sharing is solved: a load
/// of 1 on every link means the pattern can run at full NIC speed on every flow; a maximum load
/// of m means some flow gets at most 1/m of a link. The network engine gives the timing; this
/// tells whether a routing scheme or an oversubscribed tier creates hot spots.

#include <string>
#include <utility>
#include <vector>

#include "topology/routing.hpp"

namespace twin::topology {

struct TierLoad {
  LinkKind kind;
  double max_flows = 0.0;   ///< the busiest link of this kind
  double mean_flows = 0.0;  ///< over links of this kind that carry anything
  int links_used = 0;
};

struct LinkLoadReport {
  std::vector<double> flows_per_link;  ///< indexed by LinkId
  std::vector<TierLoad> tiers;         ///< one per link kind that carries traffic
  [[nodiscard]] double max_flows() const;
};

/// Routes every (src GPU, dst GPU) flow and sums, per link, the fraction of a flow it carries.
LinkLoadReport link_load(const Fabric& fabric, const Router& router,
                         const std::vector<std::pair<int, int>>& flows);

/// Named traffic patterns over GPUs.
/// rail_ring: GPU (h, g) -> (h+1 mod nodes, g): the inter-node hops of NCCL's rail-aligned rings.
std::vector<std::pair<int, int>> rail_ring_pattern(const Fabric& fabric);
/// bisection_shift: GPU (h, g) -> (h + nodes/2 mod nodes, g): every flow crosses the middle cut.
std::vector<std::pair<int, int>> bisection_shift_pattern(const Fabric& fabric);

}  // namespace twin::topology
