#pragma once
/// Calibration of the collective model from nccl-tests logs, at one scale or several, through
/// the mechanism: NCCL's cost model (netsim/nccl_model.hpp) and the flow engine.
///
/// 1. Step latency. The latency-bound rows of the logs (at most 1 MiB, time within 2x the run's
///    fastest) fix
///    how much latency every network step (multi-node logs) or NVLink step (one-node logs) adds
///    beyond NCCL's table: one offset per hop kind, added to every algorithm's and protocol's
///    cell, found by golden-section search on the squared log error of the simulated times
///    (the simulator picks the algorithm and protocol as NCCL's tuner would). Logs at several
///    scales fit it together; because the offset multiplies the algorithm's steps, a profile
///    fitted at 2 nodes carries it to 16 through the mechanism. Assumption: a fabric differs
///    from the one NCCL's table was tuned on per message (EFA, RoCE and TCP transports add
///    latency to every send), not per call.
/// 2. Curves. For every row, the (algorithm, protocol) the profile now picks, the link-limited
///    transfer time T_flow of that algorithm on the log's fabric and the protocol's fraction f;
///    rows of one (op, algorithm, protocol, scope) at one scale are fitted (weighted least
///    squares on relative residuals, one or two size segments as calibrate/fit.hpp) to
///      t = L + (T_flow / f) / E
///    giving the measured latency L at that scale and the path efficiency E: a curve per scale.
///    Rows whose transfer is under 20 % of their time fit L alone. Repeated while the picks
///    change (at most 4 passes).

#include <string>
#include <vector>

#include "calibrate/calibration.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "twin/scenario.hpp"

namespace twin::sim {

struct FittedCurve {
  calibrate::CollectiveCurve curve;
  double model_latency_us = 0;  ///< NCCL's model at that scale with the fitted hop latency
};

struct HopFit {
  std::string cell;  ///< e.g. "network.tree.ll"
  double before_us = 0, after_us = 0;
  int scales = 0;  ///< distinct node counts it was fitted from
};

struct CollectiveFit {
  std::vector<FittedCurve> curves;
  std::vector<HopFit> hops;
};

/// Fits the logs into `profile` (curves replaced per scale, hop latencies updated). The fabric
/// of each log is the scenario's resized to the log's nodes x GPUs per node. Throws
/// core::Error for a log without a scale, a profile without NCCL tables, or a log whose rows
/// cannot be fitted.
CollectiveFit fit_collectives(const Scenario& scenario,
                              const std::vector<calibrate::NcclTestsLog>& logs,
                              calibrate::Profile& profile, const calibrate::FitOptions& options);

std::string fit_table(const CollectiveFit& fit);

}  // namespace twin::sim
