#include "netsim/single_level.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace twin::netsim {
namespace {

// The native engine's tolerances (netsim/native_engine.cpp): a link is saturated when less than
// this fraction of it is left, and events closer than this (relative) are one batch.
constexpr double kSaturated = 1e-12;
constexpr double kSameTime = 1e-12;

/// Union-find over link indices (path halving, union by index: deterministic).
class Components {
 public:
  explicit Components(std::size_t links) : parent_(links) {
    for (std::size_t i = 0; i < links; ++i) parent_[i] = static_cast<std::uint32_t>(i);
  }
  std::uint32_t find(std::uint32_t x) {
    while (parent_[x] != x) {
      parent_[x] = parent_[parent_[x]];
      x = parent_[x];
    }
    return x;
  }
  /// Joins two distinct roots; returns the joined root.
  std::uint32_t unite_roots(std::uint32_t a, std::uint32_t b) {
    parent_[std::max(a, b)] = std::min(a, b);
    return std::min(a, b);
  }

 private:
  std::vector<std::uint32_t> parent_;
};

}  // namespace

void RouteTable::add(const std::vector<topology::Hop>& hops) {
  for (const auto& hop : hops) {
    if (hop.fraction != 1.0 && fraction.empty()) fraction.assign(link.size(), 1.0);
    link.push_back(static_cast<std::uint32_t>(hop.link.index()));
    if (!fraction.empty()) fraction.push_back(hop.fraction);
  }
  begin.push_back(static_cast<std::uint32_t>(link.size()));
}

std::optional<SingleLevelResult> solve_single_level(const RouteTable& routes,
                                                    const std::vector<double>& bytes,
                                                    const std::vector<double>& weight,
                                                    const std::vector<double>& capacity) {
  const std::size_t n = routes.size(), links = capacity.size();
  // Flows the engine would finish at activation (nothing to send or no link) take no part.
  auto moving = [&](std::size_t f) {
    return bytes[f] > 0 && routes.begin[f] != routes.begin[f + 1];
  };
  for (std::size_t f = 0; f < n; ++f)
    if (!(weight[f] > 0) || !(bytes[f] >= 0)) return std::nullopt;  // the engine says why
  for (std::uint32_t l : routes.link)
    if (l >= links || !(capacity[l] > 0)) return std::nullopt;

  // Components of the flow-link graph and the weight W_l on every link.
  Components comps(links);
  std::vector<double> load(links, 0.0);
  for (std::size_t f = 0; f < n; ++f) {
    if (!moving(f)) continue;
    std::uint32_t root = comps.find(routes.link[routes.begin[f]]);
    for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h) {
      const std::uint32_t other = comps.find(routes.link[h]);
      if (other != root) root = comps.unite_roots(root, other);
      load[routes.link[h]] += routes.fraction_at(h) * weight[f];
    }
  }
  // lambda_c: the first level of progressive filling on each component.
  std::vector<double> level(links, std::numeric_limits<double>::infinity());
  for (std::size_t l = 0; l < links; ++l)
    if (load[l] > 0) {
      const std::uint32_t c = comps.find(static_cast<std::uint32_t>(l));
      level[c] = std::min(level[c], capacity[l] / load[l]);
    }
  std::vector<char> saturated(links, 0);
  for (std::size_t l = 0; l < links; ++l)
    if (load[l] > 0) {
      const double lambda = level[comps.find(static_cast<std::uint32_t>(l))];
      saturated[l] = capacity[l] - lambda * load[l] <= kSaturated * capacity[l] ? 1 : 0;
    }

  // Every flow frozen in that round, and every flow of a component done at the same time.
  std::vector<double> done_at(links, -1.0);
  SingleLevelResult result;
  result.link_bytes.assign(links, 0.0);
  for (std::size_t f = 0; f < n; ++f) {
    if (!moving(f)) continue;
    bool frozen = false;
    for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h)
      frozen = frozen || saturated[routes.link[h]] != 0;
    if (!frozen) return std::nullopt;
    const std::uint32_t c = comps.find(routes.link[routes.begin[f]]);
    const double rate = level[c] * weight[f];
    const double t = 0 + bytes[f] / rate;
    if (done_at[c] < 0) {
      done_at[c] = t;
    } else if (t != done_at[c]) {
      return std::nullopt;  // rates change when the first ones finish: the engine's case
    }
    for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h)
      result.link_bytes[routes.link[h]] += bytes[f] * routes.fraction_at(h);
  }

  // The engine processes events closer than kSameTime (relative) as one batch, at the batch's
  // first time: the makespan is the time of the last batch.
  std::vector<double> times;
  for (double t : done_at)
    if (t >= 0) times.push_back(t);
  std::sort(times.begin(), times.end());
  for (std::size_t i = 0; i < times.size();) {
    const double now = times[i];
    const double horizon = now + kSameTime * std::max(1.0, std::abs(now));
    while (i < times.size() && times[i] <= horizon) ++i;
    result.makespan_s = now;
  }
  return result;
}

}  // namespace twin::netsim
