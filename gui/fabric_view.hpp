#pragma once
// The fabric view: the fat tree as built (cores on top, then per pod its spines and leaves, the
// scalable units of nodes below their leaves), cables coloured by their utilisation in the last
// simulated step on a scale that follows the data, or by the change against a reference run (the
// healthy fabric when the scenario has failures; a pinned baseline of the same fabric). The
// hottest links and the links a failure rerouted traffic onto are outlined; hover a switch or a
// pod for its name and loads; the wheel zooms, dragging pans, a double click fits the view.
// Above kDetailMaxSwitches switches pods are drawn as aggregates (see fabric_digest.hpp). The
// digest is computed in the run's worker thread; drawing it is O(switch pairs) or O(pods).

#include <QGraphicsView>
#include <QWidget>
#include <memory>

#include "gui/fabric_digest.hpp"

class QComboBox;
class QLabel;
class QTimer;

namespace twin::gui {

class FabricSidePanel;

/// Zoom with the wheel, pan by dragging, double click to fit.
class ZoomableView : public QGraphicsView {
  Q_OBJECT
 public:
  explicit ZoomableView(QWidget* parent = nullptr);
  /// The drawing's extent, and the width of the labels drawn left of it (screen pixels).
  void set_content(const QRectF& box, double label_px);
  /// Shows the whole drawing.
  void fit();

 protected:
  void wheelEvent(QWheelEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mouseDoubleClickEvent(QMouseEvent* event) override;

 private:
  bool zoomed_ = false;
  QRectF box_;
  double label_px_ = 0;
};

class FabricView : public QWidget {
  Q_OBJECT
 public:
  explicit FabricView(QWidget* parent = nullptr);
  /// Shows a run: `digest` against the healthy fabric (or no reference), `vs_baseline` (may be
  /// null) against a pinned baseline of the same fabric.
  void show_digests(std::shared_ptr<const FabricDigest> digest,
                    std::shared_ptr<const FabricDigest> vs_baseline);
  /// Convenience for tests and tools: digests and draws on the calling thread.
  void show_fabric(const topology::Fabric& fabric, const std::vector<double>& link_bytes,
                   double step_s, const topology::FabricState* state = nullptr);
  [[nodiscard]] double last_draw_seconds() const { return draw_s_; }
  [[nodiscard]] bool detailed() const { return digest_ && digest_->detailed; }
  [[nodiscard]] QStringList legend_entries() const;
  /// Tier labels of the drawing and the axis titles of the side panel's distributions.
  [[nodiscard]] QStringList axis_labels() const { return axis_labels_; }
  /// Colour cables by the change against this reference: "healthy" or "baseline" ("" = load).
  void set_colour_mode(const QString& reference);
  [[nodiscard]] int scene_item_count() const;

 private:
  void redraw();
  void draw_detailed(const FabricDigest& d, bool change);
  void draw_aggregated(const FabricDigest& d, bool change);
  [[nodiscard]] const FabricDigest* current() const;
  void resizeEvent(QResizeEvent* event) override;

  QComboBox* mode_ = nullptr;
  QLabel* caption_ = nullptr;
  ZoomableView* view_ = nullptr;
  FabricSidePanel* side_ = nullptr;
  std::shared_ptr<const FabricDigest> digest_, vs_baseline_;
  QStringList axis_labels_;
  double draw_s_ = 0;
  double drawn_aspect_ = 0;  ///< viewport shape the tiers were spaced for
  QTimer* relayout_ = nullptr;
};

}  // namespace twin::gui
