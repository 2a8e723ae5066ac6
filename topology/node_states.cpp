#include "topology/node_states.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "core/error.hpp"

namespace twin::topology {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

constexpr std::string_view kDown[] = {"down",    "fail",          "failing",      "no_respond",
                                      "inval",   "future",        "powered_down", "power_down",
                                      "unknown", "not_responding"};
constexpr std::string_view kDrained[] = {"drained", "draining",      "drain",
                                         "maint",   "reboot_issued", "reboot_requested"};
constexpr std::string_view kUp[] = {"idle",       "allocated", "alloc",       "mixed",   "mix",
                                    "completing", "comp",      "reserved",    "resv",    "planned",
                                    "blocked",    "cloud",     "powering_up", "perfctrs"};

}  // namespace

HostState parse_slurm_state(std::string_view text, const std::string& source, int line) {
  std::string s = lower(text);
  HostState worst = HostState::up;
  // Flags: '*' not responding and '~' powered off make the node unusable now.
  while (!s.empty() && std::string_view("*~#!%$@^-").find(s.back()) != std::string_view::npos) {
    if (s.back() == '*' || s.back() == '~') worst = HostState::down;
    s.pop_back();
  }
  std::size_t start = 0;
  bool any = false;
  while (start <= s.size()) {
    auto plus = s.find('+', start);
    if (plus == std::string::npos) plus = s.size();
    const std::string_view part = std::string_view(s).substr(start, plus - start);
    start = plus + 1;
    const auto in = [&](const auto& list) {
      return std::find(std::begin(list), std::end(list), part) != std::end(list);
    };
    if (in(kDown))
      worst = HostState::down;
    else if (in(kDrained))
      worst = std::max(worst, HostState::drained);
    else if (!in(kUp))
      throw core::Error(fmt::format("line {}", line), std::string(text),
                        "not a Slurm node state (idle, allocated, mixed, drained, draining, "
                        "down, fail, maint, ... as `sinfo -N -h -o \"%N %T\"` prints them)",
                        source);
    any = true;
  }
  if (!any)
    throw core::Error(fmt::format("line {}", line), std::string(text), "empty node state", source);
  return worst;
}

std::vector<NodeStateEntry> parse_node_states(std::string_view text, const std::string& source) {
  std::vector<NodeStateEntry> out;
  int line_no = 0;
  std::size_t pos = 0;
  while (pos < text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    std::istringstream words(line);
    std::string name, state, extra;
    if (!(words >> name)) continue;  // blank line
    if (name[0] == '#') continue;
    if (!(words >> state) || (words >> extra))
      throw core::Error(fmt::format("line {}", line_no), line,
                        "expected two fields, \"<node name> <state>\" (sinfo -N -h -o \"%N %T\")",
                        source);
    out.push_back({name, parse_slurm_state(state, source, line_no), state, line_no});
  }
  if (out.empty()) throw core::Error("", "", "no node states in the file", source);
  return out;
}

std::vector<NodeStateEntry> read_node_states(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw core::Error("cluster.node_states", path, "cannot open node-state file");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return parse_node_states(buffer.str(), path);
}

std::vector<std::pair<int, HostState>> resolve_node_states(
    const std::vector<NodeStateEntry>& entries, const std::vector<std::string>& host_names,
    const std::string& source) {
  std::unordered_map<std::string, int> exact, folded;
  for (std::size_t h = 0; h < host_names.size(); ++h) {
    exact.emplace(host_names[h], static_cast<int>(h));
    folded.emplace(lower(host_names[h]), static_cast<int>(h));
  }
  std::vector<std::pair<int, HostState>> out;
  for (const auto& e : entries) {
    int host = -1;
    if (auto it = exact.find(e.name); it != exact.end())
      host = it->second;
    else if (auto ft = folded.find(lower(e.name)); ft != folded.end())
      host = ft->second;
    else if (auto st = folded.find(lower(e.name.substr(0, e.name.find('.')))); st != folded.end())
      host = st->second;
    if (host >= 0) out.emplace_back(host, e.state);
  }
  if (out.empty())
    throw core::Error("cluster.node_states", entries.front().name,
                      fmt::format("none of the {} node names is a host of this fabric (hosts are "
                                  "named like '{}')",
                                  entries.size(), host_names.empty() ? "" : host_names.front()),
                      source);
  return out;
}

}  // namespace twin::topology
