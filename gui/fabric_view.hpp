#pragma once
// The fabric drawn as it is built: cores on top, spines and leaves grouped by pod, scalable units
// of nodes below; cables colored by their utilization in the last simulated step. Zoom with the
// mouse wheel; hover a switch for its ports, bandwidth and traffic.

#include <QGraphicsView>

#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"

namespace twin::gui {

class FabricView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit FabricView(QWidget* parent = nullptr);
  /// `link_bytes` (per LinkId, one step) and `step_s` color the cables; empty: uncolored. Failed
  /// switches are drawn red, failed cables red dashed, degraded cables orange dashed.
  void show_fabric(const topology::Fabric& fabric, const std::vector<double>& link_bytes,
                   double step_s, const topology::FabricState* state = nullptr);
  [[nodiscard]] double last_draw_seconds() const { return draw_s_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;
  void wheelEvent(QWheelEvent* event) override;

 private:
  double draw_s_ = 0;
  bool zoomed_ = false;  // the user zoomed: keep their view on resize
};

/// Green (idle) to red (saturated).
QColor utilization_color(double utilization);

}  // namespace twin::gui
