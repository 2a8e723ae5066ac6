#pragma once
/// The strict JSON object reader the profile files share (profile.cpp, kernel_profile.cpp):
/// required and optional keys, every unknown key an error with a suggestion, every figure with
/// its source, and errors that name the dotted field and the file.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibrate/figure.hpp"
#include "core/error.hpp"

namespace twin::calibrate::detail {

using json = nlohmann::ordered_json;

class ObjectReader {
 public:
  /// Reads `j` (which must be an object) at dotted `path` ("" at the top) of file `source`.
  ObjectReader(const json& j, std::string path, const std::string& source);

  /// An error naming path.key (path alone for an empty key) and the source file.
  [[nodiscard]] core::Error error(const std::string& key, const std::string& reason) const;
  /// The value at `key` or nullptr; either way the key becomes known.
  const json* find(const std::string& key);
  const json& require(const std::string& key);
  std::string text(const std::string& key, bool required = true);
  double number(const std::string& key, double fallback, bool required);
  /// A count: a whole number within [0, 2^31) (a double past an int's range would not convert).
  int count(const std::string& key, bool required);
  /// {"value": finite number, "source": non-empty text}; absent and not required: {}.
  Figure figure(const std::string& key, bool required = true);
  /// Figures whose value must be > 0, >= 0, or within (0, 1]; the error names path.key, the
  /// value and the file.
  Figure positive_figure(const std::string& key);
  Figure non_negative_figure(const std::string& key);
  Figure fraction_figure(const std::string& key);
  /// A non-empty list of positive numbers (`key` names it in errors).
  [[nodiscard]] std::vector<double> numbers(const json& list, const std::string& key) const;
  ObjectReader object(const std::string& key);
  /// Throws for the first key nobody asked for.
  void finish() const;
  [[nodiscard]] std::string field(const std::string& key) const;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& source() const { return source_; }

 private:
  Figure bounded_figure(const std::string& key, bool ok(double), const char* rule);

  const json& j_;
  std::string path_;
  const std::string& source_;
  std::vector<std::string> known_;
};

/// {"value": ..., "source": ...}
json figure_json(const Figure& f);

}  // namespace twin::calibrate::detail
