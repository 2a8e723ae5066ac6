#include "gui/campaign_view.hpp"

#include <QAreaSeries>
#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QGridLayout>
#include <QHorizontalBarSeries>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "gui/chart_style.hpp"

namespace twin::gui {

Histogram histogram(const std::vector<double>& values, int target_bins) {
  Histogram h;
  if (values.empty()) return h;
  const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *lo_it, hi = *hi_it;
  const double span = std::max({hi - lo, std::abs(hi) * 1e-3, 1e-9});
  h.width = nice_step(span, target_bins);
  h.lo = std::floor(lo / h.width) * h.width;
  const int n = static_cast<int>(std::floor((hi - h.lo) / h.width)) + 1;
  h.counts.assign(static_cast<std::size_t>(n), 0);
  for (double v : values) {
    const int i = std::clamp(static_cast<int>(std::floor((v - h.lo) / h.width)), 0, n - 1);
    ++h.counts[static_cast<std::size_t>(i)];
  }
  return h;
}

namespace {

QValueAxis* value_axis(const QString& title, double lo, double hi, const char* format) {
  auto* axis = new QValueAxis();
  axis->setTitleText(title);
  const auto t = nice_ticks(lo, hi, 5);
  axis->setRange(t.front(), t.back());
  axis->setTickCount(static_cast<int>(t.size()));
  axis->setLabelFormat(format);
  return axis;
}

QChart* new_chart(const QString& title) {
  auto* chart = new QChart();
  chart->setTitle(title);
  chart->legend()->setVisible(true);
  chart->legend()->setAlignment(Qt::AlignBottom);
  chart->setMargins(QMargins(4, 4, 4, 4));
  return chart;
}

/// QChartView releases, but does not delete, the chart it showed before.
void replace_chart(QChartView* view, QChart* chart) {
  QChart* old = view->chart();
  view->setChart(chart);
  delete old;
}

void attach(QChart* chart, QAbstractSeries* series, QAbstractAxis* x, QAbstractAxis* y) {
  chart->addSeries(series);
  series->attachAxis(x);
  series->attachAxis(y);
}

}  // namespace

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

std::vector<QChart*> CampaignView::charts() const {
  return {progress_->chart(), interval_->chart(), days_->chart(), causes_->chart()};
}

void CampaignView::show_campaign(const sim::CampaignReport& r) {
  // One trial: work done against wall time; every interruption rolls progress back.
  {
    auto* chart = new_chart(QString("Trial 0: progress against wall time (failure-free: %1 days)")
                                .arg(r.healthy_days, 0, 'f', 1));
    auto* done = new QLineSeries();
    done->setName("work done");
    auto* failures = new QScatterSeries();
    failures->setName("interruption (work since the last checkpoint is lost)");
    failures->setMarkerSize(7);
    failures->setColor(QColor(210, 55, 60));
    auto* ideal = new QLineSeries();
    ideal->setName("without failures");
    ideal->setPen(QPen(Qt::gray, 1.5, Qt::DashLine));
    done->append(0, 0);
    double end_days = r.healthy_days;
    for (const auto& e : r.sample_events) {
      if (e.kind == "failure" || e.kind == "sdc_detected")
        failures->append(e.time_h / 24.0, 100 * e.progress);
      done->append(e.time_h / 24.0, 100 * e.progress);
      end_days = std::max(end_days, e.time_h / 24.0);
    }
    ideal->append(0, 0);
    ideal->append(r.healthy_days, 100);
    auto* x = value_axis("wall time (days)", 0, end_days, "%g");
    auto* y = value_axis("work done (% of the run)", 0, 100, "%g");
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    attach(chart, ideal, x, y);
    attach(chart, done, x, y);
    attach(chart, failures, x, y);
    replace_chart(progress_, chart);
  }

  // Mean ETTR against the interval, with the Monte Carlo band: the mean +- 1.96 standard errors.
  {
    auto* chart = new_chart(QString("ETTR vs checkpoint interval (mean of %1 trials per point, "
                                    "95 % Monte Carlo band)")
                                .arg(std::min(r.trials, 64)));
    auto* mean = new QLineSeries();
    mean->setName("mean ETTR");
    mean->setPointsVisible(true);
    auto* upper = new QLineSeries();
    auto* lower = new QLineSeries();
    double lo = 1, hi = 0, x_hi = 0;
    for (std::size_t i = 0; i < r.interval_curve.size(); ++i) {
      const auto [interval, ettr] = r.interval_curve[i];
      const double sem = i < r.interval_curve_sem.size() ? r.interval_curve_sem[i] : 0.0;
      mean->append(interval / 60.0, ettr);
      upper->append(interval / 60.0, ettr + 1.96 * sem);
      lower->append(interval / 60.0, ettr - 1.96 * sem);
      lo = std::min(lo, ettr - 1.96 * sem);
      hi = std::max(hi, ettr + 1.96 * sem);
      x_hi = std::max(x_hi, interval / 60.0);
    }
    if (hi < lo) lo = hi = r.ettr.mean;
    const double pad = std::max(0.1 * (hi - lo), 1e-4);
    auto* x = value_axis("checkpoint interval (minutes)", 0, std::max(1.0, x_hi), "%g");
    auto* y = value_axis("ETTR (share of wall time spent training)", lo - pad, hi + pad, "%.4f");
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    auto* band = new QAreaSeries(upper, lower);
    band->setName("95 % band");
    band->setColor(QColor(66, 120, 190, 60));
    band->setBorderColor(QColor(66, 120, 190, 90));
    attach(chart, band, x, y);
    attach(chart, mean, x, y);
    auto* yd = new QLineSeries();
    yd->setName(QString("Young/Daly %1 min").arg(r.young_daly_s / 60, 0, 'f', 1));
    yd->setPen(QPen(QColor(210, 55, 60), 2, Qt::DashLine));
    yd->append(r.young_daly_s / 60, y->min());
    yd->append(r.young_daly_s / 60, y->max());
    attach(chart, yd, x, y);
    if (r.best_interval_s > 0) {
      auto* best = new QScatterSeries();
      best->setName(QString("best %1 min").arg(r.best_interval_s / 60, 0, 'f', 1));
      best->setMarkerSize(11);
      best->setColor(QColor(90, 170, 70));
      for (const auto& [interval, ettr] : r.interval_curve)
        if (interval == r.best_interval_s) best->append(interval / 60.0, ettr);
      attach(chart, best, x, y);
    }
    replace_chart(interval_, chart);
  }

  // Time to train of every trial.
  {
    hist_ = histogram(r.trial_days);
    const double w = hist_.width;
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(w) + 1e-9)));
    auto* chart = new_chart(QString("Time to train over %1 trials: P10 %2, P50 %3, P90 %4 days")
                                .arg(r.trial_days.size())
                                .arg(r.days.p10, 0, 'f', 1)
                                .arg(r.days.p50, 0, 'f', 1)
                                .arg(r.days.p90, 0, 'f', 1));
    auto* counts = new QBarSet("trials finishing in the bin");
    counts->setColor(QColor(66, 120, 190));
    QStringList bins;
    int top = 1;
    for (std::size_t i = 0; i < hist_.counts.size(); ++i) {
      *counts << hist_.counts[i];
      top = std::max(top, hist_.counts[i]);
      const double a = hist_.lo + static_cast<double>(i) * w;
      bins << QString::number(a, 'f', decimals);
    }
    auto* series = new QBarSeries();
    series->append(counts);
    series->setBarWidth(0.95);
    auto* x = new QBarCategoryAxis();
    x->append(bins);
    x->setTitleText(QString("time to train (days of wall time; bins of %1 days from the "
                            "value shown)")
                        .arg(w, 0, 'g', 3));
    x->setLabelsAngle(bins.size() > 14 ? -45 : 0);
    auto* y = new QValueAxis();
    y->setTitleText("trials");
    y->setLabelFormat("%d");
    const double step = std::max(1.0, nice_step(top, 5));
    y->setRange(0, std::ceil(top / step) * step);
    y->setTickCount(static_cast<int>(std::ceil(top / step)) + 1);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    attach(chart, series, x, y);
    replace_chart(days_, chart);
  }

  // Interruptions per run by cause (top ten, the rest together).
  {
    std::vector<std::pair<std::string, double>> sorted(r.interruptions_by_cause.begin(),
                                                       r.interruptions_by_cause.end());
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    double per_run = 0;
    for (const auto& [name, n] : sorted) per_run += n;
    if (sorted.size() > 10) {
      double rest = 0;
      for (std::size_t i = 9; i < sorted.size(); ++i) rest += sorted[i].second;
      sorted.resize(9);
      sorted.emplace_back("other causes", rest);
    }
    auto* chart = new_chart(QString("Interruptions by cause: %1 per run in total (%2 per day)")
                                .arg(per_run, 0, 'f', 1)
                                .arg(r.interruptions_per_day, 0, 'f', 2));
    auto* set = new QBarSet(QString("mean interruptions per run (%1 trials)").arg(r.trials));
    set->setColor(QColor(210, 55, 60));
    QStringList names;
    double top = 0;
    for (auto it = sorted.rbegin(); it != sorted.rend(); ++it) {  // largest on top
      *set << it->second;
      names << QString::fromStdString(it->first);
      top = std::max(top, it->second);
    }
    auto* bars = new QHorizontalBarSeries();
    bars->append(set);
    auto* y = new QBarCategoryAxis();
    y->append(names);
    y->setTitleText("cause");
    auto* x = value_axis("interruptions per run", 0, std::max(top, 1e-3), "%g");
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    attach(chart, bars, x, y);
    replace_chart(causes_, chart);
  }
}

}  // namespace twin::gui
