#pragma once
// The scenario panel's form: the fields a planner changes together (nodes, fabric shape, model,
// TP / PP / DP, global batch, failure and checkpoint knobs), kept in sync with the YAML editor
// both ways. A form edit rewrites that one field in the YAML text (keeping the rest of the file,
// comments included); a YAML edit refreshes the form. With "derive DP" on, DP follows the GPU
// count: DP = GPUs / (TP x PP).

#include <QWidget>
#include <string>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QPlainTextEdit;
class QSpinBox;
class QTimer;

namespace twin::gui {

/// Sets `section.key` to `value` in scenario YAML text, changing only that field (block or flow
/// style); adds the key or the section when missing. Falls back to a yaml-cpp rewrite when the
/// text cannot be edited in place. Throws core::Error on YAML that does not parse.
std::string yaml_set(const std::string& text, const std::string& dotted_key,
                     const std::string& value);

class ScenarioForm : public QWidget {
  Q_OBJECT
 public:
  ScenarioForm(QPlainTextEdit* editor, QWidget* parent = nullptr);
  /// Re-reads the form from the editor's YAML now (also done 300 ms after each YAML edit).
  void refresh_from_yaml();
  /// Campaign trials (a run option, not a scenario field).
  [[nodiscard]] int trials() const;
  void set_source(const QString& source) { source_ = source; }
  /// The spin box of a field ("cluster.nodes", "parallelism.dp", ...) for tests.
  [[nodiscard]] QWidget* field(const QString& key) const;

 signals:
  /// The YAML does not parse or validate (message), or does again (empty).
  void yaml_error(const QString& message);
  void lesson_changed(const QString& text);

 private:
  void set_field(const std::string& key, const std::string& value);
  void derive_dp();
  void update_hint();

  QPlainTextEdit* editor_;
  QString source_;
  QTimer* debounce_ = nullptr;
  bool updating_ = false;
  QSpinBox *nodes_, *tiers_, *radix_, *tp_, *pp_, *dp_, *batch_, *spares_, *trials_;
  QDoubleSpinBox *oversubscription_, *failure_rate_, *checkpoint_min_;
  QComboBox *nic_, *routing_, *preset_;
  QCheckBox* derive_dp_;
  QLabel* hint_;
  int micro_batch_ = 1, gpus_per_node_ = 8;
  bool has_job_ = false;
};

}  // namespace twin::gui
