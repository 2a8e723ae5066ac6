// The ibnetdiscover reader and the import on real dumps: the NDR fat tree of NVIDIA's topograph
// tests and the historical SDR/QDR/EDR examples (data/ibnetdiscover/README.md), and bad input.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "core/error.hpp"
#include "topology/fabric.hpp"
#include "topology/fabric_import.hpp"
#include "topology/ibnetdiscover.hpp"

namespace {

using namespace twin::topology;

const std::string kData = std::string(CLUSTERTWIN_TEST_DATA) + "/ibnetdiscover/";
const std::string kNdr = kData + "nvidia-topograph-example.out";

std::string error_of(const std::string& text) {
  try {
    parse_ibnetdiscover(text, "bad.topo");
  } catch (const twin::core::Error& e) {
    return e.what();
  }
  return "no error";
}

const char* kTwoNodes = R"(#
vendid=0x2c9
switchguid=0x10(10)
Switch	8 "S-0000000000000010"		# "leaf-a" enhanced port 0 lid 1 lmc 0
[1]	"H-0000000000000020"[1](20) 		# "host1 mlx5_0" lid 2 4xHDR

vendid=0x2c9
caguid=0x20
Ca	1 "H-0000000000000020"		# "host1 mlx5_0"
[1](20) 	"S-0000000000000010"[1]		# lid 2 lmc 0 "leaf-a" lid 1 4xHDR
)";

TEST(Ibnetdiscover, MinimalFileGivesOneLinkOfWidthTimesLaneRate) {
  const IbnetFile f = parse_ibnetdiscover(kTwoNodes, "mini");
  ASSERT_EQ(f.nodes.size(), 2u);
  ASSERT_EQ(f.links.size(), 1u);  // listed at both ends, kept once
  EXPECT_EQ(f.links[0].width, 4);
  EXPECT_EQ(f.links[0].speed, "HDR");
  EXPECT_DOUBLE_EQ(f.links[0].gbps, 200.0);  // 4 lanes x 50 Gb/s
  EXPECT_EQ(f.nodes[0].description, "leaf-a");
}

TEST(Ibnetdiscover, LaneRatesAreDataRatesAfterLineCoding) {
  EXPECT_DOUBLE_EQ(4 * lane_gbps("SDR"), 8.0);  // 10 Gb/s signalling, 8b/10b
  EXPECT_DOUBLE_EQ(4 * lane_gbps("QDR"), 32.0);
  EXPECT_DOUBLE_EQ(4 * lane_gbps("EDR"), 100.0);
  EXPECT_DOUBLE_EQ(4 * lane_gbps("NDR"), 400.0);
  EXPECT_EQ(width_speed_for(400), "4xNDR");
  EXPECT_EQ(width_speed_for(100), "4xEDR");
  EXPECT_THROW(width_speed_for(123), twin::core::Error);
}

TEST(Ibnetdiscover, RealNdrDumpHas40SwitchesAllLinks4xNdr) {
  const IbnetFile f = read_ibnetdiscover(kNdr);
  int switches = 0, aggregation = 0;
  for (const auto& n : f.nodes) {
    switches += n.type == IbNodeType::switch_node;
    aggregation += n.description == "Mellanox Technologies Aggregation Node";
  }
  EXPECT_EQ(switches, 40);
  EXPECT_EQ(aggregation, 40);
  int switch_lines = 0;
  for (const auto& l : f.links) {
    EXPECT_EQ(l.width, 4);
    EXPECT_EQ(l.speed, "NDR");
    // Every link has a switch end: the 1646 switch-side lines of the file, one per switch end.
    switch_lines += (f.nodes[static_cast<std::size_t>(l.a)].type == IbNodeType::switch_node) +
                    (f.nodes[static_cast<std::size_t>(l.b)].type == IbNodeType::switch_node);
  }
  EXPECT_EQ(switch_lines, 1646);
}

TEST(Ibnetdiscover, ImportOfRealDumpFindsLeavesSpinesHostsAndRails) {
  const FabricPlan plan = plan_from_ibnetdiscover(read_ibnetdiscover(kNdr));
  EXPECT_EQ(plan.aggregation_nodes, 40);
  EXPECT_EQ(plan.tiers, 2);
  EXPECT_EQ(plan.radix, 64);  // "Switch 65": 64 ports + the SHARP node's virtual port
  EXPECT_EQ(plan.rails, 4);
  int leaves = 0, spines = 0;
  for (const auto& s : plan.switches) {
    if (s.tier == 1) {
      ++leaves;
      EXPECT_NE(s.name.find("IBLEAF"), std::string::npos) << s.name;
      // Leaf names are IBLEAF-0<rail>-0<unit>; rails are inferred from the adapters alone.
      const int named_rail = s.name[s.name.find("IBLEAF-") + 8] - '1';
      EXPECT_EQ(s.rail, named_rail) << s.name;
    } else {
      ++spines;
      EXPECT_NE(s.name.find("IBSPINE"), std::string::npos) << s.name;
    }
  }
  EXPECT_EQ(leaves, 31);
  EXPECT_EQ(spines, 9);
  // No SHARP node became a host; named hosts carry their adapters on distinct rails.
  std::map<int, std::set<int>> rails_of_host;
  for (const auto& n : plan.nics) {
    EXPECT_EQ(n.adapter.find("Aggregation"), std::string::npos);
    EXPECT_TRUE(rails_of_host[n.host].insert(n.rail).second);
  }
  int c17 = -1;
  for (std::size_t h = 0; h < plan.hosts.size(); ++h)
    if (plan.hosts[h].name == "a08-p1-dgx-04-c17") c17 = static_cast<int>(h);
  ASSERT_GE(c17, 0);
  EXPECT_EQ(rails_of_host[c17], (std::set<int>{0, 1, 2, 3}));  // mlx5_0, _1, _4, _5
  for (const auto& c : plan.cables) EXPECT_DOUBLE_EQ(c.gbps, 400.0);
}

TEST(Ibnetdiscover, HistoricalExamplesKeepTheirSpeedsAndWidths) {
  // man page example (2007): 4xSDR, one link trained to 1xSDR.
  const IbnetFile one = read_ibnetdiscover(kData + "jabl-ibtopotool-tests-1.topo");
  std::multiset<std::string> rates1;
  for (const auto& l : one.links) rates1.insert(std::to_string(l.width) + "x" + l.speed);
  // The switch-switch [10]-[1] cable, and the host port its switch lists as 4xSDR but the host
  // lists as 1xSDR (the lower is kept, with a warning).
  EXPECT_EQ(rates1.count("1xSDR"), 2u);
  EXPECT_EQ(rates1.count("4xSDR"), 5u);
  EXPECT_EQ(one.warnings.size(), 2u);  // both 1xSDR links are listed as 4xSDR at one end
  const IbnetFile two = read_ibnetdiscover(kData + "jabl-ibtopotool-tests-2.topo");
  ASSERT_EQ(two.links.size(), 2u);
  EXPECT_DOUBLE_EQ(two.links[0].gbps, 8.0);
  // 2016 SwitchIB dump: EDR, FDR, QDR and SDR together; loopback cables; a captured diagnostic.
  const IbnetFile three = read_ibnetdiscover(kData + "jabl-ibtopotool-tests-3.topo");
  std::set<std::string> speeds;
  for (const auto& l : three.links) speeds.insert(l.speed);
  EXPECT_EQ(speeds, (std::set<std::string>{"EDR", "FDR", "QDR", "SDR"}));
  EXPECT_EQ(three.warnings.size(), 1u);
  const FabricPlan p3 = plan_from_ibnetdiscover(three);
  EXPECT_EQ(p3.hosts.size(), 5u);  // 6 adapters; r-ufm101 has two
  const IbnetFile four = read_ibnetdiscover(kData + "jabl-ibtopotool-tests-4.topo");
  ASSERT_EQ(four.links.size(), 1u);
  EXPECT_DOUBLE_EQ(four.links[0].gbps, 32.0);  // 4xQDR
}

TEST(Ibnetdiscover, LoneAdapterWithoutLinksIsRefused) {
  const IbnetFile f = read_ibnetdiscover(kData + "nvidia-topograph-example-bad.out");
  EXPECT_THROW(plan_from_ibnetdiscover(f), twin::core::Error);
}

TEST(Ibnetdiscover, BadInputNamesTheLine) {
  // Truncated in the middle of a port line.
  std::string t = kTwoNodes;
  EXPECT_NE(error_of(t.substr(0, t.rfind("[1](20)") + 12)).find("line 10"), std::string::npos);
  // Truncated before the CA block: the link points to a GUID never described.
  EXPECT_NE(error_of(t.substr(0, t.find("\nvendid", 10))).find("line 5"), std::string::npos);
  EXPECT_NE(error_of(t.substr(0, t.find("\nvendid", 10))).find("no node block"), std::string::npos);
  // Garbage.
  EXPECT_NE(error_of("hello world\n").find("line 1"), std::string::npos);
  EXPECT_NE(error_of("").find("no node blocks"), std::string::npos);
  // A port past the switch's port count.
  std::string past = t;
  past.replace(past.find("[1]\t\"H-"), 3, "[9]");
  EXPECT_NE(error_of(past).find("port 9 is past this node's 8 ports"), std::string::npos);
  EXPECT_NE(error_of(past).find("line 5"), std::string::npos);
  // Two links on one port.
  std::string twice = t;
  twice.insert(twice.find("\n\nvendid"),
               "\n[1]\t\"H-0000000000000020\"[1](20) \t\t# \"x\" lid 2 4xHDR");
  EXPECT_NE(error_of(twice).find("port 1 already has a link (line 5)"), std::string::npos);
  // The two ends disagree on the rate: not an error (a link caught retraining); the lower wins.
  std::string rate = t;
  rate.replace(rate.rfind("4xHDR"), 5, "4xEDR");
  const IbnetFile retrained = parse_ibnetdiscover(rate, "retrained");
  EXPECT_DOUBLE_EQ(retrained.links[0].gbps, 100.0);
  ASSERT_EQ(retrained.warnings.size(), 1u);
  EXPECT_NE(retrained.warnings[0].find("taking the lower"), std::string::npos);
  // A link the other end does not list.
  std::string one_sided = t;
  one_sided.erase(one_sided.rfind("[1](20)"));
  EXPECT_NE(error_of(one_sided).find("does not list this link"), std::string::npos);
  // Unknown speed.
  std::string speed = t;
  speed.replace(speed.find("4xHDR"), 5, "4xFOO");
  EXPECT_NE(error_of(speed).find("unknown InfiniBand speed"), std::string::npos);
}

TEST(Ibnetdiscover, WriteThenParseGivesTheSameLinks) {
  const IbnetFile a = read_ibnetdiscover(kNdr);
  std::ostringstream out;
  write_ibnetdiscover(out, a);
  const IbnetFile b = parse_ibnetdiscover(out.str(), "rewritten");
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(a.links[i].a, b.links[i].a);
    EXPECT_EQ(a.links[i].b_port, b.links[i].b_port);
    EXPECT_EQ(a.links[i].gbps, b.links[i].gbps);
  }
}

}  // namespace
