#pragma once
/// The scenario schema: one table of every field a scenario file may state — dotted path,
/// type, unit, default, valid values and a one-line doc — in the order the reader reads them.
///
/// The table drives everything that knows the schema:
/// - the reader (twin/scenario.cpp): each field is read, type-checked and range-checked from
///   its entry; a key the table does not hold is an error with a suggestion;
/// - the writer (`to_yaml`): every field of every section, so a run can be reproduced;
/// - `--set` and `sweep --vary`: a path must be a field (or a section) of the table, and each
///   value is checked against the field before any work starts;
/// - the app's form (labels, units, ranges and tooltips) and `clustertwin schema [--markdown]`,
///   from which docs/scenarios.md is generated (a test fails when that file is stale).
///
/// Cross-field rules (a GPU index within the cluster, tp x pp x dp = GPUs, a model that fits
/// in memory) are checked where the objects meet: the fabric generator, the layout and the
/// step; the table holds what one field alone must satisfy.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twin::sim {

enum class FieldType { integer, real, boolean, text, list };

std::string_view to_text(FieldType type);

/// What one field alone may hold. Numbers: [min, max] (min exclusive when `min_exclusive`);
/// text: one of `choices` when that is not empty.
struct FieldBounds {
  std::optional<double> min, max;
  bool min_exclusive = false;
  std::vector<std::string> choices;
  /// Said after the rule when a value breaks it ("1: exponential; < 1: infant mortality").
  std::string why;
};

struct SchemaField {
  std::string path;  ///< dotted: "cluster.nodes", "perturbations.slow_gpu.factor"
  FieldType type = FieldType::text;
  std::string unit;          ///< "Gb/s", "ns", ""
  std::string default_text;  ///< the value when the key is left out
  std::string doc;           ///< one line
  FieldBounds bounds;
  /// Extra valid values of a number field besides its range ("auto", "young_daly").
  std::vector<std::string> keywords;

  /// The section holding the field ("" at the top, "perturbations.slow_gpu") and its key.
  [[nodiscard]] std::string section() const;
  [[nodiscard]] std::string key() const;
  /// The valid values in words: "1 .. 1,048,576", "> 0", "'dmodk', 'ecmp', 'adaptive'".
  [[nodiscard]] std::string range_text() const;
  /// Empty when `value` (YAML text of one scalar) is valid for this field alone, else why not.
  [[nodiscard]] std::string check_value(const std::string& value) const;
};

/// Every field, in reading order.
const std::vector<SchemaField>& scenario_schema();
/// The field at `path`, or nullptr.
const SchemaField* find_schema_field(std::string_view path);
/// True when `path` is a section of the schema ("cluster", "perturbations.slow_gpu").
bool is_schema_section(std::string_view path);

/// `clustertwin schema`: one line per field (path, type, unit, default, range, doc).
std::string schema_text();
/// The reference page docs/scenarios.md.
std::string schema_markdown();

/// Checks a `--set`/`--vary` override before anything runs: the path is a field or section of
/// the schema, and a scalar value suits the field. Throws core::Error attributed to `origin`
/// ("--set", "--vary") with a suggestion for a misspelt path.
void check_override(const std::string& path, const std::string& value, const std::string& origin);

}  // namespace twin::sim
