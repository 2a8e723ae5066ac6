#pragma once
// What the fabric view draws, computed off the GUI thread: per-tier load distributions, per-pod
// aggregates, the hottest links, the links a failure rerouted traffic onto and, for fabrics small
// enough to draw switch by switch, every switch and every switch pair.
//
// Utilisation of a directed link = bytes it carries in one step / (its capacity in this fabric
// state x step time). Parallel cables between the same two switches are one drawn edge carrying
// the busiest of them. "Rerouted onto" compares bytes per step with a reference run on the same
// fabric (the healthy fabric, or a pinned baseline): a link counts when its bytes grew by more
// than 20 % and by at least 5 % of the busiest link's bytes, so the step-time change of a failure
// (which lowers every utilisation) does not hide where the traffic went.
//
// Level of detail: up to kDetailMaxSwitches switches (8,192 GPUs on radix-64 switches) every
// switch and cable is drawn; above, pods and tiers are drawn as aggregates, so the drawing costs
// O(pods), not O(cables), and stays under a second at 131,072 GPUs.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gui/fabric_deviations.hpp"
#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"

namespace twin::gui {

inline constexpr int kDetailMaxSwitches = 700;
inline constexpr int kHistogramBins = 20;
inline constexpr int kHottestLinks = 8;

enum class Tier { leaf = 0, spine = 1, core = 2 };

/// One tier of cables (node-leaf, leaf-spine, spine-core): the distribution of its directed
/// links' utilisation.
struct TierLoad {
  std::string name;  ///< "node - leaf", "leaf - spine", "spine - core"
  int links = 0;     ///< directed links that are up
  double mean = 0, p50 = 0, p99 = 0, max = 0;
  std::array<int, kHistogramBins> histogram{};  ///< over [0, FabricDigest::scale_max]
};

struct DigestSwitch {
  Tier tier = Tier::leaf;
  int pod = 0;       ///< pod of a leaf or spine; plane of a core
  int index = 0;     ///< within its tier
  std::string name;  ///< the dump's name on an imported fabric ("A09-P1-IBLEAF-04-04")
  double bytes = 0;  ///< traffic through it per step
  bool down = false;
  int uplinks = 0;   ///< cables to the tier above
  int adapters = 0;  ///< leaves: adapter cables landing on it
  int rail = -1;     ///< leaves of an imported fabric: the rail it serves (-1: unknown)
};

/// Every cable between two switches (parallel cables merged).
struct DigestEdge {
  std::uint32_t lower = 0, upper = 0;  ///< indices into FabricDigest::switches
  int cables = 0;
  float utilisation = 0;      ///< busiest direction of the busiest cable
  float ref_utilisation = 0;  ///< the same in the reference run (when there is one)
  float capacity_factor = 1;  ///< 1 healthy, 0 down, in between degraded
  bool rerouted = false;      ///< carries traffic a failure moved here (see the header)
  bool hottest = false;       ///< among the kHottestLinks busiest links
};

struct DigestUnit {
  int pod = 0;
  int first_leaf = 0, last_leaf = 0;  ///< leaves its nodes plug into
  int nodes = 0;
};

struct DigestPod {
  int index = 0;
  int nodes = 0, units = 0;
  double leaf_spine_max = 0, leaf_spine_mean = 0;
  double spine_core_max = 0, spine_core_mean = 0;
  double delta_max = 0;  ///< largest utilisation increase over the reference (points of 1)
  /// Utilisation distributions of the pod's uplinks, over [0, FabricDigest::scale_max].
  std::array<int, kHistogramBins> leaf_spine_histogram{}, spine_core_histogram{};
  int switches_down = 0, cables_down = 0, cables_degraded = 0, rerouted_links = 0;
};

struct HotLink {
  std::string name;  ///< "leaf[3] -> spine[1]"
  double utilisation = 0;
  double ref_utilisation = 0;
};

struct FabricDigest {
  int gpus = 0, nodes = 0, tiers = 0, radix = 0, rails = 0;
  int pods = 0, leaves = 0, spines = 0, cores = 0, leaves_per_pod = 0, spines_per_pod = 0;
  double port_gbps = 0;
  std::size_t link_count = 0;
  bool detailed = false;
  bool has_loads = false;
  bool has_reference = false;
  std::string reference_name;  ///< "healthy fabric" or "baseline"
  double step_s = 0;
  double traffic_bytes = 0;  ///< all cables, both directions, per step
  double utilisation_max = 0;
  double scale_max = 1;      ///< colour scale top: the busiest link rounded up to a nice value
  double delta_abs_max = 0;  ///< largest |utilisation change| on healthy cables (scale of change)
  std::array<TierLoad, 3> tier_loads;
  std::vector<DigestPod> pod_loads;
  std::vector<HotLink> hottest;
  int rerouted_links = 0, switches_down = 0, cables_down = 0, cables_degraded = 0;
  // Detailed mode only.
  std::vector<DigestSwitch> switches;
  std::vector<DigestEdge> edges;
  std::vector<DigestUnit> units;
  /// An imported fabric's deviations from the ideal fat tree (see fabric_deviations.hpp).
  FabricDeviations deviations;
};

/// Builds the digest. `link_bytes` (per LinkId, one step; empty: no loads), `step_s` and
/// `state` come from the run; `ref_link_bytes` / `ref_step_s` from a reference run on the same
/// fabric (empty: none). `force_aggregate` draws pods even for a small fabric.
FabricDigest digest_fabric(const topology::Fabric& fabric, const std::vector<double>& link_bytes,
                           double step_s, const topology::FabricState* state,
                           const std::vector<double>& ref_link_bytes = {}, double ref_step_s = 0,
                           const std::string& reference_name = {}, bool force_aggregate = false);

}  // namespace twin::gui
