#pragma once
/// Validation against published training runs: every scenario of a directory that carries a
/// `validation:` section (the source's own figure, scenarios/validation/) is simulated, and the
/// simulated figure is compared with the published one.
///
///   error_pct = 100 (simulated - published) / published
///   per family: median and maximum of |error_pct| over the runs that simulated
///   speed_error_pct = error_pct for rates (TFLOP/s, tokens/s, MFU) and
///                     100 (published / simulated - 1) for times (step time, time to train):
///                     positive when the simulated step is faster; its median is a set's bias
///
/// Metrics, each one figure of the simulated step (twin/step_sim.hpp):
///   tflops_per_gpu        model FLOPs of the step (no recompute) / step time / GPUs / 1e12,
///                         as NeMo and Megatron report "Model TFLOP/s/GPU"
///   tokens_per_s_per_gpu  global batch x sequence length / step time / GPUs
///   step_time_s           the step time
///   mfu                   tflops_per_gpu / the profile's BF16 dense peak (how NeMo and
///                         Megatron report FP8 runs; FP16's peak is the same)
///   time_to_train_days    training.tokens / tokens per step x step time / 86,400 (steps only:
///                         no failures, restarts or evaluation)
///   wall_clock_days       the same run as a published wall-clock time: the median over
///                         kWallClockTrials trials of the scenario's failure campaign
///                         (twin/campaign.hpp: its failure, straggler and recovery models, their
///                         defaults from the reliability data) around the simulated step, so
///                         interruptions, checkpoints and restarts count; evaluation does not
///
/// Leave-one-family-out (LOFO): parameters fitted on the published runs of every family but one
/// are used to predict the held-out family; its errors are the out-of-sample errors. A `Fitter`
/// turns the training runs into a step model; without one (the step model has no parameter
/// fitted on training runs: every figure comes from datasheets, kernel and network measurements),
/// LOFO errors equal the in-sample ones and the report says so.
///
/// A scenario that fails to load or to simulate (malformed, impossible parallelism, a field this
/// build does not know) is a row with its error message, never a failure of the whole run.

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "twin/campaign.hpp"
#include "twin/cluster.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {

/// One validation scenario as loaded: the scenario, or why it could not be loaded.
struct ValidationCase {
  std::string path;
  std::string name;   ///< the scenario's name (the file stem when it did not load)
  std::string group;  ///< sub-folder of the validation directory ("." at its top)
  bool loaded = false;
  Scenario scenario;
  std::string error;
};

/// A step model: the simulated step of a cluster's job. The default is simulate_step.
using StepModel = StepFunction;

/// What a fit produced: the step model with the fitted parameters, and their values in words.
struct FitResult {
  StepModel model;
  std::string values;  ///< e.g. "kernels.memory_bound_efficiency = 0.50"
};

/// Fits parameters on the given training runs (scenarios with their published figures) and
/// returns the step model that uses them.
struct Fitter {
  std::string description;
  int parameters = 0;  ///< how many parameters it fits (per GPU kind and kernel class)
  std::function<FitResult(const std::vector<const ValidationCase*>& training)> fit;
};

struct ValidationRun {
  std::string name, path, family, metric, source;
  std::string group;      ///< the sub-folder of the validation directory (one source table each)
  std::string gpu;        ///< cluster.gpu, the hardware profile (empty when the file did not load)
  std::string precision;  ///< training.precision, the GEMM dtype (empty when it did not load)
  int gpus = 0;           ///< the job's GPUs, tp x cp x pp x dp (0 when it did not load)
  double published = 0;
  bool ok = false;  ///< simulated; otherwise `error` says why not
  double simulated = 0;
  double error_pct = 0;
  TimeShares shares;  ///< of the simulated step (when ok)
  /// The scenario's model FLOPs per token over the source's (published model TFLOP/s per GPU
  /// over published tokens/s per GPU); 0 when the source prints no TFLOP/s or the run did not
  /// simulate. Off 1 by more than a few tenths of a percent: the model differs from the one the
  /// source counted, or the two count differently (training.model_flops).
  double flops_ratio = 0;
  std::string error;
};

/// Errors of a set of runs: a family, or a group (the sub-folder the runs came from).
struct FamilySummary {
  std::string family;  ///< the family, or the group
  double median_abs_error_pct = 0;
  /// The set's bias: the median of the signed speed errors (speed_error_pct), positive when the
  /// simulated step is faster than the published one.
  double median_speed_error_pct = 0;
  double max_abs_error_pct = 0;
  int runs = 0;                     ///< runs that simulated (the errors summarized)
  int failed = 0;                   ///< runs that did not load or simulate
  int within_5 = 0, within_12 = 0;  ///< runs with |error| <= 5 % and <= 12 %
};

/// Runs the model cannot tell apart (the same metric and the same simulated value: to the model
/// they are one configuration) whose published figures no single value can match within 12 %
/// (largest / smallest > 1.12 / 0.88). No model can bring all of them under the bar.
struct Indistinguishable {
  std::string metric;
  double simulated = 0;
  std::vector<std::pair<std::string, double>> published;  ///< (run name, published figure)
  /// Largest published figure over the smallest.
  [[nodiscard]] double spread() const;
};

struct ValidationReport {
  std::string directory;
  std::vector<ValidationRun> runs;
  std::vector<FamilySummary> families;  ///< in validation_families() order, those with runs
  int fitted_parameters = 0;
  std::string fitter;         ///< description of the fitter, empty when nothing is fitted
  std::string fitted_values;  ///< the values fitted on every run (the profiles should carry them)
  /// Per held-out family: the values fitted on the other families.
  std::vector<std::pair<std::string, std::string>> lofo_values;
  bool lofo_equals_in_sample = true;
  /// Per held-out family: its errors with parameters fitted on the other families.
  std::vector<FamilySummary> leave_one_family_out;
  std::vector<ValidationRun> lofo_runs;  ///< the held-out predictions (empty when in-sample)
  std::vector<Indistinguishable> indistinguishable;  ///< in the order of their first run
};

/// The scenario files (*.yaml, recursively) of `directory`, sorted by path. Throws core::Error
/// when the directory does not exist.
std::vector<std::string> validation_files(const std::string& directory);

/// Loads every file; a file that does not load, or has no `validation:` section, becomes a case
/// with its error.
std::vector<ValidationCase> load_validation_cases(const std::vector<std::string>& files);

/// Trials of the failure campaign behind a wall_clock_days figure (seed 1: deterministic).
inline constexpr int kWallClockTrials = 100;

/// The metric's value in `report`, the simulated step of the cluster's job (wall_clock_days runs
/// the campaign around it, its other steps on `model`: empty, simulate_step); throws core::Error
/// for an unknown metric.
double metric_value(const std::string& metric, const Cluster& cluster, const StepReport& report,
                    const StepModel& model = {});

/// Runs every case with `model` (nullptr: simulate_step) on `threads` threads; rows in case order.
std::vector<ValidationRun> run_validation(const std::vector<ValidationCase>& cases,
                                          const StepModel& model, int threads);

/// The run's error as a speed: positive when the simulated step is faster than the published.
double speed_error_pct(const ValidationRun& run);

/// Median and maximum |error| per family, in validation_families() order.
std::vector<FamilySummary> summarize(const std::vector<ValidationRun>& runs);
/// The same per group (sub-folder), in order of first appearance.
std::vector<FamilySummary> summarize_groups(const std::vector<ValidationRun>& runs);
/// Errors per GPU kind (cluster.gpu), in first-seen order; runs that did not load count as
/// failed under "-".
std::vector<FamilySummary> summarize_gpus(const std::vector<ValidationRun>& runs);
/// Errors of the runs grouped by how much of the simulated step one class of work takes
/// ("attention 50-75 %"), for every class of time_share_classes() and share band with runs: a
/// bias that grows with one class's share points at that class's model.
std::vector<FamilySummary> summarize_time_shares(const std::vector<ValidationRun>& runs);
/// Errors per family and job size in GPUs, in bands ("fsdp 129-512 GPUs"; 1-8, 9-32, 33-128,
/// 129-512, 513-2048, over 2048): a bias that grows with the GPU count is a mechanism of scale the
/// model lacks (or overstates), and the one a planner extrapolating to a larger cluster carries.
std::vector<FamilySummary> summarize_scales(const std::vector<ValidationRun>& runs);
/// Errors per GPU kind and GEMM precision ("h100-sxm bf16"), in first-seen order: a bias that
/// one kind of kernel on one GPU carries shows here.
std::vector<FamilySummary> summarize_gpu_precisions(const std::vector<ValidationRun>& runs);

/// The whole validation of a directory: in-sample errors (the step model as shipped, with the
/// profiles' values), and with `fitter` the values it fits on every run and the
/// leave-one-family-out errors, each family predicted by a fit on the others (nullptr: nothing
/// is fitted on training runs, so LOFO equals in-sample).
ValidationReport validate_directory(const std::string& directory, int threads,
                                    const Fitter* fitter = nullptr);

/// The report as a text table (one row per run, then the family summary and LOFO).
std::string validation_text(const ValidationReport& report);
/// Markdown for the README: the family and group summaries, leave-one-family-out, then every run.
std::string validation_markdown(const ValidationReport& report);
/// {"runs": [{name, family, metric, published, simulated, error_pct, source}], "families":
/// {family: {median_abs_error_pct, max_abs_error_pct, runs}}, "leave_one_family_out": {...}}.
/// A run that did not simulate has null simulated and error_pct and an "error" message.
std::string validation_json(const ValidationReport& report);

}  // namespace twin::sim
