#pragma once
// The fabric view: the fat tree as built (cores on top, then per pod its spines and leaves, the
// scalable units of nodes below their leaves), cables coloured by their utilisation in the last
// simulated step on a scale that follows the data, or by the change against a reference run (the
// healthy fabric when the scenario has failures; a pinned baseline of the same fabric). The
// hottest links and the links a failure rerouted traffic onto are outlined; hover a switch or a
// pod for its name and loads; the wheel zooms, dragging pans, a double click fits the view.
// An imported fabric (fabric.file) is drawn as found, with its deviations from the ideal fat
// tree marked (fabric_deviation_layer.hpp) and listed beside it; picking one highlights it.
// Above kDetailMaxSwitches switches pods are drawn as aggregates (see fabric_digest.hpp). The
// digest is computed in the run's worker thread; drawing it is O(switch pairs) or O(pods).

#include <QList>
#include <QWidget>
#include <memory>

#include "gui/fabric_deviation_layer.hpp"
#include "gui/fabric_digest.hpp"
#include "gui/zoomable_view.hpp"

class QComboBox;
class QGraphicsItem;
class QLabel;
class QTimer;

namespace twin::gui {

class FabricDeviationList;
class FabricSidePanel;

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
  /// Colour cables by the change against this reference: "healthy" or "baseline" ("" = load);
  /// "deviations" greys the cables so an imported fabric's deviations stand out (the default
  /// for an imported fabric that has some).
  void set_colour_mode(const QString& reference);
  [[nodiscard]] QString colour_mode() const;
  [[nodiscard]] int scene_item_count() const;
  /// An imported fabric's deviations: the list beside the drawing, what the drawing marked, and
  /// the highlight of one (index into FabricDigest::deviations.items; -1 clears), which the
  /// list's selection also sets.
  [[nodiscard]] const FabricDeviationList* deviation_list() const { return list_; }
  [[nodiscard]] const DeviationMarks& deviation_marks() const { return marks_; }
  void highlight_deviation(int index);
  /// Selects (in the list) and highlights the first deviation whose text contains `text`;
  /// false when none does.
  bool highlight_matching(const QString& text);
  [[nodiscard]] QStringList highlighted_switches() const { return highlighted_; }
  [[nodiscard]] const FabricDigest* digest() const { return current(); }

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
  FabricDeviationList* list_ = nullptr;
  SwitchLayout layout_;
  DeviationMarks marks_;
  QList<QGraphicsItem*> highlight_;
  QStringList highlighted_;
  int selected_ = -1;       ///< highlighted deviation
  bool user_mode_ = false;  ///< the user (or a caller) picked the colouring
  std::shared_ptr<const FabricDigest> digest_, vs_baseline_;
  QStringList axis_labels_;
  double draw_s_ = 0;
  double drawn_aspect_ = 0;  ///< viewport shape the tiers were spaced for
  QTimer* relayout_ = nullptr;
};

}  // namespace twin::gui
