#include "workload/parallelism.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "calibrate/kernel_profile.hpp"
#include "core/error.hpp"
#include "workload/pipeline_layout.hpp"

namespace twin::workload {

std::vector<std::vector<int>> Layout::tp_groups(int stage) const {
  std::vector<std::vector<int>> groups;
  for (int d = 0; d < dp; ++d) {
    std::vector<int> g;
    for (int t = 0; t < tp; ++t) g.push_back(gpu(t, d, stage));
    groups.push_back(std::move(g));
  }
  return groups;
}

std::vector<std::vector<int>> Layout::dp_groups(int stage, int size, int stride) const {
  // Groups of `size` DP ranks: consecutive ranks (stride 1) or every `stride`-th.
  std::vector<std::vector<int>> groups;
  for (int t = 0; t < tp; ++t) {
    std::vector<bool> used(static_cast<std::size_t>(dp), false);
    for (int start = 0; start < dp; ++start) {
      if (used[static_cast<std::size_t>(start)]) continue;
      std::vector<int> g;
      for (int i = 0; i < size; ++i) {
        const int d = start + i * stride;
        used[static_cast<std::size_t>(d)] = true;
        g.push_back(gpu(t, d, stage));
      }
      groups.push_back(std::move(g));
    }
  }
  return groups;
}

std::vector<std::vector<int>> Layout::ep_groups(int stage) const {
  std::vector<std::vector<int>> groups;
  const int base = stage * tp * dp;
  // Expert-TP rank outermost: with etp = tp the order of dp_groups(stage, ep).
  for (int et = 0; et < etp; ++et)
    for (int edp = 0; edp < expert_dp(); ++edp) {
      std::vector<int> g;
      for (int e = 0; e < ep; ++e) g.push_back(base + et + etp * (e + ep * edp));
      groups.push_back(std::move(g));
    }
  return groups;
}

std::vector<std::vector<int>> Layout::expert_dp_groups(int stage) const {
  std::vector<std::vector<int>> groups;
  const int base = stage * tp * dp;
  for (int et = 0; et < etp; ++et)
    for (int e = 0; e < ep; ++e) {
      std::vector<int> g;
      for (int edp = 0; edp < expert_dp(); ++edp) g.push_back(base + et + etp * (e + ep * edp));
      groups.push_back(std::move(g));
    }
  return groups;
}

int Layout::first_layer(int stage, int chunk) const {
  int first = 0;
  for (int i = 0; i < chunk * pp + stage; ++i) first += chunk_layers[static_cast<std::size_t>(i)];
  return first;
}

void Layout::set_stage_layers(const std::vector<int>& per_stage) {
  std::vector<int> per_chunk(static_cast<std::size_t>(pp * v), 0);
  for (int s = 0; s < pp; ++s) {
    const int n = per_stage[static_cast<std::size_t>(s)];
    for (int c = 0; c < v; ++c)
      per_chunk[static_cast<std::size_t>(c * pp + s)] = n / v + (c < n % v ? 1 : 0);
  }
  set_chunk_layers(std::move(per_chunk));
}

void Layout::set_chunk_layers(std::vector<int> per_chunk) {
  chunk_layers = std::move(per_chunk);
  layers_per_chunk =
      chunk_layers.empty() ? 0 : *std::max_element(chunk_layers.begin(), chunk_layers.end());
}

std::vector<int> balance_stage_layers(int layers, int pp, double layer_s, double first_extra_s,
                                      double last_extra_s) {
  auto extra = [&](int s) {
    return (s == 0 ? first_extra_s : 0.0) + (s == pp - 1 ? last_extra_s : 0.0);
  };
  // Smallest bound B on stage time that can hold every layer: stage s takes
  // floor((B - extra_s) / layer_s) layers. Candidates for B are k layer_s + extra_s.
  std::vector<int> counts(static_cast<std::size_t>(pp), 0);
  auto fill = [&](double bound) {
    long long total = 0;
    for (int s = 0; s < pp; ++s) {
      const double room = (bound - extra(s)) / layer_s;
      const int n = room < 0 ? 0 : static_cast<int>(std::floor(room + 1e-9));
      counts[static_cast<std::size_t>(s)] = n;
      total += n;
    }
    return total;
  };
  std::vector<double> bounds;
  for (int s = 0; s < pp; ++s)
    for (int k = 0; k <= layers; ++k) bounds.push_back(k * layer_s + extra(s));
  std::sort(bounds.begin(), bounds.end());
  for (double b : bounds) {
    if (fill(b) < layers) continue;
    // Too many: take layers back from the stages with the most work (latest stage on ties).
    long long excess = 0;
    for (int n : counts) excess += n;
    excess -= layers;
    while (excess-- > 0) {
      int worst = -1;
      for (int s = 0; s < pp; ++s) {
        const auto i = static_cast<std::size_t>(s);
        if (counts[i] == 0) continue;
        const double t = counts[i] * layer_s + extra(s);
        if (worst < 0 ||
            t > counts[static_cast<std::size_t>(worst)] * layer_s + extra(worst) - 1e-12)
          worst = s;
      }
      --counts[static_cast<std::size_t>(worst)];
    }
    return counts;
  }
  return counts;
}

Layout make_layout(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                   int gpus) {
  validate(model);
  auto positive = [](int v, const char* field) {
    if (v < 1) throw core::Error(field, std::to_string(v), "must be at least 1");
  };
  positive(p.tp, "parallelism.tp");
  positive(p.pp, "parallelism.pp");
  positive(p.dp, "parallelism.dp");
  positive(p.ep, "parallelism.ep");
  positive(p.cp, "parallelism.cp");
  if (p.virtual_stages < 0)
    throw core::Error("parallelism.virtual_stages", std::to_string(p.virtual_stages),
                      "must be a positive integer or auto");
  positive(p.micro_batch, "parallelism.micro_batch");
  if (static_cast<long long>(p.tp) * p.cp * p.pp * p.dp != gpus)
    throw core::Error("parallelism",
                      fmt::format("tp {} x cp {} x pp {} x dp {} = {}", p.tp, p.cp, p.pp, p.dp,
                                  static_cast<long long>(p.tp) * p.cp * p.pp * p.dp),
                      fmt::format("must equal the cluster's {} GPUs", gpus));
  // Ring attention with the causal load balance splits each sequence into 2 cp chunks.
  if (p.cp > 1 && model.seq_len % (2 * p.cp) != 0)
    throw core::Error("parallelism.cp", std::to_string(p.cp),
                      fmt::format("2 x cp must divide model.seq_len ({}): ring attention splits "
                                  "each sequence into 2 cp load-balanced chunks",
                                  model.seq_len));
  if (p.cp > 1 && model.has_window())
    throw core::Error("parallelism.cp", std::to_string(p.cp),
                      fmt::format("context parallelism with sliding-window attention "
                                  "(model.sliding_window {}) is not modelled: ring attention "
                                  "here exchanges every K/V block",
                                  model.sliding_window));
  if (t.grad_sync != "auto" && t.grad_sync != "all_reduce")
    throw core::Error("training.grad_sync", t.grad_sync, "must be 'auto' or 'all_reduce'");
  if (t.fp8_recipe != "delayed" && t.precision != "fp8")
    throw core::Error("training.fp8_recipe", t.fp8_recipe,
                      fmt::format("scales FP8 tensors; training.precision is '{}'", t.precision));
  if (t.recompute_early_stop && p.recompute != "full")
    throw core::Error("training.recompute_early_stop", "true",
                      fmt::format("early stopping shortens a full recompute; parallelism.recompute "
                                  "is '{}'",
                                  p.recompute));
  if (t.recompute_early_stop && p.tp > 1)
    throw core::Error("training.recompute_early_stop", "true",
                      fmt::format("not modelled with tensor parallelism (parallelism.tp {}): which "
                                  "TP collectives an early-stopped recompute skips",
                                  p.tp));
  if (t.grad_sync == "all_reduce" && p.zero >= 2)
    throw core::Error("training.grad_sync", t.grad_sync,
                      fmt::format("zero {} shards the gradients, which are reduce-scattered; "
                                  "all_reduce is the whole-gradient synchronization of zero 0-1",
                                  p.zero));
  if (p.cp > 1 && p.zero >= 3)
    throw core::Error("parallelism.cp", std::to_string(p.cp),
                      "context parallelism is modelled with Megatron's DP/distributed optimizer, "
                      "not with FSDP (zero 3)");
  const int v = p.virtual_stages == 0 ? 1 : p.virtual_stages;
  if (model.heads % p.tp != 0)
    throw core::Error("parallelism.tp", std::to_string(p.tp),
                      fmt::format("must divide model.heads ({})", model.heads));
  if (model.kv_heads % p.tp != 0 && p.tp % model.kv_heads != 0)
    throw core::Error(
        "parallelism.tp", std::to_string(p.tp),
        fmt::format("must divide model.kv_heads ({}) or be a multiple of it", model.kv_heads));
  PipelineLayout pl;
  if (!p.pipeline_layout.empty()) {
    if (!p.stage_layers.empty() || p.stage_layers_auto)
      throw core::Error("parallelism.pipeline_layout", p.pipeline_layout,
                        "places every layer itself: leave parallelism.stage_layers unset");
    pl = parse_pipeline_layout(p.pipeline_layout, model, p.pp);
    if (pl.virtual_stages != p.virtual_stages)
      throw core::Error("parallelism.virtual_stages",
                        p.virtual_stages == 0 ? "auto" : std::to_string(p.virtual_stages),
                        fmt::format("parallelism.pipeline_layout has {} virtual stages on pp {}: "
                                    "virtual_stages must be {}",
                                    pl.chunk_layers.size(), p.pp, pl.virtual_stages));
  } else if (!p.stage_layers.empty()) {
    long long sum = 0;
    std::string listed;
    for (int n : p.stage_layers) {
      sum += n;
      listed += (listed.empty() ? "" : ", ") + std::to_string(n);
    }
    if (static_cast<int>(p.stage_layers.size()) != p.pp)
      throw core::Error("parallelism.stage_layers", "[" + listed + "]",
                        fmt::format("needs one entry per pipeline stage (pp = {}), has {}", p.pp,
                                    p.stage_layers.size()));
    if (sum != model.layers)
      throw core::Error("parallelism.stage_layers", "[" + listed + "]",
                        fmt::format("sums to {} but the model has {} layers", sum, model.layers));
    for (int n : p.stage_layers)
      if (n < v)
        throw core::Error("parallelism.stage_layers", "[" + listed + "]",
                          fmt::format("every stage needs at least virtual_stages ({}) layers", v));
  } else if (p.stage_layers_auto) {
    if (model.layers < p.pp * v)
      throw core::Error(core::Error::Kind::does_not_fit, "parallelism.pp", std::to_string(p.pp),
                        fmt::format("pp x virtual_stages ({}) exceeds model.layers ({})", p.pp * v,
                                    model.layers));
  } else if (model.layers % (p.pp * v) != 0) {
    throw core::Error(core::Error::Kind::does_not_fit, "parallelism.pp", std::to_string(p.pp),
                      fmt::format("pp x virtual_stages ({}) must divide model.layers ({}); or "
                                  "set parallelism.stage_layers (auto or a list)",
                                  p.pp * v, model.layers));
  }
  if (p.expert_tp < 0 || (p.expert_tp > 0 && p.tp % p.expert_tp != 0))
    throw core::Error("parallelism.expert_tp", std::to_string(p.expert_tp),
                      fmt::format("must divide parallelism.tp ({}); 0 means as tp", p.tp));
  const int etp = p.etp();
  if ((static_cast<long long>(p.tp) * p.dp * p.cp) % (static_cast<long long>(p.ep) * etp) != 0)
    throw core::Error(
        "parallelism.ep", std::to_string(p.ep),
        fmt::format("ep x expert_tp ({} x {}) must divide tp x dp x cp ({} x {} x {}): the expert "
                    "layers are laid out over a stage's ranks",
                    p.ep, etp, p.tp, p.dp, p.cp));
  if (etp != p.tp && p.tp > 1 && !p.sequence_parallel)
    throw core::Error("parallelism.expert_tp", std::to_string(p.expert_tp),
                      "an expert TP size other than tp needs sequence_parallel (the MoE layer "
                      "takes each rank's sequence-parallel token shard)");
  if (p.ep > 1 && !model.moe())
    throw core::Error("parallelism.ep", std::to_string(p.ep),
                      "expert parallelism needs an MoE model (model.experts > 0)");
  if (t.moe_dispatcher == "flex" && model.moe() && etp > 1)
    throw core::Error("training.moe_dispatcher", t.moe_dispatcher,
                      fmt::format("the flex dispatcher is modelled with whole experts: needs "
                                  "parallelism.expert_tp 1 (it is {})",
                                  etp));
  if (model.moe() && model.experts % p.ep != 0)
    throw core::Error("parallelism.ep", std::to_string(p.ep),
                      fmt::format("must divide model.experts ({})", model.experts));
  if (p.zero < 0 || p.zero > 3)
    throw core::Error("parallelism.zero", std::to_string(p.zero), "must be 0, 1, 2 or 3");
  if (p.hsdp_shard < 0 || (p.hsdp_shard > 0 && p.dp % p.hsdp_shard != 0))
    throw core::Error("parallelism.hsdp_shard", std::to_string(p.hsdp_shard),
                      fmt::format("must divide parallelism.dp ({})", p.dp));
  if (p.recompute != "none" && p.recompute != "selective" && p.recompute != "full")
    throw core::Error("parallelism.recompute", p.recompute, "must be none, selective or full");
  if (p.recompute_layers < 0 || p.recompute_layers > model.layers)
    throw core::Error(
        "parallelism.recompute_layers", std::to_string(p.recompute_layers),
        fmt::format("must be between 0 (every layer) and model.layers ({})", model.layers));
  if (p.recompute_layers > 0 && p.recompute != "full")
    throw core::Error("parallelism.recompute_layers", std::to_string(p.recompute_layers),
                      fmt::format("recomputing the first layers of each chunk needs "
                                  "parallelism.recompute: full (it is {})",
                                  p.recompute));
  if (!p.recompute_modules.empty()) {
    const std::string listed = fmt::format("[{}]", fmt::join(p.recompute_modules, ", "));
    if (p.recompute != "selective")
      throw core::Error("parallelism.recompute_modules", listed,
                        fmt::format("recompute modules need parallelism.recompute: selective "
                                    "(it is {})",
                                    p.recompute));
    for (const auto& module : p.recompute_modules) {
      if (module == "moe")
        throw core::Error("parallelism.recompute_modules", listed,
                          "moe (recomputing the whole MoE layer, its all-to-alls included) is not "
                          "modelled; moe_act and shared_experts are");
      if (std::find(kRecomputeModules.begin(), kRecomputeModules.end(), module) ==
          kRecomputeModules.end())
        throw core::Error("parallelism.recompute_modules", listed,
                          fmt::format("unknown module {}: expected one of {}", module,
                                      fmt::join(kRecomputeModules, ", ")));
    }
  }
  if (v > 1 && p.pp == 1)
    throw core::Error(core::Error::Kind::does_not_fit, "parallelism.virtual_stages",
                      std::to_string(p.virtual_stages), "interleaving needs pp > 1");
  // Megatron-Core's combined 1F1B exists for no pipelining and for the interleaved schedule.
  if (t.moe_a2a_overlap) {
    if (p.ep <= 1)
      throw core::Error("training.moe_a2a_overlap", "true",
                        "overlaps expert-parallel all-to-alls: needs parallelism.ep > 1");
    if (p.recompute == "full")
      throw core::Error("training.moe_a2a_overlap", "true",
                        "the combined 1F1B schedule does not run with full recompute "
                        "(parallelism.recompute: full); use selective or none");
    if (p.pp > 1 && v == 1)
      throw core::Error(core::Error::Kind::does_not_fit, "training.moe_a2a_overlap", "true",
                        "with pipeline parallelism the combined 1F1B schedule needs "
                        "interleaving (parallelism.virtual_stages > 1)");
  }
  const double per_step = static_cast<double>(p.dp) * p.micro_batch;
  const double micro = t.global_batch / per_step;
  if (!(t.global_batch > 0) || micro != static_cast<double>(static_cast<long long>(micro)))
    throw core::Error(
        "training.global_batch", fmt::format("{}", t.global_batch),
        fmt::format("must be a positive multiple of dp x micro_batch ({})", per_step));
  // The step simulation schedules every micro-batch of the pipeline: a step of more than
  // kMaxMicroBatches is a typo (1e15), and would overflow the int count below.
  constexpr double kMaxMicroBatches = 1 << 20;
  if (micro > kMaxMicroBatches)
    throw core::Error("training.global_batch", fmt::format("{}", t.global_batch),
                      fmt::format("{:g} micro-batches per step (global_batch / (dp x micro_batch "
                                  "= {})); at most {:g} are simulated",
                                  micro, per_step, kMaxMicroBatches));
  if (v > 1 && static_cast<long long>(micro) % p.pp != 0)
    throw core::Error(core::Error::Kind::does_not_fit, "training.global_batch",
                      fmt::format("{}", t.global_batch),
                      "interleaved 1F1B needs the micro-batch count to be a multiple of pp");
  if (t.precision != "bf16" && t.precision != "fp16" && t.precision != "fp8")
    throw core::Error("training.precision", t.precision, "must be bf16, fp16 or fp8");
  if (!calibrate::is_attention_choice(t.attention)) {
    std::vector<std::string> kinds;
    for (const auto& choice : calibrate::attention_choices())
      kinds.push_back(fmt::format("{} ({})", choice.name, choice.description));
    throw core::Error("training.attention", t.attention,
                      fmt::format("must be one of {}", fmt::join(kinds, ", ")));
  }
  if (t.cross_entropy != "auto" && t.cross_entropy != "fused" && t.cross_entropy != "unfused")
    throw core::Error("training.cross_entropy", t.cross_entropy,
                      "must be auto, fused (one pass over the logits) or unfused (fp32 op by op)");
  if (!(t.tokens > 0))
    throw core::Error("training.tokens", fmt::format("{}", t.tokens), "must be positive");
  Layout l;
  l.tp = p.tp;
  l.pp = p.pp;
  l.dp = p.dp * p.cp;
  l.cp = p.cp;
  l.ep = p.ep;
  l.etp = etp;
  l.v = v;
  l.gpus = gpus;
  l.micro_batches = static_cast<int>(micro);
  l.shard_group = p.hsdp_shard > 0 ? p.hsdp_shard : l.dp;
  if (!p.pipeline_layout.empty()) {
    l.set_chunk_layers(std::move(pl.chunk_layers));
  } else if (!p.stage_layers.empty()) {
    l.set_stage_layers(p.stage_layers);
  } else {
    // Even split (auto is rebalanced by the step once layer costs are known).
    std::vector<int> even(static_cast<std::size_t>(p.pp), model.layers / p.pp);
    for (int s = 0; s < model.layers % p.pp; ++s) ++even[static_cast<std::size_t>(s)];
    l.set_stage_layers(even);
  }
  return l;
}

std::string ParallelismSpec::recomputed_layers_text() const {
  return recompute_layers == 1 ? "the first layer"
                               : fmt::format("the first {} layers", recompute_layers);
}

}  // namespace twin::workload
