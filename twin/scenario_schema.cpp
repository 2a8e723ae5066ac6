#include "twin/scenario_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include <yaml-cpp/yaml.h>

#include "core/error.hpp"
#include "core/text.hpp"
#include "twin/detail/schema_entry.hpp"

namespace twin::sim {
namespace {

using detail::Entry;

std::string bound_text(double v, FieldType type) {
  if (type == FieldType::integer && std::abs(v) >= 1e4 && std::abs(v) < 9e15)
    return core::with_commas(static_cast<std::int64_t>(v));
  return detail::number_text(v);
}

/// Why `v` is outside `b` (empty when inside), in the words the validators have always used.
std::string rule_broken(double v, const FieldBounds& b, FieldType type) {
  const bool low = b.min && (b.min_exclusive ? !(v > *b.min) : !(v >= *b.min));
  const bool high = b.max && !(v <= *b.max);
  if (!low && !high) return {};
  if (b.min && b.max && !b.min_exclusive)
    return fmt::format("must be between {} and {}", bound_text(*b.min, type),
                       bound_text(*b.max, type));
  if (high) return fmt::format("must be at most {}", bound_text(*b.max, type));
  if (*b.min == 0) return b.min_exclusive ? "must be positive" : "must not be negative";
  if (type == FieldType::integer && *b.min == 1) return "must be a positive integer";
  return fmt::format("must be {} {}", b.min_exclusive ? ">" : ">=", bound_text(*b.min, type));
}

/// A broken rule followed by the field's explanation of it, if it has one.
std::string with_why(std::string rule, const FieldBounds& b) {
  if (!rule.empty() && !b.why.empty()) rule += " (" + b.why + ")";
  return rule;
}

std::string out_of_bounds(double v, const FieldBounds& b, FieldType type) {
  return with_why(rule_broken(v, b, type), b);
}

std::string not_a_choice(const std::string& value, const FieldBounds& b) {
  return with_why(
      "must be one of " + core::quoted_list(b.choices) + core::did_you_mean(value, b.choices), b);
}

std::vector<std::string> keys_of(const std::string& section) {
  std::vector<std::string> keys;
  auto add = [&](const std::string& k) {
    if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  };
  const std::string prefix = section.empty() ? "" : section + ".";
  for (const auto& f : scenario_schema()) {
    if (f.path.rfind(prefix, 0) != 0) continue;
    const std::string rest = f.path.substr(prefix.size());
    add(rest.substr(0, rest.find('.')));
  }
  return keys;
}

}  // namespace

std::string_view to_text(FieldType type) {
  switch (type) {
    case FieldType::integer:
      return "integer";
    case FieldType::real:
      return "number";
    case FieldType::boolean:
      return "boolean";
    case FieldType::text:
      return "text";
    case FieldType::list:
      return "list";
  }
  return "?";
}

std::string SchemaField::section() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? std::string() : path.substr(0, dot);
}

std::string SchemaField::key() const {
  const auto dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string SchemaField::range_text() const {
  std::vector<std::string> parts;
  if (!bounds.choices.empty()) parts.push_back(core::quoted_list(bounds.choices));
  if (bounds.min && bounds.max && *bounds.min == *bounds.max && !bounds.min_exclusive)
    parts.push_back(bound_text(*bounds.min, type));
  else if (bounds.min && bounds.max)
    parts.push_back(fmt::format("{} {} .. {}", bounds.min_exclusive ? ">" : "",
                                bound_text(*bounds.min, type), bound_text(*bounds.max, type)));
  else if (bounds.min)
    parts.push_back(
        fmt::format("{} {}", bounds.min_exclusive ? ">" : ">=", bound_text(*bounds.min, type)));
  else if (bounds.max)
    parts.push_back(fmt::format("<= {}", bound_text(*bounds.max, type)));
  for (const auto& k : keywords) parts.push_back("'" + k + "'");
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : " or ") + p;
  if (!out.empty() && out.front() == ' ') out.erase(0, 1);
  return out;
}

std::string SchemaField::check_value(const std::string& value) const {
  if (std::find(keywords.begin(), keywords.end(), value) != keywords.end()) return {};
  switch (type) {
    case FieldType::integer: {
      std::int64_t v = 0;
      std::string why = detail::parse_number(value, v);
      if (!why.empty()) return why;
      return out_of_bounds(static_cast<double>(v), bounds, type);
    }
    case FieldType::real: {
      double v = 0;
      std::string why = detail::parse_real(value, v);
      if (!why.empty()) return why;
      return out_of_bounds(v, bounds, type);
    }
    case FieldType::boolean:
      try {
        (void)YAML::Load(value).as<bool>();
        return {};
      } catch (const YAML::Exception&) {
        return "expected true or false";
      }
    case FieldType::text:
      if (!bounds.choices.empty() &&
          std::find(bounds.choices.begin(), bounds.choices.end(), value) == bounds.choices.end())
        return not_a_choice(value, bounds);
      return {};
    case FieldType::list:
      return {};
  }
  return {};
}

const std::vector<SchemaField>& scenario_schema() {
  static const std::vector<SchemaField> fields = [] {
    std::vector<SchemaField> out;
    for (const Entry& e : detail::schema_entries()) out.push_back(e.field);
    return out;
  }();
  return fields;
}

const SchemaField* find_schema_field(std::string_view path) {
  for (const auto& f : scenario_schema())
    if (f.path == path) return &f;
  return nullptr;
}

bool is_schema_section(std::string_view path) {
  if (path.empty()) return false;
  const std::string prefix = std::string(path) + ".";
  return std::any_of(scenario_schema().begin(), scenario_schema().end(),
                     [&](const SchemaField& f) { return f.path.rfind(prefix, 0) == 0; });
}

void check_override(const std::string& path, const std::string& value, const std::string& origin) {
  if (const SchemaField* f = find_schema_field(path)) {
    // A mapping, a list or text that is not YAML is left to the reader, which names it.
    YAML::Node node;
    try {
      node = YAML::Load(value);
    } catch (const YAML::Exception&) {
      return;
    }
    if (f->type != FieldType::list && node.IsScalar()) {
      const std::string why = f->check_value(node.Scalar());
      if (!why.empty()) throw core::Error(path, value, why, origin);
    }
    return;
  }
  if (is_schema_section(path)) return;
  // The first component that is not in the schema, named with the keys valid at its place.
  std::string section;
  std::size_t start = 0;
  for (;;) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot - start);
    const std::string here = section.empty() ? key : section + "." + key;
    if (dot == std::string::npos || !is_schema_section(here)) {
      const auto keys = keys_of(section);
      throw core::Error(here, "",
                        "unknown key" + core::did_you_mean(key, keys) +
                            "; valid keys here: " + core::quoted_list(keys),
                        origin);
    }
    section = here;
    start = dot + 1;
  }
}

std::string schema_text() {
  std::string out =
      fmt::format("{:<48} {:<8} {:<6} {:<22} {}\n", "field", "type", "unit", "default", "valid");
  for (const auto& f : scenario_schema()) {
    out += fmt::format("{:<48} {:<8} {:<6} {:<22} {}\n", f.path, to_text(f.type), f.unit,
                       f.default_text.empty() ? "\"\"" : f.default_text, f.range_text());
    out += fmt::format("    {}\n", f.doc);
  }
  return out;
}

std::string schema_markdown() {
  std::string out =
      "# Scenario reference\n\n"
      "<!-- Generated by `clustertwin schema --markdown` from the schema table "
      "(twin/scenario_table.cpp); a test fails when this file is stale. -->\n\n"
      "A scenario is a YAML file. `schema_version: 1` is required; every other field has the "
      "default below (the reference 4,096-GPU H100 cluster and its Llama 3 70B job live in "
      "`scenarios/default.yaml`, which states what differs from these defaults). Units are part "
      "of the key names. Unknown keys are errors with a suggestion; `--set dotted.path=value` "
      "overrides any field and `sweep --vary` varies it, both checked against this table before "
      "anything runs. Rules across fields (tp x pp x cp x dp = GPUs, a model that fits in "
      "memory) are checked when the job is laid out.\n";
  std::string section = "\x01";
  for (const auto& f : scenario_schema()) {
    const std::string top =
        f.path.find('.') == std::string::npos ? std::string() : f.path.substr(0, f.path.find('.'));
    if (top != section) {
      section = top;
      out += fmt::format("\n## {}\n\n", top.empty() ? "Top level" : "`" + top + "`");
      out += "| field | type | unit | default | valid | meaning |\n|---|---|---|---|---|---|\n";
    }
    auto cell = [](std::string s) {
      std::string r;
      for (char c : s) r += c == '|' ? std::string("\\|") : std::string(1, c);
      return r;
    };
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", f.path, to_text(f.type), cell(f.unit),
                       cell(f.default_text.empty() ? "\"\"" : f.default_text), cell(f.range_text()),
                       cell(f.doc));
  }
  return out;
}

namespace detail {

std::string number_text(double v) {
  return fmt::format("{}", v);
}

Entry custom(std::string path, FieldType type, std::string unit, std::string default_text,
             std::string doc, std::function<void(MapReader&, Scenario&)> read,
             std::function<void(YAML::Emitter&, const Scenario&)> write) {
  Entry e;
  e.field.path = std::move(path);
  e.field.type = type;
  e.field.unit = std::move(unit);
  e.field.default_text = std::move(default_text);
  e.field.doc = std::move(doc);
  e.read = std::move(read);
  e.write = std::move(write);
  return e;
}

Entry custom_list(std::string path, std::string doc,
                  std::function<void(MapReader&, Scenario&)> read,
                  std::function<void(YAML::Emitter&, const Scenario&)> write) {
  return custom(std::move(path), FieldType::list, "", "[]", std::move(doc), std::move(read),
                std::move(write));
}

namespace {

bool stated(const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) return false;
  const YAML::Node v = node[key];
  return v.IsDefined() && !v.IsNull();
}

const Section* section_rule(const std::string& path) {
  for (const auto& s : schema_sections())
    if (s.path == path) return &s;
  return nullptr;
}

/// The child section of `path` that holds `field_section`, or "" when it is `path` itself.
std::string child_of(const std::string& path, const std::string& field_section) {
  if (field_section == path) return {};
  const std::string prefix = path.empty() ? "" : path + ".";
  if (field_section.rfind(prefix, 0) != 0) return {};
  const std::string rest = field_section.substr(prefix.size());
  return prefix + rest.substr(0, rest.find('.'));
}

void check_bounds(const Entry& e, const MapReader& r, const Scenario& s) {
  if (e.check) {
    if (const Problem p = e.check(s)) throw r.error(e.field.key(), p->first, p->second);
    return;
  }
  if (e.number) {
    if (const auto v = e.number(s)) {
      const std::string why = out_of_bounds(*v, e.field.bounds, e.field.type);
      if (!why.empty())
        throw r.error(e.field.key(),
                      e.field.type == FieldType::integer
                          ? std::to_string(static_cast<std::int64_t>(*v))
                          : number_text(*v),
                      why);
    }
  } else if (e.text && !e.field.bounds.choices.empty()) {
    if (const auto v = e.text(s)) {
      const auto& c = e.field.bounds.choices;
      if (std::find(c.begin(), c.end(), *v) == c.end())
        throw r.error(e.field.key(), *v, not_a_choice(*v, e.field.bounds));
    }
  }
}

void read_section(MapReader r, const YAML::Node& node, const std::string& path, Scenario& s) {
  std::vector<std::string> children;
  std::vector<const Entry*> own;
  for (const Entry& e : schema_entries()) {
    const std::string sec = e.field.section();
    if (sec == path) {
      e.read(r, s);
      if (stated(node, e.field.key()) || e.check) own.push_back(&e);
      continue;
    }
    const std::string child = child_of(path, sec);
    if (child.empty() || std::find(children.begin(), children.end(), child) != children.end())
      continue;
    children.push_back(child);
    const std::string key = child.substr(path.empty() ? 0 : path.size() + 1);
    MapReader sub = r.section(key);
    const YAML::Node sub_node = node.IsMap() ? node[key] : YAML::Node();
    const Section* rule = section_rule(child);
    if (rule && rule->stated && !rule->stated(sub_node)) continue;
    read_section(sub, sub_node, child, s);
  }
  r.finish();
  for (const Entry* e : own) check_bounds(*e, r, s);
  if (const Section* rule = section_rule(path); rule && rule->after) rule->after(r, s);
}

void write_section(YAML::Emitter& out, const std::string& path, const Scenario& s) {
  std::vector<std::string> children;
  for (const Entry& e : schema_entries()) {
    const std::string sec = e.field.section();
    if (sec == path) {
      out << YAML::Key << e.field.key() << YAML::Value;
      e.write(out, s);
      continue;
    }
    const std::string child = child_of(path, sec);
    if (child.empty() || std::find(children.begin(), children.end(), child) != children.end())
      continue;
    children.push_back(child);
    const Section* rule = section_rule(child);
    if (rule && rule->present && !rule->present(s)) continue;
    out << YAML::Key << child.substr(path.empty() ? 0 : path.size() + 1) << YAML::Value
        << YAML::BeginMap;
    write_section(out, child, s);
    out << YAML::EndMap;
  }
}

}  // namespace

void read_by_schema(const YAML::Node& root, const Origin& origin, Scenario& s) {
  read_section(MapReader(root, "", origin), root, "", s);
}

void write_by_schema(YAML::Emitter& out, const Scenario& s) {
  out << YAML::BeginMap;
  write_section(out, "", s);
  out << YAML::EndMap;
}

}  // namespace detail
}  // namespace twin::sim
