#pragma once
/// Flows: the unit of work of the network engines.
///
/// A flow moves `bytes` along a route (links with the fraction of the flow's rate each carries).
/// It becomes ready at `start_s` or when every flow in `after` has finished, whichever is later;
/// it then waits its `latency_s` (propagation, forwarding and per-message overhead) without
/// using bandwidth, and then transfers at the rate the engine's sharing model gives it.
///
/// A flow of `weight` k stands for k identical member flows on its route, each carrying
/// bytes / k: it takes k shares wherever it competes (netsim/engine.hpp). Max-min fair sharing
/// gives flows with the same links the same rate, so the k members would move in lockstep and
/// finish together; one flow of weight k is therefore exactly the k of them (the aggregation
/// of all-to-all traffic relies on it: netsim/collective.hpp).

#include <cstdint>
#include <string>
#include <vector>

#include "topology/fabric_state.hpp"
#include "topology/routing.hpp"

namespace twin::netsim {

struct Flow {
  int src_gpu = -1;  ///< GPU endpoints (-1: a flow that ends in a switch, e.g. NVLS reduction)
  int dst_gpu = -1;
  double bytes = 0;
  double start_s = 0;
  double latency_s = 0;
  double weight = 1;                 ///< member flows this flow stands for (> 0)
  std::vector<std::uint32_t> after;  ///< indices of flows that must finish first
  std::vector<topology::Hop> hops;
};

struct FlowSet {
  std::vector<Flow> flows;

  /// Adds a GPU-to-GPU flow routed by `router`; latency = route latency + `overhead_s`.
  std::uint32_t add(const topology::Router& router, int src_gpu, int dst_gpu, double bytes,
                    double start_s = 0, double overhead_s = 0,
                    std::vector<std::uint32_t> after = {}, std::uint64_t flow_label = 0);
};

struct FlowResult {
  std::vector<double> transfer_start_s;  ///< when each flow began using bandwidth
  std::vector<double> finish_s;
  std::vector<double> link_bytes;  ///< bytes carried per LinkId
  double makespan_s = 0;
  std::uint64_t rate_solves = 0;  ///< max-min (re)solves performed
};

/// Link capacities (bytes per second) for a fabric in a state: each link's bandwidth times its
/// capacity factor, 0 when unusable.
std::vector<double> link_capacities(const topology::Fabric& fabric,
                                    const topology::FabricState* state = nullptr);

}  // namespace twin::netsim
