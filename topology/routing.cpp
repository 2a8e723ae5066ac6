#include "topology/routing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/rng.hpp"

namespace twin::topology {

Router::Router(const Fabric& fabric, const FabricState* state, RoutingMode mode, std::uint64_t seed)
    : fabric_(&fabric), state_(state), mode_(mode), seed_(seed) {}

Router::Router(const Fabric& fabric, const FabricState* state)
    : Router(fabric, state, fabric.spec().routing, fabric.spec().routing_seed) {}

void Router::append(Route& route, LinkId link, double fraction) const {
  route.hops.push_back(Hop{link, fraction});
}

void Router::unreachable(int src_nic, int dst_nic, const char* why) const {
  throw core::Error("route",
                    fmt::format("{} -> {}", fabric_->node_name(fabric_->nic(src_nic)),
                                fabric_->node_name(fabric_->nic(dst_nic))),
                    std::string("unreachable: ") + why);
}

std::vector<int> Router::usable_core_ports(int s_src, int s_dst) const {
  std::vector<int> ports;
  const int u2 = fabric_->geometry().spine_up;
  for (int q = 0; q < u2; ++q) {
    if (usable(fabric_->cable(fabric_->spine_up_cable(s_src, q)).up) &&
        usable(fabric_->cable(fabric_->spine_up_cable(s_dst, q)).down))
      ports.push_back(q);
  }
  return ports;
}

int Router::pick(int preferred, int count, const std::vector<int>& usable_ports) const {
  // The first usable port at or after the preferred one, cyclically: a deterministic reroute.
  for (int i = 0; i < count; ++i) {
    const int p = (preferred + i) % count;
    if (std::binary_search(usable_ports.begin(), usable_ports.end(), p)) return p;
  }
  return -1;
}

Route Router::nic_route(int src_nic, int dst_nic, std::uint64_t flow_label) const {
  const Fabric& f = *fabric_;
  const FatTreeGeometry& g = f.geometry();
  if (src_nic < 0 || src_nic >= f.nic_count() || dst_nic < 0 || dst_nic >= f.nic_count())
    throw core::Error("route", fmt::format("nic {} -> nic {}", src_nic, dst_nic),
                      fmt::format("NIC index out of range [0, {})", f.nic_count()));
  Route route;
  if (src_nic == dst_nic) return route;

  const Cable& src_cable = f.cable(f.nic_cable(src_nic));
  const Cable& dst_cable = f.cable(f.nic_cable(dst_nic));
  if (!usable(src_cable.up)) unreachable(src_nic, dst_nic, "the source NIC's link is down");
  if (!usable(dst_cable.down)) unreachable(src_nic, dst_nic, "the destination NIC's link is down");
  const int ls = f.leaf_of_nic(src_nic), ld = f.leaf_of_nic(dst_nic);
  const int d = f.endpoint_index(dst_nic);

  append(route, src_cable.up, 1.0);
  if (ls == ld) {
    append(route, dst_cable.down, 1.0);
    route.fabric_hops = 2;
  } else {
    const bool same_pod = g.tiers == 2 || g.pod_of_leaf(ls) == g.pod_of_leaf(ld);
    // For each usable leaf up-port p, the usable spine up-ports (cross-pod only).
    std::vector<int> ports;
    std::vector<std::vector<int>> core_ports(static_cast<std::size_t>(g.leaf_up));
    for (int p = 0; p < g.leaf_up; ++p) {
      const Cable& up = f.cable(f.leaf_up_cable(ls, p));
      const Cable& down = f.cable(f.leaf_up_cable(ld, p));
      if (!usable(up.up) || !usable(down.down)) continue;
      if (!same_pod) {
        core_ports[p] = usable_core_ports(g.spine_of_leaf_port(ls, p), g.spine_of_leaf_port(ld, p));
        if (core_ports[p].empty()) continue;
      }
      ports.push_back(p);
    }
    if (ports.empty()) unreachable(src_nic, dst_nic, "every up-path is failed");

    // Chosen ports with the fraction of the flow each one carries.
    std::vector<std::pair<int, double>> leaf_choice;
    if (mode_ == RoutingMode::adaptive) {
      for (int p : ports) leaf_choice.emplace_back(p, 1.0 / static_cast<double>(ports.size()));
    } else {
      const int preferred =
          mode_ == RoutingMode::dmodk
              ? d % g.leaf_up
              : static_cast<int>(core::hash_combine(seed_, static_cast<std::uint64_t>(src_nic),
                                                    static_cast<std::uint64_t>(dst_nic),
                                                    flow_label * 2) %
                                 static_cast<std::uint64_t>(g.leaf_up));
      leaf_choice.emplace_back(pick(preferred, g.leaf_up, ports), 1.0);
    }

    for (auto [p, share] : leaf_choice) append(route, f.cable(f.leaf_up_cable(ls, p)).up, share);
    if (!same_pod) {
      for (auto [p, share] : leaf_choice) {
        const int s_src = g.spine_of_leaf_port(ls, p), s_dst = g.spine_of_leaf_port(ld, p);
        const std::vector<int>& qs = core_ports[p];
        std::vector<std::pair<int, double>> core_choice;
        if (mode_ == RoutingMode::adaptive) {
          for (int q : qs) core_choice.emplace_back(q, share / static_cast<double>(qs.size()));
        } else {
          const int preferred =
              mode_ == RoutingMode::dmodk
                  ? (d / g.leaf_up) % g.spine_up
                  : static_cast<int>(core::hash_combine(seed_, static_cast<std::uint64_t>(src_nic),
                                                        static_cast<std::uint64_t>(dst_nic),
                                                        flow_label * 2 + 1) %
                                     static_cast<std::uint64_t>(g.spine_up));
          core_choice.emplace_back(pick(preferred, g.spine_up, qs), share);
        }
        for (auto [q, q_share] : core_choice)
          append(route, f.cable(f.spine_up_cable(s_src, q)).up, q_share);
        for (auto [q, q_share] : core_choice)
          append(route, f.cable(f.spine_up_cable(s_dst, q)).down, q_share);
      }
    }
    for (auto [p, share] : leaf_choice) append(route, f.cable(f.leaf_up_cable(ld, p)).down, share);
    append(route, dst_cable.down, 1.0);
    route.fabric_hops = same_pod ? 4 : 6;
  }

  // Latency along the first path: every path has the same number and kinds of hops.
  route.latency_s = f.link(src_cable.up).latency_s + f.link(dst_cable.down).latency_s;
  if (route.fabric_hops >= 4) {
    const double switch_link_s = f.link(route.hops[1].link).latency_s;
    route.latency_s += switch_link_s * (route.fabric_hops - 2);
  }
  return route;
}

Route Router::gpu_route(int src_gpu, int dst_gpu, std::uint64_t flow_label) const {
  const Fabric& f = *fabric_;
  if (src_gpu < 0 || src_gpu >= f.gpu_count() || dst_gpu < 0 || dst_gpu >= f.gpu_count())
    throw core::Error("route", fmt::format("gpu {} -> gpu {}", src_gpu, dst_gpu),
                      fmt::format("GPU index out of range [0, {})", f.gpu_count()));
  Route route;
  if (src_gpu == dst_gpu) return route;
  auto require = [&](LinkId link) {
    if (!usable(link))
      throw core::Error(
          "route",
          fmt::format("{} -> {}", f.node_name(f.gpu(src_gpu)), f.node_name(f.gpu(dst_gpu))),
          fmt::format("unreachable: {} -> {} is down", f.node_name(f.link(link).src),
                      f.node_name(f.link(link).dst)));
    return link;
  };
  if (f.host_of_gpu(src_gpu) == f.host_of_gpu(dst_gpu)) {
    append(route, require(f.nvlink_up(src_gpu)), 1.0);
    append(route, require(f.nvlink_down(dst_gpu)), 1.0);
    route.latency_s =
        f.link(f.nvlink_up(src_gpu)).latency_s + f.link(f.nvlink_down(dst_gpu)).latency_s;
    return route;
  }
  append(route, require(f.pcie_up(src_gpu)), 1.0);
  Route fabric_part = nic_route(f.nic_of_gpu(src_gpu), f.nic_of_gpu(dst_gpu), flow_label);
  route.hops.insert(route.hops.end(), fabric_part.hops.begin(), fabric_part.hops.end());
  append(route, require(f.pcie_down(dst_gpu)), 1.0);
  route.fabric_hops = fabric_part.fabric_hops;
  route.latency_s = fabric_part.latency_s + f.link(f.pcie_up(src_gpu)).latency_s +
                    f.link(f.pcie_down(dst_gpu)).latency_s;
  return route;
}

}  // namespace twin::topology
