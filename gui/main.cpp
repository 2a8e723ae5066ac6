// clustertwin-gui [SCENARIO] [--screenshot FILE [--view fabric|step|campaign|bom]]
#include <QApplication>
#include <QCommandLineParser>
#include <cstdio>
#include <cstdlib>

#include "gui/main_window.hpp"

int main(int argc, char** argv) {
  // Screenshots need no display: use the offscreen platform unless one is chosen.
  bool screenshot = false;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--screenshot") screenshot = true;
  if (screenshot && std::getenv("QT_QPA_PLATFORM") == nullptr)
    qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  QApplication::setApplicationName("clustertwin");
  QCommandLineParser parser;
  parser.setApplicationDescription("clustertwin: a digital twin of a large GPU training cluster");
  parser.addHelpOption();
  parser.addPositionalArgument("scenario",
                               "Scenario YAML (default: the embedded 4,096-GPU cluster)");
  QCommandLineOption shot("screenshot",
                          "Run the scenario, render a view offscreen and write it to FILE (PNG).",
                          "FILE");
  QCommandLineOption which("view", "View for --screenshot: fabric, step, campaign or bom.", "VIEW",
                           "fabric");
  parser.addOption(shot);
  parser.addOption(which);
  parser.process(app);
  const QString scenario = parser.positionalArguments().value(0);

  twin::gui::MainWindow window;
  window.resize(1600, 1000);
  if (!window.load_file(scenario)) {
    std::fprintf(stderr, "clustertwin-gui: %s\n", window.error_text().toStdString().c_str());
    if (parser.isSet(shot)) return 2;
  }
  if (parser.isSet(shot)) {
    const QString view = parser.value(which);
    if (window.view(view) == nullptr) {
      std::fprintf(stderr, "clustertwin-gui: --view %s: expected fabric, step, campaign or bom\n",
                   view.toStdString().c_str());
      return 2;
    }
    if (!window.run_now()) {
      std::fprintf(stderr, "clustertwin-gui: %s\n", window.error_text().toStdString().c_str());
      return 2;
    }
    window.show_view(view);
    window.show();
    QApplication::processEvents();
    if (!window.view(view)->grab().save(parser.value(shot), "PNG")) {
      std::fprintf(stderr, "clustertwin-gui: cannot write %s\n",
                   parser.value(shot).toStdString().c_str());
      return 2;
    }
    return 0;
  }
  window.show();
  window.run_async();
  return QApplication::exec();
}
