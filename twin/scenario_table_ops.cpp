// The scenario schema table, second half: what happens to the job (perturbations, failures,
// recovery), what the cluster costs, how collectives are chosen, and what published figure a
// validation scenario reproduces.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"
#include "netsim/collective.hpp"
#include "twin/detail/schema_entry.hpp"

namespace twin::sim::detail {
namespace {

using failures::FailureSpec;
using failures::RecoverySpec;

void perturbations(std::vector<Entry>& t) {
  t.push_back(plain("perturbations.slow_gpu.gpu", at(&Scenario::slow_gpu), "",
                    at_least(-1, "-1: none"), "A straggler GPU by global index (-1: none)"));
  t.push_back(plain("perturbations.slow_gpu.factor", at(&Scenario::slow_factor), "", at_least(1),
                    "How much slower its compute runs (1.3: 30 % slower)"));
  t.push_back(custom_list(
      "perturbations.failed_switches", "Switches down, by name (leaf[0], spine[3], core[1])",
      [](MapReader& r, Scenario& s) {
        const YAML::Node switches = r.raw("failed_switches");
        if (!switches.IsDefined() || switches.IsNull()) return;
        if (!switches.IsSequence())
          throw r.error("failed_switches", "", "expected a list of names like spine[3]");
        for (const auto& n : switches) {
          if (!n.IsScalar()) throw r.error("failed_switches", "", "expected names like spine[3]");
          s.failed_switches.push_back(n.Scalar());
        }
      },
      [](YAML::Emitter& out, const Scenario& s) {
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& n : s.failed_switches) out << n;
        out << YAML::EndSeq;
      }));
  auto cable_index = [](MapReader& r, const YAML::Node& n, const char* key) {
    int cable = 0;
    const std::string why =
        n.IsScalar() ? parse_number(n.Scalar(), cable) : "expected a cable index";
    if (!why.empty()) throw r.error(key, n.IsScalar() ? n.Scalar() : "", why);
    return cable;
  };
  t.push_back(custom_list(
      "perturbations.failed_cables", "Cables down, by index (topology export lists them)",
      [cable_index](MapReader& r, Scenario& s) {
        const YAML::Node cables = r.raw("failed_cables");
        if (!cables.IsDefined() || cables.IsNull()) return;
        if (!cables.IsSequence())
          throw r.error("failed_cables", "", "expected a list of cable indices");
        for (const auto& n : cables) s.failed_cables.push_back(cable_index(r, n, "failed_cables"));
      },
      [](YAML::Emitter& out, const Scenario& s) {
        out << YAML::Flow << YAML::BeginSeq;
        for (int c : s.failed_cables) out << c;
        out << YAML::EndSeq;
      }));
  t.push_back(custom_list(
      "perturbations.degraded_cables",
      "Cables running at a fraction of their bandwidth: a list of {cable: index, factor: 0..1}",
      [](MapReader& r, Scenario& s) {
        const YAML::Node degraded = r.raw("degraded_cables");
        if (!degraded.IsDefined() || degraded.IsNull()) return;
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
      },
      [](YAML::Emitter& out, const Scenario& s) {
        out << YAML::BeginSeq;
        for (const auto& [cable, factor] : s.degraded_cables)
          out << YAML::Flow << YAML::BeginMap << YAML::Key << "cable" << YAML::Value << cable
              << YAML::Key << "factor" << YAML::Value << number_text(factor) << YAML::EndMap;
        out << YAML::EndSeq;
      }));
}

void failures_section(std::vector<Entry>& t) {
  const auto f = [](auto member) { return at(&Scenario::failures, member); };
  t.push_back(plain("failures.rate_multiplier", f(&FailureSpec::rate_multiplier), "", at_least(0),
                    "Scales every derived hardware failure rate"));
  t.push_back(plain("failures.node_mtbf_hours", f(&FailureSpec::node_mtbf_hours), "h", at_least(0),
                    "If > 0, one node-level failure process of this MTBF replaces the derived "
                    "rates"));
  t.push_back(plain("failures.lemon_fraction", f(&FailureSpec::lemon_fraction), "", between(0, 1),
                    "Share of nodes that fail far more often (lemons)"));
  t.push_back(plain("failures.lemon_factor", f(&FailureSpec::lemon_factor), "", at_least(1),
                    "How much more often a lemon fails"));
  t.push_back(plain("failures.weibull_shape", f(&FailureSpec::weibull_shape), "",
                    positive("1: exponential; < 1: infant mortality"),
                    "Shape of the time between a node's failures"));
  t.push_back(plain("failures.straggler_rate_per_node_day",
                    f(&FailureSpec::straggler_rate_per_node_day), "1/node/day", at_least(0),
                    "Straggler episodes (ECC handling, thermal throttling) started per node-day"));
  t.push_back(plain("failures.straggler_hours", f(&FailureSpec::straggler_hours), "h", at_least(0),
                    "How long an episode lasts"));
  t.push_back(plain("failures.straggler_factor", f(&FailureSpec::straggler_factor), "", at_least(1),
                    "Compute slowdown of the straggling GPU"));
  t.push_back(plain("failures.gc_pause_ms", f(&FailureSpec::gc_pause_ms), "ms", at_least(0),
                    "Garbage-collection pause per host (0: off)"));
  t.push_back(plain("failures.gc_period_s", f(&FailureSpec::gc_period_s), "s", positive(),
                    "Time between a host's collections"));
  t.push_back(plain("failures.gc_drift_s_per_hour", f(&FailureSpec::gc_drift_s_per_hour), "s/h",
                    at_least(0), "Phase drift of each host's collections (random walk)"));
  t.push_back(plain("failures.gc_sync_minutes", f(&FailureSpec::gc_sync_minutes), "min",
                    at_least(0), "A synchronized collection every so often (0: never)"));
  t.push_back(plain("failures.degraded_link_rate_per_cable_day",
                    f(&FailureSpec::degraded_link_rate_per_cable_day), "1/cable/day", at_least(0),
                    "Degraded-link episodes started per cable-day (0: off)"));
  t.push_back(plain("failures.degraded_link_hours", f(&FailureSpec::degraded_link_hours), "h",
                    at_least(0), "How long a cable stays degraded"));
  t.push_back(plain("failures.degraded_link_factor", f(&FailureSpec::degraded_link_factor), "",
                    between(0, 1, true),
                    "Share of its bandwidth a degraded cable keeps (0.5: NDR down to HDR)"));
  t.push_back(plain("failures.sdc_detection_hours", f(&FailureSpec::sdc_detection_hours), "h",
                    at_least(0), "Time to detect silent data corruption (work since is lost)"));
  t.push_back(plain("failures.leaf_switch_mtbf_hours", f(&FailureSpec::leaf_switch_mtbf_hours), "h",
                    at_least(0), "Leaf switch MTBF: takes down every NIC under it (0: off)"));
  t.push_back(plain("failures.power_domain_mtbf_hours", f(&FailureSpec::power_domain_mtbf_hours),
                    "h", at_least(0),
                    "Power-domain MTBF: takes down power_domain_nodes whole nodes (0: off)"));
  t.push_back(plain("failures.power_domain_nodes", f(&FailureSpec::power_domain_nodes), "",
                    at_least(1), "Nodes sharing one power domain"));
  t.push_back(plain("failures.switch_repair_hours", f(&FailureSpec::switch_repair_hours), "h",
                    at_least(0), "Time to replace a failed switch"));
}

void recovery(std::vector<Entry>& t) {
  const auto r = [](auto member) { return at(&Scenario::recovery, member); };
  Entry interval = custom(
      "recovery.checkpoint_interval_min", FieldType::real, "min", "young_daly",
      "Minutes between checkpoints, or young_daly (sqrt(2 x write time x MTBF))",
      [](MapReader& rd, Scenario& s) {
        std::string text = "young_daly";
        rd.get("checkpoint_interval_min", text);
        if (text == "young_daly") {
          s.recovery.checkpoint_interval_min = 0;
          return;
        }
        try {
          std::size_t used = 0;
          s.recovery.checkpoint_interval_min = std::stod(text, &used);
          if (used != text.size() || !(s.recovery.checkpoint_interval_min > 0))
            throw std::invalid_argument("");
        } catch (const std::exception&) {
          throw rd.error("checkpoint_interval_min", text,
                         "expected minutes (> 0) or \"young_daly\"");
        }
      },
      [](YAML::Emitter& out, const Scenario& s) {
        if (s.recovery.checkpoint_interval_min == 0)
          out << "young_daly";
        else
          out << number_text(s.recovery.checkpoint_interval_min);
      });
  interval.field.bounds = positive();
  interval.field.keywords = {"young_daly"};
  t.push_back(std::move(interval));
  t.push_back(plain("recovery.checkpoint_write_s", r(&RecoverySpec::checkpoint_write_s), "s",
                    at_least(0), "Synchronous checkpoint write time"));
  t.push_back(plain("recovery.storage_write_GBps", r(&RecoverySpec::storage_write_GBps), "GB/s",
                    at_least(0),
                    "If > 0, the write time is derived from the checkpoint size (14 B/parameter)"));
  t.push_back(plain("recovery.storage_read_GBps", r(&RecoverySpec::storage_read_GBps), "GB/s",
                    at_least(0), "Checkpoint load on restart (0: included in restart_min)"));
  t.push_back(plain("recovery.async_checkpoint", r(&RecoverySpec::async_checkpoint), "", kAny,
                    "Pause only to copy the shard to host memory; write in the background"));
  t.push_back(plain("recovery.restart_min", r(&RecoverySpec::restart_min), "min", at_least(0),
                    "Restart time after a failure (scheduling, loading, warm-up)"));
  t.push_back(plain("recovery.nccl_init_s_per_1k_gpus", r(&RecoverySpec::nccl_init_s_per_1k_gpus),
                    "s", at_least(0), "NCCL communicator set-up per 1,000 GPUs on every restart"));
  t.push_back(plain("recovery.elastic", r(&RecoverySpec::elastic), "", kAny,
                    "Without a spare, continue with fewer data-parallel replicas"));
  t.push_back(plain("recovery.detection_min", r(&RecoverySpec::detection_min), "min", at_least(0),
                    "Time to notice a failure"));
  t.push_back(plain("recovery.hot_spares", r(&RecoverySpec::hot_spares), "", at_least(0),
                    "Idle nodes ready to replace a failed one (at most the job's nodes)"));
  t.push_back(plain("recovery.repair_hours", r(&RecoverySpec::repair_hours), "h", at_least(0),
                    "Time until a failed node returns to the pool"));
}

void costs(std::vector<Entry>& t) {
  const auto c = [](auto member) { return at(&Scenario::costs, member); };
  t.push_back(plain("costs.node_usd", c(&CostSpec::node_usd), "USD", at_least(0),
                    "One GPU server without compute NICs (illustrative)"));
  t.push_back(plain("costs.nic_usd_per_100gbps", c(&CostSpec::nic_usd_per_100gbps), "USD",
                    at_least(0), "Compute NIC price per 100 Gb/s of line rate"));
  t.push_back(plain("costs.switch_usd_per_port", c(&CostSpec::switch_usd_per_port), "USD",
                    at_least(0), "Switch price per 400 Gb/s port, linear in speed"));
  t.push_back(plain("costs.transceiver_usd", c(&CostSpec::transceiver_usd), "USD", at_least(0),
                    "One 400 Gb/s optical module, linear in speed"));
  t.push_back(plain("costs.cable_usd", c(&CostSpec::cable_usd), "USD", at_least(0),
                    "One fibre or copper cable"));
  t.push_back(plain("costs.node_kw", c(&CostSpec::node_kw), "kW", at_least(0),
                    "Server power (DGX H100 maximum: 10.2)"));
  t.push_back(plain("costs.switch_kw", c(&CostSpec::switch_kw), "kW", at_least(0),
                    "Switch power with optics"));
  t.push_back(plain("costs.usd_per_mwh", c(&CostSpec::usd_per_mwh), "USD/MWh", at_least(0),
                    "Electricity price"));
  t.push_back(
      plain("costs.pue", c(&CostSpec::pue), "", at_least(1), "Facility overhead on IT power"));
  t.push_back(plain("costs.amortization_years", c(&CostSpec::amortization_years), "years",
                    positive(), "Capital spread over this life for a GPU-hour price"));
}

void collectives(std::vector<Entry>& t) {
  for (const netsim::CollectiveOp op : netsim::all_ops()) {
    const std::string name(netsim::to_text(op));
    const auto names = netsim::algorithm_names_for(op);
    t.push_back(custom(
        "collectives." + name, FieldType::text, "", "auto",
        "Algorithm for " + name + " in the step: auto (NCCL's pick by predicted time), " +
            core::quoted_list(names) + ", optionally /protocol (ll, ll128, simple)",
        [op, name](MapReader& r, Scenario& s) {
          std::string choice = "auto";
          r.get(name, choice);
          if (choice == "auto") return;
          // "algorithm" or "algorithm/protocol" (e.g. ring/ll128); either part may be "auto".
          netsim::Choice parsed;
          try {
            parsed = netsim::parse_choice(choice, name);
          } catch (const core::Error& e) {
            throw r.error(name, choice,
                          e.reason() + "; the form is ALGORITHM or ALGORITHM/PROTOCOL");
          }
          if (parsed.algorithm) {
            const auto& valid = netsim::algorithms_for(op);
            if (std::find(valid.begin(), valid.end(), *parsed.algorithm) == valid.end()) {
              const auto valid_names = netsim::algorithm_names_for(op);
              throw r.error(name, choice,
                            "not an algorithm for " + name + "; valid: 'auto', " +
                                core::quoted_list(valid_names) +
                                core::did_you_mean(choice, valid_names));
            }
          }
          s.collective_algorithms[name] = choice;
        },
        [name](YAML::Emitter& out, const Scenario& s) { out << s.algorithm_for(name); }));
  }
}

void validation(std::vector<Entry>& t) {
  const auto v = [](auto member) { return at(&Scenario::validation, member); };
  t.push_back(plain("validation.family", v(&ValidationSpec::family), "", kAny,
                    "Family of the published run: " + core::quoted_list(validation_families())));
  t.push_back(plain("validation.metric", v(&ValidationSpec::metric), "", kAny,
                    "The figure compared: " + core::quoted_list(validation_metrics())));
  t.push_back(plain("validation.published", v(&ValidationSpec::published), "", kAny,
                    "The source's own figure (required)"));
  t.push_back(plain("validation.published_tflops_per_gpu",
                    v(&ValidationSpec::published_tflops_per_gpu), "TFLOP/s", kAny,
                    "Model TFLOP/s per GPU the source prints beside its tokens/s (optional): "
                    "`validate` compares the source's FLOPs per token with the scenario's"));
  t.push_back(plain("validation.source", v(&ValidationSpec::source), "", kAny,
                    "Where it is published: document, table, row (required)"));
  t.push_back(plain("validation.notes", v(&ValidationSpec::notes), "", kAny,
                    "Assumptions behind the scenario"));
}

}  // namespace

void add_operations_fields(std::vector<Entry>& t) {
  perturbations(t);
  failures_section(t);
  recovery(t);
  costs(t);
  collectives(t);
  validation(t);
}

std::vector<Section> operations_sections() {
  std::vector<Section> out;
  Section perturbations;
  perturbations.path = "perturbations";
  perturbations.after = [](const MapReader& r, Scenario& s) {
    const MapReader slow(YAML::Node(), r.field("slow_gpu"), r.origin());
    if (s.slow_gpu >= 0 && !(s.slow_factor >= 1.0))
      throw slow.error("factor", fmt::format("{}", s.slow_factor), "a slowdown factor is >= 1");
    if (static_cast<std::int64_t>(s.slow_gpu) >=
        static_cast<std::int64_t>(s.cluster.nodes) * s.cluster.gpus_per_node)
      throw slow.error("gpu", std::to_string(s.slow_gpu),
                       fmt::format("no such GPU: the cluster has {} ({} nodes x {})",
                                   core::with_commas(static_cast<std::int64_t>(s.cluster.nodes) *
                                                     s.cluster.gpus_per_node),
                                   core::with_commas(s.cluster.nodes), s.cluster.gpus_per_node));
  };
  out.push_back(perturbations);
  Section validation;
  validation.path = "validation";
  validation.present = [](const Scenario& s) { return s.has_validation; };
  validation.stated = [](const YAML::Node& n) { return n.IsDefined() && !n.IsNull(); };
  validation.after = [](const MapReader& r, Scenario& s) {
    const ValidationSpec& v = s.validation;
    auto one_of = [&](const char* key, const std::string& value,
                      const std::vector<std::string>& valid) {
      if (std::find(valid.begin(), valid.end(), value) == valid.end())
        throw r.error(key, value,
                      (value.empty() ? std::string("required") : std::string("unknown")) +
                          "; valid: " + core::quoted_list(valid) +
                          core::did_you_mean(value, valid));
    };
    one_of("family", v.family, validation_families());
    one_of("metric", v.metric, validation_metrics());
    if (!(v.published > 0) || !std::isfinite(v.published))
      throw r.error("published", fmt::format("{}", v.published),
                    "required: the source's figure, a positive number");
    if (v.source.empty())
      throw r.error("source", "", "required: where the figure is published (document, table, row)");
    if (v.published_tflops_per_gpu != 0) {
      const std::string value = fmt::format("{}", v.published_tflops_per_gpu);
      if (!(v.published_tflops_per_gpu > 0) || !std::isfinite(v.published_tflops_per_gpu))
        throw r.error("published_tflops_per_gpu", value, "a positive number (or leave it out)");
      if (v.metric != "tokens_per_s_per_gpu")
        throw r.error("published_tflops_per_gpu", value,
                      "needs validation.metric tokens_per_s_per_gpu: the source's FLOPs per token "
                      "are this figure over its tokens/s");
    }
  };
  out.push_back(validation);
  return out;
}

}  // namespace twin::sim::detail
