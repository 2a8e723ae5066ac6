#include "gui/fabric_view.hpp"

#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QResizeEvent>
#include <QWheelEvent>
#include <algorithm>
#include <chrono>
#include <map>

namespace twin::gui {

QColor utilization_color(double u) {
  u = std::clamp(u, 0.0, 1.0);
  return QColor::fromHsvF(static_cast<float>((1.0 - u) * 0.33), 0.85f, 0.85f);
}

FabricView::FabricView(QWidget* parent) : QGraphicsView(parent) {
  setScene(new QGraphicsScene(this));
  setRenderHint(QPainter::Antialiasing, false);
  setDragMode(QGraphicsView::ScrollHandDrag);
  setBackgroundBrush(QColor(250, 250, 252));
}

void FabricView::wheelEvent(QWheelEvent* event) {
  const double factor = event->angleDelta().y() > 0 ? 1.25 : 0.8;
  zoomed_ = true;
  scale(factor, factor);
}

void FabricView::show_fabric(const topology::Fabric& fabric, const std::vector<double>& link_bytes,
                             double step_s, const topology::FabricState* state) {
  const auto start = std::chrono::steady_clock::now();
  QGraphicsScene* s = scene();
  s->clear();
  const auto& g = fabric.geometry();
  const double pod_width = 1200.0, gap = 80.0;
  const double width = g.pods * pod_width + (g.pods - 1) * gap;
  // Tiers spaced in proportion to the width so the drawing keeps a readable aspect ratio.
  const double step = std::max(220.0, width * 0.1);
  const double y_core = 0, y_spine = step, y_leaf = 2 * step, y_nodes = 2.6 * step;
  QFont font;
  font.setPointSizeF(std::max(9.0, width / 250.0));
  auto x_in_pod = [&](int pod, int i, int count) {
    return pod * (pod_width + gap) + (i + 0.5) * pod_width / std::max(1, count);
  };
  std::vector<QPointF> at(fabric.node_count());
  for (int l = 0; l < g.leaves; ++l)
    at[fabric.leaf(l).index()] = {
        x_in_pod(g.pod_of_leaf(l), l % g.leaves_per_pod, g.leaves_per_pod), y_leaf};
  for (int sp = 0; sp < g.spines; ++sp)
    at[fabric.spine(sp).index()] = {
        x_in_pod(sp / g.spines_per_pod, sp % g.spines_per_pod, g.spines_per_pod), y_spine};
  for (int c = 0; c < g.cores; ++c)
    at[fabric.core_switch(c).index()] = {(c + 0.5) * width / std::max(1, g.cores), y_core};

  // Cables between switches: one line per switch pair (parallel cables merged), colored by the
  // busier direction's utilization.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::pair<double, double>>
      pairs;                                                               // bytes, capacity
  std::map<std::pair<std::uint32_t, std::uint32_t>, double> worst_factor;  // 1 healthy, 0 down
  double traffic_total = 0;
  std::vector<double> switch_bytes(fabric.node_count(), 0.0);
  for (const auto& cable : fabric.cables()) {
    const auto& up = fabric.link(cable.up);
    const double bytes =
        link_bytes.empty() ? 0.0
                           : std::max(link_bytes[cable.up.index()], link_bytes[cable.down.index()]);
    switch_bytes[up.dst.index()] += bytes;
    if (fabric.is_switch(up.src)) switch_bytes[up.src.index()] += bytes;
    traffic_total += bytes;
    if (cable.kind == topology::LinkKind::nic_leaf) continue;
    auto& p = pairs[{up.src.value(), up.dst.value()}];
    p.first = std::max(p.first, bytes);
    p.second = up.bandwidth_Bps;
    auto [it, fresh] = worst_factor.try_emplace({up.src.value(), up.dst.value()}, 1.0);
    if (state != nullptr)
      it->second = std::min(
          {it->second, state->capacity_factor(cable.up), state->capacity_factor(cable.down)});
  }
  for (const auto& [key, bc] : pairs) {
    const double u = step_s > 0 && bc.second > 0 ? bc.first / (bc.second * step_s) : 0.0;
    QPen pen(link_bytes.empty() ? QColor(170, 170, 190) : utilization_color(u));
    pen.setWidthF(link_bytes.empty() ? 0.5 : 0.5 + 2.5 * std::min(1.0, u));
    const double factor = worst_factor[key];
    if (factor < 1.0) {  // a failed (red) or degraded (orange) cable stands out
      pen = QPen(factor <= 0 ? QColor(220, 0, 0) : QColor(255, 140, 0), 3.0, Qt::DashLine);
    }
    auto* line = s->addLine(QLineF(at[key.first], at[key.second]), pen);
    if (factor < 1.0) {
      line->setZValue(1);
      line->setToolTip(factor <= 0
                           ? "cable down"
                           : QString("cable degraded to %1 %").arg(100 * factor, 0, 'f', 0));
    }
  }

  auto add_switch = [&](topology::NodeId id, const QColor& color, double w) {
    const double h = std::max(16.0, step * 0.06);
    const bool down = state != nullptr && !state->node_up(id);  // a failed switch is red
    auto* item = s->addRect(QRectF(at[id.index()] - QPointF(w / 2, h / 2), QSizeF(w, h)),
                            QPen(down ? QColor(220, 0, 0) : QColor(Qt::black), down ? 3.0 : 0.5),
                            down ? QColor(255, 80, 80) : color);
    item->setZValue(2);
    const double gbytes = switch_bytes[id.index()] / 1e9;
    item->setToolTip(
        QString::fromStdString(fabric.node_name(id)) + (down ? QString(" - DOWN") : QString()) +
        QString("\n%1 ports, %2 Gb/s each").arg(g.radix).arg(fabric.spec().switch_port_gbps) +
        QString("\ntraffic per step: %1 GB").arg(gbytes, 0, 'f', 1));
  };
  const double sw = std::max(3.0, std::min(30.0, pod_width / std::max(1, g.leaves_per_pod) * 0.7));
  for (int c = 0; c < g.cores; ++c)
    add_switch(fabric.core_switch(c), QColor(120, 90, 200),
               std::max(3.0, std::min(30.0, width / std::max(1, g.cores) * 0.7)));
  for (int sp = 0; sp < g.spines; ++sp) add_switch(fabric.spine(sp), QColor(70, 130, 200), sw);
  for (int l = 0; l < g.leaves; ++l) add_switch(fabric.leaf(l), QColor(60, 170, 160), sw);

  // Nodes, aggregated per scalable unit (the nodes sharing a leaf group).
  const int per_unit =
      fabric.spec().rail_optimized ? g.leaf_down : std::max(1, g.leaf_down / g.rails);
  const int units = (fabric.cluster().nodes + per_unit - 1) / per_unit;
  for (int u = 0; u < units; ++u) {
    const int first_leaf =
        fabric.leaf_of_nic(std::min(fabric.nic_count() - 1, u * per_unit * g.rails));
    const int pod = g.pod_of_leaf(first_leaf);
    const int units_in_pod = std::max(1, g.leaves_per_pod / std::max(1, g.rails));
    const double w = pod_width / units_in_pod * 0.85;
    const double x =
        x_in_pod(pod, (first_leaf % g.leaves_per_pod) / std::max(1, g.rails), units_in_pod);
    const int nodes = std::min(per_unit, fabric.cluster().nodes - u * per_unit);
    auto* rect = s->addRect(QRectF(x - w / 2, y_nodes, w, 0.4 * step), QPen(Qt::darkGray, 0.5),
                            QColor(235, 225, 190));
    rect->setToolTip(QString("scalable unit %1: %2 nodes x %3 GPUs")
                         .arg(u)
                         .arg(nodes)
                         .arg(fabric.cluster().gpus_per_node));
    auto* label = s->addSimpleText(QString("SU %1\n%2 nodes").arg(u).arg(nodes), font);
    label->setPos(x - w / 2 + 4, y_nodes + 8);
  }
  auto* title = s->addSimpleText(QString("%1-tier fat tree: %2 cores, %3 spines, %4 leaves in %5 "
                                         "pod(s); %6 GPUs; traffic %7 TB/step")
                                     .arg(g.tiers)
                                     .arg(g.cores)
                                     .arg(g.spines)
                                     .arg(g.leaves)
                                     .arg(g.pods)
                                     .arg(fabric.gpu_count())
                                     .arg(traffic_total / 1e12, 0, 'f', 2),
                                 font);
  title->setPos(0, -0.3 * step);
  s->setSceneRect(s->itemsBoundingRect().adjusted(-20, -20, 20, 20));
  zoomed_ = false;
  fitInView(s->sceneRect(), Qt::KeepAspectRatio);
  draw_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace twin::gui

namespace twin::gui {

void FabricView::resizeEvent(QResizeEvent* event) {
  QGraphicsView::resizeEvent(event);
  if (!zoomed_) fitInView(sceneRect(), Qt::KeepAspectRatio);  // keep the whole picture in view
}

}  // namespace twin::gui
