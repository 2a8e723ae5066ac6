#include "failure_models/failures.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"

namespace twin::failures {

std::vector<Cause> llama3_causes() {
  // Exposure of the 54-day, 2,048-node run: GPUs and NICs 16,384, nodes 2,048, cables 49,152.
  constexpr double kDays = 54, kGpus = 16384, kNodes = 2048, kNics = 16384, kCables = 3 * 16384.0;
  auto per = [&](Exposure e, double count) {
    const double units = e == Exposure::gpu    ? kGpus
                         : e == Exposure::node ? kNodes
                         : e == Exposure::nic  ? kNics
                                               : kCables;
    return count / (units * kDays);
  };
  return {
      {"Faulty GPU", "GPU", Exposure::gpu, per(Exposure::gpu, 148)},
      {"GPU HBM3 Memory", "GPU", Exposure::gpu, per(Exposure::gpu, 72)},
      {"Software Bug", "Dependency", Exposure::node, per(Exposure::node, 54)},
      {"Network Switch/Cable", "Network", Exposure::cable, per(Exposure::cable, 35)},
      {"Host Maintenance", "Unplanned Maintenance", Exposure::node, per(Exposure::node, 32)},
      {"GPU SRAM Memory", "GPU", Exposure::gpu, per(Exposure::gpu, 19)},
      {"GPU System Processor", "GPU", Exposure::gpu, per(Exposure::gpu, 17)},
      {"NIC", "Host", Exposure::nic, per(Exposure::nic, 7)},
      {"NCCL Watchdog Timeouts", "Unknown", Exposure::node, per(Exposure::node, 7)},
      {"Silent Data Corruption", "GPU", Exposure::gpu, per(Exposure::gpu, 6), true},
      {"GPU Thermal Interface + Sensor", "GPU", Exposure::gpu, per(Exposure::gpu, 6)},
      {"SSD", "Host", Exposure::node, per(Exposure::node, 3)},
      {"Power Supply", "Host", Exposure::node, per(Exposure::node, 3)},
      {"Server Chassis", "Host", Exposure::node, per(Exposure::node, 2)},
      {"IO Expansion Board", "Host", Exposure::node, per(Exposure::node, 2)},
      {"Dependency", "Dependency", Exposure::node, per(Exposure::node, 2)},
      {"CPU", "Host", Exposure::node, per(Exposure::node, 2)},
      {"System Memory", "Host", Exposure::node, per(Exposure::node, 2)},
  };
}

double node_failure_rate_lower_bound(const FailureSpec& f, int nodes) {
  double per_node_day = 0;
  if (f.node_mtbf_hours > 0) {
    per_node_day = 24.0 / f.node_mtbf_hours;
  } else {
    for (const auto& cause : llama3_causes())
      if (cause.exposure == Exposure::node) per_node_day += cause.per_unit_day;
  }
  return f.rate_multiplier * per_node_day * nodes / 86400.0;
}

double best_efficiency(double rate_per_s, double checkpoint_s, double restart_s, double work_s) {
  if (!(rate_per_s > 0)) return 1.0;
  const double mtbf = 1.0 / rate_per_s;
  // Daly (2006), exponential failures: wall / work = (M / tau) e^{R/M} (e^{(tau + C)/M} - 1),
  // minimized over the interval tau on a log grid from 1 s to the whole run.
  double best = 0;
  for (double tau = 1.0; tau <= std::max(1.0, work_s) * 1.0001; tau *= 1.25) {
    const double exponent = restart_s / mtbf + std::log(std::expm1((tau + checkpoint_s) / mtbf));
    const double efficiency = std::exp(-(std::log(mtbf / tau) + exponent));
    best = std::max(best, std::isfinite(efficiency) ? efficiency : 0.0);
  }
  return best;
}

void check_progress(const FailureSpec& f, const RecoverySpec& r, int nodes, double run_days) {
  const double rate = node_failure_rate_lower_bound(f, nodes);
  const double checkpoint_s = r.storage_write_GBps > 0 ? 0.0 : r.checkpoint_write_s;
  const double restart_s = (r.detection_min + r.restart_min) * 60.0;
  const double efficiency = best_efficiency(rate, checkpoint_s, restart_s, run_days * 86400);
  if (efficiency >= kMinProgress) return;
  throw core::Error(
      f.rate_multiplier != 1.0 ? "failures.rate_multiplier" : "failures.node_mtbf_hours",
      fmt::format("{}", f.rate_multiplier != 1.0 ? f.rate_multiplier : f.node_mtbf_hours),
      fmt::format("the job would fail every {:.3g} s (host causes alone, {} nodes); with a "
                  "{:.0f} s checkpoint and {:.0f} s restart it could make progress at most "
                  "{:.2g}% of the time at any checkpoint interval (Daly's model), so the campaign "
                  "would never finish",
                  1.0 / rate, nodes, checkpoint_s, restart_s, 100 * efficiency));
}

void validate(const FailureSpec& f, const RecoverySpec& r, int nodes, double run_days) {
  auto non_negative = [](double v, const char* field) {
    if (!(v >= 0)) throw core::Error(field, fmt::format("{}", v), "must not be negative");
  };
  non_negative(f.rate_multiplier, "failures.rate_multiplier");
  non_negative(f.node_mtbf_hours, "failures.node_mtbf_hours");
  non_negative(f.straggler_rate_per_node_day, "failures.straggler_rate_per_node_day");
  non_negative(f.straggler_hours, "failures.straggler_hours");
  non_negative(f.gc_pause_ms, "failures.gc_pause_ms");
  non_negative(f.gc_drift_s_per_hour, "failures.gc_drift_s_per_hour");
  non_negative(f.gc_sync_minutes, "failures.gc_sync_minutes");
  non_negative(f.sdc_detection_hours, "failures.sdc_detection_hours");
  if (!(f.lemon_fraction >= 0 && f.lemon_fraction <= 1))
    throw core::Error("failures.lemon_fraction", fmt::format("{}", f.lemon_fraction),
                      "must be within [0, 1]");
  if (!(f.lemon_factor >= 1))
    throw core::Error("failures.lemon_factor", fmt::format("{}", f.lemon_factor), "must be >= 1");
  if (!(f.weibull_shape > 0))
    throw core::Error("failures.weibull_shape", fmt::format("{}", f.weibull_shape),
                      "must be positive (1: exponential; < 1: infant mortality)");
  if (!(f.straggler_factor >= 1))
    throw core::Error("failures.straggler_factor", fmt::format("{}", f.straggler_factor),
                      "must be >= 1");
  if (!(f.gc_period_s > 0))
    throw core::Error("failures.gc_period_s", fmt::format("{}", f.gc_period_s), "must be positive");
  non_negative(r.checkpoint_interval_min, "recovery.checkpoint_interval_min");
  non_negative(r.checkpoint_write_s, "recovery.checkpoint_write_s");
  non_negative(r.restart_min, "recovery.restart_min");
  non_negative(r.detection_min, "recovery.detection_min");
  non_negative(r.repair_hours, "recovery.repair_hours");
  non_negative(r.storage_write_GBps, "recovery.storage_write_GBps");
  non_negative(r.storage_read_GBps, "recovery.storage_read_GBps");
  non_negative(r.nccl_init_s_per_1k_gpus, "recovery.nccl_init_s_per_1k_gpus");
  non_negative(f.leaf_switch_mtbf_hours, "failures.leaf_switch_mtbf_hours");
  non_negative(f.power_domain_mtbf_hours, "failures.power_domain_mtbf_hours");
  non_negative(f.switch_repair_hours, "failures.switch_repair_hours");
  non_negative(f.degraded_link_rate_per_cable_day, "failures.degraded_link_rate_per_cable_day");
  non_negative(f.degraded_link_hours, "failures.degraded_link_hours");
  if (!(f.degraded_link_factor > 0 && f.degraded_link_factor <= 1))
    throw core::Error(
        "failures.degraded_link_factor", fmt::format("{}", f.degraded_link_factor),
        "must be within (0, 1]: the fraction of its bandwidth a degraded cable keeps");
  if (f.power_domain_nodes < 1)
    throw core::Error("failures.power_domain_nodes", std::to_string(f.power_domain_nodes),
                      "must be at least 1");
  if (r.checkpoint_interval_min * 60 > run_days * 86400)
    throw core::Error(
        "recovery.checkpoint_interval_min", fmt::format("{}", r.checkpoint_interval_min),
        fmt::format("longer than the whole failure-free run ({:.1f} days)", run_days));
  if (r.checkpoint_write_s > run_days * 86400)
    throw core::Error(
        "recovery.checkpoint_write_s", fmt::format("{}", r.checkpoint_write_s),
        fmt::format("one checkpoint would take longer than the whole failure-free run ({:.1f} "
                    "days)",
                    run_days));
  check_progress(f, r, nodes, run_days);
  if (r.hot_spares < 0 || r.hot_spares > nodes)
    throw core::Error("recovery.hot_spares", std::to_string(r.hot_spares),
                      fmt::format("must be between 0 and the job's {} nodes", nodes));
}

double young_daly_interval_s(double checkpoint_s, double mtbf_s) {
  return std::sqrt(2.0 * checkpoint_s * mtbf_s);
}

}  // namespace twin::failures
