#pragma once
/// Cost and capacity model: the bill of materials priced, the cluster's power draw, and what a
/// training run costs. Every default is an illustrative round number for planning comparisons,
/// not a quote: put real prices in the scenario's `costs` section.

#include "topology/bom.hpp"
#include "topology/spec.hpp"

namespace twin::sim {

struct CostSpec {
  double node_usd = 300000;          ///< one 8-GPU HGX server without compute NICs (illustrative)
  double nic_usd_per_100gbps = 500;  ///< compute NIC price per 100 Gb/s of line rate (illustrative)
  double switch_usd_per_port =
      800;                       ///< switch price per 400 Gb/s port, linear in speed (illustrative)
  double transceiver_usd = 800;  ///< one 400 Gb/s optical module, linear in speed (illustrative)
  double cable_usd = 150;        ///< one fibre or copper cable (illustrative)
  double node_kw = 10.2;         ///< DGX H100 system maximum power (datasheet figure)
  double switch_kw = 1.7;        ///< 64-port NDR switch with optics (illustrative)
  double usd_per_mwh = 100;      ///< electricity (illustrative)
  double pue = 1.3;              ///< facility overhead on IT power (illustrative)
  double amortization_years = 4;  ///< capital spread over this life for a GPU-hour price
  bool operator==(const CostSpec&) const = default;
};

struct CostReport {
  double capex_usd = 0;
  double it_power_kw = 0;
  double gpu_hour_usd = 0;  ///< amortized capital + energy per GPU-hour
  double run_cost_usd = 0;  ///< GPU-hours of the run x gpu_hour_usd
  double usd_per_million_tokens = 0;
};

/// Prices the BOM and a run of `wall_days` that trains `tokens` tokens.
CostReport price(const CostSpec& c, const topology::Bom& bom, const topology::ClusterSpec& cluster,
                 const topology::FabricSpec& fabric, double wall_days, double tokens);

}  // namespace twin::sim
