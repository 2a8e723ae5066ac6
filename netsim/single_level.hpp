#pragma once
/// Closed-form max-min for a phase of flows that start together and settle in one round.
///
/// Progressive filling (netsim/engine.hpp) on a connected component c of the flow-link graph
/// raises every share from 0; its first level is
///   lambda_c = min_{l in c} C_l / W_l,   W_l = sum_f a_fl w_f   (a: route fraction, w: weight).
/// If every flow of c crosses a link saturated at lambda_c (C_l - lambda_c W_l <= 1e-12 C_l, the
/// engine's own test), the allocation is final after that round: r_f = lambda_c w_f. If moreover
/// every flow of c has the same time b_f / r_f, all of c's flows finish together and no rate
/// ever changes: c is done at T_c = b_f / (lambda_c w_f). The phase's makespan is the last T_c
/// (with the engine's grouping of events closer than 1e-12 relative), and each link carries the
/// bytes of the flows routed over it times a_fl — exactly what NativeEngine computes for such a
/// phase, with the same floating-point operations, in O(hops) time and with routes stored as
/// bare link ids.
///
/// Symmetric patterns are this case: an all-to-all on a non-blocking fat tree with D-mod-k
/// routing is 2.1 million NIC-pair flows at 4,096 GPUs, every one limited by its NIC; building
/// the engine's per-flow event machinery for them costs gigabytes. Anything else (a second
/// bottleneck level, flows that finish at different times, a failed link) returns nothing and
/// goes to the engine.

#include <cstdint>
#include <optional>
#include <vector>

#include "topology/routing.hpp"

namespace twin::netsim {

/// Routes of many flows in one array: flow f crosses link[begin[f] .. begin[f+1]).
struct RouteTable {
  std::vector<std::uint32_t> begin{0};
  std::vector<std::uint32_t> link;
  /// Share of the flow on each hop; empty while every hop so far carries the whole flow.
  std::vector<double> fraction;

  void add(const std::vector<topology::Hop>& hops);
  [[nodiscard]] std::size_t size() const { return begin.size() - 1; }
  [[nodiscard]] double fraction_at(std::size_t hop) const {
    return fraction.empty() ? 1.0 : fraction[hop];
  }
};

struct SingleLevelResult {
  double makespan_s = 0;
  std::vector<double> link_bytes;  ///< per LinkId
};

/// The closed form above for flows starting at 0 without latency, or nothing when the phase is
/// not single-level. `bytes` and `weight` are per flow of `routes`.
std::optional<SingleLevelResult> solve_single_level(const RouteTable& routes,
                                                    const std::vector<double>& bytes,
                                                    const std::vector<double>& weight,
                                                    const std::vector<double>& capacity_Bps);

}  // namespace twin::netsim
