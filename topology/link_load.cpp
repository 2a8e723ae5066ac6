#include "topology/link_load.hpp"

#include <algorithm>
#include <map>

namespace twin::topology {

double LinkLoadReport::max_flows() const {
  double m = 0.0;
  for (const auto& t : tiers) m = std::max(m, t.max_flows);
  return m;
}

LinkLoadReport link_load(const Fabric& fabric, const Router& router,
                         const std::vector<std::pair<int, int>>& flows) {
  LinkLoadReport report;
  report.flows_per_link.assign(fabric.link_count(), 0.0);
  std::uint64_t label = 0;
  for (auto [src, dst] : flows) {
    const Route route = router.gpu_route(src, dst, label++);
    for (const Hop& hop : route.hops) report.flows_per_link[hop.link.index()] += hop.fraction;
  }
  std::map<LinkKind, TierLoad> by_kind;
  std::map<LinkKind, double> sum;
  for (std::size_t i = 0; i < report.flows_per_link.size(); ++i) {
    const double load = report.flows_per_link[i];
    if (load <= 0.0) continue;
    const LinkKind kind = fabric.link(LinkId::from_index(i)).kind;
    TierLoad& t = by_kind.try_emplace(kind, TierLoad{kind}).first->second;
    t.max_flows = std::max(t.max_flows, load);
    ++t.links_used;
    sum[kind] += load;
  }
  for (auto& [kind, t] : by_kind) {
    t.mean_flows = sum[kind] / t.links_used;
    report.tiers.push_back(t);
  }
  return report;
}

namespace {
std::vector<std::pair<int, int>> host_shift(const Fabric& fabric, int shift) {
  const int hosts = fabric.cluster().nodes, per = fabric.cluster().gpus_per_node;
  std::vector<std::pair<int, int>> flows;
  if (hosts < 2) return flows;
  flows.reserve(static_cast<std::size_t>(fabric.gpu_count()));
  for (int h = 0; h < hosts; ++h)
    for (int g = 0; g < per; ++g) flows.emplace_back(h * per + g, ((h + shift) % hosts) * per + g);
  return flows;
}
}  // namespace

std::vector<std::pair<int, int>> rail_ring_pattern(const Fabric& fabric) {
  return host_shift(fabric, 1);
}

std::vector<std::pair<int, int>> bisection_shift_pattern(const Fabric& fabric) {
  return host_shift(fabric, std::max(1, fabric.cluster().nodes / 2));
}

}  // namespace twin::topology
