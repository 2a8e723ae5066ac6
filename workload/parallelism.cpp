#include "workload/parallelism.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

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
  positive(p.virtual_stages, "parallelism.virtual_stages");
  positive(p.micro_batch, "parallelism.micro_batch");
  if (static_cast<long long>(p.tp) * p.pp * p.dp != gpus)
    throw core::Error("parallelism",
                      fmt::format("tp {} x pp {} x dp {} = {}", p.tp, p.pp, p.dp,
                                  static_cast<long long>(p.tp) * p.pp * p.dp),
                      fmt::format("must equal the cluster's {} GPUs", gpus));
  if (model.heads % p.tp != 0)
    throw core::Error("parallelism.tp", std::to_string(p.tp),
                      fmt::format("must divide model.heads ({})", model.heads));
  if (model.kv_heads % p.tp != 0 && p.tp % model.kv_heads != 0)
    throw core::Error(
        "parallelism.tp", std::to_string(p.tp),
        fmt::format("must divide model.kv_heads ({}) or be a multiple of it", model.kv_heads));
  if (model.layers % (p.pp * p.virtual_stages) != 0)
    throw core::Error("parallelism.pp", std::to_string(p.pp),
                      fmt::format("pp x virtual_stages ({}) must divide model.layers ({})",
                                  p.pp * p.virtual_stages, model.layers));
  if (p.dp % p.ep != 0)
    throw core::Error(
        "parallelism.ep", std::to_string(p.ep),
        fmt::format("must divide parallelism.dp ({}): experts are split across data-parallel ranks",
                    p.dp));
  if (p.ep > 1 && !model.moe())
    throw core::Error("parallelism.ep", std::to_string(p.ep),
                      "expert parallelism needs an MoE model (model.experts > 0)");
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
  if (p.virtual_stages > 1 && p.pp == 1)
    throw core::Error("parallelism.virtual_stages", std::to_string(p.virtual_stages),
                      "interleaving needs pp > 1");
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
  if (p.virtual_stages > 1 && static_cast<long long>(micro) % p.pp != 0)
    throw core::Error("training.global_batch", fmt::format("{}", t.global_batch),
                      "interleaved 1F1B needs the micro-batch count to be a multiple of pp");
  if (t.precision != "bf16" && t.precision != "fp8")
    throw core::Error("training.precision", t.precision, "must be bf16 or fp8");
  if (!(t.tokens > 0))
    throw core::Error("training.tokens", fmt::format("{}", t.tokens), "must be positive");
  Layout l;
  l.tp = p.tp;
  l.pp = p.pp;
  l.dp = p.dp;
  l.ep = p.ep;
  l.gpus = gpus;
  l.micro_batches = static_cast<int>(micro);
  l.layers_per_chunk = model.layers / (p.pp * p.virtual_stages);
  l.shard_group = p.hsdp_shard > 0 ? p.hsdp_shard : p.dp;
  return l;
}

double params_per_gpu(const ModelSpec& model, const Layout& layout) {
  const double layers = static_cast<double>(model.layers) / layout.pp;
  const double moe_fraction = static_cast<double>(model.moe_layers()) / model.layers;
  const double dense_mlp = (1 - moe_fraction) * model.dense_mlp_params();
  // Experts split over ep, every matrix split over tp; the input embedding sits on stage 0.
  const double expert_mlp = moe_fraction * (model.moe_mlp_params() / layout.ep);
  return (layers * (model.attention_params() + dense_mlp + expert_mlp) +
          static_cast<double>(model.vocab) * model.hidden) /
         layout.tp;
}

MemoryBreakdown memory_per_gpu(const ModelSpec& model, const ParallelismSpec& p,
                               const TrainingSpec& t, const Layout& layout) {
  const double params = params_per_gpu(model, layout);
  const double shard = layout.shard_group;
  MemoryBreakdown m;
  m.weights_GB = 2.0 * params / (p.zero >= 3 ? shard : 1.0) / 1e9;
  m.gradients_GB = 2.0 * params / (p.zero >= 2 ? shard : 1.0) / 1e9;
  m.optimizer_GB = 12.0 * params / (p.zero >= 1 ? shard : 1.0) / 1e9;
  const double s = model.seq_len, b = p.micro_batch, h = model.hidden, a = model.heads, tp = p.tp;
  // Flash attention never stores the s x s scores, so the 5 a s / (h t) term of Korthikanti
  // et al. is absent with or without selective recompute.
  double per_layer = s * b * h * (p.sequence_parallel ? 34.0 / tp : 10.0 + 24.0 / tp);
  if (p.recompute == "full") per_layer = 2.0 * s * b * h / (p.sequence_parallel ? tp : 1.0);
  (void)a;
  // MoE layers keep top_k expert activations instead of one MLP's (scaled by the MLP share).
  if (model.moe()) {
    const double mlp_share = 19.0 / 34.0;  // of the 34 s b h bytes, the MLP's (Korthikanti Table 2)
    const double moe_scale =
        1.0 + mlp_share *
                  (model.top_k * model.capacity_factor * model.expert_ffn_hidden / (4.0 * h) - 1.0);
    per_layer *= std::max(1.0, moe_scale);
  }
  const double in_flight =
      std::min<double>(p.pp, layout.micro_batches) *
      (1.0 + (p.virtual_stages > 1 ? (p.pp - 1.0) / (p.pp * p.virtual_stages) : 0.0));
  m.activations_GB = per_layer * (static_cast<double>(model.layers) / p.pp) * in_flight / 1e9;
  m.reserve_GB = t.memory_reserve_GB;
  return m;
}

void check_memory(const MemoryBreakdown& m, double capacity_GB, const std::string& gpu) {
  if (m.total_GB() <= capacity_GB) return;
  throw core::Error(
      "parallelism", "",
      fmt::format("the model does not fit: {:.1f} GB per GPU needed on {} ({:.0f} GB): weights "
                  "{:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f}, reserve {:.1f}. "
                  "Raise tp/pp, use zero 2-3, recompute, or a smaller micro_batch",
                  m.total_GB(), gpu, capacity_GB, m.weights_GB, m.gradients_GB, m.optimizer_GB,
                  m.activations_GB, m.reserve_GB));
}

}  // namespace twin::workload
