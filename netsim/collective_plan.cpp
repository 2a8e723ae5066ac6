// The collective algorithms as plans: which GPU sends how many bytes to which, phase by phase
// (rings over NCCL's channels, double binary trees, NVLink SHARP, in-network reduction, the
// hierarchical and all-to-all patterns), and the checks of the groups they run on. How long a
// plan takes is netsim/collective.cpp's.
#include "netsim/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"

namespace twin::netsim {
namespace {

using Kind = Transfer::Kind;

struct GroupShape {
  std::vector<int> nodes;  ///< servers in order of first appearance
  /// The group's GPUs on each of `nodes`, in GPU order.
  std::vector<std::vector<int>> members;
  bool whole_nodes = false;
};

GroupShape shape_of(const topology::Fabric& fabric, const std::vector<int>& group) {
  GroupShape s;
  std::map<int, std::size_t> slot;
  for (int g : group) {
    const int host = fabric.host_of_gpu(g);
    const auto [it, added] = slot.emplace(host, s.nodes.size());
    if (added) {
      s.nodes.push_back(host);
      s.members.emplace_back();
    }
    s.members[it->second].push_back(g);
  }
  for (auto& m : s.members) std::sort(m.begin(), m.end());
  const auto per = static_cast<std::size_t>(fabric.cluster().gpus_per_node);
  s.whole_nodes = std::all_of(s.members.begin(), s.members.end(),
                              [&](const auto& m) { return m.size() == per; });
  return s;
}

Scope scope_of(const GroupShape& s) {
  return s.nodes.size() > 1 ? Scope::inter_node : Scope::intra_node;
}

GroupScale scale_of(const GroupShape& s, std::size_t ranks) {
  return {static_cast<int>(ranks), static_cast<int>(s.nodes.size()), true};
}

void add_ring(std::vector<Transfer>& out, const std::vector<int>& order, double edge_bytes) {
  const std::size_t n = order.size();
  for (std::size_t i = 0; i < n; ++i)
    out.push_back({Kind::gpu_to_gpu, order[i], order[(i + 1) % n], 1, edge_bytes});
}

/// Ring channels over a group with the same number k >= 2 of GPUs on each of its nodes: as NCCL
/// spreads its channels over every NIC near the communicator's GPUs, there is one channel per
/// local GPU, and channel c enters node i at the group's local GPU (c+i) mod k and leaves at
/// (c+i+1) mod k, so that each inter-node hop joins GPUs of the same local index (the same rail
/// when every node holds the group on the same GPUs: whole nodes, or a data-parallel group of
/// TP-rank-aligned GPUs) and each of the k NICs carries 1/k of the ring's bytes. Empty when the
/// group is on one node, has one GPU per node, or spreads unevenly (one ring in group order).
std::vector<std::vector<int>> channel_rings(const GroupShape& s) {
  if (s.nodes.size() < 2) return {};
  const std::size_t k = s.members.front().size();
  if (k < 2 ||
      std::any_of(s.members.begin(), s.members.end(), [&](const auto& m) { return m.size() != k; }))
    return {};
  std::vector<std::vector<int>> rings;
  for (std::size_t c = 0; c < k; ++c) {
    std::vector<int> order;
    for (std::size_t i = 0; i < s.nodes.size(); ++i) {
      const std::size_t entry = (c + i) % k, exit = (c + i + 1) % k;
      const auto& local = s.members[i];
      order.push_back(local[entry]);
      for (std::size_t g = 0; g < k; ++g)
        if (g != entry && g != exit) order.push_back(local[g]);
      if (exit != entry) order.push_back(local[exit]);
    }
    rings.push_back(std::move(order));
  }
  return rings;
}

Phase ring_phase(const topology::Fabric& fabric, CollectiveOp op,
                 const std::vector<std::vector<int>>& groups, double bytes,
                 Algorithm algorithm = Algorithm::ring) {
  Phase phase{op, algorithm, Scope::intra_node, {}, {}};
  for (const auto& group : groups) {
    const GroupShape s = shape_of(fabric, group);
    phase.scope = scope_of(s);
    phase.scale = scale_of(s, group.size());
    const double total = busbw_factor(op, static_cast<int>(group.size())) * bytes;
    const auto rings = channel_rings(s);
    for (const auto& ring : rings)
      add_ring(phase.transfers, ring, total / static_cast<double>(rings.size()));
    if (rings.empty()) add_ring(phase.transfers, group, total);
  }
  return phase;
}

void require_whole_nodes(const GroupShape& s, Algorithm algorithm, bool multi_node) {
  const std::string name(to_text(algorithm));
  if (!s.whole_nodes)
    throw core::Error(core::Error::Kind::not_supported, "algorithm", name,
                      "needs groups made of whole nodes (every GPU of each node in the group)");
  if (multi_node && s.nodes.size() < 2)
    throw core::Error(core::Error::Kind::not_supported, "algorithm", name,
                      "works across nodes; this group is inside one node");
}

/// NVLS inside each node: every GPU moves bytes (G+1)/G up to and down from its NVSwitch.
void add_nvls(std::vector<Transfer>& out, const std::vector<int>& gpus, double bytes) {
  const double n = static_cast<double>(gpus.size());
  for (int g : gpus) {
    out.push_back({Kind::to_switch, g, -1, 1, bytes * (n + 1) / n});
    out.push_back({Kind::from_switch, -1, g, 1, bytes * (n + 1) / n});
  }
}

/// NCCL's double binary tree over the nodes of a group, one channel per rail, each tree
/// carrying `share` of every rail's data up (reduce) and down (broadcast) at once. Tree 1 is
/// heap-ordered on node positions; tree 2 the same on positions shifted by one, so the leaves
/// of one are interior nodes of the other.
void add_double_tree(std::vector<Transfer>& out, const GroupShape& s, int per, double share) {
  const int m = static_cast<int>(s.nodes.size());
  for (int tree = 0; tree < 2; ++tree)
    for (int pos = 1; pos < m; ++pos) {
      const int child = s.nodes[(pos + tree) % m], parent = s.nodes[((pos - 1) / 2 + tree) % m];
      for (int c = 0; c < per; ++c) {
        out.push_back({Kind::gpu_to_gpu, child * per + c, parent * per + c, 1, share});
        out.push_back({Kind::gpu_to_gpu, parent * per + c, child * per + c, 1, share});
      }
    }
}

Plan make_plan(const topology::Fabric& fabric, CollectiveOp op, Algorithm algo,
               const std::vector<std::vector<int>>& groups, double bytes) {
  const int per = fabric.cluster().gpus_per_node;
  const GroupShape first = shape_of(fabric, groups.front());
  Plan plan{
      op,    algo, static_cast<int>(groups.front().size()), static_cast<int>(first.nodes.size()),
      bytes, {}};
  const auto& valid = algorithms_for(op);
  if (std::find(valid.begin(), valid.end(), algo) == valid.end()) {
    const auto names = algorithm_names_for(op);
    throw core::Error(
        core::Error::Kind::not_supported, "algorithm", std::string(to_text(algo)),
        fmt::format("not an algorithm for {}; valid: {}", to_text(op), core::quoted_list(names)));
  }
  auto new_phase = [&](Algorithm a, Scope scope, const GroupShape& s, std::size_t ranks) {
    return Phase{op, a, scope, scale_of(s, ranks), {}};
  };
  switch (algo) {
    case Algorithm::ring:
      if (op == CollectiveOp::broadcast) {
        Phase phase = new_phase(algo, scope_of(first), first, groups.front().size());
        for (const auto& group : groups)
          for (std::size_t i = 0; i + 1 < group.size(); ++i)
            phase.transfers.push_back({Kind::gpu_to_gpu, group[i], group[i + 1], 1, bytes});
        plan.phases.push_back(std::move(phase));
      } else {
        plan.phases.push_back(ring_phase(fabric, op, groups, bytes));
      }
      break;
    case Algorithm::pat: {
      // One GPU per node (where NCCL uses PAT): the ring's bytes per rank, log2(n) steps.
      for (const auto& group : groups)
        if (shape_of(fabric, group).nodes.size() != group.size())
          throw core::Error(core::Error::Kind::not_supported, "algorithm", "pat",
                            "NCCL uses PAT only with one GPU per node in the group");
      plan.phases.push_back(ring_phase(fabric, op, groups, bytes, Algorithm::pat));
      break;
    }
    case Algorithm::nvls: {
      Phase phase = new_phase(algo, Scope::intra_node, first, groups.front().size());
      for (const auto& group : groups) {
        if (shape_of(fabric, group).nodes.size() != 1)
          throw core::Error(
              core::Error::Kind::not_supported, "algorithm", "nvls",
              "NVLS reduces inside one NVSwitch domain; across nodes use nvls_tree, sharp, tree "
              "or ring");
        add_nvls(phase.transfers, group, bytes);
      }
      plan.phases.push_back(std::move(phase));
      break;
    }
    case Algorithm::nvls_tree: {
      Phase phase = new_phase(algo, Scope::inter_node, first, groups.front().size());
      for (const auto& group : groups) {
        const GroupShape s = shape_of(fabric, group);
        require_whole_nodes(s, algo, true);
        add_nvls(phase.transfers, group, bytes);
        add_double_tree(phase.transfers, s, per, bytes / (2.0 * per));
      }
      plan.phases.push_back(std::move(phase));
      break;
    }
    case Algorithm::sharp: {
      Phase phase = new_phase(algo, Scope::inter_node, first, groups.front().size());
      for (const auto& group : groups) {
        require_whole_nodes(shape_of(fabric, group), algo, true);
        add_nvls(phase.transfers, group, bytes);
        for (int g : group) {
          phase.transfers.push_back({Kind::to_leaf, g, -1, 1, bytes / per});
          phase.transfers.push_back({Kind::from_leaf, -1, g, 1, bytes / per});
        }
      }
      plan.phases.push_back(std::move(phase));
      break;
    }
    case Algorithm::tree: {
      Phase phase = new_phase(algo, Scope::inter_node, first, groups.front().size());
      for (const auto& group : groups) {
        const GroupShape s = shape_of(fabric, group);
        require_whole_nodes(s, algo, true);
        add_double_tree(phase.transfers, s, per, bytes / (2.0 * per));
        // Inside each node, a chain per channel reduces toward the rail GPU and broadcasts back.
        for (int node : s.nodes)
          for (int c = 0; c < per; ++c)
            for (int k = 1; k < per; ++k) {
              const int a = node * per + (c + k) % per, b = node * per + (c + k - 1) % per;
              phase.transfers.push_back({Kind::gpu_to_gpu, a, b, 1, bytes / per});
              phase.transfers.push_back({Kind::gpu_to_gpu, b, a, 1, bytes / per});
            }
      }
      plan.phases.push_back(std::move(phase));
      break;
    }
    case Algorithm::hierarchical: {
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
      plan.phases.push_back(ring_phase(fabric, CollectiveOp::reduce_scatter, local, bytes));
      plan.phases.push_back(ring_phase(fabric, CollectiveOp::all_reduce, rails, bytes / per));
      plan.phases.push_back(ring_phase(fabric, CollectiveOp::all_gather, local, bytes));
      break;
    }
    case Algorithm::pairwise: {
      Phase phase = new_phase(algo, scope_of(first), first, groups.front().size());
      for (const auto& group : groups) {
        const double chunk = bytes / static_cast<double>(group.size());
        for (int a : group)
          for (int b : group)
            if (a != b) phase.transfers.push_back({Kind::gpu_to_gpu, a, b, 1, chunk});
      }
      plan.phases.push_back(std::move(phase));
      break;
    }
    case Algorithm::pxn: {
      Phase phase = new_phase(Algorithm::pairwise, Scope::inter_node, first, groups.front().size());
      for (const auto& group : groups) {
        const GroupShape s = shape_of(fabric, group);
        require_whole_nodes(s, algo, true);
        const double chunk = bytes / static_cast<double>(group.size());
        const double m = static_cast<double>(s.nodes.size());
        phase.transfers.reserve(phase.transfers.size() + group.size() * (group.size() - 1) / per);
        for (int node : s.nodes) {
          // NVLink: to each local GPU h its own chunk plus the chunks bound for rail h elsewhere.
          for (int g = 0; g < per; ++g)
            for (int h = 0; h < per; ++h)
              if (g != h)
                phase.transfers.push_back({Kind::gpu_to_gpu, node * per + g, node * per + h,
                                           static_cast<std::uint32_t>(s.nodes.size()), m * chunk});
          // NIC r to NIC r: every local GPU's chunk for GPU r of the other node.
          for (int other : s.nodes)
            if (other != node)
              for (int r = 0; r < per; ++r)
                phase.transfers.push_back({Kind::gpu_to_gpu, node * per + r, other * per + r,
                                           static_cast<std::uint32_t>(per), per * chunk});
        }
      }
      plan.phases.push_back(std::move(phase));
      break;
    }
    case Algorithm::direct: {
      Phase phase = new_phase(algo, scope_of(first), first, groups.front().size());
      for (const auto& group : groups) add_ring(phase.transfers, group, bytes);
      plan.phases.push_back(std::move(phase));
      break;
    }
  }
  return plan;
}

}  // namespace

void check_collective_size(double bytes) {
  if (!(bytes > 0)) throw core::Error("size", fmt::format("{}", bytes), "must be positive");
}

std::uint64_t phase_signature(const Phase& phase, double bytes) {
  std::uint64_t key = core::hash_combine(0xC011, phase.transfers.size());
  for (const auto& t : phase.transfers)
    key = core::hash_combine(
        key,
        static_cast<std::uint64_t>(t.kind) * 1000003u + static_cast<std::uint64_t>(t.src_gpu + 1),
        static_cast<std::uint64_t>(t.dst_gpu + 1) * 1000003u + t.members,
        static_cast<std::uint64_t>(std::llround(t.bytes / bytes * 1e9)));
  return key == 0 ? 1 : key;
}

Choice parse_choice(std::string_view text, const std::string& field) {
  Choice c;
  const auto slash = text.find('/');
  const std::string_view algo = text.substr(0, slash);
  if (algo != "auto") c.algorithm = parse_algorithm(algo, field);
  if (slash != std::string_view::npos) {
    const std::string_view proto = text.substr(slash + 1);
    if (proto != "auto") c.protocol = parse_protocol(proto, field);
  }
  return c;
}

std::string to_text(const Choice& c) {
  std::string out = c.algorithm ? std::string(to_text(*c.algorithm)) : "auto";
  if (c.protocol) out += "/" + std::string(to_text(*c.protocol));
  return out;
}

Plan plan_collective(const topology::Fabric& fabric, CollectiveOp op, Algorithm algorithm,
                     const std::vector<std::vector<int>>& groups, double bytes) {
  check_collective_size(bytes);
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
  Plan plan = make_plan(fabric, op, algorithm, groups, bytes);
  for (Phase& phase : plan.phases) phase.signature = phase_signature(phase, bytes);
  return plan;
}

}  // namespace twin::netsim
