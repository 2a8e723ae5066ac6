#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "topology/bom.hpp"
#include "topology/export.hpp"
#include "topology/fabric_check.hpp"
#include "topology/fabric_faults.hpp"
#include "topology/fabric_import.hpp"
#include "topology/lft.hpp"
#include "topology/placement.hpp"
#include "twin/step_sim.hpp"

namespace twin::cli {
namespace {

std::ofstream open_output(const std::string& path) {
  std::ofstream file(path);
  if (!file) throw core::Error("--output", path, "cannot open for writing");
  return file;
}

/// A scenario for an imported fabric: the dump, the node states and a job that fits the usable
/// hosts (Llama 3 8B, TP over a host's GPUs, DP over the largest power of two of usable hosts,
/// 8 micro-batches per step). `file` is written as given (relative to the scenario's folder).
std::string imported_scenario_yaml(const topology::Fabric& fabric, const std::string& file,
                                   const std::string& node_states, const std::string& lfts,
                                   const std::string& name) {
  const int usable = fabric.usable_host_count();
  int dp = 1;
  while (dp * 2 <= usable) dp *= 2;
  const auto& c = fabric.cluster();
  std::ostringstream y;
  y << "# Imported with `clustertwin topology import`: the fabric is the dump as it is (missing\n"
    << "# cables, slow links, miswired ports); cluster.nodes and fabric sizes come from it.\n"
    << "schema_version: 1\n"
    << fmt::format("name: {}\n", name)
    << fmt::format("description: \"{} hosts, {} switches in {} tiers, imported from {}\"\n",
                   c.nodes,
                   fabric.geometry().leaves + fabric.geometry().spines + fabric.geometry().cores,
                   fabric.geometry().tiers, std::filesystem::path(file).filename().string())
    << "cluster:\n"
    << fmt::format("  gpus_per_node: {}\n  gpu: {}\n", c.gpus_per_node, c.gpu);
  if (!node_states.empty()) y << fmt::format("  node_states: {}\n", node_states);
  y << "fabric:\n" << fmt::format("  file: {}\n", file);
  if (!lfts.empty()) y << fmt::format("  lfts: {}\n", lfts);
  y << "model:\n  preset: llama3-8b\n"
    << fmt::format("parallelism: {{tp: {}, pp: 1, dp: {}, zero: 1, micro_batch: 1}}\n",
                   c.gpus_per_node, dp)
    << fmt::format("training: {{global_batch: {}, tokens: 1.0e11, precision: bf16}}\n", 8 * dp)
    << "recovery: {hot_spares: 4, checkpoint_write_s: 20}\n";
  return y.str();
}

topology::Fabric import_fabric(const std::string& file, const std::string& node_states,
                               const sim::Scenario* base, const std::string& lfts = {}) {
  topology::ClusterSpec cluster = base ? base->cluster : topology::ClusterSpec{};
  topology::FabricSpec spec = base ? base->fabric : topology::FabricSpec{};
  if (!node_states.empty()) cluster.node_states = node_states;
  spec.file = file;
  if (!lfts.empty()) spec.lfts = lfts;
  return topology::Fabric(cluster, spec);
}

void print_import_summary(const topology::Fabric& f, const std::string& file) {
  const auto& g = f.geometry();
  const auto& p = f.plan();
  int nic_cables = 0;
  for (int n = 0; n < f.nic_count(); ++n) nic_cables += f.nic_present(n) ? 1 : 0;
  fmt::print("Imported {}\n", file);
  fmt::print("  switches   {}: {} leaves, {} spines, {} cores; {} tiers, radix {}, {} pod(s)\n",
             g.leaves + g.spines + g.cores, g.leaves, g.spines, g.cores, g.tiers, g.radix, g.pods);
  fmt::print("  hosts      {} ({} usable: every adapter cabled and not drained or down)\n",
             f.cluster().nodes, f.usable_host_count());
  fmt::print("  rails      {} ({}rail-optimized)\n", g.rails,
             f.spec().rail_optimized ? "" : "not ");
  fmt::print("  cables     {} adapter-leaf, {} switch-switch; switch ports {} Gb/s, NICs {} Gb/s\n",
             nic_cables, f.cable_count() - static_cast<std::size_t>(nic_cables),
             f.spec().switch_port_gbps, f.cluster().nic_gbps);
  fmt::print("  left out   {} SHARP aggregation nodes, {} routers\n", p.aggregation_nodes,
             p.routers);
  for (const auto& n : p.notes) fmt::print("  note       {}\n", n);
}

double step_time_on(sim::Scenario s, const std::string& file) {
  s.fabric.file = file;
  return sim::simulate_step(s).step_time_s;
}

}  // namespace

Action add_topology(CLI::App& app) {
  auto* cmd = app.add_subcommand("topology", "Inspect, import, check and export fabrics");
  cmd->require_subcommand(1);

  // export
  auto* exp = cmd->add_subcommand("export",
                                  "Write the fabric as JSON, Graphviz DOT, a SimGrid platform or "
                                  "an ibnetdiscover topology file");
  auto opts = std::make_shared<ScenarioOptions>();
  auto format = std::make_shared<std::string>("json");
  auto output = std::make_shared<std::string>();
  opts->add_to(*exp, /*with_json=*/false);
  exp->add_option("--format", *format,
                  "json, dot (small fabrics), simgrid (up to 256 GPUs) or ibnetdiscover")
      ->check(CLI::IsMember({"json", "dot", "simgrid", "ibnetdiscover"}));
  exp->add_option("-o,--output", *output, "Output file (default: standard output)");

  // import
  auto* imp = cmd->add_subcommand(
      "import",
      "Read an ibnetdiscover dump: switches, hosts, rails, tiers; optionally write a "
      "scenario that runs on it");
  auto imp_file = std::make_shared<std::string>();
  auto imp_out = std::make_shared<std::string>();
  auto imp_states = std::make_shared<std::string>();
  imp->add_option("file", *imp_file, "ibnetdiscover output")->required()->check(CLI::ExistingFile);
  imp->add_option("-o,--output", *imp_out, "Write a scenario (fabric.file points at FILE)");
  imp->add_option("--node-states", *imp_states, "Slurm node states (sinfo -N -h -o \"%N %T\")")
      ->check(CLI::ExistingFile);
  auto imp_lfts = std::make_shared<std::string>();
  imp->add_option("--lfts", *imp_lfts,
                  "The subnet's forwarding tables (dump_lfts.sh / ibroute output): routes follow "
                  "them (fabric.lfts)")
      ->check(CLI::ExistingFile);

  // check
  auto* chk = cmd->add_subcommand(
      "check", "Deviations of an imported fabric from the ideal fat tree, and what they cost");
  auto chk_file = std::make_shared<std::string>();
  auto chk_scenario = std::make_shared<std::string>();
  auto chk_states = std::make_shared<std::string>();
  auto chk_json = std::make_shared<bool>(false);
  auto chk_no_step = std::make_shared<bool>(false);
  chk->add_option("file", *chk_file, "ibnetdiscover output")->required()->check(CLI::ExistingFile);
  chk->add_option("--scenario", *chk_scenario,
                  "Scenario whose job is timed (default: a job sized to the usable hosts)")
      ->check(CLI::ExistingFile);
  chk->add_option("--node-states", *chk_states, "Slurm node states (sinfo -N -h -o \"%N %T\")")
      ->check(CLI::ExistingFile);
  chk->add_flag("--json", *chk_json, "Print JSON");
  chk->add_flag("--no-step", *chk_no_step, "Skip the step-time comparison");

  // faults
  auto* flt = cmd->add_subcommand(
      "faults", "Write a copy of an ibnetdiscover dump with seeded faults (what-ifs and tests)");
  auto flt_file = std::make_shared<std::string>();
  auto flt_out = std::make_shared<std::string>();
  auto faults = std::make_shared<topology::FaultSpec>();
  flt->add_option("file", *flt_file, "ibnetdiscover output")->required()->check(CLI::ExistingFile);
  flt->add_option("-o,--output", *flt_out, "Output file")->required();
  flt->add_option("--remove-cables", faults->remove_cables, "Remove this many cables");
  flt->add_option("--downgrade-links", faults->downgrade_links,
                  "Halve the lanes of this many links");
  flt->add_option("--swap-cables", faults->swap_cable_pairs, "Swap this many pairs of NIC cables");
  flt->add_flag("--include-nic-cables", faults->include_nic_cables,
                "Cables removed may be adapter cables too");
  flt->add_option("--seed", faults->seed, "Seed");

  return [=] {
    if (exp->parsed()) {
      const sim::Scenario scenario = opts->load();
      const topology::Fabric fabric(scenario.cluster, scenario.fabric);
      std::ofstream file;
      if (!output->empty()) file = open_output(*output);
      std::ostream& out = output->empty() ? std::cout : file;
      if (*format == "json") {
        topology::write_json(out, fabric);
      } else if (*format == "dot") {
        topology::write_dot(out, fabric);
      } else if (*format == "ibnetdiscover") {
        topology::write_ibnetdiscover(out, topology::to_ibnetdiscover(fabric));
      } else {
        const topology::Router router(fabric);
        topology::write_simgrid_platform(out, fabric, router);
      }
      return 0;
    }
    if (imp->parsed()) {
      const topology::Fabric fabric = import_fabric(*imp_file, *imp_states, nullptr, *imp_lfts);
      print_import_summary(fabric, *imp_file);
      if (fabric.forwarding_tables() != nullptr)
        fmt::print("  routing    the forwarding tables of {} switches ({})\n",
                   fabric.forwarding_tables()->switches_with_tables(), *imp_lfts);
      if (!imp_out->empty()) {
        namespace fs = std::filesystem;
        const fs::path dir = fs::absolute(*imp_out).parent_path();
        const auto rel = [&](const std::string& p) {
          return p.empty() ? p : fs::relative(fs::absolute(p), dir).generic_string();
        };
        std::ofstream out = open_output(*imp_out);
        out << imported_scenario_yaml(fabric, rel(*imp_file), rel(*imp_states), rel(*imp_lfts),
                                      fs::path(*imp_out).stem().string());
        fmt::print("Wrote {}\n", *imp_out);
      }
      return 0;
    }
    if (flt->parsed()) {
      topology::IbnetFile file = topology::read_ibnetdiscover(*flt_file);
      for (const auto& line : topology::apply_faults(file, *faults)) fmt::print("{}\n", line);
      std::ofstream out = open_output(*flt_out);
      topology::write_ibnetdiscover(out, file);
      return 0;
    }
    // check
    sim::Scenario base;
    if (!chk_scenario->empty()) base = sim::load_scenario(*chk_scenario);
    const topology::Fabric fabric =
        import_fabric(*chk_file, *chk_states, chk_scenario->empty() ? nullptr : &base);
    const topology::FabricCheck check = topology::check_fabric(fabric);
    double step_s = 0, ideal_step_s = 0;
    std::string job;
    if (!*chk_no_step) {
      sim::Scenario s = chk_scenario->empty()
                            ? sim::parse_scenario(imported_scenario_yaml(fabric, *chk_file,
                                                                         *chk_states, "", "check"),
                                                  "<topology check>")
                            : base;
      if (!chk_states->empty()) s.cluster.node_states = *chk_states;
      if (s.has_job) {
        job = fmt::format("{} tp{} pp{} dp{}", s.model.name, s.parallelism.tp, s.parallelism.pp,
                          s.parallelism.dp);
        step_s = step_time_on(s, *chk_file);
        // The ideal as a dump of its own, so the step runs exactly as on any imported fabric.
        const auto ideal_path = std::filesystem::temp_directory_path() /
                                fmt::format("clustertwin-ideal-{}.topo", ::getpid());
        {
          const topology::Fabric ideal(fabric.cluster(), fabric.spec(),
                                       topology::ideal_plan(fabric, check));
          std::ofstream out = open_output(ideal_path.string());
          topology::write_ibnetdiscover(out, topology::to_ibnetdiscover(ideal));
        }
        try {
          ideal_step_s = step_time_on(s, ideal_path.string());
        } catch (...) {
          std::filesystem::remove(ideal_path);
          throw;
        }
        std::filesystem::remove(ideal_path);
      }
    }
    if (*chk_json) {
      nlohmann::ordered_json j;
      j["file"] = *chk_file;
      j["ideal"] = {{"switch_link", check.switch_link},
                    {"nic_link", check.nic_link},
                    {"parallel_cables", check.parallel_cables},
                    {"leaf_uplinks", check.ideal_leaf_up}};
      auto& devs = j["deviations"] = nlohmann::ordered_json::array();
      for (const auto& d : check.deviations)
        devs.push_back(
            {{"kind", d.kind}, {"where", d.where}, {"detail", d.detail}, {"line", d.line}});
      j["notes"] = check.notes;
      j["cost"] = {{"hosts", check.hosts},
                   {"usable_hosts", check.usable_hosts},
                   {"bisection_GBps", check.bisection_GBps},
                   {"ideal_bisection_GBps", check.ideal_bisection_GBps},
                   {"worst_leaf_ratio", check.worst_leaf_ratio},
                   {"worst_leaf", check.worst_leaf},
                   {"ideal_leaf_ratio", check.ideal_leaf_ratio}};
      if (step_s > 0)
        j["cost"]["step"] = {{"job", job}, {"step_s", step_s}, {"ideal_step_s", ideal_step_s}};
      fmt::print("{}\n", j.dump(2));
      return 0;
    }
    fmt::print("Fabric check: {}\n", *chk_file);
    fmt::print(
        "  ideal        switch links {}, NIC links {}, every leaf to every spine of its "
        "pod by {} cable(s) ({} uplinks)\n",
        check.switch_link, check.nic_link, check.parallel_cables, check.ideal_leaf_up);
    fmt::print(
        "  deviations   {} missing_link, {} slow_link, {} uneven_uplinks, {} wrong_rail, "
        "{} missing_adapter\n",
        check.count("missing_link"), check.count("slow_link"), check.count("uneven_uplinks"),
        check.count("wrong_rail"), check.count("missing_adapter"));
    for (const auto& d : check.deviations)
      fmt::print("  {:<16} {}: {}{}\n", d.kind, d.where, d.detail,
                 d.line > 0 ? fmt::format(" (line {})", d.line) : "");
    for (const auto& n : check.notes) fmt::print("  note             {}\n", n);
    const auto pct = [](double a, double b) { return b > 0 ? 100.0 * (a - b) / b : 0.0; };
    fmt::print("Cost\n");
    fmt::print("  bisection        {:.0f} GB/s (ideal {:.0f} GB/s, {:+.1f}%)\n",
               check.bisection_GBps, check.ideal_bisection_GBps,
               pct(check.bisection_GBps, check.ideal_bisection_GBps));
    fmt::print("  worst leaf       {:.2f}:1 down:up capacity on {} (ideal {:.2f}:1)\n",
               check.worst_leaf_ratio, check.worst_leaf, check.ideal_leaf_ratio);
    fmt::print("  usable hosts     {} of {}\n", check.usable_hosts, check.hosts);
    if (step_s > 0)
      fmt::print(
          "  step time        {:.4f} s on this fabric, {:.4f} s on the ideal ({:+.2f}%), job "
          "{}\n",
          step_s, ideal_step_s, pct(step_s, ideal_step_s), job);
    return 0;
  };
}

}  // namespace twin::cli
