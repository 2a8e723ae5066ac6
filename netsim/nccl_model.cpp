#include "netsim/nccl_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace twin::netsim {
namespace {

std::size_t idx(Algorithm a) {
  return static_cast<std::size_t>(a);
}
std::size_t idx(Protocol p) {
  return static_cast<std::size_t>(p);
}
std::size_t idx(HopKind h) {
  return static_cast<std::size_t>(h);
}

/// NCCL's LL steps within a node cost 1.8 times more when the group spans nodes
/// (ncclTopoTuneModel: `if (nNodes > 1 && p == NCCL_PROTO_LL) intraLat *= 1.8`).
constexpr double kLlAcrossNodes = 1.8;

/// Our algorithms take their latency cells from NCCL's Ring (they are built from ring phases
/// or from NCCL's grouped send/recv over the same transports).
Algorithm table_algorithm(Algorithm a) {
  switch (a) {
    case Algorithm::hierarchical:
    case Algorithm::pairwise:
    case Algorithm::pxn:
    case Algorithm::direct:
      return Algorithm::ring;
    default:
      return a;
  }
}

bool ours(Algorithm a) {
  return table_algorithm(a) != a;
}

/// floor(log2(v)) for v >= 1, as NCCL's log2i.
int log2_floor(int v) {
  int r = 0;
  while (v > 1) {
    v >>= 1;
    ++r;
  }
  return r;
}

int log2_ceil(int v) {
  int r = log2_floor(v);
  return (1 << r) < v ? r + 1 : r;
}

template <typename Fill>
void fill_table(std::array<std::array<double, kProtocols>, kAlgorithms>& table,
                const calibrate::NcclFigures::ByAlgorithm& figures, const std::string& field,
                const std::string& source, Fill&& check) {
  for (auto& row : table) row.fill(std::numeric_limits<double>::quiet_NaN());
  for (const auto& [algo, protocols] : figures) {
    const Algorithm a = parse_algorithm(algo, field + "." + algo);
    for (const auto& [proto, value] : protocols) {
      const Protocol p = parse_protocol(proto, field + "." + algo + "." + proto);
      check(field + "." + algo + "." + proto, value);
      table[idx(a)][idx(p)] = value;
    }
  }
  (void)source;
}

}  // namespace

NcclModel::NcclModel(const calibrate::Profile& profile) {
  if (!profile.nccl)
    throw core::Error("profile", profile.name,
                      "has no \"nccl\" section (NCCL's latency and protocol tables)");
  const calibrate::NcclFigures& n = *profile.nccl;
  const std::string src = "<profile " + profile.name + ">";
  version_ = n.version;
  auto nonnegative = [&](const std::string& field, double v) {
    if (!(v >= 0)) throw core::Error(field, fmt::format("{}", v), "must not be negative", src);
  };
  auto fraction = [&](const std::string& field, double v) {
    if (!(v > 0 && v <= 1.5))
      throw core::Error(field, fmt::format("{}", v), "must be in (0, 1.5]", src);
  };
  try {
    fill_table(base_, n.base_latency_us, "nccl.base_latency_us", src, nonnegative);
    fill_table(factor_, n.bandwidth_factor, "nccl.bandwidth_factor", src, fraction);
    for (auto& t : hop_)
      for (auto& row : t) row.fill(kAbsent);
    for (const auto& [hop_name, table] : n.hop_latency_us) {
      const HopKind h = parse_hop(hop_name, "nccl.hop_latency_us." + hop_name);
      fill_table(hop_[idx(h)], table, "nccl.hop_latency_us." + hop_name, src, nonnegative);
    }
    payload_.fill(kAbsent);
    for (const auto& [proto, value] : n.payload_efficiency) {
      const Protocol p = parse_protocol(proto, "nccl.payload_efficiency." + proto);
      fraction("nccl.payload_efficiency." + proto, value);
      payload_[idx(p)] = value;
    }
    for (const auto& [proto, values] : n.tree_size_factor)
      tree_size_factor_[idx(parse_protocol(proto, "nccl.tree_size_factor." + proto))] = values;
  } catch (const core::Error& e) {
    throw e.file().empty() ? e.in_file(src) : e;
  }
  for (std::size_t i = 0; i < 3; ++i) ll_max_busbw_GBps_[i] = n.ll_max_busbw_GBps.at(i);
  net_overhead_us_ = n.net_overhead_us;
  ring_plateau_ = n.ring_plateau_factor;
  channels_ = n.channels;
  p2p_channel_GBps_ = n.p2p_channel_GBps;
  p2p_channels_ = n.p2p_channels;
  // Every available cell needs its bandwidth factor, its payload and its hop latencies.
  for (std::size_t a = 0; a < kAlgorithms; ++a)
    for (std::size_t p = 0; p < kProtocols; ++p) {
      if (std::isnan(base_[a][p])) continue;
      const std::string cell = fmt::format("{}.{}", to_text(static_cast<Algorithm>(a)),
                                           to_text(static_cast<Protocol>(p)));
      if (std::isnan(factor_[a][p]))
        throw core::Error("nccl.bandwidth_factor." + cell, "", "missing", src);
      if (std::isnan(payload_[p]))
        throw core::Error(
            "nccl.payload_efficiency." + std::string(to_text(static_cast<Protocol>(p))), "",
            "missing", src);
      for (HopKind h : {HopKind::nvlink, HopKind::network})
        if (std::isnan(hop_[idx(h)][a][p]))
          throw core::Error(fmt::format("nccl.hop_latency_us.{}.{}", to_text(h), cell), "",
                            "missing", src);
    }
}

bool NcclModel::available(Algorithm a, Protocol p) const {
  if (ours(a) && p != Protocol::simple) return false;  // built from Simple copies and sends
  return !std::isnan(base_[idx(table_algorithm(a))][idx(p)]);
}

double NcclModel::base(Algorithm a, Protocol p) const {
  return base_[idx(table_algorithm(a))][idx(p)];
}

double NcclModel::hop(HopKind h, Algorithm a, Protocol p) const {
  const double v = hop_[idx(h)][idx(table_algorithm(a))][idx(p)];
  if (std::isnan(v) && h == HopKind::pcie)
    return hop_[idx(HopKind::nvlink)][idx(table_algorithm(a))][idx(p)];
  return v;
}

double NcclModel::ring_latency_us(CollectiveOp op, Protocol p, const GroupScale& s,
                                  double bytes) const {
  const int n = s.ranks, nodes = s.nodes;
  const HopKind intra = s.nvlink ? HopKind::nvlink : HopKind::pcie;
  const Algorithm ring = Algorithm::ring;
  if (op == CollectiveOp::broadcast) {
    const HopKind h = nodes > 1 ? HopKind::network : intra;
    return base(ring, p) + n * hop(h, ring, p);
  }
  const bool all_reduce = op == CollectiveOp::all_reduce;
  const int steps = all_reduce ? 2 * (n - 1) : n - 1;
  const int inter_steps = all_reduce ? (nodes > 1 ? 2 * nodes : 0) : nodes - 1;
  double intra_lat = hop(intra, ring, p) * (nodes > 1 && p == Protocol::ll ? kLlAcrossNodes : 1.0);
  if (nodes > 1)
    intra_lat = std::max(intra_lat, net_overhead_us_ * (p == Protocol::simple ? 3.0 : 1.0));
  double lat = base(ring, p) + std::max(0, steps - inter_steps) * intra_lat +
               inter_steps * hop(HopKind::network, ring, p);
  if (all_reduce && p == Protocol::simple && nodes > 1 && bytes / (channels_ * n) >= 64)
    lat *= ring_plateau_;
  return lat;
}

double NcclModel::latency_us(CollectiveOp op, Algorithm a, Protocol p, const GroupScale& s,
                             double bytes) const {
  if (!available(a, p))
    throw core::Error(
        "protocol", std::string(to_text(p)),
        fmt::format("the profile's NCCL tables have no {} / {} cell", to_text(a), to_text(p)));
  const int g = std::max(1, s.ranks / std::max(1, s.nodes));
  const HopKind intra = s.nvlink ? HopKind::nvlink : HopKind::pcie;
  const double hi = hop(intra, a, p), hn = hop(HopKind::network, a, p);
  switch (a) {
    case Algorithm::ring:
    case Algorithm::hierarchical:  // its phases are costed one by one as rings
      return ring_latency_us(op, p, s, bytes);
    case Algorithm::tree: {
      const double intra_lat = hi * (s.nodes > 1 && p == Protocol::ll ? kLlAcrossNodes : 1.0);
      return base(a, p) + 2.0 * ((g - 1) * intra_lat + log2_floor(s.nodes) * hn);
    }
    case Algorithm::nvls:
      return hi + (s.nodes > 1 ? hn : 0.0);
    case Algorithm::nvls_tree:
      return base(a, p) + hi + 2.0 * log2_floor(s.nodes) * hn;
    case Algorithm::sharp:
      return base(a, p) + 2.0 * (std::min(1, g - 1) * hi + 0.4 * (g - 1)) + hn;
    case Algorithm::pat:
      return base(a, p) + log2_ceil(s.ranks) * (s.nodes > 1 ? hn : hi);
    case Algorithm::pairwise:
    case Algorithm::pxn:
    case Algorithm::direct:
      return base(a, p) + (s.nodes > 1 ? hn : hi);
  }
  return 0;
}

double NcclModel::tree_correction(Protocol p, double bytes) const {
  const auto& table = tree_size_factor_[idx(p)];
  const double chunks = std::floor(bytes / 64.0);
  const int log_size = chunks >= 1 ? log2_floor(static_cast<int>(std::min(chunks, 1e9))) : 0;
  return log_size < static_cast<int>(table.size()) ? table[static_cast<std::size_t>(log_size)]
                                                   : 1.0;
}

double NcclModel::bandwidth_fraction(Algorithm a, Protocol p, double bytes) const {
  double f = payload_[idx(p)] * factor_[idx(table_algorithm(a))][idx(p)];
  if (a == Algorithm::tree) f *= tree_correction(p, bytes);
  return f;
}

double NcclModel::max_busbw_GBps(CollectiveOp op, Algorithm a, Protocol p,
                                 const GroupScale& s) const {
  double cap = std::numeric_limits<double>::infinity();
  if (p == Protocol::ll && (a == Algorithm::ring || a == Algorithm::tree))
    cap = ll_max_busbw_GBps_[static_cast<std::size_t>(std::min(s.nodes, 3) - 1)];
  if (op == CollectiveOp::sendrecv && s.nodes > 1 && p2p_channel_GBps_ > 0 && p2p_channels_ > 0) {
    double per_peer = 1;
    while (per_peer * 2 * s.ranks <= p2p_channels_ * 4) per_peer *= 2;
    cap = std::min(cap, per_peer * p2p_channel_GBps_);
  }
  return cap;
}

}  // namespace twin::netsim
