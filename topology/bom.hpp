#pragma once
/// Bill of materials of a fabric: what a capacity planner orders.
///
/// Counts come from the built Fabric (every cable in the graph), plus the fabric-manager
/// connections, which take leaf ports but carry no training traffic.
///
/// Transceivers: one per NIC (ConnectX-7 is a single-port OSFP) and, on the switch side, one
/// per cage of `switch_ports_per_cage` ports (QM9700: twin-port OSFP, 2 ports per cage), counted
/// per switch as ceil(ports used / ports per cage).
///
/// Bisection bandwidth: the capacity across the worst balanced cut, one direction. For a fat
/// tree that is half of the smallest aggregate capacity of a tier: injection (all NICs), leaf
/// uplinks, spine uplinks (3 tiers). Non-blocking 4,096 x 400 Gb/s: 2,048 x 50 GB/s = 102,400 GB/s.

#include <cstdint>

#include "topology/fabric.hpp"

namespace twin::topology {

struct TierPorts {
  int switches = 0;
  std::int64_t ports_used = 0;
  std::int64_t ports_free = 0;
};

struct Bom {
  int nodes = 0;
  int gpus = 0;
  int nics = 0;
  int nvswitch_domains = 0;
  int management_nodes = 0;
  TierPorts leaf, spine, core;
  [[nodiscard]] int switches_total() const {
    return leaf.switches + spine.switches + core.switches;
  }
  std::int64_t cables_node_leaf = 0;  ///< compute NICs plus fabric-manager connections
  std::int64_t cables_leaf_spine = 0;
  std::int64_t cables_spine_core = 0;
  [[nodiscard]] std::int64_t cables_total() const {
    return cables_node_leaf + cables_leaf_spine + cables_spine_core;
  }
  std::int64_t transceivers_node_side = 0;
  std::int64_t transceivers_switch_side = 0;
  double injection_GBps = 0.0;  ///< all compute NICs together, one direction
  double bisection_GBps = 0.0;
  double leaf_oversubscription = 1.0;   ///< as built (down-ports / up-ports)
  double spine_oversubscription = 1.0;  ///< as built (3 tiers)
};

Bom compute_bom(const Fabric& fabric);

}  // namespace twin::topology
