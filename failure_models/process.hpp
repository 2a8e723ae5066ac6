#pragma once
/// One interface for everything that happens to a training job during a campaign trial.
///
/// A trial is a merge of processes (node failures, correlated outages, silent data corruption,
/// stragglers, GC drift, degraded links, and the job's own checkpoints and elastic returns).
/// Each process knows only its next event time and what its event does to the job; the loop in
/// failure_models/trial.cpp advances the job to the earliest event and fires it. Events that fell
/// while the job was down are due together when it comes back; they fire in the order of the
/// process list (a fixed priority), one per pass, so a trial is deterministic in its seed.
///
/// Processes share the trial's one random stream. A process draws only when it starts and when
/// its own events fire (or, for node failures, when a node is replaced), so the draw order is
/// fixed by the event order and a process with a zero rate draws nothing.

#include <limits>

namespace twin::failures {

struct Job;

/// "No event": the time of an event that never comes.
inline constexpr double kNever = std::numeric_limits<double>::infinity();

class Process {
 public:
  virtual ~Process() = default;

  /// Wall time of this process's next event (kNever: none); may lie in the past when the event
  /// fell while the job was down.
  [[nodiscard]] virtual double next_s(const Job& job) const = 0;
  /// Handles the event due now (job.now_s() is its time, or later if it fell during a stop).
  virtual void fire(Job& job) = 0;

  /// The job ran for `dt_s` of wall time up to job.now_s(). Default: nothing ages.
  virtual void advance(const Job& /*job*/, double /*dt_s*/) {}
  /// The step time multiplier this process adds in the current state, applied to `s`.
  [[nodiscard]] virtual double slow(const Job& /*job*/, double s) const { return s; }
  /// The job stopped at `t_s` for `down_s` and restarts; `node` (or -1) is the node replaced.
  virtual void restarted(double /*t_s*/, double /*down_s*/, int /*node*/) {}
  /// When this process next stops the job; a checkpoint being written then is void.
  [[nodiscard]] virtual double next_failure_s() const { return kNever; }
};

}  // namespace twin::failures
