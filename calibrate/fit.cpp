#include "calibrate/fit.hpp"

#include <fmt/format.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/stats.hpp"

namespace twin::calibrate {
namespace {

using core::median;

/// Weighted least squares of t = a + x * c with weights 1/t; returns (a, c, ssr).
struct Solution {
  double latency_us, inv_bw, ssr;
};

Solution solve(const std::vector<SizePoint>& pts, double bus_factor) {
  const auto n = static_cast<Eigen::Index>(pts.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double t = pts[static_cast<std::size_t>(i)].time_us;
    const double x = pts[static_cast<std::size_t>(i)].size_bytes * bus_factor;
    a(i, 0) = 1.0 / t;
    a(i, 1) = x / t;
  }
  Eigen::Vector2d coef = a.colPivHouseholderQr().solve(b);
  if (coef(0) < 0) {  // latency cannot be negative: refit through the origin
    const Eigen::VectorXd col = a.col(1);
    coef(0) = 0.0;
    coef(1) = col.dot(b) / col.dot(col);
  }
  const double ssr = (a * coef - b).squaredNorm();
  return {coef(0), coef(1), ssr};
}

void check_points(const std::vector<SizePoint>& pts) {
  if (pts.size() < 2)
    throw core::Error("points", std::to_string(pts.size()),
                      "a latency-bandwidth fit needs at least 2 sizes");
  for (const auto& p : pts)
    if (!(p.size_bytes > 0) || !(p.time_us > 0))
      throw core::Error("points", fmt::format("{} B in {} us", p.size_bytes, p.time_us),
                        "sizes and times must be positive");
}

}  // namespace

double HockneyFit::time_us(double size_bytes, double bus_factor) const {
  // B in GB/s = 1e3 bytes per microsecond.
  return latency_us + size_bytes * bus_factor / (bus_bandwidth_GBps * 1e3);
}

HockneyFit fit_hockney(const std::vector<SizePoint>& points, double bus_factor) {
  check_points(points);
  if (!(bus_factor > 0))
    throw core::Error("bus_factor", fmt::format("{}", bus_factor), "must be positive");
  const Solution s = solve(points, bus_factor);
  if (!(s.inv_bw > 0))
    throw core::Error("points", "", "time does not grow with size: no bandwidth term to fit");
  HockneyFit fit;
  fit.latency_us = s.latency_us;
  fit.bus_bandwidth_GBps = 1.0 / s.inv_bw / 1e3;
  fit.weighted_ssr = s.ssr;
  fit.min_bytes = points.front().size_bytes;
  fit.max_bytes = points.front().size_bytes;
  for (const auto& p : points) {
    fit.min_bytes = std::min(fit.min_bytes, p.size_bytes);
    fit.max_bytes = std::max(fit.max_bytes, p.size_bytes);
  }

  // Quality: R^2 of log(time); bus-bandwidth errors in and out of sample.
  double mean_log = 0;
  for (const auto& p : points) mean_log += std::log(p.time_us);
  mean_log /= static_cast<double>(points.size());
  double ss_tot = 0, ss_res = 0;
  std::vector<double> errors, loo_errors;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const double predicted = fit.time_us(p.size_bytes, bus_factor);
    ss_tot += std::pow(std::log(p.time_us) - mean_log, 2);
    ss_res += std::pow(std::log(p.time_us) - std::log(predicted), 2);
    // busbw error = (measured busbw / predicted busbw - 1) = predicted time / measured time - 1
    errors.push_back(100.0 * std::abs(p.time_us / predicted - 1.0));
    if (points.size() >= 3) {
      std::vector<SizePoint> rest = points;
      rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(i));
      const Solution loo = solve(rest, bus_factor);
      if (loo.inv_bw > 0) {
        const double t = loo.latency_us + p.size_bytes * bus_factor * loo.inv_bw;
        loo_errors.push_back(100.0 * std::abs(p.time_us / t - 1.0));
      }
    }
  }
  fit.quality.points = static_cast<int>(points.size());
  fit.quality.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  fit.quality.median_abs_error_pct = median(errors);
  fit.quality.max_abs_error_pct = *std::max_element(errors.begin(), errors.end());
  fit.quality.loo_median_abs_error_pct = median(loo_errors);
  return fit;
}

std::vector<HockneyFit> fit_segments(const std::vector<SizePoint>& points, double bus_factor) {
  std::vector<SizePoint> sorted = points;
  std::sort(sorted.begin(), sorted.end(),
            [](const SizePoint& a, const SizePoint& b) { return a.size_bytes < b.size_bytes; });
  const HockneyFit single = fit_hockney(sorted, bus_factor);
  constexpr std::size_t kMinPoints = 3;
  std::vector<HockneyFit> best{single};
  double best_ssr = single.weighted_ssr;
  for (std::size_t split = kMinPoints; split + kMinPoints <= sorted.size(); ++split) {
    const std::vector<SizePoint> low(sorted.begin(),
                                     sorted.begin() + static_cast<std::ptrdiff_t>(split));
    const std::vector<SizePoint> high(sorted.begin() + static_cast<std::ptrdiff_t>(split),
                                      sorted.end());
    try {
      HockneyFit a = fit_hockney(low, bus_factor), b = fit_hockney(high, bus_factor);
      const double ssr = a.weighted_ssr + b.weighted_ssr;
      if (ssr < best_ssr && ssr <= 0.5 * single.weighted_ssr) {
        best_ssr = ssr;
        best = {a, b};
      }
    } catch (const core::Error&) {
      // A segment without a bandwidth term is not a candidate.
    }
  }
  return best;
}

double link_limited_busbw_GBps(const std::string& op, const std::string& algorithm, int nodes,
                               int gpus_per_node, const Profile& profile, int nics_per_node) {
  if (nodes < 1 || gpus_per_node < 1)
    throw core::Error("scale", fmt::format("{} x {}", nodes, gpus_per_node),
                      "nodes and GPUs per node must be positive");
  const double nvlink = profile.nvlink_GBps.value;
  const double nic = profile.nic_gbps.value / 8.0;
  const int nics = nics_per_node > 0 ? nics_per_node : gpus_per_node;
  const double g = gpus_per_node, n_total = static_cast<double>(nodes) * gpus_per_node;
  const bool intra = nodes == 1;
  if (op == "all_reduce" && (algorithm == "nvls")) {
    const double algbw = nvlink * g / (g + 1);
    if (intra) return algbw * 2 * (g - 1) / g;
  }
  if (op == "all_reduce" &&
      (algorithm == "nvls" || algorithm == "sharp" || algorithm == "nvls_tree")) {
    const double factor = 2 * (n_total - 1) / n_total;
    return std::min(nvlink, nics * nic) * factor;
  }
  if (op == "alltoall") {
    if (intra) return nvlink;
    // Each GPU's own NIC carries the (N - G)/N of its data bound for other nodes.
    return std::min(nvlink, nic * nics / g * (n_total - 1) / (n_total - g));
  }
  if (op == "sendrecv") return intra ? nvlink : std::min(nvlink, nic * nics / g);
  // ring, tree and the rest: NVLink inside a node, one channel per NIC across nodes.
  return intra ? nvlink : std::min(nvlink, nics * nic);
}

}  // namespace twin::calibrate
