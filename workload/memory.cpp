#include "workload/memory.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/error.hpp"

namespace twin::workload {

namespace {

/// Parameters of one transformer layer on this GPU: experts split over ep and each over etp,
/// every other matrix over tp; `moe` weighs an MoE layer's MLP by that share of a layer.
double layer_params_per_gpu(const ModelSpec& model, const Layout& layout, double moe) {
  return (model.attention_params() + (1 - moe) * model.dense_mlp_params()) / layout.tp +
         moe * (model.moe_mlp_params() / layout.ep) / layout.etp;
}

/// A layer's parameters on this GPU, dense and MoE layers averaged by their share.
double mean_layer_params_per_gpu(const ModelSpec& model, const Layout& layout) {
  return layer_params_per_gpu(model, layout,
                              static_cast<double>(model.moe_layers()) / model.layers);
}

/// Transformer layers of pipeline stage `stage`, over its chunks.
int layers_on_stage(const Layout& layout, int stage) {
  int layers = 0;
  for (int c = 0; c < layout.v; ++c) layers += layout.layers(stage, c);
  return layers;
}

}  // namespace

double params_per_gpu(const ModelSpec& model, const Layout& layout, int stage) {
  const double table = static_cast<double>(model.vocab) * model.hidden / layout.tp;
  double params = layers_on_stage(layout, stage) * mean_layer_params_per_gpu(model, layout);
  // The input embedding sits on the first stage; the output layer and the MTP modules (a layer
  // like the last, plus its 2h -> h projection) on the last. A tied output layer is the
  // embedding itself on a one-stage pipeline, a copy of it on the last stage of a longer one.
  if (stage == 0) params += table;
  if (stage == layout.pp - 1) {
    if (!model.output_is_embedding(layout.pp)) params += table;
    const int last = model.layers - 1;
    params +=
        model.mtp_layers * (layer_params_per_gpu(model, layout, model.moe_layer(last) ? 1.0 : 0.0) +
                            2.0 * model.hidden * model.hidden / layout.tp);
  }
  return params;
}

std::vector<ActivationTensor> activation_tensors(const ModelSpec& model, const ParallelismSpec& p,
                                                 const TrainingSpec& t) {
  // The tensors a layer keeps for its backward, counted one by one (Korthikanti et al.,
  // arXiv 2205.05198, section 4.1, with the model's real widths): per token of the s b this
  // rank holds, in bytes. Sequence parallelism splits the tensors outside the tensor-parallel
  // region (norm inputs, the linear layers' inputs) over tp as well. An fp8 linear layer keeps
  // its input in fp8 (Transformer Engine saves the quantized copy its weight-gradient GEMM
  // reads), 1 byte instead of 2. No dropout masks: current recipes train without dropout.
  // For a 4h GeLU MLP, full multi-head attention and bf16 this is Korthikanti's 34 s b h / t
  // less the two 1-byte hidden-dropout masks: 32 s b h / t with SP, 8 + 24 / t without.
  const double s = static_cast<double>(model.seq_len) / p.cp, b = p.micro_batch, h = model.hidden,
               a = model.heads, tp = p.tp;
  const double tsp = p.sequence_parallel ? tp : 1.0;
  const bool fp8 = t.precision == "fp8";
  const double in = fp8 ? 1.0 : 2.0;             // a saved linear input
  const double up = model.mlp_matrices() - 1.0;  // matrices fused in fc1
  const double qk = model.qk_head_dim(), dv = model.v_dim();
  const double moe_share =
      model.moe() ? static_cast<double>(model.moe_layers()) / model.layers : 0.0;
  const double etp = p.etp();
  std::vector<ActivationTensor> out;
  // `per_token` bytes for every token of the micro-batch, in `share` of the layers; dropped when
  // selective recompute reruns `module`.
  auto add = [&](std::string name, double per_token, double share = 1.0, const char* module = "") {
    if (share < 1.0) name += fmt::format(" (x {:.2f} of layers)", share);
    if (per_token > 0 && share > 0)
      out.push_back({std::move(name), s * b * per_token * share, module});
  };
  const char* in_bytes = fp8 ? ", fp8" : "";
  // Attention: the norm input, the QKV projections' input, Q, K and V as the attention kernel
  // reads them, and its output (the projection's input; fp8 keeps a quantized copy besides).
  add("attention norm input", 2.0 * h / tsp);
  add(fmt::format("QKV projection input{}", in_bytes), in * h / tsp);
  if (model.mla()) {
    // MLA: the latents (norm inputs and up projections' inputs, whole on every tensor-parallel
    // rank), and K expanded to every head.
    const double rq = model.q_lora_rank, rkv = model.kv_lora_rank + model.qk_rope_head_dim;
    add("MLA latents (norm and up-projection inputs)", (2.0 + in) * (rq + rkv));
    add("Q, K, V (K expanded to every head)", 2.0 * a * (2.0 * qk + dv) / tp, 1.0, "mla_up_proj");
  } else {
    if (model.qk_norm) add("Q, K before their norms", 2.0 * (a + model.kv_heads) * qk / tp);
    add("Q", 2.0 * a * qk / tp);
    add(fmt::format("K, V ({} KV heads)", model.kv_heads), 2.0 * model.kv_heads * (qk + dv) / tp);
  }
  add("attention output", 2.0 * a * dv / tp);
  if (fp8) add("attention output, fp8 copy for the projection", a * dv / tp);
  // MLP: the norm input, fc1's input, fc1's output (the activation's input) and fc2's input;
  // `module` reruns fc1 and the activation.
  auto mlp = [&](const std::string& what, double f, double share, const char* module) {
    add(fmt::format("{} fc1 input{}", what, in_bytes), in * h / tsp, share);
    add(fmt::format("{} fc1 output", what), 2.0 * up * f / tp, share, module);
    add(fmt::format("{} fc2 input{}", what, in_bytes), in * f / tp, share, module);
  };
  add("MLP norm input", 2.0 * h / tsp);
  mlp("MLP", model.ffn_hidden, 1.0 - moe_share, "mlp");
  if (model.moe()) {
    // The router's input, then the routed copies: T k cf etp / tp of them reach this rank, each
    // keeping its input and its output (which the probability-weighted combine keeps for the
    // router's gradient), and fc1's output and fc2's input of width f_e / etp. Shared experts
    // are a dense MLP of width f_e x shared.
    const double copies = model.top_k * model.capacity_factor / tp;
    const double fe = model.expert_ffn_hidden;
    add("router input", 2.0 * h / tsp, moe_share);
    add(fmt::format("routed copies: expert input{}", in_bytes), copies * in * h * etp, moe_share);
    add("routed copies: expert output (router gradient)", copies * 2.0 * h * etp, moe_share);
    add("routed copies: expert fc1 output", copies * 2.0 * up * fe, moe_share);
    // (the activation output of the routed copies: T k cf etp / tp copies of width f_e / etp,
    // T k cf f_e / tp elements whatever the expert layout)
    add(fmt::format("routed copies: expert fc2 input{}", in_bytes), copies * in * fe, moe_share,
        "moe_act");
    if (model.shared_experts > 0)
      mlp("shared expert", fe * model.shared_experts, moe_share, "shared_experts");
  }
  return out;
}

double activation_bytes_per_layer(const ModelSpec& model, const ParallelismSpec& p,
                                  const TrainingSpec& t) {
  const double s = static_cast<double>(model.seq_len) / p.cp, b = p.micro_batch, h = model.hidden;
  const double tsp = p.sequence_parallel ? p.tp : 1.0;
  const double in = t.precision == "fp8" ? 1.0 : 2.0;
  // Selective recompute modules drop the tensors they rewrite (averaged over the dense and MoE
  // layers like the tensors themselves); layernorm drops the two norm outputs, the layer's
  // first linear inputs. The layer input always stays.
  double per_layer = 0;
  double dropped = p.recomputes("layernorm") ? 2.0 * in * s * b * h / tsp : 0.0;
  for (const auto& tensor : activation_tensors(model, p, t)) {
    per_layer += tensor.bytes;
    if (!tensor.recompute_module.empty() && p.recomputes(tensor.recompute_module))
      dropped += tensor.bytes;
  }
  if (p.recompute == "full") per_layer = 2.0 * s * b * h / tsp;
  if (p.recompute == "selective") per_layer = std::max(2.0 * s * b * h / tsp, per_layer - dropped);
  // Unfused attention stores the s x s scores: Korthikanti et al.'s 5 a s / (h t) term (2 bytes
  // softmax output, 1 dropout mask, 2 dropout output per score), unless recomputed.
  if (t.attention == "unfused" && p.recompute != "full" && !p.recomputes("core_attn"))
    per_layer += 5.0 * model.heads * s * s * b / p.tp;
  return per_layer;
}

namespace {

/// What a layer that full recompute leaves out (recompute_layers) keeps: everything.
double bytes_of_a_kept_layer(const ModelSpec& model, const ParallelismSpec& p,
                             const TrainingSpec& t) {
  ParallelismSpec kept = p;
  kept.recompute = "none";
  kept.recompute_layers = 0;
  return activation_bytes_per_layer(model, kept, t);
}

}  // namespace

std::string activation_table(const ModelSpec& model, const ParallelismSpec& p,
                             const TrainingSpec& t, double activations_GB, int stage) {
  const std::string where = stage == 0 ? "the first stage" : fmt::format("stage {}", stage);
  const auto tensors = activation_tensors(model, p, t);
  std::size_t width = 24;
  for (const auto& x : tensors) width = std::max(width, x.name.size());
  std::string out = fmt::format("{:<{}}  {:>10}\n", "tensor kept per layer", width, "MB");
  double sum = 0;
  for (const auto& x : tensors) {
    out += fmt::format("{:<{}}  {:>10.1f}\n", x.name, width, x.bytes / 1e6);
    sum += x.bytes;
  }
  out += fmt::format("{:<{}}  {:>10.1f}\n", "all of them", width, sum / 1e6);
  const double kept = activation_bytes_per_layer(model, p, t);
  if (kept != sum) {
    const std::string why = p.recompute == "full"        ? "full recompute: the layer input"
                            : p.recompute == "selective" ? "after selective recompute"
                                                         : "with the unfused attention scores";
    out += fmt::format("{:<{}}  {:>10.1f}\n", why, width, kept / 1e6);
  }
  if (p.recompute == "full" && p.recompute_layers > 0) {
    out += fmt::format("{:<{}}  {:>10.1f}\n", "layers not recomputed", width,
                       bytes_of_a_kept_layer(model, p, t) / 1e6);
    out += fmt::format("{} of each chunk recomputed, the others kept: {:.1f} GB in flight on {}\n",
                       p.recomputed_layers_text(), activations_GB, where);
    return out;
  }
  if (kept > 0)
    out += fmt::format("x {:.1f} layer-micro-batches in flight on {} = {:.1f} GB\n",
                       activations_GB * 1e9 / kept, where, activations_GB);
  return out;
}

namespace {

MemoryBreakdown memory_of_stage(const ModelSpec& model, const ParallelismSpec& p,
                                const TrainingSpec& t, const Layout& layout, int stage) {
  const double params = params_per_gpu(model, layout, stage);
  const double shard = layout.shard_group;
  MemoryBreakdown m;
  m.stage = stage;
  m.weights_GB = 2.0 * params / (p.zero >= 3 ? shard : 1.0) / 1e9;
  m.gradients_GB = t.grad_bytes() * params / (p.zero >= 2 ? shard : 1.0) / 1e9;
  m.optimizer_GB = 12.0 * params / (p.zero >= 1 ? shard : 1.0) / 1e9;
  // Micro-batches in flight (1F1B): pp - s on stage s; interleaved (Megatron-LM's schedule),
  // the 2 (pp - s - 1) + (v - 1) pp warm-up chunk forwards and the one in progress before the
  // stage's first backward, each holding 1 / v of its layers (stage 0: pp + (pp - 1) / v).
  const double pp = p.pp, v = layout.v;
  const double in_flight = std::min<double>(
      layout.micro_batches, v > 1 ? (2.0 * (pp - stage - 1) + (v - 1) * pp + 1) / v : pp - stage);
  // Recomputed layers keep their input alone; with recompute_layers the others keep everything.
  const double per_layer = activation_bytes_per_layer(model, p, t);
  const double per_kept_layer =
      p.recompute == "full" ? bytes_of_a_kept_layer(model, p, t) : per_layer;
  double stage_bytes = 0;
  for (int c = 0; c < layout.v; ++c) {
    const int layers = layout.layers(stage, c), recomputed = p.recomputed_layers(layers);
    stage_bytes += recomputed * per_layer + (layers - recomputed) * per_kept_layer;
  }
  m.activations_GB = stage_bytes * in_flight / 1e9;
  m.reserve_GB = t.memory_reserve_GB;
  // The working set (header): gathered parameters, one layer's gradient before it is
  // reduce-scattered, one recomputed layer; on the last stage the logits and the loss instead
  // of the latter two.
  const bool has_layers = layers_on_stage(layout, stage) > 0;
  const double layer_params = has_layers ? mean_layer_params_per_gpu(model, layout) : 0.0;
  const double gathered = p.zero >= 3 ? 2.0 * layer_params * t.param_gather_bytes() : 0.0;
  const double unsharded_grad = p.zero >= 2 ? layer_params * t.grad_bytes() : 0.0;
  const double recomputed = p.recompute == "full" && has_layers ? per_kept_layer - per_layer : 0.0;
  double loss = 0;
  if (stage == p.pp - 1) {
    const double logits = static_cast<double>(model.seq_len) / p.cp * p.micro_batch *
                          static_cast<double>(model.vocab) / p.tp;
    loss = logits * (t.fused_cross_entropy() ? 2.0 : 10.0);
  }
  m.working_GB = (gathered + std::max(unsharded_grad + recomputed, loss)) / 1e9;
  return m;
}

}  // namespace

MemoryBreakdown memory_per_gpu(const ModelSpec& model, const ParallelismSpec& p,
                               const TrainingSpec& t, const Layout& layout) {
  const MemoryBreakdown first = memory_of_stage(model, p, t, layout, 0);
  if (p.pp == 1) return first;
  const MemoryBreakdown last = memory_of_stage(model, p, t, layout, p.pp - 1);
  return last.total_GB() > first.total_GB() ? last : first;
}

void check_memory(const MemoryBreakdown& m, double capacity_GB, const std::string& gpu) {
  if (m.total_GB() <= capacity_GB) return;
  throw core::Error(
      core::Error::Kind::does_not_fit, "parallelism", "",
      fmt::format("the model does not fit: {:.1f} GB per GPU needed on {} ({:.1f} GB): weights "
                  "{:.1f}, gradients {:.1f}, optimizer {:.1f}, activations {:.1f}, working set "
                  "{:.1f}, reserve {:.1f}. Raise tp/pp, use zero 2-3, recompute, or a smaller "
                  "micro_batch",
                  m.total_GB(), gpu, capacity_GB, m.weights_GB, m.gradients_GB, m.optimizer_GB,
                  m.activations_GB, m.working_GB, m.reserve_GB));
}

}  // namespace twin::workload
