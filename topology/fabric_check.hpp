#pragma once
/// How a real (explicit) fabric deviates from the ideal fat tree of the same size, and what
/// the deviations cost in capacity. (The step-time cost needs the job: the CLI runs the step
/// simulation on both the fabric and `ideal_plan`.)
///
/// The ideal is read from the fabric itself, never assumed:
/// - link rate: the most common width x speed of switch-to-switch cables, and of NIC cables;
/// - leaf uplinks: every leaf cabled to every spine of its pod by p parallel cables, p the most
///   common count over (leaf, spine) pairs that have cables; spines: the largest up-count found;
/// - rails: every NIC on a leaf of its own rail; every host with all R adapters cabled.
/// Deviations found: missing_link (a (leaf, spine) pair short of p cables), slow_link (a cable
/// below the ideal width or speed), uneven_uplinks (a leaf or spine with fewer uplinks than the
/// ideal), wrong_rail (a NIC cabled to another rail's leaf), missing_adapter (a host rail with
/// no cable), and notes from the import (SHARP nodes, loopbacks).
///
/// Costs: bisection (half the narrowest tier's capacity, as in topology/bom.hpp) of the fabric
/// and of the ideal; the worst per-leaf ratio of down capacity (NIC cables) to up capacity
/// (uplinks), against the ideal's.

#include <string>
#include <vector>

#include "topology/fabric.hpp"
#include "topology/fabric_plan.hpp"

namespace twin::topology {

struct Deviation {
  std::string kind;   ///< missing_link, slow_link, uneven_uplinks, wrong_rail, missing_adapter
  std::string where;  ///< switch, host or cable ends
  std::string detail;
  int line = 0;  ///< line of the dump, when one cable is at fault
  /// What it is about, for tools that draw it (-1: not applicable). Switches are indices into
  /// the plan's switches: the leaf and spine of a missing_link, the switch of uneven_uplinks,
  /// the lower and upper switch of a slow switch cable, the leaf of a wrong_rail or slow NIC
  /// cable. `host` and `rail` name the adapter of a NIC cable or a missing_adapter (its first
  /// missing rail).
  int lower_switch = -1, upper_switch = -1;
  int host = -1, rail = -1;
  int have = 0, want = 0;  ///< cables (missing_link) or uplinks (uneven_uplinks): found, ideal
};

struct FabricCheck {
  std::vector<Deviation> deviations;
  std::vector<std::string> notes;
  std::string switch_link = "none", nic_link = "none";  ///< ideal width x speed
  double switch_link_gbps = 0, nic_link_gbps = 0;
  int parallel_cables = 0;  ///< ideal cables per (leaf, spine) pair
  int ideal_leaf_up = 0, ideal_spine_up = 0;
  int hosts = 0, usable_hosts = 0;
  double bisection_GBps = 0, ideal_bisection_GBps = 0;
  double worst_leaf_ratio = 0, ideal_leaf_ratio = 0;
  std::string worst_leaf;
  [[nodiscard]] int count(const std::string& kind) const;
};

/// Checks an explicit fabric (throws core::Error for a generated one: it is ideal by design).
FabricCheck check_fabric(const Fabric& fabric);

/// The fabric repaired: missing (leaf, spine) cables added on free ports, every cable at the
/// ideal rate. NIC placement is kept (the same hosts stay usable), so a job lands on the same
/// GPUs in both.
FabricPlan ideal_plan(const Fabric& fabric, const FabricCheck& check);

}  // namespace twin::topology
