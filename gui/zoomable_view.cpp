#include "gui/zoomable_view.hpp"

#include <QWheelEvent>
#include <algorithm>

namespace twin::gui {

ZoomableView::ZoomableView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setRenderHint(QPainter::Antialiasing, true);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setBackgroundBrush(QColor(252, 252, 253));
  setViewportUpdateMode(QGraphicsView::BoundingRectViewportUpdate);
  setTransformationAnchor(QGraphicsView::AnchorUnderMouse);
}

void ZoomableView::set_content(const QRectF& box, double label_px) {
  box_ = box;
  label_px_ = label_px;
  fit();
}

void ZoomableView::fit() {
  zoomed_ = false;
  resetTransform();
  // Leave room on screen for the labels on the left, which keep their pixel size.
  const QSize port = viewport()->size();
  const double pad_px = 24;
  const double scale =
      std::max(1e-6, std::min((port.width() - label_px_ - 2 * pad_px) / std::max(1.0, box_.width()),
                              (port.height() - 2 * pad_px) / std::max(1.0, box_.height())));
  setSceneRect(box_.adjusted(-(label_px_ + pad_px) / scale, -pad_px / scale, pad_px / scale,
                             pad_px / scale));
  fitInView(sceneRect(), Qt::KeepAspectRatio);
}

void ZoomableView::wheelEvent(QWheelEvent* event) {
  const double factor = event->angleDelta().y() > 0 ? 1.25 : 0.8;
  zoomed_ = true;
  scale(factor, factor);
}

void ZoomableView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (!zoomed_) fit();
}

void ZoomableView::mouseDoubleClickEvent(QMouseEvent*) {
  fit();
}

}  // namespace twin::gui
