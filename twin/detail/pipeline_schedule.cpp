#include "twin/detail/pipeline_schedule.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <stdexcept>

#include "workload/moe_dispatch.hpp"

namespace twin::sim::detail {
namespace {

using ChunkCost = workload::ChunkProgram;
using workload::Layout;

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

}  // namespace

Contention Contention::of(const calibrate::KernelProfile& k, bool flex_dispatch,
                          double nics_per_gpu, double nic_Bps, double hbm_Bps) {
  Contention c;
  const double sm_fraction = k.nccl_channels.value / k.sm_count.value;
  c.sm_slowdown = sm_fraction / (1.0 - sm_fraction);
  // The flex dispatcher's kernels hold the SMs Megatron-Core gives DeepEP, not NCCL's channels.
  const double ep_fraction =
      flex_dispatch ? std::min(workload::kFlexDispatchSms, k.sm_count.value - 1) / k.sm_count.value
                    : sm_fraction;
  c.ep_sm_slowdown = ep_fraction / (1.0 - ep_fraction);
  // Data-parallel traffic leaves through the GPU's NICs: NCCL moves nccl_hbm_bytes_per_byte of
  // HBM traffic per byte at their line rate (at most half of HBM: a bound, not a measurement).
  const double hbm_fraction =
      std::min(0.5, k.nccl_hbm_bytes_per_byte.value * nics_per_gpu * nic_Bps / hbm_Bps);
  c.dp_hbm_slowdown = hbm_fraction / (1.0 - hbm_fraction);
  return c;
}

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
  // When each chunk's first forward started (the distributed optimizer's parameter gather of
  // the next chunk is dispatched then).
  std::vector<std::vector<double>> first_forward(pp, std::vector<double>(v, 0.0));
  Instance out;
  // A job on stage s's communication stream, issued at `issue`: it starts once the stream is
  // free. Returns its end (`issue` for an empty job).
  auto comm_job = [&](int s, double issue, double duration, const std::string& name) {
    if (duration <= 0) return issue;
    const double start = std::max(issue, comm_free[s]);
    comm_free[s] = start + duration;
    out.timeline.push_back({s, "comm", name, start, start + duration});
    return comm_free[s];
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
  // traffic: the FSDP gathers and reduce-scatters the op waits for (prefetched one layer ahead);
  // background: the gradient synchronization issued on a chunk's last backward, which runs on
  // the communication stream while the op's output already leaves for the next stage.
  struct OpTime {
    double compute = 0, tp = 0, ep = 0, traffic = 0, background = 0;
    /// FSDP's embedding unit: gathered before a forward, reduce-scattered after a backward.
    double before = 0, after = 0;
    std::string what;
  };
  // Distributed optimizer with overlap_param_gather: the updated parameters are gathered bucket
  // by bucket during the step's first micro-batch (Megatron-Core DistributedDataParallel: each
  // bucket's forward pre-hook waits for its all-gather and dispatches the next), the first
  // chunk's from the step's start (the optimizer step just ended), a later chunk's while the
  // chunk before runs its first forward (the interleaved schedule's param_sync_func); later
  // micro-batches reuse them. Dispatched when a chunk's first forward is about to run, so that
  // the ops beside it see its traffic; returns when it ends (0: none).
  auto gather_parameters = [&](int s, const Op& op, double start) {
    if (!t.overlap_param_gather || !op.forward || op.micro_batch != 0 ||
        !(comm[s].param_gather_s[op.chunk] > 0))
      return 0.0;
    first_forward[s][op.chunk] = start;
    const double issue = op.chunk == 0 ? 0.0 : first_forward[s][op.chunk - 1];
    return comm_job(s, issue, comm[s].param_gather_s[op.chunk],
                    fmt::format("DP param all_gather c{}", op.chunk));
  };
  auto time_of = [&](int s, const Op& op, double start) {
    OpTime o;
    // Data-parallel traffic overlapped with this op, layer by layer: FSDP gathers (every op)
    // and gradient reduce-scatters (backward), and on a chunk's last backward the gradient
    // synchronization (bucketed all-reduce / reduce-scatter, HSDP cross-replica all-reduce).
    if (fsdp) {
      if (op.forward)
        o.before = comm[s].embedding_gather_s[op.chunk];
      else
        o.after = comm[s].embedding_scatter_s[op.chunk];
      o.traffic += comm[s].fsdp_gather_s[op.chunk];
      o.what = "FSDP all_gather";
      if (!op.forward) {
        o.traffic += comm[s].fsdp_scatter_s[op.chunk];
        o.what += " + reduce_scatter";
      }
    }
    if (t.overlap_grad_reduce && !op.forward && backward_done[s][op.chunk] + 1 == m) {
      o.background = comm[s].dp_sync_s[op.chunk] + comm[s].hsdp_reduce_s[op.chunk];
      if (comm[s].dp_sync_s[op.chunk] > 0)
        o.what += o.what.empty() ? "DP grad sync" : " + DP grad sync";
      if (comm[s].hsdp_reduce_s[op.chunk] > 0) o.what += " + HSDP all_reduce";
    }
    const ChunkCost& c = cost[s][op.chunk];
    const double work = (op.forward ? c.forward_s : c.backward_s) * scale[s];
    const double tensor = (op.forward ? c.forward_tensor_s : c.backward_tensor_s) * scale[s];
    // Data-parallel traffic beside this op (issued with it, or still running from before).
    const double issued = o.traffic + o.background;
    const double window = issued > 0 ? issued : std::max(0.0, comm_free[s] - start);
    o.compute = work + contention.extra(tensor, work - tensor, window);
    // TP collectives: exposed, or (tp_comm_overlap) hidden behind the neighbouring GEMMs. The
    // split of those GEMMs into chunks and the SMs the userbuffers kernels keep are in the
    // GEMMs' own times (workload::step_program). What else the transfers cost the GEMMs beside
    // them (their HBM traffic, the copy engines' writes into the peer's memory, the wait on each
    // chunk's arrival) is not modelled separately; assumption: the overlapped GEMM time is
    // slowed by NCCL's channel share (kernels.nccl_channels) as an NCCL collective would slow
    // it. With the chunks alone the validation's TP 4-8 runs come out 5-9 % too fast.
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
        const auto r = workload::tp_overlap(c, true, each / scale[s], true);
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
  // work lasting `work_s`, with the data-parallel traffic issued with it and, on a chunk's first
  // forward, the end of its parameter gather (`gather_end`, 0: none); `before` and `after`:
  // FSDP's embedding gather the work waits for and its gradient's reduce-scatter that waits for
  // the work, on the communication stream with nothing beside them. Returns its end.
  auto run_node = [&](int s, double start, double work_s, double traffic, double background,
                      const std::string& what, int chunk, double gather_end = 0, double before = 0,
                      double after = 0) {
    if (before > 0) {
      const double gathered =
          comm_job(s, start, before, fmt::format("FSDP embedding all_gather c{}", chunk));
      exposed[s] += gathered - start;
      start = gathered;
    }
    double finish = start + work_s;
    const double layers = std::max(1, layout.layers(s, chunk));
    if (gather_end > 0) {
      // The chunk's last layer cannot run before its parameters' gather ends.
      const double with_gather = std::max(finish, gather_end + work_s / layers);
      exposed[s] += with_gather - finish;
      finish = with_gather;
    }
    if (traffic > 0) {
      const double traffic_end = comm_job(s, start, traffic, fmt::format("{} c{}", what, chunk));
      // Without prefetching (overlap_param_gather off) FSDP waits for each gather. Otherwise
      // the node lasts the longer of its work and that traffic, plus one layer's share of the
      // traffic, which nothing can hide (the first gather, or the last bucket).
      const bool serial = fsdp && !t.overlap_param_gather;
      const double with_traffic =
          serial ? finish + traffic : std::max(finish, traffic_end) + traffic / layers;
      exposed[s] += with_traffic - finish;
      finish = with_traffic;
    }
    if (background > 0) {
      // Buckets leave as the backward fills them; the last one only once the op's last layer
      // is done. Nothing on the compute stream waits for them: the step's end does.
      comm_job(s, start, background, fmt::format("{} c{}", what, chunk));
      if (finish + background / layers > comm_free[s]) {
        out.timeline.back().end_s = finish + background / layers;
        comm_free[s] = finish + background / layers;
      }
    }
    if (after > 0) {
      const double scattered =
          comm_job(s, finish, after, fmt::format("FSDP embedding reduce_scatter c{}", chunk));
      exposed[s] += scattered - finish;
      finish = scattered;
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
          const double gather_end = gather_parameters(s, op, start);
          OpTime f = time_of(s, op, start);
          OpTime b = time_of(s, bwd, start);
          const double compute = f.compute + b.compute + f.tp + b.tp;
          const double a2a = f.ep + b.ep;
          const double ep_exposed =
              std::min(a2a, workload::combined_1f1b_exposed(cost[s][op.chunk], cost[s][bwd.chunk],
                                                            scale[s], comm[s].ep_s));
          const double slowed = (a2a - ep_exposed) * contention.ep_sm_slowdown;
          const double f_part = f.compute / std::max(1e-30, f.compute + b.compute);
          f.compute += slowed * f_part;
          b.compute += slowed * (1 - f_part);
          const double work = compute + slowed + ep_exposed;
          std::string what = f.what;
          if (!b.what.empty()) what += what.empty() ? b.what : " + " + b.what;
          const double finish =
              run_node(s, start, work, f.traffic + b.traffic, f.background + b.background, what,
                       op.chunk, gather_end, f.before, b.after);
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
        const double gather_end = gather_parameters(s, op, start);
        const OpTime o = time_of(s, op, start);
        const double finish = run_node(s, start, o.compute + o.tp + o.ep, o.traffic, o.background,
                                       o.what, op.chunk, gather_end, o.before, o.after);
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
    // The first and last stages then sum their copies of a tied embedding's gradient (Megatron's
    // finalize_model_grads after the data-parallel sync; the optimizer needs it).
    if (comm[s].tied_embedding_s > 0)
      comm_job(s, compute_free[s], comm[s].tied_embedding_s, "tied embedding grad all_reduce");
    const double comm_end = std::max(compute_free[s], comm_free[s]);
    double stage_end = comm_end + optimizer_s[s];
    out.timeline.push_back({s, "compute", "optimizer", comm_end, stage_end});
    // Distributed optimizer: the updated parameter shards are all-gathered; with
    // overlap_param_gather that runs under the step's first forwards (gather_parameters above).
    double param_gather = 0;
    for (double g : comm[s].param_gather_s) param_gather += g;
    if (!t.overlap_param_gather && param_gather > 0) {
      out.timeline.push_back(
          {s, "comm", "DP param all_gather", stage_end, stage_end + param_gather});
      exposed[s] += param_gather;
      stage_end += param_gather;
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

}  // namespace twin::sim::detail
