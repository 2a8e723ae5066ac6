// One campaign trial as a merge of processes (see trial.hpp and process.hpp).
#include "failure_models/trial.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "failure_models/processes.hpp"

namespace twin::failures {
namespace {
constexpr double kDay = 86400.0;
}

double job_failure_rate(const TrialInputs& in) {
  const auto& f = in.failures;
  double rate = node_rates(in).total_per_node_day * in.nodes / kDay;
  if (f.leaf_switch_mtbf_hours > 0) rate += in.leaves / (f.leaf_switch_mtbf_hours * 3600.0);
  if (f.power_domain_mtbf_hours > 0)
    rate += std::ceil(static_cast<double>(in.nodes) / f.power_domain_nodes) /
            (f.power_domain_mtbf_hours * 3600.0);
  return rate;
}

double checkpoint_write_s(const TrialInputs& in) {
  const auto& rec = in.recovery;
  return rec.storage_write_GBps > 0 ? in.checkpoint_bytes / (rec.storage_write_GBps * 1e9)
                                    : rec.checkpoint_write_s;
}

double checkpoint_pause_s(const TrialInputs& in) {
  if (in.recovery.async_checkpoint)
    return in.checkpoint_bytes / std::max(1, in.gpus) / in.host_copy_Bps;
  return checkpoint_write_s(in);
}

Job::Job(const TrialInputs& inputs, EventLog log)
    : in(inputs),
      gpus(inputs.gpus),
      restart_s(inputs.recovery.restart_min * 60.0 +
                inputs.recovery.nccl_init_s_per_1k_gpus * gpus / 1000.0 +
                (inputs.recovery.storage_read_GBps > 0
                     ? inputs.checkpoint_bytes / (inputs.recovery.storage_read_GBps * 1e9)
                     : 0.0)),
      spares(inputs.recovery.hot_spares),
      log_(std::move(log)) {
  for (const char* k : {"recomputation", "restart", "checkpointing", "straggling"})
    result.lost_gpu_hours[k] = 0;
}

void Job::log(double t_s, const char* kind, const std::string& cause) const {
  if (log_) log_(t_s, kind, cause, progress_s / in.work_s);
}

double Job::next_failure_s() const {
  double t = kNever;
  for (const Process* p : processes) t = std::min(t, p->next_failure_s());
  return t;
}

double Job::replace(double t_s, int lost, double repair_s) {
  // The failed nodes go to repair and rejoin the spare pool when fixed.
  for (int i = 0; i < lost; ++i) repairs.push_back(t_s + repair_s);
  std::sort(repairs.begin(), repairs.end());
  while (!repairs.empty() && repairs.front() <= t_s) {
    ++spares;
    repairs.erase(repairs.begin());
  }
  double wait = 0;
  for (int i = 0; i < lost; ++i) {
    if (spares > 0) {
      --spares;
      ++result.spares_used;
    } else if (in.recovery.elastic && missing + 1 < in.replicas) {
      ++missing;  // run without it; the first node out of repair rejoins
      returns.push_back(repairs.front());
      repairs.erase(repairs.begin());
    } else {
      wait = std::max(wait, repairs.front() - t_s);  // wait for the first node out of repair
      repairs.erase(repairs.begin());
    }
  }
  return wait;
}

void Job::interrupt(double t_s, const std::string& cause, double rollback, int node, int lost,
                    double repair_s) {
  result.lost_gpu_hours["recomputation"] += (progress_s - rollback) * gpus / 3600.0;
  ++result.interruptions;
  ++result.by_cause[cause];
  const double wait = replace(t_s, lost, repair_s);
  const double down = in.recovery.detection_min * 60.0 + std::max(wait, 0.0) + restart_s;
  for (Process* p : processes) p->restarted(t_s, down, node);
  result.lost_gpu_hours["restart"] += down * gpus / 3600.0;
  now_s = t_s + down;
  progress_s = rollback;
  run_since_checkpoint_s = 0;
  log(now_s, "restart", cause);
}

TrialResult simulate_trial(const TrialInputs& in, double interval_s, std::uint64_t seed, int trial,
                           const EventLog& log, const core::CancelToken* cancel) {
  core::Rng rng = core::Rng(seed).split(static_cast<std::uint64_t>(trial));
  Job job(in, log);
  // Built in the order of their first draws from the shared stream.
  SilentCorruption sdc(in);
  NodeFailures nodes(in, rng, sdc);
  Stragglers stragglers(in, rng);
  CorrelatedOutages outages(in, rng);
  DegradedLinks links(in, rng);
  GcDrift gc(in);
  Checkpoints checkpoints(in, interval_s);
  Checkpoints::Completion written(checkpoints);
  ElasticReturns returns;
  // Priority among events due at once (after a stop): finish what is in flight, then failures
  // by reach, then the job's own checkpoint, then the slow episodes. GC only wakes the loop.
  const std::array<Process*, 9> order = {&written,     &returns,    &outages, &nodes, &sdc,
                                         &checkpoints, &stragglers, &links,   &gc};
  // The step time multiplier is the product of the active slowdowns, in this order.
  const std::array<const Process*, 4> slowdowns = {&stragglers, &returns, &gc, &links};
  job.processes.assign(order.begin(), order.end());

  std::array<double, order.size()> next{};
  for (int guard = 1; job.progress_s < in.work_s; ++guard) {
    if (guard > 50'000'000)
      throw core::Error(
          "recovery", "",
          "the run never finishes: failures arrive faster than checkpoints can save work "
          "(shorten checkpoint_interval_min, speed up checkpoints or lower failure rates)");
    if (guard % 4096 == 0) core::check(cancel);
    double s = 1.0;
    for (const Process* p : slowdowns) s = p->slow(job, s);
    const double rate = 1.0 / s;
    const double t_done = job.now_s + (in.work_s - job.progress_s) / rate;
    double earliest = t_done;
    for (std::size_t i = 0; i < order.size(); ++i) {
      next[i] = order[i]->next_s(job);
      earliest = std::min(earliest, next[i]);
    }
    // Events that fell while the job was down take effect as it comes back.
    const double t = std::max(job.now_s, earliest);
    const double dt = t - job.now_s;
    job.progress_s = std::min(in.work_s, job.progress_s + dt * rate);
    job.result.lost_gpu_hours["straggling"] += dt * (1.0 - rate) * job.gpus / 3600.0;
    job.run_since_checkpoint_s += dt;
    job.now_s = t;
    for (Process* p : order) p->advance(job, dt);
    if (t == t_done || job.progress_s >= in.work_s) break;
    for (std::size_t i = 0; i < order.size(); ++i)
      if (next[i] <= t) {
        order[i]->fire(job);
        break;
      }
  }
  job.result.wall_s = job.now_s;
  job.result.ettr = in.work_s / job.now_s;
  job.log(job.now_s, "done", "");
  return job.result;
}

}  // namespace twin::failures
