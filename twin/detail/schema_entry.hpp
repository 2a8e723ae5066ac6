#pragma once
/// The scenario schema's entries with their accessors (twin/scenario_schema.hpp is the public
/// view): how each field is read from its section, checked, and written back.

#include <yaml-cpp/yaml.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "twin/scenario.hpp"
#include "twin/scenario_schema.hpp"
#include "twin/yaml_reader.hpp"

namespace twin::sim::detail {

/// A value that breaks a rule: its text and the reason.
using Problem = std::optional<std::pair<std::string, std::string>>;

struct Entry {
  SchemaField field;
  /// Reads the key from its section into the scenario; type errors are thrown here.
  std::function<void(MapReader&, Scenario&)> read;
  /// Writes the value (the caller writes the key).
  std::function<void(YAML::Emitter&, const Scenario&)> write;
  /// The value to check against `field.bounds` after the section is read: a number, a text
  /// (choices), or nothing (no bounds).
  std::function<std::optional<double>(const Scenario&)> number;
  std::function<std::optional<std::string>(const Scenario&)> text;
  /// A rule beyond the bounds, checked after the section is read (replaces the bounds check).
  std::function<Problem(const Scenario&)> check;
};

struct Section {
  std::string path;
  /// Written by to_yaml only when this holds (the job sections, validation); empty: always.
  std::function<bool(const Scenario&)> present;
  /// Read only when this holds (validation: only when stated); empty: always.
  std::function<bool(const YAML::Node&)> stated;
  /// Rules across the section's fields, after they are read.
  std::function<void(const MapReader&, Scenario&)> after;
};

/// The table (twin/scenario_table.cpp), in reading order.
const std::vector<Entry>& schema_entries();
const std::vector<Section>& schema_sections();

/// Reads every section of the table from `root` (overrides applied) into `s`.
void read_by_schema(const YAML::Node& root, const Origin& origin, Scenario& s);
/// Writes every field of the table.
void write_by_schema(YAML::Emitter& out, const Scenario& s);

/// A field with its own reader and writer (lists, keywords, fields read together).
Entry custom(std::string path, FieldType type, std::string unit, std::string default_text,
             std::string doc, std::function<void(MapReader&, Scenario&)> read,
             std::function<void(YAML::Emitter&, const Scenario&)> write);
/// A list field with its own reader and writer (default: empty).
Entry custom_list(std::string path, std::string doc,
                  std::function<void(MapReader&, Scenario&)> read,
                  std::function<void(YAML::Emitter&, const Scenario&)> write);
/// `e` with another documented default ("profile", "preset's").
inline Entry with_default(Entry e, std::string text) {
  e.field.default_text = std::move(text);
  return e;
}

// Bounds of one field, with `why` said after a broken rule.
inline FieldBounds at_least(double min, std::string why = {}) {
  FieldBounds b;
  b.min = min;
  b.why = std::move(why);
  return b;
}
inline FieldBounds positive(std::string why = {}) {
  FieldBounds b = at_least(0, std::move(why));
  b.min_exclusive = true;
  return b;
}
inline FieldBounds between(double min, double max, bool min_exclusive = false) {
  FieldBounds b;
  b.min = min;
  b.max = max;
  b.min_exclusive = min_exclusive;
  return b;
}
inline FieldBounds one_of(std::vector<std::string> choices, std::string why = {}) {
  FieldBounds b;
  b.choices = std::move(choices);
  b.why = std::move(why);
  return b;
}
inline const FieldBounds kAny{};

/// A number as the schema writes it: the shortest text that reads back to the same double.
std::string number_text(double v);

// Builders for plain fields: `at(&Scenario::cluster, &ClusterSpec::nodes)` is the field's place.
template <class T>
using Ref = std::function<T&(Scenario&)>;

template <class S, class T>
Ref<T> at(S Scenario::*section, T S::*member) {
  return [section, member](Scenario& s) -> T& { return (s.*section).*member; };
}
template <class T>
Ref<T> at(T Scenario::*member) {
  return [member](Scenario& s) -> T& { return s.*member; };
}

template <class T>
const T& get(const Ref<T>& ref, const Scenario& s) {
  return ref(const_cast<Scenario&>(s));
}

/// A field stored as it is read: integer, real, boolean or text by T.
template <class T>
Entry plain(std::string path, Ref<T> ref, std::string unit, FieldBounds bounds, std::string doc) {
  Entry e;
  e.field.path = std::move(path);
  e.field.unit = std::move(unit);
  e.field.doc = std::move(doc);
  e.field.bounds = std::move(bounds);
  if constexpr (std::is_same_v<T, bool>) {
    e.field.type = FieldType::boolean;
  } else if constexpr (std::is_integral_v<T>) {
    e.field.type = FieldType::integer;
  } else if constexpr (std::is_floating_point_v<T>) {
    e.field.type = FieldType::real;
  } else {
    e.field.type = FieldType::text;
  }
  const std::string key = e.field.key();
  e.read = [ref, key](MapReader& r, Scenario& s) { r.get(key, ref(s)); };
  e.write = [ref](YAML::Emitter& out, const Scenario& s) {
    if constexpr (std::is_floating_point_v<T>)
      out << number_text(get(ref, s));
    else
      out << get(ref, s);
  };
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>)
    e.number = [ref](const Scenario& s) {
      return std::optional<double>(static_cast<double>(get(ref, s)));
    };
  if constexpr (std::is_same_v<T, std::string>)
    e.text = [ref](const Scenario& s) { return std::optional<std::string>(get(ref, s)); };
  const Scenario defaults;
  if constexpr (std::is_same_v<T, bool>)
    e.field.default_text = get(ref, defaults) ? "true" : "false";
  else if constexpr (std::is_floating_point_v<T>)
    e.field.default_text = number_text(get(ref, defaults));
  else if constexpr (std::is_arithmetic_v<T>)
    e.field.default_text = std::to_string(get(ref, defaults));
  else
    e.field.default_text = get(ref, defaults);
  return e;
}

}  // namespace twin::sim::detail
