#include "netsim/flow.hpp"

namespace twin::netsim {

std::uint32_t FlowSet::add(const topology::Router& router, int src_gpu, int dst_gpu, double bytes,
                           double start_s, double overhead_s, std::vector<std::uint32_t> after,
                           std::uint64_t flow_label) {
  topology::Route route = router.gpu_route(src_gpu, dst_gpu, flow_label);
  flows.push_back(Flow{src_gpu, dst_gpu, bytes, start_s, route.latency_s + overhead_s, 1.0,
                       std::move(after), std::move(route.hops)});
  return static_cast<std::uint32_t>(flows.size() - 1);
}

std::vector<double> link_capacities(const topology::Fabric& fabric,
                                    const topology::FabricState* state) {
  std::vector<double> capacity(fabric.link_count());
  for (std::size_t i = 0; i < capacity.size(); ++i) {
    const auto id = topology::LinkId::from_index(i);
    capacity[i] = state != nullptr ? state->bandwidth_Bps(id) : fabric.link(id).bandwidth_Bps;
  }
  return capacity;
}

}  // namespace twin::netsim
