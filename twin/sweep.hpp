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
#include "twin/scenario.hpp"

namespace twin::sim {

struct Vary {
  std::string key;
  std::vector<std::string> values;
};

/// Points a sweep runs unless --max-points raises it: the count is checked before anything is
/// generated, so `--vary k=1:1e9:1` is refused at once instead of filling memory.
inline constexpr std::size_t kDefaultMaxPoints = 10'000;

/// "key=v1,v2,..." or "key=from:to:step" (numeric, inclusive). Throws core::Error on an empty
/// range, an empty list item, a malformed argument, or more than `max_points` values.
Vary parse_vary(const std::string& arg, std::size_t max_points = kDefaultMaxPoints);

struct SweepPoint {
  int index = 0;
  std::vector<std::string> overrides;  ///< base --set values, then this point's
  std::string label;                   ///< "key=value;key=value"
};

/// The cross product, validated before any work: every key must exist and every value must
/// parse into its field, a key may be varied once, and the product may hold at most
/// `max_points` points (core::Error naming the key or the count otherwise).
std::vector<SweepPoint> sweep_points(const ScenarioText& scenario,
                                     const std::vector<std::string>& base,
                                     const std::vector<Vary>& vary,
                                     std::size_t max_points = kDefaultMaxPoints);

struct PointResult {
  int index = 0;
  std::string label;
  std::string fingerprint;  ///< of everything that determined it (see point_fingerprint)
  std::string status;       ///< ok, infeasible (the scenario cannot run: memory, fabric...), error
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

/// What determines a sweep's results, hashed in parts so a resumed sweep can say which part
/// changed: the study (scenario text after the base --set overrides, and the varied keys), the
/// point's own scenario after all its overrides, the options (campaign, trials, seed), the
/// hardware profile's content, and the program version. Written as "s-p-o-h-v" (16 hex each).
struct Fingerprint {
  std::string study, point, options, profile, version;
  [[nodiscard]] std::string text() const;
  /// Parses text(); an empty Fingerprint for anything else.
  static Fingerprint parse(const std::string& text);
  /// The first part that differs from `other`, in words ("" when equal).
  [[nodiscard]] std::string difference(const Fingerprint& other) const;
};

/// The study part: the scenario after the base overrides, and the varied keys.
std::string study_fingerprint(const ScenarioText& scenario, const std::vector<std::string>& base,
                              const std::vector<Vary>& vary);
Fingerprint point_fingerprint(const std::string& study, const ScenarioText& scenario,
                              const SweepPoint& point, const SweepSettings& s);

/// The program version that fingerprints name (results of another version are recomputed).
const char* program_version();

/// One point. Errors become the point's status; a cancellation (`cancel`, checked before the
/// point and inside its step and campaign) propagates as core::Cancelled.
PointResult run_point(const ScenarioText& scenario, const SweepPoint& point, const SweepSettings& s,
                      const core::CancelToken* cancel = nullptr);

/// Runs points on threads; `done` is called in point order (for incremental output). On
/// cancellation throws core::Cancelled once the running points have stopped; every point handed
/// to `done` before that is complete.
void run_points(const ScenarioText& scenario, const std::vector<SweepPoint>& points,
                const SweepSettings& s, int threads,
                const std::function<void(const PointResult&)>& done, bool progress,
                const core::CancelToken* cancel = nullptr);

/// Marks points no other point of the same workload (model, parallelism, training fields)
/// beats on both capital cost and time to train.
void mark_pareto(std::vector<PointResult>& results);

std::string csv_header(const SweepSettings& s);
std::string csv_row(const PointResult& r, const SweepSettings& s);
/// Reads rows written by csv_row (for resuming and for gathering MPI results), by label.
/// Throws core::Error when the header is not this kind of sweep's (another kind of sweep, or a
/// file written before fingerprints existed: its rows cannot be trusted).
std::map<std::string, PointResult> read_csv(const std::string& text, const SweepSettings& s);

/// Which earlier rows a resumed sweep may reuse.
struct ResumePlan {
  std::map<std::string, PointResult> reuse;  ///< by label: fingerprint matches
  std::vector<std::string> notes;            ///< why others are recomputed, one line per reason
};
/// Matches earlier rows to `points` by label and fingerprint. Throws core::Error when no earlier
/// row belongs to this study (the directory holds another sweep's results).
ResumePlan plan_resume(const std::map<std::string, PointResult>& earlier,
                       const std::vector<SweepPoint>& points,
                       const std::vector<std::string>& fingerprints, const std::string& where);

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
