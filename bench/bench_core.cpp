// Hot paths of the foundation: fabric construction and routing at scale.
#include <benchmark/benchmark.h>

#include "topology/fabric.hpp"
#include "topology/link_load.hpp"
#include "topology/routing.hpp"

namespace {

using namespace twin;

topology::Fabric fabric_of(int nodes) {
  topology::ClusterSpec c;
  c.nodes = nodes;
  return topology::Fabric(c, {});
}

void BM_BuildFabric(benchmark::State& state) {
  const auto nodes = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(fabric_of(nodes).link_count());
  state.counters["gpus"] = nodes * 8;
}
BENCHMARK(BM_BuildFabric)->Arg(64)->Arg(512)->Arg(2048)->Unit(benchmark::kMillisecond);

void BM_RouteBisectionShift(benchmark::State& state) {
  const auto nodes = static_cast<int>(state.range(0));
  const auto mode = static_cast<topology::RoutingMode>(state.range(1));
  const topology::Fabric fabric = fabric_of(nodes);
  const topology::Router router(fabric, nullptr, mode);
  const auto flows = topology::bisection_shift_pattern(fabric);
  for (auto _ : state) benchmark::DoNotOptimize(topology::link_load(fabric, router, flows));
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(flows.size()));
}
BENCHMARK(BM_RouteBisectionShift)
    ->ArgsProduct({{64, 512, 2048}, {0, 1, 2}})
    ->ArgNames({"nodes", "mode"})
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
