#pragma once
// The fabric view's list of an imported fabric's deviations from the ideal fat tree, grouped by
// kind with their counts (as `clustertwin topology check` prints them); selecting one asks the
// view to highlight it. A generated fabric has none: the list says it matches the ideal.

#include <QStringList>
#include <QWidget>

#include "gui/fabric_digest.hpp"

class QLabel;
class QTreeWidget;

namespace twin::gui {

class FabricDeviationList : public QWidget {
  Q_OBJECT
 public:
  explicit FabricDeviationList(QWidget* parent = nullptr);
  void show_digest(const FabricDigest* digest);
  /// The summary line above the list ("16 missing leaf - spine cables, ..." or "matches ...").
  [[nodiscard]] QString summary() const;
  /// Rows under a kind's heading.
  [[nodiscard]] int rows(DeviationKind kind) const;
  /// Selects deviation `index` (into FabricDigest::deviations.items); -1 clears.
  void select(int index);
  /// Wider and taller for an imported fabric, whose rows name two switches.
  [[nodiscard]] QSize sizeHint() const override {
    return imported_ ? QSize(370, 460) : QSize(300, 60);
  }

 signals:
  /// The deviation picked (index into FabricDigest::deviations.items), -1 for none.
  void selected(int index);

 private:
  QLabel* summary_ = nullptr;
  QTreeWidget* tree_ = nullptr;
  bool imported_ = false;
};

}  // namespace twin::gui
