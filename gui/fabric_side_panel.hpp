#pragma once
// The fabric view's side panel, drawn at screen resolution whatever the zoom: the colour scale
// (utilisation, or change against a reference) with round ticks, the symbols of the drawing, the
// utilisation distribution of each cable tier, and the hottest links by name. On an imported
// fabric the symbols of its deviations come first, with how many of each the drawing shows.

#include <QStringList>
#include <QWidget>

#include "gui/fabric_deviation_layer.hpp"
#include "gui/fabric_digest.hpp"

namespace twin::gui {

class FabricSidePanel : public QWidget {
  Q_OBJECT
 public:
  explicit FabricSidePanel(QWidget* parent = nullptr);
  /// `marks`: what the drawing marked on an imported fabric (null: drawn as aggregates).
  /// `grey`: the cables are drawn grey (no colour scale).
  void show_digest(const FabricDigest* digest, bool change, const DeviationMarks* marks = nullptr,
                   bool grey = false);
  [[nodiscard]] QStringList legend_entries() const { return entries_; }
  [[nodiscard]] QStringList axis_labels() const { return axes_; }
  [[nodiscard]] QSize sizeHint() const override { return {300, 900}; }

 protected:
  void paintEvent(QPaintEvent* event) override;

 private:
  const FabricDigest* digest_ = nullptr;
  bool change_ = false;
  DeviationMarks marks_;
  bool marked_ = false;
  bool grey_ = false;
  QStringList entries_, axes_;
};

}  // namespace twin::gui
