#include "gui/scenario_form.hpp"

#include <yaml-cpp/yaml.h>
#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QTextCursor>
#include <QTimer>
#include <regex>
#include <sstream>

#include "core/error.hpp"
#include "topology/spec.hpp"
#include "twin/scenario.hpp"
#include "twin/scenario_schema.hpp"
#include "workload/model.hpp"

namespace twin::gui {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

bool holds(const std::string& text, const std::string& section, const std::string& key,
           const std::string& value) {
  try {
    const YAML::Node root = YAML::Load(text);
    const YAML::Node v = root[section][key];
    return v && v.IsScalar() && v.as<std::string>() == YAML::Load(value).as<std::string>();
  } catch (const YAML::Exception&) {
    return false;
  }
}

/// In-place edit of one field; empty when the layout is not one this understands.
std::string edit_in_place(const std::string& text, const std::string& section,
                          const std::string& key, const std::string& value) {
  auto lines = split_lines(text);
  const std::regex section_re("^" + section + R"(\s*:\s*(.*)$)");
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    if (!std::regex_match(lines[i], m, section_re)) continue;
    std::string rest = m[1].str();
    if (!rest.empty() && rest[0] == '{') {  // flow mapping on one line
      const std::regex field_re(R"(([{,]\s*))" + key + R"((\s*:\s*)([^,}]*?)(\s*[,}]))");
      std::smatch f;
      if (std::regex_search(lines[i], f, field_re)) {
        lines[i] = f.prefix().str() + f[1].str() + key + f[2].str() + value + f[4].str() +
                   f.suffix().str();
      } else {
        const auto close = lines[i].rfind('}');
        if (close == std::string::npos) return {};
        const bool empty = lines[i].find_first_not_of(" \t", lines[i].find('{') + 1) == close;
        lines[i].insert(close, (empty ? "" : ", ") + key + ": " + value);
      }
      return join_lines(lines);
    }
    if (!rest.empty() && rest[0] != '#') return {};
    // Block mapping: the children are the following more-indented lines.
    std::string indent = "  ";
    const std::regex key_re(R"(^(\s+))" + key + R"((\s*:\s*)([^#]*?)(\s*#.*)?$)");
    std::size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const auto& l = lines[j];
      const auto first = l.find_first_not_of(" \t");
      if (first == std::string::npos || l[first] == '#') continue;
      if (first == 0) break;
      if (j == i + 1 || indent.empty()) indent = l.substr(0, first);
      std::smatch k;
      if (l.substr(0, first) == indent && std::regex_match(l, k, key_re)) {
        lines[j] = k[1].str() + key + k[2].str() + value + k[4].str();
        return join_lines(lines);
      }
    }
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(i) + 1, indent + key + ": " + value);
    return join_lines(lines);
  }
  return text + (text.empty() || text.back() == '\n' ? "" : "\n") + section + ":\n  " + key + ": " +
         value + "\n";
}

}  // namespace

std::string yaml_set(const std::string& text, const std::string& dotted_key,
                     const std::string& value) {
  const auto dot = dotted_key.find('.');
  const std::string section = dotted_key.substr(0, dot), key = dotted_key.substr(dot + 1);
  const std::string edited = edit_in_place(text, section, key, value);
  if (!edited.empty() && holds(edited, section, key, value)) return edited;
  try {
    YAML::Node root = YAML::Load(text);
    root[section][key] = YAML::Load(value);
    YAML::Emitter out;
    out << root;
    return std::string(out.c_str()) + "\n";
  } catch (const YAML::Exception& e) {
    throw core::Error(dotted_key, value, "cannot edit the YAML: " + e.msg);
  }
}

ScenarioForm::ScenarioForm(QPlainTextEdit* editor, QWidget* parent)
    : QWidget(parent), editor_(editor) {
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  auto spin = [&](int lo, int hi) {
    auto* s = new QSpinBox(this);
    s->setRange(lo, hi);
    s->setGroupSeparatorShown(true);
    return s;
  };
  auto real = [&](double lo, double hi, double step) {
    auto* s = new QDoubleSpinBox(this);
    s->setRange(lo, hi);
    s->setSingleStep(step);
    return s;
  };
  // Ranges from the schema where one field alone decides them; tiers stays wider than valid so
  // that a bad value typed in the YAML reaches validation instead of being clamped.
  auto schema_max = [](const char* path, int fallback) {
    const sim::SchemaField* f = sim::find_schema_field(path);
    return f != nullptr && f->bounds.max ? static_cast<int>(*f->bounds.max) : fallback;
  };
  nodes_ = spin(1, schema_max("cluster.nodes", 1 << 20));
  tiers_ = spin(0, 9);  // wider than valid: a bad value must reach validation, not be clamped
  radix_ = spin(0, 1024);
  tp_ = spin(1, 1024);
  pp_ = spin(1, 1024);
  dp_ = spin(1, schema_max("parallelism.dp", 1 << 20));
  batch_ = spin(1, 1 << 24);
  spares_ = spin(0, 1 << 20);
  trials_ = spin(1, 100000);
  trials_->setValue(50);
  oversubscription_ = real(1.0, 16.0, 0.5);
  failure_rate_ = real(0.0, 100.0, 0.5);
  checkpoint_min_ = real(0.0, 100000.0, 5.0);
  checkpoint_min_->setSpecialValueText("Young/Daly");
  nic_ = new QComboBox(this);
  nic_->addItems({"100", "200", "400", "800"});
  routing_ = new QComboBox(this);
  for (const auto& r : topology::routing_mode_names()) routing_->addItem(QString::fromStdString(r));
  preset_ = new QComboBox(this);
  preset_->addItem("(custom, see YAML)");
  for (const auto& p : workload::model_presets()) preset_->addItem(QString::fromStdString(p));
  derive_dp_ = new QCheckBox("DP = GPUs / (TP x PP)", this);
  derive_dp_->setChecked(true);
  hint_ = new QLabel(this);
  hint_->setWordWrap(true);
  hint_->setStyleSheet("QLabel { color: #555; }");
  // Each scenario field's row: its label with the schema's unit, and a tooltip with the
  // schema's path, meaning, default and valid values.
  auto row = [form](const char* label, const char* path, QWidget* w) {
    const sim::SchemaField* f = sim::find_schema_field(path);
    QString text = label;
    if (f != nullptr) {
      if (!f->unit.empty()) text += QString(" (%1)").arg(QString::fromStdString(f->unit));
      QString tip = QString("<b>%1</b><br>%2<br>default: %3")
                        .arg(QString::fromStdString(f->path), QString::fromStdString(f->doc),
                             QString::fromStdString(f->default_text));
      if (const std::string range = f->range_text(); !range.empty())
        tip += QString("<br>valid: %1").arg(QString::fromStdString(range).toHtmlEscaped());
      w->setToolTip(tip);
    }
    form->addRow(text, w);
  };
  row("nodes", "cluster.nodes", nodes_);
  row("fabric tiers", "fabric.tiers", tiers_);
  row("switch radix", "fabric.switch_radix", radix_);
  row("oversubscription (x:1)", "fabric.oversubscription", oversubscription_);
  row("NIC", "cluster.nic_gbps", nic_);
  row("routing", "fabric.routing", routing_);
  row("model preset", "model.preset", preset_);
  row("TP", "parallelism.tp", tp_);
  row("PP", "parallelism.pp", pp_);
  row("DP", "parallelism.dp", dp_);
  form->addRow("", derive_dp_);
  row("global batch", "training.global_batch", batch_);
  form->addRow("", hint_);
  row("failure-rate multiplier", "failures.rate_multiplier", failure_rate_);
  row("checkpoint interval", "recovery.checkpoint_interval_min", checkpoint_min_);
  row("hot spares", "recovery.hot_spares", spares_);
  form->addRow("campaign trials", trials_);

  auto bind = [this](QSpinBox* s, const char* key) {
    connect(s, &QSpinBox::valueChanged, this, [this, key](int v) {
      set_field(key, std::to_string(v));
      if (std::string(key) == "cluster.nodes" || std::string(key) == "parallelism.tp" ||
          std::string(key) == "parallelism.pp")
        derive_dp();
    });
  };
  bind(nodes_, "cluster.nodes");
  bind(tiers_, "fabric.tiers");
  bind(radix_, "fabric.switch_radix");
  bind(tp_, "parallelism.tp");
  bind(pp_, "parallelism.pp");
  bind(dp_, "parallelism.dp");
  bind(batch_, "training.global_batch");
  bind(spares_, "recovery.hot_spares");
  auto bind_real = [this](QDoubleSpinBox* s, const char* key) {
    connect(s, &QDoubleSpinBox::valueChanged, this, [this, key, s](double v) {
      set_field(key, v == 0 && s->specialValueText() == "Young/Daly"
                         ? std::string("young_daly")
                         : QString::number(v, 'g', 6).toStdString());
    });
  };
  bind_real(oversubscription_, "fabric.oversubscription");
  bind_real(failure_rate_, "failures.rate_multiplier");
  bind_real(checkpoint_min_, "recovery.checkpoint_interval_min");
  auto bind_combo = [this](QComboBox* c, const char* key) {
    connect(c, &QComboBox::currentTextChanged, this, [this, key, c](const QString& t) {
      if (c == preset_ && c->currentIndex() == 0) return;
      set_field(key, t.toStdString());
    });
  };
  bind_combo(nic_, "cluster.nic_gbps");
  bind_combo(routing_, "fabric.routing");
  bind_combo(preset_, "model.preset");
  connect(derive_dp_, &QCheckBox::toggled, this, [this] { derive_dp(); });

  debounce_ = new QTimer(this);
  debounce_->setSingleShot(true);
  debounce_->setInterval(300);
  connect(debounce_, &QTimer::timeout, this, &ScenarioForm::refresh_from_yaml);
  connect(editor_, &QPlainTextEdit::textChanged, this, [this] {
    if (!updating_) debounce_->start();
  });
}

QWidget* ScenarioForm::field(const QString& key) const {
  if (key == "cluster.nodes") return nodes_;
  if (key == "parallelism.tp") return tp_;
  if (key == "parallelism.pp") return pp_;
  if (key == "parallelism.dp") return dp_;
  if (key == "training.global_batch") return batch_;
  if (key == "fabric.oversubscription") return oversubscription_;
  if (key == "fabric.tiers") return tiers_;
  if (key == "recovery.hot_spares") return spares_;
  if (key == "campaign.trials") return trials_;
  return nullptr;
}

int ScenarioForm::trials() const {
  return trials_->value();
}

void ScenarioForm::set_field(const std::string& key, const std::string& value) {
  if (updating_) return;
  try {
    const std::string text = yaml_set(editor_->toPlainText().toStdString(), key, value);
    updating_ = true;
    QTextCursor cursor(editor_->document());
    cursor.select(QTextCursor::Document);
    cursor.insertText(QString::fromStdString(text));  // one undo step
    updating_ = false;
  } catch (const core::Error& e) {
    updating_ = false;
    emit yaml_error(QString::fromStdString(e.what()));
    return;
  }
  refresh_from_yaml();
}

void ScenarioForm::derive_dp() {
  if (!derive_dp_->isChecked() || updating_ || !has_job_) return;
  const long gpus = static_cast<long>(nodes_->value()) * gpus_per_node_;
  const long per_replica = static_cast<long>(tp_->value()) * pp_->value();
  if (per_replica > 0 && gpus % per_replica == 0 && gpus / per_replica != dp_->value())
    dp_->setValue(static_cast<int>(gpus / per_replica));  // writes parallelism.dp
  update_hint();
}

void ScenarioForm::update_hint() {
  if (!has_job_) {
    hint_->setText("no model section: a fabric-only scenario");
    return;
  }
  const long gpus = static_cast<long>(nodes_->value()) * gpus_per_node_;
  const long used = static_cast<long>(tp_->value()) * pp_->value() * dp_->value();
  const long per_step = static_cast<long>(dp_->value()) * micro_batch_;
  QString text = QString("%1 GPUs; TP x PP x DP uses %2").arg(gpus).arg(used);
  if (per_step > 0 && batch_->value() % per_step == 0) {
    text += QString("; %1 micro-batches of %2 per replica per step")
                .arg(batch_->value() / per_step)
                .arg(micro_batch_);
  } else {
    text += QString("; the global batch must be a multiple of DP x micro-batch = %1").arg(per_step);
  }
  hint_->setText(text);
}

void ScenarioForm::refresh_from_yaml() {
  sim::Scenario s;
  try {
    s = sim::parse_scenario(editor_->toPlainText().toStdString(), source_.toStdString());
  } catch (const core::Error& e) {
    emit yaml_error(QString::fromStdString(e.what()));
    return;
  }
  updating_ = true;
  {
    const QSignalBlocker b[] = {QSignalBlocker(nodes_),
                                QSignalBlocker(tiers_),
                                QSignalBlocker(radix_),
                                QSignalBlocker(tp_),
                                QSignalBlocker(pp_),
                                QSignalBlocker(dp_),
                                QSignalBlocker(batch_),
                                QSignalBlocker(spares_),
                                QSignalBlocker(oversubscription_),
                                QSignalBlocker(failure_rate_),
                                QSignalBlocker(checkpoint_min_),
                                QSignalBlocker(nic_),
                                QSignalBlocker(routing_),
                                QSignalBlocker(preset_)};
    nodes_->setValue(s.cluster.nodes);
    tiers_->setValue(s.fabric.tiers);
    radix_->setValue(s.fabric.switch_radix);
    oversubscription_->setValue(s.fabric.oversubscription);
    nic_->setCurrentText(QString::number(s.cluster.nic_gbps));
    routing_->setCurrentText(
        QString::fromStdString(std::string(topology::to_string(s.fabric.routing))));
    const int preset = preset_->findText(QString::fromStdString(s.model.name));
    preset_->setCurrentIndex(s.has_job && preset > 0 ? preset : 0);
    tp_->setValue(s.parallelism.tp);
    pp_->setValue(s.parallelism.pp);
    dp_->setValue(s.parallelism.dp);
    batch_->setValue(static_cast<int>(s.training.global_batch));
    failure_rate_->setValue(s.failures.rate_multiplier);
    checkpoint_min_->setValue(s.recovery.checkpoint_interval_min);
    spares_->setValue(s.recovery.hot_spares);
  }
  has_job_ = s.has_job;
  micro_batch_ = s.parallelism.micro_batch;
  gpus_per_node_ = s.cluster.gpus_per_node;
  for (QWidget* w :
       {static_cast<QWidget*>(tp_), static_cast<QWidget*>(pp_), static_cast<QWidget*>(dp_),
        static_cast<QWidget*>(batch_), static_cast<QWidget*>(derive_dp_)})
    w->setEnabled(s.has_job);
  updating_ = false;
  update_hint();
  emit yaml_error({});
  emit lesson_changed(
      QString::fromStdString(s.lesson.empty() ? s.name + ": " + s.description : s.lesson));
}

}  // namespace twin::gui
