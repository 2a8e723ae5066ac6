#include "workload/step_program.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <tuple>
#include <utility>

#include "workload/detail/layer_blocks.hpp"
#include "workload/host_issue.hpp"

namespace twin::workload {
namespace {

using detail::BlockBuilder;
using detail::LayerParams;
using detail::mtp_module;
using detail::output_layer;
using detail::Shape;
using detail::shape_of;
using detail::transformer_layer;

double sum_time(const std::vector<Kernel>& ks, bool tensor_only = false) {
  double s = 0;
  for (const auto& k : ks)
    if (!tensor_only || k.tensor_core) s += k.time_s;
  return s;
}

double sum_flops(const std::vector<Kernel>& ks) {
  double f = 0;
  for (const auto& k : ks) f += k.flops;
  return f;
}

/// The recomputed forward of a layer whose recompute stops early: PyTorch's non-reentrant
/// checkpoint stops as soon as every tensor the layer's backward needs exists again. The
/// trailing kernels that keep nothing (the residual add) are not rerun, nor is a GEMM that ends
/// what is left if it keeps only its operands, saved before it runs (the MLP's output projection
/// in 16 bits; an FP8 GEMM saves after it has run and is rerun).
std::vector<Kernel> early_stopped(std::vector<Kernel> forward) {
  while (!forward.empty() && forward.back().saves == Kernel::Saves::nothing) forward.pop_back();
  if (!forward.empty() && forward.back().saves == Kernel::Saves::inputs) forward.pop_back();
  return forward;
}

/// Adds a layer block to the chunk. Full recompute reruns a layer's forward in its backward
/// (up to its last saved tensor with `early_stop`): the first `again` of the block's layers (all
/// of them without recompute_layers) go in a block of their own that does; the rest keep their
/// activations.
void add_layer_block(ChunkProgram& c, BlockProgram b, int again, bool early_stop) {
  if (again <= 0) {
    c.blocks.push_back(std::move(b));
    return;
  }
  BlockProgram rerun = b;
  rerun.recompute = early_stop ? early_stopped(rerun.forward) : rerun.forward;
  rerun.reruns_forward = true;
  rerun.count = again;
  if (again >= b.count) {
    c.blocks.push_back(std::move(rerun));
    return;
  }
  rerun.label += " (recomputed)";
  b.count -= again;
  c.blocks.push_back(std::move(rerun));
  c.blocks.push_back(std::move(b));
}

}  // namespace

ChunkProgram chunk_program(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                           const Layout& layout, const KernelCoster& coster, int stage, int chunk) {
  const Shape x = shape_of(model, p, t);
  ChunkProgram c;
  c.stage = stage;
  c.chunk = chunk;
  c.first_layer = layout.first_layer(stage, chunk);
  c.layers = layout.layers(stage, chunk);
  const bool fused = t.fused_kernels;
  // fp32 weights under autocast: FSDP's fp32 gather (Transformer Engine's FP8 casts its own).
  const bool autocast = t.param_gather_dtype == "fp32" && !coster.fp8();

  if (stage == 0 && chunk == 0) {
    BlockBuilder bb(coster, fused, autocast, t.current_scaling());
    bb.block.label = "embedding";
    bb.block.count = 1;
    bb.memory("embedding lookup", 4.0 * x.T * x.h, 10.0 * x.T * x.h, 1);
    const double embedding = static_cast<double>(model.vocab) * x.h / x.tp;
    bb.accumulate_grads(t.grad_accumulation, embedding, 1);
    c.blocks.push_back(std::move(bb.block));
    c.params += embedding;
    c.embedding_params = embedding;
  }
  // Layers of each kind (dense or MoE, full or sliding-window attention), and how many of them
  // are among the chunk's recomputed first layers.
  const int recomputed = p.recomputed_layers(c.layers);
  int count_of[2][2] = {}, again_of[2][2] = {};
  for (int l = c.first_layer; l < c.first_layer + c.layers; ++l) {
    const int is_moe = model.moe_layer(l) ? 1 : 0;
    const int windowed = model.windowed(l) ? 1 : 0;
    ++count_of[is_moe][windowed];
    if (l < c.first_layer + recomputed) ++again_of[is_moe][windowed];
  }
  for (int block = 0; block < 4; ++block) {
    const int kind = block / 2, windowed = block % 2;
    const int count = count_of[kind][windowed];
    if (count == 0) continue;
    BlockBuilder bb(coster, fused, autocast, t.current_scaling());
    bb.block.label = kind == 0 ? "dense layer" : "MoE layer";
    if (windowed) bb.block.label += fmt::format(" (sliding window {})", model.sliding_window);
    bb.block.count = count;
    const LayerParams params = transformer_layer(bb, x, model, layout, p, t, kind == 1,
                                                 windowed ? model.sliding_window : 0);
    c.params += count * (params.shared + params.experts);
    c.expert_params += count * params.experts;
    add_layer_block(c, std::move(bb.block), again_of[kind][windowed], t.recompute_early_stop);
  }
  if (stage == layout.pp - 1 && chunk == layout.v - 1) {
    BlockBuilder bb(coster, fused, autocast, t.current_scaling());
    bb.block.label = "output layer + loss";
    bb.block.count = 1;
    output_layer(bb, x, model, t);
    // A tied output layer on a one-stage pipeline is the embedding's matrix: its gradient is
    // the embedding's, already counted with it.
    const double output =
        model.output_is_embedding(layout.pp) ? 0.0 : static_cast<double>(model.vocab) * x.h / x.tp;
    bb.accumulate_grads(t.grad_accumulation, output, 1);
    c.blocks.push_back(std::move(bb.block));
    c.params += output;
    if (model.mtp_layers > 0) {
      BlockBuilder mtp(coster, fused, autocast, t.current_scaling());
      mtp.block.label = "MTP module";
      mtp.block.count = model.mtp_layers;
      const LayerParams params = mtp_module(mtp, x, model, layout, p, t);
      c.params += model.mtp_layers * (params.shared + params.experts);
      c.expert_params += model.mtp_layers * params.experts;
      c.blocks.push_back(std::move(mtp.block));
    }
  }

  for (const auto& b : c.blocks) {
    const double n = b.count;
    c.forward_s += n * sum_time(b.forward);
    c.backward_s += n * (sum_time(b.backward) + sum_time(b.recompute));
    c.forward_tensor_s += n * sum_time(b.forward, true);
    c.backward_tensor_s += n * (sum_time(b.backward, true) + sum_time(b.recompute, true));
    c.attention_forward_s += n * b.attention_forward_s;
    c.attention_backward_s += n * b.attention_backward_s;
    c.forward_flops += n * sum_flops(b.forward);
    c.recompute_flops += n * sum_flops(b.recompute);
    c.tp_collectives += b.count * b.tp_collectives;
    c.ep_alltoalls += b.count * b.ep_alltoalls;
    c.cp_exchanges += b.count * b.cp_exchanges;
    c.kernels_per_microbatch +=
        b.count * static_cast<int>(b.forward.size() + b.backward.size() + b.recompute.size());
    if (b.ep_alltoalls > 0) {
      auto expert_s = [](const std::vector<Kernel>& ks) {
        double sum = 0;
        for (const auto& k : ks)
          if (k.name.starts_with("expert ")) sum += k.time_s;
        return sum;
      };
      // Per MoE layer: with recompute_layers the recomputed and the kept MoE layers are two
      // blocks, and their times are averaged over the layers.
      const double expert_f = expert_s(b.forward);
      const double expert_b = expert_s(b.backward) + expert_s(b.recompute);
      const std::array<double, 4> per_layer = {
          expert_f, sum_time(b.forward) - expert_f, expert_b,
          sum_time(b.backward) + sum_time(b.recompute) - expert_b};
      const std::array<double*, 4> fields = {&c.moe_expert_forward_s, &c.moe_other_forward_s,
                                             &c.moe_expert_backward_s, &c.moe_other_backward_s};
      const double seen = c.moe_layers;
      c.moe_layers += b.count;
      for (std::size_t i = 0; i < fields.size(); ++i)
        *fields[i] =
            seen == 0 ? per_layer[i] : (seen * *fields[i] + n * per_layer[i]) / c.moe_layers;
    }
    // Full recompute reruns each layer's forward, TP all-reduces (all-gathers, reduce-scatters)
    // included (Megatron's checkpointed forward); selective recompute only reruns the attention
    // core, which has none.
    if (b.reruns_forward) c.recompute_tp_collectives += b.count * b.tp_collectives;
  }
  // The device waits where the host issues kernels slower than they run: forward in block
  // order, backward (recompute first, then the gradients) in reverse.
  if (const double host_s = host_issue_s(t); host_s > 0) {
    std::vector<const Kernel*> fwd, bwd;
    for (const auto& b : c.blocks)
      for (int i = 0; i < b.count; ++i)
        for (const auto& k : b.forward) fwd.push_back(&k);
    for (auto it = c.blocks.rbegin(); it != c.blocks.rend(); ++it)
      for (int i = 0; i < it->count; ++i) {
        for (const auto& k : it->recompute) bwd.push_back(&k);
        for (const auto& k : it->backward) bwd.push_back(&k);
      }
    c.host_wait_forward_s = host_wait_s(fwd, host_s);
    c.host_wait_backward_s = host_wait_s(bwd, host_s);
    c.forward_s += c.host_wait_forward_s;
    c.backward_s += c.host_wait_backward_s;
  }
  c.tp_bytes = x.T * x.h * 2.0;
  c.ep_bytes = model.moe() ? x.T / x.tp * model.top_k * model.capacity_factor * x.h * 2.0 : 0.0;
  c.cp_bytes = 2.0 * x.T * x.kv / x.tp * 2.0;
  // With sequence parallelism the activation is already split over the TP ranks; without it,
  // scatter-gather sends each rank's 1/tp share (the next stage all-gathers it over NVLink).
  const bool scatter_gather = x.tp > 1 && !p.sequence_parallel && t.pp_scatter_gather;
  c.p2p_bytes = x.T * x.h * 2.0 / (p.sequence_parallel || scatter_gather ? x.tp : 1.0);
  if (c.tp_collectives > 0) {
    if (p.sequence_parallel) {
      c.collectives.push_back({"tp", "all_gather", c.tp_bytes, c.tp_collectives});
      c.collectives.push_back({"tp", "reduce_scatter", c.tp_bytes, c.tp_collectives});
    } else {
      c.collectives.push_back({"tp", "all_reduce", c.tp_bytes, c.tp_collectives});
    }
  }
  if (c.ep_alltoalls > 0) c.collectives.push_back({"ep", "alltoall", c.ep_bytes, c.ep_alltoalls});
  if (c.cp_exchanges > 0) c.collectives.push_back({"cp", "sendrecv", c.cp_bytes, c.cp_exchanges});
  if (layout.pp > 1) {
    c.collectives.push_back({"pp", "sendrecv", c.p2p_bytes, 1});
    if (scatter_gather) c.collectives.push_back({"pp", "all_gather", c.tp_bytes, 1});
  }
  return c;
}

OptimizerProgram optimizer_program(double local_params, double grad_params,
                                   const KernelCoster& coster, bool loss_scaling) {
  OptimizerProgram o;
  o.local_params = local_params;
  // Dynamic loss scaling (Megatron's _unscale_main_grads_and_check_for_nan, PyTorch's
  // GradScaler): one fused pass reads and rewrites each fp32 gradient. The found-inf flag's
  // all-reduce is a few bytes and is not costed.
  if (loss_scaling)
    o.kernels.push_back(coster.memory("unscale + inf/NaN check (loss scaling)", 8.0 * grad_params));
  o.kernels.push_back(coster.memory("grad norm (clipping)", 4.0 * grad_params));
  o.kernels.push_back(coster.memory("grad scale (clipping)", 8.0 * grad_params));
  o.kernels.push_back(coster.memory("adam (fp32 master, m, v)", 30.0 * local_params));
  o.seconds = sum_time(o.kernels);
  return o;
}

KernelClassTimes kernel_class_times(const ChunkProgram& chunk) {
  KernelClassTimes t;
  for (const auto& b : chunk.blocks)
    for (const auto* kernels : {&b.forward, &b.backward, &b.recompute})
      for (const auto& k : *kernels) {
        double& into = k.attention                    ? t.attention
                       : k.tensor_core                ? t.gemm
                       : k.limiter == Limiter::launch ? t.launch
                                                      : t.memory;
        into += b.count * k.time_s;
      }
  t.launch += chunk.host_wait_forward_s + chunk.host_wait_backward_s;
  return t;
}

TpOverlap tp_overlap(const ChunkProgram& chunk, bool forward, double collective_s,
                     bool recomputed_only) {
  TpOverlap o;
  for (const auto& b : chunk.blocks) {
    if (b.tp_collectives == 0 || (recomputed_only && !b.reruns_forward)) continue;
    const auto& gemms = forward ? b.tp_overlap_forward : b.tp_overlap_backward;
    for (const auto& [gemm_s, tail] : gemms) {
      const double exposed =
          tail * collective_s + (1.0 - tail) * std::max(0.0, collective_s - gemm_s);
      o.exposed_s += b.count * exposed;
      o.overlapped_s += b.count * (collective_s - exposed);
    }
    // Collectives with no GEMM beside them (an MoE layer's MLP pair: its expert GEMMs sit
    // between all-to-alls) stay exposed. A slot is an all-gather + reduce-scatter pair.
    const double unpaired = 2.0 * b.tp_collectives - static_cast<double>(gemms.size());
    o.exposed_s += b.count * std::max(0.0, unpaired) * collective_s;
  }
  return o;
}

double combined_1f1b_exposed(const ChunkProgram& f, const ChunkProgram& b, double scale,
                             double alltoall_s) {
  const int paired = std::min(f.moe_layers, b.moe_layers);
  const double a = alltoall_s;
  auto beyond = [a](double compute_s) { return std::max(0.0, a - compute_s); };
  const double per_pair =
      beyond(f.moe_other_forward_s * scale) + beyond(b.moe_expert_backward_s * scale) +
      beyond(f.moe_expert_forward_s * scale) + beyond(b.moe_other_backward_s * scale);
  const int unpaired = f.moe_layers + b.moe_layers - 2 * paired;
  return paired * per_pair + unpaired * 2.0 * a;
}

StepProgram step_program(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                         const Layout& layout, const KernelCoster& coster) {
  StepProgram prog;
  prog.chunks.resize(static_cast<std::size_t>(layout.pp));
  for (int s = 0; s < layout.pp; ++s) {
    double params = 0;
    for (int c = 0; c < layout.v; ++c) {
      prog.chunks[static_cast<std::size_t>(s)].push_back(
          chunk_program(model, p, t, layout, coster, s, c));
      params += prog.chunks[static_cast<std::size_t>(s)].back().params;
    }
    const double sharded = params / (p.zero >= 1 ? layout.shard_group : 1);
    // Megatron's distributed optimizer clips the gradient shard it owns.
    const double grads = params / (p.zero >= 1 ? layout.shard_group : 1);
    prog.optimizer.push_back(optimizer_program(sharded, grads, coster, t.precision == "fp16"));
  }
  return prog;
}

StageWeights stage_weights(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                           const Layout& layout, const KernelCoster& coster) {
  // A one-stage, one-chunk program of the whole model gives every block's time.
  Layout one = layout;
  one.pp = 1;
  one.v = 1;
  one.chunk_layers = {model.layers};
  const ChunkProgram c = chunk_program(model, p, t, one, coster, 0, 0);
  StageWeights w;
  double layer_total = 0;
  for (const auto& b : c.blocks) {
    const double per = sum_time(b.forward) + sum_time(b.backward) + sum_time(b.recompute);
    if (b.label == "embedding")
      w.embedding_s = per;
    else if (b.label == "output layer + loss" || b.label == "MTP module")
      w.output_s += b.count * per;
    else
      layer_total += b.count * per;
  }
  w.layer_s = layer_total / model.layers;
  return w;
}

std::string kernel_table(const StepProgram& program) {
  std::string out = fmt::format("{:<10}{:<40}{:<30}{:>10}{:>10}{:>11}  {}\n", "phase", "kernel",
                                "shape", "GFLOP", "MB", "time us", "limit");
  auto rows = [&](const char* phase, const std::vector<Kernel>& ks) {
    for (const auto& k : ks)
      out +=
          fmt::format("{:<10}{:<40}{:<30}{:>10.2f}{:>10.2f}{:>11.1f}  {}\n", phase, k.name, k.shape,
                      k.flops / 1e9, k.bytes / 1e6, k.time_s * 1e6, to_string(k.limiter));
  };
  std::vector<const BlockProgram*> seen;
  auto show = [&](const ChunkProgram& c) {
    for (const auto& b : c.blocks) {
      if (std::any_of(seen.begin(), seen.end(),
                      [&](const BlockProgram* s) { return s->label == b.label; }))
        continue;
      seen.push_back(&b);
      out += fmt::format("-- {} (x{} in stage {} chunk {}; per micro-batch) --\n", b.label, b.count,
                         c.stage, c.chunk);
      rows("forward", b.forward);
      rows("backward", b.backward);
      rows("recompute", b.recompute);
      out +=
          fmt::format("{:<80}{:>21.1f}\n", "   block total (forward + backward + recompute)",
                      (sum_time(b.forward) + sum_time(b.backward) + sum_time(b.recompute)) * 1e6);
    }
  };
  for (const auto& stage : program.chunks)
    for (const auto& c : stage) show(c);
  if (!program.optimizer.empty()) {
    out += "-- optimizer (stage 0) --\n";
    rows("step", program.optimizer.front().kernels);
  }
  return out;
}

}  // namespace twin::workload
