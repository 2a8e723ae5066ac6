#include "netsim/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"

namespace twin::netsim {
namespace {

using Kind = Transfer::Kind;

struct GroupShape {
  std::vector<int> nodes;  ///< servers in order of first appearance
  bool whole_nodes = false;
};

GroupShape shape_of(const topology::Fabric& fabric, const std::vector<int>& group) {
  GroupShape s;
  std::map<int, int> count;
  for (int g : group) {
    const int host = fabric.host_of_gpu(g);
    if (count[host]++ == 0) s.nodes.push_back(host);
  }
  const int per = fabric.cluster().gpus_per_node;
  s.whole_nodes =
      std::all_of(count.begin(), count.end(), [&](auto& kv) { return kv.second == per; });
  return s;
}

std::string scope_of(const GroupShape& s) {
  return s.nodes.size() > 1 ? "inter_node" : "intra_node";
}

void add_ring(std::vector<Transfer>& out, const std::vector<int>& order, double edge_bytes) {
  const std::size_t n = order.size();
  for (std::size_t i = 0; i < n; ++i)
    out.push_back({Kind::gpu_to_gpu, order[i], order[(i + 1) % n], edge_bytes});
}

/// Rail-aligned ring channels over whole nodes: channel c enters node i on rail (c+i) mod G and
/// leaves on rail (c+i+1) mod G.
std::vector<std::vector<int>> rail_rings(const topology::Fabric& fabric, const GroupShape& s) {
  const int per = fabric.cluster().gpus_per_node;
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < per; ++c) {
    std::vector<int> order;
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
      const int entry = static_cast<int>((c + i) % per), exit = static_cast<int>((c + i + 1) % per);
      const int base = s.nodes[i] * per;
      order.push_back(base + entry);
      for (int g = 0; g < per; ++g)
        if (g != entry && g != exit) order.push_back(base + g);
      if (exit != entry) order.push_back(base + exit);
    }
    rings.push_back(std::move(order));
  }
  return rings;
}

Phase ring_phase(const topology::Fabric& fabric, const std::string& op,
                 const std::vector<std::vector<int>>& groups, double bytes) {
  Phase phase{op, "ring", "", {}};
  for (const auto& group : groups) {
    const GroupShape s = shape_of(fabric, group);
    phase.scope = scope_of(s);
    const double total = busbw_factor(op, static_cast<int>(group.size())) * bytes;
    if (s.whole_nodes && s.nodes.size() > 1) {
      const auto rings = rail_rings(fabric, s);
      for (const auto& ring : rings)
        add_ring(phase.transfers, ring, total / static_cast<double>(rings.size()));
    } else {
      add_ring(phase.transfers, group, total);
    }
  }
  return phase;
}

void require_whole_nodes(const GroupShape& s, const std::string& algorithm, bool multi_node) {
  if (!s.whole_nodes)
    throw core::Error(core::Error::Kind::not_supported, "algorithm", algorithm,
                      "needs groups made of whole nodes (every GPU of each node in the group)");
  if (multi_node && s.nodes.size() < 2)
    throw core::Error(core::Error::Kind::not_supported, "algorithm", algorithm,
                      "works across nodes; this group is inside one node");
}

Plan make_plan(const topology::Fabric& fabric, const std::string& op, const std::string& algo,
               const std::vector<std::vector<int>>& groups, double bytes) {
  const int per = fabric.cluster().gpus_per_node;
  Plan plan{op,
            algo,
            static_cast<int>(groups.front().size()),
            static_cast<int>(shape_of(fabric, groups.front()).nodes.size()),
            bytes,
            {}};
  const bool reduction = op == "all_reduce";
  if (algo == "ring" && (reduction || op == "all_gather" || op == "reduce_scatter")) {
    plan.phases.push_back(ring_phase(fabric, op, groups, bytes));
  } else if (algo == "ring" && op == "broadcast") {
    Phase phase{op, "ring", "", {}};
    for (const auto& group : groups) {
      phase.scope = scope_of(shape_of(fabric, group));
      for (std::size_t i = 0; i + 1 < group.size(); ++i)
        phase.transfers.push_back({Kind::gpu_to_gpu, group[i], group[i + 1], bytes});
    }
    plan.phases.push_back(std::move(phase));
  } else if (algo == "nvls" && reduction) {
    Phase phase{op, "nvls", "intra_node", {}};
    for (const auto& group : groups) {
      if (shape_of(fabric, group).nodes.size() != 1)
        throw core::Error(
            core::Error::Kind::not_supported, "algorithm", algo,
            "NVLS reduces inside one NVSwitch domain; across nodes use sharp, tree or ring");
      const double n = static_cast<double>(group.size());
      for (int g : group) {
        phase.transfers.push_back({Kind::to_switch, g, -1, bytes * (n + 1) / n});
        phase.transfers.push_back({Kind::from_switch, -1, g, bytes * (n + 1) / n});
      }
    }
    plan.phases.push_back(std::move(phase));
  } else if (algo == "sharp" && reduction) {
    Phase phase{op, "sharp", "inter_node", {}};
    for (const auto& group : groups) {
      require_whole_nodes(shape_of(fabric, group), algo, true);
      for (int g : group) {
        const double intra = bytes * (per + 1) / per;
        phase.transfers.push_back({Kind::to_switch, g, -1, intra});
        phase.transfers.push_back({Kind::from_switch, -1, g, intra});
        phase.transfers.push_back({Kind::to_leaf, g, -1, bytes / per});
        phase.transfers.push_back({Kind::from_leaf, -1, g, bytes / per});
      }
    }
    plan.phases.push_back(std::move(phase));
  } else if (algo == "tree" && reduction) {
    Phase phase{op, "tree", "inter_node", {}};
    for (const auto& group : groups) {
      const GroupShape s = shape_of(fabric, group);
      require_whole_nodes(s, algo, true);
      const int m = static_cast<int>(s.nodes.size());
      const double share = bytes / (2.0 * per);  // each tree carries half, one channel per rail
      for (int tree = 0; tree < 2; ++tree) {
        for (int pos = 1; pos < m; ++pos) {
          // Tree 1 is heap-ordered on node positions; tree 2 the same on positions shifted by
          // one, so the leaves of one are interior nodes of the other.
          const int child = s.nodes[(pos + tree) % m], parent = s.nodes[((pos - 1) / 2 + tree) % m];
          for (int c = 0; c < per; ++c) {
            phase.transfers.push_back({Kind::gpu_to_gpu, child * per + c, parent * per + c, share});
            phase.transfers.push_back({Kind::gpu_to_gpu, parent * per + c, child * per + c, share});
          }
        }
      }
      // Inside each node, a chain per channel reduces toward the rail GPU and broadcasts back.
      for (int node : s.nodes)
        for (int c = 0; c < per; ++c)
          for (int k = 1; k < per; ++k) {
            const int a = node * per + (c + k) % per, b = node * per + (c + k - 1) % per;
            phase.transfers.push_back({Kind::gpu_to_gpu, a, b, bytes / per});
            phase.transfers.push_back({Kind::gpu_to_gpu, b, a, bytes / per});
          }
    }
    plan.phases.push_back(std::move(phase));
  } else if (algo == "hierarchical" && reduction) {
    std::vector<std::vector<int>> local, rails;
    for (const auto& group : groups) {
      const GroupShape s = shape_of(fabric, group);
      require_whole_nodes(s, algo, true);
      for (int node : s.nodes) {
        std::vector<int> g;
        for (int i = 0; i < per; ++i) g.push_back(node * per + i);
        local.push_back(std::move(g));
      }
      for (int r = 0; r < per; ++r) {
        std::vector<int> g;
        for (int node : s.nodes) g.push_back(node * per + r);
        rails.push_back(std::move(g));
      }
    }
    plan.phases.push_back(ring_phase(fabric, "reduce_scatter", local, bytes));
    plan.phases.push_back(ring_phase(fabric, "all_reduce", rails, bytes / per));
    plan.phases.push_back(ring_phase(fabric, "all_gather", local, bytes));
  } else if (algo == "pairwise" && op == "alltoall") {
    Phase phase{op, "pairwise", "", {}};
    for (const auto& group : groups) {
      phase.scope = scope_of(shape_of(fabric, group));
      const double chunk = bytes / static_cast<double>(group.size());
      for (int a : group)
        for (int b : group)
          if (a != b) phase.transfers.push_back({Kind::gpu_to_gpu, a, b, chunk});
    }
    plan.phases.push_back(std::move(phase));
  } else if (algo == "pxn" && op == "alltoall") {
    Phase phase{op, "pairwise", "inter_node", {}};
    for (const auto& group : groups) {
      const GroupShape s = shape_of(fabric, group);
      require_whole_nodes(s, algo, true);
      const double chunk = bytes / static_cast<double>(group.size());
      const double m = static_cast<double>(s.nodes.size());
      for (int node : s.nodes) {
        // NVLink: to each local GPU h its own chunk plus the chunks bound for rail h elsewhere.
        for (int g = 0; g < per; ++g)
          for (int h = 0; h < per; ++h)
            if (g != h)
              phase.transfers.push_back(
                  {Kind::gpu_to_gpu, node * per + g, node * per + h, m * chunk});
        // NIC r to NIC r: every local GPU's chunk for GPU r of the other node.
        for (int other : s.nodes)
          if (other != node)
            for (int r = 0; r < per; ++r)
              phase.transfers.push_back(
                  {Kind::gpu_to_gpu, node * per + r, other * per + r, per * chunk});
      }
    }
    plan.phases.push_back(std::move(phase));
  } else if (algo == "direct" && op == "sendrecv") {
    Phase phase{op, "direct", "", {}};
    for (const auto& group : groups) {
      phase.scope = scope_of(shape_of(fabric, group));
      add_ring(phase.transfers, group, bytes);
    }
    plan.phases.push_back(std::move(phase));
  } else {
    const auto valid = algorithms_for(op);
    throw core::Error(core::Error::Kind::not_supported, "algorithm", algo,
                      fmt::format("not an algorithm for {}; valid: {}{}", op,
                                  core::quoted_list(valid), core::did_you_mean(algo, valid)));
  }
  return plan;
}

}  // namespace

const std::vector<std::string>& collective_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                               "alltoall",   "sendrecv",   "broadcast"};
  return ops;
}

std::vector<std::string> algorithms_for(const std::string& op) {
  if (op == "all_reduce") return {"ring", "tree", "nvls", "sharp", "hierarchical"};
  if (op == "all_gather" || op == "reduce_scatter" || op == "broadcast") return {"ring"};
  if (op == "alltoall") return {"pxn", "pairwise"};
  if (op == "sendrecv") return {"direct"};
  throw core::Error("op", op,
                    "unknown collective; valid: " + core::quoted_list(collective_ops()) +
                        core::did_you_mean(op, collective_ops()));
}

double busbw_factor(const std::string& op, int ranks) {
  const double n = ranks;
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall") return (n - 1) / n;
  return 1.0;
}

Plan plan_collective(const topology::Fabric& fabric, const std::string& op,
                     const std::string& algorithm, const std::vector<std::vector<int>>& groups,
                     double bytes) {
  (void)algorithms_for(op);  // validates the op
  if (!(bytes > 0)) throw core::Error("size", fmt::format("{}", bytes), "must be positive");
  if (groups.empty()) throw core::Error("groups", "", "no group to run the collective on");
  std::set<int> seen;
  for (const auto& group : groups) {
    if (group.size() < 2)
      throw core::Error("group", std::to_string(group.size()),
                        "a collective needs at least 2 ranks");
    if (group.size() != groups.front().size())
      throw core::Error("group", std::to_string(group.size()),
                        "concurrent groups must be the same size");
    for (int g : group) {
      if (g < 0 || g >= fabric.gpu_count())
        throw core::Error(
            "group", std::to_string(g),
            fmt::format("GPU index outside the cluster's {} GPUs", fabric.gpu_count()));
      if (!seen.insert(g).second)
        throw core::Error("group", std::to_string(g), "GPU appears twice among the groups");
    }
  }
  return make_plan(fabric, op, algorithm, groups, bytes);
}

CollectiveSimulator::CollectiveSimulator(const topology::Fabric& fabric,
                                         const topology::FabricState* state,
                                         const calibrate::Profile& profile,
                                         std::unique_ptr<Engine> engine)
    : fabric_(&fabric),
      state_(state),
      profile_(&profile),
      engine_(std::move(engine)),
      router_(fabric, state),
      capacity_(link_capacities(fabric, state)) {}

const calibrate::CollectiveCurve& CollectiveSimulator::curve(const std::string& op,
                                                             const std::string& algorithm,
                                                             const std::string& scope,
                                                             double bytes) const {
  const calibrate::CollectiveCurve* c = profile_->find_curve(op, algorithm, scope, bytes);
  if (c == nullptr)
    throw core::Error(core::Error::Kind::not_calibrated, "profile", profile_->name,
                      fmt::format("no {} / {} / {} curve; fit one from nccl-tests logs "
                                  "(clustertwin calibrate fit) or choose another algorithm",
                                  op, algorithm, scope));
  return *c;
}

const CollectiveSimulator::Solved& CollectiveSimulator::solve_phase(const Phase& phase, double bytes) {
  std::uint64_t key = core::hash_combine(0xC011, phase.transfers.size());
  for (const auto& t : phase.transfers)
    key = core::hash_combine(
        key,
        static_cast<std::uint64_t>(t.kind) * 1000003u + static_cast<std::uint64_t>(t.src_gpu + 1),
        static_cast<std::uint64_t>(t.dst_gpu + 1),
        static_cast<std::uint64_t>(std::llround(t.bytes / bytes * 1e9)));
  if (auto it = phase_cache_.find(key); it != phase_cache_.end()) return it->second;

  FlowSet set;
  set.flows.reserve(phase.transfers.size());
  const topology::Fabric& f = *fabric_;
  for (const auto& t : phase.transfers) {
    Flow flow;
    flow.src_gpu = t.src_gpu;
    flow.dst_gpu = t.dst_gpu;
    flow.bytes = t.bytes;
    switch (t.kind) {
      case Kind::gpu_to_gpu:
        flow.hops = router_.gpu_route(t.src_gpu, t.dst_gpu).hops;
        break;
      case Kind::to_switch:
        flow.hops = {{f.nvlink_up(t.src_gpu), 1.0}};
        break;
      case Kind::from_switch:
        flow.hops = {{f.nvlink_down(t.dst_gpu), 1.0}};
        break;
      case Kind::to_leaf:
        flow.hops = {{f.pcie_up(t.src_gpu), 1.0},
                     {f.cable(f.nic_cable(f.nic_of_gpu(t.src_gpu))).up, 1.0}};
        break;
      case Kind::from_leaf:
        flow.hops = {{f.cable(f.nic_cable(f.nic_of_gpu(t.dst_gpu))).down, 1.0},
                     {f.pcie_down(t.dst_gpu), 1.0}};
        break;
    }
    set.flows.push_back(std::move(flow));
  }
  FlowResult r = engine_->run(set, capacity_);
  ++phases_solved_;
  last_link_bytes_ = std::move(r.link_bytes);
  Solved solved;
  solved.makespan_per_byte = r.makespan_s / bytes;
  solved.link_bytes_per_byte.resize(last_link_bytes_.size());
  for (std::size_t i = 0; i < last_link_bytes_.size(); ++i)
    solved.link_bytes_per_byte[i] = static_cast<float>(last_link_bytes_[i] / bytes);
  return phase_cache_[key] = std::move(solved);
}

CollectiveResult CollectiveSimulator::run_plan(const Plan& plan) {
  CollectiveResult result{plan.op, plan.algorithm, plan.bytes, plan.ranks, 0, 0, {}, 0, 0, 0, true, {}};
  const int per = fabric_->cluster().gpus_per_node;
  for (const Phase& phase : plan.phases) {
    const auto& c = curve(phase.op, phase.curve_algorithm, phase.scope, plan.bytes);
    result.measured_here = result.measured_here && c.nodes == plan.nodes &&
                           c.gpus_per_node == per && c.max_bytes > 0 && plan.bytes >= c.min_bytes &&
                           plan.bytes <= c.max_bytes;
    const Solved& solved = solve_phase(phase, plan.bytes);
    const double flow_s = solved.makespan_per_byte * plan.bytes;
    if (result.link_bytes.empty()) result.link_bytes.assign(solved.link_bytes_per_byte.size(), 0.0);
    for (std::size_t i = 0; i < solved.link_bytes_per_byte.size(); ++i)
      result.link_bytes[i] += solved.link_bytes_per_byte[i] * plan.bytes;
    result.phase_flow_s.push_back(flow_s);
    result.latency_s += c.latency_us.value * 1e-6;
    result.time_s += c.latency_us.value * 1e-6 + flow_s / c.efficiency.value;
    result.flows += phase.transfers.size();
  }
  result.algbw_GBps = plan.bytes / result.time_s / 1e9;
  result.busbw_GBps = result.algbw_GBps * busbw_factor(plan.op, plan.ranks);
  return result;
}

CollectiveResult CollectiveSimulator::run(const std::string& op, const std::string& algorithm,
                                          const std::vector<std::vector<int>>& groups,
                                          double bytes) {
  if (algorithm != "auto") return run_plan(plan_collective(*fabric_, op, algorithm, groups, bytes));
  std::optional<CollectiveResult> best;
  std::string reasons;
  for (const auto& algo : algorithms_for(op)) {
    try {
      CollectiveResult r = run_plan(plan_collective(*fabric_, op, algo, groups, bytes));
      const bool better = !best || (r.measured_here && !best->measured_here) ||
                          (r.measured_here == best->measured_here && r.time_s < best->time_s);
      if (better) best = std::move(r);
    } catch (const core::Error& e) {
      if (e.kind() == core::Error::Kind::not_supported ||
          e.kind() == core::Error::Kind::not_calibrated) {
        reasons += fmt::format("\n  {}: {}", algo, e.reason());
        continue;  // not applicable to these groups, or not calibrated
      }
      throw;
    }
  }
  if (!best)
    throw core::Error(
        core::Error::Kind::not_supported, "algorithm", "auto",
        fmt::format("no algorithm for {} fits these groups with this profile:{}", op, reasons));
  return *best;
}

}  // namespace twin::netsim
