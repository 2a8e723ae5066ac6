#include "gui/fabric_deviation_list.hpp"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace twin::gui {

namespace {

constexpr int kIndexRole = Qt::UserRole + 1;

QString gbps_text(double GBps) {
  return QString("%1 TB/s").arg(GBps / 1000.0, 0, 'f', 1);
}

}  // namespace

FabricDeviationList::FabricDeviationList(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(12, 0, 12, 8);
  auto* title = new QLabel("<b>Deviations from the ideal fat tree</b>", this);
  layout->addWidget(title);
  summary_ = new QLabel(this);
  summary_->setWordWrap(true);
  layout->addWidget(summary_);
  tree_ = new QTreeWidget(this);
  tree_->setHeaderHidden(true);
  tree_->setColumnCount(1);
  tree_->setRootIsDecorated(true);
  // Rows are two lines, what and how (a cable's two switch names, then its count), never cut.
  tree_->setTextElideMode(Qt::ElideNone);
  tree_->setIndentation(10);
  QFont small = tree_->font();
  small.setPointSizeF(small.pointSizeF() * 0.9);
  tree_->setFont(small);
  tree_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
  tree_->header()->setStretchLastSection(true);
  layout->addWidget(tree_, 1);
  setMinimumWidth(280);
  setMaximumWidth(380);
  connect(tree_, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
    const QVariant v = item != nullptr ? item->data(0, kIndexRole) : QVariant();
    emit selected(v.isValid() ? v.toInt() : -1);
  });
}

void FabricDeviationList::show_digest(const FabricDigest* digest) {
  const QSignalBlocker block(tree_);
  tree_->clear();
  if (digest == nullptr) {
    summary_->clear();
    return;
  }
  const FabricDeviations& dev = digest->deviations;
  if (!dev.imported) {
    summary_->setText("None: a generated fabric matches the ideal fat tree by construction.");
    tree_->hide();
    imported_ = false;
    updateGeometry();
    return;
  }
  tree_->show();
  imported_ = true;
  updateGeometry();
  QStringList parts;
  for (int k = 0; k < kDeviationKinds; ++k) {
    const auto kind = static_cast<DeviationKind>(k);
    if (dev.count(kind) > 0)
      parts << QString("%1 %2").arg(dev.count(kind)).arg(deviation_heading(kind));
  }
  summary_->setText(
      QString("%1: %2.\nIdeal: %3. Bisection %4 of the ideal's %5; usable hosts %6 of %7.")
          .arg(QString::fromStdString(dev.source),
               parts.isEmpty() ? QString("matches the ideal fat tree") : parts.join(", "),
               QString::fromStdString(dev.ideal), gbps_text(dev.bisection_GBps),
               gbps_text(dev.ideal_bisection_GBps))
          .arg(dev.usable_hosts)
          .arg(dev.hosts));
  for (int k = 0; k < kDeviationKinds; ++k) {
    const auto kind = static_cast<DeviationKind>(k);
    if (dev.count(kind) == 0) continue;
    auto* group = new QTreeWidgetItem(
        tree_, {QString("%1 (%2)").arg(deviation_heading(kind)).arg(dev.count(kind))});
    QFont bold = group->font(0);
    bold.setBold(true);
    group->setFont(0, bold);
    group->setFlags(Qt::ItemIsEnabled);
    for (std::size_t i = 0; i < dev.items.size(); ++i) {
      const DigestDeviation& d = dev.items[i];
      if (d.kind != kind) continue;
      // The check's words, shortened where they would not fit the panel (full on hover).
      QString how = QString::fromStdString(d.detail);
      if (d.kind == DeviationKind::wrong_rail && d.upper >= 0)
        how = QString("rail-%1 adapter on a rail-%2 leaf")
                  .arg(d.rail)
                  .arg(digest->switches[static_cast<std::size_t>(d.upper)].rail);
      QString text = QString::fromStdString(d.where) + "\n" + how;
      auto* row = new QTreeWidgetItem(group, {text});
      text = QString::fromStdString(d.where + "\n" + d.detail);
      if (d.line > 0) text += QString("\nline %1 of the dump").arg(d.line);
      row->setToolTip(0, text);
      row->setData(0, kIndexRole, static_cast<int>(i));
    }
    // The few kinds a student should see first are open; long lists (adapters) stay closed.
    group->setExpanded(kind != DeviationKind::missing_adapter);
  }
}

QString FabricDeviationList::summary() const {
  return summary_->text();
}

int FabricDeviationList::rows(DeviationKind kind) const {
  const QString heading = deviation_heading(kind);
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    const QTreeWidgetItem* group = tree_->topLevelItem(i);
    if (group->text(0).startsWith(heading + " (")) return group->childCount();
  }
  return 0;
}

void FabricDeviationList::select(int index) {
  if (index < 0) {
    tree_->setCurrentItem(nullptr);
    return;
  }
  for (int i = 0; i < tree_->topLevelItemCount(); ++i) {
    QTreeWidgetItem* group = tree_->topLevelItem(i);
    for (int c = 0; c < group->childCount(); ++c)
      if (group->child(c)->data(0, kIndexRole).toInt() == index) {
        group->setExpanded(true);
        tree_->setCurrentItem(group->child(c));
        tree_->scrollToItem(group->child(c));
        return;
      }
  }
}

}  // namespace twin::gui
