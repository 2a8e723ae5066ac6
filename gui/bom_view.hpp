#pragma once
// The bill of materials as a planner reads it: one row per item (tier, item, count, unit, unit
// cost, total), with units, thousands separators and the capital total, priced with the
// scenario's `costs` section exactly as the cost model prices it; exported as CSV.

#include <QWidget>
#include <string>
#include <vector>

#include "topology/bom.hpp"
#include "topology/spec.hpp"
#include "twin/cost_model.hpp"

class QLabel;
class QTableWidget;

namespace twin::gui {

struct BomRow {
  std::string tier, item, unit;
  double count = 0;
  double unit_usd = 0;  ///< 0 with `priced` false: included in another row's price
  bool priced = true;
  [[nodiscard]] double total_usd() const { return priced ? count * unit_usd : 0.0; }
};

std::vector<BomRow> bom_rows(const topology::Bom& bom, const topology::ClusterSpec& cluster,
                             const topology::FabricSpec& fabric, const sim::CostSpec& costs);
/// tier,item,count,unit,unit_cost_usd,total_usd, then a total line; plain numbers.
std::string bom_csv(const std::vector<BomRow>& rows);

class BomView : public QWidget {
  Q_OBJECT
 public:
  explicit BomView(QWidget* parent = nullptr);
  void show_bom(const topology::Bom& bom, const topology::ClusterSpec& cluster,
                const topology::FabricSpec& fabric, const sim::CostSpec& costs);
  [[nodiscard]] const std::vector<BomRow>& rows() const { return rows_; }
  [[nodiscard]] QStringList header_labels() const;
  /// Writes the CSV; false if the file cannot be written.
  bool export_csv(const QString& path) const;

 public slots:
  void export_csv_dialog();

 private:
  QTableWidget* table_ = nullptr;
  QLabel* summary_ = nullptr;
  std::vector<BomRow> rows_;
};

}  // namespace twin::gui
