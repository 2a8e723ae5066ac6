#include "twin/campaign.hpp"
#include "twin/detail/campaign_hdf5.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/units.hpp"
#include "topology/fabric.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {
namespace {

constexpr double kDay = 86400.0;

}  // namespace

TrialResult run_trial(const CampaignInputs& in, double interval_s, std::uint64_t seed, int trial,
                      std::vector<CampaignEvent>* events, const core::CancelToken* cancel) {
  failures::EventLog log;
  if (events != nullptr)
    log = [events, trial](double t_s, const char* kind, const std::string& cause, double progress) {
      events->push_back({trial, t_s / 3600.0, kind, cause, progress});
    };
  return failures::simulate_trial(in, interval_s, seed, trial, log, cancel);
}

StepReport step_on(const StepFunction& step, const Cluster& cluster,
                   const core::CancelToken* cancel) {
  return step ? step(cluster) : simulate_step(cluster, "native", false, cancel);
}

std::function<double(const std::vector<int>&)> degraded_link_slowdown(const Cluster& cluster,
                                                                      double healthy_step_s,
                                                                      StepFunction step) {
  struct Cache {
    Cluster cluster;
    double healthy_step_s;
    StepFunction step;
    std::vector<std::vector<int>> cables;  ///< per tier, in fabric order
    std::mutex mutex;
    std::map<std::vector<int>, double> slowdown;
  };
  const auto cache =
      std::shared_ptr<Cache>(new Cache{cluster, healthy_step_s, std::move(step), {}, {}, {}});
  const topology::Fabric& fabric = cluster.fabric();
  cache->cables.resize(3);
  for (std::size_t c = 0; c < fabric.cable_count(); ++c)
    if (const int tier = topology::cable_tier(fabric.cable(topology::CableId::from_index(c)).kind);
        tier >= 0)
      cache->cables[static_cast<std::size_t>(tier)].push_back(static_cast<int>(c));
  return [cache](const std::vector<int>& n) {
    {
      std::lock_guard<std::mutex> lock(cache->mutex);
      const auto it = cache->slowdown.find(n);
      if (it != cache->slowdown.end()) return it->second;
    }
    // Simulated outside the lock: two threads may compute the same state, with the same result.
    Scenario degraded = cache->cluster.scenario();
    for (std::size_t tier = 0; tier < n.size() && tier < cache->cables.size(); ++tier)
      for (int i = 0; i < n[tier] && i < static_cast<int>(cache->cables[tier].size()); ++i)
        degraded.degraded_cables.emplace_back(cache->cables[tier][static_cast<std::size_t>(i)],
                                              degraded.failures.degraded_link_factor);
    const double s = step_on(cache->step, cache->cluster.with(std::move(degraded))).step_time_s /
                     cache->healthy_step_s;
    std::lock_guard<std::mutex> lock(cache->mutex);
    return cache->slowdown.emplace(n, s).first->second;
  };
}

Percentiles percentiles(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    const double x = q * static_cast<double>(v.size() - 1);
    const auto i = static_cast<std::size_t>(x);
    const double frac = x - static_cast<double>(i);
    return i + 1 < v.size() ? v[i] * (1 - frac) + v[i + 1] * frac : v[i];
  };
  p.p10 = at(0.1);
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  for (double x : v) p.mean += x;
  p.mean /= static_cast<double>(v.size());
  return p;
}

namespace {

/// Runs trials [0, n) on threads; `done(i, result, events)` is called in trial order.
void run_trials(
    const CampaignInputs& in, double interval, std::uint64_t seed, int n, int threads,
    const std::function<void(int, const TrialResult&, const std::vector<CampaignEvent>&)>& done,
    bool record_events, bool progress, const core::CancelToken* cancel) {
  struct Trial {
    TrialResult result;
    std::vector<CampaignEvent> events;
  };
  core::ordered_parallel(
      n, threads,
      [&](int i) {
        core::check(cancel);
        Trial t;
        t.result = run_trial(in, interval, seed, i, record_events ? &t.events : nullptr, cancel);
        return t;
      },
      [&](int i, const Trial& t) { done(i, t.result, t.events); }, progress ? "trials" : nullptr);
}

}  // namespace

CampaignReport run_campaign(const CampaignInputs& in, const CampaignOptions& o) {
  if (o.trials < 1) throw core::Error("--trials", std::to_string(o.trials), "must be at least 1");
  CampaignReport rep;
  rep.trials = o.trials;
  rep.checkpoint_s = checkpoint_pause_s(in);
  const double rate = job_failure_rate(in);
  rep.job_mtbf_h = rate > 0 ? 1.0 / rate / 3600.0 : std::numeric_limits<double>::infinity();
  rep.young_daly_s = rate > 0 ? failures::young_daly_interval_s(rep.checkpoint_s, 1.0 / rate) : 0.0;
  rep.interval_s = in.recovery.checkpoint_interval_min > 0
                       ? in.recovery.checkpoint_interval_min * 60.0
                       : rep.young_daly_s;
  if (!(rep.interval_s > 0) && rate > 0)
    throw core::Error("recovery.checkpoint_interval_min", "young_daly",
                      "the checkpoint pause is 0, so Young/Daly's interval is 0: give an interval");
  rep.healthy_days = in.work_s / kDay;
  rep.straggler_slowdown = in.straggler_slowdown;
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());

  std::unique_ptr<detail::CampaignHdf5> writer;
  if (!o.out_dir.empty()) {
    std::filesystem::create_directories(o.out_dir);
    writer = std::make_unique<detail::CampaignHdf5>(o.out_dir);
  }
  std::vector<double> ettr, days;
  double interruptions = 0, wall = 0;
  try {
    run_trials(
        in, rep.interval_s, o.seed, o.trials, threads,
        [&](int i, const TrialResult& r, const std::vector<CampaignEvent>& events) {
          ettr.push_back(r.ettr);
          days.push_back(r.wall_s / kDay);
          interruptions += r.interruptions;
          wall += r.wall_s;
          for (const auto& [cause, n] : r.by_cause) rep.interruptions_by_cause[cause] += n;
          for (const auto& [cause, h] : r.lost_gpu_hours) rep.lost_gpu_hours[cause] += h;
          rep.spares_used += r.spares_used;
          if (writer) writer->trial(i, r, events);
        },
        writer != nullptr, o.progress, o.cancel);
  } catch (const core::Cancelled&) {
    throw core::Cancelled(fmt::format("{} of {} trials finished{}", ettr.size(), o.trials,
                                      writer ? " (in " + o.out_dir + "/campaign.h5)" : ""));
  }
  rep.ettr = percentiles(ettr);
  rep.days = percentiles(days);
  rep.trial_days = days;
  const std::string written = writer ? " (in " + o.out_dir + "/campaign.h5)" : "";
  writer.reset();  // every trial is on disk: close the file before the what-if runs
  try {
    run_trial(in, rep.interval_s, o.seed, 0, &rep.sample_events, o.cancel);
    rep.interruptions_per_day = interruptions / (wall / kDay);
    for (auto& [k, v] : rep.interruptions_by_cause) v /= o.trials;
    for (auto& [k, v] : rep.lost_gpu_hours) v /= o.trials;
    rep.spares_used /= o.trials;

    // The checkpoint interval that maximizes mean ETTR, on the same seeds (common random numbers).
    if (rep.young_daly_s > 0) {
      const int grid_trials = std::min(o.trials, 64);
      double best = -1;
      for (double factor : {0.25, 0.35, 0.5, 0.7, 1.0, 1.4, 2.0, 2.8, 4.0}) {
        const double interval = rep.young_daly_s * factor;
        if (interval > in.work_s) continue;
        double sum = 0, sum_sq = 0;
        run_trials(
            in, interval, o.seed, grid_trials, threads,
            [&](int, const TrialResult& r, const std::vector<CampaignEvent>&) {
              sum += r.ettr;
              sum_sq += r.ettr * r.ettr;
            },
            false, false, o.cancel);
        const double mean = sum / grid_trials;
        const double var =
            grid_trials > 1
                ? std::max(0.0, (sum_sq - grid_trials * mean * mean) / (grid_trials - 1))
                : 0.0;
        rep.interval_curve.emplace_back(interval, mean);
        rep.interval_curve_sem.push_back(std::sqrt(var / grid_trials));
        if (mean > best) {
          best = mean;
          rep.best_interval_s = interval;
        }
      }
    }
    // What if there were no stragglers (and no GC drift)?
    CampaignInputs clean = in;
    clean.stragglers = false;
    std::vector<double> ettr_clean, days_clean;
    run_trials(
        clean, rep.interval_s, o.seed, o.trials, threads,
        [&](int, const TrialResult& r, const std::vector<CampaignEvent>&) {
          ettr_clean.push_back(r.ettr);
          days_clean.push_back(r.wall_s / kDay);
        },
        false, false, o.cancel);
    rep.ettr_without_stragglers = percentiles(ettr_clean);
    rep.days_without_stragglers = percentiles(days_clean);
  } catch (const core::Cancelled&) {
    throw core::Cancelled(
        fmt::format("all {} trials finished{}; the interval sweep and the what-if were cut short",
                    o.trials, written));
  }
  return rep;
}

namespace {

/// An imported fabric or one with scheduler node states: the job holds only its own hosts, and
/// the spare pool is what is left usable (drained, down and adapter-less hosts start out of it).
void apply_host_pool(const topology::Fabric& fabric, CampaignInputs& in) {
  if (!fabric.is_explicit() && fabric.usable_host_count() == fabric.cluster().nodes) return;
  in.gpus_per_node = fabric.cluster().gpus_per_node;
  in.nics_per_node = fabric.cluster().nics_per_node;
  in.tiers = fabric.geometry().tiers;
  in.nodes = (in.gpus + in.gpus_per_node - 1) / in.gpus_per_node;
  in.recovery.hot_spares =
      std::max(0, std::min(in.recovery.hot_spares, fabric.usable_host_count() - in.nodes));
}

}  // namespace

CampaignReport run_campaign(const Scenario& scenario, const CampaignOptions& options) {
  require_job(scenario);
  return run_campaign(Cluster(scenario), options);
}

CampaignReport run_campaign(const Cluster& cluster, const CampaignOptions& options,
                            const StepReport* healthy_step) {
  const Scenario& scenario = cluster.scenario();
  const StepReport healthy =
      healthy_step ? *healthy_step : step_on(options.step, cluster, options.cancel);
  Scenario slow = scenario;
  slow.slow_gpu = 0;
  slow.slow_factor = scenario.failures.straggler_factor;
  const StepReport straggling =
      step_on(options.step, cluster.with(std::move(slow)), options.cancel);
  CampaignInputs in;
  in.gpus = healthy.gpus;
  in.gpus_per_node = scenario.cluster.gpus_per_node;
  in.nics_per_node = scenario.cluster.nics_per_node;
  in.nodes = scenario.cluster.nodes;
  in.tiers = scenario.fabric.tiers;
  in.work_s = scenario.training.tokens / healthy.tokens_per_step * healthy.step_time_s;
  in.straggler_slowdown = straggling.step_time_s / healthy.step_time_s;
  in.failures = scenario.failures;
  in.recovery = scenario.recovery;
  in.checkpoint_bytes = 14.0 * scenario.model.total_params();
  in.host_copy_Bps = core::GBps_to_Bps(scenario.cluster.pcie_GBps);
  in.replicas = scenario.parallelism.dp;
  const topology::Fabric& fabric = cluster.fabric();
  apply_host_pool(fabric, in);
  in.leaves = fabric.geometry().leaves;
  in.nodes_per_leaf =
      scenario.fabric.rail_optimized
          ? fabric.geometry().leaf_down
          : std::max(1, fabric.geometry().leaf_down / scenario.cluster.nics_per_node);
  in.cables_per_tier.assign(3, 0);
  for (const auto& cable : fabric.cables())
    if (const int tier = topology::cable_tier(cable.kind); tier >= 0)
      ++in.cables_per_tier[static_cast<std::size_t>(tier)];
  if (in.failures.degraded_link_rate_per_cable_day > 0)
    in.degraded_slowdown = degraded_link_slowdown(cluster, healthy.step_time_s, options.step);
  failures::validate(in.failures, in.recovery, in.nodes, in.work_s / kDay);
  CampaignReport rep = run_campaign(in, options);
  rep.step_time_s = healthy.step_time_s;
  return rep;
}

}  // namespace twin::sim
