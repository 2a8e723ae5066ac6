#include <gtest/gtest.h>

#include <cmath>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "fabric_fixtures.hpp"
#include "netsim/engine.hpp"
#include "netsim/native_engine.hpp"
#include "topology/fabric_state.hpp"

namespace twin::netsim {
namespace {

using topology::Hop;
using topology::LinkId;

Flow flow_on(std::vector<std::uint32_t> links, double bytes, double start = 0, double latency = 0) {
  Flow f;
  f.bytes = bytes;
  f.start_s = start;
  f.latency_s = latency;
  for (auto l : links) f.hops.push_back(Hop{LinkId(l), 1.0});
  return f;
}

TEST(NativeEngine, OneFlowTakesLatencyPlusBytesOverBandwidth) {
  FlowSet set;
  set.flows.push_back(flow_on({0, 1}, 1e9, 0.5, 2e-6));
  const FlowResult r = NativeEngine().run(set, {50e9, 100e9});
  EXPECT_DOUBLE_EQ(r.transfer_start_s[0], 0.5 + 2e-6);
  EXPECT_NEAR(r.finish_s[0], 0.5 + 2e-6 + 1e9 / 50e9, 1e-15);
  EXPECT_NEAR(r.link_bytes[0], 1e9, 1e-3);
}

TEST(NativeEngine, MaxMinSharesTheBottleneckAndGivesTheRestAway) {
  // Classic example: A uses links 0 and 1, B uses link 0, C uses link 1.
  // Link 0: 10 B/s, link 1: 4 B/s. Max-min: A = C = 2 (link 1), B = 8 (rest of link 0).
  FlowSet set;
  set.flows.push_back(flow_on({0, 1}, 2));  // A finishes at t = 1
  set.flows.push_back(flow_on({0}, 100));   // B
  set.flows.push_back(flow_on({1}, 2));     // C finishes at t = 1
  const FlowResult r = NativeEngine().run(set, {10, 4});
  EXPECT_NEAR(r.finish_s[0], 1.0, 1e-12);
  EXPECT_NEAR(r.finish_s[2], 1.0, 1e-12);
  // B: 8 bytes by t = 1, then alone at 10 B/s: 92 / 10 = 9.2 s more.
  EXPECT_NEAR(r.finish_s[1], 10.2, 1e-12);
}

TEST(NativeEngine, AdaptiveFractionsLoadLinksByShare) {
  // One flow split 50/50 over two 1 B/s links runs at 2 B/s.
  FlowSet set;
  Flow f;
  f.bytes = 4;
  f.hops = {Hop{LinkId(0), 0.5}, Hop{LinkId(1), 0.5}};
  set.flows.push_back(f);
  EXPECT_NEAR(NativeEngine().run(set, {1, 1}).finish_s[0], 2.0, 1e-12);
}

TEST(NativeEngine, DependenciesChainFlows) {
  FlowSet set;
  set.flows.push_back(flow_on({0}, 10, 0, 1));  // 1 s latency + 1 s transfer
  auto second = flow_on({0}, 10, 0, 0.5);
  second.after = {0};
  set.flows.push_back(second);  // starts at 2 + 0.5, ends 3.5
  const FlowResult r = NativeEngine().run(set, {10});
  EXPECT_NEAR(r.finish_s[1], 3.5, 1e-12);
  EXPECT_NEAR(r.makespan_s, 3.5, 1e-12);
  set.flows[0].after = {1};  // a cycle
  EXPECT_THROW(NativeEngine().run(set, {10}), core::Error);
}

TEST(NativeEngine, RefusesFailedLinksAndBadInput) {
  FlowSet set;
  set.flows.push_back(flow_on({0}, 10));
  EXPECT_THROW(NativeEngine().run(set, {0.0}), core::Error);
  EXPECT_THROW(NativeEngine().run(set, {}), core::Error);
  set.flows[0].bytes = -1;
  EXPECT_THROW(NativeEngine().run(set, {10}), core::Error);
  EXPECT_THROW(make_engine("simgird"), core::Error);
}

/// Random flow sets of the kinds the agreement must hold on.
FlowSet pattern(const topology::Fabric& fabric, const topology::Router& router,
                const std::string& kind, std::uint64_t seed) {
  core::Rng rng(seed);
  const int n = fabric.gpu_count();
  const int per = fabric.cluster().gpus_per_node;
  FlowSet set;
  auto bytes = [&] { return std::round(1e6 * (1 + static_cast<double>(rng.uniform_index(64)))); };
  if (kind == "ring") {
    for (int g = 0; g < n; ++g) set.add(router, g, (g + 1) % n, 64e6);
  } else if (kind == "shift") {
    for (int g = 0; g < n; ++g) set.add(router, g, (g + n / 2 + per) % n, 32e6);
  } else if (kind == "permutation") {
    std::vector<int> perm(n);
    for (int i = 0; i < n; ++i) perm[i] = i;
    for (int i = n - 1; i > 0; --i) std::swap(perm[i], perm[rng.uniform_index(i + 1)]);
    for (int g = 0; g < n; ++g)
      if (perm[g] != g) set.add(router, g, perm[g], bytes());
  } else if (kind == "alltoall") {
    const int ranks = std::min(n, 16);
    for (int a = 0; a < ranks; ++a)
      for (int b = 0; b < ranks; ++b)
        if (a != b) set.add(router, a * (n / ranks), b * (n / ranks), 4e6);
  } else {  // mixed sizes and start times
    for (int g = 0; g < n; ++g) {
      const int dst = static_cast<int>(rng.uniform_index(n));
      if (dst != g)
        set.add(router, g, dst, bytes(), 1e-4 * static_cast<double>(rng.uniform_index(20)));
    }
  }
  return set;
}

struct AgreementCase {
  int nodes;
  int radix;
};

TEST(EngineAgreement, NativeMatchesSimgridOnDmodkFatTrees) {
  for (const AgreementCase c : {AgreementCase{8, 8}, AgreementCase{16, 16}, AgreementCase{128, 32},
                                AgreementCase{512, 64}}) {
    topology::ClusterSpec cluster;
    cluster.nodes = c.nodes;
    topology::FabricSpec spec;
    spec.switch_radix = c.radix;
    const topology::Fabric fabric(cluster, spec);
    const topology::Router router(fabric);
    const auto capacity = link_capacities(fabric);
    for (const char* kind : {"ring", "shift", "permutation", "alltoall", "mixed"}) {
      const FlowSet set = pattern(fabric, router, kind, 42);
      const FlowResult native = make_engine("native")->run(set, capacity);
      const FlowResult simgrid = make_engine("simgrid")->run(set, capacity);
      ASSERT_EQ(native.finish_s.size(), simgrid.finish_s.size());
      double worst = 0;
      for (std::size_t f = 0; f < set.flows.size(); ++f)
        worst = std::max(worst, std::abs(native.finish_s[f] / simgrid.finish_s[f] - 1.0));
      EXPECT_LT(worst, 1e-6) << kind << " on " << fabric.gpu_count() << " GPUs ("
                             << set.flows.size() << " flows); Expectation: simgrid makespan "
                             << simgrid.makespan_s << " s, Actual result: native "
                             << native.makespan_s << " s";
    }
  }
}

}  // namespace
}  // namespace twin::netsim
