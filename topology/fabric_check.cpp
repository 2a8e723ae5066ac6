#include "topology/fabric_check.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "core/error.hpp"
#include "topology/bom.hpp"

namespace twin::topology {
namespace {

struct Rate {
  int width = 0;
  std::string speed;
  double gbps = 0;
};

/// The most common rate among cables (ties: the faster).
Rate dominant(const std::vector<const PlanCable*>& cables) {
  std::map<std::pair<double, std::string>, std::pair<int, int>> votes;  // (gbps, ws) -> count, w
  for (const PlanCable* c : cables) {
    auto& v = votes[{c->gbps, fmt::format("{}x{}", c->width, c->speed)}];
    ++v.first;
    v.second = c->width;
  }
  Rate best;
  int count = 0;
  for (const auto& [key, v] : votes)
    if (v.first >= count) {
      count = v.first;
      best = {v.second, key.second.substr(key.second.find('x') + 1), key.first};
    }
  return best;
}

/// Worst per-leaf ratio of NIC capacity to uplink capacity; `leaf` gets its name.
double worst_leaf_ratio(const Fabric& f, std::string* leaf) {
  const auto& g = f.geometry();
  std::vector<double> down(static_cast<std::size_t>(g.leaves), 0),
      up(static_cast<std::size_t>(g.leaves), 0);
  const std::size_t first = g.leaves > 0 ? f.leaf(0).index() : 0;
  for (const Cable& c : f.cables()) {
    const Link& l = f.link(c.up);
    const bool src_leaf = f.node(l.src).kind == NodeKind::leaf;
    const bool dst_leaf = f.node(l.dst).kind == NodeKind::leaf;
    if (c.kind == LinkKind::nic_leaf)
      down[l.dst.index() - first] += l.bandwidth_Bps;
    else if (src_leaf && !dst_leaf)
      up[l.src.index() - first] += l.bandwidth_Bps;
  }
  double worst = 0;
  for (int i = 0; i < g.leaves; ++i) {
    if (g.tiers == 1 || down[static_cast<std::size_t>(i)] == 0) continue;
    const double r = up[static_cast<std::size_t>(i)] > 0
                         ? down[static_cast<std::size_t>(i)] / up[static_cast<std::size_t>(i)]
                         : 1e9;
    if (r > worst) {
      worst = r;
      if (leaf != nullptr) *leaf = f.switch_label(f.leaf(i));
    }
  }
  return worst;
}

std::string cable_ends(const FabricPlan& p, const PlanCable& c) {
  auto end = [&](const PlanEnd& e) {
    if (e.nic) {
      const PlanNic& n = p.nics[static_cast<std::size_t>(e.index)];
      return fmt::format("{} rail {}", p.hosts[static_cast<std::size_t>(n.host)].name, n.rail);
    }
    return fmt::format("{}[{}]", p.switches[static_cast<std::size_t>(e.index)].name, e.port);
  };
  return end(c.lower) + " - " + end(c.upper);
}

/// Appends a deviation; the caller fills in what it is about.
Deviation& add(FabricCheck& out, const char* kind, std::string where, std::string detail,
               int line) {
  Deviation d;
  d.kind = kind;
  d.where = std::move(where);
  d.detail = std::move(detail);
  d.line = line;
  out.deviations.push_back(std::move(d));
  return out.deviations.back();
}

}  // namespace

int FabricCheck::count(const std::string& kind) const {
  return static_cast<int>(std::count_if(deviations.begin(), deviations.end(),
                                        [&](const Deviation& d) { return d.kind == kind; }));
}

FabricCheck check_fabric(const Fabric& fabric) {
  if (!fabric.is_explicit())
    throw core::Error("fabric", "generated",
                      "a generated fat tree is the ideal by construction; check an imported "
                      "fabric (fabric.file)");
  const FabricPlan& p = fabric.plan();
  FabricCheck out;
  out.notes = p.notes;
  if (p.aggregation_nodes > 0)
    out.notes.push_back(fmt::format(
        "{} SHARP aggregation nodes recognised and left out (not hosts)", p.aggregation_nodes));
  out.hosts = static_cast<int>(p.hosts.size());
  out.usable_hosts = fabric.usable_host_count();

  std::vector<const PlanCable*> nic_cables, switch_cables;
  for (const PlanCable& c : p.cables) (c.lower.nic ? nic_cables : switch_cables).push_back(&c);
  const Rate sw = dominant(switch_cables), nic = dominant(nic_cables);
  if (!switch_cables.empty()) {
    out.switch_link = fmt::format("{}x{}", sw.width, sw.speed);
    out.switch_link_gbps = sw.gbps;
  }
  out.nic_link = fmt::format("{}x{}", nic.width, nic.speed);
  out.nic_link_gbps = nic.gbps;

  for (const PlanCable& c : p.cables) {
    const Rate& want = c.lower.nic ? nic : sw;
    if (c.gbps >= want.gbps) continue;
    Deviation& d = add(out, "slow_link", cable_ends(p, c),
                       fmt::format("{}x{} ({} Gb/s), fabric runs {}x{} ({} Gb/s)", c.width, c.speed,
                                   c.gbps, want.width, want.speed, want.gbps),
                       c.line);
    d.upper_switch = c.upper.index;
    if (c.lower.nic) {
      const PlanNic& n = p.nics[static_cast<std::size_t>(c.lower.index)];
      d.host = n.host;
      d.rail = n.rail;
    } else {
      d.lower_switch = c.lower.index;
    }
  }

  // Leaf-spine pairs: p parallel cables from every leaf to every spine of its pod.
  std::map<std::pair<int, int>, int> pair_count;
  std::vector<int> up_count(p.switches.size(), 0);
  for (const PlanCable* c : switch_cables) {
    ++up_count[static_cast<std::size_t>(c->lower.index)];
    const auto& lo = p.switches[static_cast<std::size_t>(c->lower.index)];
    const auto& hi = p.switches[static_cast<std::size_t>(c->upper.index)];
    if (lo.tier == 1 && hi.tier == 2) ++pair_count[{c->lower.index, c->upper.index}];
  }
  std::map<int, int> parallel_votes;
  for (const auto& [pair, n] : pair_count) ++parallel_votes[n];
  int parallel = 0, votes = 0;
  for (const auto& [n, v] : parallel_votes)
    if (v > votes) {
      votes = v;
      parallel = n;
    }
  out.parallel_cables = parallel;
  std::map<int, int> spines_in_pod;
  for (const PlanSwitch& s : p.switches)
    if (s.tier == 2) ++spines_in_pod[s.pod];
  out.ideal_leaf_up =
      parallel *
      (spines_in_pod.empty()
           ? 0
           : std::max_element(spines_in_pod.begin(), spines_in_pod.end(), [](auto& a, auto& b) {
               return a.second < b.second;
             })->second);
  for (std::size_t k = 0; k < p.switches.size(); ++k)
    if (p.switches[k].tier == 2) out.ideal_spine_up = std::max(out.ideal_spine_up, up_count[k]);

  for (std::size_t a = 0; a < p.switches.size(); ++a) {
    const PlanSwitch& leaf = p.switches[a];
    if (leaf.tier != 1 || p.tiers < 2) continue;
    for (std::size_t b = 0; b < p.switches.size(); ++b) {
      const PlanSwitch& spine = p.switches[b];
      if (spine.tier != 2 || spine.pod != leaf.pod) continue;
      auto it = pair_count.find({static_cast<int>(a), static_cast<int>(b)});
      const int have = it == pair_count.end() ? 0 : it->second;
      if (have >= parallel) continue;
      Deviation& d = add(out, "missing_link", leaf.name + " - " + spine.name,
                         fmt::format("{} of {} cables", have, parallel), 0);
      d.lower_switch = static_cast<int>(a);
      d.upper_switch = static_cast<int>(b);
      d.have = have;
      d.want = parallel;
    }
    if (up_count[a] < out.ideal_leaf_up) {
      Deviation& d = add(out, "uneven_uplinks", leaf.name,
                         fmt::format("{} of {} uplinks", up_count[a], out.ideal_leaf_up), 0);
      d.lower_switch = static_cast<int>(a);
      d.have = up_count[a];
      d.want = out.ideal_leaf_up;
    }
  }
  for (std::size_t k = 0; k < p.switches.size(); ++k)
    if (p.switches[k].tier == 2 && p.tiers == 3 && up_count[k] < out.ideal_spine_up) {
      Deviation& d = add(out, "uneven_uplinks", p.switches[k].name,
                         fmt::format("{} of {} uplinks", up_count[k], out.ideal_spine_up), 0);
      d.lower_switch = static_cast<int>(k);
      d.have = up_count[k];
      d.want = out.ideal_spine_up;
    }

  // Rails and adapters.
  for (const PlanCable* c : nic_cables) {
    const PlanNic& n = p.nics[static_cast<std::size_t>(c->lower.index)];
    const PlanSwitch& leaf = p.switches[static_cast<std::size_t>(c->upper.index)];
    if (!p.rail_optimized || leaf.rail < 0 || n.rail == leaf.rail) continue;
    Deviation& d = add(out, "wrong_rail", cable_ends(p, *c),
                       fmt::format("adapter '{}' is rail {} but its leaf serves rail {}", n.adapter,
                                   n.rail, leaf.rail),
                       c->line);
    d.upper_switch = c->upper.index;
    d.host = n.host;
    d.rail = n.rail;
  }
  for (int h = 0; h < fabric.cluster().nodes; ++h) {
    std::vector<std::string> missing;
    for (int r = 0; r < p.rails; ++r)
      if (!fabric.nic_present(h * p.rails + r)) missing.push_back(std::to_string(r));
    if (missing.empty()) continue;
    Deviation& d = add(out, "missing_adapter", fabric.host_name(h),
                       fmt::format("no cable on rail{} {} (host cannot carry a job)",
                                   missing.size() > 1 ? "s" : "", fmt::join(missing, ", ")),
                       0);
    d.host = h;
    d.rail = std::stoi(missing.front());
  }

  // Costs.
  out.bisection_GBps = compute_bom(fabric).bisection_GBps;
  out.worst_leaf_ratio = worst_leaf_ratio(fabric, &out.worst_leaf);
  ClusterSpec cluster = fabric.cluster();
  cluster.node_states.clear();
  FabricSpec spec = fabric.spec();
  spec.file.clear();
  spec.lfts.clear();
  const Fabric ideal(cluster, spec, ideal_plan(fabric, out));
  out.ideal_bisection_GBps = compute_bom(ideal).bisection_GBps;
  out.ideal_leaf_ratio = worst_leaf_ratio(ideal, nullptr);
  return out;
}

FabricPlan ideal_plan(const Fabric& fabric, const FabricCheck& check) {
  FabricPlan p = fabric.plan();
  auto parse_ws = [](const std::string& ws, int& w, std::string& s) {
    const auto x = ws.find('x');
    if (x == std::string::npos) return;
    w = std::stoi(ws.substr(0, x));
    s = ws.substr(x + 1);
  };
  for (PlanCable& c : p.cables) {
    const bool nic = c.lower.nic;
    if ((nic ? check.nic_link_gbps : check.switch_link_gbps) <= 0) continue;
    c.gbps = nic ? check.nic_link_gbps : check.switch_link_gbps;
    parse_ws(nic ? check.nic_link : check.switch_link, c.width, c.speed);
  }
  // Ports in use per switch, to plug the missing cables into free ones.
  std::vector<std::set<int>> used(p.switches.size());
  std::map<std::pair<int, int>, int> pair_count;
  for (const PlanCable& c : p.cables) {
    if (!c.lower.nic) used[static_cast<std::size_t>(c.lower.index)].insert(c.lower.port);
    used[static_cast<std::size_t>(c.upper.index)].insert(c.upper.port);
    if (!c.lower.nic) ++pair_count[{c.lower.index, c.upper.index}];
  }
  auto free_port = [&](std::size_t s) {
    for (int port = 1; port <= p.switches[s].ports; ++port)
      if (!used[s].count(port)) {
        used[s].insert(port);
        return port;
      }
    return 0;
  };
  for (std::size_t a = 0; a < p.switches.size(); ++a) {
    if (p.switches[a].tier != 1) continue;
    for (std::size_t b = 0; b < p.switches.size(); ++b) {
      if (p.switches[b].tier != 2 || p.switches[b].pod != p.switches[a].pod) continue;
      for (int n = pair_count[{static_cast<int>(a), static_cast<int>(b)}];
           n < check.parallel_cables; ++n) {
        const int pa = free_port(a), pb = free_port(b);
        if (pa == 0 || pb == 0) break;
        PlanCable c;
        c.lower = {false, static_cast<int>(a), pa};
        c.upper = {false, static_cast<int>(b), pb};
        c.gbps = check.switch_link_gbps;
        parse_ws(check.switch_link, c.width, c.speed);
        p.cables.push_back(c);
      }
    }
  }
  return p;
}

}  // namespace twin::topology
