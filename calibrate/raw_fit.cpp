// Fits of clustertwin-calib's raw measurements (GEMM shapes, HBM copies, collective sweeps)
// into profile figures, and the measured-vs-shipped table. Declarations and the model each fit
// assumes: calibrate/raw_data.hpp.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "calibrate/calibration.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/raw_data.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"

namespace twin::calibrate {

double fit_gemm_into(const std::vector<GemmSample>& samples, const std::string& dtype,
                     Profile& profile, const std::string& origin) {
  if (samples.size() < 2)
    throw core::Error("gemm." + dtype, std::to_string(samples.size()),
                      "need at least 2 GEMM shapes to fit");
  const double peak = profile.peak_flops(dtype) / 1e12;
  for (const auto& s : samples)
    if (!(s.tflops > 0) || s.tflops > peak)
      throw core::Error(
          fmt::format("gemm.{} {:.0f}x{:.0f}x{:.0f}", dtype, s.m, s.n, s.k),
          fmt::format("{:.1f} TFLOP/s", s.tflops),
          fmt::format("outside (0, {:.0f}], the datasheet peak of profile '{}': a measurement "
                      "error (wrong base profile, or a timing that missed work); not fitted",
                      peak, profile.name));
  double best_error = std::numeric_limits<double>::infinity();
  double best_half = 0, best_peak_eff = 0;
  Profile trial = profile;
  for (double half = 8; half <= 8192; half *= 1.0905077326652577) {  // 2^(1/8) steps
    trial.gemm_half_dim.value = half;
    trial.gemm_peak_efficiency.value = 1.0;
    // Least squares of measured = eff * peak * shape(m,n,k): eff = sum(x y) / sum(x x).
    double xy = 0, xx = 0;
    for (const auto& s : samples) {
      const double x = peak * trial.gemm_efficiency(s.m, s.n, s.k);
      xy += x * s.tflops;
      xx += x * x;
    }
    const double eff = xy / xx;
    if (!(eff <= 1.0)) continue;  // a peak efficiency above 1 is not a physical explanation
    std::vector<double> errors;
    for (const auto& s : samples)
      errors.push_back(
          std::abs(eff * peak * trial.gemm_efficiency(s.m, s.n, s.k) / s.tflops - 1.0));
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2];
    if (median < best_error) {
      best_error = median;
      best_half = half;
      best_peak_eff = eff;
    }
  }
  if (!std::isfinite(best_error))
    throw core::Error("gemm." + dtype, "",
                      "no half dimension explains the shapes with a peak efficiency <= 1");
  const std::string source =
      fmt::format("fitted: {} ({} {} shapes)", origin, samples.size(), dtype);
  profile.gemm_half_dim = {best_half, source};
  profile.gemm_peak_efficiency = {best_peak_eff, source};
  return 100.0 * best_error;
}

void fit_hbm_into(const std::vector<HbmSample>& samples, double l2_bytes, Profile& profile,
                  const std::string& origin) {
  if (samples.empty()) throw core::Error("hbm", "", "no HBM copy measurements to fit");
  if (!(l2_bytes > 0))
    throw core::Error("l2_bytes", fmt::format("{}", l2_bytes),
                      "the GPU's L2 size is unknown, so copies served from L2 cannot be told "
                      "from HBM-bound ones");
  std::vector<double> plateau;
  double smallest = 0, largest = 0, low = 0, high = 0;
  for (const auto& s : samples) {
    if (2 * s.bytes < kHbmMinWorkingSetOverL2 * l2_bytes) continue;
    if (plateau.empty() || s.bytes < smallest) smallest = s.bytes;
    if (plateau.empty() || s.bytes > largest) largest = s.bytes;
    if (plateau.empty() || s.GBps < low) low = s.GBps;
    if (plateau.empty() || s.GBps > high) high = s.GBps;
    plateau.push_back(s.GBps);
  }
  if (plateau.empty())
    throw core::Error("hbm", "",
                      fmt::format("no copy has a working set of at least {:g} x the {:.0f} MB L2; "
                                  "every measurement may be served from L2",
                                  kHbmMinWorkingSetOverL2, l2_bytes / 1e6));
  const double bandwidth = core::median(plateau);
  const double efficiency = bandwidth / profile.hbm_GBps.value;
  if (!(efficiency > 0) || efficiency > 1.0)
    throw core::Error("hbm_efficiency", fmt::format("{:.3f}", efficiency),
                      fmt::format("measured copy plateau {:.0f} GB/s against the datasheet "
                                  "{:.0f} GB/s of profile '{}': a measurement error (wrong base "
                                  "profile, or copies resident in L2); not fitted",
                                  bandwidth, profile.hbm_GBps.value, profile.name));
  profile.hbm_efficiency = {
      efficiency,
      fmt::format("measured: {} (median copy bandwidth {:.0f} GB/s of {:.0f} over {} sizes "
                  "{:.0f}-{:.0f} MiB, {:.1f}% spread, working sets >= {:g} x L2)",
                  origin, bandwidth, profile.hbm_GBps.value, plateau.size(), smallest / 1048576,
                  largest / 1048576, 100 * (high - low) / bandwidth, kHbmMinWorkingSetOverL2)};
}

RawFitReport fit_raw_into(const RawCalibration& raw, Profile& profile, const std::string& origin) {
  RawFitReport report;
  if (const auto it = raw.gemm.find("bf16"); it != raw.gemm.end() && it->second.size() >= 2) {
    const double error = fit_gemm_into(it->second, "bf16", profile, origin);
    report.lines.push_back(fmt::format(
        "gemm bf16: peak efficiency {:.3f}, half dimension {:.0f}, median error {:.1f}% over {} "
        "shapes",
        profile.gemm_peak_efficiency.value, profile.gemm_half_dim.value, error, it->second.size()));
  }
  if (!raw.hbm.empty()) {
    fit_hbm_into(raw.hbm, raw.l2_bytes, profile, origin);
    report.lines.push_back(fmt::format("hbm: efficiency {:.3f} of {:.0f} GB/s",
                                       profile.hbm_efficiency.value, profile.hbm_GBps.value));
  }
  for (const auto& [op, samples] : raw.collectives) {
    if (samples.ranks < 2 || samples.nodes < 1 || samples.size_bytes.size() < 2) continue;
    if (samples.ranks % samples.nodes != 0)
      throw core::Error("collectives." + op,
                        fmt::format("{} ranks on {} nodes", samples.ranks, samples.nodes),
                        "ranks are not spread evenly over nodes");
    NcclTestsLog log;
    log.source = origin;
    log.ranks = samples.ranks;
    log.nodes = samples.nodes;
    log.gpus_per_node = samples.ranks / samples.nodes;
    log.gpu_model = raw.gpu;
    NcclTestsRun run;
    run.op = op;
    for (std::size_t i = 0; i < samples.size_bytes.size(); ++i) {
      NcclTestsRow row;
      row.size_bytes = samples.size_bytes[i];
      row.time_us = samples.time_us[i];
      row.algbw_GBps = samples.algbw_GBps[i];
      row.busbw_GBps = samples.busbw_GBps[i];
      run.rows.push_back(row);
    }
    log.runs.push_back(run);
    FitOptions options;
    options.measured_on = raw.date;
    for (const auto& fitted : fit_log_into(log, profile, options))
      for (const auto& seg : fitted.segments)
        report.lines.push_back(fmt::format(
            "{} {} {}x{}: latency {:.2f} us, bus bandwidth {:.1f} GB/s ({:.0f}-{:.0f} B)", op,
            seg.curve.algorithm, fitted.nodes, fitted.gpus_per_node, seg.fit.latency_us,
            seg.fit.bus_bandwidth_GBps, seg.fit.min_bytes, seg.fit.max_bytes));
  }
  return report;
}

namespace {

std::string size_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g}{}", bytes, units[u]);
}

std::string row(const std::string& name, double shipped, double measured, const char* unit) {
  const std::string ratio =
      shipped > 0 && measured > 0 ? fmt::format("{:.3f}", measured / shipped) : "-";
  const auto value = [](double v) { return v > 0 ? fmt::format("{:.4g}", v) : "-"; };
  const std::string units = *unit != '\0' ? std::string("  ") + unit : std::string();
  return fmt::format("{:<56}{:>12}{:>12}{:>10}{}\n", name, value(shipped), value(measured), ratio,
                     units);
}

}  // namespace

std::string side_by_side(const Profile& shipped, const Profile& measured) {
  std::string text =
      fmt::format("{:<56}{:>12}{:>12}{:>10}\n", "figure", shipped.name, "measured", "ratio");
  text += row("gemm_peak_efficiency", shipped.gemm_peak_efficiency.value,
              measured.gemm_peak_efficiency.value, "");
  text += row("gemm_half_dim", shipped.gemm_half_dim.value, measured.gemm_half_dim.value, "");
  for (double d : {1024.0, 4096.0, 8192.0})
    text += row(fmt::format("bf16 GEMM {0:.0f}x{0:.0f}x{0:.0f}", d),
                shipped.peak_flops("bf16") / 1e12 * shipped.gemm_efficiency(d, d, d),
                measured.peak_flops("bf16") / 1e12 * measured.gemm_efficiency(d, d, d), "TFLOP/s");
  text += row("hbm_efficiency", shipped.hbm_efficiency.value, measured.hbm_efficiency.value, "");
  text += row("hbm achievable", shipped.hbm_GBps.value * shipped.hbm_efficiency.value,
              measured.hbm_GBps.value * measured.hbm_efficiency.value, "GB/s");
  for (const auto& curve : measured.collectives) {
    const double mid =
        curve.max_bytes > 0 ? std::sqrt(std::max(curve.min_bytes, 1.0) * curve.max_bytes) : 0;
    const CollectiveCurve* base = shipped.find_curve(curve.op, curve.algorithm, curve.scope, mid);
    if (curve.nodes == 0 ||
        (base != nullptr && base->bus_bandwidth_GBps.source == curve.bus_bandwidth_GBps.source &&
         base->min_bytes == curve.min_bytes))
      continue;  // not measured by this calibration
    // A shipped curve without a measured saturation bandwidth predicts efficiency x bound.
    double shipped_busbw = 0;
    if (base != nullptr)
      shipped_busbw = base->bus_bandwidth_GBps.value > 0
                          ? base->bus_bandwidth_GBps.value
                          : base->efficiency.value *
                                link_limited_busbw_GBps(curve.op, curve.algorithm, curve.nodes,
                                                        curve.gpus_per_node, shipped);
    const std::string name =
        fmt::format("{} {} {}x{} {}-{}", curve.op, curve.algorithm, curve.nodes,
                    curve.gpus_per_node, size_text(curve.min_bytes), size_text(curve.max_bytes));
    text += row(name + " busbw", shipped_busbw, curve.bus_bandwidth_GBps.value, "GB/s");
    text += row(name + " latency", base ? base->latency_us.value : 0, curve.latency_us.value, "us");
  }
  return text;
}

}  // namespace twin::calibrate
