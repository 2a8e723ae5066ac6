#include "topology/updown.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "topology/routing.hpp"

namespace twin::topology {
namespace {

constexpr std::uint8_t kFar = 255;

}  // namespace

UpDownRouting::UpDownRouting(const Fabric& fabric, const FabricState* state) : fabric_(&fabric) {
  const FatTreeGeometry& g = fabric.geometry();
  leaves_ = g.leaves;
  switches_ = g.leaves + g.spines + g.cores;
  first_switch_ = g.leaves > 0 ? fabric.leaf(0).index() : fabric.node_count();
  tier_.resize(static_cast<std::size_t>(switches_));
  for (int s = 0; s < switches_; ++s) {
    const NodeKind k =
        fabric.node(NodeId::from_index(first_switch_ + static_cast<std::size_t>(s))).kind;
    tier_[static_cast<std::size_t>(s)] = k == NodeKind::leaf ? 1 : k == NodeKind::spine ? 2 : 3;
  }
  // Up and down neighbour links of every switch, in its port order.
  std::vector<std::vector<std::pair<int, Out>>> up(static_cast<std::size_t>(switches_)),
      down(static_cast<std::size_t>(switches_));
  auto usable = [&](LinkId l) { return state == nullptr || state->usable(l); };
  for (const Cable& c : fabric.cables()) {
    if (c.kind == LinkKind::nic_leaf) continue;
    const Link& lu = fabric.link(c.up);
    const int lo = static_cast<int>(lu.src.index() - first_switch_);
    const int hi = static_cast<int>(lu.dst.index() - first_switch_);
    // Rank: tier, then index; the cable's "up" link may join two switches of one tier.
    const bool forward =
        tier_[static_cast<std::size_t>(lo)] < tier_[static_cast<std::size_t>(hi)] ||
        (tier_[static_cast<std::size_t>(lo)] == tier_[static_cast<std::size_t>(hi)] && lo < hi);
    const LinkId rise = forward ? c.up : c.down, fall = forward ? c.down : c.up;
    const int a = forward ? lo : hi, b = forward ? hi : lo;
    const int a_port = forward ? c.lower_port : c.upper_port;
    const int b_port = forward ? c.upper_port : c.lower_port;
    if (usable(rise)) up[static_cast<std::size_t>(a)].push_back({a_port, Out{rise, b}});
    if (usable(fall)) down[static_cast<std::size_t>(b)].push_back({b_port, Out{fall, a}});
  }
  up_.resize(up.size());
  down_.resize(down.size());
  for (std::size_t s = 0; s < up.size(); ++s) {
    std::stable_sort(up[s].begin(), up[s].end(),
                     [](auto& x, auto& y) { return x.first < y.first; });
    std::stable_sort(down[s].begin(), down[s].end(),
                     [](auto& x, auto& y) { return x.first < y.first; });
    for (auto& [p, o] : up[s]) up_[s].push_back(o);
    for (auto& [p, o] : down[s]) down_[s].push_back(o);
  }

  // Tables in rank order (vertex order is tier-major, so index order is rank order).
  const auto L = static_cast<std::size_t>(leaves_);
  down_dist_.assign(static_cast<std::size_t>(switches_) * L, kFar);
  best_.assign(static_cast<std::size_t>(switches_) * L, kFar);
  for (int s = 0; s < switches_; ++s) {
    auto* row = &down_dist_[static_cast<std::size_t>(s) * L];
    if (s < leaves_) row[s] = 0;
    for (const Out& o : down_[static_cast<std::size_t>(s)]) {
      const auto* below = &down_dist_[static_cast<std::size_t>(o.to) * L];
      for (std::size_t l = 0; l < L; ++l)
        if (below[l] != kFar)
          row[l] = std::min<std::uint8_t>(row[l], static_cast<std::uint8_t>(below[l] + 1));
    }
  }
  for (int s = switches_ - 1; s >= 0; --s) {
    auto* row = &best_[static_cast<std::size_t>(s) * L];
    const auto* dd = &down_dist_[static_cast<std::size_t>(s) * L];
    for (std::size_t l = 0; l < L; ++l) row[l] = dd[l];
    for (const Out& o : up_[static_cast<std::size_t>(s)]) {
      const auto* above = &best_[static_cast<std::size_t>(o.to) * L];
      for (std::size_t l = 0; l < L; ++l)
        if (above[l] != kFar)
          row[l] = std::min<std::uint8_t>(row[l], static_cast<std::uint8_t>(above[l] + 1));
    }
  }
}

int UpDownRouting::hops(int src_leaf, int dst_leaf) const {
  const std::uint8_t b =
      best_[static_cast<std::size_t>(src_leaf) * static_cast<std::size_t>(leaves_) +
            static_cast<std::size_t>(dst_leaf)];
  return b == kFar ? -1 : b;
}

int UpDownRouting::divisor(int s) const {
  const FatTreeGeometry& g = fabric_->geometry();
  switch (tier_[static_cast<std::size_t>(s)]) {
    case 1:
      return 1;
    case 2:
      return std::max(1, g.leaf_up);
    default:
      return std::max(1, g.leaf_up) * std::max(1, g.spine_up);
  }
}

std::vector<UpDownRouting::Out> UpDownRouting::candidates(int s, int dst, bool& down_phase) const {
  const auto L = static_cast<std::size_t>(leaves_);
  const auto d = static_cast<std::size_t>(dst);
  const std::uint8_t dd = down_dist_[static_cast<std::size_t>(s) * L + d];
  const std::uint8_t bb = best_[static_cast<std::size_t>(s) * L + d];
  if (!down_phase && dd == bb && dd != kFar) down_phase = true;
  std::vector<Out> out;
  if (down_phase) {
    for (const Out& o : down_[static_cast<std::size_t>(s)])
      if (down_dist_[static_cast<std::size_t>(o.to) * L + d] + 1 == dd) out.push_back(o);
  } else if (bb != kFar) {
    for (const Out& o : up_[static_cast<std::size_t>(s)])
      if (best_[static_cast<std::size_t>(o.to) * L + d] + 1 == bb) out.push_back(o);
  }
  return out;
}

void UpDownRouting::route_between_leaves(Route& route, int src_leaf, int dst_leaf, int src_nic,
                                         int dst_nic, RoutingMode mode, std::uint64_t seed,
                                         std::uint64_t flow_label) const {
  const Fabric& f = *fabric_;
  auto unreachable = [&] {
    throw core::Error(
        "route", fmt::format("{} -> {}", f.node_name(f.nic(src_nic)), f.node_name(f.nic(dst_nic))),
        "unreachable: no usable up/down path between their leaves");
  };
  if (hops(src_leaf, dst_leaf) < 0) unreachable();
  const int d = f.endpoint_index(dst_nic);

  if (mode != RoutingMode::adaptive) {
    int s = src_leaf;
    bool down_phase = false;
    while (s != dst_leaf) {
      const std::vector<Out> c = candidates(s, dst_leaf, down_phase);
      if (c.empty()) unreachable();
      const auto n = static_cast<std::uint64_t>(c.size());
      const std::uint64_t pick =
          mode == RoutingMode::dmodk
              ? (static_cast<std::uint64_t>(d) / static_cast<std::uint64_t>(divisor(s))) % n
              : core::hash_combine(seed, static_cast<std::uint64_t>(src_nic),
                                   static_cast<std::uint64_t>(dst_nic),
                                   flow_label * 4096 + static_cast<std::uint64_t>(s)) %
                    n;
      const Out& o = c[pick];
      route.hops.push_back(Hop{o.link, 1.0});
      route.latency_s += f.link(o.link).latency_s;
      ++route.fabric_hops;
      s = o.to;
    }
    return;
  }

  // Adaptive: level by level, each switch splits what reaches it evenly over its candidates.
  std::map<std::pair<int, bool>, double> frontier{{{src_leaf, false}, 1.0}};
  std::map<LinkId, double> share;
  bool first_path = true;
  while (!frontier.empty()) {
    std::map<std::pair<int, bool>, double> next;
    bool first_taken = false;
    for (const auto& [key, fraction] : frontier) {
      auto [s, down_phase] = key;
      if (s == dst_leaf) continue;
      const std::vector<Out> c = candidates(s, dst_leaf, down_phase);
      if (c.empty()) unreachable();
      const double each = fraction / static_cast<double>(c.size());
      for (const Out& o : c) {
        share[o.link] += each;
        next[{o.to, down_phase}] += each;
      }
      if (first_path && !first_taken) {
        route.latency_s += f.link(c.front().link).latency_s;
        ++route.fabric_hops;
        first_taken = true;
      }
    }
    first_path = first_path && first_taken;
    frontier = std::move(next);
  }
  for (const auto& [link, fraction] : share) route.hops.push_back(Hop{link, fraction});
}

}  // namespace twin::topology
