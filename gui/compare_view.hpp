#pragma once
// Baseline against what-if: the scenario fields that differ, the headline numbers side by side
// with their change (step time, MFU, time to train, ETTR, capital and run cost), and the
// utilisation of each cable tier in both runs — "what does 2:1 cost me" at a glance. Per-link
// differences are in the fabric view when both runs have the same fabric.

#include <QStringList>
#include <QWidget>
#include <string>
#include <vector>

class QChartView;
class QLabel;
class QTableWidget;

namespace twin::gui {

struct RunResult;

struct CompareRow {
  std::string name, unit;
  double baseline = 0, what_if = 0;
  bool lower_is_better = true;
  int decimals = 2;
};
std::vector<CompareRow> compare_rows(const RunResult& baseline, const RunResult& what_if);
/// "fabric.oversubscription: 1 -> 2" for every scenario field that differs.
std::vector<std::string> scenario_differences(const RunResult& baseline, const RunResult& what_if);

class CompareView : public QWidget {
  Q_OBJECT
 public:
  explicit CompareView(QWidget* parent = nullptr);
  /// Null baseline: explains how to pin one.
  void show_compare(const RunResult* baseline, const RunResult* what_if);
  [[nodiscard]] QStringList legend_entries() const;
  [[nodiscard]] QStringList axis_labels() const;
  [[nodiscard]] const std::vector<CompareRow>& rows() const { return rows_; }

 private:
  QLabel* header_ = nullptr;
  QTableWidget* table_ = nullptr;
  QChartView* tiers_ = nullptr;
  std::vector<CompareRow> rows_;
};

}  // namespace twin::gui
