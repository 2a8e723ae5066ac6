#include "calibrate/profile.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "calibrate/detail/object_reader.hpp"
#include "calibrate/shipped_profiles.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/text.hpp"

namespace twin::calibrate {
namespace {

using detail::figure_json;
using detail::json;
using detail::ObjectReader;

NcclFigures::ByProtocol read_by_protocol(ObjectReader r, const json& j) {
  NcclFigures::ByProtocol out;
  for (const auto& [protocol, value] : j.items()) {
    const double v = r.number(protocol, 0, true);
    if (!(v >= 0)) throw r.error(protocol, "must be a non-negative number");
    out[protocol] = v;
  }
  r.finish();
  return out;
}

NcclFigures::ByAlgorithm read_by_algorithm(ObjectReader r, const json& j) {
  NcclFigures::ByAlgorithm out;
  for (const auto& [algorithm, protocols] : j.items())
    out[algorithm] = read_by_protocol(r.object(algorithm), protocols);
  r.finish();
  return out;
}

/// The "nccl.tuner" object: NCCL's search steps, link view and per-channel ceilings.
NcclTunerFigures read_nccl_tuner(ObjectReader r) {
  NcclTunerFigures t;
  t.source = r.text("source");
  t.speeds_intra_GBps = r.numbers(r.require("speeds_intra_GBps"), "speeds_intra_GBps");
  t.speeds_inter_GBps = r.numbers(r.require("speeds_inter_GBps"), "speeds_inter_GBps");
  for (const auto* speeds : {&t.speeds_intra_GBps, &t.speeds_inter_GBps})
    if (!std::is_sorted(speeds->rbegin(), speeds->rend()))
      throw r.error(speeds == &t.speeds_intra_GBps ? "speeds_intra_GBps" : "speeds_inter_GBps",
                    "the search's steps go from the highest down");
  t.nvlink_GBps = r.number("nvlink_GBps", 0, true);
  t.pcie_GBps = r.number("pcie_GBps", 0, true);
  if (!(t.nvlink_GBps > 0)) throw r.error("nvlink_GBps", "must be positive");
  if (!(t.pcie_GBps > 0)) throw r.error("pcie_GBps", "must be positive");
  t.max_channels = r.count("max_channels", true);
  if (t.max_channels < 1) throw r.error("max_channels", "must be at least 1");
  t.dup_min_GBps = r.number("dup_min_GBps", 0, true);
  t.dup_keep_below_GBps = r.number("dup_keep_below_GBps", 0, false);
  ObjectReader caps = r.object("per_channel_max_GBps");
  for (const auto& [cell, values] : r.require("per_channel_max_GBps").items()) {
    std::vector<double> v = caps.numbers(caps.require(cell), cell);
    if (v.size() != 3) throw caps.error(cell, "expected 3 numbers: 1 node, 2 nodes, more nodes");
    t.per_channel_max_GBps[cell] = std::move(v);
  }
  caps.finish();
  r.finish();
  return t;
}

/// The "nccl" section: NCCL's tuning tables by name (validated against netsim's vocabulary
/// when a simulator builds its model from them).
NcclFigures read_nccl(ObjectReader r) {
  NcclFigures n;
  n.version = r.text("version");
  n.source = r.text("source");
  n.base_latency_us = read_by_algorithm(r.object("base_latency_us"), r.require("base_latency_us"));
  {
    ObjectReader hops = r.object("hop_latency_us");
    for (const auto& [hop, algorithms] : r.require("hop_latency_us").items())
      n.hop_latency_us[hop] = read_by_algorithm(hops.object(hop), algorithms);
    hops.finish();
  }
  n.bandwidth_factor =
      read_by_algorithm(r.object("bandwidth_factor"), r.require("bandwidth_factor"));
  n.payload_efficiency =
      read_by_protocol(r.object("payload_efficiency"), r.require("payload_efficiency"));
  const json& ll = r.require("ll_max_busbw_GBps");
  if (!ll.is_array() || ll.size() != 3)
    throw r.error("ll_max_busbw_GBps", "expected 3 numbers: 1 node, 2 nodes, more nodes");
  for (const auto& v : ll) {
    if (!v.is_number() || !(v.get<double>() > 0))
      throw r.error("ll_max_busbw_GBps", "expected positive numbers");
    n.ll_max_busbw_GBps.push_back(v.get<double>());
  }
  if (const json* tree = r.find("tree_size_factor")) {
    ObjectReader t(*tree, r.path() + ".tree_size_factor", r.source());
    for (const auto& [protocol, values] : tree->items()) {
      if (!values.is_array()) throw t.error(protocol, "expected a list of factors");
      for (const auto& v : values) {
        if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1))
          throw t.error(protocol, "factors must be within (0, 1]");
        n.tree_size_factor[protocol].push_back(v.get<double>());
      }
    }
  }
  n.net_overhead_us = r.number("net_overhead_us", 0, true);
  n.ring_plateau_factor = r.number("ring_plateau_factor", 1, true);
  n.channels = r.number("channels", 0, true);
  if (!(n.channels >= 1)) throw r.error("channels", "must be at least 1");
  n.p2p_channel_GBps = r.number("p2p_channel_GBps", 0, false);
  n.p2p_channels = r.number("p2p_channels", 0, false);
  if (r.find("tuner") != nullptr) n.tuner = read_nccl_tuner(r.object("tuner"));
  if (const json* fitted = r.find("fitted")) {
    if (!fitted->is_object()) throw r.error("fitted", "expected an object of provenance texts");
    for (const auto& [cell, text] : fitted->items()) {
      if (!text.is_string()) throw r.error("fitted." + cell, "expected text");
      n.fitted[cell] = text.get<std::string>();
    }
  }
  r.finish();
  return n;
}

json nccl_json(const NcclFigures& n) {
  json j;
  j["version"] = n.version;
  j["source"] = n.source;
  j["base_latency_us"] = n.base_latency_us;
  j["hop_latency_us"] = n.hop_latency_us;
  j["bandwidth_factor"] = n.bandwidth_factor;
  j["payload_efficiency"] = n.payload_efficiency;
  j["ll_max_busbw_GBps"] = n.ll_max_busbw_GBps;
  if (!n.tree_size_factor.empty()) j["tree_size_factor"] = n.tree_size_factor;
  j["net_overhead_us"] = n.net_overhead_us;
  j["ring_plateau_factor"] = n.ring_plateau_factor;
  j["channels"] = n.channels;
  if (n.p2p_channel_GBps > 0) j["p2p_channel_GBps"] = n.p2p_channel_GBps;
  if (n.p2p_channels > 0) j["p2p_channels"] = n.p2p_channels;
  if (!n.fitted.empty()) j["fitted"] = n.fitted;
  if (n.tuner) {
    const NcclTunerFigures& t = *n.tuner;
    json tj;
    tj["source"] = t.source;
    tj["speeds_intra_GBps"] = t.speeds_intra_GBps;
    tj["speeds_inter_GBps"] = t.speeds_inter_GBps;
    tj["nvlink_GBps"] = t.nvlink_GBps;
    tj["pcie_GBps"] = t.pcie_GBps;
    tj["max_channels"] = t.max_channels;
    tj["dup_min_GBps"] = t.dup_min_GBps;
    if (t.dup_keep_below_GBps > 0) tj["dup_keep_below_GBps"] = t.dup_keep_below_GBps;
    tj["per_channel_max_GBps"] = t.per_channel_max_GBps;
    j["tuner"] = tj;
  }
  return j;
}

}  // namespace

double Profile::gemm_efficiency(double m, double n, double k) const {
  const double tile = gemm_tile.value, half = gemm_half_dim.value;
  auto factor = [&](double d) {
    if (d <= 0) return 0.0;
    const double quantized = d / (std::ceil(d / tile) * tile);
    return quantized * d / (d + half);
  };
  return gemm_peak_efficiency.value * factor(m) * factor(n) * factor(k);
}

double Profile::peak_flops(const std::string& dtype) const {
  auto it = peak_tflops.find(dtype);
  if (it == peak_tflops.end()) {
    std::vector<std::string> names;
    for (const auto& [k, v] : peak_tflops) names.push_back(k);
    throw core::Error("dtype", dtype,
                      fmt::format("profile '{}' has no peak for this dtype; it has {}{}", name,
                                  core::quoted_list(names), core::did_you_mean(dtype, names)));
  }
  return it->second.value * 1e12;
}

double Profile::nic_payload_Bps() const {
  return nic_gbps.value * 1e9 / 8.0 * nic_efficiency.value;
}

const CollectiveCurve* Profile::find_curve(const std::string& op, const std::string& algorithm,
                                           const std::string& scope, double size_bytes) const {
  return find_curve(op, algorithm, "", scope, size_bytes, 0);
}

const CollectiveCurve* Profile::find_curve(const std::string& op, const std::string& algorithm,
                                           const std::string& protocol, const std::string& scope,
                                           double size_bytes, int nodes) const {
  // Fitted curves (measured at a scale) win over unfitted ones; among them the nearest scale
  // (in log nodes), then the nearest size range (in log size).
  const CollectiveCurve* best = nullptr;
  double best_scale = 0, best_size = 0;
  bool best_fitted = false;
  for (const auto& c : collectives) {
    if (c.op != op || c.algorithm != algorithm || c.scope != scope) continue;
    if (!protocol.empty() && c.protocol != protocol) continue;
    const bool fitted = c.nodes > 0;
    const double scale =
        fitted && nodes > 0 ? std::abs(std::log(static_cast<double>(c.nodes) / nodes)) : 0.0;
    double size = 0;  // 0 inside the fitted range or for "any size"
    if (c.max_bytes > 0 && size_bytes > 0) {
      if (size_bytes < c.min_bytes) size = std::log(c.min_bytes / size_bytes);
      if (size_bytes > c.max_bytes) size = std::log(size_bytes / c.max_bytes);
    }
    const bool better =
        best == nullptr || (fitted && !best_fitted) ||
        (fitted == best_fitted && (scale < best_scale - 1e-12 ||
                                   (std::abs(scale - best_scale) <= 1e-12 && size < best_size)));
    if (better) {
      best = &c;
      best_scale = scale;
      best_size = size;
      best_fitted = fitted;
    }
  }
  if (best == nullptr && !protocol.empty() && protocol != "simple")
    return find_curve(op, algorithm, "simple", scope, size_bytes, nodes);
  return best;
}

void Profile::replace_curves(const std::vector<CollectiveCurve>& curves) {
  for (const auto& c : curves) {
    std::erase_if(collectives, [&](const CollectiveCurve& old) {
      // Curves fitted at other scales stay: each scale keeps its own measurement.
      return old.op == c.op && old.algorithm == c.algorithm && old.protocol == c.protocol &&
             old.scope == c.scope &&
             (old.nodes == 0 || (old.nodes == c.nodes && old.gpus_per_node == c.gpus_per_node));
    });
  }
  collectives.insert(collectives.end(), curves.begin(), curves.end());
}

Profile parse_profile(const std::string& json_text, const std::string& source) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error& e) {
    throw core::Error("", "", fmt::format("malformed JSON at byte {}: {}", e.byte, e.what()),
                      source);
  } catch (const json::exception& e) {  // e.g. a number too large for a double (1e8609)
    throw core::Error("", "", fmt::format("unreadable JSON: {}", e.what()), source);
  }
  ObjectReader top(j, "", source);
  Profile p;
  if (top.text("format") != "clustertwin-profile")
    throw top.error("format", "expected \"clustertwin-profile\"");
  p.version = top.count("version", true);
  if (p.version != Profile::kVersion)
    throw core::Error(
        "version", std::to_string(p.version),
        fmt::format("unsupported profile version; this build reads {}", Profile::kVersion), source);
  p.name = top.text("name");
  p.description = top.text("description", false);

  ObjectReader gpu = top.object("gpu");
  p.gpu_model = gpu.text("model");
  ObjectReader peaks = gpu.object("peak_tflops");
  for (const auto& [dtype, value] : gpu.require("peak_tflops").items())
    p.peak_tflops[dtype] = peaks.positive_figure(dtype);
  if (p.peak_tflops.empty()) throw gpu.error("peak_tflops", "needs at least one dtype");
  p.hbm_GB = gpu.positive_figure("hbm_GB");
  p.hbm_GBps = gpu.positive_figure("hbm_GBps");
  p.hbm_efficiency = gpu.fraction_figure("hbm_efficiency");
  p.gemm_peak_efficiency = gpu.fraction_figure("gemm_peak_efficiency");
  p.gemm_tile = gpu.positive_figure("gemm_tile");
  p.gemm_half_dim = gpu.non_negative_figure("gemm_half_dim");
  gpu.finish();

  ObjectReader nvlink = top.object("nvlink");
  p.nvlink_GBps = nvlink.positive_figure("bandwidth_GBps");
  p.nvlink_latency_us = nvlink.figure("latency_us");
  nvlink.finish();

  ObjectReader nic = top.object("nic");
  p.nic_gbps = nic.positive_figure("line_rate_gbps");
  p.nic_efficiency = nic.fraction_figure("payload_efficiency");
  p.nic_latency_us = nic.figure("latency_us");
  nic.finish();

  ObjectReader overlap = top.object("overlap");
  p.overlap_compute_slowdown = overlap.figure("compute_slowdown");
  overlap.finish();

  if (const json* kernels = top.find("kernels"))
    p.kernels = detail::parse_kernel_profile(kernels->dump(), source);

  const json& curves = top.require("collectives");
  if (!curves.is_array()) throw top.error("collectives", "expected a list");
  for (std::size_t i = 0; i < curves.size(); ++i) {
    ObjectReader r(curves[i], fmt::format("collectives[{}]", i), source);
    CollectiveCurve c;
    c.op = r.text("op");
    c.algorithm = r.text("algorithm");
    if (r.find("protocol") != nullptr) c.protocol = r.text("protocol");
    if (c.protocol != "ll" && c.protocol != "ll128" && c.protocol != "simple")
      throw r.error("protocol", "must be \"ll\", \"ll128\" or \"simple\"");
    c.scope = r.text("scope");
    if (c.scope != "intra_node" && c.scope != "inter_node")
      throw r.error("scope", "must be \"intra_node\" or \"inter_node\"");
    c.latency_us = r.figure("latency_us", false);
    c.efficiency = r.figure("efficiency");
    c.bus_bandwidth_GBps = r.figure("bus_bandwidth_GBps", false);
    c.min_bytes = r.number("min_bytes", 0, false);
    c.max_bytes = r.number("max_bytes", 0, false);
    c.nodes = r.count("nodes", false);
    c.gpus_per_node = r.count("gpus_per_node", false);
    if (const json* fit = r.find("fit")) {
      ObjectReader f(*fit, r.path() + ".fit", source);
      FitQuality q;
      q.r2 = f.number("r2", 0, true);
      q.median_abs_error_pct = f.number("median_abs_error_pct", 0, true);
      q.max_abs_error_pct = f.number("max_abs_error_pct", 0, true);
      q.loo_median_abs_error_pct = f.number("loo_median_abs_error_pct", 0, true);
      q.points = f.count("points", true);
      f.finish();
      c.fit = q;
    }
    r.finish();
    if (c.latency_us.value < 0) throw r.error("latency_us", "must not be negative");
    if (!(c.efficiency.value > 0 && c.efficiency.value <= 1.5))
      throw r.error("efficiency", "must be within (0, 1.5]");
    p.collectives.push_back(std::move(c));
  }
  if (top.find("nccl") != nullptr) p.nccl = read_nccl(top.object("nccl"));
  top.finish();
  return p;
}

std::string to_json(const Profile& p) {
  json j;
  j["format"] = "clustertwin-profile";
  j["version"] = p.version;
  j["name"] = p.name;
  j["description"] = p.description;
  json peaks = json::object();
  for (const auto& [dtype, f] : p.peak_tflops) peaks[dtype] = figure_json(f);
  j["gpu"] = {{"model", p.gpu_model},
              {"peak_tflops", peaks},
              {"hbm_GB", figure_json(p.hbm_GB)},
              {"hbm_GBps", figure_json(p.hbm_GBps)},
              {"hbm_efficiency", figure_json(p.hbm_efficiency)},
              {"gemm_peak_efficiency", figure_json(p.gemm_peak_efficiency)},
              {"gemm_tile", figure_json(p.gemm_tile)},
              {"gemm_half_dim", figure_json(p.gemm_half_dim)}};
  j["nvlink"] = {{"bandwidth_GBps", figure_json(p.nvlink_GBps)},
                 {"latency_us", figure_json(p.nvlink_latency_us)}};
  j["nic"] = {{"line_rate_gbps", figure_json(p.nic_gbps)},
              {"payload_efficiency", figure_json(p.nic_efficiency)},
              {"latency_us", figure_json(p.nic_latency_us)}};
  j["overlap"] = {{"compute_slowdown", figure_json(p.overlap_compute_slowdown)}};
  json curves = json::array();
  for (const auto& c : p.collectives) {
    json cj = {{"op", c.op}, {"algorithm", c.algorithm}};
    if (c.protocol != "simple") cj["protocol"] = c.protocol;
    cj["scope"] = c.scope;
    if (!c.latency_us.source.empty()) cj["latency_us"] = figure_json(c.latency_us);
    cj["efficiency"] = figure_json(c.efficiency);
    if (!c.bus_bandwidth_GBps.source.empty())
      cj["bus_bandwidth_GBps"] = figure_json(c.bus_bandwidth_GBps);
    if (c.max_bytes > 0) {
      cj["min_bytes"] = c.min_bytes;
      cj["max_bytes"] = c.max_bytes;
    }
    if (c.nodes > 0) {
      cj["nodes"] = c.nodes;
      cj["gpus_per_node"] = c.gpus_per_node;
    }
    if (c.fit)
      cj["fit"] = {{"r2", c.fit->r2},
                   {"median_abs_error_pct", c.fit->median_abs_error_pct},
                   {"max_abs_error_pct", c.fit->max_abs_error_pct},
                   {"loo_median_abs_error_pct", c.fit->loo_median_abs_error_pct},
                   {"points", c.fit->points}};
    curves.push_back(cj);
  }
  j["collectives"] = curves;
  if (p.kernels.present) j["kernels"] = json::parse(detail::kernel_profile_json(p.kernels));
  if (p.nccl) j["nccl"] = nccl_json(*p.nccl);
  return j.dump(2) + "\n";
}

std::vector<std::string> shipped_profile_names() {
  std::vector<std::string> names;
  for (const auto& [name, text] : detail::shipped_profiles()) names.push_back(name);
  return names;
}

Profile load_profile(const std::string& name_or_path) {
  const bool is_path =
      name_or_path.find('/') != std::string::npos ||
      (name_or_path.size() > 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".json") == 0);
  if (!is_path) {
    for (const auto& [name, text] : detail::shipped_profiles())
      if (name == name_or_path) return parse_profile(text, "<profile " + name + ">");
    throw core::Error(
        "profile", name_or_path,
        "no shipped profile of that name; shipped: " + core::quoted_list(shipped_profile_names()) +
            core::did_you_mean(name_or_path, shipped_profile_names()) +
            " (or give a path to a profile .json)");
  }
  return parse_profile(core::read_text_file(name_or_path, "profile file"), name_or_path);
}

}  // namespace twin::calibrate
