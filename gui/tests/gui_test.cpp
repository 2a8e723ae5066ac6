#include <gtest/gtest.h>

#include <QAbstractAxis>
#include <QApplication>
#include <QChart>
#include <QElapsedTimer>
#include <QImage>
#include <QLegendMarker>
#include <QPixmap>
#include <QSpinBox>
#include <QThread>
#include <cmath>
#include <fstream>
#include <numeric>
#include <set>

#include "gui/bom_view.hpp"
#include "gui/campaign_view.hpp"
#include "gui/chart_style.hpp"
#include "gui/compare_view.hpp"
#include "gui/fabric_view.hpp"
#include "gui/main_window.hpp"
#include "gui/run_result.hpp"
#include "gui/scenario_form.hpp"
#include "gui/step_view.hpp"
#include "twin/scenario.hpp"

namespace {

using twin::gui::MainWindow;

int distinct_colors(const QImage& image) {
  std::set<QRgb> colors;
  for (int y = 0; y < image.height(); y += 3)
    for (int x = 0; x < image.width(); x += 3) colors.insert(image.pixel(x, y));
  return static_cast<int>(colors.size());
}

const QString kScenarios = QString(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/";

void set_trials(MainWindow& w, int trials) {
  static_cast<QSpinBox*>(w.form()->field("campaign.trials"))->setValue(trials);
}

bool contains(const QStringList& list, const QString& text) {
  for (const auto& s : list)
    if (s.contains(text, Qt::CaseInsensitive)) return true;
  return false;
}

TEST(Gui, EveryViewHasItsLegendAndAxisLabels) {
  MainWindow window;
  window.resize(1400, 900);
  ASSERT_TRUE(window.load_file(kScenarios + "small-moe.yaml"));
  set_trials(window, 20);
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  window.pin_baseline();
  // A what-if on the same fabric: a different routing of the same cables.
  window.set_yaml(QString::fromStdString(
                      twin::gui::yaml_set(window.yaml().toStdString(), "fabric.routing", "ecmp")),
                  "what-if.yaml");
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  window.show();
  QApplication::processEvents();

  const auto* fabric = window.fabric_view();
  EXPECT_TRUE(contains(fabric->legend_entries(), "utilisation"));
  EXPECT_TRUE(contains(fabric->legend_entries(), "hottest"));
  EXPECT_TRUE(contains(fabric->axis_labels(), "leaf"));
  EXPECT_TRUE(contains(fabric->axis_labels(), "spine"));
  EXPECT_TRUE(contains(fabric->axis_labels(), "links"));

  const auto* step = window.step_view();
  for (const char* key : {"compute", "TP", "EP", "DP", "pipeline", "optimizer"})
    EXPECT_TRUE(contains(step->legend_entries(), key)) << key;
  EXPECT_TRUE(contains(step->axis_labels(), "time within the step"));
  EXPECT_TRUE(contains(step->track_names(), "stage 1: EP"));
  EXPECT_TRUE(contains(step->track_names(), "stage 0: pipeline P2P"));

  for (QChart* chart : window.campaign_view()->charts()) {
    ASSERT_NE(chart, nullptr);
    EXPECT_FALSE(chart->title().isEmpty());
    EXPECT_TRUE(chart->legend()->isVisible()) << chart->title().toStdString();
    EXPECT_FALSE(chart->legend()->markers().isEmpty()) << chart->title().toStdString();
    for (QAbstractAxis* axis : chart->axes())
      EXPECT_FALSE(axis->titleText().isEmpty()) << chart->title().toStdString();
    EXPECT_EQ(chart->axes().size(), 2) << chart->title().toStdString();
  }

  EXPECT_TRUE(contains(window.bom_view()->header_labels(), "unit cost (USD)"));
  ASSERT_TRUE(window.has_baseline());
  EXPECT_TRUE(contains(window.compare_view()->legend_entries(), "baseline"));
  EXPECT_TRUE(contains(window.compare_view()->legend_entries(), "what-if"));
  EXPECT_TRUE(contains(window.compare_view()->axis_labels(), "utilisation (%)"));

  for (const char* name : {"fabric", "step", "campaign", "bom", "compare"}) {
    window.show_view(name);
    QApplication::processEvents();
    EXPECT_GT(distinct_colors(window.view(name)->grab().toImage()), 8) << name << " looks blank";
  }
}

TEST(Gui, HistogramBarsSumToTheTrialCount) {
  // Values on bin edges, repeated values, the maximum: each counted once.
  const std::vector<double> values = {31.0, 31.0, 31.5, 31.99, 32.0, 33.7, 33.7, 35.0};
  const auto h = twin::gui::histogram(values, 4);
  EXPECT_EQ(std::accumulate(h.counts.begin(), h.counts.end(), 0), 8);
  EXPECT_DOUBLE_EQ(h.width, 1.0);  // span 4 in about 4 bins: width 1
  EXPECT_DOUBLE_EQ(h.lo, 31.0);
  EXPECT_EQ(h.counts, (std::vector<int>{4, 1, 2, 0, 1}));
  const auto same = twin::gui::histogram({12.5, 12.5, 12.5});
  EXPECT_EQ(std::accumulate(same.counts.begin(), same.counts.end(), 0), 3);

  MainWindow window;
  ASSERT_TRUE(window.load_file(kScenarios + "small-moe.yaml"));
  set_trials(window, 50);
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  const auto counts = window.campaign_view()->histogram_counts();
  EXPECT_EQ(std::accumulate(counts.begin(), counts.end(), 0), 50);
}

TEST(Gui, FabricOf131072GpusRendersWithinASecondAnd500MB) {
  twin::topology::ClusterSpec cluster;
  cluster.nodes = 16384;  // x 8 GPUs = 131,072
  twin::topology::FabricSpec spec;
  spec.tiers = 3;
  spec.switch_radix = 128;
  const twin::topology::Fabric fabric(cluster, spec);
  ASSERT_EQ(fabric.gpu_count(), 131072);
  std::vector<double> bytes(fabric.link_count());
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<double>(i % 97) * 1e7;

  auto peak_kb = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmHWM:", 0) == 0) return std::stol(line.substr(6));
    return 0L;
  };
  auto rss_kb = [] {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    return 0L;
  };
  twin::gui::FabricView view;
  view.resize(1400, 900);
  view.show();
  QApplication::processEvents();
  std::ofstream("/proc/self/clear_refs") << "5";  // restart the peak-RSS count here
  const long before_kb = rss_kb();
  QElapsedTimer timer;
  timer.start();
  view.show_fabric(fabric, bytes, 1.0);
  const QImage image = view.grab().toImage();  // paints the scene
  const double seconds = static_cast<double>(timer.elapsed()) / 1000.0;
  const double grown_MB = static_cast<double>(peak_kb() - before_kb) / 1024.0;
  std::printf("131,072 GPUs: digest + draw + paint %.3f s, peak memory growth %.0f MB, %d items\n",
              seconds, grown_MB, view.scene_item_count());
  EXPECT_FALSE(view.detailed());
  EXPECT_LT(seconds, 1.0);
  EXPECT_LT(grown_MB, 500.0);
  EXPECT_LT(view.scene_item_count(), 5000);
  EXPECT_GT(distinct_colors(image), 8);
}

TEST(Gui, FailedSpineShowsWhereTheLoadWent) {
  MainWindow window;
  ASSERT_TRUE(window.load_file(kScenarios + "teaching/failed-spine.yaml"));
  set_trials(window, 5);
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  const auto* view = window.fabric_view();
  EXPECT_TRUE(view->detailed());
  EXPECT_TRUE(contains(view->legend_entries(), "rerouted"));
  twin::gui::RunInputs in;
  in.yaml = window.yaml().toStdString();
  in.source = "failed-spine.yaml";
  in.campaign = false;
  const auto r = twin::gui::compute_result(in, nullptr);
  ASSERT_TRUE(r->error.empty()) << r->error;
  ASSERT_TRUE(r->digest->has_reference);
  EXPECT_EQ(r->digest->switches_down, 1);
  EXPECT_EQ(r->digest->cables_degraded, 1);
  EXPECT_GT(r->digest->rerouted_links, 0);
  // No edge that touches the dead spine can carry moved traffic.
  for (const auto& e : r->digest->edges)
    if (r->digest->switches[e.upper].name == "spine[1]") {
      EXPECT_FALSE(e.rerouted);
    }
}

TEST(Gui, StepAxisTicksAreRoundAtEveryZoom) {
  MainWindow window;
  ASSERT_TRUE(window.load_file(kScenarios + "small-3tier.yaml"));
  set_trials(window, 2);
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  auto* step = window.step_view();
  for (double zoom : {1.0, 3.0, 7.0}) {
    step->zoom(zoom, 0.3);
    const auto ticks = step->ticks();
    ASSERT_GE(ticks.size(), 3u);
    const double d = ticks[1] - ticks[0];
    const double mantissa = d / std::pow(10.0, std::floor(std::log10(d) + 1e-9));
    EXPECT_TRUE(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                std::abs(mantissa - 5) < 1e-6)
        << d;
    for (double t : ticks) EXPECT_NEAR(std::remainder(t, d), 0.0, 1e-6 * d) << t;
  }
  // Zoomed 21x around 30 % of the step: a twenty-first of it is visible, starting inside it.
  const auto [t0, t1] = step->visible_s();
  step->reset_zoom();
  const double full = step->visible_s().second;
  EXPECT_GT(t0, 0.0);
  EXPECT_NEAR((t1 - t0) * 21.0, full, 1e-9 * full);
}

TEST(Gui, FormAndYamlStayInSync) {
  using twin::gui::yaml_set;
  // Block style keeps comments and the other fields.
  const std::string block =
      "cluster:\n  nodes: 8   # eight\n  gpus_per_node: 8\nfabric:\n  tiers: 3\n";
  EXPECT_EQ(yaml_set(block, "cluster.nodes", "16"),
            "cluster:\n  nodes: 16   # eight\n  gpus_per_node: 8\nfabric:\n  tiers: 3\n");
  EXPECT_EQ(yaml_set(block, "fabric.switch_radix", "8"),
            "cluster:\n  nodes: 8   # eight\n  gpus_per_node: 8\nfabric:\n  switch_radix: 8\n"
            "  tiers: 3\n");
  EXPECT_EQ(yaml_set(block, "training.global_batch", "64"),
            block + "training:\n  global_batch: 64\n");
  // Flow style.
  EXPECT_EQ(yaml_set("cluster: {nodes: 8, gpus_per_node: 8}\n", "cluster.nodes", "32"),
            "cluster: {nodes: 32, gpus_per_node: 8}\n");
  EXPECT_EQ(yaml_set("cluster: {nodes: 8}\n", "cluster.nic_gbps", "800"),
            "cluster: {nodes: 8, nic_gbps: 800}\n");

  MainWindow window;
  ASSERT_TRUE(window.load_file(kScenarios + "small-3tier.yaml"));
  auto* nodes = static_cast<QSpinBox*>(window.form()->field("cluster.nodes"));
  auto* dp = static_cast<QSpinBox*>(window.form()->field("parallelism.dp"));
  auto* batch = static_cast<QSpinBox*>(window.form()->field("training.global_batch"));
  // Form -> YAML: 16 nodes; DP follows the GPU count (128 / (8 x 2) = 8); a batch DP divides.
  nodes->setValue(16);
  EXPECT_EQ(dp->value(), 8);
  batch->setValue(64);
  auto s = twin::sim::parse_scenario(window.yaml().toStdString(), "form");
  EXPECT_EQ(s.cluster.nodes, 16);
  EXPECT_EQ(s.parallelism.dp, 8);
  EXPECT_EQ(s.training.global_batch, 64);
  EXPECT_TRUE(window.yaml().contains("# CI-sized sibling"));  // the file's comments survive
  EXPECT_TRUE(window.run_now()) << window.error_text().toStdString();
  // YAML -> form.
  window.set_yaml(window.yaml().replace("nodes: 16", "nodes: 4"), "edited.yaml");
  EXPECT_EQ(nodes->value(), 4);
}

TEST(Gui, BomTableTotalsMatchTheCostModel) {
  const auto s = twin::sim::load_scenario("");
  const twin::topology::Fabric fabric(s.cluster, s.fabric);
  const auto bom = twin::topology::compute_bom(fabric);
  const auto rows = twin::gui::bom_rows(bom, s.cluster, s.fabric, s.costs);
  double total = 0;
  for (const auto& r : rows) total += r.total_usd();
  EXPECT_NEAR(total, twin::sim::price(s.costs, bom, s.cluster, s.fabric, 0, 0).capex_usd, 1e-3);
  // 512 servers, 128 + 128 + 64 switches, 4,096 cables per tier (DESIGN.md).
  auto count = [&](const std::string& item) {
    for (const auto& r : rows)
      if (r.item.rfind(item, 0) == 0) return r.count;
    return -1.0;
  };
  EXPECT_EQ(count("servers"), 512);
  EXPECT_EQ(count("leaf switches"), 128);
  EXPECT_EQ(count("spine switches"), 128);
  EXPECT_EQ(count("core switches"), 64);
  EXPECT_EQ(count("cables leaf - spine"), 4096);
  const std::string csv = twin::gui::bom_csv(rows);
  EXPECT_EQ(csv.rfind("tier,item,count,unit,unit_cost_usd,total_usd\n", 0), 0u);
  EXPECT_NE(csv.find("\"total\",\"capital cost\""), std::string::npos);
  EXPECT_EQ(twin::gui::thousands(4096), "4,096");
}

TEST(Gui, CompareShowsTheCostOfOversubscription) {
  MainWindow window;
  ASSERT_TRUE(window.load_file(kScenarios + "small-3tier.yaml"));
  set_trials(window, 4);
  ASSERT_TRUE(window.run_now());
  window.pin_baseline();
  window.set_yaml(QString::fromStdString(twin::gui::yaml_set(window.yaml().toStdString(),
                                                             "fabric.oversubscription", "2")),
                  "oversubscribed.yaml");
  ASSERT_TRUE(window.run_now()) << window.error_text().toStdString();
  const auto& rows = window.compare_view()->rows();
  auto row = [&](const std::string& name) {
    for (const auto& r : rows)
      if (r.name == name) return r;
    return twin::gui::CompareRow{};
  };
  EXPECT_LT(row("switches").what_if, row("switches").baseline);
  EXPECT_LT(row("capital cost").what_if, row("capital cost").baseline);
  EXPECT_GT(row("step time").baseline, 0.0);
  EXPECT_GT(row("ETTR P50").baseline, 0.0);
  EXPECT_GT(row("run cost").baseline, 0.0);
}

TEST(Gui, CancelEndsALongCampaignWithinASecond) {
  MainWindow window;
  ASSERT_TRUE(window.load_file(kScenarios + "small-moe.yaml"));
  // 100,000 trials of a run 100 times longer than the scenario's: minutes of work.
  window.set_yaml(QString::fromStdString(twin::gui::yaml_set(window.yaml().toStdString(),
                                                             "training.tokens", "1.0e13")),
                  "long.yaml");
  window.set_trials(100000);
  bool finished = false;
  QObject::connect(&window, &MainWindow::run_finished, [&] { finished = true; });
  auto pump = [&](QElapsedTimer& t, qint64 ms, bool until_finished) {
    while (t.elapsed() < ms && !(until_finished && finished)) {
      QApplication::processEvents(QEventLoop::AllEvents, 20);
      QThread::msleep(5);
    }
  };
  window.run_async();
  ASSERT_TRUE(window.running());
  QElapsedTimer warmup;
  warmup.start();
  pump(warmup, 700, false);  // the campaign's trials are running by now
  ASSERT_TRUE(window.running()) << "the campaign ended before it could be cancelled";
  QElapsedTimer timer;
  timer.start();
  window.cancel();
  pump(timer, 10000, true);
  const double seconds = static_cast<double>(timer.elapsed()) / 1000.0;
  std::printf("cancel took %.3f s\n", seconds);
  EXPECT_TRUE(finished);
  EXPECT_FALSE(window.running());
  EXPECT_LT(seconds, 1.0);
  EXPECT_TRUE(window.error_text().startsWith("cancelled")) << window.error_text().toStdString();
}

TEST(Gui, BadYamlShowsAnErrorInsteadOfCrashing) {
  MainWindow window;
  window.set_yaml("schema_version: 1\ncluster: {nodes: [1, 2\n", "broken.yaml");
  EXPECT_FALSE(window.run_now());
  EXPECT_TRUE(window.error_text().contains("broken.yaml")) << window.error_text().toStdString();
  window.set_yaml("schema_version: 1\nfabric: {tiers: 4}\n", "bad.yaml");
  EXPECT_FALSE(window.run_now());
  EXPECT_TRUE(window.error_text().contains("fabric.tiers")) << window.error_text().toStdString();
}

TEST(Gui, FabricViewOf4096GpusDrawsSwitchBySwitchUnderASecond) {
  MainWindow window;
  window.load_file({});
  set_trials(window, 4);
  ASSERT_TRUE(window.run_now());
  EXPECT_TRUE(window.fabric_view()->detailed());
  EXPECT_LT(window.fabric_draw_seconds(), 1.0);
}

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

// Hovering a forward op lists its layer's kernels from the step program: the layer's block with
// its kernel count, and its slowest kernel first (the profiler's view); communication has none.
TEST(Gui, StepTooltipListsTheKernelsOfAnOp) {
  const auto scenario = twin::sim::load_scenario((kScenarios + "small-3tier.yaml").toStdString());
  const twin::sim::StepReport report = twin::sim::simulate_step(scenario);
  const twin::sim::TimelineOp* forward = nullptr;
  const twin::sim::TimelineOp* comm = nullptr;
  for (const auto& op : report.timeline) {
    if (!forward && op.stream == "compute" && op.forward && op.chunk >= 0) forward = &op;
    if (!comm && op.stream == "comm") comm = &op;
  }
  ASSERT_NE(forward, nullptr);
  const QStringList lines = twin::gui::kernel_lines(report.program, *forward);
  ASSERT_FALSE(lines.isEmpty());
  const auto& chunk = report.program.chunks[static_cast<std::size_t>(forward->stage)]
                                           [static_cast<std::size_t>(forward->chunk)];
  // One header per block with kernels, then at most six kernels each.
  std::size_t expected = 0;
  double slowest = 0;
  for (const auto& block : chunk.blocks) {
    if (block.forward.empty()) continue;
    expected += 1 + std::min<std::size_t>(6, block.forward.size());
    if (&block == &chunk.blocks.front())
      for (const auto& k : block.forward) slowest = std::max(slowest, k.time_s);
  }
  EXPECT_EQ(static_cast<std::size_t>(lines.size()), expected);
  EXPECT_TRUE(lines[0].startsWith(QString::fromStdString(chunk.blocks.front().label)));
  EXPECT_TRUE(lines[1].contains(twin::gui::duration_text(slowest))) << lines[1].toStdString();
  if (comm != nullptr) {
    EXPECT_TRUE(twin::gui::kernel_lines(report.program, *comm).isEmpty());
  }
}
