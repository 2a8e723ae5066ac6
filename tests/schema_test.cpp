// The scenario schema table drives the reader, the writer, --set/--vary checks and the
// reference page: what is written reads back equal, every key the reader accepts is in the
// table, and docs/scenarios.md is what `clustertwin schema --markdown` prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/scenario_schema.hpp"
#include "twin/sweep.hpp"

namespace twin::sim {
namespace {

using test::error_of;

/// Read, write, read: the second reading equals the first, field by field (where the scenario
/// came from aside).
void expect_round_trip(const Scenario& s, const std::string& name) {
  Scenario again = parse_scenario(to_yaml(s), "<round-trip>");
  again.source = s.source;
  again.overrides = s.overrides;
  EXPECT_TRUE(again == s) << name << ":\n" << to_yaml(s) << "\nread back as\n" << to_yaml(again);
}

TEST(Schema, EveryShippedScenarioRoundTrips) {
  int n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(
           std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".yaml") continue;
    expect_round_trip(load_scenario(entry.path().string()), entry.path().string());
    ++n;
  }
  EXPECT_GT(n, 250);  // the examples, teaching and capacity scenarios and the validation set
}

TEST(Schema, EverySectionIsWrittenAndReadBack) {
  Scenario s = load_scenario("", {"lesson=look at the spine",
                                  "perturbations.slow_gpu.gpu=3",
                                  "perturbations.slow_gpu.factor=1.25",
                                  "perturbations.failed_switches=['spine[1]']",
                                  "perturbations.failed_cables=[5, 7]",
                                  "perturbations.degraded_cables=[{cable: 9, factor: 0.5}]",
                                  "failures.rate_multiplier=2.5",
                                  "failures.gc_pause_ms=120",
                                  "recovery.checkpoint_interval_min=45",
                                  "recovery.async_checkpoint=true",
                                  "costs.pue=1.1",
                                  "collectives.all_reduce=ring/ll128",
                                  "collectives.alltoall=pairwise",
                                  "parallelism.virtual_stages=auto",
                                  "parallelism.stage_layers=[10, 10, 10, 10, 10, 10, "
                                  "10, 10]",
                                  "training.tokens=1.234567890123e13",
                                  "validation.family=megatron",
                                  "validation.metric=mfu",
                                  "validation.published=0.4",
                                  "validation.source=a table"});
  const std::string yaml = to_yaml(s);
  for (const char* key : {"lesson:", "slow_gpu:", "failed_switches:", "degraded_cables:",
                          "gc_pause_ms: 120", "checkpoint_interval_min: 45", "pue: 1.1",
                          "all_reduce: ring/ll128", "virtual_stages: auto", "validation:"})
    EXPECT_NE(yaml.find(key), std::string::npos) << key << " missing from\n" << yaml;
  expect_round_trip(s, "every section");
  const Scenario again = parse_scenario(yaml, "<round-trip>");
  EXPECT_EQ(again.degraded_cables, (std::vector<std::pair<int, double>>{{9, 0.5}}));
  EXPECT_EQ(again.failed_cables, (std::vector<int>{5, 7}));
  EXPECT_EQ(again.training.tokens, 1.234567890123e13);  // the shortest text reads back exactly
  EXPECT_EQ(again.recovery.checkpoint_interval_min, 45);
  EXPECT_EQ(again.algorithm_for("all_reduce"), "ring/ll128");
  EXPECT_EQ(again.parallelism.virtual_stages, 0);
}

TEST(Schema, PathsAreUniqueAndDocumented) {
  std::set<std::string> paths;
  for (const auto& f : scenario_schema()) {
    EXPECT_TRUE(paths.insert(f.path).second) << f.path << " twice";
    EXPECT_FALSE(f.doc.empty()) << f.path;
    EXPECT_NE(f.path.back(), '.');
  }
  EXPECT_NE(find_schema_field("fabric.tiers"), nullptr);
  EXPECT_EQ(find_schema_field("fabric.tiers")->range_text(), "2 .. 3");
  EXPECT_EQ(find_schema_field("cluster.nic_gbps")->unit, "Gb/s");
  EXPECT_EQ(find_schema_field("fabric.switch_radix")->default_text, "64");
  EXPECT_TRUE(is_schema_section("perturbations.slow_gpu"));
  EXPECT_FALSE(is_schema_section("cluster.nodes"));
}

TEST(Schema, EveryFieldAcceptsItsDefault) {
  // A field's documented default is a value the field accepts (or a word for where it comes
  // from: the profile, the preset, auto).
  for (const auto& f : scenario_schema()) {
    if (f.type == FieldType::list || f.default_text == "profile" || f.default_text == "preset's" ||
        f.default_text == "required" || f.default_text == "heads" || f.default_text.empty())
      continue;
    EXPECT_EQ(f.check_value(f.default_text), "") << f.path << " = " << f.default_text;
  }
}

TEST(Schema, SetIsCheckedAgainstTheTableBeforeTheFileIsRead) {
  // The file does not exist: the --set error comes first, from the table.
  auto e = error_of([] { load_scenario("", {"fabric.tiers=4"}); });
  EXPECT_EQ(e.file(), "--set");
  EXPECT_EQ(e.field(), "fabric.tiers");
  EXPECT_EQ(e.reason(), "must be between 2 and 3");
  e = error_of([] { load_scenario("", {"training.precision=fp32"}); });
  EXPECT_EQ(e.reason(), "must be one of 'bf16', 'fp16', 'fp8' (did you mean 'fp16'?)");
  e = error_of([] { load_scenario("", {"failures.weibull_shape=0"}); });
  EXPECT_EQ(e.reason(), "must be positive (1: exponential; < 1: infant mortality)");
  e = error_of([] { load_scenario("", {"cluster.nodes=0"}); });
  EXPECT_EQ(e.reason(), "must be a positive integer");
  e = error_of([] { load_scenario("", {"perturbations.slow_gpu.gpux=1"}); });
  EXPECT_EQ(e.field(), "perturbations.slow_gpu.gpux");
  EXPECT_NE(e.reason().find("did you mean 'gpu'?"), std::string::npos) << e.reason();
  e = error_of([] { load_scenario("", {"clusterr.nodes=1"}); });
  EXPECT_EQ(e.field(), "clusterr");
  EXPECT_NE(e.reason().find("did you mean 'cluster'?"), std::string::npos) << e.reason();
  // Keywords of number fields pass.
  EXPECT_NO_THROW(load_scenario("", {"recovery.checkpoint_interval_min=young_daly"}));
}

TEST(Schema, AValueStatedInTheFileIsCheckedToo) {
  const auto e =
      error_of([] { parse_scenario("schema_version: 1\ncosts:\n  pue: 0.9\n", "costs.yaml"); });
  EXPECT_EQ(e.file(), "costs.yaml");
  EXPECT_EQ(e.field(), "costs.pue");
  EXPECT_EQ(e.reason(), "must be >= 1");
}

TEST(Schema, VaryIsCheckedAgainstTheTable) {
  const ScenarioText text = ScenarioText::read("");
  auto e = error_of([&] { (void)sweep_points(text, {}, {parse_vary("fabric.tierz=2,3")}); });
  EXPECT_EQ(e.file(), "--vary");
  EXPECT_NE(e.reason().find("did you mean 'tiers'?"), std::string::npos) << e.reason();
  e = error_of(
      [&] { (void)sweep_points(text, {}, {parse_vary("fabric.oversubscription=2,0.5")}); });
  EXPECT_EQ(e.file(), "--vary");
  EXPECT_EQ(e.value(), "0.5");
  EXPECT_EQ(e.reason(), "must be >= 1");
}

TEST(Schema, ReferencePageIsCurrent) {
  const std::string path = std::string(CLUSTERTWIN_SOURCE_DIR) + "/docs/scenarios.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(text.str() == schema_markdown())
      << "docs/scenarios.md is stale: regenerate it with\n"
         "  build/clustertwin schema --markdown > docs/scenarios.md";
  for (const auto& f : scenario_schema())
    EXPECT_NE(schema_text().find(f.path), std::string::npos) << f.path;
}

}  // namespace
}  // namespace twin::sim
