#include "topology/bom.hpp"

#include <algorithm>
#include <vector>

#include "core/units.hpp"

namespace twin::topology {
namespace {

std::int64_t ceil_div(std::int64_t a, std::int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace

Bom compute_bom(const Fabric& fabric) {
  const FatTreeGeometry& g = fabric.geometry();
  const FabricSpec& spec = fabric.spec();
  Bom bom;
  bom.nodes = fabric.cluster().nodes;
  bom.gpus = fabric.gpu_count();
  // NICs with a cable (an imported fabric may have hosts with an adapter slot uncabled).
  for (int n = 0; n < fabric.nic_count(); ++n) bom.nics += fabric.nic_present(n) ? 1 : 0;
  bom.nvswitch_domains = fabric.cluster().nodes;
  bom.management_nodes = spec.management_nodes;
  bom.leaf.switches = g.leaves;
  bom.spine.switches = g.spines;
  bom.core.switches = g.cores;

  // Ports used per switch, from the cables in the graph.
  std::vector<std::int64_t> ports(fabric.node_count(), 0);
  double tier_capacity_Bps[3] = {0, 0, 0};
  for (const Cable& cable : fabric.cables()) {
    const Link& up = fabric.link(cable.up);
    ++ports[up.src.index()];
    ++ports[up.dst.index()];
    switch (cable.kind) {
      case LinkKind::nic_leaf:
        ++bom.cables_node_leaf;
        tier_capacity_Bps[0] += up.bandwidth_Bps;
        break;
      case LinkKind::leaf_spine:
        ++bom.cables_leaf_spine;
        tier_capacity_Bps[1] += up.bandwidth_Bps;
        break;
      case LinkKind::spine_core:
        ++bom.cables_spine_core;
        tier_capacity_Bps[2] += up.bandwidth_Bps;
        break;
      default:
        break;
    }
  }

  // Fabric-manager connections: rail-optimized, host slot `nodes + m` on rails 0..k-1;
  // otherwise after the last compute NIC. They use leaf ports and cables but carry no traffic.
  const int k = spec.management_ports_per_node;
  for (int m = 0; m < spec.management_nodes; ++m) {
    for (int r = 0; r < k; ++r) {
      const int leaf =
          spec.rail_optimized ? g.leaf_of(bom.nodes + m, r) : (bom.nics + m * k + r) / g.leaf_down;
      ++ports[fabric.leaf(leaf).index()];
      ++bom.cables_node_leaf;
      ++bom.transceivers_node_side;
    }
  }

  bom.transceivers_node_side += bom.nics;
  const auto radix = static_cast<std::int64_t>(spec.switch_radix);
  for (std::size_t i = 0; i < fabric.node_count(); ++i) {
    const NodeId id = NodeId::from_index(i);
    TierPorts* tier = nullptr;
    switch (fabric.node(id).kind) {
      case NodeKind::leaf:
        tier = &bom.leaf;
        break;
      case NodeKind::spine:
        tier = &bom.spine;
        break;
      case NodeKind::core:
        tier = &bom.core;
        break;
      default:
        continue;
    }
    tier->ports_used += ports[i];
    tier->ports_free += radix - ports[i];
    bom.transceivers_switch_side += ceil_div(ports[i], spec.switch_ports_per_cage);
  }

  bom.injection_GBps = core::Bps_to_GBps(tier_capacity_Bps[0]);
  double narrowest = tier_capacity_Bps[0];
  narrowest = std::min(narrowest, tier_capacity_Bps[1]);
  if (g.tiers == 3) narrowest = std::min(narrowest, tier_capacity_Bps[2]);
  bom.bisection_GBps = core::Bps_to_GBps(narrowest / 2.0);
  bom.leaf_oversubscription = static_cast<double>(g.leaf_down) / g.leaf_up;
  bom.spine_oversubscription = g.tiers == 3 ? static_cast<double>(g.spine_down) / g.spine_up : 1.0;
  return bom;
}

}  // namespace twin::topology
