#include "gui/run_result.hpp"

#include <chrono>

namespace twin::gui {

bool same_fabric(const RunResult& a, const RunResult& b) {
  return a.fabric && b.fabric && a.fabric->link_count() == b.fabric->link_count() &&
         a.fabric->node_count() == b.fabric->node_count() &&
         a.fabric->geometry().tiers == b.fabric->geometry().tiers &&
         a.fabric->geometry().pods == b.fabric->geometry().pods;
}

std::shared_ptr<RunResult> compute_result(const RunInputs& in, const core::CancelToken* cancel) {
  const auto start = std::chrono::steady_clock::now();
  auto r = std::make_shared<RunResult>();
  try {
    const sim::Cluster cluster(sim::parse_scenario(in.yaml, in.source));
    r->scenario = cluster.scenario();
    r->fabric = cluster.shared_fabric();
    r->bom = topology::compute_bom(*r->fabric);
    const topology::FabricState& state = cluster.state();
    core::check(cancel);
    if (r->scenario.has_job) {
      r->step = sim::simulate_step(cluster, "native", false, cancel);
      r->has_step = true;
      r->train_days = r->step.time_to_train_days;
      core::check(cancel);
      if (!state.healthy()) {
        // Where did the traffic go? The same job on the fabric without its faults.
        sim::Scenario healthy = r->scenario;
        healthy.failed_switches.clear();
        healthy.failed_cables.clear();
        healthy.degraded_cables.clear();
        const sim::StepReport h =
            sim::simulate_step(cluster.with(std::move(healthy)), "native", false, cancel);
        r->healthy_link_bytes = h.link_bytes;
        r->healthy_step_s = h.step_time_s;
        r->has_healthy = true;
        core::check(cancel);
      }
      if (in.campaign) {
        sim::CampaignOptions o;
        o.trials = in.trials;
        o.threads = in.threads;
        o.cancel = cancel;  // checked before every trial and inside long ones
        r->campaign = sim::run_campaign(cluster, o, &r->step);
        r->has_campaign = true;
        r->train_days = r->campaign.days.p50;
        core::check(cancel);
      }
    }
    r->cost = sim::price(r->scenario.costs, r->bom, r->scenario.cluster, r->scenario.fabric,
                         r->train_days, r->scenario.has_job ? r->scenario.training.tokens : 0.0);
    const std::vector<double> none;
    const auto& bytes = r->has_step ? r->step.link_bytes : none;
    const double step_s = r->has_step ? r->step.step_time_s : 0.0;
    r->digest = std::make_shared<FabricDigest>(digest_fabric(
        *r->fabric, bytes, step_s, &state, r->has_healthy ? r->healthy_link_bytes : none,
        r->healthy_step_s, "healthy fabric"));
    if (in.baseline && in.baseline->has_step && r->has_step && same_fabric(*in.baseline, *r))
      r->vs_baseline = std::make_shared<FabricDigest>(
          digest_fabric(*r->fabric, bytes, step_s, &state, in.baseline->step.link_bytes,
                        in.baseline->step.step_time_s, "baseline"));
  } catch (const core::Cancelled&) {
    r->cancelled = true;
    r->error = "cancelled";
  } catch (const std::exception& e) {
    r->error = e.what();
  }
  r->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace twin::gui
