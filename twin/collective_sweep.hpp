#pragma once
/// Collective benchmarks on the twin, in the shape of nccl-tests: one collective over all GPUs
/// of a cluster resized to N nodes of G GPUs (fabric and hardware profile from the scenario),
/// over a range of sizes — so the output can sit beside a real nccl-tests log, and a real log
/// can be compared with what the twin predicts for it.

#include <string>
#include <vector>

#include "calibrate/nccl_tests.hpp"
#include "twin/scenario.hpp"

namespace twin::sim {

struct SweepSpec {
  std::string op = "all_reduce";
  std::string algorithm = "auto";  ///< "auto", "ring" or "ring/ll128" (algorithm/protocol)
  std::string protocol = "auto";   ///< ll, ll128, simple or auto
  std::string engine = "native";
  std::string profile;  ///< empty: the scenario's cluster.gpu
  int nodes = 1;
  int gpus_per_node = 8;
  std::vector<double> sizes;
};

struct SweepRow {
  double size_bytes = 0;
  double time_us = 0;
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  std::string algorithm;
  std::string protocol;
  /// NCCL's tuner picked algorithm/protocol, and the simulation finds this one faster (else
  /// empty): "tree/ll128", and its time.
  std::string fastest;
  double fastest_time_us = 0;
};

struct SweepResult {
  std::string op, engine, profile;
  int nodes = 0, gpus_per_node = 0;
  std::vector<SweepRow> rows;
};

/// Sizes from "32M:16G" (doubling), "1G", or "8K,64K,1M"; K/M/G are binary (as nccl-tests -b/-e).
std::vector<double> parse_sizes(const std::string& text);
/// Node counts from "1:512" (doubling), "16", or "2,4,8".
std::vector<int> parse_node_counts(const std::string& text);

/// The scenario's cluster with `nodes` x `gpus_per_node` (one NIC per GPU when the scenario has
/// one per GPU), everything else unchanged.
Scenario resized(const Scenario& scenario, int nodes, int gpus_per_node);

SweepResult run_collective_sweep(const Scenario& scenario, const SweepSpec& spec);

/// One sweep per node count (a scaling curve: bus bandwidth vs nodes for each size).
std::vector<SweepResult> run_scaling(const Scenario& scenario, const SweepSpec& spec,
                                     const std::vector<int>& node_counts);

/// nccl-tests-style table (parsable by the nccl-tests reader) and JSON.
std::string sweep_table(const SweepResult& result);
std::string sweep_json(const SweepResult& result);
/// Scaling: one row per size, bus bandwidth and algorithm/protocol per node count.
std::string scaling_table(const std::vector<SweepResult>& results);
std::string scaling_json(const std::vector<SweepResult>& results);

struct ComparisonRow {
  double size_bytes = 0, measured_busbw_GBps = 0, simulated_busbw_GBps = 0, error_pct = 0;
  std::string algorithm, protocol;  ///< what NCCL's tuner would pick at this size and scale
};

struct Comparison {
  std::string op;
  int nodes = 0, gpus_per_node = 0;
  std::string profile;  ///< the hardware profile simulated
  std::vector<ComparisonRow> rows;
  double median_abs_error_pct = 0;
  double median_abs_error_large_pct = 0;            ///< sizes >= 32 MiB (0 when none)
  double median_measured_over_simulated = 0;        ///< bus bandwidth, all sizes
  double median_measured_over_simulated_large = 0;  ///< sizes >= 32 MiB (0 when none)
  /// Measured under half of what the profile predicts where bandwidth rules (judged_ratio()):
  /// unhealthy links or a wrong configuration.
  bool far_below = false;
  /// The measured / simulated ratio the health check judges: sizes >= 32 MiB, or every size when
  /// the log has none that large. Small messages are left out where it can: their time is
  /// latency, which fabrics differ in (EFA, RoCE).
  [[nodiscard]] double judged_ratio() const {
    return median_measured_over_simulated_large > 0 ? median_measured_over_simulated_large
                                                    : median_measured_over_simulated;
  }
};

/// Simulates every run of a log at the log's scale and compares bus bandwidth per size.
std::vector<Comparison> compare_log(const Scenario& scenario, const calibrate::NcclTestsLog& log,
                                    const std::string& profile, const std::string& algorithm,
                                    int nodes_override, int gpus_override);
std::string comparison_table(const std::vector<Comparison>& comparisons);
std::string comparison_json(const std::vector<Comparison>& comparisons);

}  // namespace twin::sim
