#pragma once
// A failure campaign: cumulative progress of one trial against wall time with its interruptions,
// mean ETTR against the checkpoint interval (with Young/Daly's), the distribution of time to
// train over the trials, and the interruptions by cause.

#include <QWidget>

#include "twin/campaign.hpp"

class QChartView;

namespace twin::gui {

class CampaignView : public QWidget {
  Q_OBJECT
 public:
  explicit CampaignView(QWidget* parent = nullptr);
  void show_campaign(const sim::CampaignReport& report);

 private:
  QChartView* interval_ = nullptr;
  QChartView* causes_ = nullptr;
  QChartView* days_ = nullptr;
  QChartView* progress_ = nullptr;
};

}  // namespace twin::gui
