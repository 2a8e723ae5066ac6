#pragma once
/// Reports on a scenario's fabric: the bill of materials and the routing load of the traffic
/// patterns that matter to training (rail-aligned rings, the bisection shift), as readable text
/// and as JSON. Shared by the CLI and the GUI.

#include <nlohmann/json.hpp>
#include <string>

#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "topology/link_load.hpp"
#include "twin/scenario.hpp"

namespace twin::sim {

/// `clustertwin bom --json`: switches, cables, transceivers, ports, GPUs, bandwidths.
nlohmann::ordered_json bom_json(const topology::Fabric& fabric, const topology::Bom& bom);
/// The readable bill-of-materials table.
std::string bom_table(const Scenario& scenario, const topology::Fabric& fabric,
                      const topology::Bom& bom);

struct PatternLoad {
  std::string pattern;
  int flows = 0;
  topology::LinkLoadReport load;
};

/// Routes the training traffic patterns on the fabric and reports per-tier link loads.
std::vector<PatternLoad> pattern_loads(const topology::Fabric& fabric,
                                       const topology::Router& router);
nlohmann::ordered_json pattern_loads_json(const std::vector<PatternLoad>& loads);
std::string pattern_loads_table(const std::vector<PatternLoad>& loads);

/// `clustertwin run --json` for a scenario without a model: the fabric graph's size, its bill of
/// materials and the routing load of the training traffic patterns.
nlohmann::ordered_json fabric_only_json(const Scenario& scenario, const topology::Fabric& fabric,
                                        const topology::Router& router);

}  // namespace twin::sim
