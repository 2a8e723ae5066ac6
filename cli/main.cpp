/// clustertwin: a digital twin of a large GPU training cluster.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <map>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"

namespace twin::cli {
namespace {

// The one process-wide object: a signal handler can reach nothing else. Its flag is a lock-free
// atomic, so setting it from the handler is async-signal-safe.
core::CancelToken interrupt;
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_sigint(int /*signal*/) {
  interrupt.cancel();
  std::signal(SIGINT, SIG_DFL);  // a second Ctrl-C stops at once
}

}  // namespace

const core::CancelToken* interrupt_token() {
  return &interrupt;
}

void ScenarioOptions::add_to(CLI::App& cmd, bool with_json) {
  cmd.add_option("scenario", path, "Scenario YAML file (default: the embedded 4,096-GPU cluster)")
      ->check(CLI::ExistingFile);
  cmd.add_option("--set", overrides, "Override a scenario field: dotted.path=value (repeatable)");
  cmd.add_option("--node-states", node_states,
                 "Slurm node states (sinfo -N -h -o \"%N %T\"): drained and down hosts are left "
                 "out of placement and of the spare pool")
      ->check(CLI::ExistingFile);
  if (with_json) cmd.add_flag("--json", json, "Print JSON instead of a table");
}

}  // namespace twin::cli

int main(int argc, char** argv) {
  CLI::App app{"clustertwin: a digital twin of a large GPU training cluster"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "clustertwin 0.1.0");

  std::map<CLI::App*, twin::cli::Action> actions;
  auto add = [&](twin::cli::Action (*fn)(CLI::App&)) {
    const std::size_t before = app.get_subcommands({}).size();
    twin::cli::Action action = fn(app);
    actions[app.get_subcommands({})[before]] = std::move(action);
  };
  add(twin::cli::add_run);
  add(twin::cli::add_bom);
  add(twin::cli::add_topology);
  add(twin::cli::add_campaign);
  add(twin::cli::add_sweep);
  add(twin::cli::add_collective);
  add(twin::cli::add_calibrate);
  add(twin::cli::add_validate);
  add(twin::cli::add_schema);

  using twin::cli::kExitBadInput;
  using twin::cli::kExitInternal;
  using twin::cli::kExitOk;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0; every real parse error is bad input.
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitBadInput;
  }
  std::signal(SIGINT, twin::cli::on_sigint);
  try {
    for (auto& [cmd, action] : actions)
      if (cmd->parsed()) return action();
  } catch (const twin::core::Cancelled& e) {
    fmt::print(stderr, "clustertwin: interrupted: {}\n", e.what());
    return 130;  // 128 + SIGINT, as a shell reports a job stopped by Ctrl-C
  } catch (const twin::core::Error& e) {
    fmt::print(stderr, "clustertwin: error: {}\n", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr,
               "clustertwin: internal error: out of memory (please report the command that "
               "did this)\n");
    return kExitInternal;
  } catch (const std::exception& e) {
    fmt::print(stderr, "clustertwin: internal error: {} (please report the command)\n", e.what());
    return kExitInternal;
  }
  return kExitOk;
}
