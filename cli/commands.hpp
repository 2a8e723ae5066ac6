#pragma once
/// Subcommands of the clustertwin CLI. Each `add_*` registers its options on the app and returns
/// the function to run when that subcommand was chosen.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "twin/scenario.hpp"

namespace twin::cli {

using Action = std::function<int()>;

/// Cancelled by Ctrl-C (SIGINT); long commands pass it to the work they start. A second Ctrl-C
/// kills the process the usual way.
const core::CancelToken* interrupt_token();

/// The options every scenario-driven subcommand takes: [SCENARIO] [--set k=v]... [--json].
struct ScenarioOptions {
  std::string path;
  std::vector<std::string> overrides;
  bool json = false;
  std::string node_states;  ///< --node-states: Slurm states, overriding cluster.node_states

  void add_to(CLI::App& cmd, bool with_json = true);
  [[nodiscard]] sim::Scenario load() const {
    sim::Scenario s = sim::load_scenario(path, overrides);
    if (!node_states.empty()) s.cluster.node_states = node_states;
    return s;
  }
};

Action add_bom(CLI::App& app);
Action add_run(CLI::App& app);
Action add_topology(CLI::App& app);
Action add_calibrate(CLI::App& app);
Action add_collective(CLI::App& app);
Action add_campaign(CLI::App& app);
Action add_sweep(CLI::App& app);
Action add_validate(CLI::App& app);
Action add_schema(CLI::App& app);

}  // namespace twin::cli
