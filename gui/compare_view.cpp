#include "gui/compare_view.hpp"

#include <yaml-cpp/yaml.h>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QHeaderView>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "gui/chart_style.hpp"
#include "gui/run_result.hpp"

namespace twin::gui {

namespace {

void flatten(const YAML::Node& node, const std::string& path,
             std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& kv : node)
      flatten(kv.second,
              path.empty() ? kv.first.as<std::string>() : path + "." + kv.first.as<std::string>(),
              out);
    return;
  }
  if (node.IsScalar()) {
    out[path] = node.as<std::string>();
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  out[path] = e.c_str();
}

std::map<std::string, std::string> fields(const sim::Scenario& s) {
  std::map<std::string, std::string> out;
  flatten(YAML::Load(sim::to_yaml(s)), "", out);
  out.erase("name");
  out.erase("description");
  out.erase("lesson");
  return out;
}

}  // namespace

std::vector<std::string> scenario_differences(const RunResult& a, const RunResult& b) {
  const auto fa = fields(a.scenario), fb = fields(b.scenario);
  std::vector<std::string> out;
  for (const auto& [key, value] : fb) {
    auto it = fa.find(key);
    const std::string before = it == fa.end() ? "(none)" : it->second;
    if (before != value) out.push_back(key + ": " + before + " -> " + value);
  }
  for (const auto& [key, value] : fa)
    if (fb.count(key) == 0) out.push_back(key + ": " + value + " -> (none)");
  return out;
}

std::vector<CompareRow> compare_rows(const RunResult& a, const RunResult& b) {
  std::vector<CompareRow> rows = {
      {"GPUs", "", double(a.bom.gpus), double(b.bom.gpus), false, 0},
      {"switches", "", double(a.bom.switches_total()), double(b.bom.switches_total()), true, 0},
      {"cables", "", double(a.bom.cables_total()), double(b.bom.cables_total()), true, 0},
      {"capital cost", "USD", a.cost.capex_usd, b.cost.capex_usd, true, 0},
  };
  if (a.has_step && b.has_step) {
    rows.push_back({"step time", "s", a.step.step_time_s, b.step.step_time_s, true, 3});
    rows.push_back({"MFU", "%", 100 * a.step.mfu, 100 * b.step.mfu, false, 1});
    rows.push_back({"tokens per second", "", a.step.tokens_per_s, b.step.tokens_per_s, false, 0});
    rows.push_back({"time to train, no failures", "days", a.step.time_to_train_days,
                    b.step.time_to_train_days, true, 1});
  }
  if (a.has_campaign && b.has_campaign) {
    rows.push_back({"time to train P50, with failures", "days", a.campaign.days.p50,
                    b.campaign.days.p50, true, 1});
    rows.push_back({"ETTR P50", "", a.campaign.ettr.p50, b.campaign.ettr.p50, false, 4});
  }
  if (a.has_step && b.has_step) {
    rows.push_back({"run cost", "USD", a.cost.run_cost_usd, b.cost.run_cost_usd, true, 0});
    rows.push_back({"cost per million tokens", "USD", a.cost.usd_per_million_tokens,
                    b.cost.usd_per_million_tokens, true, 3});
  }
  return rows;
}

CompareView::CompareView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  header_ = new QLabel(this);
  header_->setWordWrap(true);
  header_->setTextFormat(Qt::RichText);
  layout->addWidget(header_);
  table_ = new QTableWidget(this);
  table_->setColumnCount(5);
  table_->setHorizontalHeaderLabels({"", "baseline", "what-if", "change", "change (%)"});
  table_->verticalHeader()->setVisible(false);
  table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
  table_->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
  table_->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  layout->addWidget(table_);
  tiers_ = new QChartView(this);
  tiers_->setRenderHint(QPainter::Antialiasing);
  layout->addWidget(tiers_, 1);
  show_compare(nullptr, nullptr);
}

QStringList CompareView::legend_entries() const {
  QStringList out;
  if (tiers_->chart() != nullptr)
    for (auto* marker : tiers_->chart()->legend()->markers()) out << marker->label();
  out << "green: better, red: worse";
  return out;
}

QStringList CompareView::axis_labels() const {
  QStringList out;
  if (tiers_->chart() != nullptr)
    for (auto* axis : tiers_->chart()->axes()) out << axis->titleText();
  return out;
}

void CompareView::show_compare(const RunResult* a, const RunResult* b) {
  rows_.clear();
  if (a == nullptr || b == nullptr) {
    header_->setText(
        "<b>No baseline yet.</b> Run a scenario, press <i>Pin as baseline</i>, change something "
        "(oversubscription 2:1, a failed spine, another routing) and run again: the two runs "
        "appear here side by side.");
    table_->setRowCount(0);
    return;
  }
  const auto diffs = scenario_differences(*a, *b);
  QString changed;
  for (std::size_t i = 0; i < std::min<std::size_t>(diffs.size(), 8); ++i)
    changed += (i ? "; " : "") + QString::fromStdString(diffs[i]).toHtmlEscaped();
  if (diffs.size() > 8) changed += QString("; and %1 more").arg(diffs.size() - 8);
  header_->setText(QString("<b>Baseline</b> %1 &nbsp; vs &nbsp; <b>what-if</b> %2<br>"
                           "<b>What changed:</b> %3<br>%4")
                       .arg(QString::fromStdString(a->scenario.name).toHtmlEscaped(),
                            QString::fromStdString(b->scenario.name).toHtmlEscaped(),
                            changed.isEmpty() ? QString("nothing") : changed,
                            same_fabric(*a, *b)
                                ? QString("Same fabric: the Fabric tab can colour each cable "
                                          "by its change against the baseline.")
                                : QString("Different fabrics: compare the tiers below.")));
  rows_ = compare_rows(*a, *b);
  table_->setRowCount(static_cast<int>(rows_.size()));
  auto number = [](double v, int decimals, const std::string& unit) {
    if (unit == "USD") return usd_text(v);
    return thousands(v, decimals) +
           (unit.empty() || unit == "%" ? "" : " " + QString::fromStdString(unit)) +
           (unit == "%" ? " %" : "");
  };
  for (int i = 0; i < static_cast<int>(rows_.size()); ++i) {
    const auto& r = rows_[static_cast<std::size_t>(i)];
    const double delta = r.what_if - r.baseline;
    const double rel = r.baseline != 0 ? 100 * delta / std::abs(r.baseline) : 0;
    auto put = [&](int col, const QString& text, bool right = true) {
      auto* item = new QTableWidgetItem(text);
      item->setTextAlignment(Qt::AlignVCenter | (right ? Qt::AlignRight : Qt::AlignLeft));
      table_->setItem(i, col, item);
      return item;
    };
    put(0, QString::fromStdString(r.name), false);
    put(1, number(r.baseline, r.decimals, r.unit));
    put(2, number(r.what_if, r.decimals, r.unit));
    const QString sign = delta > 0 ? "+" : "";  // usd_text and thousands sign negatives
    auto* d = put(3, sign + number(delta, r.decimals, r.unit));
    auto* p = put(4, QString("%1%2 %").arg(sign).arg(rel, 0, 'f', 1));
    const double tol = 1e-9 * std::max(1.0, std::abs(r.baseline));
    if (std::abs(delta) > tol && r.name != "GPUs") {
      const bool better = (delta < 0) == r.lower_is_better;
      const QColor c = better ? QColor(210, 240, 210) : QColor(250, 215, 215);
      d->setBackground(c);
      p->setBackground(c);
    }
  }
  table_->resizeColumnsToContents();
  table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);

  // Utilisation of each cable tier, both runs.
  auto* chart = new QChart();
  chart->setTitle("Link utilisation per cable tier in one step (mean and busiest link)");
  auto* base = new QBarSet("baseline");
  auto* what = new QBarSet("what-if");
  base->setColor(QColor(150, 150, 160));
  what->setColor(QColor(235, 140, 30));
  QStringList categories;
  double top = 0;
  for (int t = 0; t < 3; ++t) {
    const auto& la = a->digest->tier_loads[static_cast<std::size_t>(t)];
    const auto& lb = b->digest->tier_loads[static_cast<std::size_t>(t)];
    if (la.links == 0 && lb.links == 0) continue;
    for (bool max : {false, true}) {
      const double va = 100 * (max ? la.max : la.mean), vb = 100 * (max ? lb.max : lb.mean);
      *base << va;
      *what << vb;
      top = std::max({top, va, vb});
      categories << QString("%1 %2").arg(QString::fromStdString(la.links ? la.name : lb.name),
                                         max ? "max" : "mean");
    }
  }
  auto* series = new QBarSeries();
  series->append(base);
  series->append(what);
  chart->addSeries(series);
  auto* x = new QBarCategoryAxis();
  x->append(categories);
  x->setTitleText("cable tier");
  auto* y = new QValueAxis();
  y->setTitleText("utilisation (%)");
  const auto ticks = nice_ticks(0, std::max(top, 1.0), 5);
  y->setRange(0, ticks.back());
  y->setTickCount(static_cast<int>(ticks.size()));
  y->setLabelFormat("%g");
  chart->addAxis(x, Qt::AlignBottom);
  chart->addAxis(y, Qt::AlignLeft);
  series->attachAxis(x);
  series->attachAxis(y);
  chart->legend()->setAlignment(Qt::AlignBottom);
  QChart* old = tiers_->chart();
  tiers_->setChart(chart);
  delete old;
}

}  // namespace twin::gui
