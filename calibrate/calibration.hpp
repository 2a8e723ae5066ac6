#pragma once
/// From nccl-tests logs to profile curves: fit each run, decide which algorithm produced each
/// segment, and express its bandwidth as an efficiency against the link-limited bound at the
/// log's scale (so it carries to other scales).
///
/// Algorithm attribution when not given: a bus bandwidth above what rings can physically reach
/// (the ring bound) proves in-network reduction — NVLS inside a node, SHARP across nodes;
/// otherwise the collective's default algorithm (ring; pairwise all-to-all; direct send/recv).
/// The fitted segments replace every earlier curve of their (op, algorithm, scope).

#include <string>
#include <vector>

#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"

namespace twin::calibrate {

struct FitOptions {
  std::string algorithm;  ///< force an algorithm for every segment ("" = attribute)
  int nodes = 0;          ///< override the log's scale (0 = from the log)
  int gpus_per_node = 0;
  std::string measured_on;  ///< provenance text: what and when, e.g. "2026-11-29 cluster A"
};

struct FittedSegment {
  HockneyFit fit;
  CollectiveCurve curve;
  double bound_GBps = 0;
};

struct RunFit {
  std::string op;
  int nodes = 0, gpus_per_node = 0;
  std::vector<FittedSegment> segments;
};

/// The default algorithm name for an op (ring, pairwise, direct).
std::string default_algorithm(const std::string& op);

/// Fits every run of the log and writes the curves into `profile`. Throws core::Error when the
/// scale is unknown (no "# Using devices" block, annotation or override).
std::vector<RunFit> fit_log_into(const NcclTestsLog& log, Profile& profile,
                                 const FitOptions& options = {});

/// Size points of a run: the out-of-place time (in-place when only that is usable).
std::vector<SizePoint> size_points(const NcclTestsRun& run);

/// The scale a log ran at: the given nodes and GPUs per node (0 = not given), else the log's
/// own; with one of them given and the log's rank count known, the other is ranks / given.
/// Throws core::Error naming the log when the scale stays unknown or does not divide its ranks.
struct LogScale {
  int nodes = 0, gpus_per_node = 0;
};
LogScale log_scale(const NcclTestsLog& log, int nodes, int gpus_per_node);
inline LogScale log_scale(const NcclTestsLog& log, const FitOptions& options) {
  return log_scale(log, options.nodes, options.gpus_per_node);
}

}  // namespace twin::calibrate
