#pragma once
// A QGraphicsView that zooms with the wheel, pans by dragging and fits on a double click, keeping
// room on the left for labels that keep their pixel size.

#include <QGraphicsView>

namespace twin::gui {

/// Zoom with the wheel, pan by dragging, double click to fit.
class ZoomableView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit ZoomableView(QWidget* parent = nullptr);
  /// The drawing's extent, and the width of the labels drawn left of it (screen pixels).
  void set_content(const QRectF& box, double label_px);
  /// Shows the whole drawing.
  void fit();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  bool zoomed_ = false;
  QRectF box_;
  double label_px_ = 0;
};

}  // namespace twin::gui
