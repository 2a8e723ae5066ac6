#include <fmt/format.h>

#include "cli/commands.hpp"
#include "topology/bom.hpp"
#include "twin/cluster.hpp"
#include "twin/fabric_report.hpp"

namespace twin::cli {

Action add_bom(CLI::App& app) {
  auto* cmd = app.add_subcommand("bom", "Bill of materials of the scenario's fabric");
  auto opts = std::make_shared<ScenarioOptions>();
  opts->add_to(*cmd);
  return [opts] {
    const sim::Cluster cluster(opts->load());
    const sim::Scenario& scenario = cluster.scenario();
    const topology::Fabric& fabric = cluster.fabric();
    const topology::Bom bom = topology::compute_bom(fabric);
    if (opts->json)
      fmt::print("{}\n", sim::bom_json(fabric, bom).dump(2));
    else
      fmt::print("{}", sim::bom_table(scenario, fabric, bom));
    return 0;
  };
}

}  // namespace twin::cli
