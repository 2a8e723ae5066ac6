// Native max-min engine vs SimGrid 3.32 on the same flows (dmodk routes on a rail-optimized,
// non-blocking 3-tier fat tree), and the native engine alone at 16,384 endpoints.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <map>
#include <memory>

#include "calibrate/profile.hpp"
#include "core/rng.hpp"
#include "netsim/collective.hpp"
#include "netsim/engine.hpp"
#include "topology/fabric.hpp"
#include "topology/routing.hpp"

namespace {

using namespace twin;

struct Setup {
  std::unique_ptr<topology::Fabric> fabric;
  std::unique_ptr<topology::Router> router;
  std::vector<double> capacity;
};

const Setup& setup(int gpus) {
  static std::map<int, Setup> cache;
  auto [it, inserted] = cache.try_emplace(gpus);
  if (inserted) {
    topology::ClusterSpec c;
    c.nodes = gpus / 8;
    it->second.fabric = std::make_unique<topology::Fabric>(c, topology::FabricSpec{});
    it->second.router = std::make_unique<topology::Router>(*it->second.fabric);
    it->second.capacity = netsim::link_capacities(*it->second.fabric);
  }
  return it->second;
}

netsim::FlowSet flows(const Setup& s, int pattern) {
  const int n = s.fabric->gpu_count();
  netsim::FlowSet set;
  if (pattern == 0) {  // ring over all GPUs, 64 MiB each
    for (int g = 0; g < n; ++g) set.add(*s.router, g, (g + 1) % n, 64.0 * (1 << 20));
  } else if (pattern == 1) {  // random permutation, 64 MiB each
    core::Rng rng(7);
    std::vector<int> perm(n);
    for (int i = 0; i < n; ++i) perm[i] = i;
    for (int i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.uniform_index(i + 1)]);
    for (int g = 0; g < n; ++g)
      if (perm[g] != g) set.add(*s.router, g, perm[g], 64.0 * (1 << 20));
  } else {  // 64-rank all-to-all, one rank per 8th node: 4,032 flows of 4 MiB
    const int stride = n / 64;
    for (int a = 0; a < 64; ++a)
      for (int b = 0; b < 64; ++b)
        if (a != b) set.add(*s.router, a * stride, b * stride, 4.0 * (1 << 20));
  }
  return set;
}

void BM_Engine(benchmark::State& state) {
  const auto gpus = static_cast<int>(state.range(0));
  const auto pattern = static_cast<int>(state.range(1));
  const bool simgrid = state.range(2) == 1;
  const Setup& s = setup(gpus);
  const netsim::FlowSet set = flows(s, pattern);
  auto engine = netsim::make_engine(simgrid ? "simgrid" : "native");
  double makespan = 0;
  for (auto _ : state) makespan = engine->run(set, s.capacity).makespan_s;
  state.counters["flows"] = static_cast<double>(set.flows.size());
  state.counters["makespan_ms"] = makespan * 1e3;
  state.SetLabel(std::string(simgrid ? "simgrid" : "native") + (pattern == 0   ? " ring"
                                                                : pattern == 1 ? " permutation"
                                                                               : " alltoall64"));
}

BENCHMARK(BM_Engine)
    ->ArgsProduct({{4096}, {0, 1, 2}, {0, 1}})
    ->ArgNames({"gpus", "pattern", "simgrid"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
BENCHMARK(BM_Engine)
    ->ArgsProduct({{16384}, {0, 1}, {0}})
    ->ArgNames({"gpus", "pattern", "simgrid"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

/// A whole collective on every GPU of the cluster: a fresh simulator per iteration (planning,
/// routing, the flow solve, NCCL's model for every algorithm and protocol "auto" considers),
/// over 4 sizes (the flow solve is cached per phase, as in a sweep).
void BM_Collective(benchmark::State& state) {
  const auto gpus = static_cast<int>(state.range(0));
  const auto op = static_cast<netsim::CollectiveOp>(state.range(1));
  const bool simgrid = state.range(2) == 1;
  const Setup& s = setup(gpus);
  static const calibrate::Profile profile = calibrate::load_profile("h100-sxm");
  std::vector<int> all(static_cast<std::size_t>(gpus));
  for (int i = 0; i < gpus; ++i) all[static_cast<std::size_t>(i)] = i;
  // SimGrid takes one (forced) algorithm: every candidate would be its own engine run.
  const netsim::Choice choice =
      simgrid ? netsim::parse_choice(op == netsim::CollectiveOp::sendrecv ? "direct/simple"
                                                                          : "ring/simple")
              : netsim::Choice{};
  double busbw = 0;
  std::size_t flows = 0;
  for (auto _ : state) {
    netsim::CollectiveSimulator sim(*s.fabric, nullptr, profile,
                                    netsim::make_engine(simgrid ? "simgrid" : "native"));
    for (double size :
         {32.0 * (1 << 20), 256.0 * (1 << 20), 1024.0 * (1 << 20), 4096.0 * (1 << 20)}) {
      const auto r = sim.run(op, choice, {all}, size);
      busbw = r.busbw_GBps;
      flows = r.flows;
    }
  }
  state.counters["busbw_4GiB_GBps"] = busbw;
  state.counters["flows"] = static_cast<double>(flows);
  state.SetLabel(std::string(simgrid ? "simgrid " : "native ") + std::string(netsim::to_text(op)));
}

BENCHMARK(BM_Collective)
    ->Args({4096, static_cast<int>(netsim::CollectiveOp::all_reduce), 0})
    ->Args({4096, static_cast<int>(netsim::CollectiveOp::all_reduce), 1})
    ->Args({4096, static_cast<int>(netsim::CollectiveOp::sendrecv), 0})
    ->Args({4096, static_cast<int>(netsim::CollectiveOp::sendrecv), 1})
    ->ArgNames({"gpus", "op", "simgrid"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);
// All-to-all: "auto" runs PXN (NCCL's default), aggregated per NIC pair (n G (m-1) network
// flows: 131k at 1,024 GPUs, 2.1M at 4,096) and solved in closed form when single-level.
BENCHMARK(BM_Collective)
    ->Args({1024, static_cast<int>(netsim::CollectiveOp::alltoall), 0})
    ->Args({4096, static_cast<int>(netsim::CollectiveOp::alltoall), 0})
    ->ArgNames({"gpus", "op", "simgrid"})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
