#include "twin/validation_fit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <utility>

#include "core/stats.hpp"
#include "twin/cluster.hpp"

namespace twin::sim {
namespace {

constexpr double kLowest = 0.1, kHighest = 1.0;

/// Median |error| of the training runs that simulate with `efficiency`, or NaN when none
/// do.
double median_abs_error(const std::vector<ValidationCase>& training, double efficiency,
                        int threads) {
  std::vector<double> errors;
  for (const auto& run :
       run_validation(training, with_memory_bound_efficiency(efficiency), threads))
    if (run.ok) errors.push_back(std::abs(run.error_pct));
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
  // The objective is not monotone, so a grid: every 0.05, then every 0.01 around the best.
  // Ties keep the value met first.
  double best = kHighest, best_error = std::numeric_limits<double>::infinity();
  auto consider = [&](double e) {
    const double error = median_abs_error(runs, e, threads);
    if (std::isfinite(error) && error < best_error) best = e, best_error = error;
  };
  for (int i = 0; kLowest + 0.05 * i <= kHighest + 1e-9; ++i) consider(kLowest + 0.05 * i);
  const double centre = best;
  for (int i = -4; i <= 4; ++i) {
    const double e = std::round(100.0 * centre) / 100.0 + 0.01 * i;
    if (i != 0 && e >= kLowest - 1e-9 && e <= kHighest + 1e-9) consider(e);
  }
  return std::round(100.0 * best) / 100.0;
}

Fitter memory_bound_efficiency_fitter(int threads) {
  Fitter f;
  f.description =
      "kernels.memory_bound_efficiency, one value for every GPU kind, the value that minimizes "
      "the median |error| of the training runs";
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
