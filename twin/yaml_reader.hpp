#pragma once
/// Strict reading of a YAML mapping into plain structs: each key read is recorded, unknown keys
/// are errors with a suggestion, and a value of the wrong type names its dotted field path.

#include <yaml-cpp/yaml.h>

#include <set>
#include <string>
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

/// Applies `dotted.path=value` overrides to a YAML tree; the value is parsed as YAML.
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origin& origin);

}  // namespace twin::sim::detail
