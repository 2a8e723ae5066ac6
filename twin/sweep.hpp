#pragma once
/// Capacity-planning sweeps: the cross product of varied scenario fields, each point run as a
/// training step (and optionally a failure campaign) and priced, with a Pareto mark on capital
/// cost vs time to train. Points are independent and deterministic, so threads and MPI ranks
/// give bit-identical rows.

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/cancel.hpp"

namespace twin::sim {

struct Vary {
  std::string key;
  std::vector<std::string> values;
};

/// "key=v1,v2,..." or "key=from:to:step" (numeric, inclusive). Throws core::Error on an empty
/// range or a malformed argument.
Vary parse_vary(const std::string& arg);

struct SweepPoint {
  int index = 0;
  std::vector<std::string> overrides;  ///< base --set values, then this point's
  std::string label;                   ///< "key=value;key=value"
};

/// The cross product, validated before any work: every key must exist and every value must
/// parse into its field (core::Error naming the key otherwise).
std::vector<SweepPoint> sweep_points(const std::string& scenario_path,
                                     const std::vector<std::string>& base,
                                     const std::vector<Vary>& vary);

struct PointResult {
  int index = 0;
  std::string label;
  std::string status;  ///< ok, infeasible (the scenario cannot run: memory, fabric...), error
  std::string reason;
  std::vector<std::pair<std::string, double>> metrics;
  bool pareto = false;
  [[nodiscard]] double metric(const std::string& name) const;
};

struct SweepSettings {
  bool campaign = false;
  int trials = 50;
  std::uint64_t seed = 1;
};

/// One point. Errors become the point's status; a cancellation (`cancel`, checked before the
/// point and inside its step and campaign) propagates as core::Cancelled.
PointResult run_point(const std::string& scenario_path, const SweepPoint& point,
                      const SweepSettings& s, const core::CancelToken* cancel = nullptr);

/// Runs points on threads; `done` is called in point order (for incremental output). On
/// cancellation throws core::Cancelled once the running points have stopped; every point handed
/// to `done` before that is complete.
void run_points(const std::string& scenario_path, const std::vector<SweepPoint>& points,
                const SweepSettings& s, int threads,
                const std::function<void(const PointResult&)>& done, bool progress,
                const core::CancelToken* cancel = nullptr);

/// Marks points no other point of the same workload (model, parallelism, training fields)
/// beats on both capital cost and time to train.
void mark_pareto(std::vector<PointResult>& results);

std::string csv_header(const SweepSettings& s);
std::string csv_row(const PointResult& r, const SweepSettings& s);
/// Reads rows written by csv_row (for resuming and for gathering MPI results).
std::map<std::string, PointResult> read_csv(const std::string& text, const SweepSettings& s);

std::string sweep_results_table(const std::vector<PointResult>& results, const SweepSettings& s);
std::string sweep_results_json(const std::vector<PointResult>& results);

/// sweep.h5 written point by point: one group per point with its label, status and metrics.
class SweepHdf5 {
 public:
  explicit SweepHdf5(const std::string& path);
  ~SweepHdf5();
  void write(const PointResult& r);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace twin::sim
