#include "workload/moe_dispatch.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"

namespace twin::workload {

double expert_hit_probability(int experts, int in_set, int top_k) {
  // P(no expert in the set) = prod_{i < k} (E - n - i) / (E - i), drawing k distinct experts.
  double miss = 1.0;
  for (int i = 0; i < top_k; ++i) {
    const double left = static_cast<double>(experts - in_set - i);
    if (left <= 0) return 1.0;
    miss *= left / static_cast<double>(experts - i);
  }
  return 1.0 - miss;
}

double expert_hit_probability(const ModelSpec& model, int in_set) {
  const int groups = model.router_groups, selected = model.router_group_topk;
  if (groups <= 0) return expert_hit_probability(model.experts, in_set, model.top_k);
  const int per_group = model.experts / groups, pool = selected * per_group;
  if (in_set < per_group && per_group % in_set == 0)
    return static_cast<double>(selected) / groups *
           expert_hit_probability(pool, in_set, model.top_k);
  if (in_set % per_group != 0) return expert_hit_probability(model.experts, in_set, model.top_k);
  // j whole groups: P(j' of them among the M selected) is hypergeometric.
  const int j = in_set / per_group;
  auto choose = [](int n, int k) {
    if (k < 0 || k > n) return 0.0;
    double c = 1.0;
    for (int i = 1; i <= k; ++i) c = c * (n - k + i) / i;
    return c;
  };
  double hit = 0;
  for (int jj = 1; jj <= std::min(j, selected); ++jj)
    hit += choose(j, jj) * choose(groups - j, selected - jj) / choose(groups, selected) *
           expert_hit_probability(pool, jj * per_group, model.top_k);
  return hit;
}

FlexDispatch flex_dispatch(const ModelSpec& model, int ep,
                           const std::vector<std::vector<int>>& groups, int gpus_per_node,
                           double token_bytes) {
  FlexDispatch f;
  for (const auto& group : groups) {
    std::map<int, std::vector<int>> by_node;
    for (int rank : group) by_node[rank / gpus_per_node].push_back(rank);
    const int nodes = static_cast<int>(by_node.size());
    const int per_node = static_cast<int>(by_node.begin()->second.size());
    for (const auto& [node, members] : by_node)
      if (static_cast<int>(members.size()) != per_node)
        throw core::Error("training.moe_dispatcher", "flex",
                          fmt::format("an EP group has {} ranks on node {} and {} on node {}: the "
                                      "flex dispatcher is modelled for groups spread evenly",
                                      members.size(), node, per_node, by_node.begin()->first));
    if (f.nodes > 0 && (nodes != f.nodes || per_node != f.per_node))
      throw core::Error("training.moe_dispatcher", "flex",
                        fmt::format("EP groups of different shapes ({} nodes of {} ranks and {} of "
                                    "{}): the flex dispatcher is modelled for groups alike",
                                    f.nodes, f.per_node, nodes, per_node));
    f.nodes = nodes;
    f.per_node = per_node;
    if (nodes > 1)
      for (int j = 0; j < per_node; ++j) {
        std::vector<int> rail;
        for (const auto& entry : by_node) rail.push_back(entry.second[j]);
        f.rails.push_back(std::move(rail));
      }
    if (per_node > 1)
      for (auto& entry : by_node) f.local.push_back(entry.second);
  }
  const int per_gpu = model.experts / ep;
  const double node_hit = expert_hit_probability(model, per_gpu * f.per_node);
  const double gpu_hit = expert_hit_probability(model, per_gpu);
  f.rail_bytes = f.nodes * token_bytes * node_hit;
  f.local_bytes = f.per_node * f.nodes * token_bytes * gpu_hit;
  return f;
}

}  // namespace twin::workload
