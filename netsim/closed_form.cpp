#include "netsim/closed_form.hpp"

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

/// Makespan of flows finishing at `times` as the engine batches events: those within
/// kSameTime (relative) of a batch's first time finish with it, at that time.
double batched_makespan(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  double makespan = 0;
  for (std::size_t i = 0; i < times.size();) {
    const double now = times[i];
    const double horizon = now + kSameTime * std::max(1.0, std::abs(now));
    while (i < times.size() && times[i] <= horizon) ++i;
    makespan = now;
  }
  return makespan;
}

bool well_formed(const RouteTable& routes, const std::vector<double>& bytes,
                 const std::vector<double>& weight, const std::vector<double>& capacity) {
  for (std::size_t f = 0; f < routes.size(); ++f)
    if (!(weight[f] > 0) || !(bytes[f] >= 0)) return false;  // the engine says why
  for (std::uint32_t l : routes.link)
    if (l >= capacity.size() || !(capacity[l] > 0)) return false;
  return true;
}

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
  if (!well_formed(routes, bytes, weight, capacity)) return std::nullopt;

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

  std::vector<double> times;
  for (double t : done_at)
    if (t >= 0) times.push_back(t);
  result.makespan_s = batched_makespan(std::move(times));
  return result;
}

std::optional<SingleLevelResult> solve_fixed_allocation(const RouteTable& routes,
                                                        const std::vector<double>& bytes,
                                                        const std::vector<double>& weight,
                                                        const std::vector<double>& capacity) {
  const std::size_t n = routes.size(), links = capacity.size();
  if (!well_formed(routes, bytes, weight, capacity)) return std::nullopt;
  auto moving = [&](std::size_t f) {
    return bytes[f] > 0 && routes.begin[f] != routes.begin[f + 1];
  };

  // Components, link weights W_l, and the flows on each link (CSR).
  Components comps(links);
  std::vector<double> load(links, 0.0);
  std::vector<std::uint32_t> on_begin(links + 1, 0);
  for (std::size_t f = 0; f < n; ++f) {
    if (!moving(f)) continue;
    std::uint32_t root = comps.find(routes.link[routes.begin[f]]);
    for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h) {
      const std::uint32_t l = routes.link[h];
      const std::uint32_t other = comps.find(l);
      if (other != root) root = comps.unite_roots(root, other);
      load[l] += routes.fraction_at(h) * weight[f];
      ++on_begin[l + 1];
    }
  }
  for (std::size_t l = 0; l < links; ++l) on_begin[l + 1] += on_begin[l];
  std::vector<std::uint32_t> on(on_begin[links]);
  {
    std::vector<std::uint32_t> fill(on_begin.begin(), on_begin.end() - 1);
    for (std::size_t f = 0; f < n; ++f)
      if (moving(f))
        for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h)
          on[fill[routes.link[h]]++] = static_cast<std::uint32_t>(f);
  }
  // Links of each component, and how many flows each has to freeze.
  std::vector<std::uint32_t> root_of(links), comp_begin(links + 1, 0), unfrozen(links, 0);
  for (std::size_t l = 0; l < links; ++l) {
    root_of[l] = comps.find(static_cast<std::uint32_t>(l));
    if (load[l] > 0) ++comp_begin[root_of[l] + 1];
  }
  for (std::size_t l = 0; l < links; ++l) comp_begin[l + 1] += comp_begin[l];
  std::vector<std::uint32_t> comp_links(comp_begin[links]);
  {
    std::vector<std::uint32_t> fill(comp_begin.begin(), comp_begin.end() - 1);
    for (std::size_t l = 0; l < links; ++l)
      if (load[l] > 0) comp_links[fill[root_of[l]]++] = static_cast<std::uint32_t>(l);
  }
  for (std::size_t f = 0; f < n; ++f)
    if (moving(f)) ++unfrozen[root_of[routes.link[routes.begin[f]]]];

  // Progressive filling per component, as the engine's first solve does it.
  std::vector<double> rem(capacity), rate(n, 0.0);
  std::vector<std::uint32_t> bottleneck(n, 0);
  std::vector<char> frozen(n, 0);
  for (std::size_t c = 0; c < links; ++c) {
    const std::uint32_t* first = comp_links.data() + comp_begin[c];
    const std::uint32_t* last = comp_links.data() + comp_begin[c + 1];
    double level = 0;
    while (unfrozen[c] > 0) {
      double step = std::numeric_limits<double>::infinity();
      for (const std::uint32_t* l = first; l != last; ++l)
        if (load[*l] > 0) step = std::min(step, rem[*l] / load[*l]);
      level += step;
      for (const std::uint32_t* l = first; l != last; ++l)
        if (load[*l] > 0) rem[*l] -= step * load[*l];
      for (const std::uint32_t* l = first; l != last; ++l) {
        if (load[*l] <= 0 || rem[*l] > kSaturated * capacity[*l]) continue;
        for (std::uint32_t i = on_begin[*l]; i < on_begin[*l + 1]; ++i) {
          const std::uint32_t f = on[i];
          if (frozen[f] != 0) continue;
          frozen[f] = 1;
          rate[f] = level * weight[f];
          bottleneck[f] = *l;
          --unfrozen[c];
          for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h) {
            const std::uint32_t l2 = routes.link[h];
            load[l2] -= routes.fraction_at(h) * weight[f];
            if (load[l2] < 1e-12) load[l2] = 0;
          }
        }
      }
    }
  }

  // No flow may end before a flow whose bottleneck it crosses (beyond the engine's grouping).
  std::vector<double> first_done(links, std::numeric_limits<double>::infinity());
  for (std::size_t f = 0; f < n; ++f)
    if (moving(f))
      first_done[bottleneck[f]] = std::min(first_done[bottleneck[f]], 0 + bytes[f] / rate[f]);
  SingleLevelResult result;
  result.link_bytes.assign(links, 0.0);
  std::vector<double> times;
  for (std::size_t f = 0; f < n; ++f) {
    if (!moving(f)) continue;
    const double t = 0 + bytes[f] / rate[f];
    const double grouped = t + kSameTime * std::max(1.0, t);
    for (std::uint32_t h = routes.begin[f]; h < routes.begin[f + 1]; ++h) {
      const double others = first_done[routes.link[h]];  // infinite: nobody's bottleneck
      if (std::isfinite(others) && grouped < others) return std::nullopt;
      result.link_bytes[routes.link[h]] += bytes[f] * routes.fraction_at(h);
    }
    if (times.empty() || times.back() != t) times.push_back(t);
  }
  result.makespan_s = batched_makespan(std::move(times));
  return result;
}

}  // namespace twin::netsim
