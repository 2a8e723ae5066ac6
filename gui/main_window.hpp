#pragma once
// The clustertwin app: a scenario panel (YAML and a form of the important fields, what-if knobs,
// lesson text), and views of the fabric, a training step, a failure campaign and the bill of
// materials. Runs happen in a worker thread with a progress bar and cancel; the previous result
// stays on screen for comparison.

#include <QMainWindow>
#include <memory>

#include "core/cancel.hpp"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTabWidget;
class QTableWidget;
class QThread;

namespace twin::gui {

class FabricView;
class StepView;
class CampaignView;
struct RunResult;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Loads a scenario file (empty: the embedded default) into the editor and the form.
  bool load_file(const QString& path);
  void set_yaml(const QString& text, const QString& source);
  /// Runs synchronously (screenshots and tests); false if the scenario has an error.
  bool run_now();
  /// The widget of a view: fabric, step, campaign or bom (null for an unknown name).
  QWidget* view(const QString& name);
  void show_view(const QString& name);
  [[nodiscard]] QString error_text() const;
  [[nodiscard]] double fabric_draw_seconds() const;

 public slots:
  /// Runs in a worker thread; the result replaces the views when it arrives.
  void run_async();
  void cancel();

 private slots:
  void open_file();
  void save_file();
  void export_png();
  void export_csv();

 private:
  std::shared_ptr<RunResult> compute() const;
  void present(const RunResult& r);
  void refresh_form();
  std::vector<std::string> form_overrides() const;
  void build_ui();

  QPlainTextEdit* editor_ = nullptr;
  QLabel* error_ = nullptr;
  QLabel* lesson_ = nullptr;
  QLabel* summary_ = nullptr;
  QLabel* previous_ = nullptr;
  QProgressBar* progress_ = nullptr;
  QPushButton* run_button_ = nullptr;
  QPushButton* cancel_button_ = nullptr;
  QSpinBox* nodes_ = nullptr;
  QSpinBox* tiers_ = nullptr;
  QSpinBox* radix_ = nullptr;
  QDoubleSpinBox* oversubscription_ = nullptr;
  QComboBox* nic_ = nullptr;
  QComboBox* routing_ = nullptr;
  QComboBox* preset_ = nullptr;
  QSpinBox* tp_ = nullptr;
  QSpinBox* pp_ = nullptr;
  QSpinBox* dp_ = nullptr;
  QDoubleSpinBox* failure_rate_ = nullptr;
  QDoubleSpinBox* checkpoint_min_ = nullptr;
  QSpinBox* spares_ = nullptr;
  QSpinBox* trials_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  FabricView* fabric_ = nullptr;
  StepView* step_ = nullptr;
  CampaignView* campaign_ = nullptr;
  QTableWidget* bom_ = nullptr;
  QString source_;
  QThread* worker_ = nullptr;
  std::shared_ptr<core::CancelToken> cancel_;  ///< the running worker's
  QString last_summary_;
};

}  // namespace twin::gui
