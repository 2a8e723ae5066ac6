#pragma once
/// A fabric as an `ibnetdiscover` dump, and seeded faults applied to such a dump: what a real
/// fabric looks like after a bad day, for tests and what-ifs ("what if these cables were fixed?").
///
/// Export: every switch a `Switch <radix>` node named by its label; every NIC a one-port CA
/// described "<host> mlx5_<rail>" (the Linux mlx5 naming, so an import finds the host and the
/// rail again); made-up GUIDs in NVIDIA's OUI (00:02:c9), stable per vertex. Link width x speed
/// is the `<W>x<SPEED>` carrying the link's rate (400 Gb/s -> 4xNDR). Fabric-manager hosts are not
/// vertices, so they are not exported (the BOM of a round trip matches when there are none).
///
/// Faults (each picks uniformly with a seeded xoshiro256** stream; same seed, same faults):
/// - remove k cables: switch-to-switch cables (NIC cables too with `include_nic_cables`);
/// - downgrade k links: half the lanes (4x -> 2x, as a port that trained down) or, for 1x links,
///   the next lower speed;
/// - swap two cables: two NIC cables on different leaves exchange their switch ends (a miswire;
///   on a rail-optimized fabric usually one that puts each NIC on another rail's leaf).

#include <cstdint>
#include <string>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/ibnetdiscover.hpp"

namespace twin::topology {

IbnetFile to_ibnetdiscover(const Fabric& fabric);

struct FaultSpec {
  int remove_cables = 0;
  int downgrade_links = 0;
  int swap_cable_pairs = 0;
  bool include_nic_cables = false;
  std::uint64_t seed = 1;
};

/// Applies the faults in place; returns one line per fault ("removed: A[3] - B[7]").
std::vector<std::string> apply_faults(IbnetFile& file, const FaultSpec& spec);

}  // namespace twin::topology
