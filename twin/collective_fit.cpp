#include "twin/collective_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

#include "calibrate/fit.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "netsim/collective.hpp"
#include "netsim/nccl_model.hpp"
#include "topology/fabric.hpp"
#include "twin/collective_sweep.hpp"

namespace twin::sim {
namespace {

using netsim::Algorithm;
using netsim::Protocol;

struct Observation {
  double size_bytes = 0, time_us = 0;
  double x_us = 0;  ///< T_flow / f: the transfer time at path efficiency 1
};

struct Key {
  netsim::CollectiveOp op;
  Algorithm algorithm;
  Protocol protocol;
  netsim::Scope scope;
  int nodes, gpus_per_node;
  auto operator<=>(const Key&) const = default;
};

/// The model's latency at a scale, for the profile's tables.
double model_latency(const calibrate::Profile& p, const Key& k, double bytes) {
  const netsim::NcclModel model(p);
  return model.latency_us(k.op, k.algorithm, k.protocol, {k.nodes * k.gpus_per_node, k.nodes, true},
                          bytes);
}

std::vector<int> all_gpus(int count) {
  std::vector<int> g(static_cast<std::size_t>(count));
  std::iota(g.begin(), g.end(), 0);
  return g;
}

using Observations = std::map<Key, std::vector<Observation>>;

/// Which (algorithm, protocol) runs every row, and its transfer time at efficiency 1.
Observations observe(const Scenario& scenario, const std::vector<calibrate::NcclTestsLog>& logs,
                     const calibrate::Profile& picker, const calibrate::FitOptions& options) {
  Observations out;
  const netsim::NcclModel model(picker);
  for (const auto& log : logs) {
    const auto [nodes, gpn] = calibrate::log_scale(log, options);
    const Scenario s = resized(scenario, nodes, gpn);
    const topology::Fabric fabric(s.cluster, s.fabric);
    netsim::CollectiveSimulator sim(fabric, nullptr, picker, netsim::make_engine("native"));
    const std::vector<std::vector<int>> groups{all_gpus(fabric.gpu_count())};
    const netsim::Choice choice =
        netsim::parse_choice(options.algorithm.empty() ? "auto" : options.algorithm, "--algo");
    for (const auto& run : log.runs) {
      const netsim::CollectiveOp op = netsim::parse_op(run.op, "op");
      for (const auto& point : calibrate::size_points(run)) {
        const auto r = sim.run(op, choice, groups, point.size_bytes);
        double flow_s = 0;
        for (double f : r.phase_flow_s) flow_s += f;
        const double fraction = model.bandwidth_fraction(r.algorithm, r.protocol, point.size_bytes);
        const Key key{op,         r.algorithm,
                      r.protocol, nodes > 1 ? netsim::Scope::inter_node : netsim::Scope::intra_node,
                      nodes,      gpn};
        out[key].push_back({point.size_bytes, point.time_us, core::s_to_us(flow_s / fraction)});
      }
    }
  }
  return out;
}

struct Segment {
  double latency_us, efficiency, min_bytes, max_bytes;
  calibrate::FitQuality quality;
};

/// Latency alone, with the efficiency kept at `e_prior`: t = L + x / e_prior, L the mean of
/// the residuals weighted as the relative fit (1/t^2).
Segment latency_only(const std::vector<Observation>& rows, double e_prior) {
  double num = 0, den = 0;
  Segment s{0, e_prior, rows.front().size_bytes, rows.front().size_bytes, {}};
  std::vector<double> errors;
  for (const auto& r : rows) {
    const double w = 1.0 / (r.time_us * r.time_us);
    num += w * (r.time_us - r.x_us / e_prior);
    den += w;
    s.min_bytes = std::min(s.min_bytes, r.size_bytes);
    s.max_bytes = std::max(s.max_bytes, r.size_bytes);
  }
  s.latency_us = std::max(0.0, num / den);
  // R^2 of log(time), as calibrate's Hockney fit reports it: near 0 (or below) when the times
  // hardly vary and the latency is all there is to fit.
  double mean_log = 0, ss_tot = 0, ss_res = 0;
  for (const auto& r : rows) mean_log += std::log(r.time_us) / static_cast<double>(rows.size());
  for (const auto& r : rows) {
    const double predicted = s.latency_us + r.x_us / e_prior;
    errors.push_back(100.0 * std::abs(r.time_us / predicted - 1.0));
    ss_tot += std::pow(std::log(r.time_us) - mean_log, 2);
    ss_res += std::pow(std::log(r.time_us) - std::log(predicted), 2);
  }
  s.quality.r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : 1.0;
  s.quality.points = static_cast<int>(rows.size());
  s.quality.median_abs_error_pct = core::median(errors);
  s.quality.max_abs_error_pct = *std::max_element(errors.begin(), errors.end());
  s.quality.loo_median_abs_error_pct = s.quality.median_abs_error_pct;
  return s;
}

/// t = L + x / E in one or two size segments (calibrate's Hockney fit with x in place of the
/// bus bytes: its "bandwidth" in GB/s at x in us x 1e3 is E). Rows whose transfer is a small
/// part of their time (under 20 % at the prior efficiency) cannot tell E: they fit L alone.
std::vector<Segment> fit_rows(const std::vector<Observation>& rows, double e_prior) {
  double transfer_share = 0;
  for (const auto& r : rows)
    transfer_share = std::max(transfer_share, r.x_us / e_prior / r.time_us);
  if (rows.size() == 1 || transfer_share < 0.2) return {latency_only(rows, e_prior)};
  std::vector<Segment> out;
  std::vector<calibrate::SizePoint> points;
  for (const auto& r : rows) points.push_back({r.x_us * 1e3, r.time_us});
  for (const auto& seg : calibrate::fit_segments(points, 1.0)) {
    Segment s{seg.latency_us, seg.bus_bandwidth_GBps, 0, 0, seg.quality};
    bool first = true;
    for (const auto& r : rows) {
      if (r.x_us * 1e3 < seg.min_bytes * (1 - 1e-12) || r.x_us * 1e3 > seg.max_bytes * (1 + 1e-12))
        continue;
      s.min_bytes = first ? r.size_bytes : std::min(s.min_bytes, r.size_bytes);
      s.max_bytes = first ? r.size_bytes : std::max(s.max_bytes, r.size_bytes);
      first = false;
    }
    if (!(s.efficiency > 0 && s.efficiency <= 1.5)) return {latency_only(rows, e_prior)};
    out.push_back(s);
  }
  return out;
}

/// Adds `offset_us` to every cell of one hop kind (every algorithm and protocol).
void shift_hops(calibrate::Profile& p, const std::string& hop, double offset_us) {
  for (auto& [algo, protocols] : p.nccl->hop_latency_us[hop])
    for (auto& [proto, value] : protocols) value = std::max(0.0, value + offset_us);
}

/// Rows that can be latency-bound: at most 1 MiB (and within 2x the run's fastest time).
constexpr double kLatencyRowMaxBytes = 1024.0 * 1024;

/// Sum of squared log errors of the simulated times of the latency-bound rows (time within 2x
/// the run's smallest, at most 1 MiB) of the logs at the scope (network: multi-node logs; NVLink:
/// one node).
double latency_misfit(const Scenario& scenario, const std::vector<calibrate::NcclTestsLog>& logs,
                      const calibrate::Profile& profile, bool network,
                      const calibrate::FitOptions& options, int* rows_used) {
  double sum = 0;
  int used = 0;
  const netsim::Choice choice =
      netsim::parse_choice(options.algorithm.empty() ? "auto" : options.algorithm, "--algo");
  for (const auto& log : logs) {
    const auto [nodes, gpn] = calibrate::log_scale(log, options);
    if ((nodes > 1) != network) continue;
    const Scenario sc = resized(scenario, nodes, gpn);
    const topology::Fabric fabric(sc.cluster, sc.fabric);
    netsim::CollectiveSimulator sim(fabric, nullptr, profile, netsim::make_engine("native"));
    const std::vector<std::vector<int>> groups{all_gpus(fabric.gpu_count())};
    for (const auto& run : log.runs) {
      const auto points = calibrate::size_points(run);
      double fastest = 0;
      for (const auto& pt : points)
        fastest = fastest == 0 ? pt.time_us : std::min(fastest, pt.time_us);
      for (const auto& pt : points) {
        if (pt.time_us > 2 * fastest || pt.size_bytes > kLatencyRowMaxBytes) continue;
        const auto r = sim.run(netsim::parse_op(run.op, "op"), choice, groups, pt.size_bytes);
        sum += std::pow(std::log(core::s_to_us(r.time_s) / pt.time_us), 2);
        ++used;
      }
    }
  }
  if (rows_used != nullptr) *rows_used = used;
  return sum;
}

/// The per-step latency the fabric adds to NCCL's table for one hop kind: golden-section search
/// of the offset in [-min cell, 1000] us minimizing the latency-bound rows' misfit.
double fit_step_offset(const Scenario& scenario, const std::vector<calibrate::NcclTestsLog>& logs,
                       const calibrate::Profile& profile, bool network,
                       const calibrate::FitOptions& options, int* rows_used) {
  const std::string hop = network ? "network" : "nvlink";
  (void)latency_misfit(scenario, logs, profile, network, options, rows_used);
  if (*rows_used == 0) return 0.0;
  double lowest = 1e9;
  for (const auto& [algo, protocols] : profile.nccl->hop_latency_us.at(hop))
    for (const auto& [proto, value] : protocols) lowest = std::min(lowest, value);
  auto misfit = [&](double offset) {
    calibrate::Profile p = profile;
    shift_hops(p, hop, offset);
    return latency_misfit(scenario, logs, p, network, options, nullptr);
  };
  double a = -lowest, b = 1000.0;
  const double phi = (std::sqrt(5.0) - 1) / 2;
  double c = b - phi * (b - a), d = a + phi * (b - a), fc = misfit(c), fd = misfit(d);
  for (int i = 0; i < 40 && b - a > 0.01; ++i) {
    if (fc < fd) {
      b = d;
      d = c;
      fd = fc;
      c = b - phi * (b - a);
      fc = misfit(c);
    } else {
      a = c;
      c = d;
      fc = fd;
      d = a + phi * (b - a);
      fd = misfit(d);
    }
  }
  return 0.5 * (a + b);
}

/// Curves for the (op, algorithm, protocol, scope) groups the profile picks, per scale.
void fit_curves(const Scenario& scenario, const std::vector<calibrate::NcclTestsLog>& logs,
                calibrate::Profile& work, const calibrate::FitOptions& options,
                CollectiveFit& fit) {
  const Observations observed = observe(scenario, logs, work, options);
  fit.curves.clear();
  for (const auto& [key, rows] : observed) {
    const calibrate::CollectiveCurve* prior = work.find_curve(
        std::string(netsim::to_text(key.op)), std::string(netsim::to_text(key.algorithm)),
        std::string(netsim::to_text(key.protocol)), std::string(netsim::to_text(key.scope)),
        rows.back().size_bytes, key.nodes);
    const auto segs = fit_rows(rows, prior != nullptr ? prior->efficiency.value : 1.0);
    std::vector<calibrate::CollectiveCurve> curves;
    for (const auto& seg : segs) {
      const std::string origin =
          fmt::format("fitted: {} x {} GPUs, {} sizes {:.0f}-{:.0f} B, t = L + (T_flow / f) / E{}",
                      key.nodes, key.gpus_per_node, seg.quality.points, seg.min_bytes,
                      seg.max_bytes, options.measured_on.empty() ? "" : ", " + options.measured_on);
      calibrate::CollectiveCurve c;
      c.op = netsim::to_text(key.op);
      c.algorithm = netsim::to_text(key.algorithm);
      c.protocol = netsim::to_text(key.protocol);
      c.scope = netsim::to_text(key.scope);
      c.latency_us = {seg.latency_us, origin};
      c.efficiency = {seg.efficiency, origin + "; path efficiency E"};
      c.min_bytes = seg.min_bytes;
      c.max_bytes = seg.max_bytes;
      c.nodes = key.nodes;
      c.gpus_per_node = key.gpus_per_node;
      if (seg.quality.points > 0) c.fit = seg.quality;
      curves.push_back(std::move(c));
    }
    work.replace_curves(curves);
    for (const auto& c : curves) fit.curves.push_back({c, model_latency(work, key, c.min_bytes)});
  }
}

}  // namespace

CollectiveFit fit_collectives(const Scenario& scenario,
                              const std::vector<calibrate::NcclTestsLog>& logs,
                              calibrate::Profile& profile, const calibrate::FitOptions& options) {
  if (!profile.nccl)
    throw core::Error("profile", profile.name,
                      "has no \"nccl\" section: the fit needs NCCL's cost model");
  if (logs.empty()) throw core::Error("logs", "", "no nccl-tests log to fit");
  calibrate::Profile work = profile;
  CollectiveFit fit;
  // 1. The latency every step over the network (or NVLink) adds beyond NCCL's table, from the
  //    latency-bound rows of every log of that scope together, at every scale they ran.
  for (const bool network : {true, false}) {
    int rows = 0;
    const double offset = fit_step_offset(scenario, logs, work, network, options, &rows);
    if (rows == 0) continue;
    const std::string hop = network ? "network" : "nvlink";
    shift_hops(work, hop, offset);
    std::set<int> scales;
    for (const auto& log : logs)
      if ((log.nodes > 1) == network) scales.insert(log.nodes);
    work.nccl->fitted[hop] = fmt::format(
        "fitted: every {} hop {:+.2f} us from NCCL's table ({} latency-bound rows, {} scale(s){})",
        hop, offset, rows, scales.size(),
        options.measured_on.empty() ? "" : ", " + options.measured_on);
    fit.hops.push_back(
        {hop + " (every algorithm and protocol)", 0.0, offset, static_cast<int>(scales.size())});
  }
  // 2. Curves for what the profile picks, repeated while the picks change (at most 4 times).
  for (int pass = 0; pass < 4; ++pass) {
    const std::size_t before = work.collectives.size();
    std::vector<std::string> picked_before;
    for (const auto& f : fit.curves)
      picked_before.push_back(f.curve.algorithm + f.curve.protocol + std::to_string(f.curve.nodes));
    fit_curves(scenario, logs, work, options, fit);
    std::vector<std::string> picked;
    for (const auto& f : fit.curves)
      picked.push_back(f.curve.algorithm + f.curve.protocol + std::to_string(f.curve.nodes));
    if (pass > 0 && picked == picked_before && work.collectives.size() == before) break;
  }
  profile = std::move(work);
  return fit;
}

std::string fit_table(const CollectiveFit& fit) {
  std::string out = fmt::format("{:<15}{:<15}{:>8}  {:<24}{:>10}{:>11}{:>7}{:>8}{:>9}{:>9}\n", "op",
                                "algo/proto", "scale", "sizes (B)", "lat (us)", "model (us)", "eff",
                                "R^2", "med err", "LOO err");
  for (const auto& f : fit.curves) {
    const auto& c = f.curve;
    const calibrate::FitQuality q = c.fit.value_or(calibrate::FitQuality{});
    out += fmt::format(
        "{:<15}{:<15}{:>8}  {:<24}{:>10.2f}{:>11.2f}{:>7.3f}{:>8.4f}{:>8.1f}%{:>8.1f}%\n", c.op,
        c.algorithm + "/" + c.protocol, fmt::format("{}x{}", c.nodes, c.gpus_per_node),
        fmt::format("{:.0f}-{:.0f}", c.min_bytes, c.max_bytes), c.latency_us.value,
        f.model_latency_us, c.efficiency.value, q.r2, q.median_abs_error_pct,
        q.loo_median_abs_error_pct);
  }
  for (const auto& h : fit.hops)
    out += fmt::format("step latency {}: {:+.2f} us per step beyond NCCL's table ({} scale(s))\n",
                       h.cell, h.after_us, h.scales);
  return out;
}

}  // namespace twin::sim
