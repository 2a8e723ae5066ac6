#include "twin/validation_fit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "core/stats.hpp"
#include "twin/cluster.hpp"

namespace twin::sim {
namespace {

constexpr int kLowest = 10, kHighest = 100;  // the search range, in hundredths

/// The |error| of each run at each efficiency tried (in hundredths), kept across the fits of one
/// `validate`: the leave-one-family-out fits try the same grid on subsets of the same runs. Runs
/// are told apart by their file (load_validation_cases reads each case from one); a fitter, and
/// its memo, serves one validation directory.
class ErrorMemo {
 public:
  /// Median |error| of the runs that simulate at `cents` / 100, or NaN when none do.
  double median_abs_error(const std::vector<const ValidationCase*>& runs, int cents, int threads) {
    std::vector<ValidationCase> missing;
    for (const auto* c : runs)
      if (!errors_.contains({c->path, cents})) missing.push_back(*c);
    const auto simulated =
        run_validation(missing, with_memory_bound_efficiency(cents / 100.0), threads);
    for (std::size_t i = 0; i < missing.size(); ++i)
      errors_[{missing[i].path, cents}] =
          simulated[i].ok ? std::optional(std::abs(simulated[i].error_pct)) : std::nullopt;
    std::vector<double> errors;
    for (const auto* c : runs)
      if (const auto& e = errors_.at({c->path, cents})) errors.push_back(*e);
    return errors.empty() ? std::nan("") : core::median(std::move(errors));
  }

 private:
  std::map<std::pair<std::string, int>, std::optional<double>> errors_;
};

double fit(const std::vector<const ValidationCase*>& training, int threads, ErrorMemo& memo) {
  std::vector<const ValidationCase*> runs;
  for (const auto* c : training)
    if (c->loaded && c->scenario.has_validation) runs.push_back(c);
  // The objective is not monotone, so a grid: every 0.05, then every 0.01 around the best.
  // Ties keep the value met first.
  int best = kHighest;
  double best_error = std::numeric_limits<double>::infinity();
  auto consider = [&](int cents) {
    const double error = memo.median_abs_error(runs, cents, threads);
    if (std::isfinite(error) && error < best_error) best = cents, best_error = error;
  };
  for (int cents = kLowest; cents <= kHighest; cents += 5) consider(cents);
  const int centre = best;
  for (int cents = std::max(kLowest, centre - 4); cents <= std::min(kHighest, centre + 4); ++cents)
    if (cents != centre) consider(cents);
  return best / 100.0;
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
  ErrorMemo memo;
  return fit(training, threads, memo);
}

Fitter memory_bound_efficiency_fitter(int threads) {
  Fitter f;
  f.description =
      "kernels.memory_bound_efficiency, one value for every GPU kind, the value that minimizes "
      "the median |error| of the training runs";
  f.parameters = 1;
  f.fit = [threads, memo = std::make_shared<ErrorMemo>()](
              const std::vector<const ValidationCase*>& training) {
    const double e = fit(training, threads, *memo);
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
