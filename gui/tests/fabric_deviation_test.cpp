// The fabric view on imported fabrics: what it draws and lists is exactly what
// topology::check_fabric() reports, tied to the right switches; a generated fabric has nothing.
#include <gtest/gtest.h>

#include <QApplication>
#include <QElapsedTimer>
#include <QImage>
#include <QPixmap>
#include <QSpinBox>
#include <algorithm>
#include <sstream>

#include "gui/fabric_deviation_list.hpp"
#include "gui/fabric_digest.hpp"
#include "gui/fabric_view.hpp"
#include "gui/main_window.hpp"
#include "gui/scenario_form.hpp"
#include "topology/fabric_check.hpp"
#include "topology/fabric_faults.hpp"
#include "topology/fabric_import.hpp"
#include "twin/scenario.hpp"

namespace {

using twin::gui::DeviationKind;
using twin::gui::FabricDigest;
using twin::gui::MainWindow;

const QString kSource = QString(CLUSTERTWIN_SOURCE_DIR) + "/";

int switch_named(const FabricDigest& d, const std::string& name) {
  for (std::size_t i = 0; i < d.switches.size(); ++i)
    if (d.switches[i].name == name) return static_cast<int>(i);
  return -1;
}

/// Every kind of deviation the view knows, counted by check_fabric on the same fabric.
void expect_counts_match_the_check(const FabricDigest& d, const twin::topology::Fabric& fabric,
                                   const twin::gui::FabricView& view) {
  const auto check = twin::topology::check_fabric(fabric);
  for (int k = 0; k < twin::gui::kDeviationKinds; ++k) {
    const auto kind = static_cast<DeviationKind>(k);
    const char* key = twin::gui::deviation_key(kind);
    EXPECT_EQ(d.deviations.count(kind), check.count(key)) << key;
    EXPECT_EQ(view.deviation_list()->rows(kind), check.count(key)) << key;
  }
  const auto& marks = view.deviation_marks();
  EXPECT_EQ(marks.missing_links + marks.short_links, check.count("missing_link"));
  EXPECT_EQ(marks.slow_links, check.count("slow_link"));
  EXPECT_EQ(marks.uneven, check.count("uneven_uplinks"));
  EXPECT_EQ(marks.wrong_rail, check.count("wrong_rail"));
}

TEST(GuiImportedFabric, RealDumpShowsTheCheckDeviationsOnTheRightSwitches) {
  MainWindow window;
  window.resize(1600, 1000);
  ASSERT_TRUE(window.load_file(kSource + "scenarios/real-ndr-fabric.yaml"));
  static_cast<QSpinBox*>(window.form()->field("campaign.trials"))->setValue(2);
  window.show();
  QApplication::processEvents();
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  auto* view = window.fabric_view();
  const FabricDigest* d = view->digest();
  ASSERT_NE(d, nullptr);
  ASSERT_TRUE(d->detailed);
  ASSERT_TRUE(d->deviations.imported);
  EXPECT_EQ(view->colour_mode(), "deviations");  // the default when there are some

  // The fabric as imported: 31 leaves and 9 spines with their own names.
  EXPECT_EQ(std::count_if(d->switches.begin(), d->switches.end(),
                          [](const auto& s) { return s.tier == twin::gui::Tier::leaf; }),
            31);
  EXPECT_EQ(std::count_if(d->switches.begin(), d->switches.end(),
                          [](const auto& s) { return s.tier == twin::gui::Tier::spine; }),
            9);
  const int leaf_0404 = switch_named(*d, "A09-P1-IBLEAF-04-04");
  ASSERT_GE(leaf_0404, 0);
  EXPECT_EQ(d->switches[static_cast<std::size_t>(leaf_0404)].uplinks, 16);  // 8 spines x 2

  // The counts `clustertwin topology check` prints for this dump.
  EXPECT_EQ(d->deviations.count(DeviationKind::missing_link), 16);
  EXPECT_EQ(d->deviations.count(DeviationKind::uneven_uplinks), 12);
  EXPECT_EQ(d->deviations.count(DeviationKind::slow_link), 0);
  EXPECT_EQ(d->deviations.count(DeviationKind::wrong_rail), 6);
  EXPECT_EQ(d->deviations.ideal_leaf_up, 18);
  const auto scenario =
      twin::sim::load_scenario((kSource + "scenarios/real-ndr-fabric.yaml").toStdString());
  const twin::topology::Fabric fabric(scenario.cluster, scenario.fabric);
  expect_counts_match_the_check(*d, fabric, *view);
  // What the worker thread computes (the digest, check_fabric inside) and what the window does.
  QElapsedTimer timer;
  timer.start();
  const auto again = twin::gui::digest_fabric(fabric, {}, 0.0, nullptr);
  const double digest_s = static_cast<double>(timer.nsecsElapsed()) / 1e9;
  timer.restart();
  const QImage image = view->grab().toImage();
  const double paint_s = static_cast<double>(timer.nsecsElapsed()) / 1e9;
  std::printf(
      "real NDR fabric (%zu switches, %zu cables): digest + check %.3f s, "
      "scene %.3f s, paint %.3f s\n",
      again.switches.size(), fabric.cable_count(), digest_s, window.fabric_draw_seconds(), paint_s);
  EXPECT_EQ(again.deviations.items.size(), d->deviations.items.size());
  EXPECT_LT(digest_s + window.fabric_draw_seconds() + paint_s, 1.0);
  EXPECT_FALSE(image.isNull());
  // Of the 16 short pairs, 10 have no cable at all (dashed) and 6 one of their two (dotted).
  EXPECT_EQ(view->deviation_marks().missing_links, 10);
  EXPECT_EQ(view->deviation_marks().short_links, 6);
  EXPECT_TRUE(view->deviation_list()->summary().contains("16 missing leaf - spine cables"));
  for (const auto& x : d->deviations.items) {
    if (x.kind == DeviationKind::uneven_uplinks) {
      ASSERT_GE(x.lower, 0);
      EXPECT_EQ(d->switches[static_cast<std::size_t>(x.lower)].uplinks, x.have);
      EXPECT_LT(x.have, 18);
    }
    if (x.kind == DeviationKind::missing_link) {
      ASSERT_GE(x.lower, 0);
      ASSERT_GE(x.upper, 0);
      EXPECT_EQ(d->switches[static_cast<std::size_t>(x.lower)].tier, twin::gui::Tier::leaf);
      EXPECT_EQ(d->switches[static_cast<std::size_t>(x.upper)].tier, twin::gui::Tier::spine);
    }
  }

  // The swapped pair of unit 08: rail 2's cable on rail 3's leaf and back, each drawn from the
  // leaf it belongs on.
  const int leaf_r2 = switch_named(*d, "B09-P1-IBLEAF-03-08");
  const int leaf_r3 = switch_named(*d, "B09-P1-IBLEAF-04-08");
  int swapped = 0;
  for (const auto& x : d->deviations.items)
    if (x.kind == DeviationKind::wrong_rail && x.where.rfind("b08-p1-dgx-08-c01", 0) == 0) {
      ++swapped;
      EXPECT_EQ(x.upper, x.rail == 2 ? leaf_r3 : leaf_r2);
      EXPECT_EQ(x.expected_leaf, x.rail == 2 ? leaf_r2 : leaf_r3);
    }
  EXPECT_EQ(swapped, 2);

  // Picking a deviation highlights its switches.
  ASSERT_TRUE(view->highlight_matching("HCA-5"));
  EXPECT_EQ(view->highlighted_switches(),
            (QStringList{"B09-P1-IBLEAF-04-08", "B09-P1-IBLEAF-03-08"}));
  ASSERT_TRUE(view->highlight_matching("A09-P1-IBLEAF-04-04 - A10-P1-IBSPINE-01"));
  EXPECT_EQ(view->highlighted_switches(),
            (QStringList{"A09-P1-IBLEAF-04-04", "A10-P1-IBSPINE-01"}));
  EXPECT_FALSE(view->highlight_matching("no such cable"));
  view->highlight_deviation(-1);
  EXPECT_TRUE(view->highlighted_switches().isEmpty());

  const QStringList legend = view->legend_entries();
  EXPECT_TRUE(std::any_of(legend.begin(), legend.end(),
                          [](const QString& s) { return s.contains("missing cable"); }));
  EXPECT_TRUE(std::any_of(legend.begin(), legend.end(),
                          [](const QString& s) { return s.contains("another rail"); }));
}

TEST(GuiImportedFabric, GeneratedFabricMatchesTheIdeal) {
  MainWindow window;
  ASSERT_TRUE(window.load_file(kSource + "scenarios/small-3tier.yaml"));
  static_cast<QSpinBox*>(window.form()->field("campaign.trials"))->setValue(2);
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  const auto* view = window.fabric_view();
  ASSERT_NE(view->digest(), nullptr);
  EXPECT_FALSE(view->digest()->deviations.imported);
  EXPECT_TRUE(view->digest()->deviations.items.empty());
  EXPECT_TRUE(view->deviation_list()->summary().contains("matches the ideal fat tree"));
  EXPECT_EQ(view->deviation_marks().missing_links + view->deviation_marks().wrong_rail +
                view->deviation_marks().uneven + view->deviation_marks().slow_links,
            0);
  EXPECT_EQ(view->colour_mode(), "");  // utilisation
}

TEST(GuiImportedFabric, SeededFaultsAreEachDrawn) {
  // A generated 2-tier fabric exported as a dump, with one cable removed, one link trained down
  // to half its lanes and two adapter cables swapped.
  twin::topology::ClusterSpec cluster;
  cluster.nodes = 4;
  cluster.gpus_per_node = 8;
  cluster.nics_per_node = 8;
  twin::topology::FabricSpec spec;
  spec.tiers = 2;
  spec.switch_radix = 8;
  const twin::topology::Fabric generated(cluster, spec);
  auto dump = twin::topology::to_ibnetdiscover(generated);
  twin::topology::FaultSpec faults;
  faults.remove_cables = 1;
  faults.downgrade_links = 1;
  faults.swap_cable_pairs = 1;
  faults.seed = 3;
  ASSERT_EQ(twin::topology::apply_faults(dump, faults).size(), 3u);
  std::ostringstream text;
  twin::topology::write_ibnetdiscover(text, dump);
  const twin::topology::Fabric fabric(
      cluster, twin::topology::FabricSpec{},
      twin::topology::plan_from_ibnetdiscover(
          twin::topology::parse_ibnetdiscover(text.str(), "faulted.out")));

  twin::gui::FabricView view;
  view.resize(1200, 800);
  view.show();
  QApplication::processEvents();
  view.show_fabric(fabric, {}, 0.0);
  const FabricDigest* d = view.digest();
  ASSERT_TRUE(d->deviations.imported);
  expect_counts_match_the_check(*d, fabric, view);
  EXPECT_EQ(view.deviation_marks().missing_links + view.deviation_marks().short_links, 1);
  EXPECT_EQ(view.deviation_marks().slow_links, 1);
  EXPECT_EQ(view.deviation_marks().uneven, 1);      // the leaf that lost the cable
  EXPECT_EQ(view.deviation_marks().wrong_rail, 2);  // a swap puts two adapters on wrong leaves
  EXPECT_EQ(view.colour_mode(), "deviations");
}

}  // namespace
