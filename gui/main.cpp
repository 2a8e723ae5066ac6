// clustertwin-gui [SCENARIO] [--baseline SCENARIO] [--screenshot FILE [--view VIEW]]
#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>
#include <cstdio>
#include <cstdlib>

#include "gui/fabric_view.hpp"
#include "gui/main_window.hpp"
#include "gui/scenario_form.hpp"

namespace {

void add_options(QCommandLineParser& parser) {
  parser.setApplicationDescription(
      "clustertwin-gui: the clustertwin app - a digital twin of a large GPU training cluster.\n"
      "Shows the fabric, a training step, a failure campaign, the bill of materials and a\n"
      "baseline-vs-what-if comparison of a scenario. With --screenshot it runs the scenario,\n"
      "renders one view offscreen (no display needed) and exits.");
  parser.addHelpOption();
  parser.addPositionalArgument("scenario",
                               "Scenario YAML (default: the embedded 4,096-GPU cluster)");
  parser.addOption({"baseline",
                    "Run SCENARIO first (\"default\": the embedded one) and pin it as the "
                    "baseline.",
                    "SCENARIO"});
  parser.addOption({"set",
                    "Set a scenario field after loading, e.g. fabric.oversubscription=2 "
                    "(repeatable; applies to SCENARIO, not to --baseline).",
                    "KEY=VALUE"});
  parser.addOption(
      {"screenshot", "Run, render a view offscreen and write it to FILE (PNG).", "FILE"});
  parser.addOption(
      {"view", "View for --screenshot: fabric, step, campaign, bom or compare.", "VIEW", "fabric"});
  parser.addOption({"colour",
                    "Fabric cables coloured by: load, healthy (change vs the healthy fabric), "
                    "baseline (change vs --baseline) or deviations (grey cables under an imported "
                    "fabric's deviations; its default when it has some).",
                    "MODE", "load"});
  parser.addOption({"deviation",
                    "Imported fabric: select and highlight the first deviation whose text "
                    "contains TEXT (e.g. HCA-5).",
                    "TEXT"});
  parser.addOption({"trials", "Monte Carlo trials of the failure campaign.", "N", "50"});
  parser.addOption({"size", "Window size for --screenshot, WxH.", "WxH", "1600x1000"});
}

}  // namespace

int main(int argc, char** argv) {
  // Help and option errors need no display: parse before any GUI object exists.
  QStringList args;
  for (int i = 0; i < argc; ++i) args << QString::fromLocal8Bit(argv[i]);
  {
    QCommandLineParser parser;
    add_options(parser);
    if (!parser.parse(args)) {
      std::fprintf(stderr, "clustertwin-gui: %s\n\n%s", parser.errorText().toStdString().c_str(),
                   parser.helpText().toStdString().c_str());
      return 2;
    }
    if (parser.isSet("help")) {
      std::printf("%s", parser.helpText().toStdString().c_str());
      return 0;
    }
    // Screenshots need no display: use the offscreen platform unless one is chosen.
    if (parser.isSet("screenshot") && std::getenv("QT_QPA_PLATFORM") == nullptr)
      qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  QApplication app(argc, argv);
  QApplication::setApplicationName("clustertwin");
  QCommandLineParser parser;
  add_options(parser);
  parser.process(app);
  const QString scenario = parser.positionalArguments().value(0);
  const bool shot = parser.isSet("screenshot");
  auto fail = [](const QString& message) {
    std::fprintf(stderr, "clustertwin-gui: %s\n", message.toStdString().c_str());
    return 2;
  };

  twin::gui::MainWindow window;
  bool trials_ok = false;
  const int trials = parser.value("trials").toInt(&trials_ok);
  if (!trials_ok || trials < 1)
    return fail("--trials " + parser.value("trials") + ": expected a positive integer");
  window.set_trials(trials);
  const QStringList size = parser.value("size").split('x');
  window.resize(size.value(0).toInt() > 0 ? size.value(0).toInt() : 1600,
                size.value(1).toInt() > 0 ? size.value(1).toInt() : 1000);
  if (parser.isSet("baseline")) {
    const QString base = parser.value("baseline");
    if (!window.load_file(base == "default" ? QString() : base) || !window.run_now())
      return fail("--baseline: " + window.error_text());
    window.pin_baseline();
  }
  if (!window.load_file(scenario) && shot) return fail(window.error_text());
  for (const QString& kv : parser.values("set")) {
    const auto eq = kv.indexOf('=');
    if (eq <= 0) return fail("--set " + kv + ": expected KEY=VALUE");
    try {
      window.set_yaml(QString::fromStdString(twin::gui::yaml_set(window.yaml().toStdString(),
                                                                 kv.left(eq).toStdString(),
                                                                 kv.mid(eq + 1).toStdString())),
                      scenario.isEmpty() ? "<default>" : scenario);
    } catch (const std::exception& e) {
      return fail(QString("--set %1: %2").arg(kv, e.what()));
    }
  }
  if (!shot) {
    window.show();
    window.run_async();
    return QApplication::exec();
  }
  const QString view = parser.value("view");
  if (window.view(view) == nullptr)
    return fail("--view " + view + ": expected fabric, step, campaign, bom or compare");
  window.show();  // lay the views out first: the fabric is drawn for its viewport's shape
  QApplication::processEvents();
  if (!window.run_now()) return fail(window.error_text());
  const QString colour = parser.value("colour");
  if (colour != "load" && colour != "healthy" && colour != "baseline" && colour != "deviations")
    return fail("--colour " + colour + ": expected load, healthy, baseline or deviations");
  if (parser.isSet("colour"))
    window.fabric_view()->set_colour_mode(colour == "load" ? QString() : colour);
  if (parser.isSet("deviation") &&
      !window.fabric_view()->highlight_matching(parser.value("deviation")))
    return fail("--deviation " + parser.value("deviation") +
                ": no deviation of the fabric says that");
  window.show_view(view);
  window.show();
  QApplication::processEvents();
  if (!window.view(view)->grab().save(parser.value("screenshot"), "PNG"))
    return fail("cannot write " + parser.value("screenshot"));
  return 0;
}
