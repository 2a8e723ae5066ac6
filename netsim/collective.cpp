#include "netsim/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "core/text.hpp"
#include "netsim/closed_form.hpp"

namespace twin::netsim {
namespace {

using Kind = Transfer::Kind;

/// Room reserved per flow in a phase's route table: a GPU-to-GPU route across a 3-tier tree
/// (PCIe, NIC, 4 switch links, NIC, PCIe). Only a reservation: longer routes grow it.
constexpr std::size_t kTypicalHops = 8;

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

void check_size(double bytes) {
  if (!(bytes > 0)) throw core::Error("size", fmt::format("{}", bytes), "must be positive");
}

/// Identical phases (same transfers, bytes relative to the collective's size) share a solve.
std::uint64_t signature_of(const Phase& phase, double bytes) {
  std::uint64_t key = core::hash_combine(0xC011, phase.transfers.size());
  for (const auto& t : phase.transfers)
    key = core::hash_combine(
        key,
        static_cast<std::uint64_t>(t.kind) * 1000003u + static_cast<std::uint64_t>(t.src_gpu + 1),
        static_cast<std::uint64_t>(t.dst_gpu + 1) * 1000003u + t.members,
        static_cast<std::uint64_t>(std::llround(t.bytes / bytes * 1e9)));
  return key == 0 ? 1 : key;
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
  check_size(bytes);
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
  for (Phase& phase : plan.phases) phase.signature = signature_of(phase, bytes);
  return plan;
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
      capacity_(link_capacities(fabric, state)) {
  if (profile.nccl) model_.emplace(profile);
}

const calibrate::CollectiveCurve& CollectiveSimulator::curve(const Phase& phase, Protocol protocol,
                                                             double bytes) const {
  const std::string op(to_text(phase.op)), algo(to_text(phase.algorithm)),
      scope(to_text(phase.scope));
  const calibrate::CollectiveCurve* c = profile_->find_curve(
      op, algo, std::string(to_text(protocol)), scope, bytes, phase.scale.nodes);
  if (c == nullptr)
    throw core::Error(core::Error::Kind::not_calibrated, "profile", profile_->name,
                      fmt::format("no {} / {} / {} curve; fit one from nccl-tests logs "
                                  "(clustertwin calibrate fit) or choose another algorithm",
                                  op, algo, scope));
  return *c;
}

const CollectiveSimulator::Solved& CollectiveSimulator::solve_phase(const Phase& phase,
                                                                    double bytes) {
  const std::uint64_t key = phase.signature != 0 ? phase.signature : signature_of(phase, bytes);
  if (auto it = phase_cache_.find(key); it != phase_cache_.end()) return it->second;

  const topology::Fabric& f = *fabric_;
  // A GPU's NIC cables, up or down, an equal share each (several NICs per GPU split its traffic).
  auto nic_cables = [&](int gpu, bool up, std::vector<topology::Hop>& hops) {
    const int k = f.nics_per_gpu();
    for (int j = 0; j < k; ++j) {
      const topology::Cable& cable = f.cable(f.nic_cable(f.nic_of_gpu(gpu, j)));
      hops.push_back({up ? cable.up : cable.down, 1.0 / k});
    }
  };
  auto hops_of = [&](const Transfer& t) -> std::vector<topology::Hop> {
    switch (t.kind) {
      case Kind::gpu_to_gpu:
        return router_.gpu_route(t.src_gpu, t.dst_gpu).hops;
      case Kind::to_switch:
        return {{f.nvlink_up(t.src_gpu), 1.0}};
      case Kind::from_switch:
        return {{f.nvlink_down(t.dst_gpu), 1.0}};
      case Kind::to_leaf: {
        std::vector<topology::Hop> hops{{f.pcie_up(t.src_gpu), 1.0}};
        nic_cables(t.src_gpu, true, hops);
        return hops;
      }
      case Kind::from_leaf: {
        std::vector<topology::Hop> hops;
        nic_cables(t.dst_gpu, false, hops);
        hops.push_back({f.pcie_down(t.dst_gpu), 1.0});
        return hops;
      }
    }
    return {};
  };
  const std::size_t n = phase.transfers.size();
  RouteTable routes;
  routes.begin.reserve(n + 1);
  routes.link.reserve(n * kTypicalHops);
  std::vector<double> flow_bytes(n), weight(n);
  for (std::size_t i = 0; i < n; ++i) {
    const Transfer& t = phase.transfers[i];
    routes.add(hops_of(t));
    flow_bytes[i] = t.bytes;
    weight[i] = t.members;
  }
  // The native engine's answer in closed form when the phase settles in one round or its rates
  // never change (symmetric patterns: netsim/closed_form.hpp); otherwise, and always for
  // SimGrid, the engine runs.
  std::optional<SingleLevelResult> closed;
  if (engine_->name() == "native") {
    closed = solve_single_level(routes, flow_bytes, weight, capacity_);
    if (!closed) closed = solve_fixed_allocation(routes, flow_bytes, weight, capacity_);
  }
  double makespan_s = 0;
  if (closed) {
    makespan_s = closed->makespan_s;
    last_link_bytes_ = std::move(closed->link_bytes);
  } else {
    FlowSet set;
    set.flows.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const Transfer& t = phase.transfers[i];
      Flow flow;
      flow.src_gpu = t.src_gpu;
      flow.dst_gpu = t.dst_gpu;
      flow.bytes = t.bytes;
      flow.weight = t.members;
      for (std::uint32_t h = routes.begin[i]; h < routes.begin[i + 1]; ++h)
        flow.hops.push_back({topology::LinkId::from_index(routes.link[h]), routes.fraction_at(h)});
      set.flows.push_back(std::move(flow));
    }
    routes = RouteTable{};  // the engine holds its own copy of the routes
    FlowResult r = engine_->run(set, capacity_);
    makespan_s = r.makespan_s;
    last_link_bytes_ = std::move(r.link_bytes);
  }
  ++phases_solved_;
  Solved solved;
  solved.makespan_per_byte = makespan_s / bytes;
  solved.link_bytes_per_byte.resize(last_link_bytes_.size());
  for (std::size_t i = 0; i < last_link_bytes_.size(); ++i)
    solved.link_bytes_per_byte[i] = static_cast<float>(last_link_bytes_[i] / bytes);
  return phase_cache_[key] = std::move(solved);
}

CollectiveResult CollectiveSimulator::run_plan(const Plan& plan, Protocol protocol, double bytes) {
  CollectiveResult result;
  result.op = plan.op;
  result.algorithm = plan.algorithm;
  result.protocol = protocol;
  result.bytes = bytes;
  result.ranks = plan.ranks;
  result.measured_here = true;
  if (model_ && !model_->available(plan.algorithm, protocol))
    throw core::Error("protocol", std::string(to_text(protocol)),
                      fmt::format("profile '{}' has no {} cell for {} in its NCCL tables",
                                  profile_->name, to_text(protocol), to_text(plan.algorithm)));
  if (!model_ && protocol != Protocol::simple)
    throw core::Error("protocol", std::string(to_text(protocol)),
                      fmt::format("profile '{}' has no NCCL tables: Simple only", profile_->name));
  const int per = fabric_->cluster().gpus_per_node;
  for (const Phase& phase : plan.phases) {
    const auto& c = curve(phase, protocol, bytes);
    result.measured_here = result.measured_here && c.nodes == plan.nodes &&
                           c.gpus_per_node == per && c.max_bytes > 0 && bytes >= c.min_bytes &&
                           bytes <= c.max_bytes;
    const Solved& solved = solve_phase(phase, plan.bytes);  // per byte of the plan's size
    const double flow_s = solved.makespan_per_byte * bytes;
    if (result.link_bytes.empty()) result.link_bytes.assign(solved.link_bytes_per_byte.size(), 0.0);
    for (std::size_t i = 0; i < solved.link_bytes_per_byte.size(); ++i)
      result.link_bytes[i] += solved.link_bytes_per_byte[i] * bytes;
    result.phase_flow_s.push_back(flow_s);

    double latency_us = c.latency_us.value, efficiency = c.efficiency.value;
    double transfer_s = 0;
    if (model_) {
      // The phase's own op and scale: hierarchical's phases are rings of their own groups.
      const bool own_protocol = c.protocol == to_text(protocol);
      latency_us = model_->latency_us(phase.op, phase.algorithm, protocol, phase.scale, bytes);
      if (own_protocol && c.nodes > 0 && !c.latency_us.source.empty()) {
        // A fitted latency at its scale, moved here by the model's steps x hops.
        GroupScale there = phase.scale;
        const double ranks_per_node = static_cast<double>(phase.scale.ranks) / phase.scale.nodes;
        there.nodes = c.nodes;
        there.ranks = static_cast<int>(std::lround(ranks_per_node * c.nodes));
        if (ranks_per_node == per) there.ranks = c.nodes * c.gpus_per_node;
        latency_us += c.latency_us.value -
                      model_->latency_us(phase.op, phase.algorithm, protocol, there, bytes);
        latency_us = std::max(latency_us, 0.0);
      }
      // Curves hold the path's efficiency; the protocol's fraction is the model's.
      efficiency *= model_->bandwidth_fraction(phase.algorithm, protocol, bytes);
      const double cap_GBps =
          model_->max_busbw_GBps(phase.op, phase.algorithm, protocol, phase.scale);
      transfer_s = flow_s / efficiency;
      if (std::isfinite(cap_GBps))
        transfer_s = std::max(transfer_s,
                              bytes * busbw_factor(phase.op, phase.scale.ranks) / (cap_GBps * 1e9));
    } else {
      transfer_s = flow_s / efficiency;
    }
    result.latency_s += latency_us * 1e-6;
    result.time_s += latency_us * 1e-6 + transfer_s;
    result.flows += phase.transfers.size();
  }
  result.algbw_GBps = bytes / result.time_s / 1e9;
  result.busbw_GBps = result.algbw_GBps * busbw_factor(plan.op, plan.ranks);
  return result;
}

const Plan& CollectiveSimulator::plan_for(CollectiveOp op, Algorithm algorithm,
                                          const std::vector<std::vector<int>>& groups,
                                          double bytes) {
  check_size(bytes);
  const auto key = std::make_pair(op, algorithm);
  if (auto it = plans_.find(key); it != plans_.end() && it->second.groups == groups)
    return it->second.plan;
  Plan plan = plan_collective(*fabric_, op, algorithm, groups, bytes);
  plans_.erase(key);
  return plans_.emplace(key, Planned{groups, std::move(plan)}).first->second.plan;
}

CollectiveResult CollectiveSimulator::run(CollectiveOp op, const Choice& choice,
                                          const std::vector<std::vector<int>>& groups,
                                          double bytes) {
  std::vector<Protocol> protocols;
  if (choice.protocol) {
    protocols = {*choice.protocol};
  } else {
    for (Protocol p : kAllProtocols)
      if (model_ ? true : p == Protocol::simple) protocols.push_back(p);
  }
  if (choice.algorithm && choice.protocol)
    return run_plan(plan_for(op, *choice.algorithm, groups, bytes), *choice.protocol, bytes);
  std::vector<Algorithm> algorithms;
  if (choice.algorithm)
    algorithms = {*choice.algorithm};
  else
    algorithms = algorithms_for(op);
  std::optional<CollectiveResult> best;
  std::string reasons;
  bool pxn_applies = false;
  for (Algorithm algo : algorithms) {
    // PXN is not a choice of NCCL's tuner but its transport's default for all-to-all
    // (NCCL_PXN_DISABLE=0, NCCL_P2P_PXN_LEVEL=2): where it applies, NCCL runs it and pairwise
    // (PXN disabled) is only what a user forces.
    if (algo == Algorithm::pairwise && pxn_applies) continue;
    const Plan* plan = nullptr;
    try {
      plan = &plan_for(op, algo, groups, bytes);
    } catch (const core::Error& e) {
      if (e.kind() != core::Error::Kind::not_supported || choice.algorithm) throw;
      reasons += fmt::format("\n  {}: {}", to_text(algo), e.reason());
      continue;  // not applicable to these groups
    }
    pxn_applies = pxn_applies || algo == Algorithm::pxn;
    for (Protocol p : protocols) {
      if (model_ && !model_->available(algo, p)) continue;
      try {
        CollectiveResult r = run_plan(*plan, p, bytes);
        if (!best || r.time_s < best->time_s) best = std::move(r);
      } catch (const core::Error& e) {
        if (e.kind() != core::Error::Kind::not_calibrated) throw;
        reasons += fmt::format("\n  {}: {}", to_text(algo), e.reason());
        break;  // not calibrated
      }
    }
  }
  if (!best) {
    const std::string what = to_text(choice);
    throw core::Error(
        core::Error::Kind::not_supported, choice.protocol ? "protocol" : "algorithm", what,
        fmt::format("nothing runs {} on these groups with profile '{}'{}", to_text(op),
                    profile_->name,
                    reasons.empty() ? std::string(": no protocol the profile defines fits")
                                    : ":" + reasons));
  }
  return *best;
}

CollectiveResult CollectiveSimulator::run(const std::string& op, const std::string& choice,
                                          const std::vector<std::vector<int>>& groups,
                                          double bytes) {
  return run(parse_op(op), parse_choice(choice), groups, bytes);
}

}  // namespace twin::netsim
