#include "gui/step_view.hpp"

#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QResizeEvent>

namespace twin::gui {

StepView::StepView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setBackgroundBrush(Qt::white);
  setDragMode(QGraphicsView::ScrollHandDrag);
}

void StepView::show_step(const sim::StepReport& r, const std::string& title) {
  QGraphicsScene* s = scene();
  s->clear();
  const double width = 1400, row = 26, x0 = 170;
  const double scale = width / std::max(1e-9, r.step_time_s);
  auto* head = s->addSimpleText(QString::fromStdString(title) +
                                QString("\nstep %1 s   %2 tokens/s   %3 TFLOP/s per GPU   MFU %4 %")
                                    .arg(r.step_time_s, 0, 'f', 3)
                                    .arg(r.tokens_per_s, 0, 'f', 0)
                                    .arg(r.tflops_per_gpu, 0, 'f', 0)
                                    .arg(100 * r.mfu, 0, 'f', 1));
  head->setPos(0, -90);
  // Breakdown bar (critical stage).
  const QColor colors[] = {QColor(70, 130, 200), QColor(230, 140, 50),  QColor(200, 80, 160),
                           QColor(200, 60, 60),  QColor(170, 170, 170), QColor(90, 170, 90),
                           QColor(120, 90, 200)};
  double x = x0;
  int i = 0;
  for (const auto& [name, seconds] : r.breakdown) {
    const double w = seconds * scale;
    auto* bar = s->addRect(QRectF(x, -40, w, 18), Qt::NoPen, colors[i % 7]);
    bar->setToolTip(QString("%1: %2 s").arg(QString::fromStdString(name)).arg(seconds, 0, 'f', 3));
    if (w > 60) s->addSimpleText(QString::fromStdString(name))->setPos(x + 2, -40);
    x += w;
    ++i;
  }
  s->addSimpleText("breakdown")->setPos(0, -40);
  int stages = 0;
  for (const auto& op : r.timeline) stages = std::max(stages, op.stage + 1);
  for (int st = 0; st < stages; ++st) {
    s->addSimpleText(QString("stage %1 compute").arg(st))->setPos(0, st * 2 * row);
    s->addSimpleText(QString("stage %1 DP comm").arg(st))->setPos(0, (st * 2 + 1) * row);
  }
  for (const auto& op : r.timeline) {
    const bool compute = op.stream == "compute";
    const double y = (op.stage * 2 + (compute ? 0 : 1)) * row;
    QColor c = compute ? (op.name.rfind("F", 0) == 0 ? QColor(70, 130, 200)
                          : op.name == "optimizer"   ? QColor(90, 170, 90)
                                                     : QColor(40, 90, 160))
                       : QColor(230, 140, 50);
    auto* item = s->addRect(QRectF(x0 + op.start_s * scale, y + 2,
                                   std::max(0.5, (op.end_s - op.start_s) * scale), row - 4),
                            QPen(Qt::white, 0.3), c);
    item->setToolTip(QString("%1\n%2 - %3 ms")
                         .arg(QString::fromStdString(op.name))
                         .arg(op.start_s * 1e3, 0, 'f', 2)
                         .arg(op.end_s * 1e3, 0, 'f', 2));
  }
  for (int t = 0; t <= 10; ++t) {
    const double sec = r.step_time_s * t / 10;
    s->addLine(x0 + sec * scale, stages * 2 * row, x0 + sec * scale, stages * 2 * row + 6);
    s->addSimpleText(QString("%1 s").arg(sec, 0, 'f', 2))
        ->setPos(x0 + sec * scale - 12, stages * 2 * row + 8);
  }
  s->setSceneRect(s->itemsBoundingRect().adjusted(-10, -10, 10, 10));
  fitInView(s->sceneRect(), Qt::KeepAspectRatio);
}

}  // namespace twin::gui

namespace twin::gui {

void StepView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (!zoomed_) fitInView(sceneRect(), Qt::KeepAspectRatio);  // keep the whole picture in view
}

}  // namespace twin::gui
