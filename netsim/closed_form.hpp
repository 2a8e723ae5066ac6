#pragma once
/// Closed-form max-min for phases of flows that start together, in two cases the engine would
/// spend most of its time on: one round, and rates that never change.
///
/// 1. One round (solve_single_level).
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
/// bottleneck level, flows that finish at different times, a failed link) returns nothing.

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

/// 2. Rates that never change (solve_fixed_allocation). Progressive filling to the end, per
/// component, gives every flow its share s_f = r_f / w_f and the link it froze on, its
/// bottleneck b(f): saturated, and no flow on it has a larger share. When flows end, the
/// allocation of the others stays max-min (hence, max-min being unique, unchanged) as long as
/// no ending flow crossed the bottleneck of a flow still running: every remaining flow keeps a
/// saturated link on which its share is largest. So if no flow g with t_g < t_f crosses b(f)
/// (t = b / r, up to the engine's 1e-12 grouping of events), every flow runs at r_f from start
/// to end and the makespan is the last t_f. Flows carrying the same bytes per unit weight (the
/// members of an all-to-all) always qualify: the earlier ones have the larger shares, and a
/// flow with a larger share never crosses another's bottleneck. This covers all-to-alls with
/// several bottleneck levels — ECMP collisions, an oversubscribed tier — where the engine
/// re-solves a component of millions of flows at every distinct finish time. Rates come from
/// the same progressive filling as the engine's first solve; later finish times can differ from
/// the engine's (which re-solves) by floating-point rounding only.
std::optional<SingleLevelResult> solve_fixed_allocation(const RouteTable& routes,
                                                        const std::vector<double>& bytes,
                                                        const std::vector<double>& weight,
                                                        const std::vector<double>& capacity_Bps);

}  // namespace twin::netsim
