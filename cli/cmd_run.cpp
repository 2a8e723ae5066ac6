#include <fmt/format.h>

#include "cli/commands.hpp"
#include "topology/bom.hpp"
#include "topology/routing.hpp"
#include "twin/fabric_report.hpp"

namespace twin::cli {

// The main job. What it covers grows with the twin: today it builds the scenario's fabric,
// prices its bill of materials, and routes the training traffic patterns (rail rings, the
// bisection shift) to show where the routing concentrates load.
Action add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run",
                                 "Run the scenario: fabric, bill of materials, and the "
                                 "routing load of training traffic");
  auto opts = std::make_shared<ScenarioOptions>();
  opts->add_to(*cmd);
  return [opts] {
    const sim::Scenario scenario = opts->load();
    const topology::Fabric fabric(scenario.cluster, scenario.fabric);
    const topology::Bom bom = topology::compute_bom(fabric);
    const topology::Router router(fabric);
    const auto loads = sim::pattern_loads(fabric, router);
    if (opts->json) {
      nlohmann::ordered_json j;
      j["scenario"] = {{"name", scenario.name}, {"source", scenario.source}};
      j["fabric"] = {{"vertices", fabric.node_count()},
                     {"links", fabric.link_count()},
                     {"routing", topology::to_string(router.mode())}};
      j["bom"] = sim::bom_json(fabric, bom);
      j["traffic_patterns"] = sim::pattern_loads_json(loads);
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("{}\n", sim::bom_table(scenario, fabric, bom));
      fmt::print("Routing load ({} routing; load = flows sharing the busiest link of a kind)\n",
                 topology::to_string(router.mode()));
      fmt::print("{}", sim::pattern_loads_table(loads));
      fmt::print("\nfabric graph: {} vertices, {} directed links\n", fabric.node_count(),
                 fabric.link_count());
    }
    return 0;
  };
}

}  // namespace twin::cli
