#pragma once
/// Up/down routing over an explicit (imported) fabric, as OpenSM's up/down and ftree engines
/// program a real subnet.
///
/// Every switch has a rank: its tier (distance from the hosts), ties broken by its index. A link
/// toward a higher rank goes "up". A legal path goes up zero or more times, then only down: no
/// down-then-up turn, so no credit loop (deadlock-free, Schroeder et al., Autonet, 1991). Two
/// tables per (switch s, leaf l), filled once per router in rank order:
///   down(s, l) = hops from s down to l (0 when s is l), infinite when l is not below s;
///   best(s, l) = min(down(s, l), 1 + min over up-neighbours u of best(u, l)).
/// A route from leaf a to leaf b takes, at each switch, one of the links that keeps it on a
/// shortest legal path: down while down(s, b) = best(s, b), up otherwise. Candidates are kept in
/// the switch's real port order. D-mod-k picks candidate (d / k_t) mod n, d the destination's
/// endpoint index (leaf * largest leaf down-count + rank of its leaf port), k_1 = 1,
/// k_2 = largest leaf up-count, k_3 = k_2 x largest spine up-count: the choice depends only on
/// the switch and the destination, as a forwarding table does. ECMP hashes (seed, src, dst,
/// label, switch); adaptive splits evenly over every candidate at every switch.
///
/// Failures: the tables are built from the links usable in the FabricState the router is given
/// (a subnet manager's re-sweep), so every candidate leads to the destination; no candidate at
/// all is an error naming both NICs.

#include <cstdint>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"
#include "topology/spec.hpp"

namespace twin::topology {

struct Route;

class UpDownRouting {
 public:
  UpDownRouting(const Fabric& fabric, const FabricState* state);

  /// The switch links of the route between two leaves (appended to `route`), and the latency of
  /// its first path.
  void route_between_leaves(Route& route, int src_leaf, int dst_leaf, int src_nic, int dst_nic,
                            RoutingMode mode, std::uint64_t seed, std::uint64_t flow_label) const;
  /// Switch hops on a shortest legal path between two leaves (-1: unreachable).
  [[nodiscard]] int hops(int src_leaf, int dst_leaf) const;

 private:
  struct Out {
    LinkId link;
    int to;  ///< switch index
  };
  [[nodiscard]] std::vector<Out> candidates(int s, int dst_leaf, bool& down_phase) const;
  [[nodiscard]] int divisor(int s) const;

  const Fabric* fabric_;
  int switches_ = 0, leaves_ = 0;
  std::size_t first_switch_ = 0;
  std::vector<int> tier_;
  std::vector<std::vector<Out>> up_, down_;     ///< per switch, in port order
  std::vector<std::uint8_t> down_dist_, best_;  ///< [s * leaves + l]
};

}  // namespace twin::topology
