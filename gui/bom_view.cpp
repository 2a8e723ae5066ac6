#include "gui/bom_view.hpp"

#include <fmt/format.h>
#include <QFileDialog>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>
#include <fstream>

#include "gui/chart_style.hpp"

namespace twin::gui {

std::vector<BomRow> bom_rows(const topology::Bom& b, const topology::ClusterSpec& cluster,
                             const topology::FabricSpec& fabric, const sim::CostSpec& c) {
  // Unit prices as twin::sim::price() applies them: switch ports, optics scale with port speed.
  const double port_scale = fabric.switch_port_gbps / 400.0;
  const double switch_usd = fabric.switch_radix * c.switch_usd_per_port * port_scale;
  const std::string ports =
      fmt::format("{} x {:g} Gb/s ports", fabric.switch_radix, fabric.switch_port_gbps);
  auto switch_row = [&](const std::string& tier, const topology::TierPorts& t) {
    return BomRow{tier,
                  fmt::format("{} switches ({}; {} used, {} free)", tier, ports,
                              thousands(double(t.ports_used)).toStdString(),
                              thousands(double(t.ports_free)).toStdString()),
                  "switch",
                  double(t.switches),
                  switch_usd,
                  true};
  };
  std::vector<BomRow> rows = {
      {"compute", fmt::format("servers ({} GPUs each)", cluster.gpus_per_node), "server",
       double(b.nodes), c.node_usd, true},
      {"compute", fmt::format("GPUs ({})", cluster.gpu), "GPU", double(b.gpus), 0, false},
      {"compute", "NVSwitch domains", "domain", double(b.nvswitch_domains), 0, false},
      {"node - leaf", fmt::format("compute NICs ({:g} Gb/s)", cluster.nic_gbps), "NIC",
       double(b.nics), cluster.nic_gbps / 100.0 * c.nic_usd_per_100gbps, true},
      {"node - leaf", "NIC-side transceivers", "module", double(b.transceivers_node_side),
       c.transceiver_usd * port_scale, true},
      {"node - leaf",
       b.management_nodes > 0
           ? fmt::format("cables node - leaf (incl. {} fabric-manager links)", b.management_nodes)
           : std::string("cables node - leaf"),
       "cable", double(b.cables_node_leaf), c.cable_usd, true},
      switch_row("leaf", b.leaf),
  };
  if (b.spine.switches > 0) rows.push_back(switch_row("spine", b.spine));
  if (b.core.switches > 0) rows.push_back(switch_row("core", b.core));
  rows.push_back({"switches", "switch-side transceivers (cages)", "module",
                  double(b.transceivers_switch_side), c.transceiver_usd * port_scale, true});
  if (b.cables_leaf_spine > 0)
    rows.push_back({"leaf - spine", "cables leaf - spine", "cable", double(b.cables_leaf_spine),
                    c.cable_usd, true});
  if (b.cables_spine_core > 0)
    rows.push_back({"spine - core", "cables spine - core", "cable", double(b.cables_spine_core),
                    c.cable_usd, true});
  return rows;
}

std::string bom_csv(const std::vector<BomRow>& rows) {
  auto quoted = [](const std::string& s) {
    std::string out = "\"";
    for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
    return out + "\"";
  };
  std::string out = "tier,item,count,unit,unit_cost_usd,total_usd\n";
  double total = 0;
  for (const auto& r : rows) {
    out += fmt::format("{},{},{:.0f},{},{},{}\n", quoted(r.tier), quoted(r.item), r.count, r.unit,
                       r.priced ? fmt::format("{:.2f}", r.unit_usd) : std::string(),
                       r.priced ? fmt::format("{:.2f}", r.total_usd()) : std::string());
    total += r.total_usd();
  }
  out += fmt::format("\"total\",\"capital cost\",,,,{:.2f}\n", total);
  return out;
}

BomView::BomView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  table_ = new QTableWidget(this);
  table_->setColumnCount(6);
  table_->setHorizontalHeaderLabels(header_labels());
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setAlternatingRowColors(true);
  layout->addWidget(table_, 1);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  auto* button = new QPushButton("Export CSV...", this);
  button->setMaximumWidth(160);
  layout->addWidget(button);
  connect(button, &QPushButton::clicked, this, &BomView::export_csv_dialog);
}

QStringList BomView::header_labels() const {
  return {"tier", "item", "count", "unit", "unit cost (USD)", "total (USD)"};
}

void BomView::show_bom(const topology::Bom& bom, const topology::ClusterSpec& cluster,
                       const topology::FabricSpec& fabric, const sim::CostSpec& costs) {
  rows_ = bom_rows(bom, cluster, fabric, costs);
  table_->clearContents();
  table_->setRowCount(static_cast<int>(rows_.size()) + 1);
  double total = 0;
  auto cell = [&](int row, int col, const QString& text, bool number, bool bold = false) {
    auto* item = new QTableWidgetItem(text);
    item->setTextAlignment(Qt::AlignVCenter | (number ? Qt::AlignRight : Qt::AlignLeft));
    if (bold) {
      QFont f = item->font();
      f.setBold(true);
      item->setFont(f);
    }
    table_->setItem(row, col, item);
  };
  for (int i = 0; i < static_cast<int>(rows_.size()); ++i) {
    const auto& r = rows_[static_cast<std::size_t>(i)];
    cell(i, 0, QString::fromStdString(r.tier), false);
    cell(i, 1, QString::fromStdString(r.item), false);
    cell(i, 2, thousands(r.count), true);
    cell(i, 3, QString::fromStdString(r.unit), false);
    cell(i, 4, r.priced ? thousands(r.unit_usd) : QString("in server price"), true);
    cell(i, 5, r.priced ? thousands(r.total_usd()) : QString("-"), true);
    total += r.total_usd();
  }
  const int last = static_cast<int>(rows_.size());
  cell(last, 0, "total", false, true);
  cell(last, 1, "capital cost", false, true);
  cell(last, 5, thousands(total), true, true);
  table_->resizeColumnsToContents();
  table_->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
  const sim::CostReport price = sim::price(costs, bom, cluster, fabric, 0, 0);
  const double servers = rows_.empty() ? 0.0 : rows_.front().total_usd();
  summary_->setText(
      QString("Capital cost %1 for %2 GPUs (%3 per GPU); the network (NICs, optics, cables, "
              "switches) is %12 % of it. IT power %4 kW; amortised over %5 years "
              "with energy at $%6/MWh and PUE %7: %8 per GPU-hour. Injection %9 GB/s, bisection "
              "%10 GB/s, leaf oversubscription %11:1. Prices are illustrative defaults unless the "
              "scenario's costs section sets them.")
          .arg(usd_text(total), thousands(bom.gpus), usd_text(total / std::max(1, bom.gpus)),
               thousands(price.it_power_kw))
          .arg(costs.amortization_years)
          .arg(costs.usd_per_mwh)
          .arg(costs.pue)
          .arg(QString("$%1").arg(price.gpu_hour_usd, 0, 'f', 2), thousands(bom.injection_GBps),
               thousands(bom.bisection_GBps))
          .arg(bom.leaf_oversubscription, 0, 'g', 3)
          .arg(total > 0 ? 100 * (total - servers) / total : 0.0, 0, 'f', 1));
}

bool BomView::export_csv(const QString& path) const {
  std::ofstream out(path.toStdString());
  out << bom_csv(rows_);
  return static_cast<bool>(out);
}

void BomView::export_csv_dialog() {
  const QString path =
      QFileDialog::getSaveFileName(this, "Export bill of materials", {}, "CSV (*.csv)");
  if (!path.isEmpty()) export_csv(path);
}

}  // namespace twin::gui
