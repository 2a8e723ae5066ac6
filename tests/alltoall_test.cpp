// All-to-all at scale: weighted flows, the aggregated PXN plan against its per-GPU-pair
// members, and the closed-form solve of single-level phases against the engine.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "fabric_fixtures.hpp"
#include "netsim/closed_form.hpp"
#include "netsim/collective.hpp"
#include "netsim/engine.hpp"
#include "netsim/native_engine.hpp"
#include "topology/fabric_state.hpp"

namespace twin::netsim {
namespace {

using topology::Hop;
using topology::LinkId;
using topology::RoutingMode;

constexpr double kGiB = 1024.0 * 1024 * 1024;

Flow flow_on(std::vector<std::uint32_t> links, double bytes, double weight = 1) {
  Flow f;
  f.bytes = bytes;
  f.weight = weight;
  for (auto l : links) f.hops.push_back(Hop{LinkId(l), 1.0});
  return f;
}

std::vector<int> all_gpus(const topology::Fabric& f) {
  std::vector<int> v(static_cast<std::size_t>(f.gpu_count()));
  for (int i = 0; i < f.gpu_count(); ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

TEST(WeightedFlows, AFlowOfWeightKTakesKSharesOfEveryLink) {
  // Link 0: 4 B/s shared by A (weight 3) and B (weight 1, also on link 1 of 10 B/s).
  // Weighted max-min: level 4 / (3 + 1) = 1; A runs at 3 B/s, B at 1 B/s.
  FlowSet set;
  set.flows.push_back(flow_on({0}, 6, 3));     // A: 6 B at 3 B/s -> t = 2
  set.flows.push_back(flow_on({0, 1}, 4, 1));  // B: 2 B by t = 2, then 2 B alone at 4 B/s
  const FlowResult r = NativeEngine().run(set, {4, 10});
  EXPECT_NEAR(r.finish_s[0], 2.0, 1e-12);
  EXPECT_NEAR(r.finish_s[1], 2.5, 1e-12);
  // Exactly three unit flows of 2 B in A's place.
  FlowSet members;
  for (int k = 0; k < 3; ++k) members.flows.push_back(flow_on({0}, 2));
  members.flows.push_back(flow_on({0, 1}, 4));
  const FlowResult m = NativeEngine().run(members, {4, 10});
  EXPECT_NEAR(m.finish_s[0], r.finish_s[0], 1e-12);
  EXPECT_NEAR(m.finish_s[3], r.finish_s[1], 1e-12);
  EXPECT_NEAR(m.link_bytes[0], r.link_bytes[0], 1e-9);
}

TEST(WeightedFlows, ANonPositiveWeightIsAnError) {
  FlowSet set;
  set.flows.push_back(flow_on({0}, 1, 0));
  EXPECT_THROW(NativeEngine().run(set, {1}), core::Error);
}

/// Flows of one phase on the fabric, each with its transfer's weight.
FlowSet flows_of(const topology::Router& router, const std::vector<Transfer>& transfers) {
  FlowSet set;
  for (const auto& t : transfers) {
    set.add(router, t.src_gpu, t.dst_gpu, t.bytes);
    set.flows.back().weight = t.members;
    set.flows.back().latency_s = 0;  // as the simulator solves a phase: latency is NCCL's
  }
  return set;
}

/// The PXN all-to-all of all GPUs as its per-GPU-pair members, unaggregated: GPU i of node A
/// sends its chunk for GPU j of node B over NVLink to A's GPU on j's rail, which sends it from
/// its NIC to j's (one flow per member, each routed on its own).
std::vector<Transfer> pxn_members(const topology::Fabric& f, double bytes) {
  const int per = f.cluster().gpus_per_node, n = f.gpu_count();
  const double chunk = bytes / n;
  std::vector<Transfer> out;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      if (i == j) continue;
      const int a = i / per, b = j / per, proxy = a * per + j % per;
      if (a == b) {
        out.push_back({Transfer::Kind::gpu_to_gpu, i, j, 1, chunk});
        continue;
      }
      if (proxy != i) out.push_back({Transfer::Kind::gpu_to_gpu, i, proxy, 1, chunk});
      out.push_back({Transfer::Kind::gpu_to_gpu, proxy, j, 1, chunk});
    }
  return out;
}

void expect_same(const FlowResult& aggregated, const FlowResult& members) {
  EXPECT_NEAR(aggregated.makespan_s, members.makespan_s, 1e-9 * members.makespan_s);
  ASSERT_EQ(aggregated.link_bytes.size(), members.link_bytes.size());
  for (std::size_t l = 0; l < members.link_bytes.size(); ++l)
    ASSERT_NEAR(aggregated.link_bytes[l], members.link_bytes[l], 1e-9 * kGiB) << "link " << l;
}

class PxnAggregation : public ::testing::TestWithParam<std::tuple<RoutingMode, double>> {};

TEST_P(PxnAggregation, EqualsThePerGpuPairMembersOn64Gpus) {
  const auto [mode, oversubscription] = GetParam();
  const topology::Fabric f = test::small_three_tier(mode, oversubscription);
  const topology::Router router(f);
  const Plan plan = plan_collective(f, CollectiveOp::alltoall, Algorithm::pxn, {all_gpus(f)}, kGiB);
  ASSERT_EQ(plan.phases.size(), 1u);
  const auto& aggregated = plan.phases[0].transfers;
  const auto members = pxn_members(f, kGiB);
  // 64 x 63 pairs; 8 nodes: 8 x 8 x 7 NIC pairs + 8 x 8 x 7 NVLink pairs.
  EXPECT_EQ(aggregated.size(), 8u * 8 * 7 * 2);
  EXPECT_GT(members.size(), 64u * 63);
  double member_bytes = 0, aggregated_bytes = 0, member_count = 0;
  for (const auto& t : members) member_bytes += t.bytes;
  for (const auto& t : aggregated) {
    aggregated_bytes += t.bytes;
    member_count += t.members;
  }
  EXPECT_NEAR(aggregated_bytes, member_bytes, 1e-6);
  EXPECT_EQ(member_count, static_cast<double>(members.size()));

  const auto capacity = link_capacities(f);
  const FlowResult agg = NativeEngine().run(flows_of(router, aggregated), capacity);
  const FlowResult per_pair = NativeEngine().run(flows_of(router, members), capacity);
  expect_same(agg, per_pair);
  // Every byte leaves and enters on the destination's rail: NIC uplinks carry (m-1)/m of a
  // GPU's buffer (m = 8 nodes), NVLink uplinks the rest of the off-rail chunks.
  for (int nic = 0; nic < f.nic_count(); ++nic)
    EXPECT_NEAR(agg.link_bytes[f.cable(f.nic_cable(nic)).up.index()], kGiB * 56 / 64, 1e-6 * kGiB);

  // And the simulator (closed form where the phase is single-level) agrees with the engine.
  const calibrate::Profile profile = calibrate::load_profile("h100-sxm");
  CollectiveSimulator sim(f, nullptr, profile, make_engine("native"));
  const auto r = sim.run(CollectiveOp::alltoall, parse_choice("pxn/simple"), {all_gpus(f)}, kGiB);
  EXPECT_NEAR(r.phase_flow_s[0], per_pair.makespan_s, 1e-9 * per_pair.makespan_s);
}

INSTANTIATE_TEST_SUITE_P(Routing, PxnAggregation,
                         ::testing::Values(std::make_tuple(RoutingMode::dmodk, 1.0),
                                           std::make_tuple(RoutingMode::ecmp, 1.0),
                                           std::make_tuple(RoutingMode::adaptive, 1.0),
                                           std::make_tuple(RoutingMode::dmodk, 2.0),
                                           std::make_tuple(RoutingMode::ecmp, 2.0)));

TEST(PxnAggregation, EcmpKeepsEachNicPairOnItsOwnHashedPath) {
  // Aggregation is per NIC pair, i.e. per path: the 8 rails of one node pair are 8 flows, and
  // ECMP hashes each (src NIC, dst NIC) on its own. On this fabric the hashes of node 0 -> 7
  // spread over several core links; the aggregate carries exactly the members' bytes there.
  const topology::Fabric f = test::small_three_tier(RoutingMode::ecmp);
  const topology::Router router(f);
  std::set<std::uint32_t> spine_up;
  for (int r = 0; r < 8; ++r) {
    const auto route = router.gpu_route(0 * 8 + r, 7 * 8 + r);
    ASSERT_EQ(route.fabric_hops, 6);  // node 0 and node 7 sit in different pods
    spine_up.insert(route.hops[3].link.value());
  }
  EXPECT_GT(spine_up.size(), 1u);
  const Plan plan = plan_collective(f, CollectiveOp::alltoall, Algorithm::pxn, {all_gpus(f)}, kGiB);
  const auto capacity = link_capacities(f);
  const FlowResult agg = NativeEngine().run(flows_of(router, plan.phases[0].transfers), capacity);
  const FlowResult per_pair = NativeEngine().run(flows_of(router, pxn_members(f, kGiB)), capacity);
  for (std::uint32_t l : spine_up)
    EXPECT_NEAR(agg.link_bytes[l], per_pair.link_bytes[l], 1e-9 * kGiB);
}

TEST(PxnAggregation, ADegradedNicSlowsTheAggregateAsItSlowsTheMembers) {
  const topology::Fabric f = test::small_three_tier();
  const topology::Router router(f);
  topology::FabricState state(f);
  state.degrade_link(f.cable(f.nic_cable(13)).up, 0.5);
  const auto capacity = link_capacities(f, &state);
  const Plan plan = plan_collective(f, CollectiveOp::alltoall, Algorithm::pxn, {all_gpus(f)}, kGiB);
  const FlowResult agg = NativeEngine().run(flows_of(router, plan.phases[0].transfers), capacity);
  const FlowResult per_pair = NativeEngine().run(flows_of(router, pxn_members(f, kGiB)), capacity);
  expect_same(agg, per_pair);
  const FlowResult healthy =
      NativeEngine().run(flows_of(router, plan.phases[0].transfers), link_capacities(f));
  EXPECT_NEAR(agg.makespan_s, 2 * healthy.makespan_s, 1e-9 * healthy.makespan_s);
}

TEST(AllToAll, AutoRunsPxnWhereItAppliesAndPairwiseElsewhere) {
  const topology::Fabric f = test::small_three_tier();
  const calibrate::Profile profile = calibrate::load_profile("h100-sxm");
  CollectiveSimulator sim(f, nullptr, profile, make_engine("native"));
  EXPECT_EQ(sim.run("alltoall", "auto", {all_gpus(f)}, kGiB).algorithm, Algorithm::pxn);
  // Two GPUs of each of four nodes (an expert-parallel group under TP 4): no PXN.
  EXPECT_EQ(sim.run("alltoall", "auto", {{0, 4, 8, 12, 16, 20, 24, 28}}, kGiB).algorithm,
            Algorithm::pairwise);
  // Forced, pairwise still runs (NCCL with PXN disabled).
  EXPECT_EQ(sim.run("alltoall", "pairwise", {all_gpus(f)}, kGiB).algorithm, Algorithm::pairwise);
}

/// Routes, bytes and weights of a flow set, for the closed form.
struct Table {
  RouteTable routes;
  std::vector<double> bytes, weight;
  explicit Table(const FlowSet& set) {
    for (const auto& flow : set.flows) {
      routes.add(flow.hops);
      bytes.push_back(flow.bytes);
      weight.push_back(flow.weight);
    }
  }
};

TEST(SingleLevel, ReproducesTheEngineOnASymmetricAllToAll) {
  const topology::Fabric f = test::small_three_tier();
  const topology::Router router(f);
  const Plan plan =
      plan_collective(f, CollectiveOp::alltoall, Algorithm::pairwise, {all_gpus(f)}, kGiB);
  const FlowSet set = flows_of(router, plan.phases[0].transfers);
  const auto capacity = link_capacities(f);
  const FlowResult engine = NativeEngine().run(set, capacity);
  const Table t(set);
  const auto closed = solve_single_level(t.routes, t.bytes, t.weight, capacity);
  ASSERT_TRUE(closed.has_value());
  // Same operations as the engine: the same makespan to the bit.
  EXPECT_EQ(closed->makespan_s, engine.makespan_s);
  // Every NIC sends 56 chunks of 1 GiB / 64 at 50 GB/s; NVLink is far from the bound.
  EXPECT_NEAR(closed->makespan_s, 56.0 / 64 * kGiB / capacity[f.cable(f.nic_cable(0)).up.index()],
              1e-12);
  for (std::size_t l = 0; l < capacity.size(); ++l)
    ASSERT_NEAR(closed->link_bytes[l], engine.link_bytes[l], 1e-6) << "link " << l;
}

TEST(SingleLevel, DeclinesWhatTakesMoreThanOneRound) {
  // Max-min's classic: A on links 0 and 1, B on 0, C on 1 (10 and 4 B/s): B speeds up when
  // A and C end, so no closed form; nor when flows of one component finish at different times.
  FlowSet set;
  set.flows.push_back(flow_on({0, 1}, 2));
  set.flows.push_back(flow_on({0}, 100));
  set.flows.push_back(flow_on({1}, 2));
  const Table multi(set);
  EXPECT_FALSE(solve_single_level(multi.routes, multi.bytes, multi.weight, {10, 4}).has_value());
  FlowSet uneven;
  uneven.flows.push_back(flow_on({0}, 1));
  uneven.flows.push_back(flow_on({0}, 3));
  const Table u(uneven);
  EXPECT_FALSE(solve_single_level(u.routes, u.bytes, u.weight, {1}).has_value());
  // Two independent components that each settle at once: each finishes at its own time.
  FlowSet two;
  two.flows.push_back(flow_on({0}, 3));
  two.flows.push_back(flow_on({1}, 1));
  const Table c(two);
  const auto r = solve_single_level(c.routes, c.bytes, c.weight, {1, 1});
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->makespan_s, NativeEngine().run(two, {1, 1}).makespan_s);
  EXPECT_DOUBLE_EQ(r->makespan_s, 3.0);
  // A failed link: the engine reports it.
  EXPECT_FALSE(solve_single_level(c.routes, c.bytes, c.weight, {1, 0}).has_value());
}

TEST(WeightedFlows, SimgridRunsAWeightedFlowAsItsMembers) {
  const topology::Fabric f = test::small_three_tier();
  const topology::Router router(f);
  FlowSet set;
  set.add(router, 0, 8, 3e9);
  set.flows.back().weight = 3;
  set.add(router, 1, 8, 1e9);
  const auto capacity = link_capacities(f);
  const FlowResult native = NativeEngine().run(set, capacity);
  const FlowResult simgrid = make_engine("simgrid")->run(set, capacity);
  EXPECT_NEAR(simgrid.makespan_s, native.makespan_s, 1e-6 * native.makespan_s);
  EXPECT_NEAR(simgrid.finish_s[1], native.finish_s[1], 1e-6 * native.makespan_s);
  set.flows.back().weight = 1.5;
  EXPECT_THROW(make_engine("simgrid")->run(set, capacity), core::Error);
}

class FixedAllocation : public ::testing::TestWithParam<std::tuple<RoutingMode, double>> {};

TEST_P(FixedAllocation, ReproducesTheEngineOnAnAllToAllWithSeveralLevels) {
  const auto [mode, oversubscription] = GetParam();
  const topology::Fabric f = test::small_three_tier(mode, oversubscription);
  const topology::Router router(f);
  const Plan plan = plan_collective(f, CollectiveOp::alltoall, Algorithm::pxn, {all_gpus(f)}, kGiB);
  const FlowSet set = flows_of(router, plan.phases[0].transfers);
  const auto capacity = link_capacities(f);
  const FlowResult engine = NativeEngine().run(set, capacity);
  const Table t(set);
  const auto fixed = solve_fixed_allocation(t.routes, t.bytes, t.weight, capacity);
  ASSERT_TRUE(fixed.has_value());
  EXPECT_NEAR(fixed->makespan_s, engine.makespan_s, 1e-12 * engine.makespan_s);
  for (std::size_t l = 0; l < capacity.size(); ++l)
    ASSERT_NEAR(fixed->link_bytes[l], engine.link_bytes[l], 1e-9 * kGiB) << "link " << l;
}

TEST(FixedAllocation, AcceptsLevelsThatNeverChangeAndDeclinesOnesThatDo) {
  // X on link 0 (1 B/s); Y on links 0 and 1 (0.25 B/s): Y is held at 0.25 by link 1, X takes
  // 0.75. X ends first (1 B: t = 4/3) without crossing link 1, so Y keeps its rate: t = 4.
  FlowSet kept;
  kept.flows.push_back(flow_on({0}, 1));
  kept.flows.push_back(flow_on({0, 1}, 1));
  const Table k(kept);
  const auto r = solve_fixed_allocation(k.routes, k.bytes, k.weight, {1, 0.25});
  ASSERT_TRUE(r.has_value());
  EXPECT_DOUBLE_EQ(r->makespan_s, 4.0);
  EXPECT_DOUBLE_EQ(r->makespan_s, NativeEngine().run(kept, {1, 0.25}).makespan_s);
  // The classic: A on links 0 and 1, B on 0, C on 1 (10 and 4 B/s); A (2 B at 2 B/s) ends on
  // B's bottleneck (link 0) long before B, and B speeds up: not a fixed allocation.
  FlowSet changes;
  changes.flows.push_back(flow_on({0, 1}, 2));
  changes.flows.push_back(flow_on({0}, 100));
  changes.flows.push_back(flow_on({1}, 2));
  const Table c(changes);
  EXPECT_FALSE(solve_fixed_allocation(c.routes, c.bytes, c.weight, {10, 4}).has_value());
}

INSTANTIATE_TEST_SUITE_P(Routing, FixedAllocation,
                         ::testing::Values(std::make_tuple(RoutingMode::dmodk, 1.0),
                                           std::make_tuple(RoutingMode::ecmp, 1.0),
                                           std::make_tuple(RoutingMode::dmodk, 2.0),
                                           std::make_tuple(RoutingMode::ecmp, 2.0)));

}  // namespace
}  // namespace twin::netsim
