#include "gui/fabric_deviations.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>

#include "topology/fabric_check.hpp"

namespace twin::gui {

const char* deviation_key(DeviationKind kind) {
  switch (kind) {
    case DeviationKind::missing_link:
      return "missing_link";
    case DeviationKind::slow_link:
      return "slow_link";
    case DeviationKind::uneven_uplinks:
      return "uneven_uplinks";
    case DeviationKind::wrong_rail:
      return "wrong_rail";
    case DeviationKind::missing_adapter:
      return "missing_adapter";
  }
  return "";
}

const char* deviation_heading(DeviationKind kind) {
  switch (kind) {
    case DeviationKind::missing_link:
      return "missing leaf - spine cables";
    case DeviationKind::slow_link:
      return "links below the fabric's width or speed";
    case DeviationKind::uneven_uplinks:
      return "switches with fewer uplinks";
    case DeviationKind::wrong_rail:
      return "cables on another rail's leaf";
    case DeviationKind::missing_adapter:
      return "hosts with an uncabled adapter";
  }
  return "";
}

namespace {

/// The leaf a wrong-rail adapter of `host` on `rail` should land on (see the header), or -1.
int expected_leaf(const topology::Fabric& f, const std::vector<std::vector<int>>& nics_of_leaf,
                  int host, int rail) {
  const int rails = f.cluster().nics_per_node;
  std::map<int, int> votes;
  for (int r = 0; r < rails; ++r) {
    const int n = host * rails + r;
    if (!f.nic_present(n) || f.rail_of_leaf(f.leaf_of_nic(n)) != r) continue;
    for (int mate_nic : nics_of_leaf[static_cast<std::size_t>(f.leaf_of_nic(n))]) {
      const int mate = f.host_of_nic(mate_nic);
      const int same_rail = mate * rails + rail;
      if (mate == host || !f.nic_present(same_rail)) continue;
      const int leaf = f.leaf_of_nic(same_rail);
      if (f.rail_of_leaf(leaf) == rail) ++votes[leaf];
    }
  }
  int best = -1, most = 0;
  for (const auto& [leaf, v] : votes)
    if (v > most) {
      most = v;
      best = leaf;
    }
  return best;
}

}  // namespace

FabricDeviations digest_deviations(const topology::Fabric& fabric,
                                   const std::vector<std::uint32_t>& slot) {
  FabricDeviations out;
  if (!fabric.is_explicit()) return out;
  const topology::FabricCheck check = topology::check_fabric(fabric);
  out.imported = true;
  out.source = std::filesystem::path(fabric.plan().source).filename().string();
  out.ideal = "every leaf cabled to each spine of its pod by " +
              std::to_string(check.parallel_cables) + " cable(s) (" +
              std::to_string(check.ideal_leaf_up) + " uplinks); switch links " + check.switch_link +
              ", adapter links " + check.nic_link;
  out.notes = check.notes;
  out.ideal_leaf_up = check.ideal_leaf_up;
  out.hosts = check.hosts;
  out.usable_hosts = check.usable_hosts;
  out.bisection_GBps = check.bisection_GBps;
  out.ideal_bisection_GBps = check.ideal_bisection_GBps;
  out.worst_leaf_ratio = check.worst_leaf_ratio;
  out.ideal_leaf_ratio = check.ideal_leaf_ratio;
  out.worst_leaf = check.worst_leaf;

  // Plan switch k is the fabric's switch vertex first_leaf + k (tier-ordered layout).
  const std::size_t first_switch = fabric.leaf(0).index();
  auto drawn = [&](int plan_switch) {
    if (plan_switch < 0 || slot.empty()) return -1;
    const std::uint32_t s = slot[first_switch + static_cast<std::size_t>(plan_switch)];
    return s == UINT32_MAX ? -1 : static_cast<int>(s);
  };
  auto drawn_leaf = [&](int leaf) { return drawn(leaf); };  // leaves come first
  const int rails = fabric.cluster().nics_per_node;
  std::vector<std::vector<int>> nics_of_leaf(static_cast<std::size_t>(fabric.geometry().leaves));
  for (int n = 0; n < fabric.nic_count(); ++n)
    if (fabric.nic_present(n))
      nics_of_leaf[static_cast<std::size_t>(fabric.leaf_of_nic(n))].push_back(n);

  for (const topology::Deviation& dev : check.deviations) {
    DigestDeviation d;
    int k = 0;
    while (k < kDeviationKinds && dev.kind != deviation_key(static_cast<DeviationKind>(k))) ++k;
    if (k == kDeviationKinds) continue;  // a kind this view does not know: the CLI lists it
    d.kind = static_cast<DeviationKind>(k);
    d.where = dev.where;
    d.detail = dev.detail;
    d.line = dev.line;
    d.lower = drawn(dev.lower_switch);
    d.upper = drawn(dev.upper_switch);
    d.host = dev.host;
    d.rail = dev.rail;
    d.have = dev.have;
    d.want = dev.want;
    if (d.kind == DeviationKind::wrong_rail)
      d.expected_leaf = drawn_leaf(expected_leaf(fabric, nics_of_leaf, d.host, d.rail));
    if (d.kind == DeviationKind::missing_adapter)
      for (int r = 0; r < rails; ++r) {
        const int n = d.host * rails + r;
        if (fabric.nic_present(n)) {
          const int leaf = drawn_leaf(fabric.leaf_of_nic(n));
          if (leaf >= 0) d.host_leaves.push_back(leaf);
        }
      }
    ++out.counts[static_cast<std::size_t>(k)];
    out.items.push_back(std::move(d));
  }
  return out;
}

}  // namespace twin::gui
