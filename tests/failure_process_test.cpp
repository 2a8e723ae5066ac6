// Failure processes merged in a trial (failure_models/), and degraded-link episodes through the
// step simulation.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>
#include <vector>

#include "failure_models/trial.hpp"
#include "twin/campaign.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"

namespace twin::failures {
namespace {

/// A job that only degraded-link episodes disturb: no failures, stragglers or checkpoints.
TrialInputs links_only(double episodes_per_hour, double hours) {
  TrialInputs in;
  in.nodes = 16;
  in.gpus = 128;
  in.work_s = 200 * 86400.0;
  in.failures.rate_multiplier = 0;
  in.failures.lemon_fraction = 0;
  in.failures.straggler_rate_per_node_day = 0;
  in.cables_per_tier = {100, 50, 0};
  in.failures.degraded_link_hours = hours;
  in.failures.degraded_link_rate_per_cable_day = episodes_per_hour * 24 / 150.0;
  return in;
}

TEST(FailureProcess, DegradedLinkEpisodesOccupyTheJobLikeAnInfiniteServerQueue) {
  // Episodes arrive in wall time at rate lambda and last D: the number active is Poisson with
  // mean lambda D (M/G/inf). With step time x (1 + n / 2) for n degraded cables, the job
  // progresses at 1 / (1 + n / 2), so ETTR = E[1 / (1 + n / 2)], n ~ Poisson(lambda D).
  const double lambda_per_h = 0.25, hours = 4;  // lambda D = 1
  TrialInputs in = links_only(lambda_per_h, hours);
  std::mutex mutex;
  std::vector<int> tiers_seen(2, 0);
  int most = 0;
  in.degraded_slowdown = [&](const std::vector<int>& n) {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_EQ(n.size(), 3u);
    EXPECT_EQ(n[2], 0) << "no spine-core cables in this fabric";
    for (int k = 0; k < 2; ++k) tiers_seen[static_cast<std::size_t>(k)] += n[k] > 0 ? 1 : 0;
    most = std::max(most, n[0] + n[1]);
    return 1.0 + 0.5 * (n[0] + n[1]);
  };
  double expected = 0, p = std::exp(-1.0);  // P(n = 0)
  for (int n = 0; n < 40; ++n) {
    expected += p / (1.0 + 0.5 * n);
    p *= 1.0 / (n + 1);
  }
  double sum = 0, sum2 = 0;
  const int trials = 20;
  for (int t = 0; t < trials; ++t) {
    const double e = simulate_trial(in, 0, 3, t).ettr;
    sum += e;
    sum2 += e * e;
  }
  const double mean = sum / trials;
  const double stderr_mean = std::sqrt((sum2 / trials - mean * mean) / trials);
  // + 0.002: the first D of each 200-day trial starts with no episode.
  EXPECT_NEAR(mean, expected, 4 * stderr_mean + 0.002)
      << "Expectation: " << expected << " / Actual result: " << mean;
  EXPECT_GE(most, 3);  // P(n >= 3) = 8 %: overlapping episodes are states of their own
  // Two tiers of 100 and 50 cables: both are hit, the first about twice as often.
  EXPECT_GT(tiers_seen[0], tiers_seen[1]);
  EXPECT_GT(tiers_seen[1], 0);
}

TEST(FailureProcess, DisabledProcessesDrawNothingAndCostNothing) {
  TrialInputs in = links_only(0, 4);
  const TrialResult r = simulate_trial(in, 0, 1, 0);
  EXPECT_EQ(r.wall_s, in.work_s);  // nothing ever slows or stops the job
  EXPECT_EQ(r.interruptions, 0);
  EXPECT_EQ(r.lost_gpu_hours.at("straggling"), 0.0);
}

}  // namespace
}  // namespace twin::failures

namespace twin::sim {
namespace {

TEST(FailureProcess, DegradedLinkStepTimeComesFromTheStepSimulation) {
  const Scenario s =
      load_scenario(std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-3tier.yaml",
                    {"failures.degraded_link_factor=0.25"});
  const double healthy = simulate_step(s).step_time_s;
  const auto slowdown = degraded_link_slowdown(Cluster(s), healthy);
  // One NIC cable at a quarter of its bandwidth: node 0's rail 0, the first NIC-leaf cable.
  Scenario one = s;
  one.degraded_cables = {{0, 0.25}};
  const double expected = simulate_step(one).step_time_s / healthy;
  EXPECT_GT(expected, 1.0) << "the data-parallel ring crosses that NIC every step";
  EXPECT_DOUBLE_EQ(slowdown({1, 0, 0}), expected);
  EXPECT_DOUBLE_EQ(slowdown({1, 0, 0}), expected);  // cached: the same number again
}

TEST(FailureProcess, DegradedLinkEpisodesLengthenTheCampaign) {
  // No failures and no stragglers: without episodes the run takes exactly its healthy time.
  const std::string path = std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-3tier.yaml";
  const std::vector<std::string> quiet = {"failures.rate_multiplier=0",
                                          "failures.straggler_rate_per_node_day=0"};
  CampaignOptions o;
  o.trials = 4;
  o.threads = 2;
  EXPECT_DOUBLE_EQ(run_campaign(load_scenario(path, quiet), o).ettr.p50, 1.0);
  auto with_links = quiet;
  with_links.push_back("failures.degraded_link_rate_per_cable_day=0.01");
  const CampaignReport links = run_campaign(load_scenario(path, with_links), o);
  // Every episode slows the job by its state's step-time factor (a few percent for one cable):
  // ETTR drops below 1, and by less than the factor of a cable of each tier degraded at once.
  EXPECT_LT(links.ettr.p50, 1.0);
  const Scenario sc = load_scenario(path, with_links);
  const double worst =
      degraded_link_slowdown(Cluster(sc), simulate_step(sc).step_time_s)({1, 1, 1});
  EXPECT_GT(links.ettr.p50, 1.0 / worst);
}

}  // namespace
}  // namespace twin::sim
