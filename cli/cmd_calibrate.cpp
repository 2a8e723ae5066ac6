#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "calibrate/calibration.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_data.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "netsim/collective.hpp"
#include "twin/collective_sweep.hpp"

namespace twin::cli {
namespace {

struct FitArgs {
  std::vector<std::string> logs;
  std::vector<std::string> raw;
  std::string base = "h100-sxm";
  std::string output;
  std::string op;
  std::string name;
  calibrate::FitOptions options;
};

std::string size_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", bytes, units[u]);
}

int run_fit(const FitArgs& args) {
  if (args.logs.empty() && args.raw.empty())
    throw core::Error("logs", "", "give nccl-tests logs and/or --raw calibration.h5 files to fit");
  calibrate::Profile profile = calibrate::load_profile(args.base);
  if (!args.name.empty()) profile.name = args.name;
  // Every log is read and checked before anything is fitted or printed.
  std::vector<calibrate::NcclTestsLog> logs;
  for (const auto& path : args.logs) {
    logs.push_back(calibrate::read_nccl_tests(path, args.op));
    for (const auto& warning : logs.back().warnings) fmt::print(stderr, "warning: {}\n", warning);
    if (!args.options.algorithm.empty())
      for (const auto& run : logs.back().runs) {
        const auto valid = netsim::algorithms_for(run.op);
        if (std::find(valid.begin(), valid.end(), args.options.algorithm) == valid.end())
          throw core::Error("--algo", args.options.algorithm,
                            "not an algorithm for " + run.op +
                                "; valid: " + core::quoted_list(valid) +
                                core::did_you_mean(args.options.algorithm, valid));
      }
  }
  fmt::print("{:<15}{:<7}{:>8}  {:<21}{:>11}{:>11}{:>7}{:>8}{:>9}{:>9}\n", "op", "algo", "scale",
             "sizes", "lat (us)", "busbw GB/s", "eff", "R^2", "med err", "LOO err");
  for (const auto& log : logs) {
    for (const auto& run : calibrate::fit_log_into(log, profile, args.options)) {
      for (const auto& seg : run.segments) {
        const auto& q = seg.fit.quality;
        fmt::print("{:<15}{:<7}{:>8}  {:<21}{:>11.2f}{:>11.1f}{:>7.3f}{:>8.4f}{:>8.1f}%{:>8.1f}%\n",
                   run.op, seg.curve.algorithm, fmt::format("{}x{}", run.nodes, run.gpus_per_node),
                   size_text(seg.fit.min_bytes) + "-" + size_text(seg.fit.max_bytes),
                   seg.fit.latency_us, seg.fit.bus_bandwidth_GBps, seg.curve.efficiency.value, q.r2,
                   q.median_abs_error_pct, q.loo_median_abs_error_pct);
      }
    }
  }
  for (const auto& path : args.raw) {
    const calibrate::RawCalibration raw = calibrate::read_raw_hdf5(path);
    const std::string origin = fmt::format("{} ({} on {}, {})", path, raw.gpu, raw.host, raw.date);
    for (const auto& [dtype, samples] : raw.gemm) {
      if (dtype != "bf16" || samples.size() < 2) continue;
      const double error = calibrate::fit_gemm_into(samples, dtype, profile, origin);
      fmt::print(
          "gemm {}: peak efficiency {:.3f}, half dimension {:.0f}, median error {:.1f}% over {} "
          "shapes\n",
          dtype, profile.gemm_peak_efficiency.value, profile.gemm_half_dim.value, error,
          samples.size());
    }
    if (!raw.hbm.empty()) {
      calibrate::fit_hbm_into(raw.hbm, profile, origin);
      fmt::print("hbm: efficiency {:.3f} of {:.0f} GB/s\n", profile.hbm_efficiency.value,
                 profile.hbm_GBps.value);
    }
  }
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
  const auto comparisons = sim::compare_log(args.scenario.load(), log, args.profile, args.algorithm,
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
  fit->add_option("logs", fit_args->logs, "nccl-tests output files")
      ->required()
      ->check(CLI::ExistingFile);
  fit->add_option("--base", fit_args->base, "Profile to start from: a shipped name or a .json path")
      ->capture_default_str();
  fit->add_option("-o,--output", fit_args->output, "Profile JSON to write")->required();
  fit->add_option("--name", fit_args->name, "Name of the written profile (default: the base's)");
  fit->add_option("--op", fit_args->op,
                  "Collective of runs the log does not name (e.g. all_reduce)");
  fit->add_option("--algo", fit_args->options.algorithm,
                  "Algorithm the runs used (default: attributed from the bandwidth reached)");
  fit->add_option("--nodes", fit_args->options.nodes,
                  "Nodes the log ran on (default: from the log)")
      ->check(whole_number(1, 1u << 20));
  fit->add_option("--gpus-per-node", fit_args->options.gpus_per_node,
                  "GPUs per node (default: from the log)")
      ->check(whole_number(1, 1024));
  fit->add_option("--measured-on", fit_args->options.measured_on,
                  "Provenance note stored with each fitted value (date, cluster)");

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
  compare->add_option("--nodes", cmp->nodes, "Nodes the log ran on (default: from the log)")
      ->check(whole_number(1, 1u << 20));
  compare
      ->add_option("--gpus-per-node", cmp->gpus_per_node, "GPUs per node (default: from the log)")
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
