// The parameters fitted on the published runs: each fitted back from runs made with a known
// value, robust to one-sided outliers, the shipped profiles carrying the fit of the shipped runs,
// and the leave-one-family-out errors.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "twin/validation.hpp"
#include "twin/validation_fit.hpp"
#include "validation_fixtures.hpp"
#include "workload/kernel_cost.hpp"

namespace twin::sim {
namespace {

/// ValidationDir under its own suite name (a fixture class is one per translation unit).
class FitDir : public ValidationDir {};

TEST_F(FitDir, LeaveOneFamilyOutTrainsOnTheOtherFamily) {
  write("m1.yaml", tiny_run("m1", "megatron", "step_time_s", 1.0));
  write("m2.yaml", tiny_run("m2", "megatron", "step_time_s", 1.0));
  write("f1.yaml", tiny_run("f1", "fsdp", "step_time_s", 1.0));
  std::vector<std::set<std::string>> trained_on;
  Fitter fitter;
  fitter.description = "test double";
  fitter.parameters = 1;
  fitter.fit = [&](const std::vector<const ValidationCase*>& training) {
    std::set<std::string> families;
    for (const auto* c : training) families.insert(c->scenario.validation.family);
    trained_on.push_back(families);
    const double answer = static_cast<double>(training.size());  // 3 in-sample, 1 or 2 held out
    return FitResult{StepModel([answer](const Cluster& c) {
                       StepReport r = simulate_step(c);
                       r.step_time_s = answer;
                       return r;
                     }),
                     fmt::format("answer = {}", answer)};
  };
  const ValidationReport r = validate_directory(dir_.string(), 1, &fitter);
  ASSERT_EQ(trained_on.size(), 3U);
  EXPECT_EQ(trained_on[0], (std::set<std::string>{"megatron", "fsdp"}));  // in-sample
  EXPECT_EQ(trained_on[1], (std::set<std::string>{"fsdp"}));              // megatron held out
  EXPECT_EQ(trained_on[2], (std::set<std::string>{"megatron"}));          // fsdp held out
  EXPECT_FALSE(r.lofo_equals_in_sample);
  EXPECT_EQ(r.fitted_parameters, 1);
  // In-sample rows are the shipped step model's, whatever the fit.
  const ValidationReport shipped = validate_directory(dir_.string(), 1);
  ASSERT_EQ(r.runs.size(), shipped.runs.size());
  for (std::size_t i = 0; i < r.runs.size(); ++i)
    EXPECT_DOUBLE_EQ(r.runs[i].error_pct, shipped.runs[i].error_pct);
  ASSERT_EQ(r.leave_one_family_out.size(), 2U);
  EXPECT_NEAR(r.leave_one_family_out[0].max_abs_error_pct, 0.0, 1e-9);    // megatron: 1 run
  EXPECT_NEAR(r.leave_one_family_out[1].max_abs_error_pct, 100.0, 1e-9);  // fsdp: 2 runs
  EXPECT_NE(validation_text(r).find("1 fitted parameter:"), std::string::npos);
  EXPECT_EQ(r.fitted_values, "answer = 3");
  ASSERT_EQ(r.lofo_values.size(), 2U);
  EXPECT_EQ(r.lofo_values[0], (std::pair<std::string, std::string>{"megatron", "answer = 1"}));
}

/// Fitted parameters as given: the memory-bound efficiency, and 16-bit GEMM rates by profile.
FittedParameters fitted(double memory_bound_efficiency,
                        std::map<std::string, double> gemm16_efficiency = {}) {
  FittedParameters p;
  p.memory_bound_efficiency = memory_bound_efficiency;
  p.gemm16_efficiency = std::move(gemm16_efficiency);
  return p;
}

// The fitted parameters: runs "published" at what the step model gives with a memory-bound
// efficiency of 0.6 (step times and throughputs alike) are fitted back to 0.60, from either
// family, and then reproduced exactly. Five H100 BF16 runs are fewer than the GEMM fit needs, so
// the GEMM rate stays at the profile's prior.
TEST_F(FitDir, MemoryBoundEfficiencyIsFittedBackFromRunsMadeWithIt) {
  const StepModel truth = with_fitted(fitted(0.6));
  auto at_truth = [&](const std::string& metric, int hidden) {
    std::string text = tiny_run("x", "fsdp", metric, 1.0);
    text.replace(text.find("hidden: 1024"), 12, fmt::format("hidden: {}", hidden));
    const Cluster c(parse_scenario(text, "x.yaml"));
    return metric_value(metric, c, truth(c));
  };
  int i = 0;
  for (const auto& [family, metric] :
       {std::pair{"megatron", "step_time_s"}, std::pair{"megatron", "tokens_per_s_per_gpu"},
        std::pair{"fsdp", "tokens_per_s_per_gpu"}, std::pair{"fsdp", "step_time_s"},
        std::pair{"fsdp", "mfu"}}) {
    const int hidden = 512 * (i + 1);
    std::string text = tiny_run(fmt::format("r{}", i), family, metric, at_truth(metric, hidden));
    text.replace(text.find("hidden: 1024"), 12, fmt::format("hidden: {}", hidden));
    write(fmt::format("r{}.yaml", i++), text);
  }
  const Fitter fitter = step_model_fitter(1);
  // The efficiency alone: every shipped profile has its 16-bit GEMM rate measured.
  EXPECT_EQ(fitter.parameters, 1);
  const ValidationReport r = validate_directory(dir_.string(), 1, &fitter);
  EXPECT_EQ(r.fitted_values, "kernels.memory_bound_efficiency = 0.60 (5 runs)");
  ASSERT_EQ(r.lofo_values.size(), 2U);
  EXPECT_EQ(r.lofo_values[0].second, "kernels.memory_bound_efficiency = 0.60 (3 runs)");
  EXPECT_EQ(r.lofo_values[1].second, "kernels.memory_bound_efficiency = 0.60 (2 runs)");
  for (const auto& f : r.leave_one_family_out) EXPECT_NEAR(f.max_abs_error_pct, 0.0, 1e-6);
}

// Runs "published" at what the model gives with a memory-bound efficiency of 0.6 and a 16-bit
// GEMM efficiency of 0.7 on an H100 profile whose rate is not measured (a profile file with a
// derived prior of 0.8059, as H100's was before its rate was measured): 13 on A100, which has no
// GEMM rate to fit, and 10 such H100 BF16 runs, of different sizes and sequence lengths. The
// alternating fit recovers both: the A100 runs, a majority, pin the efficiency; then the H100
// runs the GEMM rate.
TEST_F(FitDir, GemmRateWithoutMeasurementIsFittedBackFromRunsMadeWithIt) {
  calibrate::Profile unmeasured = calibrate::load_profile("h100-sxm");
  unmeasured.kernels.gemm16_efficiency_prior =
      calibrate::Figure{0.8059, "derived: a best-of-search rate (test)"};
  write("h100-unmeasured.json", calibrate::to_json(unmeasured));
  const std::string unmeasured_path = (dir_ / "h100-unmeasured.json").string();
  const StepModel truth = with_fitted(fitted(0.6, {{"h100-sxm", 0.7}}));
  for (int i = 0; i < 23; ++i) {
    auto run = [&](double published) {
      std::string text = tiny_run(fmt::format("r{}", i), "fsdp", "tokens_per_s_per_gpu", published);
      text.replace(text.find("hidden: 1024"), 12, fmt::format("hidden: {}", 512 * (1 + i % 5)));
      text.replace(text.find("seq_len: 2048"), 13, fmt::format("seq_len: {}", i % 2 ? 512 : 4096));
      text.replace(text.find("gpu: h100-sxm"), 13,
                   i >= 10 ? std::string("gpu: a100-sxm-80gb") : "gpu: " + unmeasured_path);
      return text;
    };
    const Cluster c(parse_scenario(run(1.0), "x.yaml"));
    write(fmt::format("r{}.yaml", i), run(metric_value("tokens_per_s_per_gpu", c, truth(c))));
  }
  const auto cases = load_validation_cases(validation_files(dir_.string()));
  std::vector<const ValidationCase*> all;
  for (const auto& c : cases) all.push_back(&c);
  const FittedParameters p = fit_parameters(all, 2);
  EXPECT_DOUBLE_EQ(p.memory_bound_efficiency, 0.60);
  EXPECT_DOUBLE_EQ(p.gemm16_efficiency.at("h100-sxm"), 0.70);
  EXPECT_EQ(p.gemm16_runs.at("h100-sxm"), 10);
  EXPECT_EQ(p.text(),
            "kernels.memory_bound_efficiency = 0.60 (23 runs); h100-sxm kernels.gemm_efficiency "
            "bf16/fp16 = 0.700 (10 runs)");
}

// The fit minimizes the mean |error| of the better-agreeing half of the runs. Three runs scatter
// evenly around the model at 0.6 (-5 %, 0, +5 %); two more are published at half the speed the
// model gives (a source's inconsistent pair, both on one side). The fit stays at 0.60, where the
// three agree best; a median signed error of zero would have moved to make the +5 % run exact,
// and a plain mean |error| would have been pulled towards the pair.
TEST_F(FitDir, MemoryBoundEfficiencyFitIgnoresOneSidedOutliers) {
  const StepModel truth = with_fitted(fitted(0.6));
  const double published_over_truth[] = {1 / 0.95, 1.0, 1 / 1.05, 0.5, 0.5};
  for (int i = 0; i < 5; ++i) {
    const int hidden = 512 * (i + 1);
    auto run = [&](double published) {
      std::string text = tiny_run(fmt::format("r{}", i), "fsdp", "tokens_per_s_per_gpu", published);
      text.replace(text.find("hidden: 1024"), 12, fmt::format("hidden: {}", hidden));
      return text;
    };
    const Cluster c(parse_scenario(run(1.0), "x.yaml"));
    const double at_truth = metric_value("tokens_per_s_per_gpu", c, truth(c));
    write(fmt::format("r{}.yaml", i), run(at_truth * published_over_truth[i]));
  }
  const auto cases = load_validation_cases(validation_files(dir_.string()));
  std::vector<const ValidationCase*> all;
  for (const auto& c : cases) all.push_back(&c);
  EXPECT_DOUBLE_EQ(fit_parameters(all, 1).memory_bound_efficiency, 0.60);
}

// The shipped profiles carry the values fitted on the shipped published runs: the memory-bound
// efficiency in every profile. No shipped profile has a 16-bit GEMM rate left to fit: H100's
// and H200's are measured (on an H200, the same SMs and limit).
TEST(Validation, ShippedFittedParametersAreTheFitOfTheShippedRuns) {
  const std::string dir = std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/validation";
  const auto cases = load_validation_cases(validation_files(dir));
  std::vector<const ValidationCase*> all;
  for (const auto& c : cases) all.push_back(&c);
  const FittedParameters fitted = fit_parameters(all, 2);
  const char* refit = "run scripts/refit-profiles, rebuild, then scripts/update-validation-docs";
  for (const char* gpu : {"h100-sxm", "h200-sxm", "a100-sxm-80gb", "a100-sxm-40gb"})
    EXPECT_DOUBLE_EQ(calibrate::load_profile(gpu).kernels.memory_bound_efficiency.value,
                     fitted.memory_bound_efficiency)
        << gpu << ": " << refit;
  EXPECT_TRUE(fitted.gemm16_efficiency.empty());
  for (const char* gpu : {"h100-sxm", "h200-sxm"})
    EXPECT_FALSE(calibrate::load_profile(gpu).kernels.gemm16_efficiency_prior.has_value()) << gpu;
}

// Memory-bound kernels stream at the STREAM rate times the profile's efficiency; GEMMs keep the
// STREAM rate for their roofline.
TEST(Validation, MemoryBoundKernelsRunAtTheirFittedShareOfStream) {
  const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  const workload::KernelCoster c(h100, "bf16");
  const double e = h100.kernels.memory_bound_efficiency.value;
  EXPECT_GT(e, 0.0);
  EXPECT_LE(e, 1.0);
  EXPECT_NEAR(c.memory("m", 1e9).time_s - c.launch_s(), 1e9 / (2970e9 * e), 1e-12);
  EXPECT_DOUBLE_EQ(c.memory_kernel_Bps(), c.hbm_Bps() * e);
  EXPECT_DOUBLE_EQ(c.hbm_Bps(), 2970e9);
}

// Every shipped validation scenario states its published figure in a section this build reads,
// even where the rest of the file uses fields a build does not know yet.

}  // namespace
}  // namespace twin::sim
