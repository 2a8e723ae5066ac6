#include <gtest/gtest.h>

#include <QApplication>
#include <QImage>
#include <QPixmap>
#include <set>

#include "gui/main_window.hpp"

namespace {

int distinct_colors(const QImage& image) {
  std::set<QRgb> colors;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colors.insert(image.pixel(x, y));
  return static_cast<int>(colors.size());
}

const QString kScenarios = QString(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/";

TEST(Gui, EveryViewRendersForTheDefaultAndASmallScenario) {
  for (const QString& path : {QString(), kScenarios + "small-moe.yaml"}) {
    twin::gui::MainWindow window;
    window.resize(1400, 900);
    ASSERT_TRUE(window.load_file(path));
    ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
    window.show();
    QApplication::processEvents();
    for (const char* name : {"fabric", "step", "campaign", "bom"}) {
      window.show_view(name);
      QApplication::processEvents();
      const QImage image = window.view(name)->grab().toImage();
      EXPECT_GT(distinct_colors(image), 8) << name << " looks blank for " << path.toStdString();
    }
  }
}

TEST(Gui, BadYamlShowsAnErrorInsteadOfCrashing) {
  twin::gui::MainWindow window;
  window.set_yaml("schema_version: 1\ncluster: {nodes: [1, 2\n", "broken.yaml");
  EXPECT_FALSE(window.run_now());
  EXPECT_TRUE(window.error_text().contains("broken.yaml")) << window.error_text().toStdString();
  window.set_yaml("schema_version: 1\nfabric: {tiers: 4}\n", "bad.yaml");
  EXPECT_FALSE(window.run_now());
  EXPECT_TRUE(window.error_text().contains("fabric.tiers")) << window.error_text().toStdString();
}

TEST(Gui, FabricViewOf4096GpusDrawsWellUnderASecond) {
  twin::gui::MainWindow window;
  window.load_file({});
  ASSERT_TRUE(window.run_now());
  EXPECT_LT(window.fabric_draw_seconds(), 1.0);
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
