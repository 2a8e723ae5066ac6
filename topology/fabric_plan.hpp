#pragma once
/// An explicit fabric: every host, adapter port, switch and cable as a real cluster has them,
/// from which a Fabric is built when it is not generated from a few numbers (an imported
/// `ibnetdiscover` dump, or a generated fabric after a what-if edit).
///
/// Hosts hold `rails` NIC slots; a slot without an adapter cable is absent (a missing cable or
/// adapter) and its host cannot carry a job. Switches carry their tier (1 = leaf, 2 = spine,
/// 3 = core: distance from the hosts), pod and, for leaves, the rail they serve.

#include <cstdint>
#include <string>
#include <vector>

namespace twin::topology {

struct PlanHost {
  std::string name;
};

struct PlanNic {
  int host = 0;
  int rail = 0;
  std::string adapter;  ///< the adapter's NodeDescription ("a08-p1-dgx-04-c17 mlx5_5")
  std::uint64_t guid = 0;
  int port = 1;  ///< adapter port
};

struct PlanSwitch {
  std::string name;
  std::uint64_t guid = 0;
  int tier = 1;
  int ports = 0;  ///< usable ports (radix), aggregation-node ports excluded
  int pod = 0;
  int rail = -1;  ///< leaves: the rail most of their adapters belong to
};

struct PlanEnd {
  bool nic = false;  ///< true: index into nics; false: into switches
  int index = 0;
  int port = 0;  ///< port number on the switch (or the adapter)
};

struct PlanCable {
  PlanEnd lower, upper;  ///< lower: the NIC, or the lower-tier switch
  int width = 4;
  std::string speed = "NDR";
  double gbps = 400;
  int line = 0;  ///< where the file listed it (0: generated)
};

struct FabricPlan {
  std::string source;
  int rails = 1;
  int tiers = 1;
  int radix = 0;
  bool rail_optimized = true;
  std::vector<PlanHost> hosts;
  std::vector<PlanNic> nics;         ///< present adapter ports only
  std::vector<PlanSwitch> switches;  ///< ordered by tier, then name
  std::vector<PlanCable> cables;
  /// What the import left out and why (SHARP aggregation nodes, loopback cables, ...).
  int aggregation_nodes = 0;
  int routers = 0;
  std::vector<std::string> notes;
};

}  // namespace twin::topology
