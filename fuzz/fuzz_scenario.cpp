// Fuzzes the scenario loader: YAML text, then '\0'-separated `--set` overrides. A scenario that
// loads also derives its fat-tree geometry and, when small, builds the fabric and applies the
// perturbations. Bad input must end in core::Error; any other exception or a sanitizer report is
// a bug.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "topology/fabric.hpp"
#include "topology/fat_tree.hpp"
#include "twin/scenario.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> chunks;
  for (std::size_t start = 0;;) {
    const auto end = input.find('\0', start);
    chunks.push_back(input.substr(start, end - start));
    if (end == std::string::npos || chunks.size() == 9) break;
    start = end + 1;
  }
  const std::vector<std::string> overrides(chunks.begin() + 1, chunks.end());
  try {
    const twin::sim::Scenario s = twin::sim::parse_scenario(chunks[0], "fuzz", overrides);
    const auto geometry = twin::topology::FatTreeGeometry::derive(s.cluster, s.fabric);
    if (geometry.endpoints + geometry.management_ports <= 512) {
      const twin::topology::Fabric fabric(s.cluster, s.fabric);
      (void)twin::sim::fabric_state(s, fabric);
    }
  } catch (const twin::core::Error&) {
  }
  return 0;
}
