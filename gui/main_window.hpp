#pragma once
// The clustertwin app: a scenario panel (lesson, YAML editor and a form kept in sync with it),
// and views of the fabric, a training step, a failure campaign, the bill of materials and a
// baseline-vs-what-if comparison. Runs happen in a worker thread with a progress bar and a
// Cancel that stops the computation; a pinned result stays as the baseline of the next runs.

#include <QMainWindow>
#include <memory>

class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QThread;

namespace twin::core {
class CancelToken;
}

namespace twin::gui {

class BomView;
class CampaignView;
class CompareView;
class FabricView;
class ScenarioForm;
class StepView;
struct RunResult;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Loads a scenario file (empty: the embedded default) into the editor and the form.
  bool load_file(const QString& path);
  void set_yaml(const QString& text, const QString& source);
  [[nodiscard]] QString yaml() const;
  /// Runs synchronously (screenshots and tests); false if the scenario has an error.
  bool run_now();
  /// The widget of a view: fabric, step, campaign, bom or compare (null for an unknown name).
  QWidget* view(const QString& name);
  void show_view(const QString& name);
  [[nodiscard]] QString error_text() const;
  [[nodiscard]] double fabric_draw_seconds() const;
  [[nodiscard]] bool running() const { return worker_ != nullptr; }
  [[nodiscard]] ScenarioForm* form() const { return form_; }
  [[nodiscard]] FabricView* fabric_view() const { return fabric_; }
  [[nodiscard]] StepView* step_view() const { return step_; }
  [[nodiscard]] CampaignView* campaign_view() const { return campaign_; }
  [[nodiscard]] BomView* bom_view() const { return bom_; }
  [[nodiscard]] CompareView* compare_view() const { return compare_; }
  [[nodiscard]] bool has_baseline() const { return baseline_ != nullptr; }
  /// Monte Carlo trials of the campaign (the form's field).
  void set_trials(int trials);

 public slots:
  /// Runs in a worker thread; the result replaces the views when it arrives.
  void run_async();
  /// Stops the running computation; the views keep the last result.
  void cancel();
  /// Keeps the current result as the baseline the next runs are compared with.
  void pin_baseline();
  void clear_baseline();

 signals:
  /// A run ended: with a result, an error, or cancelled.
  void run_finished();

 private slots:
  void open_file();
  void save_file();
  void export_png();

 private:
  void present(const std::shared_ptr<RunResult>& r);
  void build_ui();

  QPlainTextEdit* editor_ = nullptr;
  ScenarioForm* form_ = nullptr;
  QLabel* error_ = nullptr;
  QLabel* lesson_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* baseline_label_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QPushButton* pin_button_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  FabricView* fabric_ = nullptr;
  StepView* step_ = nullptr;
  CampaignView* campaign_ = nullptr;
  BomView* bom_ = nullptr;
  CompareView* compare_ = nullptr;
  QString source_;
  QThread* worker_ = nullptr;
  std::shared_ptr<core::CancelToken> cancel_;
  std::shared_ptr<RunResult> current_;
  std::shared_ptr<const RunResult> baseline_;
};

/// One line summing a run up: GPUs, switches, step, MFU, ETTR, days, cost.
QString summary_text(const RunResult& r);

}  // namespace twin::gui
