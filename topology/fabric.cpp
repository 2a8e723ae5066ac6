#include "topology/fabric.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/units.hpp"
#include "topology/fabric_import.hpp"
#include "topology/ibnetdiscover.hpp"
#include "topology/lft.hpp"
#include "topology/node_states.hpp"

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

int cable_tier(LinkKind kind) {
  switch (kind) {
    case LinkKind::nic_leaf:
      return 0;
    case LinkKind::leaf_spine:
      return 1;
    case LinkKind::spine_core:
      return 2;
    case LinkKind::nvlink:
    case LinkKind::pcie:
      return -1;
  }
  return -1;
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

std::string_view to_string(HostState state) {
  switch (state) {
    case HostState::up:
      return "up";
    case HostState::drained:
      return "drained";
    case HostState::down:
      return "down";
  }
  return "?";
}

Fabric::Fabric(ClusterSpec cluster, FabricSpec fabric)
    : cluster_(std::move(cluster)), spec_(std::move(fabric)) {
  if (!spec_.file.empty()) {
    const FabricPlan plan = plan_from_ibnetdiscover(read_ibnetdiscover(spec_.file));
    build_explicit(plan);
  } else {
    geo_ = FatTreeGeometry::derive(cluster_, spec_);
    build();
  }
  load_host_states();
  if (!spec_.lfts.empty())
    lfts_ = std::make_shared<const ForwardingTables>(ForwardingTables::read(spec_.lfts, *this));
}

Fabric::Fabric(ClusterSpec cluster, FabricSpec fabric, const FabricPlan& plan)
    : cluster_(std::move(cluster)), spec_(std::move(fabric)) {
  build_explicit(plan);
  load_host_states();
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

void Fabric::add_cable(NodeId lower, NodeId upper, LinkKind kind, double bandwidth_Bps,
                       int lower_port, int upper_port) {
  const CableId cable = CableId::from_index(cables_.size());
  const double cable_s = core::ns_to_s(spec_.cable_latency_ns);
  const double switch_s = core::ns_to_s(spec_.switch_latency_ns);
  // Entering a switch costs its forwarding latency; entering a NIC does not.
  const double down_s = cable_s + (is_switch(lower) ? switch_s : 0.0);
  const LinkId up = add_link(lower, upper, kind, bandwidth_Bps, cable_s + switch_s, cable);
  const LinkId down = add_link(upper, lower, kind, bandwidth_Bps, down_s, cable);
  // Generated fabrics number each switch's ports in cabling order (NICs first, then uplinks).
  if (lower_port == 0) lower_port = is_switch(lower) ? ++next_port_[lower.index()] : 1;
  if (upper_port == 0) upper_port = ++next_port_[upper.index()];
  cables_.push_back(Cable{up, down, kind, lower_port, upper_port});
}

bool Fabric::is_switch(NodeId id) const {
  const NodeKind k = nodes_[id.index()].kind;
  return k == NodeKind::leaf || k == NodeKind::spine || k == NodeKind::core;
}

int Fabric::nic_of_gpu(int g, int j) const {
  const int host = g / cluster_.gpus_per_node;
  const int local = g % cluster_.gpus_per_node;
  return host * cluster_.nics_per_node + local * cluster_.nics_per_node / cluster_.gpus_per_node +
         j;
}

CableId Fabric::leaf_up_cable(int leaf, int port) const {
  return CableId::from_index(first_leaf_cable_ + leaf * geo_.leaf_up + port);
}

CableId Fabric::spine_up_cable(int spine, int port) const {
  return CableId::from_index(first_spine_cable_ + spine * geo_.spine_up + port);
}

bool Fabric::host_usable(int host) const {
  if (host_state_[host] != HostState::up) return false;
  for (int r = 0; r < cluster_.nics_per_node; ++r)
    if (!nic_present(host * cluster_.nics_per_node + r)) return false;
  return true;
}

int Fabric::usable_host_count() const {
  int n = 0;
  for (int h = 0; h < cluster_.nodes; ++h) n += host_usable(h) ? 1 : 0;
  return n;
}

void Fabric::apply_host_states(const std::vector<std::pair<int, HostState>>& states) {
  for (auto [host, state] : states)
    host_state_[host] = std::max(host_state_[host], state);  // the worst listing wins
}

void Fabric::load_host_states() {
  host_state_.assign(static_cast<std::size_t>(cluster_.nodes), HostState::up);
  if (cluster_.node_states.empty()) return;
  apply_host_states(resolve_node_states(read_node_states(cluster_.node_states), host_names_,
                                        cluster_.node_states));
}

std::string Fabric::switch_label(NodeId id) const {
  if (!explicit_) return node_name(id);
  return plan_.switches[id.index() - static_cast<std::size_t>(first_leaf_)].name;
}

std::uint64_t Fabric::switch_guid(NodeId id) const {
  if (explicit_) return plan_.switches[id.index() - static_cast<std::size_t>(first_leaf_)].guid;
  // Generated: a stable made-up GUID in NVIDIA's OUI (00:02:c9), one per switch vertex.
  return 0x0002c90300000000ULL + id.index();
}

void Fabric::add_vertices(int leaves, int spines, int cores, const std::vector<int>& switch_group) {
  const int gpus = cluster_.gpus();
  const int nics = cluster_.nics();
  const int hosts = cluster_.nodes;
  nodes_.reserve(static_cast<std::size_t>(gpus + nics + hosts + leaves + spines + cores));
  for (int g = 0; g < gpus; ++g) add_node(NodeKind::gpu, g, host_of_gpu(g));
  first_nic_ = static_cast<int>(nodes_.size());
  for (int n = 0; n < nics; ++n) add_node(NodeKind::nic, n, host_of_nic(n));
  first_nvswitch_ = static_cast<int>(nodes_.size());
  for (int h = 0; h < hosts; ++h) add_node(NodeKind::nvswitch, h, h);
  first_leaf_ = static_cast<int>(nodes_.size());
  for (int l = 0; l < leaves; ++l)
    add_node(NodeKind::leaf, l, switch_group[static_cast<std::size_t>(l)]);
  first_spine_ = static_cast<int>(nodes_.size());
  for (int s = 0; s < spines; ++s)
    add_node(NodeKind::spine, s, switch_group[static_cast<std::size_t>(leaves + s)]);
  first_core_ = static_cast<int>(nodes_.size());
  for (int c = 0; c < cores; ++c)
    add_node(NodeKind::core, c, switch_group[static_cast<std::size_t>(leaves + spines + c)]);
  next_port_.assign(nodes_.size(), 0);
  nic_cable_.assign(static_cast<std::size_t>(nics), CableId{});
  nic_leaf_.assign(static_cast<std::size_t>(nics), -1);
  nic_endpoint_.assign(static_cast<std::size_t>(nics), -1);
}

void Fabric::build() {
  std::vector<int> group;
  for (int l = 0; l < geo_.leaves; ++l) group.push_back(geo_.pod_of_leaf(l));
  for (int s = 0; s < geo_.spines; ++s) group.push_back(s / geo_.spines_per_pod);
  for (int c = 0; c < geo_.cores; ++c) group.push_back(c / geo_.cores_per_plane);
  add_vertices(geo_.leaves, geo_.spines, geo_.cores, group);
  host_names_.clear();
  for (int h = 0; h < cluster_.nodes; ++h) host_names_.push_back(fmt::format("node{:04d}", h));
  leaf_rail_.assign(static_cast<std::size_t>(geo_.leaves), -1);
  const int nics = cluster_.nics();

  const double nic_Bps = core::gbps_to_Bps(std::min(cluster_.nic_gbps, spec_.switch_port_gbps));
  const double leaf_spine_Bps =
      core::gbps_to_Bps(spec_.leaf_spine_gbps > 0 ? spec_.leaf_spine_gbps : spec_.switch_port_gbps);
  const double spine_core_Bps =
      core::gbps_to_Bps(spec_.spine_core_gbps > 0 ? spec_.spine_core_gbps : spec_.switch_port_gbps);

  // Tier 0: NIC to leaf.
  for (int n = 0; n < nics; ++n) {
    const int host = host_of_nic(n), rail = rail_of_nic(n);
    nic_leaf_[n] = geo_.leaf_of(host, rail);
    nic_endpoint_[n] = geo_.endpoint_index(host, rail);
    if (spec_.rail_optimized) leaf_rail_[nic_leaf_[n]] = rail;
    nic_cable_[n] = CableId::from_index(cables_.size());
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
  add_host_links();
  finish_graph();
}

void Fabric::add_host_links() {
  // Inside each server: NVLink to the NVSwitch domain, PCIe to the GPU's NIC (one link per GPU,
  // its PCIe x16, whatever number of NICs sits behind it).
  const int gpus = cluster_.gpus();
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
}

void Fabric::finish_graph() {
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
