#pragma once
// A failure campaign: cumulative progress of one trial against wall time with its interruptions;
// mean ETTR against the checkpoint interval with its Monte Carlo 95 % confidence band and
// Young/Daly's interval marked; the time to train of every trial as a histogram; the mean
// interruptions per run by cause. Units are stated once per chart: days of wall time,
// interruptions per run.

#include <QWidget>
#include <vector>

#include "twin/campaign.hpp"

class QChart;
class QChartView;

namespace twin::gui {

/// Histogram of values in round-width bins: bin i covers [lo + i w, lo + (i + 1) w); every
/// value falls in exactly one bin.
struct Histogram {
  double lo = 0, width = 1;
  std::vector<int> counts;
};
Histogram histogram(const std::vector<double>& values, int target_bins = 12);

class CampaignView : public QWidget {
  Q_OBJECT
 public:
  explicit CampaignView(QWidget* parent = nullptr);
  void show_campaign(const sim::CampaignReport& report);

  /// The charts (progress, ETTR vs interval, time to train, causes) for tests and exports.
  [[nodiscard]] std::vector<QChart*> charts() const;
  /// Counts of the time-to-train histogram's bars.
  [[nodiscard]] std::vector<int> histogram_counts() const { return hist_.counts; }

 private:
  QChartView* interval_ = nullptr;
  QChartView* causes_ = nullptr;
  QChartView* days_ = nullptr;
  QChartView* progress_ = nullptr;
  Histogram hist_;
};

}  // namespace twin::gui
