// Import of real fabrics: reading an ibnetdiscover dump into a routed Fabric, and the
// generate -> export -> import round trip at the reference scale (4,096 GPUs, 3 tiers).
// Targets: the 300 kB NDR dump in <= 0.2 s; the 4,096-GPU export + import in <= 1 s.
#include <benchmark/benchmark.h>

#include <sstream>

#include "topology/fabric.hpp"
#include "topology/fabric_faults.hpp"
#include "topology/fabric_import.hpp"
#include "topology/ibnetdiscover.hpp"
#include "topology/routing.hpp"

namespace {

using namespace twin;

const std::string kDump =
    std::string(CLUSTERTWIN_SOURCE_DIR) + "/data/ibnetdiscover/nvidia-topograph-example.out";

void BM_ImportRealNdrDump(benchmark::State& state) {
  for (auto _ : state) {
    topology::ClusterSpec c;
    topology::FabricSpec f;
    f.file = kDump;
    const topology::Fabric fabric(c, f);
    const topology::Router router(fabric);  // up/down tables included
    benchmark::DoNotOptimize(fabric.cable_count());
  }
}
BENCHMARK(BM_ImportRealNdrDump)->Unit(benchmark::kMillisecond);

void BM_ExportImport(benchmark::State& state) {
  topology::ClusterSpec c;
  c.nodes = static_cast<int>(state.range(0));
  const topology::Fabric generated(c, {});
  for (auto _ : state) {
    std::ostringstream out;
    topology::write_ibnetdiscover(out, topology::to_ibnetdiscover(generated));
    const topology::Fabric back(
        c, {},
        topology::plan_from_ibnetdiscover(topology::parse_ibnetdiscover(out.str(), "bench")));
    benchmark::DoNotOptimize(back.cable_count());
    state.counters["bytes"] = static_cast<double>(out.str().size());
  }
  state.counters["gpus"] = static_cast<double>(c.nodes * 8);
}
BENCHMARK(BM_ExportImport)->Arg(64)->Arg(512)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
