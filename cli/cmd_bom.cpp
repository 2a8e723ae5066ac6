#include <fmt/format.h>

#include "cli/commands.hpp"
#include "topology/bom.hpp"
#include "twin/fabric_report.hpp"

namespace twin::cli {

Action add_bom(CLI::App& app) {
  auto* cmd = app.add_subcommand("bom", "Bill of materials of the scenario's fabric");
  auto opts = std::make_shared<ScenarioOptions>();
  opts->add_to(*cmd);
  return [opts] {
    const sim::Scenario scenario = opts->load();
    const topology::Fabric fabric(scenario.cluster, scenario.fabric);
    const topology::Bom bom = topology::compute_bom(fabric);
    if (opts->json)
      fmt::print("{}\n", sim::bom_json(fabric, bom).dump(2));
    else
      fmt::print("{}", sim::bom_table(scenario, fabric, bom));
    return 0;
  };
}

}  // namespace twin::cli
