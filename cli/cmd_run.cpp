#include <fmt/format.h>

#include <cstdio>
#include <fstream>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/text.hpp"
#include "netsim/flow.hpp"
#include "topology/bom.hpp"
#include "topology/routing.hpp"
#include "twin/fabric_report.hpp"
#include "twin/step_sim.hpp"
#include "workload/memory.hpp"

namespace twin::cli {
namespace {

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  if (!out) throw core::Error("--out", path, "cannot open for writing");
  out << text;
  out.flush();
  if (!out) throw core::Error("--out", path, "writing failed (disk full?)");
}

/// The first line of the text report: the scenario, and what --set changed in it (so a header
/// never claims the file's 4,096 GPUs when the run had 131,072).
std::string header_line(const sim::Scenario& s) {
  std::string line = fmt::format("{}: {} ({})\n", s.name, s.description, s.source);
  if (!s.overrides.empty()) {
    std::string list;
    for (const auto& o : s.overrides) list += (list.empty() ? "" : ", ") + o;
    line += fmt::format(
        "with --set {}: {} nodes x {} GPUs = {} GPUs\n", list, core::with_commas(s.cluster.nodes),
        s.cluster.gpus_per_node,
        core::with_commas(static_cast<std::int64_t>(s.cluster.nodes) * s.cluster.gpus_per_node));
  }
  return line;
}

}  // namespace

// The main job: the scenario's training step on its cluster (when it has a model), with the
// fabric's bill of materials and routing load; a fabric-only scenario gets the fabric report.
Action add_run(CLI::App& app) {
  auto* cmd = app.add_subcommand("run",
                                 "Run the scenario: a training step on the cluster, its "
                                 "breakdown and time to train; or the fabric report");
  auto opts = std::make_shared<ScenarioOptions>();
  auto out_dir = std::make_shared<std::string>();
  auto engine = std::make_shared<std::string>("native");
  auto per_rank = std::make_shared<bool>(false);
  auto kernels = std::make_shared<bool>(false);
  opts->add_to(*cmd);
  cmd->add_flag("--kernels", *kernels,
                "Print each kernel of a layer (forward, backward, recompute), of the embedding, "
                "the output layer and the optimizer: shape, FLOPs, bytes, time and what limits it; "
                "then each tensor a layer keeps for its backward and the activation memory");
  cmd->add_option("--out", *out_dir, "Write summary.json, results.h5 and trace.json here");
  cmd->add_option("--engine", *engine, "Network engine: native or simgrid")->capture_default_str();
  cmd->add_flag(
      "--per-rank", *per_rank,
      "Simulate every data-parallel replica separately (slower; checks the rank classes)");
  return [opts, out_dir, engine, per_rank, kernels] {
    sim::Scenario loaded = opts->load();
    if (!out_dir->empty()) core::prepare_output_dir(*out_dir);
    // Perturbations must name parts of this fabric even when no step runs on it: the cluster
    // checks them when it is built.
    const sim::Cluster cluster(std::move(loaded));
    const sim::Scenario& scenario = cluster.scenario();
    const topology::Fabric& fabric = cluster.fabric();
    const topology::Bom bom = topology::compute_bom(fabric);
    if (!scenario.has_job) {
      const topology::Router router(fabric);
      if (opts->json) {
        fmt::print("{}\n", sim::fabric_only_json(scenario, fabric, router).dump(2));
      } else {
        fmt::print("{}\n", sim::bom_table(scenario, fabric, bom));
        fmt::print("Routing load ({} routing; load = flows sharing the busiest link of a kind)\n",
                   topology::to_string(router.mode()));
        fmt::print("{}", sim::pattern_loads_table(sim::pattern_loads(fabric, router)));
        fmt::print(
            "\nfabric graph: {} vertices, {} directed links (no model section: no training step)\n",
            fabric.node_count(), fabric.link_count());
      }
      return 0;
    }
    const sim::StepReport report = sim::simulate_step(cluster, *engine, *per_rank);
    const std::string summary = sim::step_summary_json(scenario, report);
    // Results are printed first: a failure to write --out must not lose a finished run.
    if (opts->json) {
      fmt::print("{}", summary);
    } else {
      fmt::print("{}", header_line(scenario));
      fmt::print("fabric: {}-tier fat tree, {} switches, {} cables, bisection {} GB/s\n\n",
                 fabric.geometry().tiers, bom.switches_total(),
                 core::with_commas(bom.cables_total()),
                 core::with_commas(static_cast<std::int64_t>(bom.bisection_GBps)));
      fmt::print("{}", sim::step_summary_text(scenario, report));
      if (*kernels) {
        fmt::print("\nkernels\n{}", workload::kernel_table(report.program));
        fmt::print(
            "\nactivation memory\n{}",
            workload::activation_table(scenario.model, scenario.parallelism, scenario.training,
                                       report.memory.activations_GB, report.memory.stage));
      }
    }
    std::fflush(stdout);
    if (!out_dir->empty()) {
      write_file(*out_dir + "/summary.json", summary);
      write_file(*out_dir + "/trace.json", sim::step_trace_json(report));
      sim::write_step_hdf5(*out_dir + "/results.h5", report, netsim::link_capacities(fabric));
      if (!opts->json)
        fmt::print("wrote {0}/summary.json, {0}/results.h5, {0}/trace.json\n", *out_dir);
    }
    return 0;
  };
}

}  // namespace twin::cli
