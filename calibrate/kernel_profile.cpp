#include "calibrate/kernel_profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "calibrate/detail/object_reader.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::calibrate {
namespace {

using detail::figure_json;
using detail::json;
using detail::ObjectReader;

AttentionTable read_attention(ObjectReader r) {
  AttentionTable t;
  const json& impl = r.require("implementation");
  const json& src = r.require("source");
  if (!impl.is_string() || !src.is_string() || src.get<std::string>().empty())
    throw r.error("source", "implementation and source are required text");
  t.implementation = impl.get<std::string>();
  t.source = src.get<std::string>();
  t.head_dims = r.numbers(r.require("head_dims"), "head_dims");
  t.seq_lens = r.numbers(r.require("seq_lens"), "seq_lens");
  for (const char* key : {"fwd_tflops", "bwd_tflops"}) {
    const json& rows = r.require(key);
    if (!rows.is_array() || rows.size() != t.head_dims.size())
      throw r.error(key, fmt::format("expected {} rows (one per head dim)", t.head_dims.size()));
    auto& table = std::string(key) == "fwd_tflops" ? t.fwd_tflops : t.bwd_tflops;
    for (const auto& row : rows) {
      table.push_back(r.numbers(row, key));
      if (table.back().size() != t.seq_lens.size())
        throw r.error(key, fmt::format("each row needs {} values (one per sequence length)",
                                       t.seq_lens.size()));
    }
  }
  r.finish();
  if (!std::is_sorted(t.head_dims.begin(), t.head_dims.end()) ||
      !std::is_sorted(t.seq_lens.begin(), t.seq_lens.end()))
    throw r.error("head_dims", "head_dims and seq_lens must be ascending");
  return t;
}

/// Index i and weight w with x between grid[i] and grid[i + 1] (w of grid[i + 1]), clamped.
std::pair<std::size_t, double> bracket(const std::vector<double>& grid, double x, bool log) {
  if (grid.size() == 1 || x <= grid.front()) return {0, 0.0};
  if (x >= grid.back()) return {grid.size() - 2, 1.0};
  std::size_t i = 0;
  while (grid[i + 1] < x) ++i;
  const double a = log ? std::log(grid[i]) : grid[i], b = log ? std::log(grid[i + 1]) : grid[i + 1];
  return {i, ((log ? std::log(x) : x) - a) / (b - a)};
}

}  // namespace

double AttentionTable::tflops(bool forward, double head_dim, double seq_len) const {
  const auto& table = forward ? fwd_tflops : bwd_tflops;
  const auto [i, wi] = bracket(head_dims, head_dim, false);
  const auto [j, wj] = bracket(seq_lens, seq_len, true);
  const std::size_t last = seq_lens.size() - 1;
  // Beyond the longest measured length: R(s) = R_inf s / (s + s0) through the row's last two
  // points (s1, r1), (s2, r2), i.e. s0 = (r2 - r1) / (r1 / s1 - r2 / s2).
  auto growth = [&](std::size_t row) {
    if (seq_len <= seq_lens.back() || last == 0) return 1.0;
    const double s1 = seq_lens[last - 1], s2 = seq_lens[last];
    const double r1 = table[row][last - 1], r2 = table[row][last];
    if (!(r2 > r1) || !(r1 / s1 > r2 / s2)) return 1.0;
    const double s0 = (r2 - r1) / (r1 / s1 - r2 / s2);
    return (seq_len / (seq_len + s0)) / (s2 / (s2 + s0));
  };
  auto at = [&](std::size_t a, std::size_t b) {
    const std::size_t row = std::min(a, table.size() - 1);
    return table[row][std::min(b, last)] * (b >= last ? growth(row) : 1.0);
  };
  const double lo = (1 - wj) * at(i, j) + wj * at(i, j + 1);
  const double hi = (1 - wj) * at(i + 1, j) + wj * at(i + 1, j + 1);
  return (1 - wi) * lo + wi * hi;
}

const std::vector<AttentionKernel>& attention_kernels() {
  static const std::vector<AttentionKernel> kinds = {
      {"flash", "flash_attention", "the GPU's current flash kernels",
       &KernelProfile::flash_attention},
      {"flash2", "flash_attention_2", "FlashAttention-2", &KernelProfile::flash_attention_2},
      {"flash1", "flash_attention_1", "FlashAttention 1", &KernelProfile::flash_attention_1},
      {"cudnn", "cudnn_attention",
       "cuDNN's fused attention (Transformer Engine's choice on Hopper)",
       &KernelProfile::cudnn_attention},
  };
  return kinds;
}

const AttentionKernel* find_attention_kernel(const std::string& name) {
  for (const AttentionKernel& kind : attention_kernels())
    if (name == kind.name) return &kind;
  return nullptr;
}

const std::vector<AttentionChoice>& attention_choices() {
  static const std::vector<AttentionChoice> choices = [] {
    std::vector<AttentionChoice> out{
        {"auto", "Transformer Engine's choice, cudnn where the profile measures it, else flash"}};
    for (const AttentionKernel& kind : attention_kernels())
      out.push_back({kind.name, kind.description});
    out.push_back({"unfused", "scores in HBM"});
    return out;
  }();
  return choices;
}

bool is_attention_choice(const std::string& name) {
  for (const AttentionChoice& c : attention_choices())
    if (c.name == name) return true;
  return false;
}

const AttentionKernel* resolve_attention_kernel(const KernelProfile& k, const std::string& name) {
  if (name == "auto") return find_attention_kernel(k.cudnn_attention ? "cudnn" : "flash");
  return find_attention_kernel(name);
}

double PowerClock::clock_MHz(double limit_W) const {
  if (!(limit_W >= min_limit_W.value && limit_W <= max_limit_W.value))
    throw core::Error("cluster.gpu_power_w", fmt::format("{}", limit_W),
                      fmt::format("outside the power limits this GPU accepts, {:g} to {:g} W",
                                  min_limit_W.value, max_limit_W.value));
  const double ratio = (limit_W - idle_W.value) / (reference_W.value - idle_W.value);
  return std::min(max_clock_MHz.value,
                  reference_clock_MHz.value * std::pow(ratio, 1.0 / exponent.value));
}

namespace detail {

PowerClock read_power_clock(ObjectReader r) {
  PowerClock p;
  p.reference_W = r.positive_figure("reference_W");
  p.reference_clock_MHz = r.positive_figure("reference_clock_MHz");
  p.idle_W = r.positive_figure("idle_W");
  p.exponent = r.positive_figure("exponent");
  p.max_clock_MHz = r.positive_figure("max_clock_MHz");
  p.min_limit_W = r.positive_figure("min_limit_W");
  p.max_limit_W = r.positive_figure("max_limit_W");
  r.finish();
  if (!(p.idle_W.value < p.min_limit_W.value))
    throw r.error("idle_W", "must be below min_limit_W: a limit at idle power leaves no clock");
  if (!(p.min_limit_W.value <= p.reference_W.value && p.reference_W.value <= p.max_limit_W.value))
    throw r.error("reference_W", "must lie within [min_limit_W, max_limit_W]");
  if (!(p.reference_clock_MHz.value <= p.max_clock_MHz.value))
    throw r.error("reference_clock_MHz", "must not exceed max_clock_MHz");
  return p;
}

json power_clock_json(const PowerClock& p) {
  return {{"reference_W", figure_json(p.reference_W)},
          {"reference_clock_MHz", figure_json(p.reference_clock_MHz)},
          {"idle_W", figure_json(p.idle_W)},
          {"exponent", figure_json(p.exponent)},
          {"max_clock_MHz", figure_json(p.max_clock_MHz)},
          {"min_limit_W", figure_json(p.min_limit_W)},
          {"max_limit_W", figure_json(p.max_limit_W)}};
}

KernelProfile parse_kernel_profile(const std::string& json_text, const std::string& source) {
  const json j = json::parse(json_text);
  ObjectReader r(j, "kernels", source);
  KernelProfile k;
  k.present = true;
  k.sm_count = r.positive_figure("sm_count");
  k.gemm_tile_m = r.positive_figure("gemm_tile_m");
  k.gemm_tile_n = r.positive_figure("gemm_tile_n");
  k.gemm_k_half = r.non_negative_figure("gemm_k_half");
  if (const json* tiles = r.find("gemm_tiles")) {
    ObjectReader t(*tiles, "kernels.gemm_tiles", source);
    GemmTiles g;
    g.source = t.text("source");
    const json& shapes = t.require("shapes");
    if (!shapes.is_array() || shapes.empty())
      throw t.error("shapes", "expected a list of [M, N] tiles");
    for (const json& s : shapes) {
      const std::vector<double> mn = t.numbers(s, "shapes");
      if (mn.size() != 2) throw t.error("shapes", "each tile is [M, N]");
      g.shapes.emplace_back(mn[0], mn[1]);
    }
    if (const json* split = t.find("split_k")) {
      for (double f : t.numbers(*split, "split_k")) {
        if (f < 2 || f != std::floor(f) || f > 64)
          throw t.error("split_k", "factors are whole numbers from 2 to 64");
        g.split_k.push_back(static_cast<int>(f));
      }
    }
    if (const json* sk = t.find("stream_k")) {
      if (!sk->is_boolean()) throw t.error("stream_k", "expected true or false");
      g.stream_k = sk->get<bool>();
    }
    t.finish();
    k.gemm_tiles = std::move(g);
    k.gemm_tile_half_intensity = r.non_negative_figure("gemm_tile_half_intensity");
  }
  ObjectReader eff(r.require("gemm_efficiency"), "kernels.gemm_efficiency", source);
  for (auto it = j["gemm_efficiency"].begin(); it != j["gemm_efficiency"].end(); ++it) {
    k.gemm_efficiency[it.key()] = eff.fraction_figure(it.key());
  }
  eff.finish();
  if (r.find("gemm16_efficiency_prior") != nullptr)
    k.gemm16_efficiency_prior = r.fraction_figure("gemm16_efficiency_prior");
  if (const json* pc = r.find("power_clock"))
    k.power_clock = read_power_clock(ObjectReader(*pc, "kernels.power_clock", source));
  k.hbm_achievable_GBps = r.positive_figure("hbm_achievable_GBps");
  if (r.find("memory_bound_efficiency") != nullptr)
    k.memory_bound_efficiency = r.fraction_figure("memory_bound_efficiency");
  k.launch_overhead_us = r.non_negative_figure("launch_overhead_us");
  k.nccl_channels = r.positive_figure("nccl_channels");
  k.nccl_hbm_bytes_per_byte = r.positive_figure("nccl_hbm_bytes_per_byte");
  for (const AttentionKernel& kind : attention_kernels())
    if (const json* fa = r.find(kind.field))
      k.*kind.table =
          read_attention(ObjectReader(*fa, std::string("kernels.") + kind.field, source));
  r.finish();
  if (k.nccl_channels.value >= k.sm_count.value)
    throw r.error("nccl_channels", "must be fewer than kernels.sm_count");
  return k;
}

std::string kernel_profile_json(const KernelProfile& k) {
  json j;
  j["sm_count"] = figure_json(k.sm_count);
  j["gemm_tile_m"] = figure_json(k.gemm_tile_m);
  j["gemm_tile_n"] = figure_json(k.gemm_tile_n);
  j["gemm_k_half"] = figure_json(k.gemm_k_half);
  if (k.gemm_tiles) {
    json shapes = json::array();
    for (const auto& [m, n] : k.gemm_tiles->shapes) shapes.push_back({m, n});
    j["gemm_tiles"] = {
        {"source", k.gemm_tiles->source}, {"shapes", shapes}, {"stream_k", k.gemm_tiles->stream_k}};
    if (!k.gemm_tiles->split_k.empty()) j["gemm_tiles"]["split_k"] = k.gemm_tiles->split_k;
    j["gemm_tile_half_intensity"] = figure_json(k.gemm_tile_half_intensity);
  }
  json eff = json::object();
  for (const auto& [dtype, f] : k.gemm_efficiency) eff[dtype] = figure_json(f);
  j["gemm_efficiency"] = eff;
  if (k.gemm16_efficiency_prior)
    j["gemm16_efficiency_prior"] = figure_json(*k.gemm16_efficiency_prior);
  if (k.power_clock) j["power_clock"] = power_clock_json(*k.power_clock);
  j["hbm_achievable_GBps"] = figure_json(k.hbm_achievable_GBps);
  j["memory_bound_efficiency"] = figure_json(k.memory_bound_efficiency);
  j["launch_overhead_us"] = figure_json(k.launch_overhead_us);
  j["nccl_channels"] = figure_json(k.nccl_channels);
  j["nccl_hbm_bytes_per_byte"] = figure_json(k.nccl_hbm_bytes_per_byte);
  for (const AttentionKernel& kind : attention_kernels()) {
    const auto& table = k.*kind.table;
    if (!table) continue;
    const auto& t = *table;
    j[kind.field] = {{"implementation", t.implementation}, {"source", t.source},
                     {"head_dims", t.head_dims},           {"seq_lens", t.seq_lens},
                     {"fwd_tflops", t.fwd_tflops},         {"bwd_tflops", t.bwd_tflops}};
  }
  return j.dump();
}

}  // namespace detail
}  // namespace twin::calibrate
