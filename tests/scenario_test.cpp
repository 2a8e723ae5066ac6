#include <gtest/gtest.h>

#include "core/error.hpp"
#include "test_helpers.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "twin/scenario.hpp"

namespace twin::sim {
namespace {

using test::error_of;

TEST(Scenario, DefaultIsTheReferenceCluster) {
  const Scenario s = load_scenario("");
  EXPECT_EQ(s.source, "<default>");
  EXPECT_EQ(s.cluster.nodes, 512);
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  EXPECT_EQ(s.cluster.gpu, "h100-sxm");
  EXPECT_EQ(s.fabric.tiers, 3);
  EXPECT_EQ(s.fabric.switch_radix, 64);
  EXPECT_TRUE(s.fabric.rail_optimized);
  EXPECT_EQ(s.fabric.routing, topology::RoutingMode::dmodk);
  const topology::Fabric fabric(s.cluster, s.fabric);
  EXPECT_EQ(topology::compute_bom(fabric).cables_total(), 12288);
}

TEST(Scenario, ShippedScenariosLoad) {
  for (const char* name : {"default.yaml", "superpod-4su.yaml", "small-3tier.yaml"}) {
    const Scenario s = load_scenario(std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/" + name);
    EXPECT_NO_THROW(topology::Fabric(s.cluster, s.fabric)) << name;
  }
}

TEST(Scenario, OverridesParseAsYaml) {
  const Scenario s =
      load_scenario("", {"fabric.tiers=2", "cluster.nodes=64", "fabric.rail_optimized=false",
                         "fabric.oversubscription=2.5", "fabric.routing=ecmp", "name=what-if"});
  EXPECT_EQ(s.fabric.tiers, 2);
  EXPECT_EQ(s.cluster.nodes, 64);
  EXPECT_FALSE(s.fabric.rail_optimized);
  EXPECT_DOUBLE_EQ(s.fabric.oversubscription, 2.5);
  EXPECT_EQ(s.fabric.routing, topology::RoutingMode::ecmp);
  EXPECT_EQ(s.name, "what-if");
}

TEST(Scenario, UnknownKeySuggestsTheRightOne) {
  const auto e =
      error_of([] { parse_scenario("schema_version: 1\nfabric:\n  tier: 2\n", "my.yaml"); });
  EXPECT_EQ(e.file(), "my.yaml");
  EXPECT_EQ(e.field(), "fabric.tier");
  EXPECT_NE(std::string(e.what()).find("did you mean 'tiers'?"), std::string::npos) << e.what();
}

TEST(Scenario, UnknownKeyFromSetIsAttributedToSet) {
  const auto e = error_of([] { load_scenario("", {"cluster.gpus=8"}); });
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.field(), "cluster.gpus");
  EXPECT_NE(std::string(e.what()).find("did you mean 'gpus_per_node'"), std::string::npos)
      << e.what();
}

TEST(Scenario, WrongTypeNamesFieldAndValue) {
  const auto e =
      error_of([] { parse_scenario("schema_version: 1\ncluster:\n  nodes: lots\n", "bad.yaml"); });
  EXPECT_EQ(e.field(), "cluster.nodes");
  EXPECT_EQ(e.value(), "lots");
  EXPECT_NE(e.reason().find("integer"), std::string::npos);
  const auto e2 = error_of([] {
    parse_scenario("schema_version: 1\nfabric:\n  rail_optimized: sometimes\n", "bad.yaml");
  });
  EXPECT_EQ(e2.field(), "fabric.rail_optimized");
  const auto e3 =
      error_of([] { parse_scenario("schema_version: 1\nfabric:\n  tiers: [2, 3]\n", "bad.yaml"); });
  EXPECT_EQ(e3.field(), "fabric.tiers");
}

TEST(Scenario, MalformedYamlGivesLineNumber) {
  const auto e = error_of(
      [] { parse_scenario("schema_version: 1\ncluster:\n  nodes: [1, 2\n", "broken.yaml"); });
  EXPECT_EQ(e.file(), "broken.yaml");
  EXPECT_NE(std::string(e.what()).find("line "), std::string::npos) << e.what();
}

TEST(Scenario, SchemaVersionIsRequiredAndChecked) {
  EXPECT_EQ(error_of([] { parse_scenario("cluster: {nodes: 4}\n", "a.yaml"); }).field(),
            "schema_version");
  EXPECT_EQ(error_of([] { parse_scenario("schema_version: 2\n", "a.yaml"); }).value(), "2");
}

TEST(Scenario, BadRoutingModeListsTheValidOnes) {
  const auto e = error_of([] { load_scenario("", {"fabric.routing=dmodK"}); });
  EXPECT_EQ(e.field(), "fabric.routing");
  EXPECT_NE(std::string(e.what()).find("did you mean 'dmodk'"), std::string::npos) << e.what();
}

TEST(Scenario, MissingFileIsAnError) {
  const auto e = error_of([] { load_scenario("/nonexistent/scenario.yaml"); });
  EXPECT_EQ(e.file(), "/nonexistent/scenario.yaml");
}

TEST(Scenario, SectionMustBeAMapping) {
  const auto e = error_of([] { parse_scenario("schema_version: 1\nfabric: 3\n", "a.yaml"); });
  EXPECT_EQ(e.field(), "fabric");
}

TEST(Scenario, ToYamlRoundTrips) {
  const Scenario s = load_scenario("", {"fabric.tiers=2", "cluster.nodes=100"});
  const Scenario again = parse_scenario(to_yaml(s), "roundtrip");
  EXPECT_EQ(again.fabric.tiers, 2);
  EXPECT_EQ(again.cluster.nodes, 100);
  EXPECT_EQ(to_yaml(again), to_yaml(s));
}

}  // namespace
}  // namespace twin::sim
