#include "twin/cost_model.hpp"

namespace twin::sim {

CostReport price(const CostSpec& c, const topology::Bom& bom, const topology::ClusterSpec& cluster,
                 const topology::FabricSpec& fabric, double wall_days, double tokens) {
  CostReport r;
  const double switches = bom.switches_total();
  const double port_scale = fabric.switch_port_gbps / 400.0;
  r.capex_usd = bom.nodes * c.node_usd +
                bom.nics * cluster.nic_gbps / 100.0 * c.nic_usd_per_100gbps +
                switches * fabric.switch_radix * c.switch_usd_per_port * port_scale +
                static_cast<double>(bom.transceivers_node_side + bom.transceivers_switch_side) *
                    c.transceiver_usd * port_scale +
                static_cast<double>(bom.cables_total()) * c.cable_usd;
  r.it_power_kw = bom.nodes * c.node_kw + switches * c.switch_kw;
  const double hours_per_life = c.amortization_years * 365.25 * 24;
  const double capital_per_hour = r.capex_usd / hours_per_life;
  const double energy_per_hour = r.it_power_kw * c.pue / 1000.0 * c.usd_per_mwh;
  r.gpu_hour_usd = (capital_per_hour + energy_per_hour) / bom.gpus;
  r.run_cost_usd = (capital_per_hour + energy_per_hour) * wall_days * 24;
  r.usd_per_million_tokens = tokens > 0 ? r.run_cost_usd / (tokens / 1e6) : 0;
  return r;
}

}  // namespace twin::sim
