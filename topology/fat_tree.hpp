#pragma once
/// Fat-tree geometry: how many switches of each tier, how they are cabled, and where each NIC
/// plugs in, derived from a ClusterSpec and FabricSpec.
///
/// The shape is an extended generalized fat tree (XGFT) built from identical radix-k switches:
///
///   leaf   d1 down-ports (NICs), u1 up-ports; d1/u1 = oversubscription,
///          d1 + u1 <= k - reserved ports.
///   pod    (3 tiers) Sp = u1 spines, one cable from every leaf of the pod to each spine;
///          a spine has d2 down-ports (so Lp = d2 leaves per pod) and u2 up-ports, d2/u2 =
///          spine_oversubscription, d2 + u2 <= k.
///   plane  spine j of every pod belongs to plane j; plane j holds Cp cores and each of its
///          spines cables u2/Cp parallel links to each core of the plane. Cp is the smallest
///          divisor of u2 for which a core's ports suffice: P * u2/Cp <= k (P pods).
///   2 tiers: one "pod" of all L leaves and S spines, S the smallest divisor of u1 with
///          L * u1/S <= k; every leaf spreads its u1 uplinks evenly (u1/S parallel cables
///          per spine) — the rule behind the DGX SuperPOD spine counts.
///
/// Non-blocking radix 64: d1 = u1 = 32; 2 tiers stop at 64 leaves = 2,048 endpoints;
/// 3 tiers at 64 pods x 32 leaves x 32 = 65,536. For 4,096 NICs: 128 leaves, 4 pods of 32,
/// 128 spines, 32 planes of 2 cores = 64 cores, and 4,096 cables per tier.
///
/// Rail-optimized: node slot s (nodes first, then fabric-manager slots) and rail r sit on leaf
/// (s / d1) * R + r, port s % d1: a "scalable unit" of d1 nodes per leaf group of R leaves.
/// Otherwise NICs fill leaves in node order.

#include <cstdint>

#include "topology/spec.hpp"

namespace twin::topology {

struct FatTreeGeometry {
  int tiers = 0;
  int radix = 0;
  int rails = 0;                ///< NICs per node (R)
  int endpoints = 0;            ///< compute NICs
  int management_ports = 0;     ///< leaf ports used by fabric-manager hosts
  int leaf_down = 0;            ///< d1
  int leaf_up = 0;              ///< u1
  int leaves = 0;               ///< L
  int spines_per_pod = 0;       ///< Sp (2 tiers: S)
  int leaf_spine_parallel = 0;  ///< u1 / Sp
  int leaves_per_pod = 0;       ///< Lp (2 tiers: L)
  int pods = 0;                 ///< P (2 tiers: 1)
  int spines = 0;
  int spine_down = 0;           ///< d2 (ports designed for leaves)
  int spine_up = 0;             ///< u2 (0 with 2 tiers)
  int cores_per_plane = 0;      ///< Cp
  int spine_core_parallel = 0;  ///< u2 / Cp
  int cores = 0;

  /// Derives the geometry; throws core::Error naming the field and the limit when impossible.
  static FatTreeGeometry derive(const ClusterSpec& cluster, const FabricSpec& fabric);

  /// Leaf and port of a compute NIC (node, rail).
  [[nodiscard]] int leaf_of(int node, int rail) const;
  [[nodiscard]] int port_of(int node, int rail) const;
  /// Global endpoint index (leaf * d1 + port): the "destination" that D-mod-k takes modulo k.
  [[nodiscard]] int endpoint_index(int node, int rail) const {
    return leaf_of(node, rail) * leaf_down + port_of(node, rail);
  }
  [[nodiscard]] int pod_of_leaf(int leaf) const { return leaf / leaves_per_pod; }
  /// Spine reached from a leaf through its up-port p (port p -> spine p mod Sp of its pod).
  [[nodiscard]] int spine_of_leaf_port(int leaf, int p) const {
    return pod_of_leaf(leaf) * spines_per_pod + p % spines_per_pod;
  }
  /// Core reached from a spine through its up-port q (plane = spine index in pod).
  [[nodiscard]] int core_of_spine_port(int spine, int q) const {
    return (spine % spines_per_pod) * cores_per_plane + q % cores_per_plane;
  }

  /// Largest number of endpoints these switches can hold with this many tiers (for messages).
  static std::int64_t max_endpoints(int tiers, int radix, int leaf_down, int leaf_up,
                                    int spine_down);

 private:
  bool rail_optimized_ = true;
  int management_slots_ = 0;
  int nodes_ = 0;
};

}  // namespace twin::topology
