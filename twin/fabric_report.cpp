#include "twin/fabric_report.hpp"

#include <fmt/format.h>

#include "core/text.hpp"

namespace twin::sim {

using core::with_commas;

nlohmann::ordered_json bom_json(const topology::Fabric& fabric, const topology::Bom& bom) {
  const auto& g = fabric.geometry();
  nlohmann::ordered_json j;
  j["gpus"] = bom.gpus;
  j["nodes"] = bom.nodes;
  j["nics"] = bom.nics;
  j["nvswitch_domains"] = bom.nvswitch_domains;
  j["management_nodes"] = bom.management_nodes;
  j["tiers"] = g.tiers;
  j["pods"] = g.pods;
  j["switches"] = {{"leaf", bom.leaf.switches},
                   {"spine", bom.spine.switches},
                   {"core", bom.core.switches},
                   {"total", bom.switches_total()}};
  j["cables"] = {{"node_leaf", bom.cables_node_leaf},
                 {"leaf_spine", bom.cables_leaf_spine},
                 {"spine_core", bom.cables_spine_core},
                 {"total", bom.cables_total()}};
  j["transceivers"] = {{"node_side", bom.transceivers_node_side},
                       {"switch_side", bom.transceivers_switch_side},
                       {"total", bom.transceivers_node_side + bom.transceivers_switch_side}};
  auto ports = [](const topology::TierPorts& t) {
    return nlohmann::ordered_json{{"used", t.ports_used}, {"free", t.ports_free}};
  };
  j["ports"] = {{"leaf", ports(bom.leaf)}, {"spine", ports(bom.spine)}, {"core", ports(bom.core)}};
  j["leaf_ports"] = {{"down", g.leaf_down}, {"up", g.leaf_up}};
  j["oversubscription"] = {{"leaf", bom.leaf_oversubscription},
                           {"spine", bom.spine_oversubscription}};
  j["injection_GBps"] = bom.injection_GBps;
  j["bisection_GBps"] = bom.bisection_GBps;
  return j;
}

std::string bom_table(const Scenario& scenario, const topology::Fabric& fabric,
                      const topology::Bom& bom) {
  const auto& c = fabric.cluster();
  const auto& g = fabric.geometry();
  const auto& f = fabric.spec();
  std::string out;
  out += fmt::format("Bill of materials: {} ({})\n", scenario.name, scenario.source);
  out += fmt::format(
      "cluster   {} nodes x {} GPUs = {} GPUs ({}), {} NICs at {:g} Gb/s{}\n", with_commas(c.nodes),
      c.gpus_per_node, with_commas(bom.gpus), c.gpu, with_commas(bom.nics), c.nic_gbps,
      bom.management_nodes > 0 ? fmt::format(", {} fabric-manager node(s)", bom.management_nodes)
                               : "");
  out += fmt::format("fabric    {}-tier fat tree, radix {}, {}, leaf {} down / {} up ({:g}:1)",
                     g.tiers, g.radix, f.rail_optimized ? "rail-optimized" : "not rail-optimized",
                     g.leaf_down, g.leaf_up, bom.leaf_oversubscription);
  if (g.tiers == 3)
    out += fmt::format(", spine {} down / {} up ({:g}:1), {} pods", g.spine_down, g.spine_up,
                       bom.spine_oversubscription, g.pods);
  out += "\n\n";
  out += fmt::format("{:<14}{:>10}{:>14}{:>14}\n", "switches", "count", "ports used", "ports free");
  auto tier = [&](const char* name, const topology::TierPorts& t) {
    out += fmt::format("  {:<12}{:>10}{:>14}{:>14}\n", name, with_commas(t.switches),
                       with_commas(t.ports_used), with_commas(t.ports_free));
  };
  tier("leaf", bom.leaf);
  tier("spine", bom.spine);
  if (g.tiers == 3) tier("core", bom.core);
  out += fmt::format("  {:<12}{:>10}\n\n", "total", with_commas(bom.switches_total()));
  out += fmt::format("{:<14}{:>10}\n", "cables", "count");
  out += fmt::format("  {:<12}{:>10}\n", "node-leaf", with_commas(bom.cables_node_leaf));
  out += fmt::format("  {:<12}{:>10}\n", "leaf-spine", with_commas(bom.cables_leaf_spine));
  if (g.tiers == 3)
    out += fmt::format("  {:<12}{:>10}\n", "spine-core", with_commas(bom.cables_spine_core));
  out += fmt::format("  {:<12}{:>10}\n\n", "total", with_commas(bom.cables_total()));
  out += fmt::format("transceivers  node side {}, switch side {} ({} ports per cage)\n",
                     with_commas(bom.transceivers_node_side),
                     with_commas(bom.transceivers_switch_side), f.switch_ports_per_cage);
  out += fmt::format("bandwidth     injection {} GB/s, bisection {} GB/s\n",
                     with_commas(static_cast<std::int64_t>(bom.injection_GBps + 0.5)),
                     with_commas(static_cast<std::int64_t>(bom.bisection_GBps + 0.5)));
  return out;
}

std::vector<PatternLoad> pattern_loads(const topology::Fabric& fabric,
                                       const topology::Router& router) {
  std::vector<PatternLoad> out;
  for (auto [name, flows] :
       {std::pair{"rail_ring", topology::rail_ring_pattern(fabric)},
        std::pair{"bisection_shift", topology::bisection_shift_pattern(fabric)}}) {
    if (flows.empty()) continue;
    out.push_back(PatternLoad{name, static_cast<int>(flows.size()),
                              topology::link_load(fabric, router, flows)});
  }
  return out;
}

nlohmann::ordered_json pattern_loads_json(const std::vector<PatternLoad>& loads) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& p : loads) {
    nlohmann::ordered_json tiers = nlohmann::ordered_json::object();
    for (const auto& t : p.load.tiers)
      tiers[std::string(topology::to_string(t.kind))] = {{"max_flows_per_link", t.max_flows},
                                                         {"mean_flows_per_link", t.mean_flows},
                                                         {"links_used", t.links_used}};
    arr.push_back({{"pattern", p.pattern},
                   {"flows", p.flows},
                   {"max_flows_per_link", p.load.max_flows()},
                   {"tiers", tiers}});
  }
  return arr;
}

nlohmann::ordered_json fabric_only_json(const Scenario& scenario, const topology::Fabric& fabric,
                                        const topology::Router& router) {
  nlohmann::ordered_json j;
  j["scenario"] = {{"name", scenario.name}, {"source", scenario.source}};
  j["fabric"] = {{"vertices", fabric.node_count()},
                 {"links", fabric.link_count()},
                 {"routing", topology::to_string(router.mode())}};
  j["bom"] = bom_json(fabric, topology::compute_bom(fabric));
  j["traffic_patterns"] = pattern_loads_json(pattern_loads(fabric, router));
  return j;
}

std::string pattern_loads_table(const std::vector<PatternLoad>& loads) {
  std::string out = fmt::format("{:<18}{:>8}  {:<12}{:>10}{:>10}{:>12}\n", "pattern", "flows",
                                "link kind", "max load", "mean load", "links used");
  for (const auto& p : loads) {
    bool first = true;
    for (const auto& t : p.load.tiers) {
      out += fmt::format("{:<18}{:>8}  {:<12}{:>10.3g}{:>10.3g}{:>12}\n", first ? p.pattern : "",
                         first ? with_commas(p.flows) : "", topology::to_string(t.kind),
                         t.max_flows, t.mean_flows, with_commas(t.links_used));
      first = false;
    }
  }
  return out;
}

}  // namespace twin::sim
