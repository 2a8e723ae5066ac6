// The host's issue cost per kernel by framework and the device's wait for it
// (workload/host_issue.hpp states the model and the measurements).
#include "workload/host_issue.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::workload {
namespace {

struct FrameworkCost {
  const char* name;
  double host_us;
};

// Measured per kernel on an H200 node's host (workload/host_issue.hpp).
constexpr FrameworkCost kFrameworks[] = {
    {"te", 25.4}, {"megatron", 25.4}, {"eager", 25.4}, {"compiled", 47.3}};

}  // namespace

const std::vector<std::string>& framework_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& f : kFrameworks) out.emplace_back(f.name);
    return out;
  }();
  return names;
}

double host_issue_s(const TrainingSpec& t) {
  for (const auto& f : kFrameworks)
    if (t.framework == f.name) return t.cuda_graphs ? 0.0 : f.host_us * 1e-6;
  throw core::Error("training.framework", t.framework,
                    "unknown framework; one of " + core::quoted_list(framework_names()));
}

double host_wait_s(const std::vector<const Kernel*>& kernels, double host_s) {
  if (!(host_s > 0)) return 0.0;
  double end = 0, busy = 0, issued = 0;
  for (const Kernel* k : kernels) {
    issued += host_s;
    end = std::max(end, issued) + k->time_s;
    busy += k->time_s;
  }
  return end - busy;
}

}  // namespace twin::workload
