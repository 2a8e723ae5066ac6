#include "gui/main_window.hpp"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTabWidget>
#include <QTableWidget>
#include <QTextStream>
#include <QThread>
#include <QVBoxLayout>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "gui/campaign_view.hpp"
#include "gui/fabric_view.hpp"
#include "gui/step_view.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "twin/campaign.hpp"
#include "twin/fabric_report.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/model.hpp"

namespace twin::gui {

struct RunResult {
  std::string error;
  sim::Scenario scenario;
  std::unique_ptr<topology::Fabric> fabric;
  topology::Bom bom;
  bool has_step = false, has_campaign = false;
  sim::StepReport step;
  sim::CampaignReport campaign;
};

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  build_ui();
}

MainWindow::~MainWindow() {
  if (worker_ != nullptr) {
    if (cancel_) cancel_->cancel();
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

  auto* form = new QFormLayout();
  auto spin = [&](int lo, int hi) {
    auto* s = new QSpinBox(left);
    s->setRange(lo, hi);
    return s;
  };
  nodes_ = spin(1, 65536);
  tiers_ = spin(0, 9);  // wider than valid: a bad value must reach validation, not be clamped
  radix_ = spin(0, 1024);
  tp_ = spin(1, 64);
  pp_ = spin(1, 128);
  dp_ = spin(1, 65536);
  spares_ = spin(0, 65536);
  trials_ = spin(1, 10000);
  trials_->setValue(50);
  oversubscription_ = new QDoubleSpinBox(left);
  oversubscription_->setRange(1.0, 8.0);
  oversubscription_->setSingleStep(0.5);
  failure_rate_ = new QDoubleSpinBox(left);
  failure_rate_->setRange(0.0, 100.0);
  failure_rate_->setSingleStep(0.5);
  checkpoint_min_ = new QDoubleSpinBox(left);
  checkpoint_min_->setRange(0.0, 10000.0);
  checkpoint_min_->setSpecialValueText("Young/Daly");
  nic_ = new QComboBox(left);
  nic_->addItems({"100", "200", "400", "800"});
  routing_ = new QComboBox(left);
  routing_->addItems({"dmodk", "ecmp", "adaptive"});
  preset_ = new QComboBox(left);
  preset_->addItem("(from YAML)");
  for (const auto& p : workload::model_presets()) preset_->addItem(QString::fromStdString(p));
  form->addRow("nodes", nodes_);
  form->addRow("tiers", tiers_);
  form->addRow("switch radix", radix_);
  form->addRow("oversubscription", oversubscription_);
  form->addRow("NIC Gb/s", nic_);
  form->addRow("routing", routing_);
  form->addRow("model preset", preset_);
  form->addRow("TP", tp_);
  form->addRow("PP", pp_);
  form->addRow("DP", dp_);
  form->addRow("failure-rate multiplier", failure_rate_);
  form->addRow("checkpoint interval (min)", checkpoint_min_);
  form->addRow("hot spares", spares_);
  form->addRow("campaign trials", trials_);
  lv->addLayout(form);
  auto* buttons = new QHBoxLayout();
  run_button_ = new QPushButton("Run", left);
  cancel_button_ = new QPushButton("Cancel", left);
  cancel_button_->setEnabled(false);
  buttons->addWidget(run_button_);
  buttons->addWidget(cancel_button_);
  lv->addLayout(buttons);
  progress_ = new QProgressBar(left);
  progress_->setRange(0, 1);
  lv->addWidget(progress_);
  summary_ = new QLabel(left);
  summary_->setWordWrap(true);
  previous_ = new QLabel(left);
  previous_->setWordWrap(true);
  previous_->setStyleSheet("QLabel { color: #666; }");
  lv->addWidget(summary_);
  lv->addWidget(previous_);

  tabs_ = new QTabWidget(split);
  fabric_ = new FabricView(tabs_);
  step_ = new StepView(tabs_);
  campaign_ = new CampaignView(tabs_);
  bom_ = new QTableWidget(tabs_);
  tabs_->addTab(fabric_, "Fabric");
  tabs_->addTab(step_, "Step");
  tabs_->addTab(campaign_, "Campaign");
  tabs_->addTab(bom_, "Bill of materials");
  split->addWidget(left);
  split->addWidget(tabs_);
  split->setStretchFactor(1, 3);
  setCentralWidget(split);

  auto* file = menuBar()->addMenu("&File");
  file->addAction("&Open scenario...", this, &MainWindow::open_file);
  file->addAction("&Save scenario...", this, &MainWindow::save_file);
  file->addAction("Export view as &PNG...", this, &MainWindow::export_png);
  file->addAction("Export bill of materials as &CSV...", this, &MainWindow::export_csv);
  connect(run_button_, &QPushButton::clicked, this, &MainWindow::run_async);
  connect(cancel_button_, &QPushButton::clicked, this, &MainWindow::cancel);
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
  editor_->setPlainText(text);
  source_ = source;
  preset_->setCurrentIndex(0);
  refresh_form();
}

void MainWindow::refresh_form() {
  try {
    const sim::Scenario s =
        sim::parse_scenario(editor_->toPlainText().toStdString(), source_.toStdString());
    nodes_->setValue(s.cluster.nodes);
    tiers_->setValue(s.fabric.tiers);
    radix_->setValue(s.fabric.switch_radix);
    oversubscription_->setValue(s.fabric.oversubscription);
    nic_->setCurrentText(QString::number(s.cluster.nic_gbps));
    routing_->setCurrentText(
        QString::fromStdString(std::string(topology::to_string(s.fabric.routing))));
    tp_->setValue(s.parallelism.tp);
    pp_->setValue(s.parallelism.pp);
    dp_->setValue(s.parallelism.dp);
    failure_rate_->setValue(s.failures.rate_multiplier);
    checkpoint_min_->setValue(s.recovery.checkpoint_interval_min);
    spares_->setValue(s.recovery.hot_spares);
    lesson_->setText(
        QString::fromStdString(s.lesson.empty() ? s.name + ": " + s.description : s.lesson));
    error_->clear();
  } catch (const core::Error& e) {
    error_->setText(QString::fromStdString(e.what()));
  }
}

std::vector<std::string> MainWindow::form_overrides() const {
  std::vector<std::string> o = {
      "cluster.nodes=" + std::to_string(nodes_->value()),
      "fabric.tiers=" + std::to_string(tiers_->value()),
      "fabric.switch_radix=" + std::to_string(radix_->value()),
      "fabric.oversubscription=" + std::to_string(oversubscription_->value()),
      "cluster.nic_gbps=" + nic_->currentText().toStdString(),
      "fabric.routing=" + routing_->currentText().toStdString(),
      "failures.rate_multiplier=" + std::to_string(failure_rate_->value()),
      "recovery.hot_spares=" + std::to_string(spares_->value()),
      "recovery.checkpoint_interval_min=" + (checkpoint_min_->value() > 0
                                                 ? std::to_string(checkpoint_min_->value())
                                                 : std::string("young_daly")),
  };
  if (preset_->currentIndex() > 0)
    o.push_back("model.preset=" + preset_->currentText().toStdString());
  if (editor_->toPlainText().contains("model:") || preset_->currentIndex() > 0) {
    o.push_back("parallelism.tp=" + std::to_string(tp_->value()));
    o.push_back("parallelism.pp=" + std::to_string(pp_->value()));
    o.push_back("parallelism.dp=" + std::to_string(dp_->value()));
  }
  return o;
}

namespace {

/// Everything one run shows: the scenario (YAML + form overrides), its fabric and BOM, and when
/// it has a job, the step and the failure campaign. Errors are kept, never thrown.
std::shared_ptr<RunResult> compute_result(const std::string& yaml, const std::string& source,
                                          const std::vector<std::string>& overrides, int trials,
                                          int threads, const core::CancelToken* cancel = nullptr) {
  auto r = std::make_shared<RunResult>();
  try {
    r->scenario = sim::parse_scenario(yaml, source, overrides);
    r->fabric = std::make_unique<topology::Fabric>(r->scenario.cluster, r->scenario.fabric);
    r->bom = topology::compute_bom(*r->fabric);
    if (r->scenario.has_job) {
      r->step = sim::simulate_step(r->scenario, "native", false, cancel);
      r->has_step = true;
      sim::CampaignOptions o;
      o.trials = trials;
      o.threads = threads;
      o.cancel = cancel;
      r->campaign = sim::run_campaign(r->scenario, o);
      r->has_campaign = true;
    }
  } catch (const std::exception& e) {
    r->error = e.what();
  }
  return r;
}

}  // namespace

std::shared_ptr<RunResult> MainWindow::compute() const {
  return compute_result(editor_->toPlainText().toStdString(), source_.toStdString(),
                        form_overrides(), trials_->value(), 1);
}

bool MainWindow::run_now() {
  const auto r = compute();
  present(*r);
  return r->error.empty();
}

void MainWindow::run_async() {
  if (worker_ != nullptr) return;
  cancel_ = std::make_shared<core::CancelToken>();
  auto cancel = cancel_;
  auto result = std::make_shared<std::shared_ptr<RunResult>>();
  // Gather the inputs here (GUI thread); the worker only computes.
  const std::string yaml = editor_->toPlainText().toStdString(), source = source_.toStdString();
  const auto overrides = form_overrides();
  const int trials = trials_->value();
  worker_ = QThread::create([result, yaml, source, overrides, trials, cancel] {
    *result = compute_result(yaml, source, overrides, trials, 0, cancel.get());
  });
  connect(worker_, &QThread::finished, this, [this, result, cancel] {
    worker_->deleteLater();
    worker_ = nullptr;
    progress_->setRange(0, 1);
    run_button_->setEnabled(true);
    cancel_button_->setEnabled(false);
    if (!cancel->cancelled() && *result) present(**result);
  });
  progress_->setRange(0, 0);  // busy
  run_button_->setEnabled(false);
  cancel_button_->setEnabled(true);
  worker_->start();
}

void MainWindow::cancel() {
  // The worker stops at its next check (between trials, inside long trials, between replicas of
  // a per-rank step); the previous result stays on screen.
  if (cancel_) cancel_->cancel();
  error_->setText("cancelled: the previous result stays on screen");
}

void MainWindow::present(const RunResult& r) {
  if (!r.error.empty()) {
    error_->setText(QString::fromStdString(r.error));
    return;
  }
  error_->clear();
  if (!last_summary_.isEmpty()) previous_->setText("previous: " + last_summary_);
  const topology::FabricState state = sim::fabric_state(r.scenario, *r.fabric);
  fabric_->show_fabric(*r.fabric, r.has_step ? r.step.link_bytes : std::vector<double>{},
                       r.has_step ? r.step.step_time_s : 0.0, &state);
  if (r.has_step)
    step_->show_step(r.step,
                     r.scenario.model.name + " on " + std::to_string(r.step.gpus) + " GPUs");
  if (r.has_campaign) campaign_->show_campaign(r.campaign);
  const auto json = sim::bom_json(*r.fabric, r.bom);
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& [k, v] : json.items()) {
    if (v.is_object()) {
      for (const auto& [k2, v2] : v.items()) rows.emplace_back(k + "." + k2, v2.dump());
    } else {
      rows.emplace_back(k, v.dump());
    }
  }
  bom_->clear();
  bom_->setColumnCount(2);
  bom_->setRowCount(static_cast<int>(rows.size()));
  bom_->setHorizontalHeaderLabels({"item", "value"});
  for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
    bom_->setItem(i, 0, new QTableWidgetItem(QString::fromStdString(rows[i].first)));
    bom_->setItem(i, 1, new QTableWidgetItem(QString::fromStdString(rows[i].second)));
  }
  bom_->horizontalHeader()->setStretchLastSection(true);
  QString text = QString("%1 GPUs, %2 switches, %3 cables")
                     .arg(r.bom.gpus)
                     .arg(r.bom.switches_total())
                     .arg(r.bom.cables_total());
  if (r.has_step)
    text += QString("; step %1 s, MFU %2 %")
                .arg(r.step.step_time_s, 0, 'f', 3)
                .arg(100 * r.step.mfu, 0, 'f', 1);
  if (r.has_campaign)
    text += QString("; ETTR P50 %1, %2 days")
                .arg(r.campaign.ettr.p50, 0, 'f', 3)
                .arg(r.campaign.days.p50, 0, 'f', 1);
  summary_->setText(text);
  last_summary_ = text;
}

QWidget* MainWindow::view(const QString& name) {
  if (name == "fabric") return fabric_;
  if (name == "step") return step_;
  if (name == "campaign") return campaign_;
  if (name == "bom") return bom_;
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

void MainWindow::export_csv() {
  const QString path =
      QFileDialog::getSaveFileName(this, "Export bill of materials", {}, "CSV (*.csv)");
  if (path.isEmpty()) return;
  std::ofstream out(path.toStdString());
  out << "item,value\n";
  for (int i = 0; i < bom_->rowCount(); ++i)
    out << bom_->item(i, 0)->text().toStdString() << "," << bom_->item(i, 1)->text().toStdString()
        << "\n";
}

}  // namespace twin::gui
