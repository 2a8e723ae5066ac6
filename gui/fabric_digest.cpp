#include "gui/fabric_digest.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

#include "gui/chart_style.hpp"

namespace twin::gui {

namespace {

double quantile(std::vector<float>& v, double q) {
  if (v.empty()) return 0.0;
  const auto k = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

/// Per directed link: utilisation in this run and in the reference, and whether it is up.
struct LinkLoad {
  std::vector<float> now, ref;
};

}  // namespace

FabricDigest digest_fabric(const topology::Fabric& fabric, const std::vector<double>& link_bytes,
                           double step_s, const topology::FabricState* state,
                           const std::vector<double>& ref_link_bytes, double ref_step_s,
                           const std::string& reference_name, bool force_aggregate) {
  const auto& g = fabric.geometry();
  FabricDigest d;
  d.gpus = fabric.gpu_count();
  d.nodes = fabric.cluster().nodes;
  d.tiers = g.tiers;
  d.radix = g.radix;
  d.rails = g.rails;
  d.pods = g.pods;
  d.leaves = g.leaves;
  d.spines = g.spines;
  d.cores = g.cores;
  d.leaves_per_pod = g.leaves_per_pod;
  d.spines_per_pod = g.spines_per_pod;
  d.port_gbps = fabric.spec().switch_port_gbps;
  d.link_count = fabric.link_count();
  d.step_s = step_s;
  d.has_loads = !link_bytes.empty() && link_bytes.size() == fabric.link_count() && step_s > 0;
  d.has_reference = d.has_loads && ref_link_bytes.size() == link_bytes.size() && ref_step_s > 0;
  d.reference_name = d.has_reference ? reference_name : std::string();
  const int switch_count = g.leaves + g.spines + g.cores;
  d.detailed = !force_aggregate && switch_count <= kDetailMaxSwitches;

  // Utilisation of every cable's two directions, against the capacity it has in this state.
  const auto& cables = fabric.cables();
  std::vector<float> util(2 * cables.size(), 0.0f), ref(2 * cables.size(), 0.0f);
  std::vector<float> bytes_now(2 * cables.size(), 0.0f), bytes_ref(2 * cables.size(), 0.0f);
  std::vector<float> factor(cables.size(), 1.0f);
  double bytes_max = 0;
  for (std::size_t c = 0; c < cables.size(); ++c) {
    const auto& cable = cables[c];
    const topology::LinkId dirs[2] = {cable.up, cable.down};
    double f = 1.0;
    for (int k = 0; k < 2; ++k) {
      const auto id = dirs[k];
      const double capacity =
          state != nullptr ? state->bandwidth_Bps(id) : fabric.link(id).bandwidth_Bps;
      if (state != nullptr) f = std::min(f, state->usable(id) ? state->capacity_factor(id) : 0.0);
      if (!d.has_loads) continue;
      const double b = link_bytes[id.index()];
      bytes_now[2 * c + k] = static_cast<float>(b);
      d.traffic_bytes += b;
      if (capacity > 0) util[2 * c + k] = static_cast<float>(b / (capacity * step_s));
      if (cable.kind != topology::LinkKind::nic_leaf) bytes_max = std::max(bytes_max, b);
      if (d.has_reference) {
        const double rb = ref_link_bytes[id.index()];
        bytes_ref[2 * c + k] = static_cast<float>(rb);
        const double nominal = fabric.link(id).bandwidth_Bps;
        ref[2 * c + k] = static_cast<float>(rb / (nominal * ref_step_s));
      }
    }
    factor[c] = static_cast<float>(f);
    if (f <= 0) {
      ++d.cables_down;
    } else if (f < 1) {
      ++d.cables_degraded;
    }
  }
  auto rerouted = [&](std::size_t l) {
    return d.has_reference && bytes_now[l] > 1.2f * bytes_ref[l] &&
           bytes_now[l] - bytes_ref[l] >= 0.05 * bytes_max;
  };

  // Per-tier distributions and per-pod aggregates.
  std::array<std::vector<float>, 3> per_tier;
  d.pod_loads.resize(static_cast<std::size_t>(std::max(1, g.pods)));
  for (int p = 0; p < static_cast<int>(d.pod_loads.size()); ++p) d.pod_loads[p].index = p;
  std::vector<int> ls_count(d.pod_loads.size(), 0), sc_count(d.pod_loads.size(), 0);
  std::vector<std::pair<float, std::size_t>> busiest;
  for (std::size_t c = 0; c < cables.size(); ++c) {
    const auto& cable = cables[c];
    const int t = topology::cable_tier(cable.kind);
    if (t < 0) continue;
    const auto& up = fabric.link(cable.up);
    int pod = 0;
    if (t == 1) pod = g.pod_of_leaf(fabric.node(up.src).index);
    if (t == 2) pod = fabric.node(up.src).index / std::max(1, g.spines_per_pod);
    pod = std::clamp(pod, 0, static_cast<int>(d.pod_loads.size()) - 1);
    DigestPod& pl = d.pod_loads[pod];
    if (factor[c] <= 0) {
      if (t > 0) ++pl.cables_down;
      continue;
    }
    if (factor[c] < 1 && t > 0) ++pl.cables_degraded;
    for (int k = 0; k < 2; ++k) {
      const std::size_t l = 2 * c + static_cast<std::size_t>(k);
      per_tier[t].push_back(util[l]);
      if (t == 0) continue;
      busiest.emplace_back(util[l], l);
      const double u = util[l];
      if (t == 1) {
        pl.leaf_spine_max = std::max(pl.leaf_spine_max, u);
        pl.leaf_spine_mean += u;
        ++ls_count[pod];
      } else {
        pl.spine_core_max = std::max(pl.spine_core_max, u);
        pl.spine_core_mean += u;
        ++sc_count[pod];
      }
      if (d.has_reference) pl.delta_max = std::max(pl.delta_max, u - ref[l]);
      if (rerouted(l)) {
        ++pl.rerouted_links;
        ++d.rerouted_links;
      }
      d.utilisation_max = std::max(d.utilisation_max, u);
      // Degraded cables have their own symbol; their (capacity-driven) change would wash out
      // the scale of the traffic that moved.
      if (factor[c] >= 1)
        d.delta_abs_max = std::max(d.delta_abs_max, std::abs(u - static_cast<double>(ref[l])));
    }
  }
  for (std::size_t p = 0; p < d.pod_loads.size(); ++p) {
    if (ls_count[p] > 0) d.pod_loads[p].leaf_spine_mean /= ls_count[p];
    if (sc_count[p] > 0) d.pod_loads[p].spine_core_mean /= sc_count[p];
  }
  for (const auto& v : per_tier[0]) d.utilisation_max = std::max(d.utilisation_max, double(v));
  // The colour scale follows the data: 0 to the busiest link, rounded up to a nice value.
  const auto ticks = nice_ticks(0.0, std::max(1e-3, d.utilisation_max), 5);
  d.scale_max = d.has_loads ? ticks.back() : 1.0;
  // Per-pod distributions, now that the scale is known.
  for (std::size_t c = 0; c < cables.size() && d.has_loads; ++c) {
    const int t = topology::cable_tier(cables[c].kind);
    if (t < 1 || factor[c] <= 0) continue;
    const auto& src = fabric.node(fabric.link(cables[c].up).src);
    const int pod =
        std::clamp(t == 1 ? g.pod_of_leaf(src.index) : src.index / std::max(1, g.spines_per_pod), 0,
                   static_cast<int>(d.pod_loads.size()) - 1);
    auto& hist = t == 1 ? d.pod_loads[static_cast<std::size_t>(pod)].leaf_spine_histogram
                        : d.pod_loads[static_cast<std::size_t>(pod)].spine_core_histogram;
    for (std::size_t l : {2 * c, 2 * c + 1}) {
      const int bin = static_cast<int>(util[l] / d.scale_max * kHistogramBins);
      ++hist[static_cast<std::size_t>(std::clamp(bin, 0, kHistogramBins - 1))];
    }
  }
  const char* names[3] = {"node - leaf", "leaf - spine", "spine - core"};
  for (int t = 0; t < 3; ++t) {
    TierLoad& tl = d.tier_loads[t];
    tl.name = names[t];
    auto& v = per_tier[t];
    tl.links = static_cast<int>(v.size());
    if (v.empty()) continue;
    double sum = 0;
    for (float u : v) {
      sum += u;
      tl.max = std::max(tl.max, double(u));
      const int bin = static_cast<int>(u / d.scale_max * kHistogramBins);
      ++tl.histogram[static_cast<std::size_t>(std::clamp(bin, 0, kHistogramBins - 1))];
    }
    tl.mean = sum / static_cast<double>(v.size());
    tl.p99 = quantile(v, 0.99);
    tl.p50 = quantile(v, 0.5);
  }

  // The hottest links, by name.
  const std::size_t top = std::min<std::size_t>(kHottestLinks, busiest.size());
  std::partial_sort(busiest.begin(), busiest.begin() + static_cast<std::ptrdiff_t>(top),
                    busiest.end(), [](const auto& a, const auto& b) {
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  busiest.resize(d.has_loads ? top : 0);
  std::vector<std::size_t> hot_links;
  for (const auto& [u, l] : busiest) {
    if (u <= 0) break;
    const auto& cable = cables[l / 2];
    const auto& link = fabric.link(l % 2 == 0 ? cable.up : cable.down);
    d.hottest.push_back(
        {fabric.switch_label(link.src) + " -> " + fabric.switch_label(link.dst), u, ref[l]});
    hot_links.push_back(l / 2);
  }

  if (state != nullptr)
    for (std::size_t n = 0; n < fabric.node_count(); ++n) {
      const auto id = topology::NodeId::from_index(static_cast<std::uint32_t>(n));
      if (fabric.is_switch(id) && !state->node_up(id)) {
        ++d.switches_down;
        const auto& node = fabric.node(id);
        if (node.kind == topology::NodeKind::leaf)
          ++d.pod_loads[g.pod_of_leaf(node.index)].switches_down;
        if (node.kind == topology::NodeKind::spine)
          ++d.pod_loads[node.index / std::max(1, g.spines_per_pod)].switches_down;
      }
    }

  // Scalable units: consecutive nodes whose NICs land on the same leaves.
  const int nics = fabric.cluster().nics_per_node;
  for (int n = 0; n < d.nodes; ++n) {
    // On an imported fabric an uncabled adapter has no leaf (-1): it belongs to no unit.
    int lo = INT_MAX, hi = -1;
    for (int r = 0; r < nics; ++r) {
      const int leaf = fabric.leaf_of_nic(n * nics + r);
      if (leaf < 0) continue;
      lo = std::min(lo, leaf);
      hi = std::max(hi, leaf);
    }
    if (hi < 0) continue;
    if (d.units.empty() || d.units.back().first_leaf != lo || d.units.back().last_leaf != hi)
      d.units.push_back({g.pod_of_leaf(lo), lo, hi, 0});
    ++d.units.back().nodes;
  }
  for (const auto& u : d.units) {
    d.pod_loads[static_cast<std::size_t>(u.pod)].nodes += u.nodes;
    ++d.pod_loads[static_cast<std::size_t>(u.pod)].units;
  }
  if (!d.detailed) {
    d.deviations = digest_deviations(fabric, {});
    return d;
  }

  // Every switch and every switch pair.
  std::vector<std::uint32_t> slot(fabric.node_count(), UINT32_MAX);
  auto add = [&](topology::NodeId id, Tier tier, int pod, int index) {
    slot[id.index()] = static_cast<std::uint32_t>(d.switches.size());
    DigestSwitch sw;
    sw.tier = tier;
    sw.pod = pod;
    sw.index = index;
    sw.name = fabric.switch_label(id);
    sw.down = state != nullptr && !state->node_up(id);
    if (tier == Tier::leaf && fabric.is_explicit()) sw.rail = fabric.rail_of_leaf(index);
    d.switches.push_back(std::move(sw));
  };
  for (int c = 0; c < g.cores; ++c)
    add(fabric.core_switch(c), Tier::core, c / std::max(1, g.cores_per_plane), c);
  for (int s = 0; s < g.spines; ++s)
    add(fabric.spine(s), Tier::spine, s / std::max(1, g.spines_per_pod), s);
  for (int l = 0; l < g.leaves; ++l) add(fabric.leaf(l), Tier::leaf, g.pod_of_leaf(l), l);
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::size_t> edge_of;
  for (std::size_t c = 0; c < cables.size(); ++c) {
    const auto& cable = cables[c];
    const auto& up = fabric.link(cable.up);
    const double through = bytes_now[2 * c] + bytes_now[2 * c + 1];
    if (slot[up.dst.index()] != UINT32_MAX) d.switches[slot[up.dst.index()]].bytes += through;
    if (cable.kind == topology::LinkKind::nic_leaf) {
      if (slot[up.dst.index()] != UINT32_MAX) ++d.switches[slot[up.dst.index()]].adapters;
      continue;
    }
    d.switches[slot[up.src.index()]].bytes += through;
    ++d.switches[slot[up.src.index()]].uplinks;
    const auto key = std::make_pair(slot[up.src.index()], slot[up.dst.index()]);
    auto [it, fresh] = edge_of.try_emplace(key, d.edges.size());
    if (fresh) d.edges.push_back({key.first, key.second, 0, 0, 0, 1, false, false});
    DigestEdge& e = d.edges[it->second];
    ++e.cables;
    e.capacity_factor = std::min(e.capacity_factor, factor[c]);
    for (std::size_t l : {2 * c, 2 * c + 1}) {
      e.utilisation = std::max(e.utilisation, util[l]);
      e.ref_utilisation = std::max(e.ref_utilisation, ref[l]);
      e.rerouted = e.rerouted || (factor[c] > 0 && rerouted(l));
    }
    e.hottest = e.hottest || std::find(hot_links.begin(), hot_links.end(), c) != hot_links.end();
  }
  d.deviations = digest_deviations(fabric, slot);
  return d;
}

}  // namespace twin::gui
