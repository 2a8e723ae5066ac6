#include "workload/pipeline_layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include "core/error.hpp"

namespace twin::workload {
namespace {

constexpr const char* kField = "parallelism.pipeline_layout";
/// Enough for any real layout (a virtual stage per layer of a 1,000-layer model) while a typo
/// like "t*99999999" is refused before it is spelled out.
constexpr std::size_t kMaxExpanded = 1 << 16;

/// The count after a '*' at `at`; throws when there is none.
std::size_t repeat_count(const std::string& text, const std::string& s, std::size_t& at) {
  if (at >= s.size() || s[at] != '*' || at + 1 >= s.size() ||
      !std::isdigit(static_cast<unsigned char>(s[at + 1])))
    throw core::Error(kField, text, "a repetition is written (...)*n or x*n, n a number");
  std::size_t n = 0;
  ++at;
  while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) {
    n = n * 10 + static_cast<std::size_t>(s[at++] - '0');
    if (n > kMaxExpanded)
      throw core::Error(kField, text, fmt::format("repeats more than {} times", kMaxExpanded));
  }
  return n;
}

/// `text` with its repetitions spelled out and commas and blanks dropped, in Megatron-Core's two
/// passes: groups "(...)*n" first (copied as written), then single characters "x*n" (so a group
/// may hold "t*3").
std::string expand(const std::string& text) {
  std::string s;
  for (char c : text)
    if (c != ',' && !std::isspace(static_cast<unsigned char>(c))) s += c;
  auto append = [&](std::string& out, std::string_view part, std::size_t times) {
    if (out.size() + part.size() * times > kMaxExpanded)
      throw core::Error(kField, text,
                        fmt::format("spells out to more than {} characters", kMaxExpanded));
    for (std::size_t i = 0; i < times; ++i) out += part;
  };
  std::string grouped;
  for (std::size_t at = 0; at < s.size();) {
    if (s[at] == ')') throw core::Error(kField, text, "a ')' closes no group");
    if (s[at] != '(') {
      append(grouped, std::string_view(s.data() + at, 1), 1);
      ++at;
      continue;
    }
    const std::size_t close = s.find(')', at);
    if (close == std::string::npos) throw core::Error(kField, text, "a '(' is not closed");
    if (s.find('(', at + 1) < close)
      throw core::Error(kField, text, "groups do not nest: (...)*n holds layers and '|' only");
    if (close == at + 1) throw core::Error(kField, text, "a group () is empty");
    const std::string_view group(s.data() + at + 1, close - at - 1);
    at = close + 1;
    append(grouped, group, repeat_count(text, s, at));
  }
  std::string out;
  for (std::size_t at = 0; at < grouped.size();) {
    if (grouped[at] == '*')
      throw core::Error(kField, text, "a '*' repeats nothing: write (...)*n or x*n");
    const std::string_view one(grouped.data() + at, 1);
    ++at;
    if (at < grouped.size() && grouped[at] == '*')
      append(out, one, repeat_count(text, grouped, at));
    else
      append(out, one, 1);
  }
  return out;
}

}  // namespace

PipelineLayout parse_pipeline_layout(const std::string& text, const ModelSpec& model, int pp) {
  const std::string s = expand(text);
  std::vector<std::string> stages(1);
  for (char c : s) {
    if (c == '|') {
      stages.emplace_back();
    } else if (c == 'E' || c == 't' || c == 'm' || c == 'L') {
      stages.back() += c;
    } else {
      throw core::Error(kField, text,
                        fmt::format("unknown layer '{}': E embedding, t transformer layer, m "
                                    "MTP layer, L output layer and loss; '|' ends a stage",
                                    c));
    }
  }
  const auto n = static_cast<int>(stages.size());
  if (pp < 1 || n % pp != 0)
    throw core::Error(
        kField, text,
        fmt::format("has {} virtual stages, not a multiple of parallelism.pp ({})", n, pp));
  auto count = [&](char c) {
    int k = 0;
    for (const auto& st : stages) k += static_cast<int>(std::count(st.begin(), st.end(), c));
    return k;
  };
  if (count('E') != 1 || stages.front().empty() || stages.front().front() != 'E')
    throw core::Error(kField, text, "the embedding (E) comes first, once");
  if (count('L') != 1 || stages.back().empty() || stages.back().back() != 'L')
    throw core::Error(kField, text,
                      "the output layer and loss (L) come last, once (a loss split over stages "
                      "is not modelled)");
  if (count('t') != model.layers)
    throw core::Error(kField, text,
                      fmt::format("places {} transformer layers (t); model.layers is {}",
                                  count('t'), model.layers));
  if (count('m') != model.mtp_layers)
    throw core::Error(kField, text,
                      fmt::format("places {} MTP layers (m); model.mtp_layers is {}", count('m'),
                                  model.mtp_layers));
  for (int i = 0; i + 1 < n; ++i)
    if (stages[static_cast<std::size_t>(i)].find('m') != std::string::npos)
      throw core::Error(kField, text,
                        "the MTP layers (m) are modelled on the last stage, with the loss");
  const std::string& last = stages.back();
  if (last.find('m') != std::string::npos && last.find('t', last.find('m')) != std::string::npos)
    throw core::Error(kField, text, "transformer layers (t) come before the MTP layers (m)");
  PipelineLayout out;
  out.virtual_stages = n / pp;
  for (const auto& st : stages)
    out.chunk_layers.push_back(static_cast<int>(std::count(st.begin(), st.end(), 't')));
  return out;
}

}  // namespace twin::workload
