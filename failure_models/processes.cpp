// The processes of a campaign trial (equations in processes.hpp).
#include "failure_models/processes.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace twin::failures {
namespace {

constexpr double kDay = 86400.0;

double min_of(const std::vector<double>& v) {
  return v.empty() ? kNever : *std::min_element(v.begin(), v.end());
}

}  // namespace

NodeRates node_rates(const TrialInputs& in) {
  NodeRates r;
  if (in.failures.node_mtbf_hours > 0) {
    r.causes = {{"Node failure", "Hardware", Exposure::node, 24.0 / in.failures.node_mtbf_hours}};
  } else {
    r.causes = llama3_causes();
  }
  for (const auto& c : r.causes) {
    double units = 1;
    switch (c.exposure) {
      case Exposure::gpu:
        units = in.gpus_per_node;
        break;
      case Exposure::node:
        units = 1;
        break;
      case Exposure::nic:
        units = in.nics_per_node;
        break;
      case Exposure::cable:
        units = in.nics_per_node * in.tiers;
        break;
    }
    r.per_node_day.push_back(c.per_unit_day * units * in.failures.rate_multiplier);
    r.total_per_node_day += r.per_node_day.back();
  }
  return r;
}

// --- silent data corruption -------------------------------------------------------------------

SilentCorruption::SilentCorruption(const TrialInputs& in)
    : delay_s_(in.failures.sdc_detection_hours * 3600.0) {}

double SilentCorruption::next_s(const Job& /*job*/) const {
  return pending_.empty() ? kNever : pending_.front() + delay_s_;
}

void SilentCorruption::fire(Job& job) {
  const double corrupted_at = pending_.front();
  pending_.erase(pending_.begin());
  // Roll back to the last checkpoint written before the corruption; later ones hold bad state.
  while (job.checkpoints.size() > 1 && job.checkpoints.back().first > corrupted_at)
    job.checkpoints.pop_back();
  job.log(job.now_s, "sdc_detected", "Silent Data Corruption");
  job.interrupt(job.now_s, "Silent Data Corruption", job.saved_progress(), -1, 1,
                job.in.recovery.repair_hours * 3600.0);
}

// --- node and component failures --------------------------------------------------------------

NodeFailures::NodeFailures(const TrialInputs& in, core::Rng& rng, SilentCorruption& sdc)
    : rng_(rng),
      sdc_(sdc),
      rates_(node_rates(in)),
      base_per_s_(rates_.total_per_node_day /
                  (1.0 - in.failures.lemon_fraction +
                   in.failures.lemon_fraction * in.failures.lemon_factor) /
                  kDay),
      lemon_fraction_(in.failures.lemon_fraction),
      lemon_factor_(in.failures.lemon_factor),
      shape_(in.failures.weibull_shape),
      repair_s_(in.recovery.repair_hours * 3600.0),
      rate_(static_cast<std::size_t>(in.nodes)),
      next_(static_cast<std::size_t>(in.nodes)) {
  for (std::size_t n = 0; n < rate_.size(); ++n) {
    rate_[n] = draw_rate();
    next_[n] = draw_time(rate_[n]);
  }
}

double NodeFailures::draw_rate() {
  return rng_.uniform() < lemon_fraction_ ? base_per_s_ * lemon_factor_ : base_per_s_;
}

double NodeFailures::draw_time(double rate_per_s) {
  if (!(rate_per_s > 0)) return kNever;
  const double mean = 1.0 / rate_per_s;  // Weibull with this mean
  return rng_.weibull(shape_, mean / std::tgamma(1.0 + 1.0 / shape_));
}

std::size_t NodeFailures::failing() const {
  if (dirty_) {  // the earliest failure changes only when a node fails or is replaced
    failing_ = 0;
    for (std::size_t n = 1; n < next_.size(); ++n)
      if (next_[n] < next_[failing_]) failing_ = n;
    dirty_ = false;
  }
  return failing_;
}

double NodeFailures::next_s(const Job& /*job*/) const {
  return next_failure_s();
}

double NodeFailures::next_failure_s() const {
  return next_.empty() ? kNever : next_[failing()];
}

void NodeFailures::fire(Job& job) {
  const double t = job.now_s;
  const std::size_t node = failing();
  // Which cause: in proportion to the causes' rates.
  const double pick = rng_.uniform() * rates_.total_per_node_day;
  double acc = 0;
  std::size_t c = 0;
  for (; c + 1 < rates_.causes.size(); ++c) {
    acc += rates_.per_node_day[c];
    if (pick < acc) break;
  }
  const Cause& cause = rates_.causes[c];
  job.log(t, "failure", cause.name);
  dirty_ = true;
  if (cause.silent) {
    sdc_.corrupted(t);
    // The corrupting GPU is not noticed yet: its node keeps running and may fail again.
    next_[node] = t + draw_time(rate_[node]);
    return;
  }
  job.interrupt(t, cause.name, job.saved_progress(), static_cast<int>(node), 1, repair_s_);
}

void NodeFailures::restarted(double t_s, double down_s, int node) {
  if (node >= 0) {  // a replacement node, with its own draw of lemon or not
    const auto n = static_cast<std::size_t>(node);
    rate_[n] = draw_rate();
    next_[n] = t_s + down_s + draw_time(rate_[n]);
  }
  // Failure clocks run under load: nodes idle while the job is down do not age. Otherwise a job
  // with no spares and long repairs would never restart: failures would pile up during each wait.
  for (std::size_t n = 0; n < next_.size(); ++n)
    if (static_cast<int>(n) != node) next_[n] += down_s;
}

// --- correlated outages -----------------------------------------------------------------------

CorrelatedOutages::CorrelatedOutages(const TrialInputs& in, core::Rng& rng)
    : rng_(rng),
      leaf_rate_(in.failures.leaf_switch_mtbf_hours > 0
                     ? in.leaves / (in.failures.leaf_switch_mtbf_hours * 3600.0)
                     : 0.0),
      power_rate_(in.failures.power_domain_mtbf_hours > 0
                      ? std::ceil(static_cast<double>(in.nodes) / in.failures.power_domain_nodes) /
                            (in.failures.power_domain_mtbf_hours * 3600.0)
                      : 0.0),
      next_leaf_(leaf_rate_ > 0 ? rng.exponential(leaf_rate_) : kNever),
      next_power_(power_rate_ > 0 ? rng.exponential(power_rate_) : kNever),
      leaf_nodes_(std::min(in.nodes, in.nodes_per_leaf)),
      power_nodes_(std::min(in.nodes, in.failures.power_domain_nodes)),
      // A dead leaf is replaced in switch_repair_hours; a power domain's nodes need node repair.
      leaf_repair_s_(in.failures.switch_repair_hours * 3600.0),
      power_repair_s_(in.recovery.repair_hours * 3600.0) {}

double CorrelatedOutages::next_s(const Job& /*job*/) const {
  return std::min(next_leaf_, next_power_);
}

void CorrelatedOutages::fire(Job& job) {
  const double t = job.now_s;
  const bool leaf = next_leaf_ <= next_power_;
  const std::string cause = leaf ? "Leaf switch (correlated)" : "Power domain (correlated)";
  job.log(t, "failure", cause);
  if (leaf)
    next_leaf_ = t + rng_.exponential(leaf_rate_);
  else
    next_power_ = t + rng_.exponential(power_rate_);
  job.interrupt(t, cause, job.saved_progress(), -1, leaf ? leaf_nodes_ : power_nodes_,
                leaf ? leaf_repair_s_ : power_repair_s_);
}

// --- stragglers -------------------------------------------------------------------------------

Stragglers::Stragglers(const TrialInputs& in, core::Rng& rng)
    : rng_(rng),
      rate_(in.stragglers ? in.failures.straggler_rate_per_node_day * in.nodes / kDay : 0.0),
      next_start_(rate_ > 0 ? rng.exponential(rate_) : kNever),
      duration_s_(in.failures.straggler_hours * 3600.0),
      slowdown_(in.straggler_slowdown) {}

double Stragglers::next_s(const Job& /*job*/) const {
  return std::min(next_start_, min_of(ends_));
}

void Stragglers::fire(Job& job) {
  if (next_start_ <= job.now_s) {
    ends_.push_back(job.now_s + duration_s_);
    next_start_ = job.now_s + rng_.exponential(rate_);
  } else {
    ends_.erase(std::min_element(ends_.begin(), ends_.end()));
  }
}

double Stragglers::slow(const Job& /*job*/, double s) const {
  return ends_.empty() ? s : s * slowdown_;
}

// --- GC drift ---------------------------------------------------------------------------------

GcDrift::GcDrift(const TrialInputs& in)
    : on_(in.stragglers && in.failures.gc_pause_ms > 0),
      period_s_(in.failures.gc_period_s),
      pause_s_(in.failures.gc_pause_ms / 1e3),
      drift_s_per_hour_(in.failures.gc_drift_s_per_hour),
      sync_s_(in.failures.gc_sync_minutes * 60.0),
      next_sync_(in.failures.gc_sync_minutes > 0 ? in.failures.gc_sync_minutes * 60.0 : 0.0),
      nodes_(in.nodes) {}

double GcDrift::next_s(const Job& job) const {
  if (!on_) return kNever;
  const double refresh = job.now_s + 900.0;  // the drift widens continuously: sample it
  return sync_s_ > 0 ? std::min(refresh, next_sync_) : refresh;
}

void GcDrift::advance(const Job& job, double dt_s) {
  if (!on_) return;
  hours_since_sync_ += dt_s / 3600.0;
  if (sync_s_ > 0 && job.now_s >= next_sync_) {  // a synchronized collection
    hours_since_sync_ = 0;
    next_sync_ = job.now_s + sync_s_;
  }
}

double GcDrift::slow(const Job& /*job*/, double s) const {
  if (!on_) return s;
  const double width = std::min(period_s_, 2.0 * drift_s_per_hour_ * std::sqrt(hours_since_sync_));
  const double pauses = std::min<double>(nodes_, 1.0 + width / pause_s_);
  return s * (1.0 + pause_s_ * pauses / period_s_);
}

// --- degraded links ---------------------------------------------------------------------------

DegradedLinks::DegradedLinks(const TrialInputs& in, core::Rng& rng)
    : rng_(rng),
      in_(in),
      rate_([&] {
        double cables = 0;
        for (int n : in.cables_per_tier) cables += n;
        return in.failures.degraded_link_rate_per_cable_day * cables / kDay;
      }()),
      next_start_(rate_ > 0 ? rng.exponential(rate_) : kNever),
      duration_s_(in.failures.degraded_link_hours * 3600.0) {
  if (rate_ > 0 && !in.degraded_slowdown)
    throw std::logic_error("degraded-link episodes need the step simulation's slowdown");
}

double DegradedLinks::next_s(const Job& /*job*/) const {
  double end = kNever;
  for (const auto& e : episodes_) end = std::min(end, e.first);
  return std::min(next_start_, end);
}

void DegradedLinks::fire(Job& job) {
  if (next_start_ <= job.now_s) {
    // The cable's tier, in proportion to the tiers' cable counts.
    double total = 0;
    for (int n : in_.cables_per_tier) total += n;
    const double pick = rng_.uniform() * total;
    double acc = 0;
    int tier = 0;
    for (; tier + 1 < static_cast<int>(in_.cables_per_tier.size()); ++tier) {
      acc += in_.cables_per_tier[static_cast<std::size_t>(tier)];
      if (pick < acc) break;
    }
    episodes_.emplace_back(job.now_s + duration_s_, tier);
    next_start_ = job.now_s + rng_.exponential(rate_);
  } else {
    episodes_.erase(std::min_element(episodes_.begin(), episodes_.end()));
  }
  // The state's signature: how many cables of each tier are degraded.
  std::vector<int> degraded(in_.cables_per_tier.size(), 0);
  for (const auto& e : episodes_) ++degraded[static_cast<std::size_t>(e.second)];
  factor_ = episodes_.empty() ? 1.0 : in_.degraded_slowdown(degraded);
}

// --- checkpoints ------------------------------------------------------------------------------

Checkpoints::Checkpoints(const TrialInputs& in, double interval_s)
    : interval_s_(interval_s > 0 ? interval_s : kNever),
      pause_s_(checkpoint_pause_s(in)),
      write_s_(checkpoint_write_s(in)),
      async_(in.recovery.async_checkpoint) {}

double Checkpoints::next_s(const Job& job) const {
  // A new checkpoint waits for an asynchronous write still in flight.
  return std::max(job.now_s + (interval_s_ - job.run_since_checkpoint_s),
                  pending_ < kNever ? pending_ : 0.0);
}

void Checkpoints::fire(Job& job) {
  // A synchronous write (or, async, the snapshot copy); a failure during it voids it.
  const double t = job.now_s;
  const double failure = job.next_failure_s();
  auto& lost = job.result.lost_gpu_hours["checkpointing"];
  job.run_since_checkpoint_s = 0;
  if (failure < t + pause_s_) {
    job.now_s = failure;  // the failure fires on the next pass
    lost += (job.now_s - t) * job.gpus / 3600.0;
    return;
  }
  job.now_s += pause_s_;
  lost += pause_s_ * job.gpus / 3600.0;
  if (async_) {
    pending_ = job.now_s + std::max(0.0, write_s_ - pause_s_);
    pending_progress_ = job.progress_s;
  } else {
    job.checkpoints.emplace_back(job.now_s, job.progress_s);
    ++job.result.checkpoints;
    job.log(job.now_s, "checkpoint", "");
  }
}

void Checkpoints::Completion::fire(Job& job) {
  job.checkpoints.emplace_back(c_.pending_, c_.pending_progress_);
  ++job.result.checkpoints;
  c_.pending_ = kNever;
  job.log(job.now_s, "checkpoint", "");
}

// --- elastic returns --------------------------------------------------------------------------

double ElasticReturns::next_s(const Job& job) const {
  return min_of(job.returns);
}

void ElasticReturns::fire(Job& job) {
  job.returns.erase(std::min_element(job.returns.begin(), job.returns.end()));
  --job.missing;
}

double ElasticReturns::slow(const Job& job, double s) const {
  // Each missing node removes its replica's share of the work per step.
  return job.missing > 0 ? s / (1.0 - static_cast<double>(job.missing) / job.in.replicas) : s;
}

}  // namespace twin::failures
