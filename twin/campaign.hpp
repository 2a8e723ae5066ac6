#pragma once
/// A training campaign over weeks: failures, stragglers and recovery, simulated as a merge of
/// failure processes per trial (failure_models/trial.hpp states the model) and summarized over
/// Monte Carlo trials. This file adds what needs the rest of the twin: the step simulation for
/// the straggler and degraded-link states, the fabric's leaves and cables, and the outputs.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "failure_models/failures.hpp"
#include "failure_models/trial.hpp"
#include "twin/cluster.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {

using CampaignInputs = failures::TrialInputs;
using TrialResult = failures::TrialResult;
using failures::checkpoint_pause_s;
using failures::job_failure_rate;

struct CampaignEvent {
  int trial;
  double time_h;
  std::string kind;  ///< failure, sdc_detected, restart, checkpoint, done
  std::string cause;
  double progress = 0;  ///< fraction of the run's work done at that moment
};

/// One trial, deterministic in (seed, trial); `events` collects its timeline. With `cancel` set,
/// throws core::Cancelled within a few thousand events of its cancellation.
TrialResult run_trial(const CampaignInputs& in, double interval_s, std::uint64_t seed, int trial,
                      std::vector<CampaignEvent>* events = nullptr,
                      const core::CancelToken* cancel = nullptr);

/// A step model: the simulated step of a cluster's job. Empty means simulate_step; validation's
/// fit passes one that runs the step on a profile with candidate parameter values, so that every
/// step a campaign simulates (healthy, straggling, degraded) uses the same values.
using StepFunction = std::function<StepReport(const Cluster&)>;

/// The cluster's step on `step`, or simulate_step (native engine, `cancel` checked) when empty.
StepReport step_on(const StepFunction& step, const Cluster& cluster,
                   const core::CancelToken* cancel = nullptr);

/// Step time with n[k] cables of tier k (NIC-leaf, leaf-spine, spine-core) degraded to
/// failures.degraded_link_factor, over `healthy_step_s`: the step (`step`, empty: simulate_step)
/// of the scenario with the first n[k] cables of each tier degraded (a fat tree's cables of one
/// tier are alike up to the job's placement), cached by n. Thread-safe when `step` is.
std::function<double(const std::vector<int>&)> degraded_link_slowdown(const Cluster& cluster,
                                                                      double healthy_step_s,
                                                                      StepFunction step = {});

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
  /// The step model of the healthy, straggling and degraded-cable steps (empty: simulate_step).
  StepFunction step;
};

/// Runs the scenario's campaign: the step simulation for the healthy and straggler states, then
/// `trials` Monte Carlo trials, the interval sweep and the straggler-free what-if.
/// The campaign of the cluster's job: its step (`healthy_step` when the caller has simulated it
/// already), the step with one straggling GPU, then the trials.
CampaignReport run_campaign(const Cluster& cluster, const CampaignOptions& options,
                            const StepReport* healthy_step = nullptr);
/// The same on a cluster built from `scenario`.
CampaignReport run_campaign(const Scenario& scenario, const CampaignOptions& options);
/// The same from explicit inputs (for tests).
CampaignReport run_campaign(const CampaignInputs& inputs, const CampaignOptions& options);

std::string campaign_text(const Scenario& scenario, const CampaignReport& report);
std::string campaign_json(const CampaignReport& report);

}  // namespace twin::sim
