#include "twin/collective_sweep.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "calibrate/calibration.hpp"
#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/stats.hpp"
#include "core/units.hpp"
#include "netsim/collective.hpp"
#include "topology/fabric.hpp"
#include "topology/fat_tree.hpp"
#include "topology/placement.hpp"
#include "twin/cluster.hpp"

namespace twin::sim {
namespace {

constexpr double kElementBytes = 4;
constexpr double kMaxBytes = 1024.0 * 1024 * 1024 * 1024;

double parse_size(const std::string& token) {
  if (token.empty()) throw core::Error("--sizes", token, "empty size");
  std::size_t used = 0;
  double value = 0;
  try {
    value = std::stod(token, &used);
  } catch (const std::exception&) {
    throw core::Error("--sizes", token, "not a size (e.g. 32M, 1G, 4096)");
  }
  std::string unit = token.substr(used);
  for (auto& ch : unit) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I') unit.pop_back();
  double scale = 1;
  if (unit == "K")
    scale = 1024.0;
  else if (unit == "M")
    scale = 1024.0 * 1024;
  else if (unit == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!unit.empty())
    throw core::Error("--sizes", token, "unknown unit; use K, M, G or T (binary)");
  const double bytes = value * scale;
  // nccl-tests' smallest message is one element (4-byte float by default: a 3-byte all-reduce
  // has a count of 0); the largest is bounded by GPU memory (141 GB on an H200).
  if (!(bytes >= kElementBytes))
    throw core::Error("--sizes", token,
                      "sizes must be at least one 4-byte element (nccl-tests' float)");
  if (!(bytes <= kMaxBytes))
    throw core::Error("--sizes", token, "larger than 1 TiB: more than any GPU's memory");
  return std::round(bytes);
}

using core::median;

std::vector<int> all_gpus(int count) {
  std::vector<int> g(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) g[static_cast<std::size_t>(i)] = i;
  return g;
}

}  // namespace

std::vector<double> parse_sizes(const std::string& text) {
  std::vector<double> sizes;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const double from = parse_size(text.substr(0, colon)), to = parse_size(text.substr(colon + 1));
    if (to < from) throw core::Error("--sizes", text, "the range ends below its start");
    for (double s = from; s <= to; s *= 2) sizes.push_back(s);
    return sizes;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    sizes.push_back(parse_size(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return sizes;
}

std::vector<int> parse_node_counts(const std::string& text) {
  auto one = [&](const std::string& token) {
    std::size_t used = 0;
    int v = 0;
    try {
      v = std::stoi(token, &used);
    } catch (const std::exception&) {
      throw core::Error("--nodes", text, "not a node count (e.g. 16, 1:512, 2,4,8)");
    }
    if (used != token.size())
      throw core::Error("--nodes", text, "not a node count (e.g. 16, 1:512, 2,4,8)");
    if (v < 1) throw core::Error("--nodes", text, "node counts must be at least 1");
    return v;
  };
  std::vector<int> counts;
  if (const auto colon = text.find(':'); colon != std::string::npos) {
    const int from = one(text.substr(0, colon)), to = one(text.substr(colon + 1));
    if (to < from) throw core::Error("--nodes", text, "the range ends below its start");
    for (long n = from; n <= to; n *= 2) counts.push_back(static_cast<int>(n));
    return counts;
  }
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    counts.push_back(one(text.substr(start, comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return counts;
}

Scenario resized(const Scenario& scenario, int nodes, int gpus_per_node) {
  if (nodes < 1) throw core::Error("--nodes", std::to_string(nodes), "must be at least 1");
  if (gpus_per_node < 1)
    throw core::Error("--gpus-per-node", std::to_string(gpus_per_node), "must be at least 1");
  Scenario s = scenario;
  // NICs follow the GPUs where the scenario gives each GPU a whole number of them (one, or
  // several: 16 x 100 Gb/s for 8 GPUs keeps 2 per GPU); NICs shared by GPUs stay as they are
  // unless the resize leaves fewer GPUs than NICs, which then follow the GPUs one each.
  const int g = s.cluster.gpus_per_node, n = s.cluster.nics_per_node;
  s.cluster.nodes = nodes;
  s.cluster.gpus_per_node = gpus_per_node;
  // NICs that are not a whole number per GPU stay as given, and the fabric refuses them.
  if (n >= g && n % g == 0)
    s.cluster.nics_per_node = gpus_per_node * (n / g);
  else if (n < g && n > gpus_per_node)
    s.cluster.nics_per_node = gpus_per_node;
  return s;
}

SweepResult run_collective_sweep(const Scenario& scenario, const SweepSpec& spec) {
  // Collectives are measured on the healthy fabric, as nccl-tests runs on a fresh allocation:
  // the scenario's perturbations name parts of its own fabric, not of a resized one.
  Scenario s = resized(scenario, spec.nodes, spec.gpus_per_node);
  s.failed_switches.clear();
  s.failed_cables.clear();
  s.degraded_cables.clear();
  const Cluster cluster(std::move(s));
  const topology::Fabric& fabric = cluster.fabric();
  const calibrate::Profile profile =
      spec.profile.empty() ? cluster.profile() : calibrate::load_profile(spec.profile);
  if (spec.sizes.empty()) throw core::Error("--sizes", "", "no sizes to run");
  const netsim::CollectiveOp op = netsim::parse_op(spec.op, "--op");
  netsim::Choice choice = netsim::parse_choice(spec.algorithm, "--algo");
  if (!spec.protocol.empty() && spec.protocol != "auto")
    choice.protocol = netsim::parse_protocol(spec.protocol, "--proto");
  netsim::CollectiveSimulator sim(fabric, nullptr, profile, netsim::make_engine(spec.engine));
  std::vector<std::vector<int>> groups{all_gpus(fabric.gpu_count())};
  // An imported fabric (or drained hosts): the ranks go to usable hosts (topology/placement.hpp).
  if (fabric.is_explicit() || fabric.usable_host_count() < fabric.cluster().nodes) {
    const int ranks = spec.nodes * spec.gpus_per_node;
    groups = topology::place_job(fabric, ranks).map({all_gpus(ranks)});
  }
  SweepResult result{spec.op, spec.engine, profile.name, spec.nodes, spec.gpus_per_node, {}};
  for (double size : spec.sizes) {
    const auto r = sim.run(op, choice, groups, size);
    SweepRow row{size,
                 core::s_to_us(r.time_s),
                 r.algbw_GBps,
                 r.busbw_GBps,
                 std::string(netsim::to_text(r.algorithm)),
                 std::string(netsim::to_text(r.protocol)),
                 {},
                 0};
    if (r.fastest_algorithm && r.fastest_protocol) {
      row.fastest = fmt::format("{}/{}", netsim::to_text(*r.fastest_algorithm),
                                netsim::to_text(*r.fastest_protocol));
      row.fastest_time_us = core::s_to_us(r.fastest_time_s);
    }
    result.rows.push_back(std::move(row));
  }
  return result;
}

std::vector<SweepResult> run_scaling(const Scenario& scenario, const SweepSpec& spec,
                                     const std::vector<int>& node_counts) {
  // The largest scale must fit the fabric: say so before simulating the smaller ones.
  if (!node_counts.empty() && scenario.fabric.kind == "fat_tree") {
    const Scenario largest = resized(
        scenario, *std::max_element(node_counts.begin(), node_counts.end()), spec.gpus_per_node);
    (void)topology::FatTreeGeometry::derive(largest.cluster, largest.fabric);
  }
  std::vector<SweepResult> out;
  for (int nodes : node_counts) {
    SweepSpec s = spec;
    s.nodes = nodes;
    // A collective needs 2 ranks: one node of one GPU has nothing to run.
    if (nodes * s.gpus_per_node < 2) continue;
    out.push_back(run_collective_sweep(scenario, s));
  }
  if (out.empty()) throw core::Error("--nodes", "", "no node count with at least 2 GPUs");
  return out;
}

std::string scaling_table(const std::vector<SweepResult>& results) {
  const SweepResult& first = results.front();
  std::string out = fmt::format(
      "# clustertwin collective scaling: {}, {} GPUs per node, engine {}, profile {}\n"
      "# bus bandwidth (GB/s) and the algorithm/protocol NCCL's tuner would pick, per node count\n",
      first.op, first.gpus_per_node, first.engine, first.profile);
  out += fmt::format("{:>12}", "size (B)");
  for (const auto& r : results) out += fmt::format("  {:>22}", fmt::format("{} nodes", r.nodes));
  out += "\n";
  for (std::size_t i = 0; i < first.rows.size(); ++i) {
    out += fmt::format("{:>12.0f}", first.rows[i].size_bytes);
    for (const auto& r : results)
      out += fmt::format("  {:>8.2f} {:>13}", r.rows[i].busbw_GBps,
                         r.rows[i].algorithm + "/" + r.rows[i].protocol);
    out += "\n";
  }
  return out;
}

std::string scaling_json(const std::vector<SweepResult>& results) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& r : results) arr.push_back(nlohmann::ordered_json::parse(sweep_json(r)));
  return nlohmann::ordered_json{{"scaling", arr}}.dump(2) + "\n";
}

std::string sweep_table(const SweepResult& r) {
  std::string out = fmt::format(
      "# clustertwin collective: {} on {} nodes x {} GPUs ({} ranks), engine {}, profile {}\n",
      r.op, r.nodes, r.gpus_per_node, r.nodes * r.gpus_per_node, r.engine, r.profile);
  out += fmt::format("# Collective test starting: {}_perf\n", r.op);
  out += "#\n";
  out += fmt::format("#{:>12}  {:>12}  {:>8}  {:>16}  {:>10}  {:>8}  {:>8}\n", "size", "count",
                     "type", "algo/proto", "time", "algbw", "busbw");
  out += fmt::format("#{:>12}  {:>12}  {:>8}  {:>16}  {:>10}  {:>8}  {:>8}\n", "(B)", "(elements)",
                     "", "", "(us)", "(GB/s)", "(GB/s)");
  double sum = 0;
  for (const auto& row : r.rows) {
    out += fmt::format(" {:>12.0f}  {:>12.0f}  {:>8}  {:>16}  {:>10.2f}  {:>8.2f}  {:>8.2f}\n",
                       row.size_bytes, std::floor(row.size_bytes / 4), "float",
                       row.algorithm + "/" + row.protocol, row.time_us, row.algbw_GBps,
                       row.busbw_GBps);
    sum += row.busbw_GBps;
  }
  out += fmt::format("# Avg bus bandwidth    : {:.3f}\n",
                     r.rows.empty() ? 0.0 : sum / static_cast<double>(r.rows.size()));
  // NCCL runs what its own table ranks first, which is not always what runs fastest.
  for (const auto& row : r.rows)
    if (!row.fastest.empty())
      out += fmt::format(
          "# {:.0f} B: NCCL's tuner picks {}/{} ({:.2f} us); the simulation finds {} faster "
          "({:.2f} us)\n",
          row.size_bytes, row.algorithm, row.protocol, row.time_us, row.fastest,
          row.fastest_time_us);
  return out;
}

std::string sweep_json(const SweepResult& r) {
  nlohmann::ordered_json j;
  j["op"] = r.op;
  j["nodes"] = r.nodes;
  j["gpus_per_node"] = r.gpus_per_node;
  j["engine"] = r.engine;
  j["profile"] = r.profile;
  auto& rows = j["rows"] = nlohmann::ordered_json::array();
  for (const auto& row : r.rows)
    rows.push_back(
        {{"size_bytes", row.size_bytes},
         {"time_us", row.time_us},
         {"algbw_GBps", row.algbw_GBps},
         {"busbw_GBps", row.busbw_GBps},
         {"algorithm", row.algorithm},
         {"protocol", row.protocol},
         {"fastest",
          row.fastest.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(row.fastest)},
         {"fastest_time_us", row.fastest.empty() ? nlohmann::ordered_json()
                                                 : nlohmann::ordered_json(row.fastest_time_us)}});
  return j.dump(2) + "\n";
}

std::vector<Comparison> compare_log(const Scenario& scenario, const calibrate::NcclTestsLog& log,
                                    const std::string& profile, const std::string& algorithm,
                                    int nodes_override, int gpus_override) {
  const auto [nodes, gpn] = calibrate::log_scale(log, nodes_override, gpus_override);
  std::vector<Comparison> out;
  for (const auto& run : log.runs) {
    SweepSpec spec;
    spec.op = run.op;
    spec.algorithm = algorithm;
    spec.profile = profile;
    spec.nodes = nodes;
    spec.gpus_per_node = gpn;
    for (const auto& row : run.rows) spec.sizes.push_back(row.size_bytes);
    const SweepResult sim = run_collective_sweep(scenario, spec);
    Comparison c{run.op, nodes, gpn, sim.profile, {}, 0, 0, 0, false};
    std::vector<double> errors, large_errors, ratios, large_ratios;
    for (std::size_t i = 0; i < run.rows.size(); ++i) {
      // Compare times (busbw of a tiny message prints as 0.00): the busbw error is
      // measured time / simulated time - 1.
      const auto& row = run.rows[i];
      const double measured_us = row.time_us > 0 ? row.time_us : row.inplace_time_us;
      const double measured = row.busbw_GBps, simulated = sim.rows[i].busbw_GBps;
      const double error = 100.0 * (measured_us / sim.rows[i].time_us - 1.0);
      c.rows.push_back({row.size_bytes, measured, simulated, error, sim.rows[i].algorithm,
                        sim.rows[i].protocol});
      errors.push_back(std::abs(error));
      const double ratio = sim.rows[i].time_us / measured_us;
      ratios.push_back(ratio);
      if (row.size_bytes >= 32.0 * 1024 * 1024) {
        large_errors.push_back(std::abs(error));
        large_ratios.push_back(ratio);
      }
    }
    c.median_abs_error_pct = median(errors);
    c.median_abs_error_large_pct = large_errors.empty() ? 0.0 : median(large_errors);
    c.median_measured_over_simulated = median(ratios);
    c.median_measured_over_simulated_large = large_ratios.empty() ? 0.0 : median(large_ratios);
    c.far_below = c.judged_ratio() < 0.5;
    out.push_back(std::move(c));
  }
  return out;
}

std::string comparison_table(const std::vector<Comparison>& comparisons) {
  std::string out;
  for (const auto& c : comparisons) {
    out += fmt::format(
        "# {} on {} node(s) x {} GPUs: measured vs simulated bus bandwidth (profile {})\n", c.op,
        c.nodes, c.gpus_per_node, c.profile);
    out += fmt::format("{:>14}  {:>17}  {:>14}  {:>15}  {:>8}\n", "size (B)", "NCCL algo/proto",
                       "measured GB/s", "simulated GB/s", "error");
    for (const auto& row : c.rows)
      out += fmt::format("{:>14.0f}  {:>17}  {:>14.2f}  {:>15.2f}  {:>7.1f}%\n", row.size_bytes,
                         row.algorithm + "/" + row.protocol, row.measured_busbw_GBps,
                         row.simulated_busbw_GBps, row.error_pct);
    const bool large = c.median_measured_over_simulated_large > 0;
    out += fmt::format(
        "median |error| {:.1f}% (all sizes), {:.1f}% (sizes >= 32 MiB); measured / simulated "
        "{:.2f} (all sizes){}\n",
        c.median_abs_error_pct, c.median_abs_error_large_pct, c.median_measured_over_simulated,
        large ? fmt::format(", {:.2f} (sizes >= 32 MiB)", c.median_measured_over_simulated_large)
              : std::string());
    if (c.far_below)
      out += fmt::format(
          "WARNING: measured bus bandwidth is {:.0f}% of what this profile predicts for healthy "
          "hardware at this scale{}: the measured system is far below expectation (degraded "
          "links, wrong NIC or NCCL configuration?)\n",
          100.0 * c.judged_ratio(), large ? " at sizes >= 32 MiB" : "");
  }
  return out;
}

std::string comparison_json(const std::vector<Comparison>& comparisons) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& c : comparisons) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& row : c.rows)
      rows.push_back({{"size_bytes", row.size_bytes},
                      {"measured_busbw_GBps", row.measured_busbw_GBps},
                      {"simulated_busbw_GBps", row.simulated_busbw_GBps},
                      {"error_pct", row.error_pct},
                      {"algorithm", row.algorithm},
                      {"protocol", row.protocol}});
    arr.push_back({{"op", c.op},
                   {"nodes", c.nodes},
                   {"gpus_per_node", c.gpus_per_node},
                   {"profile", c.profile},
                   {"rows", rows},
                   {"median_abs_error_pct", c.median_abs_error_pct},
                   {"median_abs_error_large_pct", c.median_abs_error_large_pct},
                   {"median_measured_over_simulated", c.median_measured_over_simulated},
                   {"median_measured_over_simulated_large", c.median_measured_over_simulated_large},
                   {"far_below_expectation", c.far_below}});
  }
  // One run (the usual nccl-tests log) prints as an object, several as a list.
  const nlohmann::ordered_json out =
      arr.size() == 1 ? arr[0] : nlohmann::ordered_json{{"runs", arr}};
  return out.dump(2) + "\n";
}

}  // namespace twin::sim
