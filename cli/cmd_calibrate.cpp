#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "calibrate/calibration.hpp"
#include "calibrate/gpu_match.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_data.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "netsim/collective.hpp"
#include "twin/collective_fit.hpp"
#include "twin/collective_sweep.hpp"

namespace twin::cli {
namespace {

struct FitArgs {
  std::vector<std::string> logs;
  std::vector<std::string> raw;
  std::string base;  ///< "" = from the raw file's GPU, else h100-sxm
  std::string output;
  std::string op;
  std::string name;
  calibrate::FitOptions options;
  std::string scenario_path;
  std::vector<std::string> overrides;
};

int run_fit(const FitArgs& args) {
  if (args.logs.empty() && args.raw.empty())
    throw core::Error("logs", "", "give nccl-tests logs and/or --raw calibration.h5 files to fit");
  // A raw calibration names its GPU: measure it against that GPU's datasheet, not the H100's.
  std::vector<calibrate::RawCalibration> raws;
  for (const auto& path : args.raw) raws.push_back(calibrate::read_raw_hdf5(path));
  const std::string base = !args.base.empty() ? args.base
                           : raws.empty()     ? std::string("h100-sxm")
                                              : calibrate::choose_base_profile(raws[0].gpu, "");
  const calibrate::Profile shipped = calibrate::load_profile(base);
  calibrate::Profile profile = shipped;
  if (!args.name.empty()) profile.name = args.name;
  std::vector<calibrate::NcclTestsLog> logs;
  // Every log is read and checked before anything is fitted or printed.
  for (const auto& path : args.logs) {
    logs.push_back(calibrate::read_nccl_tests(path, args.op));
    for (const auto& warning : logs.back().warnings) fmt::print(stderr, "warning: {}\n", warning);
  }
  if (!logs.empty()) {
    // Every log at its own scale, all together: latencies per hop from the scales, efficiencies
    // per scale, through NCCL's cost model and the flow engine.
    const sim::Scenario scenario = sim::load_scenario(args.scenario_path, args.overrides);
    const sim::CollectiveFit fit = sim::fit_collectives(scenario, logs, profile, args.options);
    fmt::print("{}", sim::fit_table(fit));
  }
  for (std::size_t i = 0; i < raws.size(); ++i) {
    const calibrate::RawCalibration& raw = raws[i];
    const std::string origin =
        fmt::format("{} ({} on {}, {})", args.raw[i], raw.gpu, raw.host, raw.date);
    fmt::print("{}: {} on {}, {}; clocks {}; base profile '{}'\n", args.raw[i], raw.gpu, raw.host,
               raw.date, raw.monitor.empty() ? "not recorded" : raw.monitor, base);
    for (const auto& line : calibrate::fit_raw_into(raw, profile, origin).lines)
      fmt::print("  {}\n", line);
  }
  if (!raws.empty()) fmt::print("\n{}\n", calibrate::side_by_side(shipped, profile));
  std::ofstream out(args.output);
  if (!out) throw core::Error("--output", args.output, "cannot open for writing");
  out << calibrate::to_json(profile);
  fmt::print("wrote {} (profile '{}', {} collective curves)\n", args.output, profile.name,
             profile.collectives.size());
  return 0;
}

struct CompareArgs {
  std::string log;
  std::string profile;
  std::string algorithm = "auto";
  std::string op;
  int nodes = 0, gpus_per_node = 0;
  ScenarioOptions scenario;
};

int run_compare(const CompareArgs& args) {
  const calibrate::NcclTestsLog log = calibrate::read_nccl_tests(args.log, args.op);
  for (const auto& warning : log.warnings) fmt::print(stderr, "warning: {}\n", warning);
  // With neither --profile, --scenario nor a cluster.gpu override, the GPU the log names picks
  // the hardware (profile, NVLink and NIC figures) when a shipped profile describes it: an A100
  // log is not compared with the default H100 cluster.
  ScenarioOptions scenario = args.scenario;
  const bool gpu_stated =
      !args.profile.empty() || !scenario.path.empty() ||
      std::any_of(scenario.overrides.begin(), scenario.overrides.end(),
                  [](const std::string& o) { return o.rfind("cluster.gpu=", 0) == 0; });
  if (!gpu_stated && !log.gpu_model.empty()) {
    if (const auto shipped = calibrate::shipped_profile_for_gpu(log.gpu_model)) {
      scenario.overrides.insert(scenario.overrides.begin(), "cluster.gpu=" + *shipped);
      fmt::print(stderr,
                 "note: the log ran on {}: comparing with profile '{}' and its NVLink and NIC "
                 "figures (--profile or --set cluster.gpu=... to choose)\n",
                 log.gpu_model, *shipped);
    } else {
      fmt::print(stderr,
                 "note: no shipped profile describes the log's {}: comparing with the "
                 "scenario's hardware (--profile or --set cluster.gpu=... to choose)\n",
                 log.gpu_model);
    }
  }
  const auto comparisons = sim::compare_log(scenario.load(), log, args.profile, args.algorithm,
                                            args.nodes, args.gpus_per_node);
  fmt::print("{}", args.scenario.json ? sim::comparison_json(comparisons)
                                      : sim::comparison_table(comparisons));
  return 0;
}

int run_show(const std::string& name) {
  if (name.empty()) {
    fmt::print("shipped profiles: {}\n", core::quoted_list(calibrate::shipped_profile_names()));
    return 0;
  }
  fmt::print("{}", calibrate::to_json(calibrate::load_profile(name)));
  return 0;
}

}  // namespace

Action add_calibrate(CLI::App& app) {
  auto* cmd =
      app.add_subcommand("calibrate", "Hardware profiles: fit nccl-tests logs, show profiles");
  cmd->require_subcommand(1);

  auto fit_args = std::make_shared<FitArgs>();
  auto* fit = cmd->add_subcommand("fit", "Fit nccl-tests logs into a hardware profile");
  fit->add_option("logs", fit_args->logs, "nccl-tests output files (optional with --raw)")
      ->check(CLI::ExistingFile);
  fit->add_option("--raw", fit_args->raw,
                  "clustertwin-calib calibration.h5 to fit (GEMM, HBM, collectives; repeatable)")
      ->check(CLI::ExistingFile);
  fit->add_option("--base", fit_args->base,
                  "Profile to start from: a shipped name or a .json path (default: the shipped "
                  "profile of the --raw file's GPU, else h100-sxm)");
  fit->add_option("-o,--output", fit_args->output, "Profile JSON to write")->required();
  fit->add_option("--name", fit_args->name, "Name of the written profile (default: the base's)");
  fit->add_option("--op", fit_args->op,
                  "Collective of runs the log does not name (e.g. all_reduce)");
  fit->add_option("--algo", fit_args->options.algorithm,
                  "Algorithm (or ALGORITHM/PROTOCOL) the runs used (default: what NCCL's tuner "
                  "would pick per size)");
  fit->add_option("--nodes", fit_args->options.nodes,
                  "Nodes the log ran on (default: from the log; alone, GPUs per node are the "
                  "log's ranks / nodes)")
      ->check(whole_number(1, 1u << 20));
  fit->add_option("--gpus-per-node", fit_args->options.gpus_per_node,
                  "GPUs per node (default: from the log; alone, nodes are the log's ranks / GPUs "
                  "per node)")
      ->check(whole_number(1, 1024));
  fit->add_option("--measured-on", fit_args->options.measured_on,
                  "Provenance note stored with each fitted value (date, cluster)");
  fit->add_option("--scenario", fit_args->scenario_path,
                  "Scenario whose fabric the logs ran on (default: embedded)")
      ->check(CLI::ExistingFile);
  fit->add_option("--set", fit_args->overrides,
                  "Override a scenario field, e.g. cluster.nic_gbps=200 (repeatable)");

  auto cmp = std::make_shared<CompareArgs>();
  auto* compare = cmd->add_subcommand(
      "compare", "Compare an nccl-tests log with the twin's simulation of the same collective");
  compare->add_option("log", cmp->log, "nccl-tests output file")
      ->required()
      ->check(CLI::ExistingFile);
  compare->add_option("--profile", cmp->profile,
                      "Hardware profile (default: the scenario's cluster.gpu)");
  compare->add_option("--algo", cmp->algorithm, "Algorithm to simulate (default: auto)");
  compare->add_option("--op", cmp->op, "Collective of runs the log does not name");
  compare
      ->add_option("--nodes", cmp->nodes,
                   "Nodes the log ran on (default: from the log; alone, GPUs per node are the "
                   "log's ranks / nodes)")
      ->check(whole_number(1, 1u << 20));
  compare
      ->add_option("--gpus-per-node", cmp->gpus_per_node,
                   "GPUs per node (default: from the log; alone, nodes are the log's ranks / "
                   "GPUs per node)")
      ->check(whole_number(1, 1024));
  compare
      ->add_option("--scenario", cmp->scenario.path,
                   "Scenario whose fabric to use (default: embedded)")
      ->check(CLI::ExistingFile);
  compare->add_option("--set", cmp->scenario.overrides, "Override a scenario field (repeatable)");
  compare->add_flag("--json", cmp->scenario.json, "Print JSON");

  auto show_name = std::make_shared<std::string>();
  auto* show = cmd->add_subcommand("show", "List shipped profiles, or print one as JSON");
  show->add_option("profile", *show_name, "Shipped profile name or .json path");

  return [fit, show, compare, fit_args, cmp, show_name]() -> int {
    if (fit->parsed()) return run_fit(*fit_args);
    if (compare->parsed()) return run_compare(*cmp);
    if (show->parsed()) return run_show(*show_name);
    return 1;
  };
}

}  // namespace twin::cli
