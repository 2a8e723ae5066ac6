#include "topology/fabric_state.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace twin::topology {

FabricState::FabricState(const Fabric& fabric)
    : fabric_(&fabric), factor_(fabric.link_count(), 1.0), node_up_(fabric.node_count(), 1) {}

void FabricState::fail_link(LinkId link) {
  degrade_link(link, 0.0);
}

void FabricState::fail_cable(CableId cable) {
  fail_link(fabric_->cable(cable).up);
  fail_link(fabric_->cable(cable).down);
}

void FabricState::degrade_link(LinkId link, double factor) {
  if (link.index() >= factor_.size())
    throw core::Error("link", std::to_string(link.value()), "no such link in this fabric");
  if (!(factor >= 0.0 && factor <= 1.0))
    throw core::Error("capacity_factor", fmt::format("{}", factor), "must be within [0, 1]");
  factor_[link.index()] = factor;
  ++changes_;
}

void FabricState::degrade_cable(CableId cable, double factor) {
  degrade_link(fabric_->cable(cable).up, factor);
  degrade_link(fabric_->cable(cable).down, factor);
}

void FabricState::fail_switch(NodeId sw) {
  if (sw.index() >= node_up_.size() || !fabric_->is_switch(sw))
    throw core::Error("switch", std::to_string(sw.value()), "not a switch of this fabric");
  node_up_[sw.index()] = 0;
  ++changes_;
}

void FabricState::fail_host(int host) {
  const ClusterSpec& c = fabric_->cluster();
  if (host < 0 || host >= c.nodes)
    throw core::Error("host", std::to_string(host), fmt::format("must be within [0, {})", c.nodes));
  for (int g = 0; g < c.gpus_per_node; ++g)
    node_up_[fabric_->gpu(host * c.gpus_per_node + g).index()] = 0;
  for (int n = 0; n < c.nics_per_node; ++n)
    node_up_[fabric_->nic(host * c.nics_per_node + n).index()] = 0;
  node_up_[fabric_->nvswitch(host).index()] = 0;
  ++changes_;
}

void FabricState::restore_all() {
  std::fill(factor_.begin(), factor_.end(), 1.0);
  std::fill(node_up_.begin(), node_up_.end(), 1);
  changes_ = 0;
}

std::string FabricState::signature() const {
  if (healthy()) return "healthy";
  std::string out;
  for (std::size_t i = 0; i < node_up_.size(); ++i)
    if (!node_up_[i]) out += fmt::format("n{}-;", i);
  for (std::size_t i = 0; i < factor_.size(); ++i)
    if (factor_[i] != 1.0) out += fmt::format("l{}x{};", i, factor_[i]);
  return out.empty() ? "healthy" : out;
}

}  // namespace twin::topology
