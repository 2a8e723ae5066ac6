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
#include "workload/step_program.hpp"

namespace twin::sim {
namespace {

using ChunkCost = workload::ChunkProgram;
using workload::Layout;

/// Communication costs of one stage (seconds per call), from the network simulation.
struct StageComm {
  double tp_slot_s = 0;  ///< one TP "all-reduce" slot (AR, or AG + RS with sequence parallelism)
  double ep_s = 0;       ///< one all-to-all
  double p2p_s = 0;      ///< activation to the next stage
  double cp_s = 0;       ///< one ring-attention K/V exchange step
  double param_gather_s = 0;  ///< distributed optimizer: all-gather of the updated parameters
  std::vector<double> dp_sync_s, fsdp_gather_s, fsdp_scatter_s, hsdp_reduce_s;  ///< per chunk
};

struct Op {
  bool forward;
  int chunk;
  int micro_batch;
  /// Megatron-Core's combined 1F1B (overlap_moe_expert_parallel_comm): this forward runs as one
  /// node with the backward that follows it in the order, each one's EP all-to-alls beside the
  /// other's compute.
  bool merged_with_next = false;
};

/// Megatron's interleaved 1F1B order for one stage (v = 1: plain 1F1B). With `combined` (EP
/// all-to-all overlap) the warm-up runs one forward more, and every steady-state forward is
/// merged with the backward after it (Megatron-Core's combined_1f1b schedules).
std::vector<Op> schedule(int stage, int pp, int v, int m, bool combined) {
  const int total = m * v;
  const int warmup = std::min(total, (pp - stage - 1) * 2 + (v - 1) * pp + (combined ? 1 : 0));
  auto id = [&](int k, bool forward) {
    const int chunk_in_group = (k / pp) % v;
    const int chunk = forward ? chunk_in_group : v - 1 - chunk_in_group;
    const int mb = (k / (pp * v)) * pp + k % pp;
    return Op{forward, chunk, v == 1 ? k : mb};
  };
  std::vector<Op> ops;
  for (int k = 0; k < warmup; ++k) ops.push_back(id(k, true));
  for (int k = 0; k < total - warmup; ++k) {
    ops.push_back(id(warmup + k, true));
    ops.back().merged_with_next = combined;
    ops.push_back(id(k, false));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(id(k, false));
  return ops;
}

struct Instance {
  double step_s = 0;
  int critical_stage = 0;
  std::vector<TimelineOp> timeline;
  std::vector<std::pair<std::string, double>> breakdown;
};

/// How much compute slows while NCCL kernels run beside it: the SMs its channels take
/// (tensor-core kernels lose channels / SMs of their throughput) and the HBM traffic it adds
/// (memory-bound kernels lose nccl_hbm_bytes_per_byte x comm rate / achievable HBM).
struct Contention {
  double sm_slowdown = 0;      ///< extra time fraction of a compute-bound kernel
  double dp_hbm_slowdown = 0;  ///< of a memory-bound kernel beside data-parallel traffic
  [[nodiscard]] double extra(double tensor_s, double memory_s, double window_s) const {
    const double total = tensor_s + memory_s;
    if (!(total > 0) || !(window_s > 0)) return 0.0;
    const double share = std::min(1.0, window_s / total);
    return share * (tensor_s * sm_slowdown + memory_s * dp_hbm_slowdown);
  }
};

/// Runs the DES of all stages for one instance; `scale[s]` multiplies stage s's compute.
Instance run_instance(const workload::ParallelismSpec& p, const workload::TrainingSpec& t,
                      const Layout& layout, const std::vector<std::vector<ChunkCost>>& cost,
                      const std::vector<StageComm>& comm, const std::vector<double>& optimizer_s,
                      const std::vector<double>& scale, const Contention& contention) {
  const int pp = layout.pp, v = layout.v, m = layout.micro_batches;
  const bool fsdp = p.zero >= 3;
  auto index = [&](int stage, bool fwd, int chunk, int mb) {
    return ((static_cast<std::size_t>(stage) * 2 + (fwd ? 0 : 1)) * v + chunk) * m + mb;
  };
  std::vector<double> end(static_cast<std::size_t>(pp) * 2 * v * m, -1.0);
  std::vector<std::vector<Op>> order(pp);
  for (int s = 0; s < pp; ++s) order[s] = schedule(s, pp, v, m, t.moe_a2a_overlap);
  std::vector<std::size_t> next(pp, 0);
  std::vector<double> compute_free(pp, 0.0), comm_free(pp, 0.0);
  std::vector<double> busy(pp, 0.0), compute_sum(pp, 0.0), tp_sum(pp, 0.0), ep_sum(pp, 0.0),
      exposed(pp, 0.0);
  std::vector<std::vector<int>> backward_done(pp, std::vector<int>(v, 0));
  Instance out;
  auto comm_job = [&](int s, double issue, double duration, const std::string& name) {
    if (duration <= 0) return;
    const double start = std::max(issue, comm_free[s]);
    comm_free[s] = start + duration;
    out.timeline.push_back({s, "comm", name, start, start + duration});
  };

  std::size_t remaining = static_cast<std::size_t>(pp) * 2 * v * m;
  // When op's input is there (nullopt: its producer has not run yet), and when that input was
  // produced (the transfer between the two is ready - produced).
  struct Input {
    double ready = 0, produced = 0;
  };
  auto input_of = [&](int s, const Op& op) -> std::optional<Input> {
    auto after = [&](double e, double p2p) -> std::optional<Input> {
      if (e < 0) return std::nullopt;
      return Input{e + p2p, e};
    };
    if (op.forward) {
      if (s > 0) return after(end[index(s - 1, true, op.chunk, op.micro_batch)], comm[s - 1].p2p_s);
      if (op.chunk > 0)
        return after(end[index(pp - 1, true, op.chunk - 1, op.micro_batch)], comm[pp - 1].p2p_s);
      return Input{};
    }
    if (s < pp - 1) return after(end[index(s + 1, false, op.chunk, op.micro_batch)], comm[s].p2p_s);
    if (op.chunk < v - 1)
      return after(end[index(0, false, op.chunk + 1, op.micro_batch)], comm[s].p2p_s);
    return after(end[index(s, true, op.chunk, op.micro_batch)], 0.0);  // its own forward
  };

  // What one op costs when it starts at `start`: its kernels (slowed by the communication
  // beside them), the TP/CP collectives it waits for, its EP all-to-alls, and the data-parallel
  // traffic issued with it.
  struct OpTime {
    double compute = 0, tp = 0, ep = 0, traffic = 0;
    std::string what;
  };
  auto time_of = [&](int s, const Op& op, double start) {
    OpTime o;
    // Data-parallel traffic overlapped with this op, layer by layer: FSDP gathers (every op)
    // and gradient reduce-scatters (backward), and on a chunk's last backward the gradient
    // synchronization (bucketed all-reduce / reduce-scatter, HSDP cross-replica all-reduce).
    if (fsdp) {
      o.traffic += comm[s].fsdp_gather_s[op.chunk];
      o.what = "FSDP all_gather";
      if (!op.forward) {
        o.traffic += comm[s].fsdp_scatter_s[op.chunk];
        o.what += " + reduce_scatter";
      }
    }
    if (t.overlap_grad_reduce && !op.forward && backward_done[s][op.chunk] + 1 == m) {
      o.traffic += comm[s].dp_sync_s[op.chunk] + comm[s].hsdp_reduce_s[op.chunk];
      if (comm[s].dp_sync_s[op.chunk] > 0)
        o.what += o.what.empty() ? "DP grad sync" : " + DP grad sync";
      if (comm[s].hsdp_reduce_s[op.chunk] > 0) o.what += " + HSDP all_reduce";
    }
    const ChunkCost& c = cost[s][op.chunk];
    const double work = (op.forward ? c.forward_s : c.backward_s) * scale[s];
    const double tensor = (op.forward ? c.forward_tensor_s : c.backward_tensor_s) * scale[s];
    // Data-parallel traffic beside this op (issued with it, or still running from before).
    const double window = o.traffic > 0 ? o.traffic : std::max(0.0, comm_free[s] - start);
    o.compute = work + contention.extra(tensor, work - tensor, window);
    // TP collectives: exposed, or (tp_comm_overlap) hidden behind the neighbouring GEMMs,
    // which lose the SMs the communication kernels take while they overlap.
    const int tp_slots = c.tp_collectives + (op.forward ? 0 : c.recompute_tp_collectives);
    const double tp_total = tp_slots * comm[s].tp_slot_s;
    o.tp = tp_total;
    // Megatron-Core overlaps TP communication only with sequence parallelism (all-gather +
    // reduce-scatter slots); all-reduces stay exposed.
    if (t.tp_comm_overlap && p.sequence_parallel && tp_total > 0) {
      const double each = comm[s].tp_slot_s / 2;
      const auto ov = workload::tp_overlap(c, op.forward, each / scale[s]);
      o.tp = ov.exposed_s * scale[s];
      o.compute += ov.overlapped_s * scale[s] * contention.sm_slowdown;
      if (!op.forward && c.recompute_tp_collectives > 0) {  // the recomputed forward's
        const auto r = workload::tp_overlap(c, true, each / scale[s]);
        o.tp += r.exposed_s * scale[s];
        o.compute += r.overlapped_s * scale[s] * contention.sm_slowdown;
      }
    }
    // Ring attention: K/V exchanges run beside the attention kernels (backward: K, V and
    // their gradients, twice the bytes).
    const double cp_total = c.cp_exchanges * comm[s].cp_s * (op.forward ? 1.0 : 2.0);
    const double attention =
        (op.forward ? c.attention_forward_s : c.attention_backward_s) * scale[s];
    o.compute += std::min(cp_total, attention) * contention.sm_slowdown;
    o.tp += std::max(0.0, cp_total - attention);
    o.ep = c.ep_alltoalls * comm[s].ep_s;
    return o;
  };

  // One node of the compute stream (an op, or a merged forward + backward) from `start`, its
  // work lasting `work_s`, with the data-parallel traffic issued with it: returns its end.
  auto run_node = [&](int s, double start, double work_s, double traffic, const std::string& what,
                      int chunk) {
    double finish = start + work_s;
    if (traffic > 0) {
      const double traffic_start = std::max(start, comm_free[s]);
      comm_job(s, start, traffic, fmt::format("{} c{}", what, chunk));
      // Without prefetching (overlap_param_gather off) FSDP waits for each gather. Otherwise
      // the node lasts the longer of its work and that traffic, plus one layer's share of the
      // traffic, which nothing can hide (the first gather, or the last bucket).
      const bool serial = fsdp && !t.overlap_param_gather;
      const double with_traffic = serial ? finish + traffic
                                         : std::max(finish, traffic_start + traffic) +
                                               traffic / std::max(1, layout.layers(s, chunk));
      exposed[s] += with_traffic - finish;
      finish = with_traffic;
    }
    return finish;
  };
  auto record = [&](int s, const Op& op, double start, double finish, const OpTime& o,
                    double ep_exposed, const Input& in) {
    end[index(s, op.forward, op.chunk, op.micro_batch)] = finish;
    compute_sum[s] += o.compute;
    tp_sum[s] += o.tp;
    ep_sum[s] += ep_exposed;
    out.timeline.push_back(
        {s, "compute", fmt::format("{} c{} mb{}", op.forward ? "F" : "B", op.chunk, op.micro_batch),
         start, finish, op.chunk, op.micro_batch, op.forward, o.compute, o.tp, ep_exposed,
         in.ready > in.produced ? in.produced : 0.0, in.ready > in.produced ? in.ready : 0.0});
    if (!op.forward) ++backward_done[s][op.chunk];
    ++next[s];
    --remaining;
  };

  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < pp; ++s) {
      while (next[s] < order[s].size()) {
        const Op op = order[s][next[s]];
        const auto in = input_of(s, op);
        if (!in) break;
        if (op.merged_with_next) {
          // Combined 1F1B: the forward and the backward after it run as one node once both
          // inputs are there. Each one's EP dispatch / combine all-to-alls run on the
          // communication stream beside a compute phase of the other (which loses the SMs they
          // take); what a phase cannot hide stays exposed (workload::combined_1f1b_exposed).
          const Op bwd = order[s][next[s] + 1];
          const auto bin = input_of(s, bwd);
          if (!bin) break;
          const double start = std::max({in->ready, bin->ready, compute_free[s]});
          OpTime f = time_of(s, op, start);
          OpTime b = time_of(s, bwd, start);
          const double compute = f.compute + b.compute + f.tp + b.tp;
          const double a2a = f.ep + b.ep;
          const double ep_exposed =
              std::min(a2a, workload::combined_1f1b_exposed(cost[s][op.chunk], cost[s][bwd.chunk],
                                                            scale[s], comm[s].ep_s));
          const double slowed = (a2a - ep_exposed) * contention.sm_slowdown;
          const double f_part = f.compute / std::max(1e-30, f.compute + b.compute);
          f.compute += slowed * f_part;
          b.compute += slowed * (1 - f_part);
          const double work = compute + slowed + ep_exposed;
          std::string what = f.what;
          if (!b.what.empty()) what += what.empty() ? b.what : " + " + b.what;
          const double finish = run_node(s, start, work, f.traffic + b.traffic, what, op.chunk);
          busy[s] += finish - start;
          compute_free[s] = finish;
          // Both ops end with the node (their outputs leave when it completes); the timeline
          // shows the forward's share first.
          const double share = (f.compute + f.tp) / std::max(1e-30, compute + slowed);
          const double split = start + share * (finish - start);
          const double f_ep = ep_exposed * share;
          record(s, op, start, finish, f, f_ep, *in);
          out.timeline.back().end_s = split;
          record(s, bwd, split, finish, b, ep_exposed - f_ep, *bin);
          progress = true;
          continue;
        }
        const double start = std::max(in->ready, compute_free[s]);
        const OpTime o = time_of(s, op, start);
        const double finish =
            run_node(s, start, o.compute + o.tp + o.ep, o.traffic, o.what, op.chunk);
        // Non-interleaved 1F1B sends each output with a blocking send/recv (Megatron-LM's
        // forward_backward_pipelining_without_interleaving waits on send_forward_recv_backward;
        // DeepSpeed's PipelineEngine runs SendActivation / SendGrad as steps of its schedule):
        // the compute stream waits while the activation or gradient crosses to the neighbour.
        // The interleaved schedule overlaps the transfers with compute (overlap_p2p_comm).
        double send = 0;
        if (v == 1 && op.forward && s < pp - 1) send = comm[s].p2p_s;
        if (v == 1 && !op.forward && s > 0) send = comm[s - 1].p2p_s;
        compute_free[s] = finish + send;
        busy[s] += finish - start;  // the send counts as pipeline time (bubble and p2p)
        record(s, op, start, finish, o, o.ep, *in);
        progress = true;
      }
    }
    if (!progress) throw std::logic_error("step schedule deadlocked (pipeline dependencies)");
  }

  for (int s = 0; s < pp; ++s) {
    if (!t.overlap_grad_reduce) {
      // Gradient synchronization only after the last backward: nothing hides it.
      double sync = 0;
      for (int c = 0; c < v; ++c) sync += comm[s].dp_sync_s[c] + comm[s].hsdp_reduce_s[c];
      comm_job(s, compute_free[s], sync, "DP grad sync (after backward)");
    }
    const double comm_end = std::max(compute_free[s], comm_free[s]);
    double stage_end = comm_end + optimizer_s[s];
    out.timeline.push_back({s, "compute", "optimizer", comm_end, stage_end});
    // Distributed optimizer: the updated parameter shards are all-gathered; with
    // overlap_param_gather that runs under the next step's first forwards.
    if (!t.overlap_param_gather && comm[s].param_gather_s > 0) {
      out.timeline.push_back(
          {s, "comm", "DP param all_gather", stage_end, stage_end + comm[s].param_gather_s});
      exposed[s] += comm[s].param_gather_s;
      stage_end += comm[s].param_gather_s;
    }
    if (stage_end > out.step_s) {
      out.step_s = stage_end;
      out.critical_stage = s;
    }
  }
  const int s = out.critical_stage;
  // Idle time of the compute stream: waiting on other stages (bubble) and on activations.
  const double idle = compute_free[s] - busy[s];
  out.breakdown = {
      {"compute", compute_sum[s]},
      {"tp_comm", tp_sum[s]},
      {"ep_comm", ep_sum[s]},
      {"dp_comm_exposed", exposed[s] + std::max(compute_free[s], comm_free[s]) - compute_free[s]},
      {"pipeline_bubble_and_p2p", idle},
      {"optimizer", optimizer_s[s]}};
  return out;
}

}  // namespace

namespace {

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
      return workload::KernelCoster(profile, t.precision, t.attention);
    } catch (const core::Error& e) {
      throw e.in_file(scenario.source);
    }
  }();
  if (p.stage_layers_auto) {
    const auto w = workload::stage_weights(model, p, t, layout, coster);
    layout.set_stage_layers(workload::balance_stage_layers(model.layers, layout.pp, w.layer_s,
                                                           w.embedding_s, w.output_s));
  }
  StepReport r;
  r.program = workload::step_program(model, p, t, layout, coster);
  r.virtual_stages = layout.v;
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
  auto collective = [&](const std::string& label, const std::string& op,
                        const std::vector<std::vector<int>>& groups, double bytes, double count) {
    if (groups.empty() || groups.front().size() < 2 || !(bytes > 0)) return 0.0;
    netsim::CollectiveResult res;
    try {
      res = net.run(op, scenario.algorithm_for(op), placed ? placement.map(groups) : groups, bytes);
    } catch (const core::Error& e) {
      if (e.kind() != core::Error::Kind::not_supported) throw;
      throw core::Error("collectives." + op, scenario.algorithm_for(op),
                        fmt::format("cannot run {} ({} groups of {} GPUs): {}", label,
                                    groups.size(), groups.front().size(), e.reason()),
                        scenario.source);
    }
    for (std::size_t i = 0; i < res.link_bytes.size(); ++i)
      r.link_bytes[i] += count * res.link_bytes[i];
    collective_time[label] = res.time_s;
    return res.time_s;
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
        comm[s].ep_s = collective(fmt::format("EP alltoall s{}", s), "alltoall", groups, ep_bytes,
                                  first ? ep_calls : 0.0);
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
        // training.grad_reduce_dtype. The casts around an fp32 gather or reduction (one read and
        // write per parameter) are not costed.
        const double dense_params = cc.params - cc.expert_params;
        const double g = t.grad_bytes();
        const double gathered = t.param_gather_bytes() * cc.params;
        const double once = shared ? 1.0 : 0.0;
        double dp = 0, gather = 0, scatter = 0, hsdp = 0;
        const int shard = layout.shard_group;
        if (p.zero >= 3) {
          const auto groups = layout.dp_groups(s, shard);
          gather = collective(fmt::format("FSDP all_gather s{} c{}", s, c), "all_gather", groups,
                              gathered, once * 2.0 * m);
          scatter = collective(fmt::format("FSDP reduce_scatter s{} c{}", s, c), "reduce_scatter",
                               groups, g * cc.params, once * m);
          if (shard < layout.dp)
            hsdp = collective(fmt::format("HSDP all_reduce s{} c{}", s, c), "all_reduce",
                              layout.dp_groups(s, layout.dp / shard, shard), g * cc.params / shard,
                              once);
        } else {
          const std::string op = p.zero == 0 ? "all_reduce" : "reduce_scatter";
          dp = collective(fmt::format("DP {} s{} c{}", op, s, c), op,
                          layout.dp_groups(s, layout.dp), g * dense_params, once);
          if (p.zero >= 1)  // distributed optimizer: gather the updated shards back
            comm[s].param_gather_s += collective(fmt::format("DP param all_gather s{} c{}", s, c),
                                                 "all_gather", layout.dp_groups(s, layout.dp),
                                                 t.param_gather_bytes() * dense_params, once);
          if (cc.expert_params > 0 && layout.expert_dp() > 1)
            dp += collective(fmt::format("DP expert {} s{} c{}", op, s, c), op,
                             layout.expert_dp_groups(s), g * cc.expert_params, once);
        }
        comm[s].dp_sync_s.push_back(dp);
        comm[s].fsdp_gather_s.push_back(gather);
        comm[s].fsdp_scatter_s.push_back(scatter);
        comm[s].hsdp_reduce_s.push_back(hsdp);
      }
    }
    return comm;
  };

  // Instances: the symmetric one (or, per rank, every replica), and the replica holding a
  // straggler if there is one. The step ends when the slowest instance does.
  std::vector<double> scale(pp, 1.0);
  Contention overlap;
  {
    const auto& k = profile.kernels;
    const double sm_fraction = k.nccl_channels.value / k.sm_count.value;
    overlap.sm_slowdown = sm_fraction / (1.0 - sm_fraction);
    // Data-parallel traffic leaves through the NIC: its HBM share at line rate.
    const double hbm_fraction = std::min(
        0.5, k.nccl_hbm_bytes_per_byte.value * profile.nic_payload_Bps() / coster.hbm_Bps());
    overlap.dp_hbm_slowdown = hbm_fraction / (1.0 - hbm_fraction);
  }
  std::vector<StageComm> comm = build_comm(-1);
  Instance worst;
  if (per_rank) {
    for (int replica = 0; replica < layout.dp; ++replica) {
      core::check(cancel);
      Instance one =
          run_instance(p, t, layout, cost, build_comm(replica), optimizer_s, scale, overlap);
      if (replica == 0 || one.step_s > worst.step_s) worst = std::move(one);
    }
    std::fill(r.link_bytes.begin(), r.link_bytes.end(),
              0.0);  // recount: private groups per replica
    for (int replica = 0; replica < layout.dp; ++replica) {
      core::check(cancel);
      build_comm(replica);
    }
  } else {
    worst = run_instance(p, t, layout, cost, comm, optimizer_s, scale, overlap);
  }
  if (scenario.slow_gpu >= 0) {
    if (scenario.slow_gpu >= r.gpus)
      throw core::Error("perturbations.slow_gpu.gpu", std::to_string(scenario.slow_gpu),
                        fmt::format("the cluster has {} GPUs", r.gpus), scenario.source);
    scale[scenario.slow_gpu / (layout.tp * layout.dp)] = scenario.slow_factor;
    Instance slow = run_instance(p, t, layout, cost, comm, optimizer_s, scale, overlap);
    if (slow.step_s > worst.step_s) worst = std::move(slow);
  }
  r.step_time_s = worst.step_s;
  r.critical_stage = worst.critical_stage;
  r.timeline = std::move(worst.timeline);
  r.breakdown = std::move(worst.breakdown);

  r.tokens_per_step = t.global_batch * model.seq_len;
  r.tokens_per_s = r.tokens_per_step / r.step_time_s;
  r.model_flops_per_step = model.training_flops(t.global_batch);
  double recompute = 0;
  // Full recompute reruns every layer's forward but not the output layer (Narayanan et al.).
  if (p.recompute == "full")
    recompute = model.forward_flops(t.global_batch) -
                2.0 * t.global_batch * model.seq_len * model.vocab * model.hidden;
  if (p.recompute == "selective") {
    // The attention core counted as Megatron counts it (the full square); every other recomputed
    // kernel (the recompute modules) from the program: per GPU per micro-batch, on each of the
    // stage's GPUs, for every micro-batch of the step.
    if (p.recomputes("core_attn")) recompute = model.attention_score_flops(t.global_batch);
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
