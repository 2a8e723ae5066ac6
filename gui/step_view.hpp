#pragma once
// One training step: per pipeline stage (rank class), the compute stream (compute + blocking
// TP/EP collectives) and the data-parallel communication stream on a time axis, with the
// breakdown bar and MFU / tokens per second above.

#include <QGraphicsView>

#include "twin/step_sim.hpp"

namespace twin::gui {

class StepView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit StepView(QWidget* parent = nullptr);
  void show_step(const sim::StepReport& report, const std::string& title);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  bool zoomed_ = false;
};

}  // namespace twin::gui
