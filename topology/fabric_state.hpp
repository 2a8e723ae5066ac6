#pragma once
/// A fabric state: failures and degradations laid over a Fabric without rebuilding it.
///
/// Each directed link has a capacity factor (1 healthy, 0 < f < 1 degraded — e.g. an NDR link
/// that trained down to fewer lanes — and 0 down); each vertex is up or down. A link is usable
/// when its factor is positive and both of its ends are up. Routing consults the state, as a
/// subnet manager reprograms forwarding tables after a failure; the network engine scales each
/// link's bandwidth by its factor.

#include <cstdint>
#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace twin::topology {

class FabricState {
 public:
  explicit FabricState(const Fabric& fabric);

  /// Takes one direction of a link down.
  void fail_link(LinkId link);
  /// Takes a whole cable (both directions) down.
  void fail_cable(CableId cable);
  /// Degrades both directions of a cable to `factor` (0 < factor <= 1) of its bandwidth.
  void degrade_cable(CableId cable, double factor);
  void degrade_link(LinkId link, double factor);
  /// Takes a switch down (every link touching it becomes unusable).
  void fail_switch(NodeId sw);
  /// Takes a whole server down: its GPUs, NICs and NVSwitch domain.
  void fail_host(int host);
  void restore_all();

  [[nodiscard]] bool node_up(NodeId node) const { return node_up_[node.index()] != 0; }
  [[nodiscard]] double capacity_factor(LinkId link) const { return factor_[link.index()]; }
  [[nodiscard]] bool usable(LinkId link) const {
    const Link& l = fabric_->link(link);
    return factor_[link.index()] > 0.0 && node_up_[l.src.index()] != 0 &&
           node_up_[l.dst.index()] != 0;
  }
  /// Bandwidth the link carries in this state (0 when unusable).
  [[nodiscard]] double bandwidth_Bps(LinkId link) const {
    return usable(link) ? fabric_->link(link).bandwidth_Bps * factor_[link.index()] : 0.0;
  }
  /// True when nothing is failed or degraded.
  [[nodiscard]] bool healthy() const { return changes_ == 0; }
  /// A short, stable text that identifies this state (for caching results by state).
  [[nodiscard]] std::string signature() const;
  [[nodiscard]] const Fabric& fabric() const { return *fabric_; }

 private:
  const Fabric* fabric_;
  std::vector<double> factor_;
  std::vector<std::uint8_t> node_up_;
  int changes_ = 0;
};

}  // namespace twin::topology
