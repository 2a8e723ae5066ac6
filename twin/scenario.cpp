#include "twin/scenario.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/file.hpp"
#include "twin/detail/scenario_fields.hpp"
#include "twin/detail/schema_entry.hpp"
#include "twin/yaml_reader.hpp"

namespace twin::sim {
namespace {

using detail::MapReader;

/// `fabric.file`, `fabric.lfts` and `cluster.node_states` are relative to the scenario file's
/// folder (to the current folder for the embedded default), so a scenario and its dump travel
/// together.
std::string relative_to_scenario(const std::string& path, const std::string& source) {
  if (path.empty() || std::filesystem::path(path).is_absolute() || source.empty() ||
      source.front() == '<')
    return path;
  return (std::filesystem::path(source).parent_path() / path).lexically_normal().string();
}

}  // namespace

const std::vector<std::string>& validation_families() {
  static const std::vector<std::string> families = {"megatron", "fsdp"};
  return families;
}

const std::vector<std::string>& validation_metrics() {
  static const std::vector<std::string> metrics = {"tflops_per_gpu",     "tokens_per_s_per_gpu",
                                                   "step_time_s",        "mfu",
                                                   "time_to_train_days", "wall_clock_days"};
  return metrics;
}

namespace {

/// The YAML tree of scenario text with the overrides applied (no field is read yet).
YAML::Node overridden_tree(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides, detail::Origin& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw core::Error("", "",
                      fmt::format("line {}, column {}: malformed YAML: {}", e.mark.line + 1,
                                  e.mark.column + 1, e.msg),
                      source);
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw core::Error("", "", "a scenario is a YAML mapping (schema_version, cluster, fabric, ...)",
                      source);
  detail::apply_overrides(root, overrides, origin);
  return root;
}

}  // namespace

Scenario parse_scenario(const std::string& yaml_text, const std::string& source,
                        const std::vector<std::string>& overrides) {
  detail::Origin origin{source, {}};
  const YAML::Node root = overridden_tree(yaml_text, source, overrides, origin);

  Scenario s;
  s.source = source;
  s.overrides = overrides;
  MapReader top(root, "", origin);
  s.schema_version = 0;
  top.get("schema_version", s.schema_version);
  if (s.schema_version == 0)
    throw top.error("schema_version", "",
                    fmt::format("required; this build reads {}", kSchemaVersion));
  if (s.schema_version != kSchemaVersion)
    throw top.error("schema_version", std::to_string(s.schema_version),
                    fmt::format("unsupported; this build reads {}", kSchemaVersion));
  s.has_job = root["model"].IsDefined() && !root["model"].IsNull();
  s.has_validation = root["validation"].IsDefined() && !root["validation"].IsNull();
  detail::read_by_schema(root, origin, s);
  s.fabric.file = relative_to_scenario(s.fabric.file, source);
  s.fabric.lfts = relative_to_scenario(s.fabric.lfts, source);
  s.cluster.node_states = relative_to_scenario(s.cluster.node_states, source);
  detail::apply_profile_hardware(s, root["cluster"], origin);
  return s;
}

topology::FabricState fabric_state(const Scenario& s, const topology::Fabric& fabric) {
  topology::FabricState state(fabric);
  for (const auto& name : s.failed_switches) {
    bool found = false;
    for (std::size_t i = 0; i < fabric.node_count() && !found; ++i) {
      const auto id = topology::NodeId::from_index(i);
      if (fabric.is_switch(id) && fabric.node_name(id) == name) {
        state.fail_switch(id);
        found = true;
      }
    }
    if (!found)
      throw core::Error("perturbations.failed_switches", name,
                        fmt::format("no such switch (names: leaf[0..{}], spine[0..{}]{})",
                                    fabric.geometry().leaves - 1, fabric.geometry().spines - 1,
                                    fabric.geometry().cores > 0
                                        ? fmt::format(", core[0..{}]", fabric.geometry().cores - 1)
                                        : ""),
                        s.source);
  }
  auto check = [&](int cable, const char* field) {
    if (cable < 0 || cable >= static_cast<int>(fabric.cable_count()))
      throw core::Error(field, std::to_string(cable),
                        fmt::format("no such cable (0..{})", fabric.cable_count() - 1), s.source);
    return topology::CableId(static_cast<std::uint32_t>(cable));
  };
  for (int c : s.failed_cables) state.fail_cable(check(c, "perturbations.failed_cables"));
  for (auto [c, factor] : s.degraded_cables) {
    if (!(factor > 0 && factor <= 1))
      throw core::Error("perturbations.degraded_cables", fmt::format("{}", factor),
                        "factor must be within (0, 1] (use failed_cables for a dead cable)",
                        s.source);
    state.degrade_cable(check(c, "perturbations.degraded_cables"), factor);
  }
  return state;
}

ScenarioText ScenarioText::read(const std::string& path) {
  if (path.empty()) return {"<default>", default_scenario_yaml()};
  return {path, core::read_text_file(path, "scenario file")};
}

Scenario ScenarioText::load(const std::vector<std::string>& overrides) const {
  return parse_scenario(text, source, overrides);
}

std::string ScenarioText::resolved(const std::vector<std::string>& overrides) const {
  detail::Origin origin{source, {}};
  return YAML::Dump(overridden_tree(text, source, overrides, origin)) + "\n";
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  return ScenarioText::read(path).load(overrides);
}

std::string resolved_yaml(const std::string& path, const std::vector<std::string>& overrides) {
  return ScenarioText::read(path).resolved(overrides);
}

std::string to_yaml(const Scenario& s) {
  YAML::Emitter out;
  detail::write_by_schema(out, s);
  return std::string(out.c_str()) + "\n";
}

}  // namespace twin::sim
