#include "gui/fabric_deviation_layer.hpp"

#include <QGraphicsEllipseItem>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QPainterPath>
#include <QPen>
#include <algorithm>

namespace twin::gui {

namespace {

QPen cosmetic_pen(const QColor& c, double width, Qt::PenStyle style = Qt::SolidLine) {
  QPen pen(c, width, style);
  pen.setCosmetic(true);
  pen.setCapStyle(Qt::FlatCap);
  return pen;
}

QString name_of(const FabricDigest& d, int s) {
  return QString::fromStdString(d.switches[static_cast<std::size_t>(s)].name);
}

QRectF box_of(const SwitchLayout& l, int s) {
  const auto k = static_cast<std::size_t>(s);
  return {l.at[k] - QPointF(l.width[k] / 2, l.height / 2), QSizeF(l.width[k], l.height)};
}

/// Top of the lower switch to the bottom of the upper one.
QLineF cable_line(const SwitchLayout& l, int lower, int upper) {
  return {l.at[static_cast<std::size_t>(lower)] - QPointF(0, l.height / 2),
          l.at[static_cast<std::size_t>(upper)] + QPointF(0, l.height / 2)};
}

/// A wrong-rail cable: from the adapter row under the leaf it belongs on (or under the leaf it
/// lands on when that is unknown, offset by rail) up to the leaf it lands on.
QPainterPath wrong_rail_path(const SwitchLayout& l, const DigestDeviation& dev) {
  const auto to = static_cast<std::size_t>(dev.upper);
  const QPointF end = l.at[to] + QPointF(0, l.height / 2);
  QPointF start;
  if (dev.expected_leaf >= 0) {
    start =
        QPointF(l.at[static_cast<std::size_t>(dev.expected_leaf)].x(), l.y_units + 0.55 * l.unit_h);
  } else {
    start = QPointF(l.at[to].x() + (dev.rail % 2 == 0 ? -0.25 : 0.25) * l.width[to],
                    l.y_units + 0.55 * l.unit_h);
  }
  QPainterPath path(start);
  const double mid = (start.y() + end.y()) / 2;
  path.cubicTo(QPointF(start.x(), mid), QPointF(end.x(), mid), end);
  return path;
}

}  // namespace

DeviationMarks draw_deviations(QGraphicsScene* s, const FabricDigest& d,
                               const SwitchLayout& layout) {
  DeviationMarks marks;
  const FabricDeviations& dev = d.deviations;
  for (const DigestDeviation& x : dev.items) {
    const QString text = QString::fromStdString(x.where + ": " + x.detail);
    switch (x.kind) {
      case DeviationKind::missing_link: {
        if (x.lower < 0 || x.upper < 0) break;
        const QLineF line = cable_line(layout, x.lower, x.upper);
        const bool none = x.have == 0;
        s->addLine(line, cosmetic_pen(Qt::white, 5.5))->setZValue(2.8);
        auto* item =
            s->addLine(line, cosmetic_pen(kMissingColour, 3.2, none ? Qt::DashLine : Qt::DotLine));
        item->setZValue(3);
        item->setToolTip(QString("%1\n%2 where the ideal fat tree has %3")
                             .arg(text, none ? QString("no cable") : QString("fewer cables"))
                             .arg(x.want));
        ++(none ? marks.missing_links : marks.short_links);
        break;
      }
      case DeviationKind::slow_link: {
        if (x.upper < 0) break;
        if (x.lower >= 0) {
          const QLineF line = cable_line(layout, x.lower, x.upper);
          s->addLine(line, cosmetic_pen(Qt::white, 5.5))->setZValue(2.8);
          auto* item = s->addLine(line, cosmetic_pen(kSlowColour, 3.2, Qt::DashLine));
          item->setZValue(3);
          item->setToolTip(text);
        } else {  // an adapter cable: the leaf's underside
          const QRectF b = box_of(layout, x.upper);
          auto* item =
              s->addLine(QLineF(b.bottomLeft() + QPointF(0, 3), b.bottomRight() + QPointF(0, 3)),
                         cosmetic_pen(kSlowColour, 4));
          item->setZValue(4.5);
          item->setToolTip(text);
        }
        ++marks.slow_links;
        break;
      }
      case DeviationKind::uneven_uplinks: {
        if (x.lower < 0) break;
        const QRectF b = box_of(layout, x.lower).adjusted(-3, -3, 3, 3);
        auto* ring = s->addRect(b, cosmetic_pen(kUnevenColour, 2.5), Qt::NoBrush);
        ring->setZValue(4.5);
        ring->setToolTip(text);
        ++marks.uneven;
        break;
      }
      case DeviationKind::wrong_rail: {
        if (x.upper < 0) break;
        const QPainterPath path = wrong_rail_path(layout, x);
        s->addPath(path, cosmetic_pen(Qt::white, 6))->setZValue(3.5);
        auto* item = s->addPath(path, cosmetic_pen(kWrongRailColour, 3));
        item->setZValue(3.6);
        item->setToolTip(text +
                         (x.expected_leaf >= 0
                              ? QString("\nbelongs on %1 (the rail-%2 leaf of its unit)")
                                    .arg(name_of(d, x.expected_leaf))
                                    .arg(x.rail)
                              : QString("\nthe host has no adapter on its own rail's leaf")));
        const QPointF start = path.pointAtPercent(0);
        const double r = 3.5;
        auto* dot = s->addEllipse(QRectF(start - QPointF(r, r), QSizeF(2 * r, 2 * r)),
                                  cosmetic_pen(kWrongRailColour, 1), kWrongRailColour);
        dot->setZValue(3.6);
        const QRectF b = box_of(layout, x.upper).adjusted(-2, -2, 2, 2);
        s->addRect(b, cosmetic_pen(kWrongRailColour, 2), Qt::NoBrush)->setZValue(4.4);
        ++marks.wrong_rail;
        break;
      }
      case DeviationKind::missing_adapter:
        break;  // listed; a host is not a drawn item
    }
  }
  return marks;
}

void draw_adapters(QGraphicsScene* s, const FabricDigest& d, const SwitchLayout& layout) {
  int most = 1;
  for (const auto& sw : d.switches)
    if (sw.tier == Tier::leaf) most = std::max(most, sw.adapters);
  QFont f;
  f.setPointSizeF(7);
  QFont bold = f;
  bold.setBold(true);
  for (std::size_t i = 0; i < d.switches.size(); ++i) {
    const DigestSwitch& sw = d.switches[i];
    if (sw.tier != Tier::leaf) continue;
    // Its uplinks under the leaf, orange and bold when fewer than the ideal.
    const bool few = sw.uplinks < d.deviations.ideal_leaf_up;
    auto* up = s->addSimpleText(QString::number(sw.uplinks), few ? bold : f);
    up->setFlag(QGraphicsItem::ItemIgnoresTransformations);
    up->setBrush(few ? kUnevenColour.darker(115) : QColor(60, 60, 60));
    up->setPos(layout.at[i] + QPointF(0, layout.height / 2 + 4));
    up->setTransform(QTransform::fromTranslate(-up->boundingRect().width() / 2, 0));
    up->setZValue(5);
    up->setToolTip(QString("%1: %2 uplinks, the ideal fat tree has %3")
                       .arg(QString::fromStdString(sw.name))
                       .arg(sw.uplinks)
                       .arg(d.deviations.ideal_leaf_up));
    const double h = std::max(1.0, layout.unit_h * sw.adapters / most);
    const double w = layout.width[i];
    auto* bar = s->addRect(QRectF(layout.at[i].x() - w / 2, layout.y_units, w, h),
                           QPen(Qt::darkGray, 0.5), QColor(235, 225, 190));
    bar->setToolTip(QString("%1%2: %3 adapter cable(s)")
                        .arg(QString::fromStdString(sw.name))
                        .arg(sw.rail >= 0 ? QString(" (rail %1)").arg(sw.rail) : QString())
                        .arg(sw.adapters));
    auto* label = s->addSimpleText(QString::number(sw.adapters), f);
    label->setFlag(QGraphicsItem::ItemIgnoresTransformations);
    label->setBrush(QColor(60, 60, 60));
    label->setPos(QPointF(layout.at[i].x(), layout.y_units + h + 1));
    label->setTransform(QTransform::fromTranslate(-label->boundingRect().width() / 2, 0));
    label->setZValue(5);
  }
}

QList<QGraphicsItem*> highlight_deviation(QGraphicsScene* s, const FabricDigest& d,
                                          const SwitchLayout& layout, int index,
                                          QStringList* names) {
  QList<QGraphicsItem*> items;
  const auto& all = d.deviations.items;
  if (index < 0 || index >= static_cast<int>(all.size()) || d.switches.empty()) return items;
  const DigestDeviation& x = all[static_cast<std::size_t>(index)];
  auto ring = [&](int sw) {
    if (sw < 0) return;
    auto* item = s->addRect(
        box_of(layout, sw).adjusted(-6, -6, 6, 6), cosmetic_pen(kHighlightColour, 6),
        QColor(kHighlightColour.red(), kHighlightColour.green(), kHighlightColour.blue(), 60));
    item->setZValue(3.9);
    items << item;
    if (names != nullptr) *names << name_of(d, sw);
  };
  auto halo = [&](const QPainterPath& path) {
    auto* item = s->addPath(path, cosmetic_pen(kHighlightColour, 12));
    item->setZValue(2.5);
    items << item;
  };
  switch (x.kind) {
    case DeviationKind::missing_link:
    case DeviationKind::slow_link:
      if (x.lower >= 0 && x.upper >= 0) {
        QPainterPath path;
        const QLineF line = cable_line(layout, x.lower, x.upper);
        path.moveTo(line.p1());
        path.lineTo(line.p2());
        halo(path);
      }
      ring(x.lower);
      ring(x.upper);
      break;
    case DeviationKind::uneven_uplinks:
      ring(x.lower);
      break;
    case DeviationKind::wrong_rail:
      if (x.upper >= 0) halo(wrong_rail_path(layout, x));
      ring(x.upper);
      ring(x.expected_leaf);
      break;
    case DeviationKind::missing_adapter:
      for (int leaf : x.host_leaves) ring(leaf);
      break;
  }
  return items;
}

}  // namespace twin::gui
