#pragma once
// One run of the app, computed off the GUI thread: the scenario, its fabric and priced bill of
// materials, the step and the failure campaign when it has a job, the healthy fabric's loads when
// it has faults (to show where a failure moved traffic), and the fabric digests the view draws.

#include <memory>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "gui/fabric_digest.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "twin/campaign.hpp"
#include "twin/cost_model.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"

namespace twin::gui {

struct RunResult {
  std::string error;  ///< empty when the run succeeded
  bool cancelled = false;
  sim::Scenario scenario;
  std::shared_ptr<const topology::Fabric> fabric;
  topology::Bom bom;
  bool has_step = false, has_campaign = false;
  sim::StepReport step;
  sim::CampaignReport campaign;
  sim::CostReport cost;  ///< the run priced over its time to train (P50 with failures if known)
  double train_days = 0;
  /// The same job on the healthy fabric (only when the scenario has fabric faults).
  bool has_healthy = false;
  std::vector<double> healthy_link_bytes;
  double healthy_step_s = 0;
  std::shared_ptr<const FabricDigest> digest;       ///< vs the healthy fabric when it has faults
  std::shared_ptr<const FabricDigest> vs_baseline;  ///< vs the baseline, same fabric only
  double seconds = 0;                               ///< wall time of the computation
};

struct RunInputs {
  std::string yaml, source;
  int trials = 50;
  int threads = 1;
  bool campaign = true;
  std::shared_ptr<const RunResult> baseline;  ///< for the per-link comparison (may be null)
};

/// Everything one run shows; errors are kept in the result, never thrown. `cancel` stops the
/// step simulations and the campaign (between and inside trials) and the run between phases.
std::shared_ptr<RunResult> compute_result(const RunInputs& in, const core::CancelToken* cancel);

/// True when two runs' fabrics have the same links, so loads can be compared link by link.
bool same_fabric(const RunResult& a, const RunResult& b);

}  // namespace twin::gui
