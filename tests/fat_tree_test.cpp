#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "fabric_fixtures.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"

namespace twin::topology {
namespace {

TEST(FatTree, Reference4096GpuBom) {
  // Radix 64, non-blocking, 3 tiers, 4,096 NICs: 4,096 / 32 = 128 leaves; 4 pods of 32 leaves
  // and 32 spines = 128 spines; 4,096 spine uplinks / 64 ports = 64 cores.
  const Fabric fabric = test::reference_fabric();
  const Bom bom = compute_bom(fabric);
  EXPECT_EQ(bom.gpus, 4096);
  EXPECT_EQ(bom.leaf.switches, 128);
  EXPECT_EQ(bom.spine.switches, 128);
  EXPECT_EQ(bom.core.switches, 64);
  EXPECT_EQ(bom.switches_total(), 320);
  EXPECT_EQ(bom.cables_node_leaf, 4096);
  EXPECT_EQ(bom.cables_leaf_spine, 4096);
  EXPECT_EQ(bom.cables_spine_core, 4096);
  EXPECT_EQ(bom.cables_total(), 12288);
  // Every port of every switch is used in the full design.
  EXPECT_EQ(bom.leaf.ports_free + bom.spine.ports_free + bom.core.ports_free, 0);
  // Half the endpoints at 50 GB/s each cross the worst balanced cut.
  EXPECT_DOUBLE_EQ(bom.bisection_GBps, 2048 * 50.0);
  // Transceivers: one per NIC; switch side 320 switches x 32 twin-port cages.
  EXPECT_EQ(bom.transceivers_node_side, 4096);
  EXPECT_EQ(bom.transceivers_switch_side, 320 * 32);
}

TEST(FatTree, GraphHasEveryVertexAndLink) {
  const Fabric fabric = test::reference_fabric();
  // GPUs + NICs + NVSwitch domains + switches.
  EXPECT_EQ(fabric.node_count(), 4096u + 4096u + 512u + 320u);
  // Two links per cable, plus NVLink and PCIe up/down per GPU.
  EXPECT_EQ(fabric.link_count(), 2u * 12288u + 4u * 4096u);
  EXPECT_EQ(boost::num_edges(fabric.graph()), fabric.link_count());
  // Every cable's up link climbs a tier.
  for (const Cable& cable : fabric.cables()) {
    const Link& up = fabric.link(cable.up);
    const Link& down = fabric.link(cable.down);
    EXPECT_EQ(up.src, down.dst);
    EXPECT_EQ(up.dst, down.src);
    EXPECT_LT(static_cast<int>(fabric.node(up.src).kind),
              static_cast<int>(fabric.node(up.dst).kind));
  }
}

TEST(FatTree, RailOptimizedPutsRailIOnLeafGroupI) {
  const Fabric fabric = test::reference_fabric();
  // Node 0 and node 31 share scalable unit 0: rail r is on leaf r.
  for (int rail = 0; rail < 8; ++rail) {
    EXPECT_EQ(fabric.leaf_of_nic(0 * 8 + rail), rail);
    EXPECT_EQ(fabric.leaf_of_nic(31 * 8 + rail), rail);
    EXPECT_EQ(fabric.leaf_of_nic(32 * 8 + rail), 8 + rail);
  }
}

TEST(FatTree, NotRailOptimizedKeepsANodeOnOneLeaf) {
  ClusterSpec c;
  FabricSpec f;
  f.rail_optimized = false;
  const Fabric fabric(c, f);
  for (int rail = 0; rail < 8; ++rail) EXPECT_EQ(fabric.leaf_of_nic(5 * 8 + rail), 1);
  EXPECT_EQ(compute_bom(fabric).cables_total(), 12288);
}

struct SuperPodRow {
  int scalable_units, nodes, gpus, leaves, spines, cables_compute, cables_spine_leaf;
};

std::vector<SuperPodRow> read_superpod_table() {
  std::ifstream in(std::string(CLUSTERTWIN_TEST_DATA) + "/topology/superpod-h100-2tier.csv");
  EXPECT_TRUE(in.good());
  std::vector<SuperPodRow> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || line.rfind("scalable_units", 0) == 0) continue;
    SuperPodRow r{};
    char comma;
    std::istringstream s(line);
    s >> r.scalable_units >> comma >> r.nodes >> comma >> r.gpus >> comma >> r.leaves >> comma >>
        r.spines >> comma >> r.cables_compute >> comma >> r.cables_spine_leaf;
    rows.push_back(r);
  }
  return rows;
}

TEST(FatTree, ReproducesPublishedDgxH100SuperPodTable) {
  const auto rows = read_superpod_table();
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& row : rows) {
    ClusterSpec c;
    c.nodes = row.nodes;
    FabricSpec f;
    f.tiers = 2;
    f.management_nodes = 1;  // the fabric manager takes one node slot, 4 connections
    f.management_ports_per_node = 4;
    const Fabric fabric(c, f);
    const Bom bom = compute_bom(fabric);
    SCOPED_TRACE("scalable units: " + std::to_string(row.scalable_units));
    EXPECT_EQ(bom.gpus, row.gpus);
    EXPECT_EQ(bom.leaf.switches, row.leaves);
    EXPECT_EQ(bom.spine.switches, row.spines);
    EXPECT_EQ(bom.cables_node_leaf, row.cables_compute);
    EXPECT_EQ(bom.cables_leaf_spine, row.cables_spine_leaf);
    EXPECT_EQ(bom.core.switches, 0);
  }
}

TEST(FatTree, SpineCountFollowsEvenSpreadOfUplinks) {
  // 3 SUs: 24 leaves x 32 uplinks = 768 ports would fit on 12 spines, but 32 uplinks cannot
  // spread evenly over 12; the smallest divisor of 32 that fits is 16 (2 cables per pair).
  ClusterSpec c;
  c.nodes = 95;
  FabricSpec f;
  f.tiers = 2;
  f.management_nodes = 1;
  const Fabric fabric(c, f);
  EXPECT_EQ(fabric.geometry().spines, 16);
  EXPECT_EQ(fabric.geometry().leaf_spine_parallel, 2);
}

TEST(FatTree, TwoTiersOfRadix64StopAt2048) {
  ClusterSpec c;
  c.nodes = 256;  // 2,048 GPUs fit
  FabricSpec f;
  f.tiers = 2;
  const Bom bom = compute_bom(Fabric(c, f));
  EXPECT_EQ(bom.leaf.switches, 64);
  EXPECT_EQ(bom.spine.switches, 32);
  c.nodes = 512;
  try {
    Fabric too_big(c, f);
    FAIL() << "4,096 endpoints on 2 tiers must be refused";
  } catch (const core::Error& e) {
    EXPECT_EQ(e.field(), "fabric.tiers");
    const std::string what = e.what();
    EXPECT_NE(what.find("2 tiers of radix-64 switches hold at most 2,048"), std::string::npos)
        << what;
    EXPECT_NE(what.find("4,096 requested"), std::string::npos) << what;
    EXPECT_NE(what.find("use 3 tiers"), std::string::npos) << what;
  }
}

TEST(FatTree, ThreeTiersOfRadix64StopAt65536) {
  ClusterSpec c;
  c.nodes = 8192;  // 65,536 GPUs: the largest non-blocking 3-tier radix-64 tree (k^3/4)
  const Bom bom = compute_bom(Fabric(c, {}));
  EXPECT_EQ(bom.leaf.switches, 2048);
  EXPECT_EQ(bom.spine.switches, 2048);
  EXPECT_EQ(bom.core.switches, 1024);
  c.nodes = 8193;
  EXPECT_THROW(Fabric(c, {}), core::Error);
}

TEST(FatTree, TwoToOneOversubscriptionHalvesLeafUplinkCapacity) {
  for (int tiers : {2, 3}) {
    ClusterSpec c;
    c.nodes = 64;
    FabricSpec f;
    f.tiers = tiers;
    f.oversubscription = 2.0;
    const Fabric fabric(c, f);
    double down_Bps = 0, up_Bps = 0;
    for (const Cable& cable : fabric.cables()) {
      const Link& l = fabric.link(cable.up);
      if (fabric.node(l.dst).kind != NodeKind::leaf && fabric.node(l.src).kind != NodeKind::leaf)
        continue;
      (fabric.node(l.dst).kind == NodeKind::leaf ? down_Bps : up_Bps) += l.bandwidth_Bps;
    }
    // Per leaf: 42 down-ports and 21 up-ports of a 64-port switch.
    EXPECT_EQ(fabric.geometry().leaf_down, 42);
    EXPECT_EQ(fabric.geometry().leaf_up, 21);
    const Bom bom = compute_bom(fabric);
    EXPECT_DOUBLE_EQ(bom.leaf_oversubscription, 2.0);
    // Full leaves carry exactly half the capacity upward that they take in from NICs.
    const double leaves = fabric.geometry().leaves;
    EXPECT_DOUBLE_EQ(up_Bps / leaves, 21 * 50e9);
    EXPECT_DOUBLE_EQ(fabric.geometry().leaf_up * 2.0, fabric.geometry().leaf_down);
    EXPECT_LT(up_Bps, down_Bps);
  }
}

TEST(FatTree, ReservedPortsAndManagementNodesTakeLeafPorts) {
  ClusterSpec c;
  c.nodes = 511;  // 4,088 GPUs as in a published 3-tier H100 cluster
  FabricSpec f;
  f.management_nodes = 1;
  const Bom bom = compute_bom(Fabric(c, f));
  EXPECT_EQ(bom.gpus, 4088);
  EXPECT_EQ(bom.cables_node_leaf, 4088 + 4);
  EXPECT_EQ(bom.leaf.switches, 128);
  f.reserved_ports_per_leaf = 2;  // 62 usable: 31 down, 31 up
  const Fabric reserved(c, f);
  EXPECT_EQ(reserved.geometry().leaf_down, 31);
  EXPECT_EQ(reserved.geometry().leaf_up, 31);
}

struct BadSpec {
  const char* field;
  void (*mutate)(ClusterSpec&, FabricSpec&);
};

TEST(FatTree, EveryErrorNamesItsField) {
  const BadSpec cases[] = {
      {"cluster.nodes", [](ClusterSpec& c, FabricSpec&) { c.nodes = 0; }},
      {"cluster.gpus_per_node", [](ClusterSpec& c, FabricSpec&) { c.gpus_per_node = -1; }},
      {"cluster.nics_per_node", [](ClusterSpec& c, FabricSpec&) { c.nics_per_node = 12; }},
      {"cluster.nics_per_node",  // GPUs within the modelled count, twice as many NICs not
       [](ClusterSpec& c, FabricSpec&) {
         c.nodes = (1 << 20) / 8;  // the most GPUs modelled
         c.nics_per_node = 16;
       }},
      {"cluster.nic_gbps", [](ClusterSpec& c, FabricSpec&) { c.nic_gbps = 0; }},
      {"cluster.nvlink_GBps", [](ClusterSpec& c, FabricSpec&) { c.nvlink_GBps = -5; }},
      {"fabric.kind", [](ClusterSpec&, FabricSpec& f) { f.kind = "dragonfly"; }},
      {"fabric.tiers", [](ClusterSpec&, FabricSpec& f) { f.tiers = 4; }},
      {"fabric.switch_radix", [](ClusterSpec&, FabricSpec& f) { f.switch_radix = 63; }},
      {"fabric.oversubscription", [](ClusterSpec&, FabricSpec& f) { f.oversubscription = 0.5; }},
      {"fabric.spine_oversubscription",
       [](ClusterSpec&, FabricSpec& f) { f.spine_oversubscription = 0; }},
      {"fabric.reserved_ports_per_leaf",
       [](ClusterSpec&, FabricSpec& f) { f.reserved_ports_per_leaf = 63; }},
      {"fabric.management_ports_per_node",
       [](ClusterSpec&, FabricSpec& f) {
         f.management_nodes = 1;
         f.management_ports_per_node = 9;
       }},
      {"fabric.cable_latency_ns", [](ClusterSpec&, FabricSpec& f) { f.cable_latency_ns = -1; }},
      {"fabric.tiers",
       [](ClusterSpec& c, FabricSpec& f) {
         c.nodes = 512;
         f.tiers = 2;
       }},
  };
  for (const auto& bad : cases) {
    ClusterSpec c;
    FabricSpec f;
    bad.mutate(c, f);
    try {
      Fabric fabric(c, f);
      ADD_FAILURE() << "accepted a bad " << bad.field;
    } catch (const core::Error& e) {
      EXPECT_EQ(e.field(), bad.field) << e.what();
      EXPECT_FALSE(e.reason().empty());
    }
  }
}

}  // namespace
}  // namespace twin::topology
