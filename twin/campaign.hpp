#pragma once
/// A training campaign over weeks: failures, stragglers and recovery, simulated as a
/// discrete-event timeline per trial and summarized over Monte Carlo trials.
///
/// Per trial: each job node has its own time to next failure (Weibull with the cause mix's
/// total rate; lemons drawn per trial); a failure stops the job, which loses the work since the
/// last completed checkpoint, waits detection + restart (+ a spare, or a repair when none is
/// left) and resumes. Silent data corruption is noticed `sdc_detection_hours` later and rolls back
/// to the last checkpoint written before it. Checkpoints are synchronous writes every interval
/// of running time (Young/Daly's sqrt(2 C MTBF) by default); a failure during a write voids it.
/// Straggler episodes slow every step by the factor the step simulation gives for a job with one
/// slow GPU (cached per factor); unsynchronized GC pauses add pause x min(N, 1 + w/pause) per GC
/// period, w = min(period, 2 drift sqrt(hours since the last synchronization)).
///
/// Node failure clocks run only while the job runs (load-driven causes); correlated outages and
/// straggler episodes arrive in wall time. Work is counted in healthy step-seconds:
/// ETTR = work / wall time.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "failure_models/failures.hpp"
#include "twin/scenario.hpp"

namespace twin::sim {

struct CampaignInputs {
  int nodes = 0, gpus = 0, gpus_per_node = 8, nics_per_node = 8, tiers = 3;
  double work_s = 0;              ///< failure-free training time
  double straggler_slowdown = 1;  ///< step time with one slow GPU / healthy step time
  double checkpoint_bytes = 0;    ///< whole job (for storage-derived write and load times)
  double host_copy_Bps = 63e9;    ///< GPU to host, per GPU (asynchronous snapshot)
  int replicas = 1;               ///< data-parallel replicas (elastic mode drops them)
  int leaves = 0;                 ///< leaf switches carrying the job
  int nodes_per_leaf = 32;        ///< nodes whose NIC a leaf failure cuts
  failures::FailureSpec failures;
  failures::RecoverySpec recovery;
  bool stragglers = true;  ///< false: the "remove the stragglers" what-if
};

struct TrialResult {
  double wall_s = 0;
  double ettr = 0;
  int interruptions = 0;
  std::map<std::string, int> by_cause;
  std::map<std::string, double>
      lost_gpu_hours;  ///< recomputation, restart, checkpointing, straggling
  int spares_used = 0;
  int checkpoints = 0;
};

struct CampaignEvent {
  int trial;
  double time_h;
  std::string kind;  ///< failure, sdc_detected, restart, checkpoint, done
  std::string cause;
  double progress = 0;  ///< fraction of the run's work done at that moment
};

/// One trial, deterministic in (seed, trial). With `cancel` set, throws core::Cancelled within a
/// few thousand events of its cancellation.
TrialResult run_trial(const CampaignInputs& in, double interval_s, std::uint64_t seed, int trial,
                      std::vector<CampaignEvent>* events = nullptr,
                      const core::CancelToken* cancel = nullptr);

/// Job-level failure rate (failures per second, fleet-average, all causes incl. correlated).
double job_failure_rate(const CampaignInputs& in);
/// How long the job pauses per checkpoint (the C of Young/Daly).
double checkpoint_pause_s(const CampaignInputs& in);

struct Percentiles {
  double p10 = 0, p50 = 0, p90 = 0, mean = 0;
};
Percentiles percentiles(std::vector<double> values);

struct CampaignReport {
  int trials = 0;
  double interval_s = 0, young_daly_s = 0, best_interval_s = 0, checkpoint_s = 0;
  double job_mtbf_h = 0;
  double healthy_days = 0;
  Percentiles ettr, days, ettr_without_stragglers, days_without_stragglers;
  double interruptions_per_day = 0;
  std::map<std::string, double> interruptions_by_cause;  ///< mean per trial
  std::map<std::string, double> lost_gpu_hours;          ///< mean per trial
  double spares_used = 0;
  std::vector<std::pair<double, double>> interval_curve;  ///< (interval s, mean ETTR)
  std::vector<double> trial_days;                         ///< time to train of every trial
  std::vector<CampaignEvent> sample_events;               ///< the first trial's timeline
  double step_time_s = 0, straggler_slowdown = 1;
  /// Monte Carlo standard error of each interval_curve mean (sample sd / sqrt(trials)).
  std::vector<double> interval_curve_sem;
};

struct CampaignOptions {
  int trials = 100;
  std::uint64_t seed = 1;
  int threads = 0;        ///< 0: hardware concurrency
  std::string out_dir;    ///< incremental HDF5 (campaign.h5) when set
  bool progress = false;  ///< progress bar on stderr
  /// Checked before every trial and inside long ones. On cancellation run_campaign throws
  /// core::Cancelled saying how many trials finished; those are already in campaign.h5.
  const core::CancelToken* cancel = nullptr;
};

/// Runs the scenario's campaign: the step simulation for the healthy and straggler states, then
/// `trials` Monte Carlo trials, the interval sweep and the straggler-free what-if.
CampaignReport run_campaign(const Scenario& scenario, const CampaignOptions& options);
/// The same from explicit inputs (for tests and sweeps).
CampaignReport run_campaign(const CampaignInputs& inputs, const CampaignOptions& options);

std::string campaign_text(const Scenario& scenario, const CampaignReport& report);
std::string campaign_json(const CampaignReport& report);

}  // namespace twin::sim
