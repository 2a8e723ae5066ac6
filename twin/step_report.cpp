// The step's readable outputs: summary text and JSON, and the Perfetto trace with kernels.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "core/error.hpp"
#include "core/text.hpp"
#include "core/units.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {

std::string step_summary_text(const Scenario& s, const StepReport& r) {
  const auto& p = s.parallelism;
  std::string out = fmt::format("Training step: {} on {} GPUs ({})\n", s.model.name,
                                core::with_commas(r.gpus), s.cluster.gpu);
  for (const auto& o : s.hardware_overrides) out += fmt::format("overridden   {}\n", o);
  out += fmt::format(
      "parallelism  tp {} x cp {} x pp {} (v {}{}) x dp {}, ep {}{}, zero {}{}, micro-batch {}, {} "
      "micro-batches, recompute {}{}\n",
      p.tp, p.cp, p.pp, r.virtual_stages, p.virtual_stages == 0 ? ", auto" : "", p.dp, p.ep,
      p.expert_tp > 0 ? fmt::format(" (expert tp {})", p.expert_tp) : "", p.zero,
      p.hsdp_shard > 0 ? fmt::format(" (HSDP shard {})", p.hsdp_shard) : "", p.micro_batch,
      r.micro_batches,
      p.recompute == "full" && p.recompute_layers > 0
          ? fmt::format("full ({} of each chunk)", p.recomputed_layers_text())
          : p.recompute,
      s.training.recompute_early_stop ? ", stopping early" : "");
  if (!p.pipeline_layout.empty())
    out += fmt::format("stage layers {} (pipeline layout {})\n", fmt::join(r.stage_layers, " "),
                       p.pipeline_layout);
  else if (p.stage_layers_auto || !p.stage_layers.empty())
    out += fmt::format(
        "stage layers {}{}\n", fmt::join(r.stage_layers, " "),
        p.stage_layers_auto ? " (auto: virtual stages balanced with embedding and loss)" : "");
  const auto& t = s.training;
  out += fmt::format(
      "software     {} attention, {} kernels{}, TP overlap {}, grad-reduce overlap {}, "
      "param-gather overlap {}{}{}, {}\n",
      t.attention == "auto" ? fmt::format("{} (auto)", r.attention) : t.attention,
      t.fused_kernels ? "fused" : "unfused",
      t.fused_cross_entropy() == t.fused_kernels
          ? ""
          : fmt::format(" ({} cross-entropy)", t.fused_cross_entropy() ? "fused" : "unfused"),
      t.tp_comm_overlap ? "on" : "off", t.overlap_grad_reduce ? "on" : "off",
      t.overlap_param_gather ? "on" : "off",
      p.ep > 1 ? fmt::format(", EP {} dispatch, all-to-all overlap {}", t.moe_dispatcher,
                             t.moe_a2a_overlap ? "on" : "off")
               : "",
      t.grad_accumulation == "fused"
          ? ""
          : fmt::format(", gradients accumulated in fp32 by {}",
                        t.grad_accumulation == "add" ? "an add per micro-batch"
                                                     : "a cast + add per micro-batch"),
      t.precision == "fp8" ? fmt::format("fp8 ({} scaling)", t.fp8_recipe) : t.precision);
  out += fmt::format(
      "memory       {:.1f} of {:.1f} GB per GPU{} (weights {:.1f}, grads {:.1f}, optimizer {:.1f}, "
      "activations {:.1f}, working set {:.1f}, reserve {:.1f})\n",
      r.memory.total_GB(), r.memory_capacity_GB,
      s.parallelism.pp > 1 ? fmt::format(" on stage {}", r.memory.stage) : "", r.memory.weights_GB,
      r.memory.gradients_GB, r.memory.optimizer_GB, r.memory.activations_GB, r.memory.working_GB,
      r.memory.reserve_GB);
  out += fmt::format(
      "step time    {:.3f} s   tokens/s {}   {:.0f} model TFLOP/s per GPU (HFU {:.0f})   MFU "
      "{:.1f} "
      "% of the BF16 peak{}{}\n",
      r.step_time_s, core::with_commas(static_cast<std::int64_t>(r.tokens_per_s)), r.tflops_per_gpu,
      r.hfu_tflops_per_gpu, 100 * r.mfu,
      s.training.precision == "bf16" ? "" : fmt::format(" ({} GEMMs)", s.training.precision),
      r.model_flops == "causal" ? ", attention FLOPs counted causal" : "");
  out += fmt::format("breakdown    (critical stage {})\n", r.critical_stage);
  const TimeShares shares = step_time_shares(r);
  for (const auto& [name, seconds] : r.breakdown) {
    out += fmt::format("  {:<26}{:>9.3f} s {:>6.1f} %\n", name, seconds,
                       100 * seconds / r.step_time_s);
    if (name == "compute")  // the same shares of the step, split by what limits each kernel
      out += fmt::format(
          "    GEMM {:.1f} %, attention {:.1f} %, memory-bound {:.1f} %, launch-bound {:.1f} %\n",
          100 * shares.gemm, 100 * shares.attention, 100 * shares.memory, 100 * shares.launch);
  }
  out += "link utilization (mean over the step)\n";
  for (const auto& [kind, u] : r.link_utilization)
    out += fmt::format("  {:<26}{:>8.1f} %\n", kind, 100 * u);
  out += fmt::format(
      "time to train {:.3g} tokens: {:.1f} days, {} GPU-hours, {} at {:g}/GPU-hour\n",
      s.training.tokens, r.time_to_train_days,
      core::with_commas(static_cast<std::int64_t>(r.gpu_hours)),
      core::with_commas(static_cast<std::int64_t>(r.cost)), s.training.price_per_gpu_hour);
  return out;
}

const std::vector<std::string>& time_share_classes() {
  static const std::vector<std::string> names{"GEMM", "attention", "memory-bound", "launch-bound",
                                              "outside kernels"};
  return names;
}

double time_share(const TimeShares& s, const std::string& name) {
  if (name == "GEMM") return s.gemm;
  if (name == "attention") return s.attention;
  if (name == "memory-bound") return s.memory;
  if (name == "launch-bound") return s.launch;
  if (name == "outside kernels") return s.outside_kernels;
  throw core::Error("time share", name, "not one of " + core::quoted_list(time_share_classes()));
}

/// The step's time on its critical stage by class: the stage's compute split as its kernels'
/// time splits, the rest of the step outside kernels. The executor's stretching of kernels that
/// run beside NCCL (tensor-core kernels by the SMs its channels take, memory-bound ones by its
/// HBM traffic) is spread over the classes in proportion to their time: an approximation, off by
/// at most that stretch (the SMs NCCL's channels take: 32 of 132 on H100) on the overlapped
/// kernels.
TimeShares step_time_shares(const StepReport& report) {
  TimeShares s;
  if (!(report.step_time_s > 0)) return s;
  double compute_s = 0;
  for (const auto& [what, seconds] : report.breakdown)
    if (what == "compute") compute_s = seconds;
  workload::KernelClassTimes t;
  const auto stage = static_cast<std::size_t>(report.critical_stage);
  if (stage < report.program.chunks.size())
    for (const auto& chunk : report.program.chunks[stage]) t += workload::kernel_class_times(chunk);
  const double in_kernels = std::clamp(compute_s / report.step_time_s, 0.0, 1.0);
  if (t.total() > 0) {
    const double per = in_kernels / t.total();
    s.gemm = t.gemm * per;
    s.attention = t.attention * per;
    s.memory = t.memory * per;
    s.launch = t.launch * per;
  }
  s.outside_kernels = 1.0 - (s.gemm + s.attention + s.memory + s.launch);
  return s;
}

std::string step_summary_json(const Scenario& s, const StepReport& r) {
  nlohmann::ordered_json j;
  j["scenario"] = s.name;
  j["model"] = s.model.name;
  j["gpus"] = r.gpus;
  j["micro_batches"] = r.micro_batches;
  j["step_time_s"] = r.step_time_s;
  j["tokens_per_step"] = r.tokens_per_step;
  j["tokens_per_s"] = r.tokens_per_s;
  j["tflops_per_gpu"] = r.tflops_per_gpu;
  j["hfu_tflops_per_gpu"] = r.hfu_tflops_per_gpu;
  j["mfu"] = r.mfu;
  j["peak_tflops"] = r.peak_tflops;
  j["mfu_denominator"] = "bf16 dense peak";
  j["model_flops"] = r.model_flops;
  j["virtual_stages"] = r.virtual_stages;
  j["stage_layers"] = r.stage_layers;
  j["attention"] = r.attention;
  j["hardware_overrides"] = s.hardware_overrides;
  nlohmann::ordered_json b = nlohmann::ordered_json::object();
  for (const auto& [name, seconds] : r.breakdown) b[name] = seconds;
  j["breakdown"] = b;
  j["critical_stage"] = r.critical_stage;
  const TimeShares shares = step_time_shares(r);
  nlohmann::ordered_json ts = nlohmann::ordered_json::object();
  for (const auto& name : time_share_classes()) ts[name] = time_share(shares, name);
  j["time_shares"] = ts;  // of the step on the critical stage, by kernel class
  j["memory_GB"] = {{"weights", r.memory.weights_GB},     {"gradients", r.memory.gradients_GB},
                    {"optimizer", r.memory.optimizer_GB}, {"activations", r.memory.activations_GB},
                    {"working_set", r.memory.working_GB}, {"reserve", r.memory.reserve_GB},
                    {"total", r.memory.total_GB()},       {"capacity", r.memory_capacity_GB}};
  j["memory_stage"] = r.memory.stage;  // the pipeline stage memory_GB is of
  nlohmann::ordered_json u = nlohmann::ordered_json::object();
  for (const auto& [kind, value] : r.link_utilization) u[kind] = value;
  j["link_utilization"] = u;
  nlohmann::ordered_json c = nlohmann::ordered_json::object();
  for (const auto& [name, seconds] : r.collective_times) c[name] = seconds;
  j["collective_time_s"] = c;
  j["time_to_train_days"] = r.time_to_train_days;
  j["gpu_hours"] = r.gpu_hours;
  j["cost"] = r.cost;
  return j.dump(2) + "\n";
}

std::string step_trace_json(const StepReport& r) {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& op : r.timeline) {
    events.push_back({{"name", op.name},
                      {"ph", "X"},
                      {"ts", core::s_to_us(op.start_s)},
                      {"dur", core::s_to_us(op.end_s - op.start_s)},
                      {"pid", op.stage},
                      {"tid", op.stream == "compute" ? 0 : 1}});
    // The kernels of micro-batch 0 (every chunk, forward and backward), laid end to end over
    // the op's compute time, on their own track.
    if (op.micro_batch != 0 || op.chunk < 0 || r.program.chunks.empty()) continue;
    const auto& c =
        r.program.chunks[static_cast<std::size_t>(op.stage)][static_cast<std::size_t>(op.chunk)];
    const double total = op.forward ? c.forward_s : c.backward_s;
    const double stretch = total > 0 ? op.compute_s / total : 1.0;
    double at = op.start_s;
    auto emit = [&](const workload::Kernel& k, int layer) {
      events.push_back({{"name", k.name},
                        {"ph", "X"},
                        {"ts", core::s_to_us(at)},
                        {"dur", core::s_to_us(k.time_s * stretch)},
                        {"pid", op.stage},
                        {"tid", 2},
                        {"args",
                         {{"shape", k.shape},
                          {"layer", layer},
                          {"GFLOP", k.flops / 1e9},
                          {"MB", k.bytes / 1e6},
                          {"limiter", workload::to_string(k.limiter)}}}});
      at += k.time_s * stretch;
    };
    int layer = c.first_layer;
    for (const auto& b : c.blocks) {
      const bool is_layer = b.label.starts_with("dense layer") || b.label.starts_with("MoE layer");
      for (int i = 0; i < b.count; ++i) {
        const int id = is_layer ? layer++ : -1;
        if (!op.forward)
          for (const auto& k : b.recompute) emit(k, id);
        for (const auto& k : op.forward ? b.forward : b.backward) emit(k, id);
      }
    }
  }
  std::set<int> stages;
  for (const auto& op : r.timeline) stages.insert(op.stage);
  for (int s : stages) {
    events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", s},
                      {"args", {{"name", fmt::format("stage {} (rank class)", s)}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", s},
                      {"tid", 0},
                      {"args", {{"name", "compute + TP/EP"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", s},
                      {"tid", 1},
                      {"args", {{"name", "DP / FSDP comm"}}}});
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", s},
                      {"tid", 2},
                      {"args", {{"name", "kernels (micro-batch 0)"}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace twin::sim
