#include "twin/validation_fit.hpp"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "calibrate/profile.hpp"
#include "core/stats.hpp"
#include "twin/cluster.hpp"

namespace twin::sim {
namespace {

/// A grid: values lowest..highest in steps of `unit`, tried every `coarse` steps, then every step
/// within coarse - 1 of the best.
struct Grid {
  int lowest, highest, coarse;
  double unit;
};
constexpr Grid kMemoryGrid{10, 100, 5, 0.01};  // 0.10 .. 1.00
constexpr Grid kGemmGrid{100, 200, 4, 0.005};  // 0.50 .. 1.00
constexpr int kMaxRounds = 5;

/// The value of `grid` that minimizes `objective` (NaN: no run simulated); ties keep the value met
/// first; nothing when no value gives a finite objective.
template <class Objective>
std::optional<double> search(const Grid& grid, Objective objective) {
  int best = grid.highest;
  double best_error = std::numeric_limits<double>::infinity();
  auto consider = [&](int step) {
    const double error = objective(step * grid.unit);
    if (std::isfinite(error) && error < best_error) best = step, best_error = error;
  };
  for (int step = grid.lowest; step <= grid.highest; step += grid.coarse) consider(step);
  const int centre = best;
  for (int step = std::max(grid.lowest, centre - grid.coarse + 1);
       step <= std::min(grid.highest, centre + grid.coarse - 1); ++step)
    if (step != centre) consider(step);
  if (!std::isfinite(best_error)) return std::nullopt;
  return best * grid.unit;
}

/// A training run and what the fit needs to know of it.
struct Run {
  const ValidationCase* c;
  std::string profile;          ///< the profile's name ("" when the cluster is invalid)
  std::optional<double> prior;  ///< its gemm16_efficiency_prior, when it has one
  bool sixteen_bit = false;     ///< training.precision bf16 or fp16
};

std::vector<Run> training_runs(const std::vector<const ValidationCase*>& training) {
  std::vector<Run> runs;
  for (const auto* c : training) {
    if (!c->loaded || !c->scenario.has_validation) continue;
    Run r{c, "", std::nullopt, false};
    const std::string& precision = c->scenario.training.precision;
    r.sixteen_bit = precision == "bf16" || precision == "fp16";
    try {
      const Cluster cluster(c->scenario);
      const calibrate::Profile& profile = cluster.profile();
      r.profile = profile.name;
      if (profile.kernels.gemm16_efficiency_prior)
        r.prior = profile.kernels.gemm16_efficiency_prior->value;
    } catch (const std::exception&) {
      // The run does not simulate either; run_validation reports it and the fit leaves it out.
    }
    runs.push_back(r);
  }
  return runs;
}

/// The |error| of each run at each set of parameters tried, kept across the fits of one
/// `validate`: the leave-one-family-out fits try the same values on subsets of the same runs. A
/// run's key holds only the parameters that reach it (the memory-bound efficiency, and its own
/// profile's GEMM rate), so a GEMM rate tried on one GPU kind re-simulates that kind's runs only.
/// Runs are told apart by their file (load_validation_cases reads each case from one); a fitter,
/// and its memo, serves one validation directory.
class ErrorMemo {
 public:
  /// The fit's objective: the mean |error| of the better-agreeing half of the runs that simulate
  /// with `p` (validation_fit.hpp), or NaN when none do.
  double trimmed_abs_error(const std::vector<const Run*>& runs, const FittedParameters& p,
                           int threads) {
    std::vector<ValidationCase> missing;
    std::vector<Key> missing_keys;
    for (const auto* r : runs)
      if (const Key k = key(*r, p); !errors_.contains(k)) {
        missing.push_back(*r->c);
        missing_keys.push_back(k);
      }
    const auto simulated = run_validation(missing, with_fitted(p), threads);
    for (std::size_t i = 0; i < missing.size(); ++i)
      errors_[missing_keys[i]] =
          simulated[i].ok ? std::optional(std::abs(simulated[i].error_pct)) : std::nullopt;
    std::vector<double> errors;
    for (const auto* r : runs)
      if (const auto& e = errors_.at(key(*r, p))) errors.push_back(*e);
    return errors.empty() ? std::nan("") : core::mean_of_smaller_half(std::move(errors));
  }

 private:
  using Key = std::tuple<std::string, long, long>;  // file, efficiency and GEMM rate in 1e-4

  static Key key(const Run& r, const FittedParameters& p) {
    long gemm = -1;  // the profile's GEMM rates are not fitted
    if (r.prior) {
      const auto it = p.gemm16_efficiency.find(r.profile);
      gemm = std::lround((it == p.gemm16_efficiency.end() ? *r.prior : it->second) * 1e4);
    }
    return {r.c->path, std::lround(p.memory_bound_efficiency * 1e4), gemm};
  }

  std::map<Key, std::optional<double>> errors_;
};

FittedParameters fit(const std::vector<const ValidationCase*>& training, int threads,
                     ErrorMemo& memo) {
  const std::vector<Run> runs = training_runs(training);
  std::vector<const Run*> all;
  std::map<std::string, std::vector<const Run*>> sixteen_bit;  // by profile with a prior
  std::map<std::string, double> priors;
  for (const auto& r : runs) {
    all.push_back(&r);
    if (!r.prior) continue;
    priors[r.profile] = *r.prior;
    auto& kind = sixteen_bit[r.profile];
    if (r.sixteen_bit) kind.push_back(&r);
  }

  FittedParameters p;
  p.runs = static_cast<int>(runs.size());
  for (const auto& [profile, prior] : priors) {
    p.gemm16_efficiency[profile] = prior;
    p.gemm16_runs[profile] = 0;
  }
  // Alternately, until neither kind of parameter moves.
  for (int round = 0; round < kMaxRounds; ++round) {
    const FittedParameters before = p;
    auto memory_error = [&](double e) {
      FittedParameters trial = p;
      trial.memory_bound_efficiency = e;
      return memo.trimmed_abs_error(all, trial, threads);
    };
    // With no run that simulates, the STREAM rate (the profiles' default without a fit).
    p.memory_bound_efficiency = search(kMemoryGrid, memory_error).value_or(1.0);
    for (const auto& [profile, kind] : sixteen_bit) {
      if (static_cast<int>(kind.size()) < kMinGemmRuns) continue;
      const auto g = search(kGemmGrid, [&](double value) {
        FittedParameters trial = p;
        trial.gemm16_efficiency[profile] = value;
        return memo.trimmed_abs_error(kind, trial, threads);
      });
      if (!g) continue;  // none of them simulates: the prior stands
      p.gemm16_efficiency[profile] = *g;
      p.gemm16_runs[profile] = static_cast<int>(kind.size());
    }
    if (p.memory_bound_efficiency == before.memory_bound_efficiency &&
        p.gemm16_efficiency == before.gemm16_efficiency)
      break;
  }
  return p;
}

}  // namespace

std::string FittedParameters::text() const {
  std::string out = fmt::format("kernels.memory_bound_efficiency = {:.2f} ({} run{})",
                                memory_bound_efficiency, runs, runs == 1 ? "" : "s");
  for (const auto& [profile, value] : gemm16_efficiency) {
    const auto it = gemm16_runs.find(profile);
    const int n = it == gemm16_runs.end() ? 0 : it->second;
    out += n > 0 ? fmt::format("; {} kernels.gemm_efficiency bf16/fp16 = {:.3f} ({} run{})",
                               profile, value, n, n == 1 ? "" : "s")
                 : fmt::format(
                       "; {} kernels.gemm_efficiency bf16/fp16 = {:.4g} (the prior: "
                       "fewer than {} BF16/FP16 runs)",
                       profile, value, kMinGemmRuns);
  }
  return out;
}

StepModel with_fitted(const FittedParameters& p) {
  return [p](const Cluster& cluster) {
    calibrate::Profile profile = cluster.profile();
    auto& k = profile.kernels;
    k.memory_bound_efficiency = {
        p.memory_bound_efficiency,
        fmt::format("fitted on published training runs: {:.2f}", p.memory_bound_efficiency)};
    if (k.gemm16_efficiency_prior) {
      const auto it = p.gemm16_efficiency.find(profile.name);
      const double g =
          it == p.gemm16_efficiency.end() ? k.gemm16_efficiency_prior->value : it->second;
      for (const char* dtype : {"bf16", "fp16"})
        if (auto e = k.gemm_efficiency.find(dtype); e != k.gemm_efficiency.end())
          e->second = {g, fmt::format("fitted on published training runs: {:.3f}", g)};
    }
    return simulate_step(cluster.with_profile(std::move(profile)));
  };
}

FittedParameters fit_parameters(const std::vector<const ValidationCase*>& training, int threads) {
  ErrorMemo memo;
  return fit(training, threads, memo);
}

Fitter step_model_fitter(int threads) {
  Fitter f;
  int priors = 0;
  for (const auto& name : calibrate::shipped_profile_names())
    if (calibrate::load_profile(name).kernels.gemm16_efficiency_prior) ++priors;
  f.description = fmt::format(
      "kernels.memory_bound_efficiency, one value for every GPU kind, and the 16-bit GEMM rate "
      "of each GPU kind with no sustained 16-bit GEMM measured ({} of the shipped profiles, "
      "fitted on its BF16/FP16 runs when there are at least {}), each the value that minimizes "
      "the mean |error| of the better-agreeing half of its runs",
      priors, kMinGemmRuns);
  f.parameters = 1 + priors;
  f.fit = [threads, memo = std::make_shared<ErrorMemo>()](
              const std::vector<const ValidationCase*>& training) {
    const FittedParameters p = fit(training, threads, *memo);
    return FitResult{with_fitted(p), p.text()};
  };
  return f;
}

ValidationReport validate_with_fit(const std::string& directory, int threads) {
  const Fitter fitter = step_model_fitter(threads);
  return validate_directory(directory, threads, &fitter);
}

}  // namespace twin::sim
