#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "core/error.hpp"
#include "failure_models/failures.hpp"
#include "twin/campaign.hpp"

namespace twin::sim {
namespace {

/// Exponential node failures only: no lemons, stragglers, SDC, checkpoint cost or repair wait.
CampaignInputs simple(int nodes, double node_mtbf_h, double work_days) {
  CampaignInputs in;
  in.nodes = nodes;
  in.gpus = nodes * 8;
  in.work_s = work_days * 86400;
  in.failures.node_mtbf_hours = node_mtbf_h;
  in.failures.lemon_fraction = 0;
  in.failures.straggler_rate_per_node_day = 0;
  in.recovery.checkpoint_write_s = 0;
  in.recovery.checkpoint_interval_min = 60;
  in.recovery.detection_min = 0;
  in.recovery.restart_min = 10;
  in.recovery.hot_spares = nodes;
  in.recovery.repair_hours = 1;
  return in;
}

TEST(Campaign, RatesComeFromTheLlama3Table) {
  // 419 unexpected interruptions in 54 days on 2,048 nodes: the same job sees 7.76 a day.
  CampaignInputs in;
  in.nodes = 2048;
  in.gpus = 16384;
  in.failures.rate_multiplier = 1.0;
  EXPECT_NEAR(job_failure_rate(in) * 86400, 419.0 / 54, 1e-9);
  // Job MTBF scales as 1/N: a job 24x larger fails 24x as often.
  CampaignInputs small = in;
  small.nodes = 64;
  CampaignInputs large = in;
  large.nodes = 64 * 24;
  EXPECT_NEAR(job_failure_rate(large) / job_failure_rate(small), 24.0, 1e-12);
}

TEST(Campaign, EttrMatchesRenewalTheory) {
  // Fixed interval tau, restart R, exponential failures at job rate lambda, free checkpoints:
  // each tau of work takes E[T] = (e^{lambda tau} - 1)(1/lambda + R), so ETTR = tau / E[T].
  const CampaignInputs in = simple(100, 1000.0, 60.0);  // job MTBF 10 h
  const double lambda = job_failure_rate(in), tau = 3600.0, R = 600.0;
  const CampaignInputs& fixed = in;
  double sum = 0, sum2 = 0;
  const int trials = 300;
  for (int t = 0; t < trials; ++t) {
    const double e = run_trial(fixed, tau, 7, t).ettr;
    sum += e;
    sum2 += e * e;
  }
  const double mean = sum / trials;
  const double stderr_mean = std::sqrt((sum2 / trials - mean * mean) / trials);
  const double expected = tau / ((std::exp(lambda * tau) - 1) * (1 / lambda + R));
  EXPECT_NEAR(mean, expected, 4 * stderr_mean + 0.002)
      << "Expectation: " << expected << " / Actual result: " << mean;
}

TEST(Campaign, AJob24TimesLargerSeesFailures24TimesAsOften) {
  CampaignOptions o;
  o.trials = 40;
  o.threads = 2;
  const CampaignReport small = run_campaign(simple(20, 2000.0, 200.0), o);
  const CampaignReport large = run_campaign(simple(480, 2000.0, 200.0), o);
  EXPECT_NEAR(large.interruptions_per_day / small.interruptions_per_day, 24.0, 24.0 * 0.08);
}

TEST(Campaign, DeterministicPerSeedAndAcrossThreads) {
  CampaignInputs in = simple(64, 500.0, 20.0);
  in.failures.straggler_rate_per_node_day = 0.01;
  in.straggler_slowdown = 1.2;
  CampaignOptions one;
  one.trials = 30;
  one.threads = 1;
  CampaignOptions two = one;
  two.threads = 2;
  EXPECT_EQ(campaign_json(run_campaign(in, one)), campaign_json(run_campaign(in, two)));
  CampaignOptions other = one;
  other.seed = 2;
  EXPECT_NE(campaign_json(run_campaign(in, one)), campaign_json(run_campaign(in, other)));
}

TEST(Campaign, YoungDalyIsNearTheBestIntervalAndStragglersCost) {
  CampaignInputs in = simple(512, 500.0, 30.0);
  in.recovery.checkpoint_write_s = 60;
  in.recovery.checkpoint_interval_min = 0;  // Young/Daly
  in.failures.straggler_rate_per_node_day = 0.01;
  in.straggler_slowdown = 1.3;
  CampaignOptions o;
  o.trials = 64;
  o.threads = 2;
  const CampaignReport r = run_campaign(in, o);
  EXPECT_NEAR(r.young_daly_s, std::sqrt(2 * 60.0 / job_failure_rate(in)), 1e-9);
  EXPECT_GE(r.best_interval_s, 0.35 * r.young_daly_s);
  EXPECT_LE(r.best_interval_s, 2.8 * r.young_daly_s);
  EXPECT_GT(r.ettr_without_stragglers.p50, r.ettr.p50);
  EXPECT_GT(r.lost_gpu_hours.at("straggling"), 0);
}

TEST(Campaign, SilentCorruptionIsDetectedAndRecovered) {
  // The Llama 3 cause mix includes silent data corruption: it is detected later and recovered.
  CampaignInputs in = simple(256, 0, 30.0);
  in.failures.node_mtbf_hours = 0;
  in.failures.lemon_fraction = 0;
  in.failures.sdc_detection_hours = 12;
  in.recovery.checkpoint_write_s = 30;
  CampaignOptions o;
  o.trials = 20;
  const CampaignReport r = run_campaign(in, o);
  // Each node failure is silent corruption with probability (SDC rate) / (all node causes):
  // 6 of 419 events in the Llama 3 table, weighted by exposure (per GPU for SDC).
  double total = 0, sdc = 0;
  for (const auto& c : failures::llama3_causes()) {
    const double units = c.exposure == failures::Exposure::gpu     ? 8
                         : c.exposure == failures::Exposure::nic   ? 8
                         : c.exposure == failures::Exposure::cable ? 8 * 3
                                                                   : 1;
    total += c.per_unit_day * units;
    if (c.silent) sdc += c.per_unit_day * units;
  }
  double all = 0;
  for (const auto& [cause, n] : r.interruptions_by_cause) all += n;
  const double observed = r.interruptions_by_cause.at("Silent Data Corruption");
  const double expected = all * sdc / total;  // per trial; Poisson over 20 trials
  EXPECT_NEAR(observed, expected, 4 * std::sqrt(expected / o.trials) + 0.05)
      << "Expectation: " << expected << " / Actual result: " << observed;
}

TEST(Campaign, BadInputIsAClearError) {
  failures::FailureSpec f;
  failures::RecoverySpec r;
  auto field = [](auto fn) {
    try {
      fn();
    } catch (const core::Error& e) {
      return e.field();
    }
    return std::string("no error");
  };
  f.rate_multiplier = -1;
  EXPECT_EQ(field([&] { failures::validate(f, r, 512, 30); }), "failures.rate_multiplier");
  f = {};
  f.weibull_shape = 0;
  EXPECT_EQ(field([&] { failures::validate(f, r, 512, 30); }), "failures.weibull_shape");
  f = {};
  r.checkpoint_interval_min = 60 * 24 * 40;
  EXPECT_EQ(field([&] { failures::validate(f, r, 512, 30); }), "recovery.checkpoint_interval_min");
  r = {};
  r.hot_spares = 600;
  EXPECT_EQ(field([&] { failures::validate(f, r, 512, 30); }), "recovery.hot_spares");
  EXPECT_EQ(field([&] { load_scenario("", {"recovery.checkpoint_interval_min=often"}); }),
            "recovery.checkpoint_interval_min");
}

TEST(Campaign, DefaultScenarioWritesIncrementalHdf5) {
  CampaignOptions o;
  o.trials = 8;
  o.out_dir = ::testing::TempDir() + "/campaign";
  const CampaignReport r = run_campaign(load_scenario(""), o);
  EXPECT_GT(r.interruptions_per_day, 1.0);  // ~1.9 a day for 4,096 GPUs at Llama 3 rates
  EXPECT_LT(r.interruptions_per_day, 3.0);
  EXPECT_GT(r.ettr.p50, 0.5);
  EXPECT_LT(r.ettr.p50, 1.0);
  std::ifstream h5(o.out_dir + "/campaign.h5", std::ios::binary);
  EXPECT_TRUE(h5.good());
}

}  // namespace
}  // namespace twin::sim

namespace twin::sim {
namespace {

CampaignInputs job4096() {
  CampaignInputs in;
  in.nodes = 512;
  in.gpus = 4096;
  in.replicas = 128;
  in.leaves = 128;
  in.nodes_per_leaf = 32;
  in.work_s = 20 * 86400.0;
  in.checkpoint_bytes = 14.0 * 70e9;
  in.straggler_slowdown = 1.1;
  return in;
}

double p50(const CampaignInputs& in) {
  CampaignOptions o;
  o.trials = 24;
  o.threads = 2;
  return run_campaign(in, o).ettr.p50;
}

TEST(Campaign, CorrelatedLeafFailuresTakeManyNodesAtOnce) {
  CampaignInputs in = job4096();
  const double base = p50(in);
  in.failures.leaf_switch_mtbf_hours = 5000;  // 128 leaves: one every ~39 h
  CampaignOptions o;
  o.trials = 24;
  const CampaignReport r = run_campaign(in, o);
  EXPECT_GT(r.interruptions_by_cause.at("Leaf switch (correlated)"), 5.0);
  EXPECT_GT(r.spares_used, run_campaign(job4096(), o).spares_used);  // 32 nodes per outage
  EXPECT_LT(r.ettr.p50, base);
}

TEST(Campaign, ElasticModeBeatsWaitingForRepairsWithoutSpares) {
  CampaignInputs waiting = job4096();
  waiting.recovery.hot_spares = 0;
  CampaignInputs elastic = waiting;
  elastic.recovery.elastic = true;
  EXPECT_GT(p50(elastic), p50(waiting));
}

TEST(Campaign, AsynchronousCheckpointsPauseLess) {
  CampaignInputs sync = job4096();
  sync.recovery.storage_write_GBps = 50;  // 980 GB in 19.6 s
  CampaignInputs async = sync;
  async.recovery.async_checkpoint = true;
  EXPECT_NEAR(checkpoint_pause_s(sync), 980e9 / 50e9, 1e-9);
  EXPECT_NEAR(checkpoint_pause_s(async), 980e9 / 4096 / 63e9, 1e-12);
  EXPECT_GT(p50(async), p50(sync));
}

TEST(Campaign, RestartsGrowWithNcclInitializationAtScale) {
  CampaignInputs fast = job4096();
  fast.recovery.nccl_init_s_per_1k_gpus = 0;
  CampaignInputs slow = fast;
  slow.recovery.nccl_init_s_per_1k_gpus = 120;  // pre-optimization NCCL init (MegaScale)
  EXPECT_GT(p50(fast), p50(slow));
}

}  // namespace
}  // namespace twin::sim
