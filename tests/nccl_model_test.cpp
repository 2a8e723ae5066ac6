// Closed-form checks of NCCL's cost model (netsim/nccl_model.hpp) and of how the simulator
// combines it with the flow engine: every expected number below follows from the profile's
// tables by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "netsim/collective.hpp"
#include "netsim/nccl_model.hpp"
#include "topology/fabric.hpp"

namespace twin::netsim {
namespace {

/// A cluster of `nodes` reference HGX nodes (every other field at its default).
topology::ClusterSpec cluster_of(int nodes) {
  topology::ClusterSpec c;
  c.nodes = nodes;
  return c;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

const calibrate::Profile& h100() {
  static const calibrate::Profile p = calibrate::load_profile("h100-sxm");
  return p;
}

GroupScale nodes_of_8(int nodes) {
  return {8 * nodes, nodes, true};
}

TEST(NcclModel, VocabularyRoundTripsAndRejectsUnknownNames) {
  for (CollectiveOp op : all_ops()) EXPECT_EQ(parse_op(to_text(op)), op);
  for (Protocol p : kAllProtocols) EXPECT_EQ(parse_protocol(to_text(p)), p);
  EXPECT_EQ(parse_algorithm("nvls_tree"), Algorithm::nvls_tree);
  try {
    (void)parse_protocol("LL", "--proto");
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.field(), "--proto");
    EXPECT_NE(e.reason().find("'ll'"), std::string::npos);
  }
  EXPECT_THROW((void)parse_choice("ring/ll64"), core::Error);
  const Choice c = parse_choice("tree/ll128");
  EXPECT_EQ(*c.algorithm, Algorithm::tree);
  EXPECT_EQ(*c.protocol, Protocol::ll128);
  EXPECT_EQ(to_text(c), "tree/ll128");
  // One bus factor: the typed one forwards to the nccl-tests one.
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::all_reduce, 16), 2.0 * 15 / 16);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::all_gather, 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(busbw_factor(CollectiveOp::sendrecv, 16), 1.0);
}

TEST(NcclModel, RingLatencyGrowsLinearlyWithRanks) {
  const NcclModel m(h100());
  // LL across N nodes of 8: base 6.6 + (2(8N-1) - 2N) intra steps x max(0.6 x 1.8 (NCCL's LL
  // step within a node when the group spans nodes), 1.0 net overhead) + 2N network steps x 2.7
  // = 4.44 + 20.52 N us.
  for (int nodes : {2, 4, 8, 64})
    EXPECT_NEAR(
        m.latency_us(CollectiveOp::all_reduce, Algorithm::ring, Protocol::ll, nodes_of_8(nodes), 8),
        4.44 + 20.52 * nodes, 1e-9)
        << nodes;
  // All-gather: n-1 steps, N-1 of them across: 6.6 + 7N x 1.08 + (N-1) x 2.7.
  EXPECT_NEAR(
      m.latency_us(CollectiveOp::all_gather, Algorithm::ring, Protocol::ll, nodes_of_8(4), 8),
      6.6 + 28 * 1.08 + 3 * 2.7, 1e-9);
  // Inside one node every step is an NVLink hop: 8.4 + 14 x 3.4 for Simple.
  EXPECT_NEAR(m.latency_us(CollectiveOp::all_reduce, Algorithm::ring, Protocol::simple,
                           nodes_of_8(1), kGiB),
              8.4 + 14 * 3.4, 1e-9);
  // Multi-node Simple: intra steps cost max(3.4, 3 x 1.0 proxy overhead), 2N = 4 network
  // steps 14 us, and NCCL's ring plateau factor 1.4 once the buffer is not tiny.
  EXPECT_NEAR(m.latency_us(CollectiveOp::all_reduce, Algorithm::ring, Protocol::simple,
                           nodes_of_8(2), kGiB),
              1.4 * (8.4 + (30 - 4) * 3.4 + 4 * 14.0), 1e-9);
  EXPECT_NEAR(
      m.latency_us(CollectiveOp::all_reduce, Algorithm::ring, Protocol::simple, nodes_of_8(2), 64),
      8.4 + (30 - 4) * 3.4 + 4 * 14.0, 1e-9);
}

TEST(NcclModel, TreeLatencyGrowsWithLog2OfNodes) {
  const NcclModel m(h100());
  auto tree = [&](int nodes) {
    return m.latency_us(CollectiveOp::all_reduce, Algorithm::tree, Protocol::ll, nodes_of_8(nodes),
                        8);
  };
  // 6.8 + 2 (7 x 0.6 x 1.8 + log2(N) x 5.0): +10 us per doubling of the nodes.
  EXPECT_NEAR(tree(2), 6.8 + 2 * (7 * 0.6 * 1.8 + 5.0), 1e-9);
  EXPECT_NEAR(tree(4) - tree(2), 10.0, 1e-9);
  EXPECT_NEAR(tree(512) - tree(256), 10.0, 1e-9);
  // NVLSTree: hop_nvlink + 2 log2(N) hop_network = 23 + 28 log2(N).
  EXPECT_NEAR(m.latency_us(CollectiveOp::all_reduce, Algorithm::nvls_tree, Protocol::simple,
                           nodes_of_8(16), 8),
              23 + 2 * 4 * 14.0, 1e-9);
}

TEST(NcclModel, LlCarriesHalfItsBytesAsPayload) {
  const NcclModel m(h100());
  EXPECT_DOUBLE_EQ(m.payload_efficiency(Protocol::ll), 0.5);
  EXPECT_DOUBLE_EQ(m.payload_efficiency(Protocol::ll128), 120.0 / 128);
  EXPECT_DOUBLE_EQ(m.payload_efficiency(Protocol::simple), 1.0);
  // NCCL's Ring LL keeps a quarter of Simple: half from the payload, half its own refinement.
  EXPECT_DOUBLE_EQ(m.bandwidth_fraction(Algorithm::ring, Protocol::ll, kGiB), 0.25);
  EXPECT_FALSE(m.available(Algorithm::nvls, Protocol::ll));
}

struct Two {
  calibrate::Profile profile = h100();
  topology::Fabric fabric;
  std::unique_ptr<CollectiveSimulator> sim;
  /// `ll_vs_simple`: without LL's bandwidth cap and without LL128, so that Ring has exactly two
  /// protocols to choose from, and without NCCL's tuner, so that "auto" takes the protocol of
  /// minimum simulated time (netsim/nccl_tuner_test.cpp checks NCCL's own choice).
  explicit Two(bool ll_vs_simple) : fabric(cluster_of(2), topology::FabricSpec{}) {
    if (ll_vs_simple) {
      profile.nccl->ll_max_busbw_GBps = {1e9, 1e9, 1e9};
      profile.nccl->base_latency_us["ring"].erase("ll128");
      profile.nccl->tuner.reset();
    }
    sim = std::make_unique<CollectiveSimulator>(fabric, nullptr, profile, make_engine("native"));
  }
  CollectiveResult run(const std::string& choice, double bytes) {
    std::vector<int> all(16);
    for (int i = 0; i < 16; ++i) all[static_cast<std::size_t>(i)] = i;
    return sim->run(CollectiveOp::all_reduce, parse_choice(choice), {all}, bytes);
  }
};

TEST(NcclModel, ProtocolsScaleTheLinkLimitedTransfer) {
  Two t(true);
  const auto ll = t.run("ring/ll", kGiB), simple = t.run("ring/simple", kGiB);
  EXPECT_DOUBLE_EQ(ll.phase_flow_s[0], simple.phase_flow_s[0]);  // the same traffic
  // Transfer time (time - latency): LL takes 1 / 0.25 = 4x Simple's.
  EXPECT_NEAR((ll.time_s - ll.latency_s) / (simple.time_s - simple.latency_s), 4.0, 1e-9);
}

TEST(NcclModel, SmallSizesAreLatencyBoundLargeOnesBandwidthBoundCrossoverWhereTheFormulasSay) {
  Two t(true);
  const auto ll = t.run("ring/ll", 1e6), simple = t.run("ring/simple", 1e6);
  // Per byte transfer times and latencies give the crossover S* where both take equal time.
  const double k_ll = (ll.time_s - ll.latency_s) / 1e6,
               k_s = (simple.time_s - simple.latency_s) / 1e6;
  const double crossover = (simple.latency_s - ll.latency_s) / (k_ll - k_s);
  ASSERT_GT(crossover, 1e3);
  const auto below = t.run("ring", crossover * 0.9), above = t.run("ring", crossover * 1.1);
  EXPECT_EQ(below.protocol, Protocol::ll);
  EXPECT_EQ(above.protocol, Protocol::simple);
  // Tiny: the time is (nearly) all latency; huge: (nearly) all transfer.
  const auto tiny = t.run("auto", 8), huge = t.run("auto", 16 * kGiB);
  EXPECT_GT(tiny.latency_s / tiny.time_s, 0.99);
  EXPECT_LT(huge.latency_s / huge.time_s, 0.01);
}

TEST(NcclModel, AutoPicksNvlsTreeOnTwoH100NodesAndRingAtScale) {
  // NVLSTree on 2 nodes: each NIC carries S/G each way, as much as NVLS moves per GPU over its
  // 450 GB/s NVLink ((G+1)/G S): T_flow = S / 400 GB/s, half a ring's.
  // On 2 nodes NVLSTree sends each NIC half a ring's bytes; at 16 nodes its trees carry twice
  // what a ring does per NIC and the ring wins (as NCCL's bwInter/2 says).
  auto pick = [](int nodes) {
    const topology::Fabric f(cluster_of(nodes), topology::FabricSpec{});
    CollectiveSimulator sim(f, nullptr, h100(), make_engine("native"));
    std::vector<int> all(static_cast<std::size_t>(8 * nodes));
    for (int i = 0; i < 8 * nodes; ++i) all[static_cast<std::size_t>(i)] = i;
    return sim.run(CollectiveOp::all_reduce, Choice{}, {all}, 4 * kGiB);
  };
  EXPECT_EQ(pick(2).algorithm, Algorithm::nvls_tree);
  EXPECT_EQ(pick(16).algorithm, Algorithm::ring);
}

TEST(NcclModel, BadTablesAndMissingProtocolsAreClearErrors) {
  calibrate::Profile p = h100();
  p.nccl->base_latency_us["rign"]["ll"] = 1.0;
  try {
    const NcclModel m(p);
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.field(), "nccl.base_latency_us.rign");
  }
  calibrate::Profile none = h100();
  none.nccl.reset();
  EXPECT_THROW(NcclModel{none}, core::Error);
  // A protocol the profile lacks: NVLS has no LL cell.
  const topology::Fabric f(cluster_of(1), topology::FabricSpec{});
  CollectiveSimulator sim(f, nullptr, h100(), make_engine("native"));
  try {
    sim.run("all_reduce", "nvls/ll", {{0, 1, 2, 3, 4, 5, 6, 7}}, kGiB);
    FAIL();
  } catch (const core::Error& e) {
    EXPECT_EQ(e.field(), "protocol");
  }
}

}  // namespace
}  // namespace twin::netsim
