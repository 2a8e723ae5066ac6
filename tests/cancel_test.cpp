// Cooperative cancellation: a campaign or a sweep cancelled from another thread stops within a
// second, and what it finished before is complete on disk.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "core/cancel.hpp"
#include "twin/campaign.hpp"
#include "twin/sweep.hpp"

namespace twin::sim {
namespace {

using Clock = std::chrono::steady_clock;

/// Cancels `token` after `delay` on its own thread; records when.
class CancelLater {
 public:
  CancelLater(core::CancelToken& token, std::chrono::milliseconds delay)
      : thread_([this, &token, delay] {
          std::this_thread::sleep_for(delay);
          at_ = Clock::now();
          token.cancel();
        }) {}
  ~CancelLater() {
    if (thread_.joinable()) thread_.join();
  }
  /// Seconds from the cancellation to now (joins the thread first).
  double seconds_since() {
    thread_.join();
    return std::chrono::duration<double>(Clock::now() - at_).count();
  }

 private:
  Clock::time_point at_;
  std::thread thread_;
};

CampaignInputs busy_job() {
  CampaignInputs in;
  in.nodes = 64;
  in.gpus = 512;
  in.work_s = 30 * 86400.0;
  in.failures.node_mtbf_hours = 2000;
  in.recovery.hot_spares = 64;
  in.recovery.checkpoint_interval_min = 720;  // a few hundred events per trial, not thousands
  return in;
}

hsize_t rows(const std::string& path, const std::string& dataset) {
  H5::H5File file(path, H5F_ACC_RDONLY);
  hsize_t dims[1] = {0};
  file.openDataSet(dataset).getSpace().getSimpleExtentDims(dims);
  return dims[0];
}

TEST(Cancel, CampaignStopsWithinASecondAndKeepsFinishedTrials) {
  core::CancelToken token;
  CampaignOptions o;
  o.trials = 50'000;  // minutes of work: only a cancellation ends this test in time
  o.threads = 2;
  o.out_dir = ::testing::TempDir() + "/cancel_campaign";
  o.cancel = &token;
  CancelLater later(token, std::chrono::milliseconds(500));
  std::string what;
  try {
    run_campaign(busy_job(), o);
    ADD_FAILURE() << "the campaign was not cancelled";
  } catch (const core::Cancelled& e) {
    what = e.what();
  }
  const double latency_s = later.seconds_since();
  EXPECT_LT(latency_s, 1.0) << "Expectation: < 1 s / Actual result: " << latency_s << " s";
  // The message and the file agree on how many trials finished, and they are trials 0..n-1.
  const hsize_t n = rows(o.out_dir + "/campaign.h5", "/trials/trial");
  EXPECT_GT(n, 0u) << what;
  EXPECT_LT(n, 50'000u);
  EXPECT_EQ(what.rfind(std::to_string(n) + " of 50000 trials finished", 0), 0u) << what;
  H5::H5File file(o.out_dir + "/campaign.h5", H5F_ACC_RDONLY);
  std::vector<double> index(n);
  file.openDataSet("/trials/trial").read(index.data(), H5::PredType::NATIVE_DOUBLE);
  for (hsize_t i = 0; i < n; ++i) EXPECT_EQ(index[i], static_cast<double>(i));
}

TEST(Cancel, ALongTrialStopsInside) {
  // Job MTBF 36 s against 100 years of work: tens of millions of events in one trial.
  CampaignInputs in = busy_job();
  in.failures.node_mtbf_hours = 0.64;
  in.work_s = 100 * 365 * 86400.0;
  core::CancelToken token;
  CancelLater later(token, std::chrono::milliseconds(200));
  EXPECT_THROW(run_trial(in, 3600, 1, 0, nullptr, &token), core::Cancelled);
  EXPECT_LT(later.seconds_since(), 1.0);
}

TEST(Cancel, SweepStopsWithinASecondAndKeepsFinishedPoints) {
  const ScenarioText scenario =
      ScenarioText::read(std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-3tier.yaml");
  std::vector<Vary> vary = {parse_vary("training.tokens=1e9:4e11:1e9")};  // 400 points
  const auto points = sweep_points(scenario, {}, vary);
  ASSERT_EQ(points.size(), 400u);
  SweepSettings s;
  s.campaign = true;  // a point takes long enough that 400 do not finish before the cancel
  s.trials = 20;
  const std::string path = ::testing::TempDir() + "/cancel_sweep.h5";
  core::CancelToken token;
  std::vector<int> done;
  // Cancelled as soon as the first point is written (not after a fixed delay, which a loaded
  // machine could spend before finishing any point).
  Clock::time_point cancelled_at;
  {
    SweepHdf5 h5(path);
    EXPECT_THROW(run_points(
                     scenario, points, s, 2,
                     [&](const PointResult& r) {
                       h5.write(r);
                       done.push_back(r.index);
                       if (done.size() == 1) {
                         cancelled_at = Clock::now();
                         token.cancel();
                       }
                     },
                     false, &token),
                 core::Cancelled);
  }
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - cancelled_at).count(), 1.0);
  ASSERT_FALSE(done.empty());
  EXPECT_LT(done.size(), points.size());
  for (std::size_t i = 0; i < done.size(); ++i) EXPECT_EQ(done[i], static_cast<int>(i));
  H5::H5File file(path, H5F_ACC_RDONLY);
  EXPECT_EQ(file.getNumObjs(), done.size());  // one group per finished point
}

TEST(Cancel, ACancelledPointIsNotRecordedAsAnError) {
  core::CancelToken token;
  token.cancel();
  const ScenarioText scenario =
      ScenarioText::read(std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-3tier.yaml");
  const auto points = sweep_points(scenario, {}, {parse_vary("fabric.oversubscription=1")});
  EXPECT_THROW(run_point(scenario, points[0], SweepSettings{}, &token), core::Cancelled);
}

}  // namespace
}  // namespace twin::sim
