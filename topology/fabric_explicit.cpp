// Fabric::build_explicit: a Fabric from a FabricPlan (an imported ibnetdiscover dump).
//
// The vertex layout is the generated one, so every analysis runs unchanged; the geometry is a
// summary of what was found (the largest down- and up-port counts per tier), used for reports
// and the bill of materials, never for routing.

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "core/units.hpp"
#include "topology/fabric.hpp"

namespace twin::topology {

void Fabric::build_explicit(const FabricPlan& plan) {
  explicit_ = true;
  plan_ = plan;
  if (plan.hosts.empty()) throw core::Error("fabric.file", plan.source, "the fabric has no hosts");
  cluster_.nodes = static_cast<int>(plan.hosts.size());
  cluster_.nics_per_node = plan.rails;
  spec_.tiers = plan.tiers;
  spec_.switch_radix = plan.radix;
  spec_.rail_optimized = plan.rail_optimized;
  spec_.management_nodes = 0;
  spec_.reserved_ports_per_leaf = 0;

  int count[4] = {0, 0, 0, 0};
  std::vector<int> group;
  std::vector<int> index_in_tier(plan.switches.size());
  for (std::size_t k = 0; k < plan.switches.size(); ++k) {
    const PlanSwitch& s = plan.switches[k];
    index_in_tier[k] = count[s.tier]++;
    group.push_back(s.pod);
  }
  add_vertices(count[1], count[2], count[3], group);
  host_names_.clear();
  for (const PlanHost& h : plan.hosts) host_names_.push_back(h.name);
  leaf_rail_.clear();
  for (const PlanSwitch& s : plan.switches)
    if (s.tier == 1) leaf_rail_.push_back(s.rail);

  auto vertex_of = [&](const PlanEnd& e) {
    if (e.nic) {
      const PlanNic& n = plan.nics[static_cast<std::size_t>(e.index)];
      return nic(n.host * plan.rails + n.rail);
    }
    const auto k = static_cast<std::size_t>(e.index);
    const int i = index_in_tier[k];
    switch (plan.switches[k].tier) {
      case 1:
        return leaf(i);
      case 2:
        return spine(i);
      default:
        return core_switch(i);
    }
  };

  // Per-leaf down- and up-port counts, per-spine too, for the geometry summary.
  std::vector<int> down(nodes_.size(), 0), up(nodes_.size(), 0);
  std::map<double, int> switch_rate_votes;
  for (const PlanCable& c : plan.cables) {
    const NodeId lower = vertex_of(c.lower), upper = vertex_of(c.upper);
    LinkKind kind = LinkKind::nic_leaf;
    if (!c.lower.nic)
      kind = nodes_[upper.index()].kind == NodeKind::core ||
                     nodes_[lower.index()].kind == NodeKind::spine
                 ? LinkKind::spine_core
                 : LinkKind::leaf_spine;
    if (c.lower.nic) {
      const int n = static_cast<int>(lower.index()) - first_nic_;
      if (nic_cable_[n].valid())
        throw core::Error("fabric.file", plan.source,
                          fmt::format("line {}: {} has two cables on rail {}", c.line,
                                      host_names_[host_of_nic(n)], rail_of_nic(n)));
      nic_cable_[n] = CableId::from_index(cables_.size());
      nic_leaf_[n] = nodes_[upper.index()].index;
    } else {
      ++switch_rate_votes[c.gbps];
      ++up[lower.index()];
    }
    ++down[upper.index()];
    add_cable(lower, upper, kind, core::gbps_to_Bps(c.gbps), c.lower.port, c.upper.port);
  }

  // D-mod-k endpoint index: leaf * (largest leaf down count) + rank of the NIC's leaf port.
  int leaf_down = 0, leaf_up = 0, spine_down = 0, spine_up = 0;
  for (int l = 0; l < count[1]; ++l) {
    leaf_down = std::max(leaf_down, down[leaf(l).index()]);
    leaf_up = std::max(leaf_up, up[leaf(l).index()]);
  }
  for (int s = 0; s < count[2]; ++s) {
    spine_down = std::max(spine_down, down[spine(s).index()]);
    spine_up = std::max(spine_up, up[spine(s).index()]);
  }
  std::vector<std::vector<std::pair<int, int>>> leaf_nics(static_cast<std::size_t>(count[1]));
  for (int n = 0; n < cluster_.nics(); ++n)
    if (nic_cable_[n].valid())
      leaf_nics[static_cast<std::size_t>(nic_leaf_[n])].push_back(
          {cables_[nic_cable_[n].index()].upper_port, n});
  for (std::size_t l = 0; l < leaf_nics.size(); ++l) {
    std::sort(leaf_nics[l].begin(), leaf_nics[l].end());
    for (std::size_t i = 0; i < leaf_nics[l].size(); ++i)
      nic_endpoint_[leaf_nics[l][i].second] = static_cast<int>(l) * leaf_down + static_cast<int>(i);
  }

  int pods = 1;
  for (const PlanSwitch& s : plan.switches) pods = std::max(pods, s.pod + 1);
  geo_ = FatTreeGeometry{};
  geo_.tiers = plan.tiers;
  geo_.radix = plan.radix;
  geo_.rails = plan.rails;
  geo_.endpoints = cluster_.nics();
  geo_.leaf_down = leaf_down;
  geo_.leaf_up = leaf_up;
  geo_.leaves = count[1];
  geo_.pods = pods;
  geo_.spines = count[2];
  geo_.spines_per_pod = std::max(1, count[2] / pods);
  geo_.leaves_per_pod = std::max(1, count[1] / pods);
  geo_.leaf_spine_parallel =
      count[2] > 0 ? std::max(1, leaf_up / std::max(1, geo_.spines_per_pod)) : 0;
  geo_.spine_down = spine_down;
  geo_.spine_up = spine_up;
  geo_.cores = count[3];
  geo_.cores_per_plane = count[3];
  geo_.spine_core_parallel = count[3] > 0 ? std::max(1, spine_up / count[3]) : 0;
  if (!switch_rate_votes.empty()) {
    auto best = std::max_element(switch_rate_votes.begin(), switch_rate_votes.end(),
                                 [](auto& a, auto& b) { return a.second < b.second; });
    spec_.switch_port_gbps = best->first;
  }
  std::map<double, int> nic_votes;
  for (const PlanCable& c : plan.cables)
    if (c.lower.nic) ++nic_votes[c.gbps];
  if (!nic_votes.empty())
    cluster_.nic_gbps = std::max_element(nic_votes.begin(), nic_votes.end(), [](auto& a, auto& b) {
                          return a.second < b.second;
                        })->first;
  if (switch_rate_votes.empty()) spec_.switch_port_gbps = cluster_.nic_gbps;
  spec_.leaf_spine_gbps = 0;
  spec_.spine_core_gbps = 0;

  add_host_links();
  finish_graph();
}

}  // namespace twin::topology
