#include "twin/campaign.hpp"
#include "twin/detail/campaign_hdf5.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <H5Cpp.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/error.hpp"
#include "core/parallel.hpp"
#include "core/rng.hpp"
#include "topology/fabric.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {
namespace {

constexpr double kDay = 86400.0;

struct NodeRates {
  std::vector<failures::Cause> causes;
  std::vector<double> per_node_day;  ///< each cause's rate for one (average) node
  double total_per_node_day = 0;
};

NodeRates node_rates(const CampaignInputs& in) {
  NodeRates r;
  if (in.failures.node_mtbf_hours > 0) {
    r.causes = {
        {"Node failure", "Hardware", failures::Exposure::node, 24.0 / in.failures.node_mtbf_hours}};
  } else {
    r.causes = failures::llama3_causes();
  }
  for (const auto& c : r.causes) {
    double units = 1;
    switch (c.exposure) {
      case failures::Exposure::gpu:
        units = in.gpus_per_node;
        break;
      case failures::Exposure::node:
        units = 1;
        break;
      case failures::Exposure::nic:
        units = in.nics_per_node;
        break;
      case failures::Exposure::cable:
        units = in.nics_per_node * in.tiers;
        break;
    }
    r.per_node_day.push_back(c.per_unit_day * units * in.failures.rate_multiplier);
    r.total_per_node_day += r.per_node_day.back();
  }
  return r;
}

double weibull_time(core::Rng& rng, double rate_per_s, double shape) {
  if (!(rate_per_s > 0)) return std::numeric_limits<double>::infinity();
  const double mean = 1.0 / rate_per_s;
  return rng.weibull(shape, mean / std::tgamma(1.0 + 1.0 / shape));
}

}  // namespace

double job_failure_rate(const CampaignInputs& in) {
  const auto& f = in.failures;
  double rate = node_rates(in).total_per_node_day * in.nodes / kDay;
  if (f.leaf_switch_mtbf_hours > 0) rate += in.leaves / (f.leaf_switch_mtbf_hours * 3600.0);
  if (f.power_domain_mtbf_hours > 0)
    rate += std::ceil(static_cast<double>(in.nodes) / f.power_domain_nodes) /
            (f.power_domain_mtbf_hours * 3600.0);
  return rate;
}

double checkpoint_pause_s(const CampaignInputs& in) {
  const auto& rec = in.recovery;
  if (rec.async_checkpoint) return in.checkpoint_bytes / std::max(1, in.gpus) / in.host_copy_Bps;
  return rec.storage_write_GBps > 0 ? in.checkpoint_bytes / (rec.storage_write_GBps * 1e9)
                                    : rec.checkpoint_write_s;
}

TrialResult run_trial(const CampaignInputs& in, double interval_s, std::uint64_t seed, int trial,
                      std::vector<CampaignEvent>* events, const core::CancelToken* cancel) {
  core::Rng rng = core::Rng(seed).split(static_cast<std::uint64_t>(trial));
  const NodeRates rates = node_rates(in);
  const auto& f = in.failures;
  const auto& rec = in.recovery;
  const double base = rates.total_per_node_day /
                      (1.0 - f.lemon_fraction + f.lemon_fraction * f.lemon_factor) / kDay;
  auto draw_rate = [&] { return rng.uniform() < f.lemon_fraction ? base * f.lemon_factor : base; };
  std::vector<double> node_rate(static_cast<std::size_t>(in.nodes)),
      next_failure(static_cast<std::size_t>(in.nodes));
  for (int n = 0; n < in.nodes; ++n) {
    node_rate[n] = draw_rate();
    next_failure[n] = weibull_time(rng, node_rate[n], f.weibull_shape);
  }
  const double gpus = in.gpus;
  TrialResult out;
  for (const char* k : {"recomputation", "restart", "checkpointing", "straggling"})
    out.lost_gpu_hours[k] = 0;
  double now = 0, progress = 0;
  auto log = [&](double t, const char* kind, const std::string& cause) {
    if (events) events->push_back({trial, t / 3600.0, kind, cause, progress / in.work_s});
  };
  double run_since_ckpt = 0;  // running time since the last checkpoint
  std::vector<std::pair<double, double>> checkpoints{{0.0, 0.0}};  // (wall time written, progress)
  int spares = rec.hot_spares;
  std::vector<double> repairs;  // times at which failed nodes come back
  double gc_since_sync = 0;     // hours since pauses were aligned
  double next_gc_sync = f.gc_sync_minutes > 0 ? f.gc_sync_minutes * 60.0 : 0.0;
  // Straggler episodes: job-level Poisson arrivals, fixed duration, overlapping allowed.
  const double straggler_rate =
      in.stragglers ? f.straggler_rate_per_node_day * in.nodes / kDay : 0.0;
  double next_straggler = straggler_rate > 0 ? rng.exponential(straggler_rate)
                                             : std::numeric_limits<double>::infinity();
  std::vector<double> straggler_ends;
  std::vector<double> pending_sdc;  // corruption times not yet detected
  const double sdc_delay = f.sdc_detection_hours * 3600.0;
  const double write_s = rec.storage_write_GBps > 0
                             ? in.checkpoint_bytes / (rec.storage_write_GBps * 1e9)
                             : rec.checkpoint_write_s;
  const double pause_s = checkpoint_pause_s(in);
  const double restart_s =
      rec.restart_min * 60.0 + rec.nccl_init_s_per_1k_gpus * gpus / 1000.0 +
      (rec.storage_read_GBps > 0 ? in.checkpoint_bytes / (rec.storage_read_GBps * 1e9) : 0.0);
  // Correlated outages: job-level Poisson processes.
  const double leaf_rate =
      f.leaf_switch_mtbf_hours > 0 ? in.leaves / (f.leaf_switch_mtbf_hours * 3600.0) : 0.0;
  const double power_rate = f.power_domain_mtbf_hours > 0
                                ? std::ceil(static_cast<double>(in.nodes) / f.power_domain_nodes) /
                                      (f.power_domain_mtbf_hours * 3600.0)
                                : 0.0;
  const double inf = std::numeric_limits<double>::infinity();
  double next_leaf = leaf_rate > 0 ? rng.exponential(leaf_rate) : inf;
  double next_power = power_rate > 0 ? rng.exponential(power_rate) : inf;
  int missing = 0;              // elastic mode: nodes the job runs without
  std::vector<double> returns;  // when missing nodes come back
  double pending_ckpt = inf;    // asynchronous write in flight: completes at this time
  double pending_progress = 0;
  const double interval = interval_s > 0 ? interval_s : std::numeric_limits<double>::infinity();
  const double gc_period = f.gc_period_s, gc_pause = f.gc_pause_ms / 1e3;
  const bool gc_on = in.stragglers && gc_pause > 0;

  auto slowdown = [&] {
    double s = straggler_ends.empty() ? 1.0 : in.straggler_slowdown;
    // Elastic: each missing node removes its replica's share of the work per step.
    if (missing > 0) s /= 1.0 - static_cast<double>(missing) / in.replicas;
    if (gc_on) {
      const double width =
          std::min(gc_period, 2.0 * f.gc_drift_s_per_hour * std::sqrt(gc_since_sync));
      const double pauses = std::min<double>(in.nodes, 1.0 + width / gc_pause);
      s *= 1.0 + gc_pause * pauses / gc_period;
    }
    return s;
  };

  // Takes `lost` nodes out of the job at `t`: spares replace them, or (elastic) the job runs
  // without them, or it waits for the first repair. Returns how long the job must wait.
  auto replace = [&](double t, int lost, double repair_s) {
    // The failed nodes go to repair and rejoin the spare pool when fixed.
    for (int i = 0; i < lost; ++i) repairs.push_back(t + repair_s);
    std::sort(repairs.begin(), repairs.end());
    while (!repairs.empty() && repairs.front() <= t) {
      ++spares;
      repairs.erase(repairs.begin());
    }
    double wait = 0;
    for (int i = 0; i < lost; ++i) {
      if (spares > 0) {
        --spares;
        ++out.spares_used;
      } else if (rec.elastic && missing + 1 < in.replicas) {
        ++missing;  // run without it; the first node out of repair rejoins
        returns.push_back(repairs.front());
        repairs.erase(repairs.begin());
      } else {
        wait = std::max(wait, repairs.front() - t);  // wait for the first node out of repair
        repairs.erase(repairs.begin());
      }
    }
    return wait;
  };

  // Stops the job at `t` for `cause`; `lost` nodes leave; resumes from `rollback` progress.
  auto interrupt = [&](double t, const std::string& cause, double rollback, int node, int lost,
                       double repair_s) {
    out.lost_gpu_hours["recomputation"] += (progress - rollback) * gpus / 3600.0;
    ++out.interruptions;
    ++out.by_cause[cause];
    const double wait = replace(t, lost, repair_s);
    const double down = rec.detection_min * 60.0 + std::max(wait, 0.0) + restart_s;
    if (node >= 0) {
      node_rate[node] = draw_rate();
      next_failure[node] = t + down + weibull_time(rng, node_rate[node], f.weibull_shape);
    }
    out.lost_gpu_hours["restart"] += down * gpus / 3600.0;
    // Failure clocks run under load: nodes idle while the job is down do not age (the causes in
    // the published table are load-driven: GPU faults, software, NCCL hangs). Otherwise a job with
    // no spares and long repairs would never restart: failures would pile up during each wait.
    for (std::size_t n = 0; n < next_failure.size(); ++n)
      if (static_cast<int>(n) != node) next_failure[n] += down;
    now = t + down;
    progress = rollback;
    run_since_ckpt = 0;
    gc_since_sync = 0;   // a relaunch starts every host's collector afresh
    pending_ckpt = inf;  // an unfinished asynchronous write is lost
    log(now, "restart", cause);
  };

  std::size_t failing = 0;
  bool failing_dirty = true;
  int guard = 0;
  while (progress < in.work_s) {
    if (++guard > 50'000'000)
      throw core::Error(
          "recovery", "",
          "the run never finishes: failures arrive faster than checkpoints can save work "
          "(shorten checkpoint_interval_min, speed up checkpoints or lower failure rates)");
    if (guard % 4096 == 0) core::check(cancel);
    const double s = slowdown();
    const double rate = 1.0 / s;
    if (failing_dirty) {  // the earliest node failure changes only when a node is replaced
      failing = 0;
      for (std::size_t n = 1; n < next_failure.size(); ++n)
        if (next_failure[n] < next_failure[failing]) failing = n;
      failing_dirty = false;
    }
    const double t_fail =
        next_failure.empty() ? std::numeric_limits<double>::infinity() : next_failure[failing];
    // A new checkpoint waits for an asynchronous write still in flight.
    const double t_ckpt =
        std::max(now + (interval - run_since_ckpt), pending_ckpt < inf ? pending_ckpt : 0.0);
    const double t_done = now + (in.work_s - progress) / rate;
    const double t_strag = std::min(
        next_straggler, straggler_ends.empty()
                            ? std::numeric_limits<double>::infinity()
                            : *std::min_element(straggler_ends.begin(), straggler_ends.end()));
    const double t_sdc = pending_sdc.empty() ? std::numeric_limits<double>::infinity()
                                             : pending_sdc.front() + sdc_delay;
    double t_gc =
        gc_on ? now + 900.0 : std::numeric_limits<double>::infinity();  // refresh the drift
    if (gc_on && f.gc_sync_minutes > 0) t_gc = std::min(t_gc, next_gc_sync);
    const double t_return =
        returns.empty() ? inf : *std::min_element(returns.begin(), returns.end());
    // Events that fell while the job was down take effect as it comes back.
    const double t = std::max(now, std::min({t_fail, t_ckpt, t_done, t_strag, t_sdc, t_gc,
                                             next_leaf, next_power, t_return, pending_ckpt}));
    const double dt = t - now;
    progress = std::min(in.work_s, progress + dt * rate);
    out.lost_gpu_hours["straggling"] += dt * (1.0 - rate) * gpus / 3600.0;
    run_since_ckpt += dt;
    if (gc_on) gc_since_sync += dt / 3600.0;
    now = t;
    if (gc_on && f.gc_sync_minutes > 0 && now >= next_gc_sync) {  // a synchronized collection
      gc_since_sync = 0;
      next_gc_sync = now + f.gc_sync_minutes * 60.0;
    }
    if (t == t_done || progress >= in.work_s) break;
    if (t >= pending_ckpt) {  // the background write finished: the checkpoint now counts
      checkpoints.emplace_back(pending_ckpt, pending_progress);
      ++out.checkpoints;
      pending_ckpt = inf;
      log(t, "checkpoint", "");
      continue;
    }
    if (t >= t_return) {  // elastic: a repaired node rejoins
      returns.erase(std::min_element(returns.begin(), returns.end()));
      --missing;
      continue;
    }
    if (t >= next_leaf || t >= next_power) {
      const bool leaf = next_leaf <= next_power;
      const int lost =
          leaf ? std::min(in.nodes, in.nodes_per_leaf) : std::min(in.nodes, f.power_domain_nodes);
      const std::string cause = leaf ? "Leaf switch (correlated)" : "Power domain (correlated)";
      log(t, "failure", cause);
      if (leaf)
        next_leaf = t + rng.exponential(leaf_rate);
      else
        next_power = t + rng.exponential(power_rate);
      // A dead leaf is replaced in switch_repair_hours; a power domain's nodes need node repair.
      interrupt(t, cause, checkpoints.back().second, -1, lost,
                (leaf ? f.switch_repair_hours : rec.repair_hours) * 3600.0);
      continue;
    }
    if (t >= t_fail) {
      // Which cause: in proportion to the causes' rates.
      double pick = rng.uniform() * rates.total_per_node_day, acc = 0;
      std::size_t c = 0;
      for (; c + 1 < rates.causes.size(); ++c) {
        acc += rates.per_node_day[c];
        if (pick < acc) break;
      }
      const auto& cause = rates.causes[c];
      log(t, "failure", cause.name);
      if (cause.silent) {
        pending_sdc.push_back(t);
        // The corrupting GPU is not noticed yet: its node keeps running and may fail again.
        next_failure[failing] = t + weibull_time(rng, node_rate[failing], f.weibull_shape);
        failing_dirty = true;
        continue;
      }
      interrupt(t, cause.name, checkpoints.back().second, static_cast<int>(failing), 1,
                rec.repair_hours * 3600.0);
      failing_dirty = true;
      continue;
    }
    if (t >= t_sdc) {
      const double corrupted_at = pending_sdc.front();
      pending_sdc.erase(pending_sdc.begin());
      // Roll back to the last checkpoint written before the corruption; later ones hold bad state.
      while (checkpoints.size() > 1 && checkpoints.back().first > corrupted_at)
        checkpoints.pop_back();
      log(t, "sdc_detected", "Silent Data Corruption");
      interrupt(t, "Silent Data Corruption", checkpoints.back().second, -1, 1,
                rec.repair_hours * 3600.0);
      continue;
    }
    if (t >= t_ckpt) {
      // A synchronous write (or, async, the snapshot copy); a failure during it voids it.
      const double write = pause_s;
      if (!next_failure.empty() && next_failure[failing] < now + write) {
        now = next_failure[failing];
        out.lost_gpu_hours["checkpointing"] += (now - t) * gpus / 3600.0;
        run_since_ckpt = 0;
        continue;  // the failure is handled on the next pass
      }
      now += write;
      out.lost_gpu_hours["checkpointing"] += write * gpus / 3600.0;
      run_since_ckpt = 0;
      if (rec.async_checkpoint) {
        pending_ckpt = now + std::max(0.0, write_s - write);
        pending_progress = progress;
      } else {
        checkpoints.emplace_back(now, progress);
        ++out.checkpoints;
        log(now, "checkpoint", "");
      }
      continue;
    }
    if (t >= t_strag) {
      if (next_straggler <= t) {
        straggler_ends.push_back(t + f.straggler_hours * 3600.0);
        next_straggler = t + rng.exponential(straggler_rate);
      } else {
        straggler_ends.erase(std::min_element(straggler_ends.begin(), straggler_ends.end()));
      }
    }
  }
  out.wall_s = now;
  out.ettr = in.work_s / now;
  log(now, "done", "");
  return out;
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
    try {
      writer = std::make_unique<detail::CampaignHdf5>(o.out_dir + "/campaign.h5");
    } catch (const H5::Exception& e) {
      throw core::Error("--out", o.out_dir, "cannot write campaign.h5: " + e.getDetailMsg());
    }
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
  const StepReport healthy = simulate_step(scenario, "native", false, options.cancel);
  Scenario slow = scenario;
  slow.slow_gpu = 0;
  slow.slow_factor = scenario.failures.straggler_factor;
  const StepReport straggling = simulate_step(slow, "native", false, options.cancel);
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
  in.host_copy_Bps = scenario.cluster.pcie_GBps * 1e9;
  in.replicas = scenario.parallelism.dp;
  const topology::Fabric fabric(scenario.cluster, scenario.fabric);
  apply_host_pool(fabric, in);
  in.leaves = fabric.geometry().leaves;
  in.nodes_per_leaf =
      scenario.fabric.rail_optimized
          ? fabric.geometry().leaf_down
          : std::max(1, fabric.geometry().leaf_down / scenario.cluster.nics_per_node);
  failures::validate(in.failures, in.recovery, in.nodes, in.work_s / kDay);
  CampaignReport rep = run_campaign(in, options);
  rep.step_time_s = healthy.step_time_s;
  return rep;
}

}  // namespace twin::sim
