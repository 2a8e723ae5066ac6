#include "calibrate/gpu_match.hpp"

#include <vector>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::calibrate {
namespace {

struct Rule {
  const char* profile;
  std::vector<const char*> all_of;   ///< every one must appear in the name
  std::vector<const char*> none_of;  ///< none may appear
};

// See the header for the device names each rule is written against.
const std::vector<Rule>& rules() {
  static const std::vector<Rule> table = {
      {"h200-sxm", {"H200"}, {"NVL", "GH200", "PCIe"}},
      {"h100-sxm", {"H100", "HBM3"}, {"NVL", "PCIe", "GH100"}},
      {"h100-sxm", {"H100", "SXM"}, {"NVL", "PCIe"}},
      {"a100-sxm-80gb", {"A100", "SXM", "80GB"}, {"PCIe"}},
      {"a100-sxm-40gb", {"A100", "SXM", "40GB"}, {"PCIe"}},
  };
  return table;
}

bool contains(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

}  // namespace

std::optional<std::string> shipped_profile_for_gpu(const std::string& gpu_name) {
  for (const Rule& rule : rules()) {
    bool match = true;
    for (const char* word : rule.all_of) match = match && contains(gpu_name, word);
    for (const char* word : rule.none_of) match = match && !contains(gpu_name, word);
    if (match) return std::string(rule.profile);
  }
  return std::nullopt;
}

std::string choose_base_profile(const std::string& gpu_name, const std::string& explicit_base) {
  if (!explicit_base.empty()) return explicit_base;
  if (auto name = shipped_profile_for_gpu(gpu_name)) return *name;
  throw core::Error("gpu", gpu_name,
                    "no shipped profile describes this GPU (shipped: " +
                        core::quoted_list(shipped_profile_names()) +
                        "); give --base with a profile of its datasheet figures (a .json path)");
}

}  // namespace twin::calibrate
