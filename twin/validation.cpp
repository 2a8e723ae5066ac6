#include "twin/validation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/stats.hpp"
#include "core/text.hpp"
#include "twin/campaign.hpp"
#include "twin/cluster.hpp"

namespace twin::sim {

double speed_error_pct(const ValidationRun& run) {
  const bool time = run.metric == "step_time_s" || run.metric == "time_to_train_days" ||
                    run.metric == "wall_clock_days";
  return time ? 100.0 * (run.published / run.simulated - 1.0) : run.error_pct;
}

namespace {

namespace fs = std::filesystem;

constexpr const char* kTimeShareNote =
    "Runs grouped by the share of the simulated step (its critical pipeline stage) that each "
    "class of work takes: GEMMs, the attention core, memory-bound kernels, kernels at their "
    "launch floor, and time outside kernels (exposed communication, pipeline bubble, optimizer). "
    "A speed error that grows with one class's share points at that class's model.";

/// Figures span 0.4 (MFU) to 10^5 (tokens/s): a simulated one gets digits that fit its scale; a
/// published one is shown as the source prints it (at most 6 significant digits).
std::string figure(double v) {
  const double a = std::fabs(v);
  if (a >= 1000) return fmt::format("{:.0f}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  if (a >= 1) return fmt::format("{:.2f}", v);
  return fmt::format("{:.4f}", v);
}
/// A summary error, or "-" when no run of the set simulated.
std::string percent(int runs, double value) {
  return runs > 0 ? fmt::format("{:.1f}", value) : std::string("-");
}
/// A signed summary error ("+4.2", "-0.3"), or "-" when no run of the set simulated.
std::string signed_percent(int runs, double value) {
  return runs > 0 ? fmt::format("{:+.1f}", value) : std::string("-");
}
std::string published(double v) {
  return fmt::format("{:.6g}", v);
}

ValidationRun evaluate(const ValidationCase& c, const StepModel& model) {
  ValidationRun run;
  run.name = c.name;
  run.path = c.path;
  run.group = c.group;
  if (c.scenario.has_validation) {
    const ValidationSpec& v = c.scenario.validation;
    run.family = v.family;
    run.metric = v.metric;
    run.published = v.published;
    run.source = v.source;
  }
  if (!c.loaded) {
    run.error = c.error;
    return run;
  }
  run.gpu = c.scenario.cluster.gpu;
  run.precision = c.scenario.training.precision;
  const workload::ParallelismSpec& par = c.scenario.parallelism;
  run.gpus = par.tp * par.cp * par.pp * par.dp;
  try {
    const Cluster cluster(c.scenario);
    const StepReport report = step_on(model, cluster);
    run.simulated = metric_value(run.metric, cluster, report, model);
    if (!std::isfinite(run.simulated))
      throw core::Error("validation.metric", run.metric, "the simulated figure is not finite",
                        c.path);
    run.error_pct = 100.0 * (run.simulated - run.published) / run.published;
    run.shares = step_time_shares(report);
    const double source_tflops = c.scenario.validation.published_tflops_per_gpu;
    if (source_tflops > 0 && report.tokens_per_s > 0) {
      const double ours = report.tflops_per_gpu / (report.tokens_per_s / report.gpus);
      run.flops_ratio = ours / (source_tflops / run.published);
    }
    run.ok = true;
  } catch (const core::Error& e) {
    run.error = e.in_file(c.path).what();
  } catch (const std::exception& e) {
    run.error = e.what();
  }
  return run;
}

template <class Pick>
FamilySummary summary_of(const std::string& label, const std::vector<ValidationRun>& runs,
                         Pick pick) {
  FamilySummary f;
  f.family = label;
  std::vector<double> errors, signed_errors;
  for (const auto& r : runs) {
    if (!pick(r)) continue;
    if (r.ok) {
      errors.push_back(std::fabs(r.error_pct));
      signed_errors.push_back(speed_error_pct(r));
    } else {
      ++f.failed;
    }
  }
  f.runs = static_cast<int>(errors.size());
  f.within_5 = static_cast<int>(
      std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 5.0; }));
  f.within_12 = static_cast<int>(
      std::count_if(errors.begin(), errors.end(), [](double e) { return e <= 12.0; }));
  f.median_abs_error_pct = core::median(errors);
  f.median_speed_error_pct = core::median(signed_errors);
  f.max_abs_error_pct = errors.empty() ? 0.0 : *std::max_element(errors.begin(), errors.end());
  return f;
}

nlohmann::ordered_json families_json(const std::vector<FamilySummary>& families) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& f : families)
    j[f.family] = {{"median_abs_error_pct", f.median_abs_error_pct},
                   {"median_speed_error_pct", f.median_speed_error_pct},
                   {"max_abs_error_pct", f.max_abs_error_pct},
                   {"runs", f.runs},
                   {"within_5_pct", f.within_5},
                   {"within_12_pct", f.within_12}};
  return j;
}

std::string summary_table(const std::vector<FamilySummary>& rows, const char* what = "family") {
  std::size_t width = 10;
  for (const auto& f : rows) width = std::max(width, f.family.size() + 2);
  std::string out =
      fmt::format("{:<{}}{:>6}{:>8}{:>19}{:>16}{:>10}{:>10}{:>18}\n", what, width, "runs", "failed",
                  "median |error| %", "max |error| %", "<= 5 %", "<= 12 %", "speed bias %");
  for (const auto& f : rows)
    out += fmt::format("{:<{}}{:>6}{:>8}{:>19}{:>16}{:>10}{:>10}{:>18}\n", f.family, width, f.runs,
                       f.failed, percent(f.runs, f.median_abs_error_pct),
                       percent(f.runs, f.max_abs_error_pct), f.within_5, f.within_12,
                       signed_percent(f.runs, f.median_speed_error_pct));
  return out;
}

/// What is fitted and the leave-one-family-out errors; `lofo_table` formats their summary.
std::string lofo_statement(
    const ValidationReport& r,
    const std::function<std::string(const std::vector<FamilySummary>&)>& lofo_table) {
  if (r.lofo_equals_in_sample)
    return "Leave-one-family-out: no parameter of the step model is fitted on training runs (0 "
           "fitted parameters; every figure comes from datasheets and kernel and network "
           "measurements), so the leave-one-family-out errors equal the in-sample errors "
           "above.\n";
  std::string fits = fmt::format("Fitted on every run: {}.\n", r.fitted_values);
  for (const auto& [family, values] : r.lofo_values)
    fits += fmt::format("Fitted with {} held out: {}.\n", family, values);
  return fmt::format(
      "{}\nLeave-one-family-out ({} fitted parameter{}: {}): each family predicted with "
      "parameters fitted on the other families\n\n{}",
      fits, r.fitted_parameters, r.fitted_parameters == 1 ? "" : "s", r.fitter,
      lofo_table(r.leave_one_family_out));
}

}  // namespace

std::vector<std::string> validation_files(const std::string& directory) {
  std::error_code ec;
  if (!fs::is_directory(directory, ec))
    throw core::Error("", "", "not a directory of validation scenarios", directory);
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(directory, ec)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path().string());
  }
  if (ec) throw core::Error("", "", "cannot list the directory: " + ec.message(), directory);
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<ValidationCase> load_validation_cases(const std::vector<std::string>& files) {
  std::vector<ValidationCase> cases;
  for (const auto& path : files) {
    ValidationCase c;
    c.path = path;
    c.name = fs::path(path).stem().string();
    try {
      c.scenario = load_scenario(path);
      c.name = c.scenario.name;
      if (!c.scenario.has_validation)
        throw core::Error("validation", "",
                          "missing: a validation scenario states the published figure "
                          "(family, metric, published, source)",
                          path);
      c.loaded = true;
    } catch (const std::exception& e) {
      c.error = e.what();
      // The row still shows what was published when the rest of the file is what failed.
      try {
        const YAML::Node root = YAML::LoadFile(path);
        YAML::Node only;
        only["schema_version"] = kSchemaVersion;
        only["validation"] = root["validation"];
        const Scenario s = parse_scenario(YAML::Dump(only), path);
        c.scenario.has_validation = s.has_validation;
        c.scenario.validation = s.validation;
        if (root["name"].IsScalar()) c.name = root["name"].Scalar();
      } catch (const std::exception&) {
        c.scenario.has_validation = false;  // nothing usable: the row shows the error alone
      }
    }
    cases.push_back(std::move(c));
  }
  return cases;
}

double metric_value(const std::string& metric, const Cluster& cluster, const StepReport& r,
                    const StepModel& model) {
  if (metric == "tflops_per_gpu") return r.tflops_per_gpu;
  if (metric == "tokens_per_s_per_gpu") return r.tokens_per_s / r.gpus;
  if (metric == "step_time_s") return r.step_time_s;
  if (metric == "mfu") return r.mfu;
  if (metric == "time_to_train_days") return r.time_to_train_days;
  if (metric == "wall_clock_days") {
    CampaignOptions o;
    o.trials = kWallClockTrials;
    o.seed = 1;
    o.threads = 1;  // validation runs its cases in parallel already
    o.step = model;
    return run_campaign(cluster, o, &r).days.p50;
  }
  throw core::Error("validation.metric", metric,
                    fmt::format("unknown; valid: {}", fmt::join(validation_metrics(), ", ")),
                    cluster.scenario().source);
}

std::vector<ValidationRun> run_validation(const std::vector<ValidationCase>& cases,
                                          const StepModel& model, int threads) {
  std::vector<ValidationRun> runs;
  runs.reserve(cases.size());
  core::ordered_parallel(
      static_cast<int>(cases.size()), threads,
      [&](int i) { return evaluate(cases[static_cast<std::size_t>(i)], model); },
      [&](int, ValidationRun& run) { runs.push_back(std::move(run)); });
  return runs;
}

std::vector<FamilySummary> summarize(const std::vector<ValidationRun>& runs) {
  std::vector<FamilySummary> out;
  for (const auto& family : validation_families()) {
    FamilySummary f =
        summary_of(family, runs, [&](const ValidationRun& r) { return r.family == family; });
    if (f.runs + f.failed > 0) out.push_back(f);
  }
  return out;
}

namespace {

/// Summaries of the runs grouped by `key`, in first-seen order.
template <typename Key>
std::vector<FamilySummary> summarize_by(const std::vector<ValidationRun>& runs, Key key) {
  std::vector<std::string> groups;
  for (const auto& r : runs)
    if (std::find(groups.begin(), groups.end(), key(r)) == groups.end()) groups.push_back(key(r));
  std::vector<FamilySummary> out;
  for (const auto& g : groups)
    out.push_back(summary_of(g, runs, [&](const ValidationRun& r) { return key(r) == g; }));
  return out;
}

}  // namespace

std::vector<FamilySummary> summarize_groups(const std::vector<ValidationRun>& runs) {
  return summarize_by(runs, [](const ValidationRun& r) { return r.group; });
}

std::vector<FamilySummary> summarize_gpus(const std::vector<ValidationRun>& runs) {
  return summarize_by(runs, [](const ValidationRun& r) { return r.gpu.empty() ? "-" : r.gpu; });
}

std::vector<FamilySummary> summarize_gpu_precisions(const std::vector<ValidationRun>& runs) {
  return summarize_by(runs, [](const ValidationRun& r) {
    return r.gpu.empty() ? std::string("-") : r.gpu + " " + r.precision;
  });
}

std::vector<FamilySummary> summarize_time_shares(const std::vector<ValidationRun>& runs) {
  // Bands of the share in percent: [0, 10), [10, 25), [25, 50), [50, 75), [75, 100].
  static constexpr double kEdges[] = {0, 10, 25, 50, 75, 100};
  std::vector<FamilySummary> out;
  for (const auto& name : time_share_classes())
    for (std::size_t b = 0; b + 1 < std::size(kEdges); ++b) {
      const double lo = kEdges[b], hi = kEdges[b + 1];
      const bool last = b + 2 == std::size(kEdges);
      FamilySummary f = summary_of(
          fmt::format("{} {:.0f}-{:.0f} %", name, lo, hi), runs, [&](const ValidationRun& r) {
            const double pct = 100.0 * time_share(r.shares, name);
            return r.ok && pct >= lo && (pct < hi || (last && pct <= hi + 1e-9));
          });
      if (f.runs > 0) out.push_back(std::move(f));
    }
  return out;
}

std::vector<FamilySummary> summarize_scales(const std::vector<ValidationRun>& runs) {
  // Bands of the job's GPU count: one node, then factors of four.
  struct Band {
    int from, to;  ///< inclusive; to = 0: no upper end
  };
  static constexpr Band kBands[] = {{1, 8}, {9, 32}, {33, 128}, {129, 512}, {513, 2048}, {2049, 0}};
  std::vector<FamilySummary> out;
  for (const auto& family : validation_families())
    for (const Band& b : kBands) {
      const std::string label = b.to > 0 ? fmt::format("{} {}-{} GPUs", family, b.from, b.to)
                                         : fmt::format("{} over {} GPUs", family, b.from - 1);
      FamilySummary f = summary_of(label, runs, [&](const ValidationRun& r) {
        return r.ok && r.family == family && r.gpus >= b.from && (b.to == 0 || r.gpus <= b.to);
      });
      if (f.runs > 0) out.push_back(std::move(f));
    }
  return out;
}

double Indistinguishable::spread() const {
  const auto [lo, hi] =
      std::minmax_element(published.begin(), published.end(),
                          [](const auto& a, const auto& b) { return a.second < b.second; });
  return hi->second / lo->second;
}

namespace {

/// Groups of runs with the same metric and simulated value whose published figures are further
/// apart than 1.12 / 0.88.
std::vector<Indistinguishable> indistinguishable_runs(const std::vector<ValidationRun>& runs) {
  std::vector<Indistinguishable> out;
  std::vector<bool> taken(runs.size(), false);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].ok || taken[i]) continue;
    Indistinguishable group{runs[i].metric, runs[i].simulated, {}};
    for (std::size_t k = i; k < runs.size(); ++k)
      if (runs[k].ok && !taken[k] && runs[k].metric == group.metric &&
          runs[k].simulated == group.simulated) {
        taken[k] = true;
        group.published.emplace_back(runs[k].name, runs[k].published);
      }
    if (group.published.size() > 1 && group.spread() > 1.12 / 0.88) out.push_back(std::move(group));
  }
  return out;
}

/// `markdown`: items as a list.
std::string indistinguishable_text(const ValidationReport& r, bool markdown) {
  if (r.indistinguishable.empty()) return "";
  std::string out =
      "\nPublished figures the model cannot tell apart (the same simulated value) that no single "
      "value can match within 12 %:\n";
  for (const auto& g : r.indistinguishable) {
    std::vector<std::string> items;
    for (const auto& [name, value] : g.published)
      items.push_back(fmt::format("{} {}", name, published(value)));
    out += fmt::format("{}{} (simulated {}; published {:.2f}x apart)\n", markdown ? "- " : "  ",
                       fmt::join(items, ", "), figure(g.simulated), g.spread());
  }
  return out;
}

// How far the scenario's model FLOPs per token may be from the source's own count before the run
// is listed: the count follows from the model's shape, so a transcription of the right model
// with the source's convention lands within a few tenths of a percent (s(s+1)/2 or s^2/2 causal
// entries, a router's h x E, figures the source rounds). A source that counts what the schema
// leaves out (MosaicML's learned position table, 6 s h per token) does not carry the figure.
constexpr double kFlopsTolerance = 0.01;

std::string flops_check_text(const ValidationReport& r, bool markdown) {
  int checked = 0, close = 0;
  std::string off;
  for (const auto& run : r.runs) {
    if (!run.ok || !(run.flops_ratio > 0)) continue;
    ++checked;
    if (std::abs(run.flops_ratio - 1.0) <= kFlopsTolerance) {
      ++close;
      continue;
    }
    off += fmt::format("{}{}: {:.3f}x the source's count\n", markdown ? "- " : "  ", run.name,
                       run.flops_ratio);
  }
  if (checked == 0) return "";
  return fmt::format(
             "\nModel FLOPs per token against the sources' own count (their model TFLOP/s per GPU "
             "over their tokens/s per GPU; training.model_flops says how attention is counted): "
             "{} of {} runs within {:.0f} %{}\n",
             close, checked, 100 * kFlopsTolerance, off.empty() ? "" : "; the others:") +
         off;
}

}  // namespace

ValidationReport validate_directory(const std::string& directory, int threads,
                                    const Fitter* fitter) {
  ValidationReport report;
  report.directory = directory;
  std::vector<ValidationCase> cases = load_validation_cases(validation_files(directory));
  for (auto& c : cases) {
    const fs::path folder = fs::path(c.path).lexically_relative(directory).parent_path();
    c.group = folder.empty() ? "." : folder.generic_string();
  }
  auto training_runs = [&](const std::string& held_out) {
    std::vector<const ValidationCase*> training;
    for (const auto& c : cases)
      if (c.loaded && c.scenario.validation.family != held_out) training.push_back(&c);
    return training;
  };
  const bool fitted = fitter != nullptr && fitter->fit;
  // In-sample rows are what `clustertwin run` predicts (the profiles' values); the fit on every
  // run is reported beside them, and each held-out family is predicted by a refit without it.
  if (fitted) report.fitted_values = fitter->fit(training_runs("")).values;
  report.runs = run_validation(cases, StepModel{}, threads);
  report.families = summarize(report.runs);
  report.indistinguishable = indistinguishable_runs(report.runs);
  if (!fitted) {
    report.leave_one_family_out = report.families;
    return report;
  }
  report.fitted_parameters = fitter->parameters;
  report.fitter = fitter->description;
  report.lofo_equals_in_sample = false;
  for (const auto& family : validation_families()) {
    std::vector<ValidationCase> held_out;
    for (const auto& c : cases)
      if (c.scenario.has_validation && c.scenario.validation.family == family)
        held_out.push_back(c);
    if (held_out.empty()) continue;
    const FitResult fit = fitter->fit(training_runs(family));
    report.lofo_values.emplace_back(family, fit.values);
    for (auto& run : run_validation(held_out, fit.model, threads))
      report.lofo_runs.push_back(std::move(run));
  }
  report.leave_one_family_out = summarize(report.lofo_runs);
  return report;
}

std::string validation_text(const ValidationReport& r) {
  int failed = 0;
  std::size_t width = 4;
  for (const auto& run : r.runs) {
    failed += run.ok ? 0 : 1;
    width = std::max(width, run.name.size());
  }
  std::string out = fmt::format("Validation: {} published runs in {}", r.runs.size(), r.directory);
  out += failed > 0 ? fmt::format(" ({} did not simulate)\n\n", failed) : "\n\n";
  out += fmt::format("{:<{}}  {:<9}{:<22}{:>11}{:>11}{:>9}  {}\n", "name", width, "family",
                     "metric", "published", "simulated", "error %", "source");
  for (const auto& run : r.runs) {
    if (run.ok) {
      out += fmt::format("{:<{}}  {:<9}{:<22}{:>11}{:>11}{:>9.1f}  {}\n", run.name, width,
                         run.family, run.metric, published(run.published), figure(run.simulated),
                         run.error_pct, run.source);
    } else {
      out +=
          fmt::format("{:<{}}  {:<9}{:<22}{:>11}{:>11}{:>9}  {}\n", run.name, width,
                      run.family.empty() ? "-" : run.family, run.metric.empty() ? "-" : run.metric,
                      run.published > 0 ? published(run.published) : "-", "-", "-", run.source);
      out += fmt::format("{:<{}}  not simulated: {}\n", "", width, run.error);
    }
  }
  out += "\n" + summary_table(r.families) +
         "speed bias: the median error as a speed (+: the simulated step is faster than "
         "published)\n\n" +
         lofo_statement(r, [](const auto& rows) { return summary_table(rows); });
  const auto groups = summarize_groups(r.runs);
  if (groups.size() > 1) out += "\nBy source (sub-folder)\n" + summary_table(groups, "folder");
  const auto gpus = summarize_gpus(r.runs);
  if (gpus.size() > 1) out += "\nBy GPU (cluster.gpu)\n" + summary_table(gpus, "gpu");
  const auto kinds = summarize_gpu_precisions(r.runs);
  if (kinds.size() > 1)
    out += "\nBy GPU and GEMM precision (cluster.gpu, training.precision)\n" +
           summary_table(kinds, "gpu precision");
  const auto scales = summarize_scales(r.runs);
  if (!scales.empty())
    out += "\nBy family and job size (tp x cp x pp x dp)\n" + summary_table(scales, "family GPUs");
  return out + indistinguishable_text(r, false) + flops_check_text(r, false) +
         "\nBy where the simulated step's time goes\n" + kTimeShareNote + "\n" +
         summary_table(summarize_time_shares(r.runs), "share of the step");
}

std::string validation_markdown(const ValidationReport& r) {
  auto table = [](const std::vector<FamilySummary>& rows, const char* what) {
    std::string out = fmt::format(
        "| {} | runs | did not simulate | median \\|error\\| % | max \\|error\\| % | "
        "runs within 5 % | within 12 % | median speed error % (+: simulated faster) |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|\n",
        what);
    for (const auto& f : rows)
      out +=
          fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", f.family, f.runs, f.failed,
                      percent(f.runs, f.median_abs_error_pct), percent(f.runs, f.max_abs_error_pct),
                      f.within_5, f.within_12, signed_percent(f.runs, f.median_speed_error_pct));
    return out;
  };
  std::string out = table(r.families, "family") + "\n" +
                    lofo_statement(r, [&](const auto& rows) { return table(rows, "family"); }) +
                    "\n" + table(summarize_groups(r.runs), "source (scenarios/validation/...)") +
                    "\n" + table(summarize_gpus(r.runs), "GPU (cluster.gpu)") + "\n" +
                    table(summarize_gpu_precisions(r.runs),
                          "GPU and GEMM precision (cluster.gpu, training.precision)") +
                    "\n" + table(summarize_scales(r.runs), "family and job size in GPUs") +
                    indistinguishable_text(r, true) + flops_check_text(r, true) + "\n";
  out +=
      "| run | family | metric | published | simulated | error % | source |\n"
      "|---|---|---|---:|---:|---:|---|\n";
  for (const auto& run : r.runs) {
    const std::string source = run.ok ? run.source : run.source + " — not simulated: " + run.error;
    std::string escaped;
    for (char ch : source) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", run.name,
                       run.family.empty() ? "-" : run.family, run.metric.empty() ? "-" : run.metric,
                       run.published > 0 ? published(run.published) : "-",
                       run.ok ? figure(run.simulated) : "-",
                       run.ok ? fmt::format("{:.1f}", run.error_pct) : "-", escaped);
  }
  return out + "\n" + kTimeShareNote + "\n\n" +
         table(summarize_time_shares(r.runs), "share of the simulated step");
}

std::string validation_json(const ValidationReport& r) {
  nlohmann::ordered_json runs = nlohmann::ordered_json::array();
  for (const auto& run : r.runs) {
    nlohmann::ordered_json j;
    j["name"] = run.name;
    j["family"] = run.family;
    j["metric"] = run.metric;
    j["published"] = run.published;
    j["simulated"] = run.ok ? nlohmann::ordered_json(run.simulated) : nlohmann::ordered_json();
    j["error_pct"] = run.ok ? nlohmann::ordered_json(run.error_pct) : nlohmann::ordered_json();
    j["source"] = run.source;
    j["gpu"] = run.gpu;
    j["precision"] = run.precision;
    j["gpus"] = run.gpus;
    j["flops_per_token_ratio"] =
        run.flops_ratio > 0 ? nlohmann::ordered_json(run.flops_ratio) : nlohmann::ordered_json();
    if (run.ok) {
      nlohmann::ordered_json shares = nlohmann::ordered_json::object();
      for (const auto& name : time_share_classes()) shares[name] = time_share(run.shares, name);
      j["time_shares"] = std::move(shares);
    } else {
      j["error"] = run.error;
    }
    runs.push_back(std::move(j));
  }
  nlohmann::ordered_json j;
  j["runs"] = std::move(runs);
  j["families"] = families_json(r.families);
  j["by_source"] = families_json(summarize_groups(r.runs));
  j["by_gpu"] = families_json(summarize_gpus(r.runs));
  j["by_gpu_precision"] = families_json(summarize_gpu_precisions(r.runs));
  j["by_scale"] = families_json(summarize_scales(r.runs));
  j["by_time_share"] = families_json(summarize_time_shares(r.runs));
  nlohmann::ordered_json lofo_values = nlohmann::ordered_json::object();
  for (const auto& [family, values] : r.lofo_values) lofo_values[family] = values;
  j["fitted"] = {{"parameters", r.fitted_parameters},
                 {"description", r.fitter},
                 {"values", r.fitted_values},
                 {"values_with_family_held_out", lofo_values}};
  j["leave_one_family_out"] = {{"fitted_parameters", r.fitted_parameters},
                               {"equals_in_sample", r.lofo_equals_in_sample},
                               {"families", families_json(r.leave_one_family_out)}};
  nlohmann::ordered_json apart = nlohmann::ordered_json::array();
  for (const auto& g : r.indistinguishable) {
    nlohmann::ordered_json runs_of = nlohmann::ordered_json::array();
    for (const auto& [name, value] : g.published)
      runs_of.push_back({{"name", name}, {"published", value}});
    apart.push_back({{"metric", g.metric}, {"simulated", g.simulated}, {"runs", runs_of}});
  }
  j["indistinguishable"] = std::move(apart);
  return j.dump(2) + "\n";
}

}  // namespace twin::sim
