#include "gui/main_window.hpp"

#include <QElapsedTimer>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QLabel>
#include <QMenuBar>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QThread>
#include <QVBoxLayout>
#include <fstream>
#include <sstream>

#include "core/cancel.hpp"
#include "gui/bom_view.hpp"
#include "gui/campaign_view.hpp"
#include "gui/chart_style.hpp"
#include "gui/compare_view.hpp"
#include "gui/fabric_view.hpp"
#include "gui/run_result.hpp"
#include "gui/scenario_form.hpp"
#include "gui/step_view.hpp"

namespace twin::gui {

QString summary_text(const RunResult& r) {
  QString text = QString("%1 GPUs, %2 switches, %3 cables, capital %4")
                     .arg(thousands(r.bom.gpus), thousands(r.bom.switches_total()),
                          thousands(double(r.bom.cables_total())), usd_text(r.cost.capex_usd));
  if (r.has_step)
    text += QString("; step %1, MFU %2 %")
                .arg(duration_text(r.step.step_time_s))
                .arg(100 * r.step.mfu, 0, 'f', 1);
  if (r.has_campaign)
    text += QString("; ETTR P50 %1; %2 days to train (P50)")
                .arg(r.campaign.ettr.p50, 0, 'f', 3)
                .arg(r.campaign.days.p50, 0, 'f', 1);
  if (r.has_step) text += QString("; run cost %1").arg(usd_text(r.cost.run_cost_usd));
  return text;
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  build_ui();
}

MainWindow::~MainWindow() {
  if (worker_ != nullptr) {
    cancel_->cancel();
    worker_->wait();
  }
}

void MainWindow::build_ui() {
  setWindowTitle("clustertwin");
  auto* split = new QSplitter(this);
  auto* left = new QWidget(split);
  auto* lv = new QVBoxLayout(left);
  lesson_ = new QLabel(left);
  lesson_->setWordWrap(true);
  lesson_->setStyleSheet("QLabel { background: #f3f0e6; padding: 6px; }");
  lv->addWidget(lesson_);
  editor_ = new QPlainTextEdit(left);
  editor_->setFont(QFont("monospace", 9));
  lv->addWidget(editor_, 2);
  error_ = new QLabel(left);
  error_->setWordWrap(true);
  error_->setStyleSheet("QLabel { color: #b00020; }");
  lv->addWidget(error_);
  form_ = new ScenarioForm(editor_, left);
  lv->addWidget(form_);
  connect(form_, &ScenarioForm::yaml_error, error_, &QLabel::setText);
  connect(form_, &ScenarioForm::lesson_changed, lesson_, &QLabel::setText);

  auto* buttons = new QHBoxLayout();
  run_button_ = new QPushButton("Run", left);
  cancel_button_ = new QPushButton("Cancel", left);
  cancel_button_->setEnabled(false);
  pin_button_ = new QPushButton("Pin as baseline", left);
  pin_button_->setEnabled(false);
  pin_button_->setToolTip("Keep this result; the next runs are compared with it (Compare tab)");
  buttons->addWidget(run_button_);
  buttons->addWidget(cancel_button_);
  buttons->addWidget(pin_button_);
  lv->addLayout(buttons);
  progress_ = new QProgressBar(left);
  progress_->setRange(0, 1);
  lv->addWidget(progress_);
  summary_ = new QLabel(left);
  summary_->setWordWrap(true);
  baseline_label_ = new QLabel(left);
  baseline_label_->setWordWrap(true);
  baseline_label_->setStyleSheet("QLabel { color: #666; }");
  lv->addWidget(summary_);
  lv->addWidget(baseline_label_);

  tabs_ = new QTabWidget(split);
  fabric_ = new FabricView(tabs_);
  step_ = new StepView(tabs_);
  campaign_ = new CampaignView(tabs_);
  bom_ = new BomView(tabs_);
  compare_ = new CompareView(tabs_);
  tabs_->addTab(fabric_, "Fabric");
  tabs_->addTab(step_, "Step");
  tabs_->addTab(campaign_, "Campaign");
  tabs_->addTab(bom_, "Bill of materials");
  tabs_->addTab(compare_, "Compare");
  split->addWidget(left);
  split->addWidget(tabs_);
  split->setStretchFactor(1, 3);
  split->setSizes({380, 1200});
  setCentralWidget(split);

  auto* file = menuBar()->addMenu("&File");
  file->addAction("&Open scenario...", this, &MainWindow::open_file);
  file->addAction("&Save scenario...", this, &MainWindow::save_file);
  file->addAction("Export view as &PNG...", this, &MainWindow::export_png);
  file->addAction("Export bill of materials as &CSV...", bom_, &BomView::export_csv_dialog);
  connect(run_button_, &QPushButton::clicked, this, &MainWindow::run_async);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);
  connect(pin_button_, &QPushButton::clicked, this, [this] {
    if (has_baseline() && baseline_ == current_) {
      clear_baseline();
    } else {
      pin_baseline();
    }
  });
}

bool MainWindow::load_file(const QString& path) {
  if (path.isEmpty()) {
    set_yaml(QString::fromStdString(sim::default_scenario_yaml()), "<default>");
    return true;
  }
  std::ifstream in(path.toStdString());
  if (!in) {
    error_->setText(path + ": cannot open scenario file");
    return false;
  }
  std::stringstream text;
  text << in.rdbuf();
  set_yaml(QString::fromStdString(text.str()), path);
  return true;
}

void MainWindow::set_yaml(const QString& text, const QString& source) {
  source_ = source;
  form_->set_source(source);
  editor_->setPlainText(text);
  form_->refresh_from_yaml();
}

void MainWindow::set_trials(int trials) {
  if (auto* spin = qobject_cast<QSpinBox*>(form_->field("campaign.trials"))) spin->setValue(trials);
}

QString MainWindow::yaml() const {
  return editor_->toPlainText();
}

bool MainWindow::run_now() {
  RunInputs in{yaml().toStdString(), source_.toStdString(), form_->trials(), 0, true, baseline_};
  const auto r = compute_result(in, nullptr);
  present(r);
  return r->error.empty();
}

void MainWindow::run_async() {
  if (worker_ != nullptr) return;
  cancel_ = std::make_shared<core::CancelToken>();
  auto token = cancel_;
  auto result = std::make_shared<std::shared_ptr<RunResult>>();
  // Gather the inputs here (GUI thread); the worker only computes.
  RunInputs in{yaml().toStdString(), source_.toStdString(), form_->trials(), 0, true, baseline_};
  worker_ = QThread::create([result, in, token] { *result = compute_result(in, token.get()); });
  connect(worker_, &QThread::finished, this, [this, result] {
    worker_->deleteLater();
    worker_ = nullptr;
    progress_->setRange(0, 1);
    run_button_->setEnabled(true);
    cancel_button_->setEnabled(false);
    if (*result) present(*result);
    emit run_finished();
  });
  error_->clear();
  progress_->setRange(0, 0);  // busy
  run_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  worker_->start();
}

void MainWindow::cancel() {
  if (cancel_ && worker_ != nullptr) {
    cancel_->cancel();
    error_->setText("cancelling...");
  }
}

void MainWindow::pin_baseline() {
  if (!current_ || !current_->error.empty()) return;
  baseline_ = current_;
  baseline_label_->setText("baseline: " + summary_text(*baseline_));
  pin_button_->setText("Clear baseline");
  compare_->show_compare(baseline_.get(), current_.get());
}

void MainWindow::clear_baseline() {
  baseline_.reset();
  baseline_label_->clear();
  pin_button_->setText("Pin as baseline");
  compare_->show_compare(nullptr, nullptr);
}

void MainWindow::present(const std::shared_ptr<RunResult>& r) {
  if (r->cancelled) {
    error_->setText(QString("cancelled after %1; the views show the previous result")
                        .arg(duration_text(r->seconds)));
    return;
  }
  if (!r->error.empty()) {
    error_->setText(QString::fromStdString(r->error));
    return;
  }
  error_->clear();
  current_ = r;
  pin_button_->setEnabled(true);
  fabric_->show_digests(r->digest, r->vs_baseline);
  if (r->has_step)
    step_->show_step(r->step, r->scenario.model.name + " on " + std::to_string(r->step.gpus) +
                                  " GPUs (" + r->scenario.name + ")");
  if (r->has_campaign) campaign_->show_campaign(r->campaign);
  bom_->show_bom(r->bom, r->scenario.cluster, r->scenario.fabric, r->scenario.costs);
  compare_->show_compare(baseline_.get(), baseline_ ? r.get() : nullptr);
  if (baseline_) pin_button_->setText(baseline_ == current_ ? "Clear baseline" : "Pin as baseline");
  summary_->setText(summary_text(*r) + QString(" (computed in %1)").arg(duration_text(r->seconds)));
}

QWidget* MainWindow::view(const QString& name) {
  if (name == "fabric") return fabric_;
  if (name == "step") return step_;
  if (name == "campaign") return campaign_;
  if (name == "bom") return bom_;
  if (name == "compare") return compare_;
  return nullptr;
}

void MainWindow::show_view(const QString& name) {
  if (QWidget* w = view(name)) tabs_->setCurrentWidget(w);
}

QString MainWindow::error_text() const {
  return error_->text();
}

double MainWindow::fabric_draw_seconds() const {
  return fabric_->last_draw_seconds();
}

void MainWindow::open_file() {
  const QString path =
      QFileDialog::getOpenFileName(this, "Open scenario", {}, "Scenarios (*.yaml *.yml)");
  if (!path.isEmpty() && load_file(path)) run_async();
}

void MainWindow::save_file() {
  const QString path =
      QFileDialog::getSaveFileName(this, "Save scenario", {}, "Scenarios (*.yaml)");
  if (path.isEmpty()) return;
  std::ofstream(path.toStdString()) << editor_->toPlainText().toStdString();
}

void MainWindow::export_png() {
  const QString path = QFileDialog::getSaveFileName(this, "Export view", {}, "PNG (*.png)");
  if (!path.isEmpty()) tabs_->currentWidget()->grab().save(path, "PNG");
}

}  // namespace twin::gui
