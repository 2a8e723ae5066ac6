#pragma once
/// The one step-model parameter fitted on published training runs.
///
/// kernels.memory_bound_efficiency: the fraction of the STREAM rate (kernels.hbm_achievable_GBps)
/// that the memory-bound kernels of training frameworks reach (norms and their backward
/// reductions, activations, casts, token permutes, cross-entropy, the optimizer). Everything else
/// in the step comes from datasheets and kernel and network measurements. One value serves
/// every GPU kind: it describes the frameworks' kernels, not the memory.
///
/// The fit: the value that minimizes the median |error| of the training runs (a step time's error
/// counts like a throughput's), searched on a grid (every 0.05 on [0.1, 1], then every 0.01 around
/// the best; ties keep the value met first) because that median is not monotone in the efficiency.
/// Least median of absolute errors, rather than a median signed error of zero, because a few
/// sources publish runs inconsistently, and all on one side: pairs of runs with the same
/// configuration 1.3-2x apart (`clustertwin validate` lists them), every one of them faster in
/// the model. A median signed error moves with every such run; the least median follows the half
/// of the runs that agree with each other, whatever the other half does. The result is rounded to
/// 0.01 so that a shipped profile can carry exactly the value fitted on every published run.

#include <vector>

#include "twin/validation.hpp"

namespace twin::sim {

/// The step model with kernels.memory_bound_efficiency set to `efficiency` in every profile.
StepModel with_memory_bound_efficiency(double efficiency);

/// The fitted efficiency on `training` (runs that fail to simulate are left out); `threads`
/// workers simulate the runs.
double fit_memory_bound_efficiency(const std::vector<const ValidationCase*>& training, int threads);

/// The fitter `clustertwin validate` uses: 1 parameter.
Fitter memory_bound_efficiency_fitter(int threads);

/// What `clustertwin validate` (and the Python module's validate) report: the shipped step model
/// on every run of `directory`, the efficiency fitted on them all, and leave-one-family-out.
ValidationReport validate_with_fit(const std::string& directory, int threads);

}  // namespace twin::sim
