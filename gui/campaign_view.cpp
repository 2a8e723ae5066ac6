#include "gui/campaign_view.hpp"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QGridLayout>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

namespace twin::gui {

CampaignView::CampaignView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QGridLayout(this);
  interval_ = new QChartView(this);
  causes_ = new QChartView(this);
  days_ = new QChartView(this);
  progress_ = new QChartView(this);
  for (auto* v : {interval_, causes_, days_, progress_}) v->setRenderHint(QPainter::Antialiasing);
  layout->addWidget(progress_, 0, 0);
  layout->addWidget(interval_, 0, 1);
  layout->addWidget(days_, 1, 0);
  layout->addWidget(causes_, 1, 1);
}

void CampaignView::show_campaign(const sim::CampaignReport& r) {
  // One trial: work done against wall time; every interruption rolls progress back.
  auto* trace = new QChart();
  auto* done = new QLineSeries();
  done->setName("progress (trial 0)");
  auto* failures = new QScatterSeries();
  failures->setName("interruptions");
  failures->setMarkerSize(6);
  done->append(0, 0);
  for (const auto& e : r.sample_events) {
    if (e.kind == "failure" || e.kind == "sdc_detected")
      failures->append(e.time_h / 24.0, 100 * e.progress);
    done->append(e.time_h / 24.0, 100 * e.progress);
  }
  trace->addSeries(done);
  trace->addSeries(failures);
  trace->createDefaultAxes();
  trace->setTitle("Cumulative progress (%) vs wall time (days)");
  progress_->setChart(trace);

  auto* chart = new QChart();
  auto* line = new QLineSeries();
  line->setName("mean ETTR");
  for (const auto& [interval, ettr] : r.interval_curve) line->append(interval / 60.0, ettr);
  auto* yd = new QScatterSeries();
  yd->setName(QString("Young/Daly %1 min").arg(r.young_daly_s / 60, 0, 'f', 1));
  double yd_ettr = r.ettr.mean;
  for (const auto& [interval, ettr] : r.interval_curve)
    if (std::abs(interval - r.young_daly_s) < 1e-6 * r.young_daly_s) yd_ettr = ettr;
  yd->append(r.young_daly_s / 60.0, yd_ettr);
  chart->addSeries(line);
  chart->addSeries(yd);
  chart->createDefaultAxes();
  chart->setTitle("ETTR vs checkpoint interval (minutes)");
  interval_->setChart(chart);

  auto* causes = new QChart();
  std::vector<std::pair<std::string, double>> sorted(r.interruptions_by_cause.begin(),
                                                     r.interruptions_by_cause.end());
  std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) { return a.second > b.second; });
  if (sorted.size() > 10) sorted.resize(10);
  auto* set = new QBarSet("interruptions per run");
  QStringList names;
  for (const auto& [name, n] : sorted) {
    *set << n;
    names << QString::fromStdString(name);
  }
  auto* bars = new QBarSeries();
  bars->append(set);
  causes->addSeries(bars);
  auto* axis = new QBarCategoryAxis();
  axis->append(names);
  causes->addAxis(axis, Qt::AlignBottom);
  bars->attachAxis(axis);
  auto* values = new QValueAxis();
  causes->addAxis(values, Qt::AlignLeft);
  bars->attachAxis(values);
  causes->setTitle(
      QString("Interruptions by cause (%1 per day)").arg(r.interruptions_per_day, 0, 'f', 2));
  causes_->setChart(causes);

  auto* hist = new QChart();
  auto* counts = new QBarSet("trials");
  QStringList bins;
  if (!r.trial_days.empty()) {
    const double lo = *std::min_element(r.trial_days.begin(), r.trial_days.end());
    const double hi = *std::max_element(r.trial_days.begin(), r.trial_days.end());
    const int n = 12;
    std::vector<int> c(n, 0);
    for (double d : r.trial_days)
      c[std::min(n - 1, static_cast<int>((d - lo) / std::max(1e-9, hi - lo) * n))]++;
    for (int i = 0; i < n; ++i) {
      *counts << c[i];
      bins << QString::number(lo + (i + 0.5) * (hi - lo) / n, 'f', 1);
    }
  }
  auto* hs = new QBarSeries();
  hs->append(counts);
  hist->addSeries(hs);
  auto* hx = new QBarCategoryAxis();
  hx->append(bins);
  hist->addAxis(hx, Qt::AlignBottom);
  hs->attachAxis(hx);
  auto* hy = new QValueAxis();
  hist->addAxis(hy, Qt::AlignLeft);
  hs->attachAxis(hy);
  hist->setTitle(QString("Time to train (days): P10 %1, P50 %2, P90 %3")
                     .arg(r.days.p10, 0, 'f', 1)
                     .arg(r.days.p50, 0, 'f', 1)
                     .arg(r.days.p90, 0, 'f', 1));
  days_->setChart(hist);
}

}  // namespace twin::gui
