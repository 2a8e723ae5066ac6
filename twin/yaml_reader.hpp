#pragma once
/// Strict reading of a YAML mapping into plain structs: each key read is recorded, unknown keys
/// are errors with a suggestion, and a value of the wrong type names its dotted field path.
///
/// Numbers are parsed strictly for every field, so fields added later get the same checks: a
/// real number must be finite and within double range (`.inf`, `.nan`, `1e400` are errors), an
/// integer must be an integer (`64`, or exactly integral like `1e3`) that fits its field's type
/// (no wrap-around, no truncation of `2.5`). A mapping that states the same key twice is an
/// error (YAML says keys are unique; yaml-cpp would silently keep the first).

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.hpp"

namespace twin::sim::detail {

/// Where a value came from, for error messages: the file, and which dotted paths were set on
/// the command line (errors at those paths are attributed to "--set").
struct Origin {
  std::string file;
  std::set<std::string> overridden;
  [[nodiscard]] std::string source_of(const std::string& path) const;
};

/// Strict number parsing: empty when `text` is a number that fits the type (stored in `out`),
/// else the reason it does not.
std::string parse_real(const std::string& text, double& out);
std::string parse_integer(const std::string& text, std::int64_t min, std::uint64_t max,
                          std::int64_t& signed_out, std::uint64_t& unsigned_out);

template <class T>
std::string parse_number(const std::string& text, T& out) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if constexpr (std::is_floating_point_v<T>) {
    double v = 0;
    std::string why = parse_real(text, v);
    if (!why.empty()) return why;
    out = static_cast<T>(v);
    return {};
  } else {
    std::int64_t s = 0;
    std::uint64_t u = 0;
    std::string why =
        parse_integer(text, static_cast<std::int64_t>(std::numeric_limits<T>::min()),
                      static_cast<std::uint64_t>(std::numeric_limits<T>::max()), s, u);
    if (!why.empty()) return why;
    out = std::is_signed_v<T> ? static_cast<T>(s) : static_cast<T>(u);
    return {};
  }
}

class MapReader {
 public:
  MapReader(const YAML::Node& node, std::string path, const Origin& origin);

  /// Reads `key` into `out` if present; keeps `out` (the default) otherwise.
  template <class T>
  void get(const std::string& key, T& out);
  /// A nested mapping (empty if absent).
  MapReader section(const std::string& key);
  /// The raw node of `key` (undefined if absent), for lists.
  YAML::Node raw(const std::string& key);
  /// Throws on any key that was not read.
  void finish() const;

  [[nodiscard]] std::string field(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }
  [[nodiscard]] const Origin& origin() const { return *origin_; }
  [[nodiscard]] core::Error error(const std::string& key, const std::string& value,
                                  const std::string& reason) const;

 private:
  YAML::Node node_;
  std::string path_;
  const Origin* origin_;
  std::vector<std::string> known_;
};

template <class T>
void MapReader::get(const std::string& key, T& out) {
  known_.push_back(key);
  if (!node_.IsMap()) return;
  const YAML::Node value = node_[key];
  if (!value.IsDefined() || value.IsNull()) return;
  if (!value.IsScalar()) throw error(key, "", "expected a single value, not a list or mapping");
  if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
    const std::string why = parse_number(value.Scalar(), out);
    if (!why.empty()) throw error(key, value.Scalar(), why);
    return;
  }
  try {
    out = value.as<T>();
  } catch (const YAML::BadConversion&) {
    const char* expected = std::is_same_v<T, bool>       ? "true or false"
                           : std::is_integral_v<T>       ? "an integer"
                           : std::is_floating_point_v<T> ? "a number"
                                                         : "text";
    throw error(key, value.Scalar(), std::string("expected ") + expected);
  }
}

/// Applies `dotted.path=value` overrides to a YAML tree; the value is parsed as YAML. An empty
/// value is an error (leave the --set out to keep the default).
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origin& origin);

}  // namespace twin::sim::detail
