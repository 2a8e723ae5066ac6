#include <gtest/gtest.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#pragma GCC diagnostic pop
#include <map>
#include <numeric>
#include <set>

#include "core/error.hpp"
#include "fabric_fixtures.hpp"
#include "topology/fabric_state.hpp"
#include "topology/link_load.hpp"
#include "topology/routing.hpp"

namespace twin::topology {
namespace {

/// Keeps only the switch fabric's cables (no NVLink or PCIe shortcuts through a server).
struct CablesOnly {
  const Fabric* fabric = nullptr;
  bool operator()(Fabric::Graph::edge_descriptor e) const {
    return fabric->link(fabric->graph()[e]).cable.valid();
  }
};

struct DistanceRecorder : boost::default_bfs_visitor {
  std::vector<int>* dist = nullptr;
  template <class Edge, class Graph>
  void tree_edge(Edge e, const Graph& g) const {
    (*dist)[boost::target(e, g)] = (*dist)[boost::source(e, g)] + 1;
  }
};

/// Hop distances from one vertex over the cables (Boost.Graph BFS): the shortest possible path.
std::vector<int> bfs_distances(const Fabric& fabric, NodeId from) {
  std::vector<int> dist(fabric.node_count(), -1);
  dist[from.index()] = 0;
  const boost::filtered_graph<Fabric::Graph, CablesOnly> cables(fabric.graph(),
                                                                CablesOnly{&fabric});
  DistanceRecorder recorder;
  recorder.dist = &dist;
  boost::breadth_first_search(cables, from.index(), boost::visitor(recorder));
  return dist;
}

/// Checks the hops form one connected, loop-free path from `src` to `dst` and returns its length.
int path_length(const Fabric& fabric, const Route& route, NodeId src, NodeId dst) {
  NodeId at = src;
  std::set<NodeId> seen{src};
  for (const Hop& hop : route.hops) {
    const Link& l = fabric.link(hop.link);
    EXPECT_EQ(l.src, at) << "hops do not chain";
    EXPECT_DOUBLE_EQ(hop.fraction, 1.0);
    at = l.dst;
    EXPECT_TRUE(seen.insert(at).second) << "path revisits " << fabric.node_name(at);
  }
  EXPECT_EQ(at, dst);
  return static_cast<int>(route.hops.size());
}

/// NIC index for each D-mod-k endpoint index (leaf * d1 + port).
std::map<int, int> nic_by_endpoint(const Fabric& fabric) {
  std::map<int, int> out;
  for (int n = 0; n < fabric.nic_count(); ++n) out[fabric.endpoint_index(n)] = n;
  return out;
}

TEST(Routing, DmodkPathsAreUniqueSimpleAndMinimal) {
  const Fabric fabric = test::small_three_tier();
  const Router router(fabric, nullptr, RoutingMode::dmodk);
  for (int s = 0; s < fabric.nic_count(); ++s) {
    const auto dist = bfs_distances(fabric, fabric.nic(s));
    for (int d = 0; d < fabric.nic_count(); ++d) {
      if (s == d) continue;
      const Route route = router.nic_route(s, d);
      const int length = path_length(fabric, route, fabric.nic(s), fabric.nic(d));
      ASSERT_EQ(length, dist[fabric.nic(d).index()]) << "not minimal: nic " << s << " -> " << d;
      // Deterministic: asking again (any flow label) gives the same single path.
      const Route again = router.nic_route(s, d, 99);
      ASSERT_EQ(again.hops.size(), route.hops.size());
      for (std::size_t i = 0; i < route.hops.size(); ++i)
        ASSERT_EQ(again.hops[i].link, route.hops[i].link);
    }
  }
}

TEST(Routing, HopCountsByLowestCommonTier) {
  const Fabric fabric = test::reference_fabric();
  const Router router(fabric);
  EXPECT_EQ(router.nic_route(0, 8).fabric_hops, 2);         // same leaf (rail 0, nodes 0 and 1)
  EXPECT_EQ(router.nic_route(0, 32 * 8).fabric_hops, 4);    // same pod, next scalable unit
  EXPECT_EQ(router.nic_route(0, 128 * 8).fabric_hops, 6);   // next pod: through a core
  EXPECT_EQ(router.gpu_route(0, 1).hops.size(), 2u);        // NVLink inside the node
  EXPECT_EQ(router.gpu_route(0, 128 * 8).hops.size(), 8u);  // PCIe + 6 fabric links + PCIe
  // Latency: 6 cables of 100 ns, 5 switches of 130 ns.
  EXPECT_NEAR(router.nic_route(0, 128 * 8).latency_s, 6 * 100e-9 + 5 * 130e-9, 1e-15);
}

TEST(Routing, ShiftPermutationIsContentionFreeUnderDmodk) {
  for (const bool small : {true, false}) {
    const Fabric fabric = small ? test::small_three_tier() : test::reference_fabric();
    const Router router(fabric);
    const auto nic_of = nic_by_endpoint(fabric);
    const int n = fabric.nic_count();
    const std::vector<int> shifts = small ? [n] {
      std::vector<int> all(n - 1);
      std::iota(all.begin(), all.end(), 1);
      return all;
    }() : std::vector<int>{1, 31, 32, 33, 1000, 1024, 2048, 4095};
    for (int k : shifts) {
      std::vector<double> load(fabric.link_count(), 0.0);
      for (const auto& [e, nic] : nic_of) {
        const int dst = nic_of.at((e + k) % n);
        for (const Hop& hop : router.nic_route(nic, dst).hops) load[hop.link.index()] += 1.0;
      }
      const double max_load = *std::max_element(load.begin(), load.end());
      ASSERT_EQ(max_load, 1.0) << "shift by " << k << " on " << n << " endpoints";
    }
  }
}

TEST(Routing, EcmpCollidesWhereDmodkDoesNot) {
  const Fabric fabric = test::reference_fabric();
  const auto flows = bisection_shift_pattern(fabric);
  const Router dmodk(fabric, nullptr, RoutingMode::dmodk);
  const Router ecmp(fabric, nullptr, RoutingMode::ecmp, 7);
  EXPECT_EQ(link_load(fabric, dmodk, flows).max_flows(), 1.0);
  // Hashing 4,096 flows onto 32 uplinks per leaf: collisions are all but certain.
  const double ecmp_max = link_load(fabric, ecmp, flows).max_flows();
  EXPECT_GE(ecmp_max, 2.0);
  // Same seed, same answer; another seed, other routes.
  EXPECT_EQ(link_load(fabric, Router(fabric, nullptr, RoutingMode::ecmp, 7), flows).flows_per_link,
            link_load(fabric, ecmp, flows).flows_per_link);
  EXPECT_NE(link_load(fabric, Router(fabric, nullptr, RoutingMode::ecmp, 8), flows).flows_per_link,
            link_load(fabric, ecmp, flows).flows_per_link);
}

TEST(Routing, AdaptiveSplitsEvenlyOverAllShortestPaths) {
  const Fabric fabric = test::reference_fabric();
  const Router router(fabric, nullptr, RoutingMode::adaptive);
  const Route route = router.nic_route(0, 128 * 8);  // cross-pod: 32 spines x 2 cores x 16 links
  std::map<LinkKind, double> share;
  std::map<LinkKind, int> links;
  for (const Hop& hop : route.hops) {
    const Link& l = fabric.link(hop.link);
    share[l.kind] += hop.fraction;
    ++links[l.kind];
  }
  // Each direction of each tier carries the whole flow once: 2 NIC links, 2 leaf-spine, 2
  // spine-core.
  EXPECT_NEAR(share[LinkKind::nic_leaf], 2.0, 1e-12);
  EXPECT_NEAR(share[LinkKind::leaf_spine], 2.0, 1e-12);
  EXPECT_NEAR(share[LinkKind::spine_core], 2.0, 1e-12);
  EXPECT_EQ(links[LinkKind::leaf_spine], 2 * 32);
  EXPECT_EQ(links[LinkKind::spine_core], 2 * 32 * 32);
  EXPECT_NEAR(link_load(fabric, router, bisection_shift_pattern(fabric)).max_flows(), 1.0, 1e-12);
}

TEST(Routing, RoutesAvoidADownedSpine) {
  for (RoutingMode mode : {RoutingMode::dmodk, RoutingMode::ecmp, RoutingMode::adaptive}) {
    const Fabric fabric = test::small_three_tier(mode);
    FabricState state(fabric);
    const NodeId dead = fabric.spine(1);
    state.fail_switch(dead);
    const Router router(fabric, &state);
    for (int s = 0; s < fabric.nic_count(); ++s) {
      for (int d = 0; d < fabric.nic_count(); ++d) {
        const Route route = router.nic_route(s, d);
        double arriving = 0.0;
        for (const Hop& hop : route.hops) {
          const Link& l = fabric.link(hop.link);
          ASSERT_NE(l.src, dead);
          ASSERT_NE(l.dst, dead);
          ASSERT_TRUE(state.usable(hop.link));
          if (l.dst == fabric.nic(d)) arriving += hop.fraction;
        }
        if (s != d) {
          ASSERT_NEAR(arriving, 1.0, 1e-12);
        }
      }
    }
  }
}

TEST(Routing, DmodkReroutesAroundAFailedCableAndOnlyThoseFlows) {
  const Fabric fabric = test::reference_fabric();
  const Router healthy(fabric);
  const Route before = healthy.nic_route(0, 32 * 8);
  const LinkId uplink = before.hops[1].link;
  FabricState state(fabric);
  state.fail_cable(fabric.link(uplink).cable);
  const Router rerouted(fabric, &state);
  const Route after = rerouted.nic_route(0, 32 * 8);
  EXPECT_NE(after.hops[1].link, uplink);
  EXPECT_EQ(after.hops.size(), before.hops.size());
  // A flow that did not use the cable keeps its path.
  const Route other_before = healthy.nic_route(0, 32 * 8 + 8);
  const Route other_after = rerouted.nic_route(0, 32 * 8 + 8);
  EXPECT_EQ(other_before.hops[1].link, other_after.hops[1].link);
}

TEST(Routing, UnreachableDestinationIsAnErrorNamingBothEnds) {
  const Fabric fabric = test::small_three_tier();
  FabricState state(fabric);
  state.fail_host(1);
  const Router router(fabric, &state);
  try {
    (void)router.gpu_route(0, 8 + 3);
    FAIL() << "routed to a dead host";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.field(), "route");
    EXPECT_NE(std::string(e.what()).find("unreachable"), std::string::npos);
  }
  EXPECT_THROW((void)router.nic_route(0, 9999), core::Error);
}

TEST(FabricState, DegradedLinkKeepsItsRouteButLosesBandwidth) {
  const Fabric fabric = test::small_three_tier();
  FabricState state(fabric);
  EXPECT_TRUE(state.healthy());
  EXPECT_EQ(state.signature(), "healthy");
  const CableId cable = fabric.leaf_up_cable(0, 0);
  state.degrade_cable(cable, 0.5);
  EXPECT_FALSE(state.healthy());
  EXPECT_DOUBLE_EQ(state.bandwidth_Bps(fabric.cable(cable).up), 25e9);
  EXPECT_TRUE(state.usable(fabric.cable(cable).up));
  EXPECT_THROW(state.degrade_cable(cable, 1.5), core::Error);
  FabricState same(fabric);
  same.degrade_cable(cable, 0.5);
  EXPECT_EQ(same.signature(), state.signature());
  state.restore_all();
  EXPECT_TRUE(state.healthy());
}

TEST(LinkLoad, OversubscriptionConcentratesTheBisectionShift) {
  // 3:1 at the leaf: 48 NICs share 16 uplinks, so the shift puts 3 flows on each leaf uplink.
  ClusterSpec c;
  c.nodes = 96;
  FabricSpec f;
  f.tiers = 2;
  f.oversubscription = 3.0;
  const Fabric fabric(c, f);
  EXPECT_EQ(fabric.geometry().leaf_down, 48);
  EXPECT_EQ(fabric.geometry().leaf_up, 16);
  const Router router(fabric);
  const auto report = link_load(fabric, router, bisection_shift_pattern(fabric));
  for (const auto& tier : report.tiers)
    if (tier.kind == LinkKind::leaf_spine) {
      EXPECT_DOUBLE_EQ(tier.max_flows, 3.0);
    }
}

TEST(Routing, AGpuWithTwoNicsSendsHalfOverEach) {
  // 16 NICs for 8 GPUs: GPU g's NICs are rails 2g and 2g + 1; a flow to another node splits
  // evenly over the two rails, NIC j to the peer's NIC j. With one of them down, all of it takes
  // the other.
  ClusterSpec c;
  c.nodes = 4;
  c.nics_per_node = 16;
  FabricSpec spec;
  spec.tiers = 2;
  spec.switch_radix = 32;
  const Fabric f(c, spec);
  EXPECT_EQ(f.nics_per_gpu(), 2);
  EXPECT_EQ(f.nic_of_gpu(3, 0), 6);
  EXPECT_EQ(f.nic_of_gpu(3, 1), 7);
  EXPECT_EQ(f.nic_of_gpu(8 + 3, 1), 16 + 7);
  const Router router(f);
  auto load_on = [&](const Route& r, LinkId link) {
    double sum = 0;
    for (const Hop& h : r.hops)
      if (h.link == link) sum += h.fraction;
    return sum;
  };
  const Route r = router.gpu_route(3, 8 + 3, 1);
  for (int j = 0; j < 2; ++j) {
    EXPECT_DOUBLE_EQ(load_on(r, f.cable(f.nic_cable(f.nic_of_gpu(3, j))).up), 0.5) << j;
    EXPECT_DOUBLE_EQ(load_on(r, f.cable(f.nic_cable(f.nic_of_gpu(8 + 3, j))).down), 0.5) << j;
  }
  EXPECT_DOUBLE_EQ(load_on(r, f.pcie_up(3)), 1.0);  // one PCIe link per GPU carries it all

  FabricState state(f);
  state.fail_cable(f.nic_cable(f.nic_of_gpu(3, 1)));
  const Router degraded(f, &state);
  const Route d = degraded.gpu_route(3, 8 + 3, 1);
  EXPECT_DOUBLE_EQ(load_on(d, f.cable(f.nic_cable(f.nic_of_gpu(3, 0))).up), 1.0);
  EXPECT_DOUBLE_EQ(load_on(d, f.cable(f.nic_cable(f.nic_of_gpu(3, 1))).up), 0.0);
}

}  // namespace
}  // namespace twin::topology
