#include "gui/fabric_side_panel.hpp"

#include <QLinearGradient>
#include <QPainter>
#include <algorithm>
#include <cmath>

#include "gui/chart_style.hpp"

namespace twin::gui {

namespace {

const QColor kText(40, 40, 40);

QString percent(double u) {
  return QString("%1 %").arg(100 * u, 0, 'f', u < 0.1 ? 1 : 0);
}

}  // namespace

FabricSidePanel::FabricSidePanel(QWidget* parent) : QWidget(parent) {
  setMinimumWidth(280);
  setMaximumWidth(380);
  setAutoFillBackground(true);
  QPalette pal = palette();
  pal.setColor(QPalette::Window, Qt::white);
  setPalette(pal);
}

void FabricSidePanel::show_digest(const FabricDigest* digest, bool change,
                                  const DeviationMarks* marks, bool grey) {
  digest_ = digest;
  grey_ = grey;
  change_ = change;
  marked_ = marks != nullptr && digest != nullptr && digest->deviations.imported;
  marks_ = marks != nullptr ? *marks : DeviationMarks{};
  entries_.clear();
  axes_.clear();
  if (digest_ != nullptr) {
    if (grey_) {
      entries_ << "cables grey to show the deviations; pick \"Colour cables by utilisation\" "
                  "above for their load";
    } else if (!digest_->has_loads) {
      entries_ << "no traffic: the scenario has no training job";
    } else if (change_) {
      entries_ << QString("change in link utilisation vs %1 (points)")
                      .arg(QString::fromStdString(digest_->reference_name));
    } else {
      entries_ << "link utilisation in one step (% of capacity)";
    }
    if (marked_)
      entries_ << "missing cable where the ideal fat tree has one (red dashed)"
               << "fewer parallel cables than the ideal (red dotted)"
               << "link below the fabric's width or speed (orange dashed)"
               << "switch with fewer uplinks than the ideal (orange box, count under)"
               << "cable on another rail's leaf (purple, from where it belongs)"
               << "adapters cabled to each leaf";
    entries_ << "hottest links (black outline)";
    if (digest_->has_reference && !change_)
      entries_ << QString("load rerouted here (magenta): +20 % bytes vs %1")
                      .arg(QString::fromStdString(digest_->reference_name));
    entries_ << "cable down (red dashed)"
             << "cable degraded (orange dashed)"
             << "switch down (red)";
    entries_ << "core / spine / leaf switches"
             << (digest_->detailed ? "scalable unit: nodes sharing a leaf group"
                                   : "pod: the load distribution of its uplinks per tier");
    for (const auto& t : digest_->tier_loads)
      if (t.links > 0) axes_ << QString::fromStdString(t.name) + ": link utilisation (%)";
    axes_ << "links";
  }
  update();
}

void FabricSidePanel::paintEvent(QPaintEvent*) {
  QPainter p(this);
  p.setRenderHint(QPainter::Antialiasing);
  p.setRenderHint(QPainter::TextAntialiasing);
  if (digest_ == nullptr) return;
  const FabricDigest& d = *digest_;
  const int x0 = 12, w = width() - 2 * x0;
  int y = 10;
  QFont bold = font();
  bold.setBold(true);
  QFont small = font();
  small.setPointSizeF(font().pointSizeF() * 0.9);
  const int line = QFontMetrics(font()).height();

  // Colour scale.
  p.setPen(kText);
  p.setFont(bold);
  p.drawText(QRect(x0, y, w, 2 * line), Qt::TextWordWrap, entries_.value(0));
  y += 2 * line + 4;
  if (d.has_loads && !grey_) {
    const int bar_h = 14;
    QLinearGradient grad(x0, 0, x0 + w, 0);
    const double lo = change_ ? -d.delta_abs_max : 0.0;
    const double hi = change_ ? d.delta_abs_max : d.scale_max;
    for (int i = 0; i <= 20; ++i) {
      const double t = i / 20.0;
      grad.setColorAt(t, change_ ? diverging_color(2 * t - 1) : sequential_color(t));
    }
    p.fillRect(QRect(x0, y, w, bar_h), grad);
    p.setPen(Qt::gray);
    p.drawRect(QRect(x0, y, w, bar_h));
    p.setFont(small);
    p.setPen(kText);
    const auto ticks =
        change_ ? nice_ticks(lo * 100, std::max(hi * 100, 1e-3), 4) : nice_ticks(0.0, hi * 100, 5);
    for (double t : ticks) {
      if (t < lo * 100 - 1e-9 || t > hi * 100 + 1e-9) continue;
      const int x = x0 + static_cast<int>(std::lround((t / 100 - lo) / (hi - lo) * w));
      p.drawLine(x, y + bar_h, x, y + bar_h + 4);
      const QString label = QString("%1%2").arg(change_ && t > 0 ? "+" : "").arg(t, 0, 'g', 4);
      p.drawText(QRect(x - 30, y + bar_h + 4, 60, line), Qt::AlignHCenter, label);
    }
    y += bar_h + line + 10;
  }

  // Symbols.
  p.setFont(small);
  auto symbol = [&](const QPen& pen, const QBrush& fill, const QString& text, bool box) {
    if (box) {
      p.setPen(pen);
      p.setBrush(fill);
      p.drawRect(QRect(x0, y + 2, 26, line - 4));
    } else {
      p.setPen(pen);
      p.drawLine(x0, y + line / 2, x0 + 26, y + line / 2);
    }
    p.setPen(kText);
    p.drawText(QRect(x0 + 34, y, w - 34, line), Qt::AlignVCenter, text);
    y += line + 2;
  };
  if (marked_) {
    p.setFont(bold);
    p.drawText(QRect(x0, y, w, line), Qt::AlignLeft, "Deviations from the ideal (drawn)");
    y += line + 2;
    p.setFont(small);
    symbol(QPen(kMissingColour, 2.5, Qt::DashLine), Qt::NoBrush,
           QString("missing cable: %1 leaf - spine pairs").arg(marks_.missing_links), false);
    symbol(QPen(kMissingColour, 2.5, Qt::DotLine), Qt::NoBrush,
           QString("fewer cables than the ideal: %1 pairs").arg(marks_.short_links), false);
    symbol(QPen(kSlowColour, 2.5, Qt::DashLine), Qt::NoBrush,
           QString("below the fabric's rate: %1 links").arg(marks_.slow_links), false);
    symbol(QPen(kUnevenColour, 2.5), Qt::NoBrush,
           QString("fewer uplinks than %1 (count under): %2 switches")
               .arg(d.deviations.ideal_leaf_up)
               .arg(marks_.uneven),
           true);
    symbol(QPen(kWrongRailColour, 3), Qt::NoBrush,
           QString("on another rail's leaf: %1 cables").arg(marks_.wrong_rail), false);
    y += 6;
    p.setFont(bold);
    p.drawText(QRect(x0, y, w, line), Qt::AlignLeft, "Symbols");
    y += line + 2;
    p.setFont(small);
  }
  symbol(QPen(Qt::black, 5), Qt::NoBrush, "hottest links", false);
  if (d.has_reference && !change_)
    symbol(QPen(QColor(230, 0, 200), 6), Qt::NoBrush,
           QString("load moved here vs %1").arg(QString::fromStdString(d.reference_name)), false);
  if (!marked_ || d.cables_down + d.cables_degraded + d.switches_down > 0) {
    symbol(QPen(QColor(220, 0, 0), 2.5, Qt::DashLine), Qt::NoBrush, "cable down", false);
    symbol(QPen(QColor(255, 140, 0), 2.5, Qt::DashLine), Qt::NoBrush, "cable degraded", false);
    symbol(QPen(QColor(220, 0, 0), 2), QColor(255, 90, 90), "switch down", true);
  }
  if (d.cores > 0) symbol(QPen(Qt::black, 0.5), QColor(120, 90, 200), "core switch", true);
  symbol(QPen(Qt::black, 0.5), QColor(70, 130, 200), "spine switch", true);
  symbol(QPen(Qt::black, 0.5), QColor(60, 170, 160), "leaf switch", true);
  symbol(QPen(Qt::darkGray, 0.5), QColor(235, 225, 190),
         marked_      ? "adapters cabled to the leaf above"
         : d.detailed ? "scalable unit (nodes of a leaf group)"
                      : "scalable units of a pod",
         true);
  if (!d.detailed && d.has_loads) {
    p.setPen(kText);
    p.drawText(QRect(x0, y, w, 3 * line), Qt::TextWordWrap,
               "Pods: each strip is one tier's uplinks in the pod, sorted from idle (left) to "
               "busiest (right), coloured by the scale above.");
    y += 3 * line;
  }
  y += 8;

  // Per-tier distributions.
  if (d.has_loads) {
    p.setFont(bold);
    p.drawText(QRect(x0, y, w, line), Qt::AlignLeft, "Load distribution per tier");
    y += line + 2;
    p.setFont(small);
    for (const auto& t : d.tier_loads) {
      if (t.links == 0) continue;
      p.setPen(kText);
      p.drawText(QRect(x0, y, w, line), Qt::AlignLeft,
                 QString("%1: mean %2, P99 %3, max %4")
                     .arg(QString::fromStdString(t.name), percent(t.mean), percent(t.p99),
                          percent(t.max)));
      y += line;
      const int h = 44, left = x0 + 34, chart_w = w - 34;
      const int top_count = *std::max_element(t.histogram.begin(), t.histogram.end());
      const double bin_w = static_cast<double>(chart_w) / kHistogramBins;
      for (int b = 0; b < kHistogramBins; ++b) {
        if (t.histogram[b] == 0) continue;
        // Square-root height so that a few hot links stay visible beside thousands of idle ones.
        const double frac = std::sqrt(static_cast<double>(t.histogram[b]) / top_count);
        const int bh = std::max(1, static_cast<int>(frac * h));
        p.fillRect(QRectF(left + b * bin_w, y + h - bh, bin_w - 1, bh),
                   sequential_color((b + 0.5) / kHistogramBins));
      }
      p.setPen(Qt::gray);
      p.drawLine(left, y + h, left + chart_w, y + h);
      p.drawLine(left, y, left, y + h);
      p.setPen(kText);
      p.drawText(QRect(x0, y, 32, line), Qt::AlignRight, thousands(top_count));
      p.drawText(QRect(x0, y + h - line, 32, line), Qt::AlignRight, "0");
      p.drawText(QRect(left - 10, y + h + 1, 40, line), Qt::AlignLeft, "0 %");
      p.drawText(QRect(left + chart_w - 60, y + h + 1, 60, line), Qt::AlignRight,
                 percent(d.scale_max));
      y += h + line + 4;
    }
    p.drawText(QRect(x0, y, w, line), Qt::AlignLeft, "x: utilisation, y: links (sqrt scale)");
    y += line + 8;
  }

  // Hottest links and failures.
  if (!d.hottest.empty()) {
    p.setFont(bold);
    p.drawText(QRect(x0, y, w, line), Qt::AlignLeft, "Hottest links");
    y += line + 2;
    p.setFont(small);
    for (std::size_t i = 0; i < std::min<std::size_t>(5, d.hottest.size()); ++i) {
      const auto& h = d.hottest[i];
      QString text = QString::fromStdString(h.name) + "  " + percent(h.utilisation);
      if (d.has_reference) text += QString(" (was %1)").arg(percent(h.ref_utilisation));
      p.drawText(QRect(x0, y, w, line), Qt::AlignLeft, text);
      y += line;
    }
    y += 6;
  }
  if (d.switches_down + d.cables_down + d.cables_degraded > 0 || d.has_reference) {
    p.setFont(small);
    QString text = QString("%1 switch(es) down, %2 cable(s) down, %3 degraded")
                       .arg(d.switches_down)
                       .arg(d.cables_down)
                       .arg(d.cables_degraded);
    if (d.has_reference)
      text += QString("; %1 link(s) carry traffic moved from elsewhere (vs %2)")
                  .arg(d.rerouted_links)
                  .arg(QString::fromStdString(d.reference_name));
    p.drawText(QRect(x0, y, w, 4 * line), Qt::TextWordWrap, text);
  }
}

}  // namespace twin::gui
