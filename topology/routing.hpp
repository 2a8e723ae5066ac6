#pragma once
/// Routes through the fat tree: which links a flow from one endpoint to another crosses.
///
/// Every route is a shortest (up*/down*) path: up from the source leaf only as high as the
/// lowest common ancestor tier, then down. The only choices are the up-ports, and once the top
/// switch is chosen the way down is fixed (we take the same port index down as up, which picks
/// the parallel cable). The modes differ in how up-ports are picked:
///
/// - dmodk: destination-mod-k, as OpenSM's ftree routing programs static forwarding tables.
///   With d the destination's endpoint index (leaf * d1 + port), the leaf takes up-port
///   p = d mod u1 and the spine up-port q = floor(d / u1) mod u2. Every destination below a leaf
///   maps to a different up-port, which makes shift permutations contention-free on a
///   non-blocking tree.
/// - ecmp: p and q from a seeded hash of (src, dst, flow label): per-flow load balancing as
///   Ethernet/RoCE switches do it; collisions happen, as they do in practice.
/// - adaptive: the flow is split evenly over all usable shortest paths (the fluid limit of
///   per-packet adaptive routing); each hop carries a fraction of the flow.
///
/// With failures (a FabricState), a choice is usable only if the whole rest of the path is: the
/// deterministic modes take the next usable port after the preferred one (as a subnet manager
/// re-sweep would), adaptive spreads over the usable ones. If nothing is usable, routing throws
/// an error naming both endpoints.
///
/// An explicit (imported) fabric has no geometry to do this arithmetic on: its routes come from
/// up/down tables over its real cables and port order (topology/updown.hpp), same modes.

#include <cstdint>
#include <memory>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"
#include "topology/updown.hpp"

namespace twin::topology {

struct Hop {
  LinkId link;
  double fraction = 1.0;  ///< share of the flow's rate on this link (1 except adaptive)
};

struct Route {
  std::vector<Hop> hops;
  /// Propagation plus forwarding latency along one of the (equal-length) paths.
  double latency_s = 0.0;
  /// Switch-to-switch and NIC-to-switch cable hops on one path (0 inside a server).
  int fabric_hops = 0;
};

class Router {
 public:
  /// `state` may be null (a healthy fabric); if given it must outlive the router.
  Router(const Fabric& fabric, const FabricState* state, RoutingMode mode, std::uint64_t seed = 1);
  /// Uses the fabric spec's routing mode and seed.
  Router(const Fabric& fabric, const FabricState* state = nullptr);

  /// NIC to NIC through the switch fabric.
  [[nodiscard]] Route nic_route(int src_nic, int dst_nic, std::uint64_t flow_label = 0) const;
  /// GPU to GPU: NVLink inside a server; otherwise PCIe to the GPU's NIC, the fabric, and PCIe
  /// from the destination GPU's NIC.
  [[nodiscard]] Route gpu_route(int src_gpu, int dst_gpu, std::uint64_t flow_label = 0) const;

  [[nodiscard]] RoutingMode mode() const { return mode_; }

 private:
  bool usable(LinkId link) const { return state_ == nullptr || state_->usable(link); }
  void append(Route& route, LinkId link, double fraction) const;
  bool leaf_port_usable(int ls, int ld, int p) const;
  bool core_port_usable(int s_src, int s_dst, int q) const;
  void append_deterministic(Route& route, int ls, int ld, bool same_pod, int src_nic, int dst_nic,
                            std::uint64_t flow_label) const;
  void append_adaptive(Route& route, int ls, int ld, bool same_pod, int src_nic, int dst_nic) const;
  [[noreturn]] void unreachable(int src_nic, int dst_nic, const char* why) const;
  /// Why nothing can leave `src_nic` or reach `dst_nic` (a NIC without a cable, its link down),
  /// or null when both ends are up.
  [[nodiscard]] const char* end_problem(int src_nic, int dst_nic) const;

  const Fabric* fabric_;
  const FabricState* state_;
  std::shared_ptr<const UpDownRouting> updown_;  ///< explicit fabrics only
  RoutingMode mode_;
  std::uint64_t seed_;
};

}  // namespace twin::topology
