#pragma once
/// Placement: which GPU each rank of a job runs on.
///
/// Ranks fill hosts in fabric order, `gpus_per_node` ranks per host, skipping every host a job
/// cannot use: drained or down in the scheduler's node states, or missing an adapter cable (a NIC
/// without a cable cannot reach the fabric). On a generated fabric with every host up this is
/// the identity, rank g on GPU g. Fabric order is rail- and leaf-aligned (natural name order
/// on imports), so consecutive ranks share leaves as a scheduler's topology plugin would place
/// them.

#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace twin::topology {

struct Placement {
  std::vector<int> gpu_of_rank;
  std::vector<int> hosts;  ///< hosts used, in rank order
  [[nodiscard]] bool identity() const;
  /// Rank ids to GPU ids, group by group.
  [[nodiscard]] std::vector<std::vector<int>> map(
      const std::vector<std::vector<int>>& groups) const;
};

/// The GPUs a job of `ranks` ranks should use on this fabric. A generated fabric with every host
/// usable takes exactly its GPUs (0: all of them); otherwise `ranks` must fit the usable hosts.
/// Throws core::Error (field `parallelism`) saying how many hosts are usable and why not.
Placement place_job(const Fabric& fabric, int ranks);

/// Ranks the job runs with: every GPU on a generated fabric with all hosts up (the historical
/// rule: the job is the cluster), else tp x pp x dp.
int job_ranks(const Fabric& fabric, int tp, int pp, int dp);

}  // namespace twin::topology
