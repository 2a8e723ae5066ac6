#include "topology/placement.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace twin::topology {

bool Placement::identity() const {
  for (std::size_t r = 0; r < gpu_of_rank.size(); ++r)
    if (gpu_of_rank[r] != static_cast<int>(r)) return false;
  return true;
}

std::vector<std::vector<int>> Placement::map(const std::vector<std::vector<int>>& groups) const {
  std::vector<std::vector<int>> out = groups;
  for (auto& g : out)
    for (int& rank : g) rank = gpu_of_rank[static_cast<std::size_t>(rank)];
  return out;
}

int job_ranks(const Fabric& fabric, int tp, int pp, int dp) {
  if (!fabric.is_explicit() && fabric.usable_host_count() == fabric.cluster().nodes)
    return fabric.gpu_count();
  return tp * pp * dp;
}

Placement place_job(const Fabric& fabric, int ranks) {
  const int per = fabric.cluster().gpus_per_node;
  const int hosts = fabric.cluster().nodes;
  if (ranks <= 0) ranks = fabric.gpu_count();
  const int needed = (ranks + per - 1) / per;
  Placement p;
  int drained = 0, down = 0, incomplete = 0;
  for (int h = 0; h < hosts; ++h) {
    if (fabric.host_state(h) == HostState::drained) ++drained;
    if (fabric.host_state(h) == HostState::down) ++down;
    if (fabric.host_state(h) == HostState::up && !fabric.host_usable(h)) ++incomplete;
    if (fabric.host_usable(h) && static_cast<int>(p.hosts.size()) < needed) p.hosts.push_back(h);
  }
  if (static_cast<int>(p.hosts.size()) < needed)
    throw core::Error(
        "parallelism", fmt::format("{} GPUs", ranks),
        fmt::format("the job needs {} hosts of {} GPUs but only {} of the fabric's "
                    "{} hosts are usable ({} drained, {} down, {} missing an "
                    "adapter cable)",
                    needed, per, fabric.usable_host_count(), hosts, drained, down, incomplete));
  p.gpu_of_rank.resize(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r)
    p.gpu_of_rank[static_cast<std::size_t>(r)] =
        p.hosts[static_cast<std::size_t>(r / per)] * per + r % per;
  return p;
}

}  // namespace twin::topology
