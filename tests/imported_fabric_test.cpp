// Fabrics built from dumps: export-import round trip, up/down routing, the check against the
// ideal, seeded faults, node states and placement.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "topology/fabric_check.hpp"
#include "topology/fabric_faults.hpp"
#include "topology/fabric_import.hpp"
#include "topology/node_states.hpp"
#include "topology/placement.hpp"
#include "topology/routing.hpp"

namespace {

using namespace twin::topology;

const std::string kData = std::string(CLUSTERTWIN_TEST_DATA) + "/ibnetdiscover/";
const std::string kNdr = kData + "nvidia-topograph-example.out";

Fabric import_text(const std::string& text, ClusterSpec cluster = {}) {
  return Fabric(cluster, FabricSpec{}, plan_from_ibnetdiscover(parse_ibnetdiscover(text, "t")));
}

std::string export_text(const Fabric& f) {
  std::ostringstream out;
  write_ibnetdiscover(out, to_ibnetdiscover(f));
  return out.str();
}

ClusterSpec small_cluster(int nodes) {
  ClusterSpec c;
  c.nodes = nodes;
  c.gpus_per_node = 8;
  c.nics_per_node = 8;
  return c;
}

FabricSpec small_fabric(int tiers, int radix) {
  FabricSpec f;
  f.tiers = tiers;
  f.switch_radix = radix;
  return f;
}

void expect_same_graph(const Fabric& a, const Fabric& b) {
  ASSERT_EQ(a.node_count(), b.node_count());
  ASSERT_EQ(a.cable_count(), b.cable_count());
  for (std::size_t i = 0; i < a.node_count(); ++i) {
    const auto id = NodeId::from_index(i);
    EXPECT_EQ(a.node(id).kind, b.node(id).kind);
    EXPECT_EQ(a.node_name(id), b.node_name(id));
  }
  for (std::size_t c = 0; c < a.cable_count(); ++c) {
    const auto& la = a.link(a.cable(CableId::from_index(c)).up);
    const auto& lb = b.link(b.cable(CableId::from_index(c)).up);
    EXPECT_EQ(la.src, lb.src) << "cable " << c;
    EXPECT_EQ(la.dst, lb.dst) << "cable " << c;
    EXPECT_DOUBLE_EQ(la.bandwidth_Bps, lb.bandwidth_Bps);
    EXPECT_EQ(a.cable(CableId::from_index(c)).upper_port,
              b.cable(CableId::from_index(c)).upper_port);
  }
  for (int n = 0; n < a.nic_count(); ++n) EXPECT_EQ(a.leaf_of_nic(n), b.leaf_of_nic(n));
}

void expect_same_bom(const Bom& a, const Bom& b) {
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.nics, b.nics);
  EXPECT_EQ(a.leaf.switches, b.leaf.switches);
  EXPECT_EQ(a.spine.switches, b.spine.switches);
  EXPECT_EQ(a.core.switches, b.core.switches);
  EXPECT_EQ(a.leaf.ports_free, b.leaf.ports_free);
  EXPECT_EQ(a.spine.ports_free, b.spine.ports_free);
  EXPECT_EQ(a.cables_total(), b.cables_total());
  EXPECT_EQ(a.transceivers_switch_side, b.transceivers_switch_side);
  EXPECT_DOUBLE_EQ(a.bisection_GBps, b.bisection_GBps);
  EXPECT_DOUBLE_EQ(a.leaf_oversubscription, b.leaf_oversubscription);
}

TEST(ImportedFabric, RoundTripOfGenerated3TierKeepsGraphAndBom) {
  const Fabric gen(small_cluster(8), small_fabric(3, 8));
  const Fabric back = import_text(export_text(gen), small_cluster(8));
  EXPECT_TRUE(back.is_explicit());
  EXPECT_EQ(back.geometry().tiers, 3);
  EXPECT_EQ(back.cluster().nodes, 8);
  EXPECT_EQ(back.cluster().nics_per_node, 8);
  expect_same_graph(gen, back);
  expect_same_bom(compute_bom(gen), compute_bom(back));
}

TEST(ImportedFabric, RoundTripOf2TierSuperPodKeepsBom) {
  const Fabric gen(small_cluster(64), small_fabric(2, 64));
  const Fabric back = import_text(export_text(gen), small_cluster(64));
  expect_same_graph(gen, back);
  expect_same_bom(compute_bom(gen), compute_bom(back));
}

TEST(ImportedFabric, UpDownRoutesMatchTheGeneratedDmodkPathLengths) {
  const Fabric gen(small_cluster(8), small_fabric(3, 8));
  const Fabric back = import_text(export_text(gen), small_cluster(8));
  const Router rg(gen), rb(back);
  for (int src = 0; src < gen.nic_count(); src += 5)
    for (int dst = 0; dst < gen.nic_count(); dst += 3) {
      if (src == dst) continue;
      const Route a = rg.nic_route(src, dst), b = rb.nic_route(src, dst);
      EXPECT_EQ(a.fabric_hops, b.fabric_hops) << src << " -> " << dst;
      EXPECT_EQ(a.hops.size(), b.hops.size());
      EXPECT_NEAR(a.latency_s, b.latency_s, 1e-15);
      // Legal up*/down*: the path is connected from the source NIC to the destination NIC.
      NodeId at = back.nic(src);
      for (const Hop& h : b.hops) {
        EXPECT_EQ(back.link(h.link).src, at);
        at = back.link(h.link).dst;
      }
      EXPECT_EQ(at, back.nic(dst));
    }
}

TEST(ImportedFabric, DmodkSpreadsALeafsDestinationsOverItsUplinks) {
  // On a non-blocking 2-tier tree, the d1 destinations under one remote leaf leave the source
  // leaf through d1 different uplinks (D-mod-k's contention-free shift property).
  const Fabric gen(small_cluster(4), small_fabric(2, 8));
  const Fabric f = import_text(export_text(gen), small_cluster(4));
  const Router r(f);
  const int d1 = f.geometry().leaf_down;
  std::set<LinkId> uplinks;
  int src_nic = 0, remote_leaf = -1, count = 0;
  for (int dst = 0; dst < f.nic_count(); ++dst) {
    if (f.leaf_of_nic(dst) == f.leaf_of_nic(src_nic)) continue;
    if (remote_leaf < 0) remote_leaf = f.leaf_of_nic(dst);
    if (f.leaf_of_nic(dst) != remote_leaf) continue;
    uplinks.insert(r.nic_route(src_nic, dst).hops[1].link);
    ++count;
  }
  EXPECT_EQ(count, d1);
  EXPECT_EQ(static_cast<int>(uplinks.size()), d1);
}

TEST(ImportedFabric, AdaptiveSplitsOverEveryShortestPath) {
  const Fabric gen(small_cluster(4), small_fabric(2, 8));
  const Fabric f = import_text(export_text(gen), small_cluster(4));
  const Router r(f, nullptr, RoutingMode::adaptive);
  int dst = 0;
  while (f.leaf_of_nic(dst) == f.leaf_of_nic(0)) ++dst;
  const Route route = r.nic_route(0, dst);
  double leaving = 0;
  for (const Hop& h : route.hops)
    if (f.node(f.link(h.link).src).kind == NodeKind::leaf &&
        f.node(f.link(h.link).dst).kind == NodeKind::spine)
      leaving += h.fraction;
  EXPECT_NEAR(leaving, 1.0, 1e-12);
  EXPECT_EQ(route.hops.size(), 2u + 2u * static_cast<std::size_t>(f.geometry().leaf_up));
}

TEST(ImportedFabric, FailedUplinkIsRoutedAround) {
  const Fabric gen(small_cluster(4), small_fabric(2, 8));
  const Fabric f = import_text(export_text(gen), small_cluster(4));
  int dst = 0;
  while (f.leaf_of_nic(dst) == f.leaf_of_nic(0)) ++dst;
  const LinkId first_up = Router(f).nic_route(0, dst).hops[1].link;
  FabricState state(f);
  state.fail_cable(f.link(first_up).cable);
  const Route r = Router(f, &state).nic_route(0, dst);
  for (const Hop& h : r.hops) EXPECT_NE(f.link(h.link).cable, f.link(first_up).cable);
  EXPECT_EQ(r.fabric_hops, 4);
}

TEST(ImportedFabric, RealDumpRoutesEveryUsablePair) {
  ClusterSpec c;
  FabricSpec s;
  s.file = kNdr;
  const Fabric f(c, s);
  EXPECT_EQ(f.geometry().leaves, 31);
  EXPECT_EQ(f.geometry().spines, 9);
  EXPECT_EQ(f.cluster().nics_per_node, 4);
  const Router r(f);
  int routed = 0;
  for (int a = 0; a < f.nic_count(); a += 7)
    for (int b = 0; b < f.nic_count(); b += 11)
      if (a != b && f.nic_present(a) && f.nic_present(b)) {
        const Route route = r.nic_route(a, b);
        EXPECT_TRUE(route.fabric_hops == 2 || route.fabric_hops == 4);
        ++routed;
      }
  EXPECT_GT(routed, 1000);
}

TEST(ImportedFabric, CheckOfRealDumpFindsMissingCablesAndTheRailSwap) {
  ClusterSpec c;
  FabricSpec s;
  s.file = kNdr;
  const Fabric f(c, s);
  const FabricCheck check = check_fabric(f);
  EXPECT_EQ(check.switch_link, "4xNDR");
  EXPECT_EQ(check.parallel_cables, 2);
  EXPECT_EQ(check.ideal_leaf_up, 18);  // 9 spines x 2
  EXPECT_EQ(check.count("slow_link"), 0);
  EXPECT_GT(check.count("missing_link"), 0);
  // Leaf A09-P1-IBLEAF-04-04 has 16 uplinks (2 to each of 8 spines): one spine unreached.
  bool found = false;
  for (const auto& d : check.deviations)
    if (d.kind == "uneven_uplinks" && d.where == "A09-P1-IBLEAF-04-04") {
      EXPECT_EQ(d.detail, "16 of 18 uplinks");
      found = true;
    }
  EXPECT_TRUE(found);
  // The swapped pair in unit 08: an HCA-6 on rail 2's leaf and an HCA-5 on rail 3's.
  int swapped = 0;
  for (const auto& d : check.deviations)
    if (d.kind == "wrong_rail" && d.where.find("B09-P1-IBLEAF-0") != std::string::npos &&
        (d.detail.find("HCA-5") != std::string::npos ||
         d.detail.find("HCA-6") != std::string::npos))
      ++swapped;
  EXPECT_EQ(swapped, 2);
  EXPECT_LT(check.bisection_GBps, check.ideal_bisection_GBps);
  EXPECT_GT(check.worst_leaf_ratio, check.ideal_leaf_ratio);
}

TEST(ImportedFabric, FaultsAreSeededAndShowInTheCheck) {
  const Fabric gen(small_cluster(4), small_fabric(2, 8));
  IbnetFile a = to_ibnetdiscover(gen), b = to_ibnetdiscover(gen);
  FaultSpec spec;
  spec.remove_cables = 2;
  spec.downgrade_links = 1;
  spec.swap_cable_pairs = 1;
  spec.seed = 7;
  const auto log_a = apply_faults(a, spec);
  EXPECT_EQ(log_a, apply_faults(b, spec));  // same seed, same faults
  ASSERT_EQ(log_a.size(), 4u);
  std::ostringstream text;
  write_ibnetdiscover(text, a);
  const Fabric f = import_text(text.str(), small_cluster(4));
  const FabricCheck check = check_fabric(f);
  EXPECT_EQ(check.count("slow_link"), 1);
  EXPECT_GE(check.count("missing_link"), 1);
  EXPECT_EQ(f.cable_count() + 2, gen.cable_count());
}

TEST(ImportedFabric, NodeStatesTakeDrainedAndDownHostsOutOfPlacement) {
  const std::string states =
      "node0001 idle\nnode0002 drained\nnode0003 down*\nnode0004 mixed+drain\nnode0002 idle\n"
      "unknown-node idle\n";
  const auto entries = parse_node_states(states, "sinfo.txt");
  ASSERT_EQ(entries.size(), 6u);
  EXPECT_EQ(entries[2].state, HostState::down);
  EXPECT_EQ(entries[3].state, HostState::drained);
  Fabric f(small_cluster(8), small_fabric(3, 8));
  std::vector<std::string> names;
  for (int h = 0; h < 8; ++h) names.push_back(f.host_name(h));
  f.apply_host_states(resolve_node_states(entries, names, "sinfo.txt"));
  EXPECT_EQ(f.host_state(2), HostState::drained);  // the worst of "drained" and "idle"
  EXPECT_EQ(f.usable_host_count(), 5);
  const Placement p = place_job(f, 16);
  EXPECT_EQ(p.hosts, (std::vector<int>{0, 1}));
  const Placement q = place_job(f, 40);
  EXPECT_EQ(q.hosts, (std::vector<int>{0, 1, 5, 6, 7}));
  EXPECT_EQ(q.gpu_of_rank[16], 5 * 8);
  EXPECT_THROW(place_job(f, 48), twin::core::Error);
}

TEST(ImportedFabric, BadNodeStatesNameTheLine) {
  try {
    parse_node_states("node0001 idle\nnode0002 sleepy\n", "sinfo.txt");
    FAIL();
  } catch (const twin::core::Error& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos);
  }
  EXPECT_THROW(parse_node_states("node0001\n", "s"), twin::core::Error);
  EXPECT_THROW(resolve_node_states(parse_node_states("x idle\n", "s"), {"a", "b"}, "s"),
               twin::core::Error);
}

TEST(ImportedFabric, RealDumpHostsMissingAnAdapterAreNotPlaced) {
  ClusterSpec c;
  FabricSpec s;
  s.file = kNdr;
  c.node_states = kData + "node-states-example.txt";
  const Fabric f(c, s);
  int complete = 0;
  for (int h = 0; h < f.cluster().nodes; ++h) {
    bool all = true;
    for (int r = 0; r < 4; ++r) all = all && f.nic_present(h * 4 + r);
    complete += all;
  }
  EXPECT_EQ(f.usable_host_count(), complete - 3);  // c02, c04, c06 out; c02 listed twice
  const Placement p = place_job(f, 8 * f.usable_host_count());
  for (int h : p.hosts) EXPECT_TRUE(f.host_usable(h)) << f.host_name(h);
}

}  // namespace
