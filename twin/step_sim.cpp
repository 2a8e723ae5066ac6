#include "twin/step_sim.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "netsim/collective.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"
#include "twin/detail/pipeline_schedule.hpp"
#include "workload/moe_dispatch.hpp"
#include "workload/step_program.hpp"

namespace twin::sim {
namespace {

using ChunkCost = workload::ChunkProgram;
using detail::Contention;
using detail::Instance;
using detail::StageComm;
using workload::Layout;

StepReport simulate_fixed(const Cluster& cluster, const std::string& engine, bool per_rank,
                          const core::CancelToken* cancel) {
  core::check(cancel);
  const Scenario& scenario = cluster.scenario();
  const auto& model = scenario.model;
  const auto& p = scenario.parallelism;
  const auto& t = scenario.training;
  const topology::Fabric& fabric = cluster.fabric();
  const calibrate::Profile& profile = cluster.profile();
  // Ranks to GPUs: the identity on a whole generated cluster; on an imported fabric or with
  // drained nodes, the usable hosts in fabric order (topology/placement.hpp).
  Layout layout =
      workload::make_layout(model, p, t, topology::job_ranks(fabric, p.tp * p.cp, p.pp, p.dp));
  const topology::Placement placement = topology::place_job(fabric, layout.gpus);
  const bool placed = !placement.identity();
  const workload::KernelCoster coster = [&] {
    try {
      return workload::KernelCoster(profile, t.precision, t.attention,
                                    scenario.cluster.gpu_power_w);
    } catch (const core::Error& e) {
      throw e.in_file(scenario.source);
    }
  }();
  if (p.stage_layers_auto) {
    // The interleaved schedule runs chunk by chunk in lock step: it is the heaviest chunk that
    // holds every rank up, so with interleaving the virtual stages are what is balanced (the
    // first carries the embedding, the last the output layer, loss and MTP modules), as a
    // Megatron-Core pipeline layout would place them.
    const auto w = workload::stage_weights(model, p, t, layout, coster);
    const auto split = workload::balance_stage_layers(model.layers, layout.pp * layout.v, w.layer_s,
                                                      w.embedding_s, w.output_s);
    layout.set_chunk_layers(split);
  }
  StepReport r;
  r.program = workload::step_program(model, p, t, layout, coster);
  r.virtual_stages = layout.v;
  r.attention = coster.attention_kernel();
  for (int st = 0; st < layout.pp; ++st) {
    int n = 0;
    for (int c = 0; c < layout.v; ++c) n += layout.layers(st, c);
    r.stage_layers.push_back(n);
  }
  r.gpus = layout.gpus;
  r.micro_batches = layout.micro_batches;
  r.memory = workload::memory_per_gpu(model, p, t, layout);
  r.memory_capacity_GB = profile.hbm_GB.value;
  workload::check_memory(r.memory, profile.hbm_GB.value, profile.gpu_model);

  const topology::FabricState& state = cluster.state();
  netsim::CollectiveSimulator net(fabric, state.healthy() ? nullptr : &state, profile,
                                  netsim::make_engine(engine));
  r.link_bytes.assign(fabric.link_count(), 0.0);
  std::map<std::string, double> collective_time;
  // Runs one collective for all `groups` at once; adds its link bytes `count` times per step.
  // `units` > 1: the bytes go as that many equal collectives one after another (FSDP's
  // per-layer units, Megatron's gradient buckets), each paying its own latency; the time
  // returned and recorded is theirs together.
  // `algorithm`: instead of the scenario's choice for `op`.
  auto collective = [&](const std::string& label, const std::string& op,
                        const std::vector<std::vector<int>>& groups, double bytes, double count,
                        int units = 1, const std::string& algorithm = "") {
    if (groups.empty() || groups.front().size() < 2 || !(bytes > 0)) return 0.0;
    units = std::max(1, units);
    bytes /= units;
    count *= units;
    const std::string chosen = algorithm.empty() ? scenario.algorithm_for(op) : algorithm;
    netsim::CollectiveResult res;
    try {
      res = net.run(op, chosen, placed ? placement.map(groups) : groups, bytes);
    } catch (const core::Error& e) {
      if (e.kind() != core::Error::Kind::not_supported) throw;
      throw core::Error("collectives." + op, chosen,
                        fmt::format("cannot run {} ({} groups of {} GPUs): {}", label,
                                    groups.size(), groups.front().size(), e.reason()),
                        scenario.source);
    }
    for (std::size_t i = 0; i < res.link_bytes.size(); ++i)
      r.link_bytes[i] += count * res.link_bytes[i];
    collective_time[label] = units * res.time_s;
    return units * res.time_s;
  };

  const int pp = layout.pp, v = layout.v, m = layout.micro_batches;
  const std::vector<std::vector<ChunkCost>>& cost = r.program.chunks;
  std::vector<double> optimizer_s(pp);
  for (int s = 0; s < pp; ++s) optimizer_s[s] = r.program.optimizer[s].seconds;

  // Communication costs of every stage. With `replica` >= 0 (per-rank mode) the collectives
  // private to a replica (TP, EP, pipeline transfers) are solved for that replica's groups alone;
  // data-parallel collectives always span every replica.
  auto build_comm = [&](int replica) {
    std::vector<StageComm> comm(pp);
    const bool shared = replica <= 0;  // count the data-parallel traffic once
    auto mine = [&](std::vector<std::vector<int>> groups) {
      if (replica < 0) return groups;
      std::vector<std::vector<int>> kept;
      for (auto& g : groups)
        if (std::any_of(g.begin(), g.end(),
                        [&](int gpu) { return (gpu / layout.tp) % layout.dp == replica; }))
          kept.push_back(std::move(g));
      return kept;
    };
    for (int s = 0; s < pp; ++s) {
      const ChunkCost& c0 = cost[s][0];
      const double slots = static_cast<double>(m) * v * 2;  // per step: every chunk, fwd and bwd
      const auto tp_groups = mine(layout.tp_groups(s));
      const double tp_calls = slots * c0.tp_collectives + slots / 2 * c0.recompute_tp_collectives;
      comm[s].tp_slot_s = p.sequence_parallel
                              ? collective(fmt::format("TP all_gather s{}", s), "all_gather",
                                           tp_groups, c0.tp_bytes, tp_calls) +
                                    collective(fmt::format("TP reduce_scatter s{}", s),
                                               "reduce_scatter", tp_groups, c0.tp_bytes, tp_calls)
                              : collective(fmt::format("TP all_reduce s{}", s), "all_reduce",
                                           tp_groups, c0.tp_bytes, tp_calls);
      double ep_bytes = 0, ep_calls = 0;
      for (const auto& c : cost[s]) {
        ep_bytes = std::max(ep_bytes, c.ep_bytes);
        ep_calls += static_cast<double>(m) * 2 * c.ep_alltoalls;
      }
      if (layout.ep > 1) {
        // An EP group spans ep replicas: in per-rank mode count its traffic for the first one.
        const auto groups = mine(layout.ep_groups(s));
        const bool first =
            replica < 0 || (groups.front().front() / layout.tp) % layout.dp == replica;
        const double calls = first ? ep_calls : 0.0;
        if (t.moe_dispatcher == "flex") {
          // DeepEP / HybridEP: rail transfers across nodes and NVLink fan-out, pipelined, each
          // a pairwise exchange of direct writes (not an NCCL collective).
          const workload::FlexDispatch f = workload::flex_dispatch(
              model, layout.ep, groups, fabric.cluster().gpus_per_node, ep_bytes / model.top_k);
          comm[s].ep_s = std::max(
              f.rails.empty() ? 0.0
                              : collective(fmt::format("EP flex dispatch (rails) s{}", s),
                                           "alltoall", f.rails, f.rail_bytes, calls, 1, "pairwise"),
              f.local.empty()
                  ? 0.0
                  : collective(fmt::format("EP flex dispatch (NVLink) s{}", s), "alltoall", f.local,
                               f.local_bytes, calls, 1, "pairwise"));
        } else {
          comm[s].ep_s =
              collective(fmt::format("EP alltoall s{}", s), "alltoall", groups, ep_bytes, calls);
        }
      }
      if (s + 1 < pp) {
        std::vector<std::vector<int>> pairs;
        for (int d = 0; d < layout.dp; ++d)
          for (int tr = 0; tr < layout.tp; ++tr)
            pairs.push_back({layout.gpu(tr, d, s), layout.gpu(tr, d, s + 1)});
        comm[s].p2p_s = collective(fmt::format("PP send/recv s{}", s), "sendrecv", mine(pairs),
                                   c0.p2p_bytes, slots / 2);
        // Scatter-gather (the program asks for it): the receiving stage's TP group all-gathers
        // the shares it was sent.
        const bool gathers =
            std::any_of(c0.collectives.begin(), c0.collectives.end(), [](const auto& request) {
              return request.group == "pp" && request.op == "all_gather";
            });
        if (gathers)
          comm[s].p2p_s += collective(fmt::format("PP all_gather s{}", s + 1), "all_gather",
                                      mine(layout.tp_groups(s + 1)), c0.tp_bytes, slots / 2);
      } else if (v > 1 && pp > 1) {
        comm[s].p2p_s = comm[0].p2p_s;  // last stage to stage 0 of the next chunk: same pattern
      }
      if (model.tied_embeddings && pp > 1 && s == pp - 1) {
        // Each TP rank's vocabulary shard of the embedding, summed between its copies on the
        // first and the last stage of every replica, in the gradients' dtype.
        std::vector<std::vector<int>> pairs;
        for (int d = 0; d < layout.dp; ++d)
          for (int tr = 0; tr < layout.tp; ++tr)
            pairs.push_back({layout.gpu(tr, d, 0), layout.gpu(tr, d, pp - 1)});
        const double bytes =
            static_cast<double>(model.vocab) * model.hidden / layout.tp * t.grad_bytes();
        comm[s].tied_embedding_s =
            collective("tied embedding all_reduce", "all_reduce", mine(pairs), bytes, 1);
        comm[0].tied_embedding_s = comm[s].tied_embedding_s;
      }
      if (layout.cp > 1) {
        // Ring attention: every rank sends its K/V block to the next rank of its CP group (a
        // send/recv over a group is that ring); backward sends twice the bytes.
        double cp_calls = 0;
        for (const auto& c : cost[s]) cp_calls += 3.0 * m * c.cp_exchanges;
        comm[s].cp_s = collective(fmt::format("CP ring send/recv s{}", s), "sendrecv",
                                  mine(layout.dp_groups(s, layout.cp)), c0.cp_bytes, cp_calls);
      }
      for (int c = 0; c < v; ++c) {
        const ChunkCost& cc = cost[s][c];
        // Parameters are gathered in training.param_gather_dtype; gradients travel in
        // training.grad_reduce_dtype. The step program costs autocast's casts of fp32 weights
        // where the GEMMs use them; the cast around an fp32 reduction is not costed.
        const double dense_params = cc.params - cc.expert_params;
        const double g = t.grad_bytes();
        const double once = shared ? 1.0 : 0.0;
        double dp = 0, gather = 0, scatter = 0, hsdp = 0, param_gather = 0, embedding_gather = 0,
               embedding_scatter = 0;
        const int shard = layout.shard_group;
        // Collectives per chunk: sharded gradients (zero >= 2: PyTorch FSDP, ZeRO-2/3) move one
        // unit per transformer layer; Megatron's DDP and distributed optimizer move buckets of
        // max(40M, 1M x dp) parameters (Megatron-Core DistributedDataParallel's default
        // bucket_size), one bucket for everything when gradient reduction is not overlapped.
        const int layer_units = std::max(1, cc.layers);
        auto buckets = [&](double params, int dp_size) {
          if (!t.overlap_grad_reduce) return 1;
          const double bucket = std::max(40e6, 1e6 * dp_size);
          return static_cast<int>(std::ceil(params / bucket));
        };
        if (p.zero >= 3) {
          // The layers' units are gathered twice a micro-batch (forward, and again for backward)
          // and their gradients reduce-scattered once. The embedding is gathered on its own (a
          // unit of its own, or PyTorch FSDP's root unit, which also holds a tied output layer
          // and is not resharded after forward): its parameters are the first the forward needs,
          // so nothing before them hides the gather; the lookup's backward needs no weights, so
          // it is not gathered again; and its gradient is complete only after the last layer's
          // backward, so its reduce-scatter hides behind nothing either. An untied output layer
          // is gathered and reduced like a layer (a unit of its own, or, where a framework
          // keeps it in the root unit with the embedding, a little optimistic).
          const auto groups = layout.dp_groups(s, shard);
          const double layer_params = cc.params - cc.embedding_params;
          gather = collective(fmt::format("FSDP all_gather s{} c{}", s, c), "all_gather", groups,
                              t.param_gather_bytes() * layer_params, once * 2.0 * m, layer_units);
          scatter = collective(fmt::format("FSDP reduce_scatter s{} c{}", s, c), "reduce_scatter",
                               groups, g * layer_params, once * m, layer_units);
          embedding_gather =
              collective(fmt::format("FSDP embedding all_gather s{} c{}", s, c), "all_gather",
                         groups, t.param_gather_bytes() * cc.embedding_params, once * m);
          embedding_scatter =
              collective(fmt::format("FSDP embedding reduce_scatter s{} c{}", s, c),
                         "reduce_scatter", groups, g * cc.embedding_params, once * m);
          if (shard < layout.dp)
            hsdp = collective(fmt::format("HSDP all_reduce s{} c{}", s, c), "all_reduce",
                              layout.dp_groups(s, layout.dp / shard, shard), g * cc.params / shard,
                              once, layer_units);
        } else {
          const int units = p.zero == 2 ? layer_units : buckets(dense_params, layout.dp);
          const std::string op =
              p.zero == 0 || t.grad_sync == "all_reduce" ? "all_reduce" : "reduce_scatter";
          dp = collective(fmt::format("DP {} s{} c{}", op, s, c), op,
                          layout.dp_groups(s, layout.dp), g * dense_params, once, units);
          if (p.zero >= 1)  // distributed optimizer: gather the updated shards back
            param_gather = collective(fmt::format("DP param all_gather s{} c{}", s, c),
                                      "all_gather", layout.dp_groups(s, layout.dp),
                                      t.param_gather_bytes() * dense_params, once, units);
          if (cc.expert_params > 0 && layout.expert_dp() > 1)
            dp += collective(
                fmt::format("DP expert {} s{} c{}", op, s, c), op, layout.expert_dp_groups(s),
                g * cc.expert_params, once,
                p.zero >= 2 ? layer_units : buckets(cc.expert_params, layout.expert_dp()));
        }
        comm[s].dp_sync_s.push_back(dp);
        comm[s].fsdp_gather_s.push_back(gather);
        comm[s].fsdp_scatter_s.push_back(scatter);
        comm[s].embedding_gather_s.push_back(embedding_gather);
        comm[s].embedding_scatter_s.push_back(embedding_scatter);
        comm[s].hsdp_reduce_s.push_back(hsdp);
        comm[s].param_gather_s.push_back(param_gather);
      }
    }
    return comm;
  };

  // Instances: the symmetric one (or, per rank, every replica), and the replica holding a
  // straggler if there is one. The step ends when the slowest instance does.
  std::vector<double> scale(pp, 1.0);
  const topology::ClusterSpec& hosts = fabric.cluster();
  const Contention overlap =
      Contention::of(profile.kernels, t.moe_dispatcher == "flex",
                     static_cast<double>(hosts.nics_per_node) / hosts.gpus_per_node,
                     profile.nic_payload_Bps(), coster.hbm_Bps());
  std::vector<StageComm> comm = build_comm(-1);
  Instance worst;
  if (per_rank) {
    for (int replica = 0; replica < layout.dp; ++replica) {
      core::check(cancel);
      Instance one = detail::run_instance(p, t, layout, cost, build_comm(replica), optimizer_s,
                                          scale, overlap);
      if (replica == 0 || one.step_s > worst.step_s) worst = std::move(one);
    }
    std::fill(r.link_bytes.begin(), r.link_bytes.end(),
              0.0);  // recount: private groups per replica
    for (int replica = 0; replica < layout.dp; ++replica) {
      core::check(cancel);
      build_comm(replica);
    }
  } else {
    worst = detail::run_instance(p, t, layout, cost, comm, optimizer_s, scale, overlap);
  }
  if (scenario.slow_gpu >= 0) {
    if (scenario.slow_gpu >= r.gpus)
      throw core::Error("perturbations.slow_gpu.gpu", std::to_string(scenario.slow_gpu),
                        fmt::format("the cluster has {} GPUs", r.gpus), scenario.source);
    scale[scenario.slow_gpu / (layout.tp * layout.dp)] = scenario.slow_factor;
    Instance slow = detail::run_instance(p, t, layout, cost, comm, optimizer_s, scale, overlap);
    if (slow.step_s > worst.step_s) worst = std::move(slow);
  }
  r.step_time_s = worst.step_s;
  r.critical_stage = worst.critical_stage;
  r.timeline = std::move(worst.timeline);
  r.breakdown = std::move(worst.breakdown);

  r.tokens_per_step = t.global_batch * model.seq_len;
  r.tokens_per_s = r.tokens_per_step / r.step_time_s;
  // Attention scores counted as training.model_flops says (the whole square, or causal).
  const bool causal = t.causal_flops();
  r.model_flops_per_step = model.training_flops(t.global_batch, causal);
  r.model_flops = t.model_flops;
  double recompute = 0;
  // Full recompute reruns every layer's forward but not the output layer (Narayanan et al.);
  // with recompute_layers, the first layers of each chunk only.
  if (p.recompute == "full") {
    int again = 0;
    for (int stage = 0; stage < layout.pp; ++stage)
      for (int chunk = 0; chunk < layout.v; ++chunk)
        again += p.recomputed_layers(layout.layers(stage, chunk));
    recompute = (model.forward_flops(t.global_batch, causal) -
                 2.0 * t.global_batch * model.seq_len * model.vocab * model.hidden) *
                again / model.layers;
  }
  if (p.recompute == "selective") {
    // The attention core counted as the model FLOPs count it; every other recomputed kernel (the
    // recompute modules) from the program: per GPU per micro-batch, on each of the stage's GPUs,
    // for every micro-batch of the step.
    if (p.recomputes("core_attn")) recompute = model.attention_score_flops(t.global_batch, causal);
    const double gpus_per_stage = static_cast<double>(layout.gpus) / layout.pp;
    for (const auto& stage : r.program.chunks)
      for (const auto& chunk : stage)
        for (const auto& block : chunk.blocks)
          for (const auto& k : block.recompute)
            if (k.name.find("attention") == std::string::npos)
              recompute += block.count * k.flops * layout.micro_batches * gpus_per_stage;
  }
  r.hardware_flops_per_step = r.model_flops_per_step + recompute;
  // MFU is against the BF16 dense peak whatever the training precision (as NeMo and Megatron
  // report FP8 runs: model TFLOP/s per GPU over the BF16 peak).
  r.peak_tflops = profile.peak_flops("bf16") / 1e12;
  r.tflops_per_gpu = r.model_flops_per_step / r.step_time_s / r.gpus / 1e12;
  r.hfu_tflops_per_gpu = r.hardware_flops_per_step / r.step_time_s / r.gpus / 1e12;
  r.mfu = r.tflops_per_gpu / r.peak_tflops;
  const double steps = t.tokens / r.tokens_per_step;
  r.time_to_train_days = steps * r.step_time_s / 86400.0;
  r.gpu_hours = steps * r.step_time_s * r.gpus / 3600.0;
  r.cost = r.gpu_hours * t.price_per_gpu_hour;
  for (auto& kv : collective_time) r.collective_times.emplace_back(kv.first, kv.second);

  // Mean utilization of each kind of link over the step.
  std::map<std::string, std::pair<double, double>> kinds;  // bytes, capacity
  for (std::size_t i = 0; i < fabric.link_count(); ++i) {
    const auto& link = fabric.link(topology::LinkId::from_index(i));
    auto& k = kinds[std::string(topology::to_string(link.kind))];
    k.first += r.link_bytes[i];
    k.second += state.bandwidth_Bps(topology::LinkId::from_index(i));
  }
  for (const auto& [kind, bc] : kinds)
    r.link_utilization.emplace_back(kind, bc.first / (bc.second * r.step_time_s));
  return r;
}

}  // namespace

void require_job(const Scenario& scenario) {
  if (!scenario.has_job)
    throw core::Error("model", "", "the scenario has no model section: nothing to train",
                      scenario.source);
}

StepReport simulate_step(const Scenario& scenario, const std::string& engine, bool per_rank,
                         const core::CancelToken* cancel) {
  require_job(scenario);  // before the cluster is built: the first error a user should see
  return simulate_step(Cluster(scenario), engine, per_rank, cancel);
}

StepReport simulate_step(const Cluster& cluster, const std::string& engine, bool per_rank,
                         const core::CancelToken* cancel) {
  const Scenario& scenario = cluster.scenario();
  require_job(scenario);
  if (scenario.parallelism.virtual_stages != 0)
    return simulate_fixed(cluster, engine, per_rank, cancel);
  // virtual_stages: auto — the fastest interleaving that fits in memory and divides the work.
  std::optional<StepReport> best;
  std::optional<core::Error> last_error;
  const auto& p = scenario.parallelism;
  for (int v = 1; v <= 16; ++v) {
    if (v > 1 && p.pp == 1) break;
    if (p.pp * v > scenario.model.layers) break;
    Scenario candidate = scenario;
    candidate.parallelism.virtual_stages = v;
    try {
      StepReport r = simulate_fixed(cluster.with(candidate), engine, per_rank, cancel);
      if (!best || r.step_time_s < best->step_time_s) best = std::move(r);
    } catch (const core::Error& e) {
      // Only "does not fit this interleaving" (memory, layers or micro-batches that do not
      // divide) rules a candidate out; any other error is the scenario's and is reported.
      if (e.kind() != core::Error::Kind::does_not_fit) throw;
      if (!last_error) last_error = e;
    }
  }
  if (!best) {
    throw core::Error("parallelism.virtual_stages", "auto",
                      "no interleaving fits: " + (last_error ? std::string(last_error->what())
                                                             : std::string("pp > layers")),
                      scenario.source);
  }
  return *best;
}

}  // namespace twin::sim
