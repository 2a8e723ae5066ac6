#include "topology/fat_tree.hpp"

#include <fmt/format.h>
#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::topology {
namespace {

using core::Error;
using core::with_commas;

/// Largest cluster modelled (GPUs): 2^20, several times the largest built.
constexpr std::int64_t kMaxGpus = 1 << 20;

int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}

/// Smallest divisor s of `links` such that `groups * links / s <= ports`, or 0 if none.
int smallest_spreading_divisor(int links, int groups, int ports) {
  for (int s = 1; s <= links; ++s) {
    if (links % s == 0 && static_cast<std::int64_t>(groups) * (links / s) <= ports) return s;
  }
  return 0;
}

/// Splits `ports` into down and up ports in the ratio `ratio` (down/up): the most up-ports u
/// for which d = round(u ratio) fits beside them and d/u is within 1% of the ratio, so a 2:1
/// leaf of radix 8 is 4 down / 2 up (not 5 / 2 = 2.5:1). Leaves d = u = 0 when no whole split
/// comes that close; closest_split then names the nearest the switch allows.
void split_ports(int ports, double ratio, int& down, int& up) {
  down = up = 0;
  for (int u = static_cast<int>(std::floor(ports / (1.0 + ratio) + 1e-9)); u >= 1; --u) {
    const int d = static_cast<int>(std::lround(u * ratio));
    if (d >= 1 && d + u <= ports && std::abs(static_cast<double>(d) / u - ratio) <= 0.01 * ratio) {
      down = d;
      up = u;
      return;
    }
  }
}

/// "5:3 (5 down / 3 up)": the split of `ports` whose ratio is nearest `ratio`.
std::string closest_split(int ports, double ratio) {
  int best_d = 1, best_u = 1;
  for (int u = 1; u < ports; ++u)
    for (int d = 1; d + u <= ports; ++d)
      if (const double gap = std::abs(static_cast<double>(d) / u - ratio),
          best = std::abs(static_cast<double>(best_d) / best_u - ratio);
          gap < best - 1e-12 || (gap < best + 1e-12 && d + u > best_d + best_u))
        best_d = d, best_u = u;
  return fmt::format("{:.3g}:1 ({} down / {} up)", static_cast<double>(best_d) / best_u, best_d,
                     best_u);
}

void check_positive(int value, const char* field) {
  if (value <= 0) throw Error(field, std::to_string(value), "must be a positive integer");
}

void validate(const ClusterSpec& c, const FabricSpec& f) {
  check_positive(c.nodes, "cluster.nodes");
  check_positive(c.gpus_per_node, "cluster.gpus_per_node");
  check_positive(c.nics_per_node, "cluster.nics_per_node");
  // Counts are ints throughout the fabric; a cluster is refused long before they could wrap.
  const std::int64_t gpus = static_cast<std::int64_t>(c.nodes) * c.gpus_per_node;
  if (gpus > kMaxGpus)
    throw Error(c.nodes > kMaxGpus / 8 ? "cluster.nodes" : "cluster.gpus_per_node",
                std::to_string(c.nodes > kMaxGpus / 8 ? c.nodes : c.gpus_per_node),
                fmt::format("{} nodes x {} GPUs = {} GPUs; at most {} are modelled (the largest "
                            "clusters built hold a few hundred thousand)",
                            with_commas(c.nodes), c.gpus_per_node, with_commas(gpus),
                            with_commas(kMaxGpus)));
  if (static_cast<std::int64_t>(f.management_nodes) > kMaxGpus)
    throw Error("fabric.management_nodes", std::to_string(f.management_nodes),
                fmt::format("at most {}", with_commas(kMaxGpus)));
  if (static_cast<std::int64_t>(c.nodes) * c.nics_per_node > kMaxGpus)
    throw Error("cluster.nics_per_node", std::to_string(c.nics_per_node),
                fmt::format("{} nodes x {} NICs; at most {} NICs are modelled",
                            with_commas(c.nodes), c.nics_per_node, with_commas(kMaxGpus)));
  if (c.nics_per_node > c.gpus_per_node && c.nics_per_node % c.gpus_per_node != 0)
    throw Error("cluster.nics_per_node", std::to_string(c.nics_per_node),
                fmt::format("more compute NICs than GPUs per node ({}) must be a whole number per "
                            "GPU (e.g. {}: two each)",
                            c.gpus_per_node, 2 * c.gpus_per_node));
  for (auto [value, field] :
       {std::pair{c.nic_gbps, "cluster.nic_gbps"}, std::pair{c.nvlink_GBps, "cluster.nvlink_GBps"},
        std::pair{c.pcie_GBps, "cluster.pcie_GBps"},
        std::pair{f.switch_port_gbps, "fabric.switch_port_gbps"}}) {
    if (!(value > 0)) throw Error(field, fmt::format("{}", value), "must be positive");
  }
  for (auto [value, field] : {std::pair{c.nvlink_latency_ns, "cluster.nvlink_latency_ns"},
                              std::pair{c.pcie_latency_ns, "cluster.pcie_latency_ns"},
                              std::pair{f.cable_latency_ns, "fabric.cable_latency_ns"},
                              std::pair{f.switch_latency_ns, "fabric.switch_latency_ns"},
                              std::pair{f.leaf_spine_gbps, "fabric.leaf_spine_gbps"},
                              std::pair{f.spine_core_gbps, "fabric.spine_core_gbps"}}) {
    if (!(value >= 0)) throw Error(field, fmt::format("{}", value), "must not be negative");
  }
  if (f.kind != "fat_tree")
    throw Error(
        "fabric.kind", f.kind,
        "unknown fabric kind; valid: 'fat_tree'" + core::did_you_mean(f.kind, {"fat_tree"}));
  if (f.tiers != 2 && f.tiers != 3)
    throw Error("fabric.tiers", std::to_string(f.tiers), "must be 2 or 3");
  if (f.switch_radix < 4 || f.switch_radix % 2 != 0)
    throw Error("fabric.switch_radix", std::to_string(f.switch_radix),
                "must be an even number of ports, at least 4");
  if (f.switch_ports_per_cage < 1)
    throw Error("fabric.switch_ports_per_cage", std::to_string(f.switch_ports_per_cage),
                "must be at least 1");
  if (!(f.oversubscription >= 1.0))
    throw Error("fabric.oversubscription", fmt::format("{}", f.oversubscription),
                "must be >= 1 (down-ports per up-port; 1 is non-blocking)");
  if (!(f.spine_oversubscription >= 1.0))
    throw Error("fabric.spine_oversubscription", fmt::format("{}", f.spine_oversubscription),
                "must be >= 1 (down-ports per up-port; 1 is non-blocking)");
  if (f.reserved_ports_per_leaf < 0 || f.reserved_ports_per_leaf > f.switch_radix - 2)
    throw Error("fabric.reserved_ports_per_leaf", std::to_string(f.reserved_ports_per_leaf),
                fmt::format("must be between 0 and {} (radix - 2)", f.switch_radix - 2));
  if (f.management_nodes < 0)
    throw Error("fabric.management_nodes", std::to_string(f.management_nodes),
                "must not be negative");
  if (f.management_nodes > 0 &&
      (f.management_ports_per_node < 1 || f.management_ports_per_node > c.nics_per_node))
    throw Error("fabric.management_ports_per_node", std::to_string(f.management_ports_per_node),
                fmt::format("must be between 1 and cluster.nics_per_node ({})", c.nics_per_node));
}

}  // namespace

std::int64_t FatTreeGeometry::max_endpoints(int tiers, int radix, int leaf_down, int leaf_up,
                                            int spine_down) {
  (void)leaf_up;
  // A spine (2 tiers) or core (3 tiers) needs at least one port per leaf or pod below it.
  if (tiers == 2) return static_cast<std::int64_t>(radix) * leaf_down;
  return static_cast<std::int64_t>(radix) * spine_down * leaf_down;
}

FatTreeGeometry FatTreeGeometry::derive(const ClusterSpec& cluster, const FabricSpec& fabric) {
  validate(cluster, fabric);
  FatTreeGeometry g;
  g.tiers = fabric.tiers;
  g.radix = fabric.switch_radix;
  g.rails = cluster.nics_per_node;
  g.nodes_ = cluster.nodes;
  g.rail_optimized_ = fabric.rail_optimized;
  g.management_slots_ = fabric.management_nodes;
  g.endpoints = cluster.nics();
  g.management_ports = fabric.management_nodes * fabric.management_ports_per_node;

  split_ports(fabric.switch_radix - fabric.reserved_ports_per_leaf, fabric.oversubscription,
              g.leaf_down, g.leaf_up);
  if (g.leaf_down < 1 || g.leaf_up < 1)
    throw Error("fabric.oversubscription", fmt::format("{}", fabric.oversubscription),
                fmt::format("a leaf of {} usable ports cannot split its ports in this ratio "
                            "(within 1%); the closest it allows is {}",
                            fabric.switch_radix - fabric.reserved_ports_per_leaf,
                            closest_split(fabric.switch_radix - fabric.reserved_ports_per_leaf,
                                          fabric.oversubscription)));

  // Build only what the nodes need: when every NIC fits on one leaf (per rail), that leaf gets
  // only the down-ports in use and up-ports in the designed ratio, so a small cluster on
  // high-radix switches costs what its GPUs need, not what the radix could hold.
  const std::int64_t per_leaf_demand =
      fabric.rail_optimized ? static_cast<std::int64_t>(cluster.nodes) + fabric.management_nodes
                            : static_cast<std::int64_t>(g.endpoints) + g.management_ports;
  if (per_leaf_demand < g.leaf_down) {
    const int used = static_cast<int>(per_leaf_demand);
    g.leaf_up = static_cast<int>((static_cast<std::int64_t>(used) * g.leaf_up + g.leaf_down - 1) /
                                 g.leaf_down);
    g.leaf_down = used;
  }
  if (fabric.rail_optimized) {
    const int slots = cluster.nodes + fabric.management_nodes;
    g.leaves = ceil_div(slots, g.leaf_down) * g.rails;
  } else {
    g.leaves = ceil_div(g.endpoints + g.management_ports, g.leaf_down);
  }

  // Nodes that do not fill the leaves leave the last leaf (group) with spare down-ports but all
  // its up-ports: far from the designed ratio, the fabric built is another design (3:1 leaves of
  // radix 8 holding 8 nodes per rail are the same 16 leaves and 32 uplinks as 2:1). Refused with
  // the reason rather than reported as what was asked. (A single, resized leaf group keeps the
  // designed ratio.)
  if (fabric.oversubscription > 1.0 && per_leaf_demand >= g.leaf_down) {
    const double ports_used = fabric.rail_optimized ? static_cast<double>(per_leaf_demand) * g.rails
                                                    : static_cast<double>(per_leaf_demand);
    const double ratio = ports_used / (static_cast<double>(g.leaves) * g.leaf_up);
    if (ratio < 0.75 * fabric.oversubscription)
      throw Error(
          "fabric.oversubscription", fmt::format("{}", fabric.oversubscription),
          fmt::format("{} {} do not fill leaves of {} down-ports: {} leaves with {} up-ports each "
                      "carry them, which is {:.3g}:1, not {}:1 (the same switches and cables as "
                      "that design); choose {:.3g}, or a {} count that fills the leaves "
                      "(a multiple of {})",
                      with_commas(per_leaf_demand),
                      fabric.rail_optimized ? "node slots per rail" : "NIC ports", g.leaf_down,
                      g.leaves, g.leaf_up, ratio, fabric.oversubscription, ratio,
                      fabric.rail_optimized ? "node" : "NIC", g.leaf_down));
  }

  if (fabric.tiers == 2) {
    g.spine_down = fabric.switch_radix;
    const std::int64_t limit = max_endpoints(2, g.radix, g.leaf_down, g.leaf_up, g.spine_down);
    g.spines_per_pod = smallest_spreading_divisor(g.leaf_up, g.leaves, fabric.switch_radix);
    if (g.spines_per_pod == 0)
      throw Error(
          "fabric.tiers", "2",
          fmt::format("2 tiers of radix-{} switches hold at most {} endpoints at {}:1 "
                      "oversubscription ({} leaves x {} down-ports); {} requested{}: use 3 tiers, "
                      "a larger radix, or more oversubscription",
                      g.radix, with_commas(limit), fabric.oversubscription, g.radix, g.leaf_down,
                      with_commas(g.endpoints),
                      g.leaves > g.radix ? fmt::format(" on {} leaves", g.leaves) : ""));
    g.leaf_spine_parallel = g.leaf_up / g.spines_per_pod;
    g.leaves_per_pod = g.leaves;
    g.pods = 1;
    g.spines = g.spines_per_pod;
    g.spine_up = 0;
    return g;
  }

  split_ports(fabric.switch_radix, fabric.spine_oversubscription, g.spine_down, g.spine_up);
  if (g.spine_down < 1 || g.spine_up < 1)
    throw Error("fabric.spine_oversubscription", fmt::format("{}", fabric.spine_oversubscription),
                "leaves a spine without down- or up-ports");
  if (g.leaves < g.spine_down) {  // one partial pod: spines sized to its leaves, as above
    g.spine_up = static_cast<int>(
        (static_cast<std::int64_t>(g.leaves) * g.spine_up + g.spine_down - 1) / g.spine_down);
    g.spine_down = g.leaves;
  }
  g.spines_per_pod = g.leaf_up;
  g.leaf_spine_parallel = 1;
  g.leaves_per_pod = g.spine_down;
  g.pods = ceil_div(g.leaves, g.leaves_per_pod);
  g.spines = g.pods * g.spines_per_pod;
  g.cores_per_plane = smallest_spreading_divisor(g.spine_up, g.pods, fabric.switch_radix);
  if (g.cores_per_plane == 0) {
    const std::int64_t limit = max_endpoints(3, g.radix, g.leaf_down, g.leaf_up, g.spine_down);
    throw Error("fabric.tiers", "3",
                fmt::format("3 tiers of radix-{} switches hold at most {} endpoints ({} pods of "
                            "{} leaves x {} down-ports); {} requested on {} pods: use a larger "
                            "radix or more oversubscription",
                            g.radix, with_commas(limit), g.radix, g.leaves_per_pod, g.leaf_down,
                            with_commas(g.endpoints), g.pods));
  }
  g.spine_core_parallel = g.spine_up / g.cores_per_plane;
  g.cores = g.spines_per_pod * g.cores_per_plane;
  return g;
}

int FatTreeGeometry::leaf_of(int node, int rail) const {
  if (rail_optimized_) return (node / leaf_down) * rails + rail;
  return (node * rails + rail) / leaf_down;
}

int FatTreeGeometry::port_of(int node, int rail) const {
  if (rail_optimized_) return node % leaf_down;
  return (node * rails + rail) % leaf_down;
}

}  // namespace twin::topology
