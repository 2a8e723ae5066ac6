#pragma once
/// Scenarios: the YAML files that describe a cluster, its fabric and (in later sections) the job
/// run on it.
///
/// Rules, so that scripts can rely on them:
/// - `schema_version: 1` is required.
/// - Units are part of key names (`nic_gbps`, `nvlink_GBps`, `cable_latency_ns`).
/// - Unknown keys are errors, with a "did you mean" suggestion.
/// - Every field has a documented default (the reference 4,096-GPU system); a file states only
///   what differs.
/// - `--set dotted.path=value` overrides any field after the file is read; the value is parsed
///   as YAML (so `--set fabric.rail_optimized=false` is a boolean).
/// Errors name the file (or "--set"), the field and the reason.

#include <map>
#include <string>
#include <vector>

#include "failure_models/failures.hpp"
#include "topology/fabric_state.hpp"
#include "topology/spec.hpp"
#include "twin/cost_model.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"

namespace twin::sim {

inline constexpr int kSchemaVersion = 1;

/// A published measurement the scenario reproduces (`validation:` section, scenarios/validation/):
/// the source's own figure, where it is printed, and the assumptions behind the scenario.
struct ValidationSpec {
  std::string family;  ///< one of validation_families()
  std::string metric;  ///< one of validation_metrics()
  double published = 0;
  /// Model TFLOP/s per GPU the source prints beside a tokens/s figure (0: none): the ratio of
  /// the two is the source's FLOPs per token, checked against the scenario's count.
  double published_tflops_per_gpu = 0;
  std::string source;
  std::string notes;
  bool operator==(const ValidationSpec&) const = default;
};

/// Families of published runs: megatron (NeMo, Megatron-Bridge, Megatron-DeepSpeed) and fsdp
/// (MosaicML Composer, IBM fms-fsdp).
const std::vector<std::string>& validation_families();
/// Metrics a `validation.metric` may name; each is one figure of the simulated step
/// (twin/validation.hpp).
const std::vector<std::string>& validation_metrics();

struct Scenario {
  int schema_version = kSchemaVersion;
  std::string name = "unnamed";
  std::string description;
  /// Teaching scenarios: the lesson shown beside the scenario in the app.
  std::string lesson;
  topology::ClusterSpec cluster;
  topology::FabricSpec fabric;
  /// The training job (optional: a fabric-only scenario has no `model` section).
  bool has_job = false;
  workload::ModelSpec model;
  workload::ParallelismSpec parallelism;
  workload::TrainingSpec training;
  /// Perturbations of the symmetric job: one GPU slowed by a factor (a straggler).
  int slow_gpu = -1;
  double slow_factor = 1.0;
  /// Fabric faults: switches down by name ("spine[3]"), cables down or degraded by index.
  std::vector<std::string> failed_switches;
  std::vector<int> failed_cables;
  std::vector<std::pair<int, double>> degraded_cables;  ///< (cable, capacity factor)
  /// Failure campaign: rates, stragglers and recovery policy.
  failures::FailureSpec failures;
  failures::RecoverySpec recovery;
  CostSpec costs;
  /// Collective algorithm per op ("auto", or e.g. all_reduce: ring) for the step simulation.
  std::map<std::string, std::string> collective_algorithms;
  [[nodiscard]] std::string algorithm_for(const std::string& op) const {
    auto it = collective_algorithms.find(op);
    return it == collective_algorithms.end() ? "auto" : it->second;
  }
  /// Hardware figures the scenario states that differ from its GPU's profile (printed by run).
  std::vector<std::string> hardware_overrides;
  /// The published figure this scenario reproduces (optional `validation:` section).
  bool has_validation = false;
  ValidationSpec validation;
  /// Where it came from: a file path, or "<default>" for the embedded scenario.
  std::string source;
  /// The `--set dotted.path=value` overrides applied on top of the source, in order.
  std::vector<std::string> overrides;
  /// Field by field; `source` and `overrides` (where it came from) included.
  bool operator==(const Scenario&) const = default;
};

/// The embedded default scenario (scenarios/default.yaml at build time).
const std::string& default_scenario_yaml();

/// Parses scenario text; `source` names it in errors. Throws core::Error.
Scenario parse_scenario(const std::string& yaml_text, const std::string& source,
                        const std::vector<std::string>& overrides = {});
/// Reads a scenario file, or the embedded default when `path` is empty.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});

/// A scenario's text, read once (a file, or the embedded default when the path is empty), from
/// which variants are parsed in memory: the points of a sweep differ only in their overrides.
struct ScenarioText {
  std::string source;  ///< the path, or "<default>"
  std::string text;
  /// Throws core::Error for an unreadable file (as load_scenario does).
  static ScenarioText read(const std::string& path);
  [[nodiscard]] Scenario load(const std::vector<std::string>& overrides = {}) const;
  /// The YAML tree after the overrides as canonical text (see resolved_yaml).
  [[nodiscard]] std::string resolved(const std::vector<std::string>& overrides = {}) const;
};

/// The scenario's YAML tree after the overrides, as canonical text (comments and layout dropped,
/// key order kept): what determines a run, for fingerprints. Throws core::Error like
/// load_scenario on unreadable files, malformed YAML or bad overrides.
std::string resolved_yaml(const std::string& path, const std::vector<std::string>& overrides = {});

/// The fabric state the scenario's perturbations describe; throws core::Error naming the entry
/// when a switch name or cable index does not exist in this fabric.
topology::FabricState fabric_state(const Scenario& scenario, const topology::Fabric& fabric);

/// The scenario as YAML, every field written out (what a run actually used).
std::string to_yaml(const Scenario& scenario);

}  // namespace twin::sim
