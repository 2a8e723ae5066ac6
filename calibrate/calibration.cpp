#include "calibrate/calibration.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace twin::calibrate {

std::string default_algorithm(const std::string& op) {
  if (op == "alltoall") return "pairwise";
  if (op == "sendrecv") return "direct";
  return "ring";
}

std::vector<SizePoint> size_points(const NcclTestsRun& run) {
  std::vector<SizePoint> points;
  for (const auto& row : run.rows) {
    const double t = row.time_us > 0 ? row.time_us : row.inplace_time_us;
    if (row.size_bytes > 0 && t > 0) points.push_back({row.size_bytes, t});
  }
  return points;
}

LogScale log_scale(const NcclTestsLog& log, int nodes, int gpus_per_node) {
  // An override of one factor takes the other from the log's rank count, not from its own
  // (possibly different) split.
  const int ranks = log.ranks;
  if (nodes > 0 && gpus_per_node <= 0 && ranks > 0) {
    if (ranks % nodes != 0)
      throw core::Error(
          "--nodes", std::to_string(nodes),
          fmt::format("the log ran {} ranks, not a multiple of {} nodes", ranks, nodes),
          log.source);
    return {nodes, ranks / nodes};
  }
  if (gpus_per_node > 0 && nodes <= 0 && ranks > 0) {
    if (ranks % gpus_per_node != 0)
      throw core::Error("--gpus-per-node", std::to_string(gpus_per_node),
                        fmt::format("the log ran {} ranks, not a multiple of {} GPUs per node",
                                    ranks, gpus_per_node),
                        log.source);
    return {ranks / gpus_per_node, gpus_per_node};
  }
  const LogScale scale{nodes > 0 ? nodes : log.nodes,
                       gpus_per_node > 0 ? gpus_per_node : log.gpus_per_node};
  if (scale.nodes <= 0 || scale.gpus_per_node <= 0)
    throw core::Error(
        "scale", "",
        ranks > 0
            ? fmt::format("the log ran {} ranks but does not say how they split into nodes (its "
                          "'# Using devices' block is abbreviated); give --nodes or "
                          "--gpus-per-node",
                          ranks)
            : "the log does not say how many nodes and GPUs per node it ran on (no '# Using "
              "devices' block); give --nodes and --gpus-per-node",
        log.source);
  return scale;
}

std::vector<RunFit> fit_log_into(const NcclTestsLog& log, Profile& profile,
                                 const FitOptions& options) {
  const auto [nodes, gpn] = log_scale(log, options);
  const std::string scope = nodes == 1 ? "intra_node" : "inter_node";
  const int ranks = nodes * gpn;
  std::vector<RunFit> out;
  for (const auto& run : log.runs) {
    const double factor = bus_factor(run.op, ranks);
    if (!(factor > 0))
      throw core::Error("op", run.op, fmt::format("no bus bandwidth with {} rank(s)", ranks),
                        log.source);
    RunFit result{run.op, nodes, gpn, {}};
    const double ring_bound =
        link_limited_busbw_GBps(run.op, default_algorithm(run.op), nodes, gpn, profile);
    for (const HockneyFit& fit : fit_segments(size_points(run), factor)) {
      std::string algorithm = options.algorithm;
      if (algorithm.empty()) {
        algorithm = default_algorithm(run.op);
        if (run.op == "all_reduce" && fit.bus_bandwidth_GBps > ring_bound)
          algorithm = nodes == 1 ? "nvls" : "sharp";
      }
      const double bound = link_limited_busbw_GBps(run.op, algorithm, nodes, gpn, profile);
      const std::string origin =
          fmt::format("fitted: {} ({} x {} GPUs, {} sizes {:.0f}-{:.0f} B{})", log.source, nodes,
                      gpn, fit.quality.points, fit.min_bytes, fit.max_bytes,
                      options.measured_on.empty() ? "" : ", " + options.measured_on);
      CollectiveCurve curve;
      curve.op = run.op;
      curve.algorithm = algorithm;
      curve.scope = scope;
      curve.latency_us = {fit.latency_us, origin};
      curve.bus_bandwidth_GBps = {fit.bus_bandwidth_GBps, origin};
      curve.efficiency = {
          fit.bus_bandwidth_GBps / bound,
          fmt::format("{}; fitted bus bandwidth / link-limited bound {:.1f} GB/s", origin, bound)};
      curve.min_bytes = fit.min_bytes;
      curve.max_bytes = fit.max_bytes;
      curve.nodes = nodes;
      curve.gpus_per_node = gpn;
      curve.fit = fit.quality;
      result.segments.push_back({fit, curve, bound});
    }
    std::vector<CollectiveCurve> curves;
    for (const auto& seg : result.segments) curves.push_back(seg.curve);
    profile.replace_curves(curves);
    out.push_back(std::move(result));
  }
  return out;
}

}  // namespace twin::calibrate
