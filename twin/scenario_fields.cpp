#include <fmt/format.h>

#include <cmath>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "twin/detail/scenario_fields.hpp"

namespace twin::sim::detail {

void read_pipeline_fields(MapReader& r, workload::ParallelismSpec& p) {
  const YAML::Node v = r.raw("virtual_stages");
  if (v.IsDefined() && !v.IsNull()) {
    if (!v.IsScalar()) throw r.error("virtual_stages", "", "expected an integer or auto");
    if (v.Scalar() == "auto") {
      p.virtual_stages = 0;
    } else {
      try {
        p.virtual_stages = v.as<int>();
      } catch (const YAML::BadConversion&) {
        throw r.error("virtual_stages", v.Scalar(), "expected an integer or auto");
      }
      if (p.virtual_stages < 1)
        throw r.error("virtual_stages", v.Scalar(), "must be at least 1 (or auto)");
    }
  }
  const YAML::Node layers = r.raw("stage_layers");
  if (layers.IsDefined() && !layers.IsNull()) {
    p.stage_layers.clear();
    p.stage_layers_auto = false;
    if (layers.IsScalar() && layers.Scalar() == "auto") {
      p.stage_layers_auto = true;
    } else if (layers.IsSequence()) {
      for (const auto& n : layers) {
        int count = 0;
        try {
          count = n.as<int>();
        } catch (const YAML::BadConversion&) {
          throw r.error("stage_layers", n.Scalar(), "expected a list of layer counts or auto");
        }
        if (count < 1)
          throw r.error("stage_layers", n.Scalar(), "every stage needs at least one layer");
        p.stage_layers.push_back(count);
      }
    } else {
      throw r.error("stage_layers", layers.IsScalar() ? layers.Scalar() : "",
                    "expected auto or a list of layer counts, one per pipeline stage");
    }
  }
}

void apply_profile_hardware(Scenario& s, const YAML::Node& cluster, const Origin& origin) {
  calibrate::Profile profile;
  try {
    profile = calibrate::load_profile(s.cluster.gpu);
  } catch (const core::Error& e) {
    throw core::Error("cluster.gpu", s.cluster.gpu, e.reason(), origin.source_of("cluster.gpu"));
  }
  struct Item {
    const char* key;
    double& field;
    double from_profile;
    const char* unit;
  };
  Item items[] = {
      {"nic_gbps", s.cluster.nic_gbps, profile.nic_gbps.value, "Gb/s"},
      {"nvlink_GBps", s.cluster.nvlink_GBps, profile.nvlink_GBps.value, "GB/s"},
      {"nvlink_latency_ns", s.cluster.nvlink_latency_ns, profile.nvlink_latency_us.value * 1e3,
       "ns"},
  };
  s.hardware_overrides.clear();
  for (auto& item : items) {
    const bool stated =
        cluster.IsMap() && cluster[item.key].IsDefined() && !cluster[item.key].IsNull();
    if (!stated) {
      item.field = item.from_profile;
    } else if (std::abs(item.field - item.from_profile) > 1e-9 * std::abs(item.from_profile)) {
      s.hardware_overrides.push_back(fmt::format("cluster.{} = {:g} {} (profile {}: {:g})",
                                                 item.key, item.field, item.unit, profile.name,
                                                 item.from_profile));
    }
  }
}

void write_stage_layers(YAML::Emitter& out, const workload::ParallelismSpec& p) {
  if (p.stage_layers_auto) {
    out << "auto";
  } else if (p.stage_layers.empty()) {
    out << YAML::Null;
  } else {
    out << YAML::Flow << YAML::BeginSeq;
    for (int n : p.stage_layers) out << n;
    out << YAML::EndSeq;
  }
}

}  // namespace twin::sim::detail
