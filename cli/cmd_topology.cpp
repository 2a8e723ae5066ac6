#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "topology/export.hpp"

namespace twin::cli {

Action add_topology(CLI::App& app) {
  auto* cmd = app.add_subcommand("topology", "Inspect and export the scenario's fabric");
  cmd->require_subcommand(1);
  auto* exp = cmd->add_subcommand("export",
                                  "Write the fabric as JSON, Graphviz DOT or a SimGrid "
                                  "platform");
  auto opts = std::make_shared<ScenarioOptions>();
  auto format = std::make_shared<std::string>("json");
  auto output = std::make_shared<std::string>();
  opts->add_to(*exp, /*with_json=*/false);
  exp->add_option("--format", *format, "json, dot (small fabrics) or simgrid (up to 256 GPUs)")
      ->check(CLI::IsMember({"json", "dot", "simgrid"}));
  exp->add_option("-o,--output", *output, "Output file (default: standard output)");
  return [opts, format, output] {
    const sim::Scenario scenario = opts->load();
    const topology::Fabric fabric(scenario.cluster, scenario.fabric);
    std::ofstream file;
    if (!output->empty()) {
      file.open(*output);
      if (!file) throw core::Error("--output", *output, "cannot open for writing");
    }
    std::ostream& out = output->empty() ? std::cout : file;
    if (*format == "json") {
      topology::write_json(out, fabric);
    } else if (*format == "dot") {
      topology::write_dot(out, fabric);
    } else {
      const topology::Router router(fabric);
      topology::write_simgrid_platform(out, fabric, router);
    }
    return 0;
  };
}

}  // namespace twin::cli
