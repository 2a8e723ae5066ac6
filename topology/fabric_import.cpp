#include "topology/fabric_import.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <numeric>

#include "core/error.hpp"

namespace twin::topology {
namespace {

bool is_aggregation_node(const IbNode& n) {
  return n.type == IbNodeType::ca && n.description.find("Aggregation Node") != std::string::npos;
}

/// A firmware default description names the adapter model, not a host.
bool is_default_description(const std::string& d) {
  return d.empty() || d.find("Mellanox Technologies") != std::string::npos ||
         d.find("ConnectX") != std::string::npos;
}

struct CaName {
  std::string host;     ///< empty when the description names no host
  std::string adapter;  ///< the rest ("mlx5_5", "HCA-6")
};

CaName split_ca_name(const std::string& d) {
  if (is_default_description(d)) return {};
  const auto space = d.find_first_of(" \t");
  if (space == std::string::npos) return {d, ""};
  auto rest = d.find_first_not_of(" \t", space);
  return {d.substr(0, space), rest == std::string::npos ? "" : d.substr(rest)};
}

template <class T>
int majority(const std::map<T, int>& votes, int fallback) {
  int best = fallback, count = 0;
  for (const auto& [key, n] : votes)
    if (n > count) {
      best = static_cast<int>(key);
      count = n;
    }
  return best;
}

}  // namespace

bool natural_less(const std::string& a, const std::string& b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
    if (da && db) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9') ++ei;
      while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9') ++ej;
      const std::string na = a.substr(i, ei - i), nb = b.substr(j, ej - j);
      const auto za = na.find_first_not_of('0'), zb = nb.find_first_not_of('0');
      const std::string ta = za == std::string::npos ? "" : na.substr(za);
      const std::string tb = zb == std::string::npos ? "" : nb.substr(zb);
      if (ta.size() != tb.size()) return ta.size() < tb.size();
      if (ta != tb) return ta < tb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

std::string switch_short_name(const std::string& d) {
  std::string s = d;
  if (s.rfind("MF0;", 0) == 0) s = s.substr(4);
  const auto colon = s.find(':');
  if (colon != std::string::npos && colon > 0) s = s.substr(0, colon);
  return s;
}

FabricPlan plan_from_ibnetdiscover(const IbnetFile& file) {
  FabricPlan plan;
  plan.source = file.source;
  const auto n_nodes = file.nodes.size();

  // Which nodes are kept, and the switches' radix without aggregation-node ports.
  std::vector<int> sharp_ports(n_nodes, 0);
  for (std::size_t i = 0; i < n_nodes; ++i) {
    const IbNode& n = file.nodes[i];
    if (is_aggregation_node(n)) ++plan.aggregation_nodes;
    if (n.type == IbNodeType::router) ++plan.routers;
  }
  for (const IbLink& l : file.links) {
    if (is_aggregation_node(file.nodes[static_cast<std::size_t>(l.a)]))
      ++sharp_ports[static_cast<std::size_t>(l.b)];
    if (is_aggregation_node(file.nodes[static_cast<std::size_t>(l.b)]))
      ++sharp_ports[static_cast<std::size_t>(l.a)];
  }
  auto is_switch = [&](int i) {
    return file.nodes[static_cast<std::size_t>(i)].type == IbNodeType::switch_node;
  };
  auto is_host_ca = [&](int i) {
    const IbNode& n = file.nodes[static_cast<std::size_t>(i)];
    return n.type == IbNodeType::ca && !is_aggregation_node(n);
  };

  // NICs: every adapter port cabled to a switch.
  struct RawNic {
    int ca, port, sw, sw_port;
    const IbLink* link;
  };
  std::vector<RawNic> raw;
  for (const IbLink& l : file.links) {
    if (l.a == l.b) {
      plan.notes.push_back(
          fmt::format("line {}: loopback cable on {} ports {} and {} left out", l.line,
                      switch_short_name(file.nodes[static_cast<std::size_t>(l.a)].description),
                      l.a_port, l.b_port));
      continue;
    }
    if (is_host_ca(l.a) && is_switch(l.b)) raw.push_back({l.a, l.a_port, l.b, l.b_port, &l});
    if (is_host_ca(l.b) && is_switch(l.a)) raw.push_back({l.b, l.b_port, l.a, l.a_port, &l});
    if (is_host_ca(l.a) && is_host_ca(l.b))
      plan.notes.push_back(fmt::format("line {}: adapter-to-adapter cable left out", l.line));
  }
  if (raw.empty())
    throw core::Error("hosts", "", "no host adapter is cabled to a switch: nothing to simulate",
                      file.source);

  // Hosts by name; unnamed adapters by system image GUID, else alone.
  std::map<std::string, std::vector<int>> host_nics;  // host name -> raw NIC indices
  std::vector<std::string> adapter_of(raw.size());
  for (std::size_t r = 0; r < raw.size(); ++r) {
    const IbNode& ca = file.nodes[static_cast<std::size_t>(raw[r].ca)];
    CaName name = split_ca_name(ca.description);
    if (name.host.empty())
      name.host = fmt::format("ca-{:016x}", ca.sysimgguid != 0 ? ca.sysimgguid : ca.guid);
    adapter_of[r] = name.adapter;
    host_nics[name.host].push_back(static_cast<int>(r));
  }
  std::vector<std::string> host_names;
  for (const auto& [name, nics] : host_nics) host_names.push_back(name);
  std::sort(host_names.begin(), host_names.end(), natural_less);
  int rails = 1;
  for (const auto& [name, nics] : host_nics) rails = std::max(rails, static_cast<int>(nics.size()));
  plan.rails = rails;

  // Order each host's NICs by adapter name (natural), then port.
  for (auto& [name, nics] : host_nics)
    std::sort(nics.begin(), nics.end(), [&](int x, int y) {
      const auto& ax = adapter_of[static_cast<std::size_t>(x)];
      const auto& ay = adapter_of[static_cast<std::size_t>(y)];
      if (ax != ay) return natural_less(ax, ay);
      return raw[static_cast<std::size_t>(x)].port < raw[static_cast<std::size_t>(y)].port;
    });

  // Rails: adapter name -> rail from complete hosts; then leaf -> rail from every named NIC;
  // then each host's NICs take their name's rail, or their leaf's, or the first free one.
  std::map<std::string, std::map<int, int>> name_votes;
  for (const auto& [name, nics] : host_nics) {
    if (static_cast<int>(nics.size()) != rails) continue;
    for (int rank = 0; rank < rails; ++rank) {
      const int r = nics[static_cast<std::size_t>(rank)];
      if (!adapter_of[static_cast<std::size_t>(r)].empty())
        ++name_votes[adapter_of[static_cast<std::size_t>(r)]][rank];
    }
  }
  std::vector<int> name_rail(raw.size(), -1);
  std::map<int, std::map<int, int>> leaf_votes;
  for (std::size_t r = 0; r < raw.size(); ++r) {
    auto it = name_votes.find(adapter_of[r]);
    if (adapter_of[r].empty() || it == name_votes.end()) continue;
    name_rail[r] = majority(it->second, -1);
    ++leaf_votes[raw[r].sw][name_rail[r]];
  }
  std::vector<int> rail_of(raw.size(), -1);
  for (const auto& [name, nics] : host_nics) {
    std::vector<bool> taken(static_cast<std::size_t>(rails), false);
    std::vector<int> unplaced;
    for (int r : nics) {
      int rail = name_rail[static_cast<std::size_t>(r)];
      if (rail < 0)
        if (auto lt = leaf_votes.find(raw[static_cast<std::size_t>(r)].sw); lt != leaf_votes.end())
          rail = majority(lt->second, -1);
      if (rail >= 0 && !taken[static_cast<std::size_t>(rail)]) {
        taken[static_cast<std::size_t>(rail)] = true;
        rail_of[static_cast<std::size_t>(r)] = rail;
      } else {
        unplaced.push_back(r);
      }
    }
    for (int r : unplaced) {
      const auto free = std::find(taken.begin(), taken.end(), false);
      const auto rail = static_cast<int>(free - taken.begin());
      taken[static_cast<std::size_t>(rail)] = true;
      rail_of[static_cast<std::size_t>(r)] = rail;
    }
  }
  if (rails > 1 && leaf_votes.empty())  // no adapter names: rails are the host's port order
    for (std::size_t r = 0; r < raw.size(); ++r) ++leaf_votes[raw[r].sw][rail_of[r]];

  // Tiers: breadth-first distance from the switches that hold NICs.
  std::vector<int> tier(n_nodes, 0);
  std::deque<int> queue;
  for (const RawNic& r : raw)
    if (tier[static_cast<std::size_t>(r.sw)] == 0) {
      tier[static_cast<std::size_t>(r.sw)] = 1;
      queue.push_back(r.sw);
    }
  std::vector<std::vector<int>> switch_adj(n_nodes);
  for (const IbLink& l : file.links)
    if (l.a != l.b && is_switch(l.a) && is_switch(l.b)) {
      switch_adj[static_cast<std::size_t>(l.a)].push_back(l.b);
      switch_adj[static_cast<std::size_t>(l.b)].push_back(l.a);
    }
  while (!queue.empty()) {
    const int s = queue.front();
    queue.pop_front();
    for (int t : switch_adj[static_cast<std::size_t>(s)])
      if (tier[static_cast<std::size_t>(t)] == 0) {
        tier[static_cast<std::size_t>(t)] = tier[static_cast<std::size_t>(s)] + 1;
        queue.push_back(t);
      }
  }
  std::vector<int> switch_nodes;
  for (std::size_t i = 0; i < n_nodes; ++i) {
    if (!is_switch(static_cast<int>(i))) continue;
    if (tier[i] == 0) {
      plan.notes.push_back(fmt::format("line {}: switch {} reaches no host; left out",
                                       file.nodes[i].line,
                                       switch_short_name(file.nodes[i].description)));
      continue;
    }
    if (tier[i] > 3)
      throw core::Error(fmt::format("line {}", file.nodes[i].line),
                        switch_short_name(file.nodes[i].description),
                        fmt::format("switch is {} tiers above the hosts; at most 3 tiers "
                                    "(leaf, spine, core) are supported",
                                    tier[i]),
                        file.source);
    switch_nodes.push_back(static_cast<int>(i));
    plan.tiers = std::max(plan.tiers, tier[i]);
  }
  std::sort(switch_nodes.begin(), switch_nodes.end(), [&](int x, int y) {
    const IbNode& a = file.nodes[static_cast<std::size_t>(x)];
    const IbNode& b = file.nodes[static_cast<std::size_t>(y)];
    if (tier[static_cast<std::size_t>(x)] != tier[static_cast<std::size_t>(y)])
      return tier[static_cast<std::size_t>(x)] < tier[static_cast<std::size_t>(y)];
    const std::string na = switch_short_name(a.description), nb = switch_short_name(b.description);
    if (na != nb) return natural_less(na, nb);
    return a.guid < b.guid;
  });
  std::vector<int> switch_index(n_nodes, -1);
  for (std::size_t k = 0; k < switch_nodes.size(); ++k) {
    const auto i = static_cast<std::size_t>(switch_nodes[k]);
    switch_index[i] = static_cast<int>(k);
    const IbNode& n = file.nodes[i];
    const int ports = n.port_count - sharp_ports[i];
    plan.radix = std::max(plan.radix, ports);
    PlanSwitch s{switch_short_name(n.description), n.guid, tier[i], ports, 0, -1};
    if (s.tier == 1)
      if (auto it = leaf_votes.find(static_cast<int>(i)); it != leaf_votes.end())
        s.rail = majority(it->second, -1);
    plan.switches.push_back(std::move(s));
  }

  // Pods: connected groups of tier-1 and tier-2 switches (3 tiers only).
  if (plan.tiers == 3) {
    std::vector<int> pod(plan.switches.size(), -1);
    int pods = 0;
    for (std::size_t k = 0; k < plan.switches.size(); ++k) {
      if (plan.switches[k].tier > 2 || pod[k] >= 0) continue;
      std::deque<int> q{switch_nodes[k]};
      pod[k] = pods;
      while (!q.empty()) {
        const int s = q.front();
        q.pop_front();
        for (int t : switch_adj[static_cast<std::size_t>(s)]) {
          const int kt = switch_index[static_cast<std::size_t>(t)];
          if (kt < 0 || plan.switches[static_cast<std::size_t>(kt)].tier > 2 ||
              pod[static_cast<std::size_t>(kt)] >= 0)
            continue;
          pod[static_cast<std::size_t>(kt)] = pods;
          q.push_back(t);
        }
      }
      ++pods;
    }
    for (std::size_t k = 0; k < plan.switches.size(); ++k)
      plan.switches[k].pod = std::max(0, pod[k]);
  }

  // Hosts and NICs in natural order.
  std::vector<int> plan_nic_of_raw(raw.size(), -1);
  for (std::size_t h = 0; h < host_names.size(); ++h) {
    plan.hosts.push_back({host_names[h]});
    std::vector<int> nics = host_nics[host_names[h]];
    std::sort(nics.begin(), nics.end(), [&](int x, int y) {
      return rail_of[static_cast<std::size_t>(x)] < rail_of[static_cast<std::size_t>(y)];
    });
    for (int r : nics) {
      const RawNic& rn = raw[static_cast<std::size_t>(r)];
      if (switch_index[static_cast<std::size_t>(rn.sw)] < 0) continue;
      plan_nic_of_raw[static_cast<std::size_t>(r)] = static_cast<int>(plan.nics.size());
      const IbNode& ca = file.nodes[static_cast<std::size_t>(rn.ca)];
      plan.nics.push_back({static_cast<int>(h), rail_of[static_cast<std::size_t>(r)],
                           ca.description, ca.guid, rn.port});
    }
  }

  // Cables: NIC cables in NIC order, then switch cables by lower switch and port.
  for (std::size_t r = 0; r < raw.size(); ++r) {
    const int k = plan_nic_of_raw[r];
    if (k < 0) continue;
    const RawNic& rn = raw[r];
    plan.cables.push_back({{true, k, rn.port},
                           {false, switch_index[static_cast<std::size_t>(rn.sw)], rn.sw_port},
                           rn.link->width,
                           rn.link->speed,
                           rn.link->gbps,
                           rn.link->line});
  }
  std::sort(plan.cables.begin(), plan.cables.end(),
            [](const PlanCable& x, const PlanCable& y) { return x.lower.index < y.lower.index; });
  std::vector<PlanCable> switch_cables;
  for (const IbLink& l : file.links) {
    if (l.a == l.b) continue;
    const int ka = switch_index[static_cast<std::size_t>(l.a)];
    const int kb = switch_index[static_cast<std::size_t>(l.b)];
    if (ka < 0 || kb < 0) continue;
    PlanEnd a{false, ka, l.a_port}, b{false, kb, l.b_port};
    const int ta = plan.switches[static_cast<std::size_t>(ka)].tier;
    const int tb = plan.switches[static_cast<std::size_t>(kb)].tier;
    if (tb < ta || (ta == tb && kb < ka)) std::swap(a, b);
    switch_cables.push_back({a, b, l.width, l.speed, l.gbps, l.line});
  }
  std::sort(switch_cables.begin(), switch_cables.end(), [](const PlanCable& x, const PlanCable& y) {
    if (x.lower.index != y.lower.index) return x.lower.index < y.lower.index;
    return x.lower.port < y.lower.port;
  });
  plan.cables.insert(plan.cables.end(), switch_cables.begin(), switch_cables.end());

  // Rail-optimized when rails > 1 and, on every leaf, most NICs share one rail.
  plan.rail_optimized = rails > 1;
  std::map<int, std::map<int, int>> leaf_rails;
  for (const PlanCable& c : plan.cables)
    if (c.lower.nic)
      ++leaf_rails[c.upper.index][plan.nics[static_cast<std::size_t>(c.lower.index)].rail];
  for (const auto& [leaf, votes] : leaf_rails) {
    int total = 0, top = 0;
    for (const auto& [rail, n] : votes) {
      total += n;
      top = std::max(top, n);
    }
    if (2 * top <= total) plan.rail_optimized = false;
  }
  for (const auto& s : plan.switches)
    if (s.tier == 1 && s.rail < 0) plan.rail_optimized = false;
  for (auto& s : plan.switches)
    if (s.tier == 1 && s.rail < 0) s.rail = 0;
  for (const auto& w : file.warnings) plan.notes.push_back(w);
  return plan;
}

}  // namespace twin::topology
