// How long a collective takes: each phase of its plan (netsim/collective_plan.cpp) routed over
// the fabric and solved by the flow engine (max-min fair rates, in closed form where the rates
// never change), divided by the path's fitted efficiency and the protocol's share of bandwidth,
// plus the latency of the profile's NCCL model moved to the fitted curve's. Identical phases
// are solved once; `auto` picks what NCCL's tuner picks (netsim/nccl_tuner.hpp).
#include "netsim/collective.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "netsim/closed_form.hpp"

namespace twin::netsim {
namespace {

using Kind = Transfer::Kind;

/// Room reserved per flow in a phase's route table: a GPU-to-GPU route across a 3-tier tree
/// (PCIe, NIC, 4 switch links, NIC, PCIe). Only a reservation: longer routes grow it.
constexpr std::size_t kTypicalHops = 8;

}  // namespace

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
  if (profile.nccl && profile.nccl->tuner) tuner_.emplace(profile);
}

NcclLinks CollectiveSimulator::nccl_links(int ranks, int nodes) const {
  const topology::ClusterSpec& c = fabric_->cluster();
  NcclLinks links;
  links.nic_GBps = c.nic_gbps / 8.0;
  // The NICs near the group's GPUs on one node: each GPU's own, or its share of a shared one.
  const double gpus_here = static_cast<double>(ranks) / std::max(1, nodes);
  links.nics_per_node = std::max(
      1, static_cast<int>(std::floor(gpus_here * c.nics_per_node / c.gpus_per_node + 1e-9)));
  return links;
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
  const std::uint64_t key = phase.signature != 0 ? phase.signature : phase_signature(phase, bytes);
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
      double cap_GBps = model_->max_busbw_GBps(phase.op, phase.algorithm, protocol, phase.scale);
      if (tuner_) {
        const NcclGraph graph =
            tuner_->graph(phase.scale, nccl_links(phase.scale.ranks, phase.scale.nodes));
        cap_GBps = std::min(cap_GBps, tuner_->busbw_ceiling_GBps(phase.op, phase.algorithm,
                                                                 protocol, phase.scale, graph));
      }
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
  check_collective_size(bytes);
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
  // NCCL's own table decides where it tunes the op; the simulation's fastest is kept beside it.
  const bool by_nccl = tuner_ && NcclTuner::tunes(op);
  std::optional<CollectiveResult> best, fastest;
  double best_nccl_us = 0;
  std::string reasons;
  bool pxn_applies = false;
  for (Algorithm algo : algorithms) {
    if (by_nccl && !NcclTuner::nccls(algo) && !choice.algorithm) continue;
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
        if (!by_nccl) {
          if (!best || r.time_s < best->time_s) best = std::move(r);
          continue;
        }
        const GroupScale scale{plan->ranks, plan->nodes, true};
        const NcclGraph graph = tuner_->graph(scale, nccl_links(plan->ranks, plan->nodes));
        const std::optional<double> nccl_us = tuner_->time_us(op, algo, p, scale, graph, bytes);
        // Cells whose NCCL table is not restated (NVLS, CollNet) enter at their simulated time.
        const double us = nccl_us ? *nccl_us : r.time_s * 1e6;
        r.nccl_predicted_s = nccl_us ? *nccl_us * 1e-6 : 0.0;
        if (!fastest || r.time_s < fastest->time_s) fastest = r;
        if (!best || us < best_nccl_us) {
          best = std::move(r);
          best_nccl_us = us;
        }
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
  if (fastest && (fastest->algorithm != best->algorithm || fastest->protocol != best->protocol)) {
    best->fastest_algorithm = fastest->algorithm;
    best->fastest_protocol = fastest->protocol;
    best->fastest_time_s = fastest->time_s;
  }
  return *best;
}

CollectiveResult CollectiveSimulator::run(const std::string& op, const std::string& choice,
                                          const std::vector<std::vector<int>>& groups,
                                          double bytes) {
  return run(parse_op(op), parse_choice(choice), groups, bytes);
}

}  // namespace twin::netsim
