#pragma once
// What every view shares so that the app reads as one: round axis ticks, numbers with thousands
// separators, the utilisation colour scale, and one colour per traffic stream (the same in the
// step view's breakdown bar, its tracks and its legend).

#include <QColor>
#include <QString>
#include <vector>

namespace twin::gui {

/// Round tick values covering [lo, hi]: steps of 1, 2 or 5 x 10^k, about `target` of them.
/// The first tick is <= lo and the last >= hi (the axis range to use).
std::vector<double> nice_ticks(double lo, double hi, int target = 6);
/// The step between nice ticks (1, 2 or 5 x 10^k) for a span of about `target` intervals.
double nice_step(double span, int target);

/// 1234567.8 -> "1,234,568" (decimals: digits after the point).
QString thousands(double value, int decimals = 0);
/// A duration in the unit that reads best: "850 ms", "2.41 s", "3.2 h".
QString duration_text(double seconds);
/// 1.5e6 -> "$1.50 M"; 2.3e9 -> "$2.30 B"; below a million with separators.
QString usd_text(double usd);

/// Sequential colour scale for a value in [0, 1] (light yellow -> orange -> dark red), readable
/// on white and for the common colour-vision deficiencies.
QColor sequential_color(double t);
/// Diverging scale for t in [-1, 1]: blue (less) -> light grey (unchanged) -> red (more).
QColor diverging_color(double t);

/// Traffic streams of a training step, each with one colour everywhere.
enum class Stream { compute, tp, ep, dp, p2p, optimizer, idle };
QColor stream_color(Stream stream);
QString stream_name(Stream stream);

}  // namespace twin::gui
