#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "cli/commands.hpp"
#include "twin/validation.hpp"
#include "twin/validation_fit.hpp"

namespace twin::cli {

// Published runs against the simulation: every scenario with a validation section in DIR.
// Exit 0 whenever the comparison ran, whatever the errors; 2 when DIR cannot be read.
Action add_validate(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "validate",
      "Simulate every published run in DIR (scenarios with a validation: section) and print "
      "simulated vs published, the error per run and per family");
  auto dir = std::make_shared<std::string>("scenarios/validation");
  auto json = std::make_shared<bool>(false);
  auto markdown = std::make_shared<bool>(false);
  auto threads = std::make_shared<int>(0);
  cmd->add_option("dir", *dir, "Directory of validation scenarios (searched recursively)")
      ->capture_default_str();
  cmd->add_flag("--json", *json, "Print JSON instead of a table");
  cmd->add_flag("--markdown", *markdown, "Print Markdown tables (the README's Validation section)");
  cmd->add_option("--threads", *threads, "Worker threads (0: all cores)")->capture_default_str();
  return [dir, json, markdown, threads] {
    const int n = *threads > 0
                      ? *threads
                      : static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
    const sim::ValidationReport report = sim::validate_with_fit(*dir, n);
    fmt::print("{}", *json       ? sim::validation_json(report)
                     : *markdown ? sim::validation_markdown(report)
                                 : sim::validation_text(report));
    return 0;
  };
}

}  // namespace twin::cli
