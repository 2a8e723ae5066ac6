// Fuzzes the Slurm node-state reader (`sinfo -N -h -o "%N %T"`): arbitrary text is parsed and
// resolved against a small list of host names. Every failure must be a core::Error; every
// resolved host index must name one of the hosts, and no entry may leave a state undefined.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.hpp"
#include "topology/node_states.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> hosts = {"dgx-001", "dgx-002", "dgx-010",
                                                 "gpu-a.cluster.example", "GPU-B"};
  try {
    const auto entries = twin::topology::parse_node_states(text, "fuzz");
    for (const auto& e : entries)
      if (e.state != twin::topology::HostState::up &&
          e.state != twin::topology::HostState::drained &&
          e.state != twin::topology::HostState::down)
        __builtin_trap();
    for (const auto& [host, state] : twin::topology::resolve_node_states(entries, hosts, "fuzz"))
      if (host < 0 || host >= static_cast<int>(hosts.size())) __builtin_trap();
  } catch (const twin::core::Error&) {
  }
  return 0;
}
