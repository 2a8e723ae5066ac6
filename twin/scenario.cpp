#include "twin/scenario.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/text.hpp"
#include "netsim/collective.hpp"
#include "twin/detail/scenario_fields.hpp"
#include "twin/yaml_reader.hpp"

namespace twin::sim {
namespace {

using detail::MapReader;

/// Token budgets above this are typos (1e30), and would overflow the integer GPU-hour lines.
constexpr double kMaxTokens = 1e18;

void read_cluster(MapReader r, topology::ClusterSpec& c) {
  r.get("nodes", c.nodes);
  r.get("gpus_per_node", c.gpus_per_node);
  r.get("gpu", c.gpu);
  r.get("nics_per_node", c.nics_per_node);
  r.get("nic_gbps", c.nic_gbps);
  r.get("nvlink_GBps", c.nvlink_GBps);
  r.get("nvlink_latency_ns", c.nvlink_latency_ns);
  r.get("pcie_GBps", c.pcie_GBps);
  r.get("pcie_latency_ns", c.pcie_latency_ns);
  r.get("node_states", c.node_states);
  r.finish();
  // A profile name must exist even when the scenario never runs a step (fabric-only).
  const bool is_path = c.gpu.find('/') != std::string::npos ||
                       (c.gpu.size() > 5 && c.gpu.compare(c.gpu.size() - 5, 5, ".json") == 0);
  const auto names = calibrate::shipped_profile_names();
  if (!is_path && std::find(names.begin(), names.end(), c.gpu) == names.end())
    throw r.error("gpu", c.gpu,
                  "no hardware profile of that name; shipped: " + core::quoted_list(names) +
                      core::did_you_mean(c.gpu, names) + " (or a path to a profile .json)");
}

void read_fabric(MapReader r, topology::FabricSpec& f) {
  r.get("kind", f.kind);
  r.get("file", f.file);
  r.get("lfts", f.lfts);
  r.get("tiers", f.tiers);
  r.get("switch_radix", f.switch_radix);
  r.get("switch_port_gbps", f.switch_port_gbps);
  r.get("switch_ports_per_cage", f.switch_ports_per_cage);
  r.get("rail_optimized", f.rail_optimized);
  r.get("oversubscription", f.oversubscription);
  r.get("spine_oversubscription", f.spine_oversubscription);
  r.get("reserved_ports_per_leaf", f.reserved_ports_per_leaf);
  r.get("management_nodes", f.management_nodes);
  r.get("management_ports_per_node", f.management_ports_per_node);
  r.get("leaf_spine_gbps", f.leaf_spine_gbps);
  r.get("spine_core_gbps", f.spine_core_gbps);
  r.get("cable_latency_ns", f.cable_latency_ns);
  r.get("switch_latency_ns", f.switch_latency_ns);
  std::string routing(topology::to_string(f.routing));
  r.get("routing", routing);
  try {
    f.routing = topology::parse_routing_mode(routing, r.field("routing"));
  } catch (const core::Error& e) {
    throw r.error("routing", routing, e.reason());
  }
  r.get("routing_seed", f.routing_seed);
  r.finish();
}

void read_model(MapReader r, workload::ModelSpec& m) {
  std::string preset;
  r.get("preset", preset);
  if (!preset.empty()) {
    try {
      m = workload::model_preset(preset);
    } catch (const core::Error& e) {
      throw r.error("preset", preset, e.reason());
    }
  }
  r.get("name", m.name);
  if (m.name.empty()) m.name = "custom";
  r.get("layers", m.layers);
  r.get("hidden", m.hidden);
  r.get("heads", m.heads);
  r.get("kv_heads", m.kv_heads);
  if (m.kv_heads == 0) m.kv_heads = m.heads;
  r.get("head_dim", m.head_dim);
  r.get("ffn_hidden", m.ffn_hidden);
  r.get("vocab", m.vocab);
  r.get("seq_len", m.seq_len);
  r.get("mlp", m.mlp);
  r.get("experts", m.experts);
  r.get("top_k", m.top_k);
  r.get("expert_ffn_hidden", m.expert_ffn_hidden);
  r.get("shared_experts", m.shared_experts);
  r.get("moe_layer_every", m.moe_layer_every);
  r.get("capacity_factor", m.capacity_factor);
  r.finish();
}

void read_parallelism(MapReader r, workload::ParallelismSpec& p) {
  r.get("tp", p.tp);
  r.get("pp", p.pp);
  r.get("dp", p.dp);
  r.get("ep", p.ep);
  r.get("zero", p.zero);
  r.get("hsdp_shard", p.hsdp_shard);
  r.get("cp", p.cp);
  detail::read_pipeline_fields(r, p);
  r.get("micro_batch", p.micro_batch);
  r.get("sequence_parallel", p.sequence_parallel);
  r.get("recompute", p.recompute);
  r.finish();
}

void read_training(MapReader r, workload::TrainingSpec& t) {
  r.get("global_batch", t.global_batch);
  r.get("tokens", t.tokens);
  r.get("precision", t.precision);
  r.get("attention", t.attention);
  r.get("fused_kernels", t.fused_kernels);
  r.get("tp_comm_overlap", t.tp_comm_overlap);
  r.get("overlap_grad_reduce", t.overlap_grad_reduce);
  r.get("overlap_param_gather", t.overlap_param_gather);
  r.get("memory_reserve_GB", t.memory_reserve_GB);
  r.get("price_per_gpu_hour", t.price_per_gpu_hour);
  r.finish();
  if (t.tokens > kMaxTokens)
    throw r.error("tokens", fmt::format("{}", t.tokens),
                  fmt::format("more than {:g} tokens is beyond any data set (Llama 3 trained on "
                              "15e12)",
                              kMaxTokens));
  if (!(t.price_per_gpu_hour >= 0))
    throw r.error("price_per_gpu_hour", fmt::format("{}", t.price_per_gpu_hour),
                  "must not be negative");
  if (!(t.memory_reserve_GB >= 0))
    throw r.error("memory_reserve_GB", fmt::format("{}", t.memory_reserve_GB),
                  "must not be negative");
}

void read_perturbations(MapReader r, Scenario& s) {
  MapReader slow = r.section("slow_gpu");
  slow.get("gpu", s.slow_gpu);
  slow.get("factor", s.slow_factor);
  slow.finish();
  const YAML::Node switches = r.raw("failed_switches");
  if (switches.IsDefined() && !switches.IsNull()) {
    if (!switches.IsSequence())
      throw r.error("failed_switches", "", "expected a list of names like spine[3]");
    for (const auto& n : switches) {
      if (!n.IsScalar()) throw r.error("failed_switches", "", "expected names like spine[3]");
      s.failed_switches.push_back(n.Scalar());
    }
  }
  auto cable_index = [&](const YAML::Node& n, const char* key) {
    int cable = 0;
    const std::string why =
        n.IsScalar() ? detail::parse_number(n.Scalar(), cable) : "expected a cable index";
    if (!why.empty()) throw r.error(key, n.IsScalar() ? n.Scalar() : "", why);
    return cable;
  };
  const YAML::Node cables = r.raw("failed_cables");
  if (cables.IsDefined() && !cables.IsNull()) {
    if (!cables.IsSequence())
      throw r.error("failed_cables", "", "expected a list of cable indices");
    for (const auto& n : cables) s.failed_cables.push_back(cable_index(n, "failed_cables"));
  }
  const YAML::Node degraded = r.raw("degraded_cables");
  if (degraded.IsDefined() && !degraded.IsNull()) {
    if (!degraded.IsSequence())
      throw r.error("degraded_cables", "", "expected a list of {cable, factor}");
    for (const auto& n : degraded) {
      if (!n.IsMap())
        throw r.error("degraded_cables", "", "each entry is {cable: index, factor: 0..1}");
      MapReader entry(n, r.field("degraded_cables"), r.origin());
      int cable = -1;
      double factor = 0;
      entry.get("cable", cable);
      entry.get("factor", factor);
      entry.finish();
      if (cable < 0 || !n["factor"].IsDefined())
        throw r.error("degraded_cables", "", "each entry is {cable: index, factor: 0..1}");
      s.degraded_cables.emplace_back(cable, factor);
    }
  }
  r.finish();
  if (s.slow_gpu >= 0 && !(s.slow_factor >= 1.0))
    throw slow.error("factor", fmt::format("{}", s.slow_factor), "a slowdown factor is >= 1");
  if (s.slow_gpu < -1)
    throw slow.error("gpu", std::to_string(s.slow_gpu), "a GPU index is >= 0 (-1: none)");
  if (static_cast<std::int64_t>(s.slow_gpu) >=
      static_cast<std::int64_t>(s.cluster.nodes) * s.cluster.gpus_per_node)
    throw slow.error("gpu", std::to_string(s.slow_gpu),
                     fmt::format("no such GPU: the cluster has {} ({} nodes x {})",
                                 core::with_commas(static_cast<std::int64_t>(s.cluster.nodes) *
                                                   s.cluster.gpus_per_node),
                                 core::with_commas(s.cluster.nodes), s.cluster.gpus_per_node));
}

void read_failures(MapReader r, failures::FailureSpec& f) {
  r.get("rate_multiplier", f.rate_multiplier);
  r.get("node_mtbf_hours", f.node_mtbf_hours);
  r.get("lemon_fraction", f.lemon_fraction);
  r.get("lemon_factor", f.lemon_factor);
  r.get("weibull_shape", f.weibull_shape);
  r.get("straggler_rate_per_node_day", f.straggler_rate_per_node_day);
  r.get("straggler_hours", f.straggler_hours);
  r.get("straggler_factor", f.straggler_factor);
  r.get("gc_pause_ms", f.gc_pause_ms);
  r.get("gc_period_s", f.gc_period_s);
  r.get("gc_drift_s_per_hour", f.gc_drift_s_per_hour);
  r.get("gc_sync_minutes", f.gc_sync_minutes);
  r.get("degraded_link_rate_per_cable_day", f.degraded_link_rate_per_cable_day);
  r.get("degraded_link_hours", f.degraded_link_hours);
  r.get("degraded_link_factor", f.degraded_link_factor);
  r.get("sdc_detection_hours", f.sdc_detection_hours);
  r.get("leaf_switch_mtbf_hours", f.leaf_switch_mtbf_hours);
  r.get("power_domain_mtbf_hours", f.power_domain_mtbf_hours);
  r.get("power_domain_nodes", f.power_domain_nodes);
  r.get("switch_repair_hours", f.switch_repair_hours);
  r.finish();
}

void read_recovery(MapReader r, failures::RecoverySpec& rec) {
  std::string interval = "young_daly";
  r.get("checkpoint_interval_min", interval);
  if (interval == "young_daly") {
    rec.checkpoint_interval_min = 0;
  } else {
    try {
      std::size_t used = 0;
      rec.checkpoint_interval_min = std::stod(interval, &used);
      if (used != interval.size() || !(rec.checkpoint_interval_min > 0))
        throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw r.error("checkpoint_interval_min", interval,
                    "expected minutes (> 0) or \"young_daly\"");
    }
  }
  r.get("checkpoint_write_s", rec.checkpoint_write_s);
  r.get("storage_write_GBps", rec.storage_write_GBps);
  r.get("storage_read_GBps", rec.storage_read_GBps);
  r.get("async_checkpoint", rec.async_checkpoint);
  r.get("restart_min", rec.restart_min);
  r.get("nccl_init_s_per_1k_gpus", rec.nccl_init_s_per_1k_gpus);
  r.get("elastic", rec.elastic);
  r.get("detection_min", rec.detection_min);
  r.get("hot_spares", rec.hot_spares);
  r.get("repair_hours", rec.repair_hours);
  r.finish();
}

void read_costs(MapReader r, CostSpec& c) {
  r.get("node_usd", c.node_usd);
  r.get("nic_usd_per_100gbps", c.nic_usd_per_100gbps);
  r.get("switch_usd_per_port", c.switch_usd_per_port);
  r.get("transceiver_usd", c.transceiver_usd);
  r.get("cable_usd", c.cable_usd);
  r.get("node_kw", c.node_kw);
  r.get("switch_kw", c.switch_kw);
  r.get("usd_per_mwh", c.usd_per_mwh);
  r.get("pue", c.pue);
  r.get("amortization_years", c.amortization_years);
  r.finish();
  for (auto [v, k] :
       {std::pair{c.node_usd, "node_usd"}, std::pair{c.nic_usd_per_100gbps, "nic_usd_per_100gbps"},
        std::pair{c.switch_usd_per_port, "switch_usd_per_port"},
        std::pair{c.transceiver_usd, "transceiver_usd"}, std::pair{c.cable_usd, "cable_usd"},
        std::pair{c.node_kw, "node_kw"}, std::pair{c.switch_kw, "switch_kw"},
        std::pair{c.usd_per_mwh, "usd_per_mwh"}})
    if (!(v >= 0)) throw r.error(k, fmt::format("{}", v), "must not be negative");
  if (!(c.pue >= 1)) throw r.error("pue", fmt::format("{}", c.pue), "must be >= 1");
  if (!(c.amortization_years > 0))
    throw r.error("amortization_years", fmt::format("{}", c.amortization_years),
                  "must be positive");
}

void read_collectives(MapReader r, std::map<std::string, std::string>& algorithms) {
  for (const netsim::CollectiveOp op : netsim::all_ops()) {
    const std::string name(netsim::to_text(op));
    std::string choice = "auto";
    r.get(name, choice);
    if (choice == "auto") continue;
    // "algorithm" or "algorithm/protocol" (e.g. ring/ll128); either part may be "auto".
    netsim::Choice parsed;
    try {
      parsed = netsim::parse_choice(choice, name);
    } catch (const core::Error& e) {
      throw r.error(name, choice, e.reason() + "; the form is ALGORITHM or ALGORITHM/PROTOCOL");
    }
    if (parsed.algorithm) {
      const auto& valid = netsim::algorithms_for(op);
      if (std::find(valid.begin(), valid.end(), *parsed.algorithm) == valid.end()) {
        const auto names = netsim::algorithm_names_for(op);
        throw r.error(name, choice,
                      "not an algorithm for " + name + "; valid: 'auto', " +
                          core::quoted_list(names) + core::did_you_mean(choice, names));
      }
    }
    algorithms[name] = choice;
  }
  r.finish();
}

void read_validation(MapReader r, ValidationSpec& v) {
  r.get("family", v.family);
  r.get("metric", v.metric);
  r.get("published", v.published);
  r.get("source", v.source);
  r.get("notes", v.notes);
  r.finish();
  auto one_of = [&](const char* key, const std::string& value,
                    const std::vector<std::string>& valid) {
    if (std::find(valid.begin(), valid.end(), value) == valid.end())
      throw r.error(key, value,
                    (value.empty() ? std::string("required") : std::string("unknown")) +
                        "; valid: " + core::quoted_list(valid) + core::did_you_mean(value, valid));
  };
  one_of("family", v.family, validation_families());
  one_of("metric", v.metric, validation_metrics());
  if (!(v.published > 0) || !std::isfinite(v.published))
    throw r.error("published", fmt::format("{}", v.published),
                  "required: the source's figure, a positive number");
  if (v.source.empty())
    throw r.error("source", "", "required: where the figure is published (document, table, row)");
}

/// `fabric.file`, `fabric.lfts` and `cluster.node_states` are relative to the scenario file's
/// folder (to the current folder for the embedded default), so a scenario and its dump travel
/// together.
std::string relative_to_scenario(const std::string& path, const std::string& source) {
  if (path.empty() || std::filesystem::path(path).is_absolute() || source.empty() ||
      source.front() == '<')
    return path;
  return (std::filesystem::path(source).parent_path() / path).lexically_normal().string();
}

}  // namespace

const std::vector<std::string>& validation_families() {
  static const std::vector<std::string> families = {"megatron", "fsdp"};
  return families;
}

const std::vector<std::string>& validation_metrics() {
  static const std::vector<std::string> metrics = {"tflops_per_gpu", "tokens_per_s_per_gpu",
                                                   "step_time_s", "mfu", "time_to_train_days"};
  return metrics;
}

namespace {

/// The YAML tree of scenario text with the overrides applied (no field is read yet).
YAML::Node overridden_tree(const std::string& yaml_text, const std::string& source,
                           const std::vector<std::string>& overrides, detail::Origin& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw core::Error("", "",
                      fmt::format("line {}, column {}: malformed YAML: {}", e.mark.line + 1,
                                  e.mark.column + 1, e.msg),
                      source);
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw core::Error("", "", "a scenario is a YAML mapping (schema_version, cluster, fabric, ...)",
                      source);
  detail::apply_overrides(root, overrides, origin);
  return root;
}

}  // namespace

Scenario parse_scenario(const std::string& yaml_text, const std::string& source,
                        const std::vector<std::string>& overrides) {
  detail::Origin origin{source, {}};
  const YAML::Node root = overridden_tree(yaml_text, source, overrides, origin);

  Scenario s;
  s.source = source;
  s.overrides = overrides;
  MapReader top(root, "", origin);
  s.schema_version = 0;
  top.get("schema_version", s.schema_version);
  if (s.schema_version == 0)
    throw top.error("schema_version", "",
                    fmt::format("required; this build reads {}", kSchemaVersion));
  if (s.schema_version != kSchemaVersion)
    throw top.error("schema_version", std::to_string(s.schema_version),
                    fmt::format("unsupported; this build reads {}", kSchemaVersion));
  top.get("name", s.name);
  top.get("description", s.description);
  top.get("lesson", s.lesson);
  read_cluster(top.section("cluster"), s.cluster);
  read_fabric(top.section("fabric"), s.fabric);
  s.fabric.file = relative_to_scenario(s.fabric.file, source);
  s.fabric.lfts = relative_to_scenario(s.fabric.lfts, source);
  s.cluster.node_states = relative_to_scenario(s.cluster.node_states, source);
  s.has_job = root["model"].IsDefined() && !root["model"].IsNull();
  read_model(top.section("model"), s.model);
  read_parallelism(top.section("parallelism"), s.parallelism);
  read_training(top.section("training"), s.training);
  read_perturbations(top.section("perturbations"), s);
  read_failures(top.section("failures"), s.failures);
  read_recovery(top.section("recovery"), s.recovery);
  read_costs(top.section("costs"), s.costs);
  read_collectives(top.section("collectives"), s.collective_algorithms);
  MapReader validation = top.section("validation");
  s.has_validation = root["validation"].IsDefined() && !root["validation"].IsNull();
  if (s.has_validation) read_validation(validation, s.validation);
  top.finish();
  detail::apply_profile_hardware(s, root["cluster"], origin);
  return s;
}

topology::FabricState fabric_state(const Scenario& s, const topology::Fabric& fabric) {
  topology::FabricState state(fabric);
  for (const auto& name : s.failed_switches) {
    bool found = false;
    for (std::size_t i = 0; i < fabric.node_count() && !found; ++i) {
      const auto id = topology::NodeId::from_index(i);
      if (fabric.is_switch(id) && fabric.node_name(id) == name) {
        state.fail_switch(id);
        found = true;
      }
    }
    if (!found)
      throw core::Error("perturbations.failed_switches", name,
                        fmt::format("no such switch (names: leaf[0..{}], spine[0..{}]{})",
                                    fabric.geometry().leaves - 1, fabric.geometry().spines - 1,
                                    fabric.geometry().cores > 0
                                        ? fmt::format(", core[0..{}]", fabric.geometry().cores - 1)
                                        : ""),
                        s.source);
  }
  auto check = [&](int cable, const char* field) {
    if (cable < 0 || cable >= static_cast<int>(fabric.cable_count()))
      throw core::Error(field, std::to_string(cable),
                        fmt::format("no such cable (0..{})", fabric.cable_count() - 1), s.source);
    return topology::CableId(static_cast<std::uint32_t>(cable));
  };
  for (int c : s.failed_cables) state.fail_cable(check(c, "perturbations.failed_cables"));
  for (auto [c, factor] : s.degraded_cables) {
    if (!(factor > 0 && factor <= 1))
      throw core::Error("perturbations.degraded_cables", fmt::format("{}", factor),
                        "factor must be within (0, 1] (use failed_cables for a dead cable)",
                        s.source);
    state.degrade_cable(check(c, "perturbations.degraded_cables"), factor);
  }
  return state;
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  if (path.empty()) return parse_scenario(default_scenario_yaml(), "<default>", overrides);
  return parse_scenario(core::read_text_file(path, "scenario file"), path, overrides);
}

std::string resolved_yaml(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string source = path.empty() ? "<default>" : path;
  detail::Origin origin{source, {}};
  const YAML::Node root = overridden_tree(
      path.empty() ? default_scenario_yaml() : core::read_text_file(path, "scenario file"), source,
      overrides, origin);
  return YAML::Dump(root) + "\n";
}

std::string to_yaml(const Scenario& s) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "schema_version" << YAML::Value << s.schema_version;
  out << YAML::Key << "name" << YAML::Value << s.name;
  out << YAML::Key << "description" << YAML::Value << s.description;
  const auto& c = s.cluster;
  out << YAML::Key << "cluster" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "nodes" << YAML::Value << c.nodes;
  out << YAML::Key << "gpus_per_node" << YAML::Value << c.gpus_per_node;
  out << YAML::Key << "gpu" << YAML::Value << c.gpu;
  out << YAML::Key << "nics_per_node" << YAML::Value << c.nics_per_node;
  out << YAML::Key << "nic_gbps" << YAML::Value << c.nic_gbps;
  out << YAML::Key << "nvlink_GBps" << YAML::Value << c.nvlink_GBps;
  out << YAML::Key << "nvlink_latency_ns" << YAML::Value << c.nvlink_latency_ns;
  out << YAML::Key << "pcie_GBps" << YAML::Value << c.pcie_GBps;
  out << YAML::Key << "pcie_latency_ns" << YAML::Value << c.pcie_latency_ns;
  if (!c.node_states.empty()) out << YAML::Key << "node_states" << YAML::Value << c.node_states;
  out << YAML::EndMap;
  const auto& f = s.fabric;
  out << YAML::Key << "fabric" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "kind" << YAML::Value << f.kind;
  if (!f.file.empty()) out << YAML::Key << "file" << YAML::Value << f.file;
  if (!f.lfts.empty()) out << YAML::Key << "lfts" << YAML::Value << f.lfts;
  out << YAML::Key << "tiers" << YAML::Value << f.tiers;
  out << YAML::Key << "switch_radix" << YAML::Value << f.switch_radix;
  out << YAML::Key << "switch_port_gbps" << YAML::Value << f.switch_port_gbps;
  out << YAML::Key << "switch_ports_per_cage" << YAML::Value << f.switch_ports_per_cage;
  out << YAML::Key << "rail_optimized" << YAML::Value << f.rail_optimized;
  out << YAML::Key << "oversubscription" << YAML::Value << f.oversubscription;
  out << YAML::Key << "spine_oversubscription" << YAML::Value << f.spine_oversubscription;
  out << YAML::Key << "reserved_ports_per_leaf" << YAML::Value << f.reserved_ports_per_leaf;
  out << YAML::Key << "management_nodes" << YAML::Value << f.management_nodes;
  out << YAML::Key << "management_ports_per_node" << YAML::Value << f.management_ports_per_node;
  out << YAML::Key << "leaf_spine_gbps" << YAML::Value << f.leaf_spine_gbps;
  out << YAML::Key << "spine_core_gbps" << YAML::Value << f.spine_core_gbps;
  out << YAML::Key << "cable_latency_ns" << YAML::Value << f.cable_latency_ns;
  out << YAML::Key << "switch_latency_ns" << YAML::Value << f.switch_latency_ns;
  out << YAML::Key << "routing" << YAML::Value << std::string(topology::to_string(f.routing));
  out << YAML::Key << "routing_seed" << YAML::Value << f.routing_seed;
  out << YAML::EndMap;
  if (s.has_job) {
    const auto& m = s.model;
    out << YAML::Key << "model" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << m.name;
    out << YAML::Key << "layers" << YAML::Value << m.layers;
    out << YAML::Key << "hidden" << YAML::Value << m.hidden;
    out << YAML::Key << "heads" << YAML::Value << m.heads;
    out << YAML::Key << "kv_heads" << YAML::Value << m.kv_heads;
    out << YAML::Key << "head_dim" << YAML::Value << m.head_dim;
    out << YAML::Key << "ffn_hidden" << YAML::Value << m.ffn_hidden;
    out << YAML::Key << "vocab" << YAML::Value << m.vocab;
    out << YAML::Key << "seq_len" << YAML::Value << m.seq_len;
    out << YAML::Key << "mlp" << YAML::Value << m.mlp;
    out << YAML::Key << "experts" << YAML::Value << m.experts;
    out << YAML::Key << "top_k" << YAML::Value << m.top_k;
    out << YAML::Key << "expert_ffn_hidden" << YAML::Value << m.expert_ffn_hidden;
    out << YAML::Key << "shared_experts" << YAML::Value << m.shared_experts;
    out << YAML::Key << "moe_layer_every" << YAML::Value << m.moe_layer_every;
    out << YAML::Key << "capacity_factor" << YAML::Value << m.capacity_factor;
    out << YAML::EndMap;
    const auto& p = s.parallelism;
    out << YAML::Key << "parallelism" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "tp" << YAML::Value << p.tp << YAML::Key << "pp" << YAML::Value << p.pp;
    out << YAML::Key << "dp" << YAML::Value << p.dp << YAML::Key << "ep" << YAML::Value << p.ep;
    out << YAML::Key << "zero" << YAML::Value << p.zero;
    out << YAML::Key << "hsdp_shard" << YAML::Value << p.hsdp_shard;
    if (p.virtual_stages == 0)
      out << YAML::Key << "virtual_stages" << YAML::Value << "auto";
    else
      out << YAML::Key << "virtual_stages" << YAML::Value << p.virtual_stages;
    detail::write_pipeline_fields(out, p);
    out << YAML::Key << "micro_batch" << YAML::Value << p.micro_batch;
    out << YAML::Key << "sequence_parallel" << YAML::Value << p.sequence_parallel;
    out << YAML::Key << "recompute" << YAML::Value << p.recompute;
    out << YAML::EndMap;
    const auto& t = s.training;
    out << YAML::Key << "training" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "global_batch" << YAML::Value << t.global_batch;
    out << YAML::Key << "tokens" << YAML::Value << t.tokens;
    out << YAML::Key << "precision" << YAML::Value << t.precision;
    out << YAML::Key << "attention" << YAML::Value << t.attention;
    out << YAML::Key << "fused_kernels" << YAML::Value << t.fused_kernels;
    out << YAML::Key << "tp_comm_overlap" << YAML::Value << t.tp_comm_overlap;
    out << YAML::Key << "overlap_grad_reduce" << YAML::Value << t.overlap_grad_reduce;
    out << YAML::Key << "overlap_param_gather" << YAML::Value << t.overlap_param_gather;
    out << YAML::Key << "memory_reserve_GB" << YAML::Value << t.memory_reserve_GB;
    out << YAML::Key << "price_per_gpu_hour" << YAML::Value << t.price_per_gpu_hour;
    out << YAML::EndMap;
  }
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace twin::sim
