#include "twin/validation_fit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <utility>

#include "core/stats.hpp"
#include "twin/cluster.hpp"

namespace twin::sim {
namespace {

constexpr double kLowest = 0.1, kHighest = 1.0;

/// Positive when the simulated run is faster than the published one, whatever the metric.
double speed_error(const ValidationRun& run) {
  const bool time_like = run.metric == "step_time_s" || run.metric == "time_to_train_days";
  return time_like ? -run.error_pct : run.error_pct;
}

/// Median speed error of the training runs that simulate with `efficiency`, or NaN when none do.
double median_speed_error(const std::vector<ValidationCase>& training, double efficiency,
                          int threads) {
  std::vector<double> errors;
  for (const auto& run :
       run_validation(training, with_memory_bound_efficiency(efficiency), threads))
    if (run.ok) errors.push_back(speed_error(run));
  return errors.empty() ? std::nan("") : core::median(std::move(errors));
}

}  // namespace

StepModel with_memory_bound_efficiency(double efficiency) {
  return [efficiency](const Scenario& scenario) {
    const Cluster cluster(scenario);
    calibrate::Profile profile = cluster.profile();
    profile.kernels.memory_bound_efficiency = {
        efficiency, fmt::format("fitted on published training runs: {:.2f}", efficiency)};
    return simulate_step(cluster.with_profile(std::move(profile)));
  };
}

double fit_memory_bound_efficiency(const std::vector<const ValidationCase*>& training,
                                   int threads) {
  std::vector<ValidationCase> runs;
  for (const auto* c : training)
    if (c->loaded && c->scenario.has_validation) runs.push_back(*c);
  auto error_at = [&](double e) { return median_speed_error(runs, e, threads); };
  const double at_highest = error_at(kHighest);
  if (!std::isfinite(at_highest) || at_highest <= 0) return kHighest;  // too slow even at STREAM
  if (error_at(kLowest) >= 0) return kLowest;
  double lo = kLowest, hi = kHighest;
  while (hi - lo > 0.004) {
    const double mid = 0.5 * (lo + hi);
    (error_at(mid) > 0 ? hi : lo) = mid;
  }
  return std::round(50.0 * (lo + hi)) / 100.0;
}

Fitter memory_bound_efficiency_fitter(int threads) {
  Fitter f;
  f.description =
      "kernels.memory_bound_efficiency, one value for every GPU kind, the median speed error of "
      "the training runs set to zero";
  f.parameters = 1;
  f.fit = [threads](const std::vector<const ValidationCase*>& training) {
    const double e = fit_memory_bound_efficiency(training, threads);
    return FitResult{with_memory_bound_efficiency(e),
                     fmt::format("kernels.memory_bound_efficiency = {:.2f} ({} run{})", e,
                                 training.size(), training.size() == 1 ? "" : "s")};
  };
  return f;
}

ValidationReport validate_with_fit(const std::string& directory, int threads) {
  const Fitter fitter = memory_bound_efficiency_fitter(threads);
  return validate_directory(directory, threads, &fitter);
}

}  // namespace twin::sim
