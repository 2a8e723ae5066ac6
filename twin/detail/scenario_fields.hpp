#pragma once
// Scenario fields of the step's software and parallelism choices and the hardware figures that
// come from the GPU's profile; split from scenario.cpp to keep one job per file.
#include <yaml-cpp/yaml.h>

#include "twin/scenario.hpp"
#include "twin/yaml_reader.hpp"

namespace twin::sim::detail {

/// parallelism.virtual_stages (an integer or auto), parallelism.stage_layers (auto or a list).
void read_pipeline_fields(MapReader& r, workload::ParallelismSpec& p);
/// cluster.nic_gbps, nvlink_GBps and nvlink_latency_ns default to the profile of cluster.gpu;
/// values the scenario states explicitly that differ from the profile are recorded in
/// Scenario::hardware_overrides. Throws core::Error naming cluster.gpu for an unknown profile.
void apply_profile_hardware(Scenario& s, const YAML::Node& cluster, const Origin& origin);
/// Writes parallelism.stage_layers in to_yaml's form (auto, a list, or null for an even split).
void write_stage_layers(YAML::Emitter& out, const workload::ParallelismSpec& p);

}  // namespace twin::sim::detail
