#include "topology/fabric.hpp"

#include <fmt/format.h>

#include "core/units.hpp"

namespace twin::topology {

std::string_view to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::gpu:
      return "gpu";
    case NodeKind::nic:
      return "nic";
    case NodeKind::nvswitch:
      return "nvswitch";
    case NodeKind::leaf:
      return "leaf";
    case NodeKind::spine:
      return "spine";
    case NodeKind::core:
      return "core";
  }
  return "?";
}

std::string_view to_string(LinkKind kind) {
  switch (kind) {
    case LinkKind::nvlink:
      return "nvlink";
    case LinkKind::pcie:
      return "pcie";
    case LinkKind::nic_leaf:
      return "nic_leaf";
    case LinkKind::leaf_spine:
      return "leaf_spine";
    case LinkKind::spine_core:
      return "spine_core";
  }
  return "?";
}

Fabric::Fabric(ClusterSpec cluster, FabricSpec fabric)
    : cluster_(std::move(cluster)),
      spec_(std::move(fabric)),
      geo_(FatTreeGeometry::derive(cluster_, spec_)) {
  build();
}

NodeId Fabric::add_node(NodeKind kind, int index, int host) {
  nodes_.push_back(Node{kind, index, host});
  return NodeId::from_index(nodes_.size() - 1);
}

LinkId Fabric::add_link(NodeId src, NodeId dst, LinkKind kind, double bandwidth_Bps,
                        double latency_s, CableId cable) {
  const LinkId id = LinkId::from_index(links_.size());
  links_.push_back(Link{src, dst, kind, bandwidth_Bps, latency_s, cable});
  return id;
}

void Fabric::add_cable(NodeId lower, NodeId upper, LinkKind kind, double bandwidth_Bps) {
  const CableId cable = CableId::from_index(cables_.size());
  const double cable_s = core::ns_to_s(spec_.cable_latency_ns);
  const double switch_s = core::ns_to_s(spec_.switch_latency_ns);
  // Entering a switch costs its forwarding latency; entering a NIC does not.
  const double down_s = cable_s + (is_switch(lower) ? switch_s : 0.0);
  const LinkId up = add_link(lower, upper, kind, bandwidth_Bps, cable_s + switch_s, cable);
  const LinkId down = add_link(upper, lower, kind, bandwidth_Bps, down_s, cable);
  cables_.push_back(Cable{up, down, kind});
}

bool Fabric::is_switch(NodeId id) const {
  const NodeKind k = nodes_[id.index()].kind;
  return k == NodeKind::leaf || k == NodeKind::spine || k == NodeKind::core;
}

int Fabric::nic_of_gpu(int g) const {
  const int host = g / cluster_.gpus_per_node;
  const int local = g % cluster_.gpus_per_node;
  return host * cluster_.nics_per_node + local * cluster_.nics_per_node / cluster_.gpus_per_node;
}

CableId Fabric::leaf_up_cable(int leaf, int port) const {
  return CableId::from_index(first_leaf_cable_ + leaf * geo_.leaf_up + port);
}

CableId Fabric::spine_up_cable(int spine, int port) const {
  return CableId::from_index(first_spine_cable_ + spine * geo_.spine_up + port);
}

void Fabric::build() {
  const int gpus = cluster_.gpus();
  const int nics = cluster_.nics();
  const int hosts = cluster_.nodes;

  nodes_.reserve(
      static_cast<std::size_t>(gpus + nics + hosts + geo_.leaves + geo_.spines + geo_.cores));
  for (int g = 0; g < gpus; ++g) add_node(NodeKind::gpu, g, host_of_gpu(g));
  first_nic_ = static_cast<int>(nodes_.size());
  for (int n = 0; n < nics; ++n) add_node(NodeKind::nic, n, host_of_nic(n));
  first_nvswitch_ = static_cast<int>(nodes_.size());
  for (int h = 0; h < hosts; ++h) add_node(NodeKind::nvswitch, h, h);
  first_leaf_ = static_cast<int>(nodes_.size());
  for (int l = 0; l < geo_.leaves; ++l) add_node(NodeKind::leaf, l, geo_.pod_of_leaf(l));
  first_spine_ = static_cast<int>(nodes_.size());
  for (int s = 0; s < geo_.spines; ++s) add_node(NodeKind::spine, s, s / geo_.spines_per_pod);
  first_core_ = static_cast<int>(nodes_.size());
  for (int c = 0; c < geo_.cores; ++c) add_node(NodeKind::core, c, c / geo_.cores_per_plane);

  const double nic_Bps = core::gbps_to_Bps(std::min(cluster_.nic_gbps, spec_.switch_port_gbps));
  const double leaf_spine_Bps =
      core::gbps_to_Bps(spec_.leaf_spine_gbps > 0 ? spec_.leaf_spine_gbps : spec_.switch_port_gbps);
  const double spine_core_Bps =
      core::gbps_to_Bps(spec_.spine_core_gbps > 0 ? spec_.spine_core_gbps : spec_.switch_port_gbps);

  // Tier 0: NIC to leaf.
  nic_leaf_.resize(static_cast<std::size_t>(nics));
  nic_endpoint_.resize(static_cast<std::size_t>(nics));
  for (int n = 0; n < nics; ++n) {
    const int host = host_of_nic(n), rail = rail_of_nic(n);
    nic_leaf_[n] = geo_.leaf_of(host, rail);
    nic_endpoint_[n] = geo_.endpoint_index(host, rail);
    add_cable(nic(n), leaf(nic_leaf_[n]), LinkKind::nic_leaf, nic_Bps);
  }
  // Tier 1: leaf up-port p to spine p mod Sp of its pod.
  first_leaf_cable_ = static_cast<int>(cables_.size());
  for (int l = 0; l < geo_.leaves; ++l)
    for (int p = 0; p < geo_.leaf_up; ++p)
      add_cable(leaf(l), spine(geo_.spine_of_leaf_port(l, p)), LinkKind::leaf_spine,
                leaf_spine_Bps);
  // Tier 2: spine up-port q to core q mod Cp of its plane.
  first_spine_cable_ = static_cast<int>(cables_.size());
  for (int s = 0; s < geo_.spines && geo_.tiers == 3; ++s)
    for (int q = 0; q < geo_.spine_up; ++q)
      add_cable(spine(s), core_switch(geo_.core_of_spine_port(s, q)), LinkKind::spine_core,
                spine_core_Bps);

  // Inside each server: NVLink to the NVSwitch domain, PCIe to the GPU's NIC.
  const double nvlink_Bps = core::GBps_to_Bps(cluster_.nvlink_GBps);
  const double nvlink_half_s = core::ns_to_s(cluster_.nvlink_latency_ns) / 2;
  first_nvlink_ = static_cast<int>(links_.size());
  for (int g = 0; g < gpus; ++g) {
    add_link(gpu(g), nvswitch(host_of_gpu(g)), LinkKind::nvlink, nvlink_Bps, nvlink_half_s, {});
    add_link(nvswitch(host_of_gpu(g)), gpu(g), LinkKind::nvlink, nvlink_Bps, nvlink_half_s, {});
  }
  const double pcie_Bps = core::GBps_to_Bps(cluster_.pcie_GBps);
  const double pcie_s = core::ns_to_s(cluster_.pcie_latency_ns);
  first_pcie_ = static_cast<int>(links_.size());
  for (int g = 0; g < gpus; ++g) {
    add_link(gpu(g), nic(nic_of_gpu(g)), LinkKind::pcie, pcie_Bps, pcie_s, {});
    add_link(nic(nic_of_gpu(g)), gpu(g), LinkKind::pcie, pcie_Bps, pcie_s, {});
  }

  // Built in place: copying an adjacency_list trips a GCC 12 false -Wmaybe-uninitialized.
  for (std::size_t i = 0; i < nodes_.size(); ++i) boost::add_vertex(graph_);
  for (std::size_t i = 0; i < links_.size(); ++i)
    boost::add_edge(links_[i].src.index(), links_[i].dst.index(), LinkId::from_index(i), graph_);
}

std::string Fabric::node_name(NodeId id) const {
  const Node& n = node(id);
  switch (n.kind) {
    case NodeKind::gpu:
      return fmt::format("gpu[{}.{}]", n.host, n.index % cluster_.gpus_per_node);
    case NodeKind::nic:
      return fmt::format("nic[{}.{}]", n.host, n.index % cluster_.nics_per_node);
    case NodeKind::nvswitch:
      return fmt::format("nvswitch[{}]", n.host);
    default:
      return fmt::format("{}[{}]", to_string(n.kind), n.index);
  }
}

}  // namespace twin::topology
