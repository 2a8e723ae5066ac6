#include "twin/yaml_reader.hpp"

#include "core/text.hpp"

namespace twin::sim::detail {

std::string Origin::source_of(const std::string& path) const {
  for (const auto& p : overridden)
    if (path == p || path.rfind(p + ".", 0) == 0 || p.rfind(path + ".", 0) == 0) return "--set";
  return file;
}

MapReader::MapReader(const YAML::Node& node, std::string path, const Origin& origin)
    : node_(node), path_(std::move(path)), origin_(&origin) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap())
    throw core::Error(path_, "", "expected a mapping of keys to values", origin_->source_of(path_));
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
    const std::string key = entry.first.as<std::string>();
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
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
      if (parts[i].empty()) throw core::Error(path, text, "empty key in dotted path", "--set");
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
