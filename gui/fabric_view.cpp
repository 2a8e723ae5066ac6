#include "gui/fabric_view.hpp"

#include <QComboBox>
#include <QGraphicsPathItem>
#include <QGraphicsRectItem>
#include <QGraphicsScene>
#include <QGraphicsSimpleTextItem>
#include <QHBoxLayout>
#include <QLabel>
#include <QTimer>
#include <QVBoxLayout>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

#include "gui/chart_style.hpp"
#include "gui/fabric_deviation_list.hpp"
#include "gui/fabric_side_panel.hpp"

namespace twin::gui {

namespace {

const QColor kCore(120, 90, 200), kSpine(70, 130, 200), kLeaf(60, 170, 160);
const QColor kUnit(235, 225, 190), kDown(255, 90, 90), kRerouted(230, 0, 200);

QString pct(double u) {
  return QString("%1 %").arg(100 * u, 0, 'f', u < 0.1 ? 1 : 0);
}

/// Text that keeps its size on screen whatever the zoom.
QGraphicsSimpleTextItem* add_label(QGraphicsScene* s, const QString& text, QPointF at,
                                   double point_size, bool bold = false) {
  QFont f;
  f.setPointSizeF(point_size);
  f.setBold(bold);
  auto* item = s->addSimpleText(text, f);
  item->setFlag(QGraphicsItem::ItemIgnoresTransformations);
  item->setPos(at);
  item->setZValue(5);
  return item;
}

QPen cosmetic(const QColor& c, double width, Qt::PenStyle style = Qt::SolidLine) {
  QPen pen(c, width, style);
  pen.setCosmetic(true);
  pen.setCapStyle(Qt::RoundCap);
  return pen;
}

}  // namespace

FabricView::FabricView(QWidget* parent) : QWidget(parent) {
  auto* outer = new QHBoxLayout(this);
  outer->setContentsMargins(0, 0, 0, 0);
  auto* left = new QVBoxLayout();
  auto* bar = new QHBoxLayout();
  mode_ = new QComboBox(this);
  mode_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  mode_->addItem("Colour cables by utilisation", QString());
  bar->addWidget(mode_);
  caption_ = new QLabel(this);
  caption_->setWordWrap(true);
  bar->addWidget(caption_, 1);
  left->addLayout(bar);
  view_ = new ZoomableView(this);
  left->addWidget(view_, 1);
  outer->addLayout(left, 1);
  auto* right = new QVBoxLayout();
  right->setSpacing(0);
  side_ = new FabricSidePanel(this);
  right->addWidget(side_, 1);
  list_ = new FabricDeviationList(this);
  right->addWidget(list_);
  outer->addLayout(right);
  connect(mode_, &QComboBox::currentIndexChanged, this, [this] { redraw(); });
  connect(mode_, &QComboBox::activated, this, [this] { user_mode_ = true; });
  connect(list_, &FabricDeviationList::selected, this,
          [this](int index) { highlight_deviation(index); });
  // The tiers are spaced for the viewport's shape: redraw when it changes a lot.
  relayout_ = new QTimer(this);
  relayout_->setSingleShot(true);
  relayout_->setInterval(250);
  connect(relayout_, &QTimer::timeout, this, [this] { redraw(); });
}

void FabricView::resizeEvent(QResizeEvent* event) {
  QWidget::resizeEvent(event);
  const QSize port = view_->viewport()->size();
  const double aspect = static_cast<double>(port.height()) / std::max(1, port.width());
  if (digest_ && digest_->detailed && std::abs(aspect - drawn_aspect_) > 0.2 * drawn_aspect_)
    relayout_->start();
}

void FabricView::show_fabric(const topology::Fabric& fabric, const std::vector<double>& link_bytes,
                             double step_s, const topology::FabricState* state) {
  show_digests(std::make_shared<FabricDigest>(digest_fabric(fabric, link_bytes, step_s, state)),
               nullptr);
}

void FabricView::show_digests(std::shared_ptr<const FabricDigest> digest,
                              std::shared_ptr<const FabricDigest> vs_baseline) {
  QString mode = mode_->currentData().toString();
  digest_ = std::move(digest);
  vs_baseline_ = std::move(vs_baseline);
  const QSignalBlocker block(mode_);
  mode_->clear();
  mode_->addItem("Colour cables by utilisation", QString());
  if (digest_ && digest_->has_reference)
    mode_->addItem("Colour cables by change vs the healthy fabric", "healthy");
  if (vs_baseline_ && vs_baseline_->has_reference)
    mode_->addItem("Colour cables by change vs the baseline", "baseline");
  if (digest_ && digest_->deviations.imported) {
    mode_->addItem("Grey cables: show the deviations from the ideal", "deviations");
    if (!user_mode_ && !digest_->deviations.items.empty()) mode = "deviations";
  }
  mode_->setCurrentIndex(std::max(0, mode_->findData(mode)));
  list_->show_digest(digest_.get());
  selected_ = -1;
  redraw();
}

void FabricView::set_colour_mode(const QString& reference) {
  user_mode_ = true;
  mode_->setCurrentIndex(std::max(0, mode_->findData(reference)));
}

bool FabricView::highlight_matching(const QString& text) {
  const FabricDigest* d = current();
  if (d == nullptr) return false;
  for (std::size_t i = 0; i < d->deviations.items.size(); ++i) {
    const auto& x = d->deviations.items[i];
    if (QString::fromStdString(x.where + ": " + x.detail).contains(text, Qt::CaseInsensitive)) {
      list_->select(static_cast<int>(i));  // the list tells the view to highlight it
      return true;
    }
  }
  return false;
}

QString FabricView::colour_mode() const {
  return mode_->currentData().toString();
}

void FabricView::highlight_deviation(int index) {
  for (QGraphicsItem* item : highlight_) {
    view_->scene()->removeItem(item);
    delete item;
  }
  highlight_.clear();
  highlighted_.clear();
  selected_ = index;
  const FabricDigest* d = current();
  if (d == nullptr || !d->detailed) return;
  highlight_ = twin::gui::highlight_deviation(view_->scene(), *d, layout_, index, &highlighted_);
  QRectF box;
  for (const QGraphicsItem* item : highlight_) box |= item->sceneBoundingRect();
  if (!box.isEmpty()) view_->ensureVisible(box);
}

const FabricDigest* FabricView::current() const {
  if (mode_->currentData().toString() == "baseline" && vs_baseline_) return vs_baseline_.get();
  return digest_.get();
}

QStringList FabricView::legend_entries() const {
  return side_->legend_entries();
}

int FabricView::scene_item_count() const {
  return static_cast<int>(view_->scene()->items().size());
}

void FabricView::redraw() {
  const auto start = std::chrono::steady_clock::now();
  view_->scene()->clear();
  highlight_.clear();
  highlighted_.clear();
  marks_ = {};
  axis_labels_.clear();
  const FabricDigest* d = current();
  if (d == nullptr) return;
  const QString mode = mode_->currentData().toString();
  const bool change = (mode == "healthy" || mode == "baseline") && d->has_reference;
  if (d->detailed) {
    draw_detailed(*d, change);
  } else {
    draw_aggregated(*d, change);
  }
  side_->show_digest(d, change, d->detailed ? &marks_ : nullptr,
                     d->detailed && mode == "deviations");
  axis_labels_ << side_->axis_labels();
  const FabricDeviations& dev = d->deviations;
  if (dev.imported)
    caption_->setText(
        QString("Imported fabric %1: %2 spines, %3 leaves%4; %5 hosts (%6 usable) x %7 GPUs; "
                "%8 TB per step on the cables. Deviations from the ideal fat tree are marked and "
                "listed; pick one in the list to highlight it.")
            .arg(QString::fromStdString(dev.source), thousands(d->spines), thousands(d->leaves),
                 d->cores > 0 ? QString(", %1 cores").arg(thousands(d->cores)) : QString(),
                 thousands(dev.hosts), thousands(dev.usable_hosts))
            .arg(d->gpus / std::max(1, d->nodes))
            .arg(d->traffic_bytes / 1e12, 0, 'f', 2));
  else
    caption_->setText(
        QString("%1-tier fat tree, radix %2: %3 cores, %4 spines, %5 leaves in %6 pod(s); %7 GPUs; "
                "%8 TB per step on the cables%9")
            .arg(d->tiers)
            .arg(d->radix)
            .arg(thousands(d->cores), thousands(d->spines), thousands(d->leaves),
                 thousands(d->pods), thousands(d->gpus))
            .arg(d->traffic_bytes / 1e12, 0, 'f', 2)
            .arg(d->detailed ? QString(". Hover a switch for its name; wheel zooms, drag pans.")
                             : QString(". Large fabric: pods drawn as aggregates; hover a pod.")));
  QRectF box;
  for (const QGraphicsItem* item : view_->scene()->items())
    if (!(item->flags() & QGraphicsItem::ItemIgnoresTransformations))
      box |= item->sceneBoundingRect();
  view_->set_content(box, d->detailed ? 130 : 0);
  view_->fit();
  if (selected_ >= 0) highlight_deviation(selected_);
  draw_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void FabricView::draw_detailed(const FabricDigest& d, bool change) {
  QGraphicsScene* s = view_->scene();
  const int pods = std::max(1, d.pods);
  const double pitch = 30.0;  // scene units per leaf
  const double pod_w = std::max(6, std::max(d.leaves_per_pod, d.spines_per_pod)) * pitch;
  const double gap = pitch * 2.5;
  const double width = pods * pod_w + (pods - 1) * gap;
  // Tiers spaced so the drawing has the viewport's shape (less the tier labels on the left).
  const bool grey = mode_->currentData().toString() == "deviations";
  const QSize port = view_->viewport()->size();
  const double aspect =
      std::clamp(static_cast<double>(port.height()) / std::max(1, port.width() - 150), 0.35, 1.2);
  const double tier_h = std::max(120.0, width * aspect / 3.4);
  drawn_aspect_ = static_cast<double>(port.height()) / std::max(1, port.width());
  const bool three = d.tiers >= 3;
  const double y_core = 0, y_spine = three ? tier_h : 0, y_leaf = y_spine + tier_h;
  const double y_units = y_leaf + 0.25 * tier_h, unit_h = 0.35 * tier_h;
  const double sw_h = std::max(10.0, 0.07 * tier_h);
  auto x_in_pod = [&](int pod, int i, int count) {
    return pod * (pod_w + gap) + (i + 0.5) * pod_w / std::max(1, count);
  };
  std::vector<QPointF> at(d.switches.size());
  const int cores_per_row = std::max(1, d.cores);
  for (std::size_t i = 0; i < d.switches.size(); ++i) {
    const auto& sw = d.switches[i];
    if (sw.tier == Tier::core) {
      at[i] = {(sw.index + 0.5) * width / cores_per_row, y_core};
    } else if (sw.tier == Tier::spine) {
      at[i] = {x_in_pod(sw.pod, sw.index % std::max(1, d.spines_per_pod), d.spines_per_pod),
               y_spine};
    } else {
      at[i] = {x_in_pod(sw.pod, sw.index % std::max(1, d.leaves_per_pod), d.leaves_per_pod),
               y_leaf};
    }
  }

  // Pods: a box around each pod's spines, leaves and scalable units.
  const double point = 9.0;
  for (int p = 0; p < pods && d.pods > 1; ++p) {
    const double x = p * (pod_w + gap) - gap * 0.3;
    auto* box = s->addRect(QRectF(x, y_spine - 0.25 * tier_h, pod_w + 0.6 * gap,
                                  y_units + unit_h + 0.1 * tier_h - (y_spine - 0.25 * tier_h)),
                           QPen(QColor(160, 160, 175), 1, Qt::DotLine), Qt::NoBrush);
    box->setZValue(-2);
    add_label(s, QString("pod %1").arg(p), QPointF(x + 4, y_spine - 0.24 * tier_h), point, true);
  }

  // Cables: one path per colour bin (cheap to draw at any count), outlines for the few that
  // matter underneath.
  constexpr int kBins = 24;
  std::array<QPainterPath, kBins> paths;
  QPainterPath hot, moved;
  for (const auto& e : d.edges) {
    const QLineF line(at[e.lower], at[e.upper]);
    if (e.capacity_factor < 1) {
      s->addLine(line, cosmetic(Qt::white, 5))->setZValue(2);
      auto* item = s->addLine(
          line, cosmetic(e.capacity_factor <= 0 ? QColor(220, 0, 0) : QColor(255, 140, 0), 3.5,
                         Qt::DashLine));
      item->setZValue(3);
      item->setToolTip(QString("%1 - %2: %3")
                           .arg(QString::fromStdString(d.switches[e.lower].name),
                                QString::fromStdString(d.switches[e.upper].name),
                                e.capacity_factor <= 0
                                    ? QString("cable down")
                                    : QString("degraded to %1 % of its bandwidth, %2 busy")
                                          .arg(100 * e.capacity_factor, 0, 'f', 0)
                                          .arg(pct(e.utilisation))));
      if (e.capacity_factor <= 0) continue;
    }
    double t = 0;
    if (change) {
      t = d.delta_abs_max > 0 ? (e.utilisation - e.ref_utilisation) / d.delta_abs_max : 0;
      t = 0.5 + 0.5 * t;
    } else if (d.has_loads) {
      t = e.utilisation / d.scale_max;
    }
    const int bin = std::clamp(static_cast<int>(t * kBins), 0, kBins - 1);
    paths[static_cast<std::size_t>(bin)].moveTo(line.p1());
    paths[static_cast<std::size_t>(bin)].lineTo(line.p2());
    if (e.hottest && !change && !grey) {
      hot.moveTo(line.p1());
      hot.lineTo(line.p2());
      auto* tip = s->addLine(line, cosmetic(Qt::transparent, 6));
      tip->setZValue(3);
      tip->setToolTip(QString("hot link %1 - %2: %3 busy")
                          .arg(QString::fromStdString(d.switches[e.lower].name),
                               QString::fromStdString(d.switches[e.upper].name),
                               pct(e.utilisation)));
    }
    if (e.rerouted && !change && !grey) {
      moved.moveTo(line.p1());
      moved.lineTo(line.p2());
      auto* tip = s->addLine(line, cosmetic(Qt::transparent, 7));
      tip->setZValue(3);
      tip->setToolTip(QString("%1 - %2: traffic moved here; %3 busy, %4 in the %5")
                          .arg(QString::fromStdString(d.switches[e.lower].name),
                               QString::fromStdString(d.switches[e.upper].name), pct(e.utilisation),
                               pct(e.ref_utilisation), QString::fromStdString(d.reference_name)));
    }
  }
  if (!moved.isEmpty() && !change && !grey)
    s->addPath(moved, cosmetic(kRerouted, 7))->setZValue(-1);
  if (!hot.isEmpty() && !grey) s->addPath(hot, cosmetic(Qt::black, 5))->setZValue(-0.5);
  for (int b = 0; b < kBins; ++b) {
    if (paths[static_cast<std::size_t>(b)].isEmpty()) continue;
    const double t = (b + 0.5) / kBins;
    const QColor c = !d.has_loads || grey ? QColor(170, 170, 190)
                     : change             ? diverging_color(2 * t - 1)
                                          : sequential_color(t);
    const double w = change ? 1.0 + 2.0 * std::abs(2 * t - 1) : 1.0 + 2.0 * t;
    s->addPath(paths[static_cast<std::size_t>(b)], cosmetic(c, d.has_loads && !grey ? w : 0.8));
  }

  // Switches, with their names on hover (and under them when there are few).
  const bool names = d.switches.size() <= 80;
  const bool imported = d.deviations.imported;
  layout_ = SwitchLayout{at, std::vector<double>(d.switches.size(), 0.0), sw_h, y_units, unit_h};
  for (std::size_t i = 0; i < d.switches.size(); ++i) {
    const auto& sw = d.switches[i];
    const double w = sw.tier == Tier::core
                         ? std::clamp(width / std::max(1, d.cores) * 0.7, 3.0, 36.0)
                         : std::clamp(pod_w /
                                          std::max(1, sw.tier == Tier::spine ? d.spines_per_pod
                                                                             : d.leaves_per_pod) *
                                          0.7,
                                      3.0, 36.0);
    layout_.width[i] = w;
    const QColor fill = sw.down                  ? kDown
                        : sw.tier == Tier::core  ? kCore
                        : sw.tier == Tier::spine ? kSpine
                                                 : kLeaf;
    auto* item =
        s->addRect(QRectF(at[i] - QPointF(w / 2, sw_h / 2), QSizeF(w, sw_h)),
                   QPen(sw.down ? QColor(200, 0, 0) : QColor(Qt::black), sw.down ? 3 : 0.5), fill);
    item->setZValue(4);
    const QString tier = sw.tier == Tier::core ? "core" : sw.tier == Tier::spine ? "spine" : "leaf";
    QString tip = QString("%1 (%2 tier%3)%4\n%5 ports x %6 Gb/s\ntraffic %7 GB per step")
                      .arg(QString::fromStdString(sw.name), tier,
                           sw.tier == Tier::core ? QString(", plane %1").arg(sw.pod)
                                                 : QString(", pod %1").arg(sw.pod),
                           sw.down ? QString(" - DOWN") : QString())
                      .arg(d.radix)
                      .arg(d.port_gbps)
                      .arg(sw.bytes / 1e9, 0, 'f', 2);
    if (imported) {
      if (sw.rail >= 0)
        tip += QString("\nserves rail %1; %2 adapters").arg(sw.rail).arg(sw.adapters);
      if (sw.tier != Tier::core) tip += QString("\n%1 uplinks").arg(sw.uplinks);
      for (const auto& x : d.deviations.items)
        if ((x.lower == static_cast<int>(i) && x.kind == DeviationKind::uneven_uplinks) ||
            ((x.lower == static_cast<int>(i) || x.upper == static_cast<int>(i)) &&
             x.kind != DeviationKind::uneven_uplinks))
          tip += QString("\n- %1").arg(QString::fromStdString(x.where + ": " + x.detail));
    }
    item->setToolTip(tip);
    if (sw.down) {  // the failed switch is named above it
      auto* label = add_label(s, QString::fromStdString(sw.name) + " DOWN",
                              at[i] - QPointF(0, sw_h / 2), 8.5, true);
      label->setBrush(QColor(200, 0, 0));
      label->setTransform(QTransform::fromTranslate(-label->boundingRect().width() / 2,
                                                    -label->boundingRect().height()));
    }
    // The index under each switch (an imported leaf shows its uplinks there); name on hover.
    if (names && !(imported && sw.tier == Tier::leaf)) {
      // On an imported fabric the top tier's cables fan out below it: its index goes above.
      const bool above = imported && (sw.tier == Tier::core || !three);
      auto* label = add_label(s, QString::number(sw.index),
                              at[i] + QPointF(0, above ? -sw_h / 2 - 1 : sw_h / 2 + 1), 7);
      label->setBrush(QColor(60, 60, 60));
      label->setTransform(QTransform::fromTranslate(-label->boundingRect().width() / 2,
                                                    above ? -label->boundingRect().height() : 0));
    }
  }

  if (imported) {
    // A real fabric's hosts do not form regular units: the adapters cabled to each leaf, then
    // the deviations over the whole drawing.
    draw_adapters(s, d, layout_);
    marks_ = draw_deviations(s, d, layout_);
  }
  // Scalable units under their leaves.
  for (std::size_t u = 0; u < d.units.size() && !imported; ++u) {
    const auto& unit = d.units[u];
    const int per_pod = std::max(1, d.leaves_per_pod);
    // A unit's leaves may span pods (small radix); its box spans them too.
    const double x1 =
        x_in_pod(unit.first_leaf / per_pod, unit.first_leaf % per_pod, per_pod) - pitch * 0.45;
    const double x2 =
        x_in_pod(unit.last_leaf / per_pod, unit.last_leaf % per_pod, per_pod) + pitch * 0.45;
    auto* rect = s->addRect(QRectF(x1, y_units, x2 - x1, unit_h), QPen(Qt::darkGray, 0.5), kUnit);
    rect->setToolTip(QString("scalable unit %1: %2 nodes x %3 GPUs on leaves %4-%5")
                         .arg(u)
                         .arg(unit.nodes)
                         .arg(d.gpus / std::max(1, d.nodes))
                         .arg(unit.first_leaf)
                         .arg(unit.last_leaf));
    if (d.units.size() <= 64)
      add_label(s, QString("SU %1\n%2 nodes").arg(u).arg(unit.nodes), QPointF(x1 + 3, y_units + 3),
                7.5);
  }

  // Tier labels on the left, right-aligned against the drawing.
  const double xl = -gap * 0.5;
  auto tier_label = [&](const QString& text, double y) {
    auto* label = add_label(s, text, QPointF(xl, y), point, true);
    label->setTransform(QTransform::fromTranslate(-label->boundingRect().width() - 6,
                                                  -label->boundingRect().height() / 2));
  };
  QStringList tiers;
  if (three) {
    tier_label(QString("core\n%1 switches").arg(thousands(d.cores)), y_core);
    tiers << "core";
  }
  tier_label(QString("spine\n%1 switches").arg(thousands(d.spines)), y_spine);
  tier_label(QString(imported ? "leaf\n%1 switches\n(uplinks under)" : "leaf\n%1 switches")
                 .arg(thousands(d.leaves)),
             y_leaf);
  tier_label(imported ? QString("adapters\n%1 hosts").arg(thousands(d.nodes))
                      : QString("nodes\n%1 x %2 GPUs")
                            .arg(thousands(d.nodes))
                            .arg(d.gpus / std::max(1, d.nodes)),
             y_units + unit_h / 2);
  axis_labels_ << tiers << "spine"
               << "leaf"
               << "nodes";
}

void FabricView::draw_aggregated(const FabricDigest& d, bool change) {
  QGraphicsScene* s = view_->scene();
  const int pods = std::max(1, d.pods);
  // Laid out in screen pixels for the current viewport, so the text is readable without zooming:
  // the grid of pods whose cells get the most area at about 1.4:1.
  const QSize port = view_->viewport()->size();
  const double avail_w = std::max(400, port.width() - 40);
  const double avail_h = std::max(300, port.height() - 40);
  const double gap = 12, core_h = d.tiers >= 3 ? 34 : 0, y0 = d.tiers >= 3 ? core_h + 30 : 0;
  int cols = 1;
  double cell_w = 0, cell_h = 0;
  for (int c = 1; c <= pods; ++c) {
    const int rows = (pods + c - 1) / c;
    const double w = (avail_w - (c - 1) * gap) / c;
    const double h = std::min(w / 1.8, (avail_h - y0 - (rows - 1) * gap) / rows);
    if (h > 0 && w * h > cell_w * cell_h) {
      cols = c;
      cell_w = w;
      cell_h = h;
    }
  }
  cell_h = std::max(cell_h, 80.0);
  cell_w = std::max(cell_w, 120.0);
  const double width = cols * cell_w + (cols - 1) * gap;
  auto colour = [&](double u, double delta) {
    if (change) return diverging_color(d.delta_abs_max > 0 ? delta / d.delta_abs_max : 0);
    return d.has_loads ? sequential_color(u / d.scale_max) : QColor(200, 200, 210);
  };
  QFont f;
  f.setPointSizeF(cell_w > 170 ? 8.5 : 7.5);
  const double line = QFontMetricsF(f).height();
  if (d.tiers >= 3) {
    auto* core = s->addRect(QRectF(0, 0, width, core_h), QPen(Qt::black, 0.5), kCore.lighter(150));
    core->setToolTip(QString("core tier: %1 switches in %2 planes")
                         .arg(thousands(d.cores))
                         .arg(d.spines_per_pod));
    QFont bold = f;
    bold.setBold(true);
    auto* t = s->addSimpleText(
        QString("core tier: %1 switches in %2 planes; spine - core cables: max %3, mean %4")
            .arg(thousands(d.cores))
            .arg(d.spines_per_pod)
            .arg(pct(d.tier_loads[2].max), pct(d.tier_loads[2].mean)),
        bold);
    t->setPos(8, (core_h - line) / 2);
  }
  for (int p = 0; p < pods; ++p) {
    const auto& pod = d.pod_loads[static_cast<std::size_t>(p)];
    const double x = (p % cols) * (cell_w + gap), y = y0 + (p / cols) * (cell_h + gap);
    if (d.tiers >= 3 && p < cols) {
      // The first row's uplinks to the core tier, coloured by the column's busiest pod.
      double top = 0, delta = 0;
      for (int q = p; q < pods; q += cols) {
        top = std::max(top, d.pod_loads[static_cast<std::size_t>(q)].spine_core_max);
        delta = std::max(delta, d.pod_loads[static_cast<std::size_t>(q)].delta_max);
      }
      auto* up = s->addLine(QLineF(x + cell_w / 2, y, x + cell_w / 2, core_h),
                            cosmetic(colour(top, delta), 3));
      up->setZValue(-1);
    }
    const bool bad = pod.switches_down + pod.cables_down > 0;
    auto* box = s->addRect(QRectF(x, y, cell_w, cell_h),
                           QPen(bad                      ? QColor(220, 0, 0)
                                : pod.rerouted_links > 0 ? kRerouted
                                                         : QColor(120, 120, 130),
                                bad || pod.rerouted_links > 0 ? 3 : 1),
                           QColor(250, 248, 240));
    const int first_leaf = p * d.leaves_per_pod, first_spine = p * d.spines_per_pod;
    box->setToolTip(
        QString("pod %1: spine[%2..%3], leaf[%4..%5]\n%6 scalable units, %7 nodes\n"
                "leaf - spine cables: max %8, mean %9\nspine - core cables: max %10, mean %11\n"
                "%12 switch(es) down, %13 cable(s) down, %14 degraded, %15 link(s) with moved "
                "traffic")
            .arg(p)
            .arg(first_spine)
            .arg(first_spine + d.spines_per_pod - 1)
            .arg(first_leaf)
            .arg(first_leaf + d.leaves_per_pod - 1)
            .arg(pod.units)
            .arg(thousands(pod.nodes))
            .arg(pct(pod.leaf_spine_max), pct(pod.leaf_spine_mean), pct(pod.spine_core_max),
                 pct(pod.spine_core_mean))
            .arg(pod.switches_down)
            .arg(pod.cables_down)
            .arg(pod.cables_degraded)
            .arg(pod.rerouted_links));
    auto* title = s->addSimpleText(
        bad ? QString("pod %1: %2 switch(es), %3 cable(s) down")
                  .arg(p)
                  .arg(pod.switches_down)
                  .arg(pod.cables_down)
            : QString("pod %1: %2 SUs, %3 nodes").arg(p).arg(pod.units).arg(thousands(pod.nodes)),
        f);
    title->setPos(x + 4, y + 2);
    if (bad) title->setBrush(QColor(200, 0, 0));
    // Per tier: its numbers, then its uplinks as a strip sorted by load (the distribution).
    const double strip_h = std::max(6.0, std::min(line, (cell_h - 3 * line - 16) / 2));
    auto band = [&](double top, const QString& name, const QString& short_name, double max_u,
                    double mean_u, const std::array<int, kHistogramBins>& hist) {
      const QString full = QString("%1: max %2, mean %3").arg(name, pct(max_u), pct(mean_u));
      const QString brief =
          QString("to %1: max %2, mean %3").arg(short_name, pct(max_u), pct(mean_u));
      const bool fits = QFontMetricsF(f).horizontalAdvance(full) < cell_w - 12;
      s->addSimpleText(fits ? full : brief, f)->setPos(x + 6, top);
      const double sy = top + line + 1, sw = cell_w - 12;
      const int total = std::accumulate(hist.begin(), hist.end(), 0);
      if (change || total == 0) {
        s->addRect(QRectF(x + 6, sy, sw, strip_h), QPen(Qt::gray, 0.5),
                   colour(max_u, pod.delta_max));
        return;
      }
      double sx = x + 6;
      for (int b = 0; b < kHistogramBins; ++b) {
        if (hist[static_cast<std::size_t>(b)] == 0) continue;
        const double w = sw * hist[static_cast<std::size_t>(b)] / total;
        s->addRect(QRectF(sx, sy, std::max(w, 1.5), strip_h), Qt::NoPen,
                   sequential_color((b + 0.5) / kHistogramBins));
        sx += w;
      }
      s->addRect(QRectF(x + 6, sy, sw, strip_h), QPen(Qt::gray, 0.5), Qt::NoBrush);
    };
    double top = y + line + 4;
    if (d.tiers >= 3) {
      band(top, QString("%1 spines -> cores").arg(d.spines_per_pod), "cores", pod.spine_core_max,
           pod.spine_core_mean, pod.spine_core_histogram);
      top += line + strip_h + 4;
    }
    band(top, QString("%1 leaves -> spines").arg(d.leaves_per_pod), "spines", pod.leaf_spine_max,
         pod.leaf_spine_mean, pod.leaf_spine_histogram);
    top += line + strip_h + 4;
    auto* units = s->addRect(QRectF(x + 4, top, cell_w - 8, std::max(4.0, y + cell_h - top - 3)),
                             QPen(Qt::darkGray, 0.5), kUnit);
    units->setToolTip(QString("%1 scalable units").arg(pod.units));
    if (y + cell_h - top - 3 >= line)
      s->addSimpleText(QString("%1 scalable units").arg(pod.units), f)->setPos(x + 8, top + 1);
  }
  axis_labels_ << "core tier"
               << "pod: spines"
               << "pod: leaves"
               << "pod: scalable units";
}

}  // namespace twin::gui
