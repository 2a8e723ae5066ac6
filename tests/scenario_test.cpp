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
  // Every field the writer writes comes back as the original struct had it.
  EXPECT_EQ(again.name, s.name);
  EXPECT_EQ(again.cluster.gpus_per_node, s.cluster.gpus_per_node);
  EXPECT_EQ(again.cluster.gpu, s.cluster.gpu);
  EXPECT_EQ(again.cluster.nics_per_node, s.cluster.nics_per_node);
  EXPECT_EQ(again.cluster.nic_gbps, s.cluster.nic_gbps);
  EXPECT_EQ(again.cluster.nvlink_GBps, s.cluster.nvlink_GBps);
  EXPECT_EQ(again.cluster.pcie_GBps, s.cluster.pcie_GBps);
  EXPECT_EQ(again.fabric.switch_radix, s.fabric.switch_radix);
  EXPECT_EQ(again.fabric.rail_optimized, s.fabric.rail_optimized);
  EXPECT_EQ(again.fabric.oversubscription, s.fabric.oversubscription);
  EXPECT_EQ(again.fabric.routing, s.fabric.routing);
  EXPECT_EQ(again.fabric.routing_seed, s.fabric.routing_seed);
  EXPECT_EQ(again.fabric.switch_latency_ns, s.fabric.switch_latency_ns);
  ASSERT_TRUE(again.has_job);
  EXPECT_EQ(again.model.layers, s.model.layers);
  EXPECT_EQ(again.model.hidden, s.model.hidden);
  EXPECT_EQ(again.model.vocab, s.model.vocab);
  EXPECT_EQ(again.model.total_params(), s.model.total_params());
  EXPECT_EQ(again.parallelism.tp, s.parallelism.tp);
  EXPECT_EQ(again.parallelism.pp, s.parallelism.pp);
  EXPECT_EQ(again.parallelism.dp, s.parallelism.dp);
  EXPECT_EQ(again.parallelism.zero, s.parallelism.zero);
  EXPECT_EQ(again.parallelism.recompute, s.parallelism.recompute);
  EXPECT_EQ(again.training.global_batch, s.training.global_batch);
  EXPECT_EQ(again.training.tokens, s.training.tokens);
  EXPECT_EQ(again.training.price_per_gpu_hour, s.training.price_per_gpu_hour);
}

}  // namespace
}  // namespace twin::sim
