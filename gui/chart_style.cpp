#include "gui/chart_style.hpp"

#include <QLocale>
#include <algorithm>
#include <cmath>

namespace twin::gui {

double nice_step(double span, int target) {
  if (!(span > 0) || target < 1) return 1.0;
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / magnitude;
  // Nearest of 1, 2, 5, 10 on a log scale (thresholds at their geometric means).
  const double unit = f < 1.42 ? 1.0 : f < 3.17 ? 2.0 : f < 7.08 ? 5.0 : 10.0;
  return unit * magnitude;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + (lo == 0 ? 1.0 : std::abs(lo) * 0.1);
  const double step = nice_step(hi - lo, target);
  const double first = std::floor(lo / step + 1e-9) * step;
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    const double t = first + i * step;
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9 || i > 1000) break;
  }
  return ticks;
}

QString thousands(double value, int decimals) {
  return QLocale(QLocale::English).toString(value, 'f', decimals);
}

QString duration_text(double s) {
  if (s < 1e-3) return QString("%1 µs").arg(s * 1e6, 0, 'f', s < 1e-5 ? 2 : 1);
  if (s < 1.0) return QString("%1 ms").arg(s * 1e3, 0, 'f', s < 1e-2 ? 2 : 1);
  if (s < 120.0) return QString("%1 s").arg(s, 0, 'f', 2);
  if (s < 2 * 3600.0) return QString("%1 min").arg(s / 60.0, 0, 'f', 1);
  if (s < 2 * 86400.0) return QString("%1 h").arg(s / 3600.0, 0, 'f', 1);
  return QString("%1 days").arg(s / 86400.0, 0, 'f', 1);
}

QString usd_text(double usd) {
  const double a = std::abs(usd);
  const QString sign = usd < 0 ? "-" : "";
  if (a >= 1e9) return QString("%1$%2 B").arg(sign).arg(a / 1e9, 0, 'f', 2);
  if (a >= 1e6) return QString("%1$%2 M").arg(sign).arg(a / 1e6, 0, 'f', 2);
  if (a >= 100) return sign + "$" + thousands(a, 0);
  return QString("%1$%2").arg(sign).arg(a, 0, 'f', a >= 1 ? 2 : 3);
}

namespace {

QColor mix(const QColor& a, const QColor& b, double t) {
  auto ch = [&](int x, int y) { return static_cast<int>(std::lround(x + (y - x) * t)); };
  return QColor(ch(a.red(), b.red()), ch(a.green(), b.green()), ch(a.blue(), b.blue()));
}

}  // namespace

QColor sequential_color(double t) {
  // Anchors of a yellow-orange-red ramp (in the spirit of ColorBrewer's YlOrRd), from a light
  // yellow that stays visible on white to a dark red.
  static const QColor anchors[] = {QColor(240, 220, 110), QColor(253, 174, 70),
                                   QColor(240, 100, 40), QColor(200, 20, 30), QColor(110, 0, 40)};
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0) * 4.0;
  const int i = std::min(3, static_cast<int>(t));
  return mix(anchors[i], anchors[i + 1], t - i);
}

QColor diverging_color(double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, -1.0, 1.0);
  const QColor mid(215, 215, 215), low(33, 102, 172), high(200, 20, 30);
  return t < 0 ? mix(mid, low, -t) : mix(mid, high, t);
}

QColor stream_color(Stream s) {
  switch (s) {
    case Stream::compute:
      return QColor(66, 120, 190);
    case Stream::tp:
      return QColor(235, 140, 30);
    case Stream::ep:
      return QColor(150, 80, 180);
    case Stream::dp:
      return QColor(210, 55, 60);
    case Stream::p2p:
      return QColor(40, 160, 150);
    case Stream::optimizer:
      return QColor(90, 170, 70);
    case Stream::idle:
      return QColor(200, 200, 200);
  }
  return Qt::black;
}

QString stream_name(Stream s) {
  switch (s) {
    case Stream::compute:
      return "compute (forward light, backward dark)";
    case Stream::tp:
      return "tensor-parallel (TP) collectives";
    case Stream::ep:
      return "expert-parallel (EP) all-to-all";
    case Stream::dp:
      return "data-parallel (DP / FSDP) traffic";
    case Stream::p2p:
      return "pipeline P2P transfers (in the bar: with the bubble)";
    case Stream::optimizer:
      return "optimizer";
    case Stream::idle:
      return "pipeline bubble (idle)";
  }
  return {};
}

}  // namespace twin::gui
