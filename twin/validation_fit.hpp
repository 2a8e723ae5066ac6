#pragma once
/// The one step-model parameter fitted on published training runs.
///
/// kernels.memory_bound_efficiency: the fraction of the STREAM rate (kernels.hbm_achievable_GBps)
/// that the memory-bound kernels of training frameworks reach (norms and their backward
/// reductions, activations, casts, token permutes, cross-entropy, the optimizer). Everything else
/// in the step comes from datasheets and kernel and network measurements. One value serves
/// every GPU kind: it describes the frameworks' kernels, not the memory.
///
/// The fit: the value that makes the median signed "speed error" of the training runs zero (the
/// simulated run as much too fast as too slow; a step time's error counts with its sign
/// reversed). A median is robust against the few runs a source publishes inconsistently. The
/// median speed error grows with the efficiency (faster kernels, faster steps), so bisection
/// on [0.1, 1] finds it; the result is rounded to 0.01 so that a shipped profile can carry
/// exactly the value fitted on every published run.

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
