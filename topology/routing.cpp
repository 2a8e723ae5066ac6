#include "topology/routing.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "topology/lft.hpp"

namespace twin::topology {

Router::Router(const Fabric& fabric, const FabricState* state, RoutingMode mode, std::uint64_t seed)
    : fabric_(&fabric), state_(state), mode_(mode), seed_(seed) {
  if (fabric.is_explicit()) updown_ = std::make_shared<const UpDownRouting>(fabric, state);
}

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

const char* Router::end_problem(int src_nic, int dst_nic) const {
  const Fabric& f = *fabric_;
  if (!f.nic_present(src_nic)) return "the source NIC has no cable";
  if (!f.nic_present(dst_nic)) return "the destination NIC has no cable";
  if (!usable(f.cable(f.nic_cable(src_nic)).up)) return "the source NIC's link is down";
  if (!usable(f.cable(f.nic_cable(dst_nic)).down)) return "the destination NIC's link is down";
  return nullptr;
}

bool Router::leaf_port_usable(int ls, int ld, int p) const {
  const Fabric& f = *fabric_;
  return usable(f.cable(f.leaf_up_cable(ls, p)).up) && usable(f.cable(f.leaf_up_cable(ld, p)).down);
}

bool Router::core_port_usable(int s_src, int s_dst, int q) const {
  const Fabric& f = *fabric_;
  return usable(f.cable(f.spine_up_cable(s_src, q)).up) &&
         usable(f.cable(f.spine_up_cable(s_dst, q)).down);
}

void Router::append_deterministic(Route& route, int ls, int ld, bool same_pod, int src_nic,
                                  int dst_nic, std::uint64_t flow_label) const {
  const Fabric& f = *fabric_;
  const FatTreeGeometry& g = f.geometry();
  const int d = f.endpoint_index(dst_nic);
  const auto hashed = [&](std::uint64_t salt, int count) {
    return static_cast<int>(core::hash_combine(seed_, static_cast<std::uint64_t>(src_nic),
                                               static_cast<std::uint64_t>(dst_nic),
                                               flow_label * 2 + salt) %
                            static_cast<std::uint64_t>(count));
  };
  const bool dmodk = mode_ == RoutingMode::dmodk;
  const int p0 = dmodk ? d % g.leaf_up : hashed(0, g.leaf_up);
  const int q0 = same_pod ? 0 : (dmodk ? (d / g.leaf_up) % g.spine_up : hashed(1, g.spine_up));
  // The preferred ports, or on failure the next usable ones in cyclic order.
  for (int i = 0; i < g.leaf_up; ++i) {
    const int p = (p0 + i) % g.leaf_up;
    if (!leaf_port_usable(ls, ld, p)) continue;
    const int s_src = g.spine_of_leaf_port(ls, p), s_dst = g.spine_of_leaf_port(ld, p);
    int q = -1;
    for (int j = 0; !same_pod && j < g.spine_up; ++j) {
      if (core_port_usable(s_src, s_dst, (q0 + j) % g.spine_up)) {
        q = (q0 + j) % g.spine_up;
        break;
      }
    }
    if (!same_pod && q < 0) continue;
    append(route, f.cable(f.leaf_up_cable(ls, p)).up, 1.0);
    if (!same_pod) {
      append(route, f.cable(f.spine_up_cable(s_src, q)).up, 1.0);
      append(route, f.cable(f.spine_up_cable(s_dst, q)).down, 1.0);
    }
    append(route, f.cable(f.leaf_up_cable(ld, p)).down, 1.0);
    return;
  }
  unreachable(src_nic, dst_nic, "every up-path is failed");
}

void Router::append_adaptive(Route& route, int ls, int ld, bool same_pod, int src_nic,
                             int dst_nic) const {
  const Fabric& f = *fabric_;
  const FatTreeGeometry& g = f.geometry();
  // Usable leaf ports, each with its usable spine ports (cross-pod only).
  std::vector<std::pair<int, std::vector<int>>> paths;
  for (int p = 0; p < g.leaf_up; ++p) {
    if (!leaf_port_usable(ls, ld, p)) continue;
    std::vector<int> qs;
    const int s_src = g.spine_of_leaf_port(ls, p), s_dst = g.spine_of_leaf_port(ld, p);
    for (int q = 0; !same_pod && q < g.spine_up; ++q)
      if (core_port_usable(s_src, s_dst, q)) qs.push_back(q);
    if (!same_pod && qs.empty()) continue;
    paths.emplace_back(p, std::move(qs));
  }
  if (paths.empty()) unreachable(src_nic, dst_nic, "every up-path is failed");
  const double share = 1.0 / static_cast<double>(paths.size());
  for (const auto& [p, qs] : paths) append(route, f.cable(f.leaf_up_cable(ls, p)).up, share);
  for (const auto& [p, qs] : paths) {
    const int s_src = g.spine_of_leaf_port(ls, p), s_dst = g.spine_of_leaf_port(ld, p);
    const double q_share = share / static_cast<double>(qs.size());
    for (int q : qs) append(route, f.cable(f.spine_up_cable(s_src, q)).up, q_share);
    for (int q : qs) append(route, f.cable(f.spine_up_cable(s_dst, q)).down, q_share);
  }
  for (const auto& [p, qs] : paths) append(route, f.cable(f.leaf_up_cable(ld, p)).down, share);
}

Route Router::nic_route(int src_nic, int dst_nic, std::uint64_t flow_label) const {
  const Fabric& f = *fabric_;
  const FatTreeGeometry& g = f.geometry();
  if (src_nic < 0 || src_nic >= f.nic_count() || dst_nic < 0 || dst_nic >= f.nic_count())
    throw core::Error("route", fmt::format("nic {} -> nic {}", src_nic, dst_nic),
                      fmt::format("NIC index out of range [0, {})", f.nic_count()));
  Route route;
  if (src_nic == dst_nic) return route;
  if (const char* why = end_problem(src_nic, dst_nic)) unreachable(src_nic, dst_nic, why);

  const Cable& src_cable = f.cable(f.nic_cable(src_nic));
  const Cable& dst_cable = f.cable(f.nic_cable(dst_nic));
  const int ls = f.leaf_of_nic(src_nic), ld = f.leaf_of_nic(dst_nic);

  append(route, src_cable.up, 1.0);
  if (updown_ != nullptr) {
    route.latency_s = f.link(src_cable.up).latency_s + f.link(dst_cable.down).latency_s;
    route.fabric_hops = 2;
    if (f.forwarding_tables() != nullptr)  // the subnet's own tables, whatever the mode
      route.latency_s += f.forwarding_tables()->route_to(route, f, state_, ls, src_nic, dst_nic);
    else if (ls != ld)
      updown_->route_between_leaves(route, ls, ld, src_nic, dst_nic, mode_, seed_, flow_label);
    append(route, dst_cable.down, 1.0);
    return route;
  }
  if (ls == ld) {
    append(route, dst_cable.down, 1.0);
    route.fabric_hops = 2;
  } else {
    const bool same_pod = g.tiers == 2 || g.pod_of_leaf(ls) == g.pod_of_leaf(ld);
    route.fabric_hops = same_pod ? 4 : 6;
    if (mode_ == RoutingMode::adaptive)
      append_adaptive(route, ls, ld, same_pod, src_nic, dst_nic);
    else
      append_deterministic(route, ls, ld, same_pod, src_nic, dst_nic, flow_label);
    append(route, dst_cable.down, 1.0);
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
  // A GPU with several NICs sends over all of them, NIC j to the peer's NIC j (the same rail),
  // an equal share each, as NCCL spreads its channels: over the rails whose NICs and cables are
  // up. With none, rail 0 says why.
  Route fabric_part;
  if (f.nics_per_gpu() == 1) {
    fabric_part = nic_route(f.nic_of_gpu(src_gpu), f.nic_of_gpu(dst_gpu), flow_label);
  } else {
    std::vector<int> rails;
    for (int j = 0; j < f.nics_per_gpu(); ++j)
      if (end_problem(f.nic_of_gpu(src_gpu, j), f.nic_of_gpu(dst_gpu, j)) == nullptr)
        rails.push_back(j);
    if (rails.empty()) rails.push_back(0);
    for (const int j : rails) {
      const Route part = nic_route(f.nic_of_gpu(src_gpu, j), f.nic_of_gpu(dst_gpu, j), flow_label);
      for (const Hop& h : part.hops)
        fabric_part.hops.push_back({h.link, h.fraction / static_cast<double>(rails.size())});
      fabric_part.latency_s = std::max(fabric_part.latency_s, part.latency_s);
      fabric_part.fabric_hops = std::max(fabric_part.fabric_hops, part.fabric_hops);
    }
  }
  route.hops.insert(route.hops.end(), fabric_part.hops.begin(), fabric_part.hops.end());
  append(route, require(f.pcie_down(dst_gpu)), 1.0);
  route.fabric_hops = fabric_part.fabric_hops;
  route.latency_s = fabric_part.latency_s + f.link(f.pcie_up(src_gpu)).latency_s +
                    f.link(f.pcie_down(dst_gpu)).latency_s;
  return route;
}

}  // namespace twin::topology
