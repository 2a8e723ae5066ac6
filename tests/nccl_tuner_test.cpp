// NCCL's tuner (netsim/nccl_tuner.hpp) against NCCL 2.19's own tables, worked by hand from
// src/graph/tuning.cc at b6475625 (the release the shipped profiles name): the graph, the
// bandwidth cells, the choice of protocol at 8 and 80 ranks for 1 MiB - 16 GiB, the ceilings
// it puts on the simulated cells, and what `auto` runs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"
#include "netsim/collective.hpp"
#include "netsim/nccl_tuner.hpp"
#include "topology/fabric.hpp"

namespace twin::netsim {
namespace {

constexpr double kMiB = 1024.0 * 1024;

const calibrate::Profile& h100() {
  static const calibrate::Profile p = calibrate::load_profile("h100-sxm");
  return p;
}

/// HGX H100 nodes with eight 400 Gb/s NICs: NCCL sees 50 GB/s NICs behind 48 GB/s PCIe 5.0.
NcclLinks hgx_links(int gpus_per_node = 8) {
  return {400.0 / 8, gpus_per_node, 0};
}

TEST(NcclTuner, GraphsAreTheSearchsResultForTheNodeKind) {
  const NcclTuner tuner(h100());
  // Across nodes: the highest step under min(50, 48) is 48, one channel per NIC, and Hopper
  // keeps 8 channels below 50 GB/s: 8 x 48 = 384 GB/s.
  const NcclGraph across = tuner.graph({80, 10, true}, hgx_links());
  EXPECT_EQ(across.channels, 8);
  EXPECT_DOUBLE_EQ(across.bw_GBps, 48.0);
  // One node: 6 x 60 fills 360 of NVLink's 370.8 first; duplicated: 12 x 30.
  const NcclGraph inside = tuner.graph({8, 1, true}, hgx_links());
  EXPECT_EQ(inside.channels, 12);
  EXPECT_DOUBLE_EQ(inside.bw_GBps, 30.0);
  // A100 nodes with eight 200 Gb/s NICs: 24 GB/s PCIe 4.0 under 25 GB/s NICs: 8 x 24, not
  // duplicated below 25 GB/s (nccl#812's ~192 GB/s all-reduce bus bandwidth).
  const calibrate::Profile a100 = calibrate::load_profile("a100-sxm-80gb");
  const NcclGraph hdr = NcclTuner(a100).graph({16, 2, true}, {200.0 / 8, 8, 0});
  EXPECT_EQ(hdr.channels, 8);
  EXPECT_DOUBLE_EQ(hdr.bw_GBps, 24.0);
}

TEST(NcclTuner, BandwidthCellsAreNcclsTable) {
  const NcclTuner tuner(h100());
  const GroupScale s{80, 10, true};
  const NcclGraph g{8, 48};
  auto bw = [&](Algorithm a, Protocol p) {
    return *tuner.bandwidth_GBps(CollectiveOp::all_reduce, a, p, s, g);
  };
  // busBw 384; ring: x 80 / 158; LL min(20.4, 96); LL128 min(353.3, 8 x 36.7).
  EXPECT_NEAR(bw(Algorithm::ring, Protocol::simple), 384.0 * 80 / 158, 1e-9);
  EXPECT_NEAR(bw(Algorithm::ring, Protocol::ll), 20.4 * 80 / 158, 1e-9);
  EXPECT_NEAR(bw(Algorithm::ring, Protocol::ll128), 293.6 * 80 / 158, 1e-9);
  // tree: min(353.28, 8 x 36) = 288, halved; LL128 min(288 x 120/128, 8 x 29) = 232, halved.
  EXPECT_NEAR(bw(Algorithm::tree, Protocol::simple), 144.0, 1e-9);
  EXPECT_NEAR(bw(Algorithm::tree, Protocol::ll128), 116.0, 1e-9);
  EXPECT_NEAR(bw(Algorithm::tree, Protocol::ll), 20.4 / 2, 1e-9);
  // NVLS and our algorithms are not NCCL's restated cells.
  EXPECT_FALSE(
      tuner.bandwidth_GBps(CollectiveOp::all_reduce, Algorithm::nvls_tree, Protocol::simple, s, g));
  EXPECT_FALSE(
      tuner.bandwidth_GBps(CollectiveOp::all_gather, Algorithm::tree, Protocol::simple, s, g));
}

/// NCCL's choice between ring and tree for an all-reduce of `bytes`.
std::string choice(const NcclTuner& t, const GroupScale& s, const NcclGraph& g, double bytes) {
  std::string best;
  double best_us = 0;
  for (Algorithm a : {Algorithm::ring, Algorithm::tree})
    for (Protocol p : kAllProtocols) {
      const auto us = t.time_us(CollectiveOp::all_reduce, a, p, s, g, bytes);
      if (us && (best.empty() || *us < best_us)) {
        best_us = *us;
        best = std::string(to_text(a)) + "/" + std::string(to_text(p));
      }
    }
  return best;
}

TEST(NcclTuner, ProtocolChoiceAt8And80RanksIsNcclsFrom1MiBTo16GiB) {
  const NcclTuner tuner(h100());
  // Worked from tuning.cc with the graphs above: time = latency (x 1.4 ring Simple plateau
  // across nodes) + bytes / (1000 bw x treeCorrection). One node: LL's 15 us latency wins at
  // 1 MiB, LL128 (40.6 us, 189 GB/s) to 32 MiB, Simple (56 us, 206 GB/s) beyond.
  const std::vector<std::string> one_node = {
      "ring/ll",     "ring/ll128",  "ring/ll128",  "ring/ll128",  "ring/ll128",
      "ring/ll128",  "ring/simple", "ring/simple", "ring/simple", "ring/simple",
      "ring/simple", "ring/simple", "ring/simple", "ring/simple", "ring/simple"};
  // Ten nodes: tree/LL128 (82.5 us, 116 GB/s x correction) to 128 MiB, ring/LL128 (356 us,
  // 149 GB/s) at 256 MiB, ring/Simple (1,060 us with the plateau, 194 GB/s) from 512 MiB.
  const std::vector<std::string> ten_nodes = {
      "tree/ll128",  "tree/ll128",  "tree/ll128",  "tree/ll128",  "tree/ll128",
      "tree/ll128",  "tree/ll128",  "tree/ll128",  "ring/ll128",  "ring/simple",
      "ring/simple", "ring/simple", "ring/simple", "ring/simple", "ring/simple"};
  double bytes = kMiB;
  for (std::size_t i = 0; i < one_node.size(); ++i, bytes *= 2) {
    EXPECT_EQ(choice(tuner, {8, 1, true}, {12, 30}, bytes), one_node[i]) << bytes << " B, 8 ranks";
    EXPECT_EQ(choice(tuner, {80, 10, true}, {8, 48}, bytes), ten_nodes[i])
        << bytes << " B, 80 ranks";
  }
  // The times themselves at 32 MiB across ten nodes: tree/LL128 82.5 + 33554432 / (1000 x 116
  // x 0.9) us; ring/Simple 1.4 x (8.4 + 138 x 3.4 + 20 x 14) + 33554432 / (1000 x 194.43) us.
  const GroupScale ten{80, 10, true};
  EXPECT_NEAR(*tuner.time_us(CollectiveOp::all_reduce, Algorithm::tree, Protocol::ll128, ten,
                             {8, 48}, 32 * kMiB),
              82.5 + 32 * kMiB / (1000 * 116 * 0.9), 1e-6);
  EXPECT_NEAR(*tuner.time_us(CollectiveOp::all_reduce, Algorithm::ring, Protocol::simple, ten,
                             {8, 48}, 32 * kMiB),
              1.4 * (8.4 + 138 * 3.4 + 20 * 14) + 32 * kMiB / (1000 * 384.0 * 80 / 158), 1e-6);
}

TEST(NcclTuner, PerChannelCeilingsBoundTheSimulatedCells) {
  const NcclTuner tuner(h100());
  const GroupScale ten{80, 10, true};
  const NcclGraph g{8, 48};
  // Tree/LL128 across more than 2 Hopper nodes: 8 channels x 29 GB/s of NCCL's bus bandwidth,
  // half of it algorithm bandwidth, nccl-tests' 2 x 79/80 of that.
  EXPECT_NEAR(
      tuner.busbw_ceiling_GBps(CollectiveOp::all_reduce, Algorithm::tree, Protocol::ll128, ten, g),
      8 * 29.0 * 0.5 * 2 * 79 / 80, 1e-9);
  EXPECT_NEAR(
      tuner.busbw_ceiling_GBps(CollectiveOp::all_reduce, Algorithm::tree, Protocol::simple, ten, g),
      8 * 36.0 * 0.5 * 2 * 79 / 80, 1e-9);
  EXPECT_DOUBLE_EQ(
      tuner.busbw_ceiling_GBps(CollectiveOp::all_reduce, Algorithm::ring, Protocol::ll128, ten, g),
      8 * 36.7);
  EXPECT_TRUE(std::isinf(tuner.busbw_ceiling_GBps(CollectiveOp::all_reduce, Algorithm::ring,
                                                  Protocol::simple, ten, g)));
}

TEST(NcclTuner, AutoRunsNcclsChoiceAndNamesTheFasterOne) {
  topology::ClusterSpec c;
  c.nodes = 10;
  const topology::Fabric fabric(c, topology::FabricSpec{});
  CollectiveSimulator sim(fabric, nullptr, h100(), make_engine("native"));
  std::vector<int> all(80);
  for (int i = 0; i < 80; ++i) all[static_cast<std::size_t>(i)] = i;
  // At 1 GiB NCCL runs ring/Simple (its table), whatever the simulation ranks first.
  const CollectiveResult big = sim.run(CollectiveOp::all_reduce, Choice{}, {all}, 1024 * kMiB);
  EXPECT_EQ(big.algorithm, Algorithm::ring);
  EXPECT_EQ(big.protocol, Protocol::simple);
  EXPECT_GT(big.nccl_predicted_s, 0.0);
  if (big.fastest_algorithm) {
    EXPECT_LT(big.fastest_time_s, big.time_s);
  }
  // The same collective forced to tree/LL128 is held to its per-channel ceiling.
  const CollectiveResult tree =
      sim.run(CollectiveOp::all_reduce, Choice{Algorithm::tree, Protocol::ll128}, {all}, 32 * kMiB);
  EXPECT_LE(tree.busbw_GBps, 8 * 29.0 * 79 / 80 + 1e-6);
  // Our own algorithms are not NCCL's: auto never runs hierarchical for an all-reduce.
  for (double mib : {1.0, 32.0, 256.0, 4096.0}) {
    const CollectiveResult r = sim.run(CollectiveOp::all_reduce, Choice{}, {all}, mib * kMiB);
    EXPECT_NE(r.algorithm, Algorithm::hierarchical) << mib << " MiB";
  }
}

}  // namespace
}  // namespace twin::netsim
