#include <fmt/format.h>

#include "cli/commands.hpp"
#include "netsim/vocabulary.hpp"
#include "twin/collective_sweep.hpp"

namespace twin::cli {

Action add_collective(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "collective",
      "Simulate a collective like nccl-tests on the scenario's cluster resized to N x G");
  auto opts = std::make_shared<ScenarioOptions>();
  auto spec = std::make_shared<sim::SweepSpec>();
  auto sizes = std::make_shared<std::string>("32M:16G");
  auto nodes = std::make_shared<std::string>();
  opts->add_to(*cmd);
  cmd->add_option("--op", spec->op,
                  "all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast")
      ->required();
  cmd->add_option("--nodes", *nodes,
                  "Nodes: N, or FROM:TO doubling (1:512) or a list (2,4,8) for scaling curves")
      ->required();
  cmd->add_option("--gpus-per-node", spec->gpus_per_node, "GPUs per node")->required();
  cmd->add_option("--sizes", *sizes, "Sizes: FROM:TO doubling (32M:16G), one size, or a list")
      ->capture_default_str();
  cmd->add_option("--algo", spec->algorithm,
                  "Algorithm, or ALGORITHM/PROTOCOL (auto: the minimum predicted time, as NCCL's "
                  "tuner)")
      ->capture_default_str();
  cmd->add_option("--proto", spec->protocol, "Protocol: ll, ll128, simple or auto")
      ->capture_default_str();
  cmd->add_option("--engine", spec->engine, "native or simgrid")->capture_default_str();
  cmd->add_option("--profile", spec->profile,
                  "Hardware profile (default: the scenario's cluster.gpu)");
  return [opts, spec, sizes, nodes] {
    sim::SweepSpec s = *spec;
    s.sizes = sim::parse_sizes(*sizes);
    (void)netsim::parse_op(s.op, "--op");  // unknown op: error before any work
    const std::vector<int> counts = sim::parse_node_counts(*nodes);
    if (counts.size() == 1) {
      s.nodes = counts.front();
      const sim::SweepResult result = sim::run_collective_sweep(opts->load(), s);
      fmt::print("{}", opts->json ? sim::sweep_json(result) : sim::sweep_table(result));
      return 0;
    }
    const auto results = sim::run_scaling(opts->load(), s, counts);
    fmt::print("{}", opts->json ? sim::scaling_json(results) : sim::scaling_table(results));
    return 0;
  };
}

}  // namespace twin::cli
