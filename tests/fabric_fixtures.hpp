#pragma once
// Small helpers shared by the topology tests.

#include "topology/fabric.hpp"

namespace twin::test {

/// The reference 4,096-GPU cluster (the defaults of ClusterSpec / FabricSpec).
inline topology::Fabric reference_fabric() {
  return topology::Fabric({}, {});
}

/// A rail-optimized 3-tier fabric of radix-8 switches: every tier exists on 8 nodes x 8 GPUs.
inline topology::Fabric small_three_tier(topology::RoutingMode mode = topology::RoutingMode::dmodk,
                                         double oversubscription = 1.0) {
  topology::ClusterSpec c;
  c.nodes = 8;
  topology::FabricSpec f;
  f.switch_radix = 8;
  f.routing = mode;
  f.oversubscription = oversubscription;
  return topology::Fabric(c, f);
}

}  // namespace twin::test
