#pragma once
/// Failure, straggler and recovery models for a training campaign.
///
/// Default rates come from the published 54-day, 16,384-GPU (2,048-node) Llama 3 pre-training
/// run (data/reliability/llama3-54day-interruptions.csv): each cause's rate per component-day is
///   count / (components exposed x 54 days),
/// with the exposure chosen by where the cause lives: per GPU (16,384) for GPU faults, HBM, SRAM,
/// GPU system processor, thermal and silent data corruption; per node (2,048) for host parts,
/// maintenance, software and NCCL hangs; per NIC (16,384) for NICs; per fabric cable (3 x 16,384
/// in a non-blocking 3-tier tree) for switch/cable faults. E.g. faulty GPU: 148 / (16,384 x 54)
/// = 1.67e-4 per GPU-day, so a 4,096-GPU job sees 0.69 such failures a day.
///
/// Heterogeneity: a fraction of "lemon" nodes fails `lemon_factor` times as often; the base rate
/// is scaled so the fleet average stays the published one: base = r / (1 - f + f k).
/// Time to failure per component class is exponential, or Weibull with `weibull_shape` < 1
/// (infant mortality: a decreasing hazard after bring-up) with the same mean.

#include <string>
#include <vector>

#include "core/rng.hpp"

namespace twin::failures {

enum class Exposure { gpu, node, nic, cable };

struct Cause {
  std::string name;
  std::string category;  ///< GPU, Host, Network, Dependency, ...
  Exposure exposure;
  double per_unit_day;  ///< failures per component per day (fleet average)
  bool silent = false;  ///< silent data corruption: detected late, rolls back further
};

/// The causes and rates derived from the Llama 3 table (see above).
std::vector<Cause> llama3_causes();

struct FailureSpec {
  double rate_multiplier = 1.0;
  /// If > 0, replaces the derived hardware rates with one node-level process of this MTBF.
  double node_mtbf_hours = 0;
  double lemon_fraction = 0.02;
  double lemon_factor = 10.0;
  double weibull_shape = 1.0;
  // Straggler episodes (a GPU slowed by correctable-ECC handling or thermal throttling).
  // Assumption: no published rate; one node in 200 starts an episode each day.
  double straggler_rate_per_node_day = 0.005;
  double straggler_hours = 2.0;
  double straggler_factor = 1.3;
  // Unsynchronized garbage collection: each host pauses `gc_pause_ms` every `gc_period_s`; the
  // phases drift apart by `gc_drift_s_per_hour` (seconds of phase per hour, per host, random
  // walk); a synchronized collection every `gc_sync_minutes` (0: never) re-aligns them.
  double gc_pause_ms = 0;
  double gc_period_s = 60;
  double gc_drift_s_per_hour = 2.0;
  double gc_sync_minutes = 0;
  double sdc_detection_hours = 6.0;
  // Correlated failures (no published rates: off by default). A leaf switch takes down the NIC
  // of every node under it; a power domain takes down `power_domain_nodes` whole nodes.
  double leaf_switch_mtbf_hours = 0;
  double power_domain_mtbf_hours = 0;
  int power_domain_nodes = 4;
  double switch_repair_hours = 4;
  // Degraded-link episodes: a fabric cable runs at `degraded_link_factor` of its bandwidth for
  // `degraded_link_hours` (an InfiniBand port that retrains to fewer lanes or a lower speed after
  // symbol errors; 0.5 is NDR falling back to HDR speed) until maintenance reseats or swaps it.
  // No published rate: off by default.
  double degraded_link_rate_per_cable_day = 0;
  double degraded_link_hours = 4;
  double degraded_link_factor = 0.5;
  bool operator==(const FailureSpec&) const = default;
};

struct RecoverySpec {
  double checkpoint_interval_min = 0;  ///< 0: Young/Daly
  /// Synchronous write time; with `storage_write_GBps` > 0 it is derived instead from the
  /// checkpoint size (weights 2 + fp32 master 4 + Adam 8 = 14 bytes per parameter).
  double checkpoint_write_s = 60;
  double storage_write_GBps = 0;
  /// Checkpoint load on restart (0: included in restart_min).
  double storage_read_GBps = 0;
  /// Asynchronous checkpoints: the job pauses only to copy its shard to host memory over PCIe;
  /// the checkpoint counts once the background write has finished.
  bool async_checkpoint = false;
  double restart_min = 10;
  /// NCCL communicator set-up grows with scale (MegaScale: under 30 s at 10,000+ GPUs after
  /// optimization) — seconds per 1,000 GPUs added to every restart.
  double nccl_init_s_per_1k_gpus = 3.0;
  double detection_min = 5;
  int hot_spares = 16;
  double repair_hours = 48;
  /// Without a spare, continue with fewer data-parallel replicas instead of waiting for repair.
  bool elastic = false;
  bool operator==(const RecoverySpec&) const = default;
};

/// Throws core::Error naming failures.* or recovery.* fields: out-of-range values, a checkpoint
/// longer than the run, and rates under which no progress is possible (check_progress).
void validate(const FailureSpec& f, const RecoverySpec& r, int nodes, double run_days);

/// Failures per second of a job of `nodes` nodes from the node-level causes alone (or the
/// `node_mtbf_hours` process): a lower bound of the job's rate, known without the fabric.
double node_failure_rate_lower_bound(const FailureSpec& f, int nodes);

/// Best fraction of wall time spent on new work over all checkpoint intervals, from Daly's
/// first-order model for exponential failures (J. T. Daly, "A higher order estimate of the
/// optimum checkpoint interval for restart dumps", FGCS 22, 2006):
///   wall / work = (M / tau) e^{R/M} (e^{(tau + C)/M} - 1),
/// M the job MTBF, C the checkpoint pause, R the restart time, tau the interval.
double best_efficiency(double rate_per_s, double checkpoint_s, double restart_s, double work_s);

/// Below this best efficiency a campaign is refused: the run would take over 1,000 times its
/// failure-free length, which no rate estimate or policy makes a real plan.
inline constexpr double kMinProgress = 1e-3;

/// Throws core::Error when even the lower-bound failure rate leaves the job unable to progress.
void check_progress(const FailureSpec& f, const RecoverySpec& r, int nodes, double run_days);

/// Young/Daly's first-order optimum: sqrt(2 C MTBF).
double young_daly_interval_s(double checkpoint_s, double mtbf_s);

}  // namespace twin::failures
