#include "twin/yaml_reader.hpp"

#include "twin/scenario_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>

#include "core/text.hpp"

namespace twin::sim::detail {

std::string Origin::source_of(const std::string& path) const {
  for (const auto& p : overridden)
    if (path == p || path.rfind(p + ".", 0) == 0 || p.rfind(path + ".", 0) == 0) return "--set";
  return file;
}

std::string parse_real(const std::string& text, double& out) {
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;  // YAML allows an explicit sign; from_chars not
  std::string lower(first, last);
  for (auto& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (lower.rfind("-", 0) == 0) lower.erase(0, 1);
  if (lower == ".inf" || lower == "inf" || lower == "infinity" || lower == ".nan" || lower == "nan")
    return "must be a finite number (not infinity or NaN)";
  double v = 0;
  const auto [end, ec] = std::from_chars(first, last, v);
  if (first == last || end != last || ec == std::errc::invalid_argument) return "expected a number";
  if (ec == std::errc::result_out_of_range)
    return "outside the range of a double (about 1e-308 to 1e308 in magnitude)";
  if (!std::isfinite(v)) return "must be a finite number (not infinity or NaN)";
  out = v;
  return {};
}

std::string parse_integer(const std::string& text, std::int64_t min, std::uint64_t max,
                          std::int64_t& signed_out, std::uint64_t& unsigned_out) {
  const std::string range = min < 0
                                ? fmt::format("an integer from {} to {}", core::with_commas(min),
                                              core::with_commas(static_cast<std::int64_t>(max)))
                                : fmt::format("an integer from 0 to {}", max);
  const char* first = text.data();
  const char* last = text.data() + text.size();
  if (first != last && *first == '+') ++first;
  const bool negative = first != last && *first == '-';
  if (negative && min == 0) return "must not be negative: expected " + range;
  // Digits only (the common case), exactly.
  if (negative) {
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc() && end == last) {
      if (v < min) return "out of range: expected " + range;
      signed_out = v;
      return {};
    }
    if (ec == std::errc::result_out_of_range) return "out of range: expected " + range;
  } else {
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(first, last, v);
    if (ec == std::errc() && end == last) {
      if (v > max) return "out of range: expected " + range;
      unsigned_out = v;
      signed_out = static_cast<std::int64_t>(std::min<std::uint64_t>(
          v, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())));
      return {};
    }
    if (ec == std::errc::result_out_of_range) return "out of range: expected " + range;
  }
  // Exactly integral real notation (1e3, 4096.0) is accepted; 2.5 is not silently truncated.
  double real = 0;
  if (!parse_real(text, real).empty()) return "expected an integer";
  if (real != std::floor(real)) return "expected " + range + " (not a fraction)";
  if (real < static_cast<double>(min) || real > static_cast<double>(max) || real >= 0x1p63)
    return "out of range: expected " + range;
  signed_out = static_cast<std::int64_t>(real);
  unsigned_out = real < 0 ? 0 : static_cast<std::uint64_t>(real);
  return {};
}

MapReader::MapReader(const YAML::Node& node, std::string path, const Origin& origin)
    : node_(node), path_(std::move(path)), origin_(&origin) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap())
    throw core::Error(path_, "", "expected a mapping of keys to values", origin_->source_of(path_));
  if (!node_.IsMap()) return;
  std::map<std::string, int> seen;
  for (const auto& entry : node_) {
    if (!entry.first.IsScalar())
      throw core::Error(path_, "", "keys must be plain names, not lists or mappings",
                        origin_->source_of(path_));
    const std::string& key = entry.first.Scalar();
    const int line = entry.first.Mark().line + 1;
    if (const auto [it, fresh] = seen.emplace(key, line); !fresh)
      throw core::Error(
          field(key), "",
          it->second > 0 && line > 0
              ? fmt::format("stated twice (lines {} and {}); keep one", it->second, line)
              : "stated twice; keep one",
          origin_->source_of(field(key)));
  }
}

core::Error MapReader::error(const std::string& key, const std::string& value,
                             const std::string& reason) const {
  return core::Error(field(key), value, reason, origin_->source_of(field(key)));
}

MapReader MapReader::section(const std::string& key) {
  known_.push_back(key);
  YAML::Node child = node_.IsMap() ? node_[key] : YAML::Node();
  return MapReader(child, field(key), *origin_);
}

YAML::Node MapReader::raw(const std::string& key) {
  known_.push_back(key);
  return node_.IsMap() ? node_[key] : YAML::Node();
}

void MapReader::finish() const {
  if (!node_.IsMap()) return;
  for (const auto& entry : node_) {
    const std::string& key = entry.first.Scalar();
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    throw error(key, "",
                "unknown key" + core::did_you_mean(key, known_) +
                    "; valid keys here: " + core::quoted_list(known_));
  }
}

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides, Origin& origin) {
  for (const auto& item : overrides) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0)
      throw core::Error("--set", item, "expected dotted.path=value, e.g. fabric.tiers=2");
    const std::string path = item.substr(0, eq);
    const std::string text = item.substr(eq + 1);
    if (text.find_first_not_of(" \t") == std::string::npos)
      throw core::Error(path, "", "empty value; to keep the default, leave this --set out",
                        "--set");
    YAML::Node value;
    try {
      value = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      throw core::Error(path, text, "value is not valid YAML: " + e.msg, "--set");
    }
    std::vector<std::string> parts;
    for (std::size_t start = 0;;) {
      const auto dot = path.find('.', start);
      parts.push_back(path.substr(start, dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    // Walk with fresh handles: yaml-cpp nodes are references, assignment rebinds.
    std::vector<YAML::Node> chain{root};
    for (const auto& part : parts)
      if (part.empty()) throw core::Error(path, text, "empty key in dotted path", "--set");
    check_override(path, text, "--set");
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      YAML::Node next = chain.back()[parts[i]];
      if (next.IsDefined() && !next.IsNull() && !next.IsMap())
        throw core::Error(path, text, "'" + parts[i] + "' is a value, not a section", "--set");
      if (!next.IsDefined() || next.IsNull())
        chain.back()[parts[i]] = YAML::Node(YAML::NodeType::Map);
      chain.push_back(chain.back()[parts[i]]);
    }
    chain.back()[parts.back()] = value;
    origin.overridden.insert(path);
  }
}

}  // namespace twin::sim::detail
