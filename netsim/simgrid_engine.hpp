#pragma once
/// The SimGrid 3.32 reference backend.
///
/// Each run builds a SimGrid platform from the flows' own routes — a Full-routing zone with one
/// host per GPU, one SHARED link per directed fabric link the flows cross, and for every GPU
/// pair the exact list of links our router chose — and drives it with one actor per flow that
/// sleeps until the flow's start plus latency, sends (Comm::sendto) and starts its dependents.
///
/// Settings: network/model:CM02 (max-min, no slow-start corrections), network/crosstraffic:0
/// and network/TCP-gamma:0 (measured: with the defaults a 4,096-flow permutation takes ~37 s
/// instead of ~0.1 s, and both are TCP effects meaningless for RDMA), lazy updates,
/// surf/precision (timing) 1e-13, contexts/stack-size 64 KiB and contexts/guard-size 0 (one
/// actor per flow: small stacks without guard pages keep 4,096-GPU collectives under Linux's
/// 65,530 memory mappings). Platform links carry zero latency and each flow's actor starts it
/// after its latency: CM02 weights a flow's share by 1/route latency (TCP's RTT unfairness),
/// which InfiniBand's credit-based flow control does not have; so both backends implement the
/// same model (netsim/engine.hpp).
///
/// SimGrid allows one engine per process (a second keeps the first one's clock), so every run
/// executes in a forked child process that returns its results through a pipe. Flows must go
/// GPU to GPU on one path (no adaptive splits, no switch-terminated NVLS flows). A flow of
/// weight k (a whole number) runs as k concurrent member comms of bytes / k: CM02 has no
/// per-comm share weight, and k members are what the weight stands for.

#include "netsim/engine.hpp"

namespace twin::netsim {

class SimgridEngine final : public Engine {
 public:
  FlowResult run(const FlowSet& flows, const std::vector<double>& capacity_Bps) override;
  [[nodiscard]] std::string name() const override { return "simgrid"; }
};

}  // namespace twin::netsim
