#pragma once
// What the fabric view draws over an imported fabric: its deviations from the ideal fat tree
// (missing leaf - spine cables where the ideal has them, links below the fabric's rate, switches
// with fewer uplinks, cables landing on another rail's leaf), the adapters cabled to each leaf
// in place of the scalable units of a generated fabric, and the highlight of one deviation.

#include <QColor>
#include <QList>
#include <QPointF>
#include <QStringList>
#include <vector>

#include "gui/fabric_digest.hpp"

class QGraphicsItem;
class QGraphicsScene;

namespace twin::gui {

/// Where the detailed drawing put each switch (scene units).
struct SwitchLayout {
  std::vector<QPointF> at;         ///< centre, per FabricDigest::switches
  std::vector<double> width;       ///< per switch
  double height = 10;              ///< of every switch
  double y_units = 0, unit_h = 0;  ///< the row under the leaves
};

/// What was drawn, for tests and the legend.
struct DeviationMarks {
  int missing_links = 0;  ///< leaf - spine pairs with no cable: dashed where the ideal has one
  int short_links = 0;    ///< pairs with fewer parallel cables than the ideal: dotted
  int slow_links = 0;     ///< links below the fabric's width or speed
  int uneven = 0;         ///< switches marked for fewer uplinks
  int wrong_rail = 0;     ///< cables drawn from where they belong to the leaf they land on
};

inline const QColor kMissingColour(220, 0, 0), kSlowColour(255, 140, 0), kUnevenColour(230, 80, 0),
    kWrongRailColour(150, 0, 210), kHighlightColour(0, 190, 255, 150);

/// Draws the deviations of `d` (its switches laid out as `layout`).
DeviationMarks draw_deviations(QGraphicsScene* scene, const FabricDigest& d,
                               const SwitchLayout& layout);

/// Draws, under each leaf of an imported fabric, a bar of the adapters cabled to it.
void draw_adapters(QGraphicsScene* scene, const FabricDigest& d, const SwitchLayout& layout);

/// Adds the highlight of deviation `index`; returns its items (the caller removes them) and
/// puts the names of the switches it concerns in `names`.
QList<QGraphicsItem*> highlight_deviation(QGraphicsScene* scene, const FabricDigest& d,
                                          const SwitchLayout& layout, int index,
                                          QStringList* names);

}  // namespace twin::gui
