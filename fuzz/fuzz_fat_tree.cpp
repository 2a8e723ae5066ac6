// Fuzzes the fat-tree generator with arbitrary cluster and fabric numbers: the geometry is
// derived or refused with core::Error; a small fabric is built and must use no switch port
// twice (ports used + free = switches x radix) and carry every NIC.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>

#include "core/error.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "topology/fat_tree.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  twin::topology::ClusterSpec c;
  twin::topology::FabricSpec f;
  c.nodes = in.ConsumeIntegralInRange(-2, 100000);
  c.gpus_per_node = in.ConsumeIntegralInRange(-1, 72);
  c.nics_per_node = in.ConsumeIntegralInRange(-1, 72);
  f.tiers = in.ConsumeIntegralInRange(1, 4);
  f.switch_radix = in.ConsumeIntegralInRange(-2, 100000);
  f.oversubscription = in.ConsumeFloatingPointInRange(0.5, 10.0);
  f.spine_oversubscription = in.ConsumeBool() ? 1.0 : in.ConsumeFloatingPointInRange(0.5, 10.0);
  f.reserved_ports_per_leaf = in.ConsumeIntegralInRange(-1, 16);
  f.management_nodes = in.ConsumeIntegralInRange(-1, 8);
  f.management_ports_per_node = in.ConsumeIntegralInRange(0, 8);
  f.rail_optimized = in.ConsumeBool();
  try {
    const auto g = twin::topology::FatTreeGeometry::derive(c, f);
    // Fabrics are built only while small: a large one under ASan takes seconds, not a hang.
    if (static_cast<std::int64_t>(g.leaves) + g.spines + g.cores > 600 ||
        g.endpoints + g.management_ports > 512)
      return 0;
    const twin::topology::Fabric fabric(c, f);
    const twin::topology::Bom bom = twin::topology::compute_bom(fabric);
    for (const auto* tier : {&bom.leaf, &bom.spine, &bom.core})
      if (tier->ports_free < 0 || tier->ports_used + tier->ports_free !=
                                      static_cast<std::int64_t>(tier->switches) * f.switch_radix)
        __builtin_trap();
    if (bom.nics != c.nodes * c.nics_per_node) __builtin_trap();
  } catch (const twin::core::Error&) {
  }
  return 0;
}
