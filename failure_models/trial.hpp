#pragma once
/// One campaign trial: a training job over weeks, as a merge of failure processes.
///
/// The job runs at rate 1 / s healthy step-seconds per second, s the product of the slowdowns
/// of the processes active now (stragglers, elastic replicas missing, GC drift, degraded links).
/// A failure stops it: it loses the work since the last completed checkpoint, waits detection +
/// restart (+ a spare, or a repair when none is left, or runs without the node in elastic mode)
/// and resumes. Checkpoints are written every interval of running time; a failure during a write
/// voids it. Work is counted in healthy step-seconds: ETTR = work / wall time.
///
/// Node failure clocks run only while the job runs (the causes in the published table are
/// load-driven: GPU faults, software, NCCL hangs); correlated outages, straggler and degraded-link
/// episodes arrive in wall time.

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/cancel.hpp"
#include "failure_models/failures.hpp"

namespace twin::failures {

class Process;

/// What a trial needs to know about the job and its cluster.
struct TrialInputs {
  int nodes = 0, gpus = 0, gpus_per_node = 8, nics_per_node = 8, tiers = 3;
  double work_s = 0;              ///< failure-free training time
  double straggler_slowdown = 1;  ///< step time with one slow GPU / healthy step time
  double checkpoint_bytes = 0;    ///< whole job (for storage-derived write and load times)
  double host_copy_Bps = 63e9;    ///< GPU to host, per GPU (asynchronous snapshot)
  int replicas = 1;               ///< data-parallel replicas (elastic mode drops them)
  int leaves = 0;                 ///< leaf switches carrying the job
  int nodes_per_leaf = 32;        ///< nodes whose NIC a leaf failure cuts
  /// Cables of the job's fabric per tier (NIC-leaf, leaf-spine, spine-core): where degraded-link
  /// episodes land.
  std::vector<int> cables_per_tier;
  /// Step time with `n[k]` cables of tier k degraded / healthy step time, from the step
  /// simulation (called from trial threads: must be thread-safe). Needed only when degraded-link
  /// episodes are on.
  std::function<double(const std::vector<int>& n)> degraded_slowdown;
  FailureSpec failures;
  RecoverySpec recovery;
  bool stragglers = true;  ///< false: the "remove the stragglers (and GC drift)" what-if
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

/// Called for every event of a trial: time, kind (failure, sdc_detected, restart, checkpoint,
/// done), cause, and the fraction of the run's work done at that moment.
using EventLog =
    std::function<void(double t_s, const char* kind, const std::string& cause, double progress)>;

/// The job as the processes see and change it: its clock, progress, checkpoints and the
/// recovery policy's pool of spares and repairs.
struct Job {
  Job(const TrialInputs& inputs, EventLog log);

  const TrialInputs& in;
  double gpus = 0;
  double restart_s = 0;  ///< detection excluded: restart + NCCL set-up + checkpoint load
  double now_s = 0;
  double progress_s = 0;                                       ///< healthy step-seconds done
  double run_since_checkpoint_s = 0;                           ///< running time since the last one
  std::vector<std::pair<double, double>> checkpoints{{0, 0}};  ///< (wall time written, progress)
  int spares = 0;
  std::vector<double> repairs;  ///< when failed nodes come back
  int missing = 0;              ///< elastic mode: nodes the job runs without
  std::vector<double> returns;  ///< when missing nodes come back
  TrialResult result;
  std::vector<Process*> processes;  ///< told of every restart

  void log(double t_s, const char* kind, const std::string& cause) const;
  /// Progress saved by the last completed checkpoint.
  [[nodiscard]] double saved_progress() const { return checkpoints.back().second; }
  /// The earliest time a process will stop the job.
  [[nodiscard]] double next_failure_s() const;
  /// Stops the job at `t_s` for `cause`; `lost` nodes leave (node `node` of the node-failure
  /// process, or -1); resumes from `rollback` progress after detection, any wait and restart.
  void interrupt(double t_s, const std::string& cause, double rollback, int node, int lost,
                 double repair_s);

 private:
  /// Takes `lost` nodes out at `t_s`: spares replace them, or (elastic) the job runs without
  /// them, or it waits for the first repair. Returns how long the job must wait.
  double replace(double t_s, int lost, double repair_s);
  EventLog log_;
};

/// One trial, deterministic in (seed, trial). With `cancel` set, throws core::Cancelled within a
/// few thousand events of its cancellation.
TrialResult simulate_trial(const TrialInputs& in, double interval_s, std::uint64_t seed, int trial,
                           const EventLog& log = {}, const core::CancelToken* cancel = nullptr);

/// Job-level failure rate (failures per second, fleet-average, all causes incl. correlated).
double job_failure_rate(const TrialInputs& in);
/// How long the job pauses per checkpoint (the C of Young/Daly).
double checkpoint_pause_s(const TrialInputs& in);
/// How long a checkpoint takes to reach storage (the pause, unless asynchronous).
double checkpoint_write_s(const TrialInputs& in);

}  // namespace twin::failures
