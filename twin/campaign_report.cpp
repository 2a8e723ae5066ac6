// Readable and JSON reports of a campaign.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "twin/campaign.hpp"

namespace twin::sim {

std::string campaign_text(const Scenario& s, const CampaignReport& r) {
  // The job's GPUs (the whole cluster unless it runs on part of an imported one).
  const int gpus = s.parallelism.tp * s.parallelism.pp * s.parallelism.dp;
  std::string out =
      fmt::format("Training campaign: {} on {} GPUs, {} trials\n", s.model.name, gpus, r.trials);
  out +=
      fmt::format("failure-free      {:.1f} days ({:.3f} s/step)\n", r.healthy_days, r.step_time_s);
  out += fmt::format("job MTBF          {:.2f} h ({:.1f} interruptions/day simulated)\n",
                     r.job_mtbf_h, r.interruptions_per_day);
  out += fmt::format(
      "checkpoint        every {:.1f} min ({:.3g} s pause each); Young/Daly {:.1f} min; best found "
      "{:.1f} min\n",
      r.interval_s / 60, r.checkpoint_s, r.young_daly_s / 60, r.best_interval_s / 60);
  out += fmt::format("ETTR              P10 {:.3f}  P50 {:.3f}  P90 {:.3f}\n", r.ettr.p10,
                     r.ettr.p50, r.ettr.p90);
  out += fmt::format("time to train     P10 {:.1f}  P50 {:.1f}  P90 {:.1f} days\n", r.days.p10,
                     r.days.p50, r.days.p90);
  out += fmt::format(
      "without stragglers ETTR P50 {:.3f}, time to train P50 {:.1f} days (straggler slowdown "
      "{:.3f}x per episode)\n",
      r.ettr_without_stragglers.p50, r.days_without_stragglers.p50, r.straggler_slowdown);
  out += "GPU-hours lost per trial (mean)\n";
  for (const auto& [cause, h] : r.lost_gpu_hours)
    out += fmt::format("  {:<16}{:>12.0f}\n", cause, h);
  out += "interruptions per trial by cause (mean)\n";
  std::vector<std::pair<std::string, double>> causes(r.interruptions_by_cause.begin(),
                                                     r.interruptions_by_cause.end());
  std::sort(causes.begin(), causes.end(), [](auto& a, auto& b) { return a.second > b.second; });
  for (const auto& [cause, n] : causes) out += fmt::format("  {:<32}{:>8.1f}\n", cause, n);
  out += fmt::format("hot spares used per trial (mean) {:.1f}\n", r.spares_used);
  return out;
}

std::string campaign_json(const CampaignReport& r) {
  auto pct = [](const Percentiles& p) {
    return nlohmann::ordered_json{{"p10", p.p10}, {"p50", p.p50}, {"p90", p.p90}, {"mean", p.mean}};
  };
  nlohmann::ordered_json j;
  j["trials"] = r.trials;
  j["ettr"] = pct(r.ettr);
  j["time_to_train_days"] = pct(r.days);
  j["failure_free_days"] = r.healthy_days;
  j["interruptions_per_day"] = r.interruptions_per_day;
  j["job_mtbf_hours"] = r.job_mtbf_h;
  j["lost_gpu_hours_by_cause"] = r.lost_gpu_hours;
  j["interruptions_by_cause"] = r.interruptions_by_cause;
  j["spares_used"] = r.spares_used;
  j["checkpoint_interval_min"] = r.interval_s / 60;
  j["best_checkpoint_interval_min"] = r.best_interval_s / 60;
  j["young_daly_interval_min"] = r.young_daly_s / 60;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const auto& [interval, e] : r.interval_curve)
    curve.push_back({{"interval_min", interval / 60}, {"mean_ettr", e}});
  j["ettr_by_interval"] = curve;
  j["without_stragglers"] = {{"ettr", pct(r.ettr_without_stragglers)},
                             {"time_to_train_days", pct(r.days_without_stragglers)}};
  j["straggler_slowdown"] = r.straggler_slowdown;
  return j.dump(2) + "\n";
}

}  // namespace twin::sim
