#pragma once
// What the fabric view highlights on an imported fabric: topology::check_fabric()'s deviations
// from the ideal fat tree of the same size, tied to the switches the view draws. Computed in the
// run's worker thread with the rest of the digest.
//
// A wrong-rail cable is drawn from where it should land to where it does. "Where it should
// land" is read from the fabric, not assumed: the leaf serving the adapter's rail that carries
// the most adapters of the hosts sharing a leaf with this host's correctly cabled adapters (its
// scalable unit). For a host whose cabled adapters are all on wrong rails it is unknown (-1).

#include <array>
#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace twin::gui {

enum class DeviationKind { missing_link, slow_link, uneven_uplinks, wrong_rail, missing_adapter };
inline constexpr int kDeviationKinds = 5;

/// "missing_link", ... (as topology::Deviation::kind), and the list's heading for the kind.
const char* deviation_key(DeviationKind kind);
const char* deviation_heading(DeviationKind kind);

struct DigestDeviation {
  DeviationKind kind = DeviationKind::missing_link;
  std::string where, detail;
  int line = 0;  ///< line of the dump (0: none)
  /// Indices into FabricDigest::switches (-1: none, or the fabric is drawn as aggregates):
  /// leaf and spine of a missing link, both ends of a slow switch cable (lower = -1 for a NIC
  /// cable), the switch of uneven uplinks, the leaf a wrong-rail cable lands on (upper).
  int lower = -1, upper = -1;
  int expected_leaf = -1;  ///< wrong_rail: the leaf it should land on (see the header)
  int host = -1, rail = -1;
  int have = 0, want = 0;
  std::vector<int> host_leaves;  ///< missing_adapter: leaves its cabled adapters land on
};

/// The deviations of an imported fabric (empty, `imported` false, for a generated one).
struct FabricDeviations {
  bool imported = false;
  std::string source;  ///< the dump's file name
  std::string ideal;   ///< the ideal the fabric is compared with, in words
  std::vector<DigestDeviation> items;
  std::array<int, kDeviationKinds> counts{};
  std::vector<std::string> notes;
  int ideal_leaf_up = 0;  ///< uplinks of a leaf in the ideal fat tree
  int hosts = 0, usable_hosts = 0;
  double bisection_GBps = 0, ideal_bisection_GBps = 0;
  double worst_leaf_ratio = 0, ideal_leaf_ratio = 0;
  std::string worst_leaf;
  [[nodiscard]] int count(DeviationKind kind) const { return counts[static_cast<int>(kind)]; }
};

/// Checks an imported fabric; `slot` maps a switch's NodeId index to its index in the digest's
/// switches (empty when the fabric is drawn as aggregates). Throws what check_fabric throws.
FabricDeviations digest_deviations(const topology::Fabric& fabric,
                                   const std::vector<std::uint32_t>& slot);

}  // namespace twin::gui
