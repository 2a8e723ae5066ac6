#include "calibrate/detail/object_reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/text.hpp"

namespace twin::calibrate::detail {

ObjectReader::ObjectReader(const json& j, std::string path, const std::string& source)
    : j_(j), path_(std::move(path)), source_(source) {
  if (!j_.is_object()) throw error("", "expected an object");
}

std::string ObjectReader::field(const std::string& key) const {
  return key.empty() ? path_ : (path_.empty() ? key : path_ + "." + key);
}

core::Error ObjectReader::error(const std::string& key, const std::string& reason) const {
  return core::Error(field(key), "", reason, source_);
}

const json* ObjectReader::find(const std::string& key) {
  known_.push_back(key);
  auto it = j_.find(key);
  return it == j_.end() ? nullptr : &*it;
}

const json& ObjectReader::require(const std::string& key) {
  const json* v = find(key);
  if (v == nullptr) throw error(key, "required");
  return *v;
}

std::string ObjectReader::text(const std::string& key, bool required) {
  const json* v = required ? &require(key) : find(key);
  if (v == nullptr) return {};
  if (!v->is_string()) throw error(key, "expected text");
  return v->get<std::string>();
}

double ObjectReader::number(const std::string& key, double fallback, bool required) {
  const json* v = required ? &require(key) : find(key);
  if (v == nullptr) return fallback;
  if (!v->is_number()) throw error(key, "expected a number");
  return v->get<double>();
}

int ObjectReader::count(const std::string& key, bool required) {
  const double v = number(key, 0, required);
  if (!(v >= 0 && v <= std::numeric_limits<int>::max()) || v != std::floor(v))
    throw error(key, fmt::format("expected a whole number from 0 to {}, not {}",
                                 std::numeric_limits<int>::max(), v));
  return static_cast<int>(v);
}

Figure ObjectReader::figure(const std::string& key, bool required) {
  const json* v = required ? &require(key) : find(key);
  if (v == nullptr) return {};
  ObjectReader r(*v, field(key), source_);
  Figure f;
  f.value = r.number("value", 0, true);
  f.source = r.text("source");
  if (!std::isfinite(f.value)) throw r.error("value", "must be finite");
  if (f.source.empty()) throw r.error("source", "every figure needs its provenance");
  r.finish();
  return f;
}

Figure ObjectReader::bounded_figure(const std::string& key, bool ok(double), const char* rule) {
  Figure f = figure(key);
  if (!ok(f.value)) throw core::Error(field(key), fmt::format("{}", f.value), rule, source_);
  return f;
}

Figure ObjectReader::positive_figure(const std::string& key) {
  return bounded_figure(
      key, [](double v) { return v > 0; }, "must be positive");
}

Figure ObjectReader::non_negative_figure(const std::string& key) {
  return bounded_figure(
      key, [](double v) { return v >= 0; }, "must not be negative");
}

Figure ObjectReader::fraction_figure(const std::string& key) {
  return bounded_figure(
      key, [](double v) { return v > 0 && v <= 1.0; }, "must be within (0, 1]");
}

std::vector<double> ObjectReader::numbers(const json& list, const std::string& key) const {
  if (!list.is_array() || list.empty()) throw error(key, "expected a non-empty list of numbers");
  std::vector<double> out;
  for (const auto& v : list) {
    if (!v.is_number() || !(v.get<double>() > 0))
      throw error(key, "expected a list of positive numbers");
    out.push_back(v.get<double>());
  }
  return out;
}

ObjectReader ObjectReader::object(const std::string& key) {
  return ObjectReader(require(key), field(key), source_);
}

void ObjectReader::finish() const {
  for (auto it = j_.begin(); it != j_.end(); ++it)
    if (std::find(known_.begin(), known_.end(), it.key()) == known_.end())
      throw error(it.key(), "unknown key" + core::did_you_mean(it.key(), known_));
}

json figure_json(const Figure& f) {
  return json{{"value", f.value}, {"source", f.source}};
}

}  // namespace twin::calibrate::detail
