#pragma once
/// The network engine interface and the model both backends implement.
///
/// Model: fluid, flow-level max-min fair sharing of directed links.
///   Each active flow f has a rate r_f; a link l of capacity C_l carries sum_f a_fl r_f, where
///   a_fl is the fraction of f routed over l (1 on a single path). Rates are the weighted max-min
///   fair allocation: with w_f the flow's weight (1 unless it stands for w_f member flows), no
///   share r_f / w_f can grow without shrinking one that is no larger, subject to
///   sum_f a_fl r_f <= C_l for every link. Progressive filling computes it: raise every unfrozen
///   share together (r_f = w_f * level) until a link saturates, i.e. level reaches
///   (C_l - frozen rates on l) / sum_unfrozen a_fl w_f, freeze the flows through it, repeat.
///   A flow of weight k is thus exactly k unit-weight flows on its links.
///   Rates are recomputed whenever a flow starts or ends; between events they are constant, so
///   a flow of B bytes finishes when the integral of its rate reaches B.
///   Latency: a flow waits its latency before it uses bandwidth (the CM02 convention).
/// Assumptions: per-flow fairness independent of path length (InfiniBand's credit-based
/// link-level flow control, not TCP's RTT-unfairness); no packet-level effects (head-of-line
/// blocking, congestion trees) — those belong in the calibrated efficiency curves.

#include <memory>
#include <string>

#include "netsim/flow.hpp"

namespace twin::netsim {

class Engine {
 public:
  virtual ~Engine() = default;
  /// Runs every flow to completion on links of the given capacities (bytes/s per LinkId).
  virtual FlowResult run(const FlowSet& flows, const std::vector<double>& capacity_Bps) = 0;
  [[nodiscard]] virtual std::string name() const = 0;
};

/// "native" (ours, always available) or "simgrid" (reference; GPU-to-GPU single-path flows).
std::unique_ptr<Engine> make_engine(const std::string& name);

}  // namespace twin::netsim
