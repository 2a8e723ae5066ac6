#pragma once
/// The processes of a campaign trial (see process.hpp for the interface, trial.hpp for the job).
///
/// Failure processes:
/// - NodeFailures: one clock per node, Weibull with the cause mix's total rate; lemons
///   (`lemon_fraction` of nodes at `lemon_factor` times the base rate, base = r / (1 - f + f k)
///   so the fleet average stays r) drawn per trial and again for every replacement node. The
///   cause is drawn in proportion to the causes' rates; a silent cause starts a corruption.
/// - CorrelatedOutages: Poisson leaf-switch failures (the NIC of every node under the leaf) and
///   power-domain failures (`power_domain_nodes` whole nodes).
/// - SilentCorruption: noticed `sdc_detection_hours` after it happened; rolls back to the last
///   checkpoint written before it.
/// - Stragglers: Poisson episodes of `straggler_hours`, overlapping allowed; while any is active
///   every step takes the step simulation's one-slow-GPU factor.
/// - GcDrift: unsynchronized GC pauses add pause x min(N, 1 + w / pause) per period,
///   w = min(period, 2 drift sqrt(hours since the last synchronization)).
/// - DegradedLinks: Poisson episodes of `degraded_link_hours` on a cable of a tier drawn in
///   proportion to the tiers' cable counts; the step time in that state comes from the step
///   simulation with that many cables of each tier degraded to `degraded_link_factor`.
/// Job processes: checkpoint writes (and the completion of an asynchronous one) and, in elastic
/// mode, repaired nodes rejoining.

#include <string>
#include <vector>

#include "core/rng.hpp"
#include "failure_models/failures.hpp"
#include "failure_models/process.hpp"
#include "failure_models/trial.hpp"

namespace twin::failures {

/// The node-level causes and their rates for one (average) node of this job.
struct NodeRates {
  std::vector<Cause> causes;
  std::vector<double> per_node_day;  ///< each cause's rate for one (average) node
  double total_per_node_day = 0;
};
NodeRates node_rates(const TrialInputs& in);

class SilentCorruption final : public Process {
 public:
  explicit SilentCorruption(const TrialInputs& in);
  /// A corruption happened at `t_s`.
  void corrupted(double t_s) { pending_.push_back(t_s); }
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;

 private:
  std::vector<double> pending_;  ///< corruption times not yet detected
  double delay_s_;
};

class NodeFailures final : public Process {
 public:
  NodeFailures(const TrialInputs& in, core::Rng& rng, SilentCorruption& sdc);
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;
  void restarted(double t_s, double down_s, int node) override;
  [[nodiscard]] double next_failure_s() const override;

 private:
  double draw_rate();
  double draw_time(double rate_per_s);
  [[nodiscard]] std::size_t failing() const;
  core::Rng& rng_;
  SilentCorruption& sdc_;
  NodeRates rates_;
  double base_per_s_, lemon_fraction_, lemon_factor_, shape_, repair_s_;
  std::vector<double> rate_, next_;  ///< per node
  mutable std::size_t failing_ = 0;  ///< the node failing next (valid unless dirty_)
  mutable bool dirty_ = true;
};

class CorrelatedOutages final : public Process {
 public:
  CorrelatedOutages(const TrialInputs& in, core::Rng& rng);
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;

 private:
  core::Rng& rng_;
  double leaf_rate_, power_rate_, next_leaf_, next_power_;
  int leaf_nodes_, power_nodes_;
  double leaf_repair_s_, power_repair_s_;
};

class Stragglers final : public Process {
 public:
  Stragglers(const TrialInputs& in, core::Rng& rng);
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;
  [[nodiscard]] double slow(const Job& job, double s) const override;

 private:
  core::Rng& rng_;
  double rate_, next_start_, duration_s_, slowdown_;
  std::vector<double> ends_;
};

class GcDrift final : public Process {
 public:
  explicit GcDrift(const TrialInputs& in);
  /// A wake-up every 15 minutes to refresh the drift, and the synchronized collections.
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& /*job*/) override {}
  void advance(const Job& job, double dt_s) override;
  [[nodiscard]] double slow(const Job& job, double s) const override;
  void restarted(double /*t_s*/, double /*down_s*/, int /*node*/) override {
    hours_since_sync_ = 0;  // a relaunch starts every host's collector afresh
  }

 private:
  bool on_;
  double period_s_, pause_s_, drift_s_per_hour_, sync_s_, next_sync_, hours_since_sync_ = 0;
  int nodes_;
};

class DegradedLinks final : public Process {
 public:
  DegradedLinks(const TrialInputs& in, core::Rng& rng);
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;
  [[nodiscard]] double slow(const Job& /*job*/, double s) const override { return s * factor_; }

 private:
  core::Rng& rng_;
  const TrialInputs& in_;
  double rate_, next_start_, duration_s_, factor_ = 1.0;
  std::vector<std::pair<double, int>> episodes_;  ///< (end, tier)
};

class Checkpoints final : public Process {
 public:
  Checkpoints(const TrialInputs& in, double interval_s);
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;
  void restarted(double /*t_s*/, double /*down_s*/, int /*node*/) override {
    pending_ = kNever;  // an unfinished asynchronous write is lost
  }

  /// The end of an asynchronous write: the checkpoint counts from then on.
  class Completion final : public Process {
   public:
    explicit Completion(Checkpoints& c) : c_(c) {}
    [[nodiscard]] double next_s(const Job& /*job*/) const override { return c_.pending_; }
    void fire(Job& job) override;

   private:
    Checkpoints& c_;
  };

 private:
  double interval_s_, pause_s_, write_s_;
  bool async_;
  double pending_ = kNever, pending_progress_ = 0;
};

/// Elastic mode: a node out of repair rejoins and its replica's share of the work returns.
class ElasticReturns final : public Process {
 public:
  [[nodiscard]] double next_s(const Job& job) const override;
  void fire(Job& job) override;
  [[nodiscard]] double slow(const Job& job, double s) const override;
};

}  // namespace twin::failures
