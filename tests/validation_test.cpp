#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/error.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "twin/validation.hpp"
#include "validation_fixtures.hpp"

namespace twin::sim {
namespace {

using test::error_of;

TEST(ValidationSpec, ParsesAndRejectsBadSections) {
  const Scenario s = parse_scenario(tiny_run("a", "fsdp", "step_time_s", 1.5), "a.yaml");
  ASSERT_TRUE(s.has_validation);
  EXPECT_EQ(s.validation.family, "fsdp");
  EXPECT_EQ(s.validation.metric, "step_time_s");
  EXPECT_DOUBLE_EQ(s.validation.published, 1.5);
  EXPECT_EQ(s.validation.source, "test fixture");
  EXPECT_FALSE(load_scenario("").has_validation);

  const auto family =
      error_of([] { parse_scenario(tiny_run("a", "megatorn", "mfu", 0.4), "a.yaml"); });
  EXPECT_EQ(family.field(), "validation.family");
  EXPECT_EQ(family.file(), "a.yaml");
  EXPECT_NE(family.reason().find("did you mean 'megatron'"), std::string::npos) << family.what();
  const auto metric =
      error_of([] { parse_scenario(tiny_run("a", "fsdp", "tflops", 100), "a.yaml"); });
  EXPECT_EQ(metric.field(), "validation.metric");
  EXPECT_EQ(error_of([] { parse_scenario(tiny_run("a", "fsdp", "mfu", -1), "a.yaml"); }).field(),
            "validation.published");
  const auto unknown = error_of(
      [] { parse_scenario(tiny_run("a", "fsdp", "mfu", 0.4) + "  publisehd: 3\n", "a.yaml"); });
  EXPECT_EQ(unknown.field(), "validation.publisehd");
  const auto no_source = error_of([] {
    parse_scenario("schema_version: 1\nvalidation: {family: fsdp, metric: mfu, published: 0.4}\n",
                   "a.yaml");
  });
  EXPECT_EQ(no_source.field(), "validation.source");
}

// Qwen3-30B-A3B's attention: 32 query heads and 4 KV heads of width 128 on hidden 2048, so the
// projections are 2048 x (4096 + 2 x 512) + 4096 x 2048 = 18,874,368 parameters, and the score
// FLOPs 4 T s (32 x 128) per layer; without head_dim both would use hidden / heads = 64.
TEST(ModelShape, HeadDimOtherThanHiddenOverHeads) {
  const Scenario s = parse_scenario(
      "schema_version: 1\nmodel: {layers: 48, hidden: 2048, heads: 32, kv_heads: 4, head_dim: 128, "
      "ffn_hidden: 768, vocab: 151936, seq_len: 4096, experts: 128, top_k: 8, "
      "expert_ffn_hidden: 768}\n",
      "qwen3.yaml");
  EXPECT_EQ(s.model.kv_channels(), 128);
  EXPECT_DOUBLE_EQ(s.model.attention_params(), 18874368.0);
  EXPECT_DOUBLE_EQ(s.model.attention_score_flops(1), 48 * 4.0 * 4096 * 4096 * 4096);
  workload::ModelSpec plain = s.model;
  plain.head_dim = 0;
  EXPECT_EQ(plain.kv_channels(), 64);
  EXPECT_DOUBLE_EQ(plain.attention_params(), 2048.0 * (2048 + 2 * 256) + 2048.0 * 2048);
  // hidden / heads need not be whole when head_dim is given (GPT-OSS: 2880 / 64 heads of 64).
  EXPECT_NO_THROW(parse_scenario(
      "schema_version: 1\nmodel: {layers: 2, hidden: 2880, heads: 64, kv_heads: 8, head_dim: 64, "
      "ffn_hidden: 2880, vocab: 1000, seq_len: 128}\n",
      "oss.yaml"));
  const auto e = error_of([] { simulate_step(load_scenario("", {"model.head_dim=-1"})); });
  EXPECT_EQ(e.field(), "model.head_dim");
}

// Expectation: each metric is the step report's figure, and the model-FLOP metric is Narayanan et
// al.'s 72 B s l h^2 (1 + s/(6h) + V/(12 l h)) per step for this GPT-style model.
TEST(Validation, MetricsAreTheStepFiguresAndTheFlopsClosedForm) {
  const Scenario s = parse_scenario(tiny_run("a", "fsdp", "step_time_s", 1.0), "a.yaml");
  const Cluster c(s);
  const StepReport r = simulate_step(c);
  const double B = 16, seq = 2048, l = 4, h = 1024, V = 32768;
  const double flops = 72.0 * B * seq * l * h * h * (1 + seq / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(metric_value("tflops_per_gpu", c, r) * r.step_time_s * 8 * 1e12, flops, 1e-9 * flops);
  EXPECT_NEAR(metric_value("tokens_per_s_per_gpu", c, r) * r.step_time_s * 8, B * seq, 1e-6);
  EXPECT_DOUBLE_EQ(metric_value("step_time_s", c, r), r.step_time_s);
  EXPECT_DOUBLE_EQ(metric_value("mfu", c, r), r.tflops_per_gpu / r.peak_tflops);
  EXPECT_NEAR(metric_value("time_to_train_days", c, r), 1e9 / (B * seq) * r.step_time_s / 86400,
              1e-12);
  EXPECT_EQ(error_of([&] { metric_value("flops", c, r); }).field(), "validation.metric");
  for (const auto& m : validation_metrics()) EXPECT_NO_THROW(metric_value(m, c, r)) << m;
}

// Expectation: a wall-clock time to train is the steps' time when nothing interrupts them and no
// checkpoint pauses them, and longer once failures and checkpoints count.
TEST(Validation, WallClockDaysAddFailuresAndCheckpointsToTheSteps) {
  const std::string base = tiny_run("a", "fsdp", "wall_clock_days", 1.0);
  const std::string quiet =
      std::regex_replace(base, std::regex("recovery: \\{hot_spares: 0\\}"),
                         "recovery: {hot_spares: 0, checkpoint_write_s: 0}\n"
                         "failures: {rate_multiplier: 0, straggler_rate_per_node_day: 0}");
  const Scenario calm = parse_scenario(quiet, "calm.yaml");
  const StepReport r = simulate_step(calm);
  EXPECT_NEAR(metric_value("wall_clock_days", Cluster(calm), r), r.time_to_train_days,
              1e-9 * r.time_to_train_days);
  // A 10-trillion-token run (weeks on this node) with the default failure and recovery models:
  // at least its Young/Daly checkpoints pause it.
  const Scenario real = parse_scenario(
      std::regex_replace(base, std::regex("tokens: 1.0e9"), "tokens: 1.0e13"), "real.yaml");
  const Cluster cluster(real);
  const StepReport rr = simulate_step(cluster);
  const double wall = metric_value("wall_clock_days", cluster, rr);
  EXPECT_GT(wall, rr.time_to_train_days);
  EXPECT_LT(wall, 1.5 * rr.time_to_train_days);
  EXPECT_DOUBLE_EQ(wall, metric_value("wall_clock_days", cluster, rr));  // seeded
}

// Expectation: the campaign behind a wall-clock figure simulates its straggling step on the step
// model it is given (a candidate during a fit), not on the shipped profile: under a model where
// the straggler takes 3x the healthy step the slowdown is exactly 3, and with straggler episodes
// a day on the node the run takes longer.
TEST(Validation, WallClockCampaignRunsItsStepsOnTheGivenModel) {
  const Cluster cluster(
      parse_scenario(std::regex_replace(tiny_run("a", "fsdp", "wall_clock_days", 1.0),
                                        std::regex("tokens: 1.0e9"), "tokens: 1.0e13") +
                         "failures: {straggler_rate_per_node_day: 1}\n",
                     "a.yaml"));
  const StepReport healthy = simulate_step(cluster);
  const StepModel slow_straggler = [&](const Cluster& c) {
    StepReport r = simulate_step(c);
    if (c.scenario().slow_gpu >= 0) r.step_time_s = 3 * healthy.step_time_s;
    return r;
  };
  CampaignOptions o;
  o.trials = 10;
  o.threads = 1;
  const double shipped = run_campaign(cluster, o, &healthy).straggler_slowdown;
  EXPECT_GT(shipped, 1.0);
  EXPECT_LT(shipped, 3.0);
  o.step = slow_straggler;
  EXPECT_DOUBLE_EQ(run_campaign(cluster, o, &healthy).straggler_slowdown, 3.0);
  EXPECT_GT(metric_value("wall_clock_days", cluster, healthy, slow_straggler),
            metric_value("wall_clock_days", cluster, healthy));
}

// Expectation: published at twice the simulated step time is an error of -50 %; published at
// 1/1.25 of it, +25 %; median of {50, 25} = 37.5, max 50. A broken file and a file without a
// validation section are rows with their error and leave the summary alone.
TEST_F(ValidationDir, ErrorsPerRunAndPerFamilyByHand) {
  const double step_s =
      simulate_step(parse_scenario(tiny_run("x", "fsdp", "step_time_s", 1.0), "x.yaml"))
          .step_time_s;
  write("fsdp/slow.yaml", tiny_run("slow", "fsdp", "step_time_s", 2.0 * step_s));
  write("fsdp/fast.yaml", tiny_run("fast", "fsdp", "step_time_s", step_s / 1.25));
  write("megatron/exact.yaml", tiny_run("exact", "megatron", "step_time_s", step_s));
  write("megatron/broken.yaml", "schema_version: 1\nmodel: {layers: [4\n");
  write("megatron/unknown-field.yaml",
        tiny_run("unknown-field", "megatron", "step_time_s", 1.0) + "fancy: true\n");
  write("plain.yaml", "schema_version: 1\nname: plain\n");
  write("notes.txt", "not a scenario");

  const ValidationReport r = validate_directory(dir_.string(), 2);
  ASSERT_EQ(r.runs.size(), 6U);  // sorted by path; notes.txt is not a scenario
  EXPECT_EQ(r.runs[0].name, "fast");
  EXPECT_NEAR(run_named(r, "slow").error_pct, -50.0, 1e-9);
  EXPECT_NEAR(run_named(r, "fast").error_pct, 25.0, 1e-9);
  EXPECT_NEAR(run_named(r, "exact").error_pct, 0.0, 1e-9);
  EXPECT_DOUBLE_EQ(run_named(r, "exact").simulated, step_s);
  EXPECT_EQ(run_named(r, "slow").source, "test fixture");

  const ValidationRun& broken = run_named(r, "broken");
  EXPECT_FALSE(broken.ok);
  EXPECT_NE(broken.error.find("malformed YAML"), std::string::npos) << broken.error;
  const ValidationRun& unknown = run_named(r, "unknown-field");
  EXPECT_FALSE(unknown.ok);
  EXPECT_EQ(unknown.family, "megatron");  // the row still says what was published
  EXPECT_DOUBLE_EQ(unknown.published, 1.0);
  EXPECT_EQ(broken.family, "");  // malformed: nothing is known about it
  EXPECT_NE(unknown.error.find("fancy"), std::string::npos) << unknown.error;
  EXPECT_NE(run_named(r, "plain").error.find("validation"), std::string::npos);

  ASSERT_EQ(r.families.size(), 2U);
  EXPECT_EQ(r.families[0].family, "megatron");
  EXPECT_EQ(r.families[0].runs, 1);
  EXPECT_EQ(r.families[0].failed, 1);  // unknown-field.yaml
  EXPECT_NEAR(r.families[0].max_abs_error_pct, 0.0, 1e-9);
  EXPECT_EQ(r.families[1].family, "fsdp");
  EXPECT_EQ(r.families[1].runs, 2);
  EXPECT_NEAR(r.families[1].median_abs_error_pct, 37.5, 1e-9);
  EXPECT_NEAR(r.families[1].max_abs_error_pct, 50.0, 1e-9);
  // The bar's counts: runs within 5 % and within 12 % (megatron's one run is exact; fsdp's two
  // are 25 % and 50 % off).
  EXPECT_EQ(r.families[0].within_5, 1);
  EXPECT_EQ(r.families[0].within_12, 1);
  EXPECT_EQ(r.families[1].within_5, 0);
  EXPECT_EQ(r.families[1].within_12, 0);
  // slow, fast and exact are one configuration to the model (the same simulated step), and their
  // published figures (2, 0.8 and 1 step) are more than 1.12 / 0.88 apart: no model can match
  // all three within 12 %, and the report says so.
  ASSERT_EQ(r.indistinguishable.size(), 1U);
  EXPECT_EQ(r.indistinguishable[0].published.size(), 3U);
  EXPECT_DOUBLE_EQ(r.indistinguishable[0].simulated, step_s);
  EXPECT_NE(validation_text(r).find("cannot tell apart"), std::string::npos);

  // Nothing is fitted: leave-one-family-out is the in-sample result, and the output says so.
  EXPECT_TRUE(r.lofo_equals_in_sample);
  EXPECT_EQ(r.fitted_parameters, 0);
  const std::string text = validation_text(r);
  EXPECT_NE(text.find("equal the in-sample errors"), std::string::npos) << text;
  EXPECT_NE(text.find("not simulated: "), std::string::npos);

  const auto j = nlohmann::json::parse(validation_json(r));
  ASSERT_EQ(j["runs"].size(), 6U);
  for (const auto& run : j["runs"])
    for (const char* key :
         {"name", "family", "metric", "published", "simulated", "error_pct", "source"})
      EXPECT_TRUE(run.contains(key)) << key;
  EXPECT_TRUE(j["runs"][2]["simulated"].is_null());  // megatron/broken.yaml
  EXPECT_TRUE(j["runs"][2].contains("error"));
  EXPECT_FALSE(j["runs"][0].contains("error"));
  EXPECT_DOUBLE_EQ(j["families"]["fsdp"]["median_abs_error_pct"].get<double>(), 37.5);
  EXPECT_EQ(j["families"]["fsdp"]["runs"].get<int>(), 2);
  EXPECT_TRUE(j["leave_one_family_out"]["equals_in_sample"].get<bool>());
}

TEST_F(ValidationDir, RunsAreGroupedByWhereTheirSimulatedStepGoes) {
  // Each run's step splits into GEMMs, attention, memory-bound, launch-bound and the rest; every
  // class puts each simulated run in exactly one share band, so its bands count every run once.
  write("a.yaml", tiny_run("a", "fsdp", "step_time_s", 1.0));
  std::string unfused = tiny_run("b", "fsdp", "step_time_s", 1.0);
  unfused.replace(unfused.find("training: {"), 11, "training: {attention: unfused, ");
  write("b.yaml", unfused);
  write("broken.yaml", "schema_version: 1\nmodel: {layers: [4\n");
  const ValidationReport r = validate_directory(dir_.string(), 1);
  for (const char* name : {"a", "b"}) {
    const TimeShares& s = run_named(r, name).shares;
    EXPECT_NEAR(s.gemm + s.attention + s.memory + s.launch + s.outside_kernels, 1.0, 1e-12);
    EXPECT_GT(s.gemm, 0.0);
    EXPECT_GT(s.attention, 0.0);
    EXPECT_GE(s.outside_kernels, 0.0);
  }
  // Unfused attention moves the s x s scores through HBM: a larger share of the step.
  EXPECT_GT(run_named(r, "b").shares.attention, run_named(r, "a").shares.attention);

  const auto bands = summarize_time_shares(r.runs);
  for (const auto& name : time_share_classes()) {
    int runs = 0;
    for (const auto& f : bands)
      if (f.family.starts_with(name + " ")) {
        runs += f.runs;
        EXPECT_EQ(f.failed, 0) << f.family;  // a run that did not simulate has no shares
      }
    EXPECT_EQ(runs, 2) << name;
  }
  EXPECT_THROW(time_share(TimeShares{}, "tensor cores"), core::Error);
  EXPECT_NE(validation_text(r).find("share of the step"), std::string::npos);
  EXPECT_NE(validation_markdown(r).find("| attention "), std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  EXPECT_NEAR(j["runs"][0]["time_shares"]["GEMM"].get<double>(), run_named(r, "a").shares.gemm,
              1e-12);
  EXPECT_FALSE(j["runs"][2].contains("time_shares"));  // broken.yaml
  EXPECT_TRUE(j["by_time_share"].is_object());
}

TEST_F(ValidationDir, ErrorsPerGpuKind) {
  const std::string h100 = tiny_run("x", "fsdp", "step_time_s", 1.0);
  std::string a100 = h100;
  a100.replace(a100.find("gpu: h100-sxm"), 13, "gpu: a100-sxm-80gb");
  const double h100_s = simulate_step(parse_scenario(h100, "h.yaml")).step_time_s;
  const double a100_s = simulate_step(parse_scenario(a100, "a.yaml")).step_time_s;
  ASSERT_GT(a100_s, h100_s);  // the same job is slower on the older GPU
  auto renamed = [](std::string text, const std::string& name, double published) {
    text.replace(text.find("name: x"), 7, "name: " + name);
    text.replace(text.find("published: 1"), 12, fmt::format("published: {:.17g}", published));
    return text;
  };
  write("h100-exact.yaml", renamed(h100, "h100-exact", h100_s));
  write("a100-slow.yaml", renamed(a100, "a100-slow", 2.0 * a100_s));
  write("a100-fast.yaml", renamed(a100, "a100-fast", a100_s / 1.25));
  write("broken.yaml", "schema_version: 1\nmodel: {layers: [4\n");

  const ValidationReport r = validate_directory(dir_.string(), 2);
  EXPECT_EQ(run_named(r, "a100-slow").gpu, "a100-sxm-80gb");
  EXPECT_EQ(run_named(r, "broken").gpu, "");
  std::map<std::string, FamilySummary> by;
  for (const auto& g : summarize_gpus(r.runs)) by[g.family] = g;
  ASSERT_EQ(by.size(), 3U);
  EXPECT_EQ(by["h100-sxm"].runs, 1);
  EXPECT_NEAR(by["h100-sxm"].max_abs_error_pct, 0.0, 1e-9);
  EXPECT_EQ(by["a100-sxm-80gb"].runs, 2);
  EXPECT_NEAR(by["a100-sxm-80gb"].median_abs_error_pct, (50.0 + 25.0) / 2, 1e-9);
  EXPECT_EQ(by["-"].failed, 1);
  EXPECT_NE(validation_text(r).find("By GPU (cluster.gpu)"), std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  EXPECT_EQ(j["by_gpu"]["a100-sxm-80gb"]["runs"].get<int>(), 2);
  EXPECT_EQ(j["runs"][0]["gpu"].get<std::string>(), "a100-sxm-80gb");  // a100-fast.yaml
}

TEST(Validation, RunsAreGroupedByFamilyAndJobSize) {
  // Bands of one node, then factors of four: 8 | 9-32 | ... | 513-2048 | over 2048, per family;
  // runs that did not simulate are left out of the bands.
  auto run = [](const std::string& family, int gpus, double error_pct, bool ok = true) {
    ValidationRun r;
    r.family = family;
    r.metric = "step_time_s";
    r.gpus = gpus;
    r.ok = ok;
    r.published = 1.0;
    r.simulated = 1.0 + error_pct / 100;
    r.error_pct = error_pct;
    return r;
  };
  const std::vector<ValidationRun> runs{run("fsdp", 8, -10),      run("fsdp", 9, 4),
                                        run("fsdp", 32, 2),       run("fsdp", 512, 1),
                                        run("fsdp", 513, 0),      run("megatron", 4096, -20),
                                        run("fsdp", 64, 0, false)};
  std::map<std::string, FamilySummary> by;
  for (const auto& f : summarize_scales(runs)) by[f.family] = f;
  ASSERT_EQ(by.size(), 5U);
  EXPECT_EQ(by["fsdp 1-8 GPUs"].runs, 1);
  EXPECT_EQ(by["fsdp 9-32 GPUs"].runs, 2);
  EXPECT_NEAR(by["fsdp 9-32 GPUs"].median_abs_error_pct, 3.0, 1e-12);
  EXPECT_EQ(by["fsdp 129-512 GPUs"].runs, 1);
  EXPECT_EQ(by["fsdp 513-2048 GPUs"].runs, 1);
  EXPECT_EQ(by["megatron over 2048 GPUs"].runs, 1);
  // A step time simulated 20 % short is a speed 25 % high.
  EXPECT_NEAR(by["megatron over 2048 GPUs"].median_speed_error_pct, 25.0, 1e-9);
  EXPECT_EQ(by.count("fsdp 33-128 GPUs"), 0U);  // its only run did not simulate
}

TEST_F(ValidationDir, EachRunKnowsItsJobSize) {
  std::string text = tiny_run("tp2", "fsdp", "step_time_s", 1.0);
  text.replace(text.find("tp: 1, pp: 1, dp: 8"), 19, "tp: 2, pp: 1, dp: 4");
  write("tp2.yaml", text);
  const ValidationReport r = validate_directory(dir_.string(), 1);
  EXPECT_EQ(run_named(r, "tp2").gpus, 8);
  EXPECT_NE(validation_text(r).find("By family and job size"), std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  EXPECT_EQ(j["runs"][0]["gpus"].get<int>(), 8);
  EXPECT_EQ(j["by_scale"]["fsdp 1-8 GPUs"]["runs"].get<int>(), 1);
}

TEST_F(ValidationDir, FlopsPerTokenAreCheckedAgainstTheSourcesCount) {
  // The tiny GPT's model FLOPs per token by Narayanan et al.'s closed form (the whole square):
  // 72 l h^2 (1 + s/(6h) + V/(12 l h)) = 72 x 4 x 1024^2 x (1 + 1/3 + 2/3) = 603,979,776. A
  // source printing 10,000 tokens/s per GPU and 6.04 TFLOP/s counts the same; one printing 10 %
  // less TFLOP/s counts 1/0.9 of it fewer, and is listed.
  const double per_token = 72.0 * 4 * 1024 * 1024 * 2;
  auto with_tflops = [](std::string text, double tflops) {
    return text + fmt::format("  published_tflops_per_gpu: {:.17g}\n", tflops);
  };
  write("same.yaml", with_tflops(tiny_run("same", "megatron", "tokens_per_s_per_gpu", 1e4),
                                 1e4 * per_token / 1e12));
  write("fewer.yaml", with_tflops(tiny_run("fewer", "megatron", "tokens_per_s_per_gpu", 1e4),
                                  0.9e4 * per_token / 1e12));
  write("none.yaml", tiny_run("none", "megatron", "tokens_per_s_per_gpu", 1e4));
  const ValidationReport r = validate_directory(dir_.string(), 1);
  EXPECT_NEAR(run_named(r, "same").flops_ratio, 1.0, 1e-12);
  EXPECT_NEAR(run_named(r, "fewer").flops_ratio, 1.0 / 0.9, 1e-12);
  EXPECT_EQ(run_named(r, "none").flops_ratio, 0.0);
  const std::string text = validation_text(r);
  EXPECT_NE(text.find("1 of 2 runs within 1 %; the others:\n  fewer: 1.111x"), std::string::npos)
      << text;
  EXPECT_NE(validation_markdown(r).find("- fewer: 1.111x"), std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  for (const auto& run : j["runs"]) {
    if (run["name"] == "none") {
      EXPECT_TRUE(run["flops_per_token_ratio"].is_null());
    }
    if (run["name"] == "fewer") {
      EXPECT_NEAR(run["flops_per_token_ratio"].get<double>(), 1.0 / 0.9, 1e-12);
    }
  }

  // The figure needs tokens/s beside it, and must be positive.
  const auto metric = error_of([&] {
    parse_scenario(with_tflops(tiny_run("a", "fsdp", "step_time_s", 1.0), 300), "a.yaml");
  });
  EXPECT_EQ(metric.field(), "validation.published_tflops_per_gpu");
  EXPECT_NE(metric.reason().find("tokens_per_s_per_gpu"), std::string::npos) << metric.what();
  EXPECT_EQ(error_of([&] {
              parse_scenario(with_tflops(tiny_run("a", "fsdp", "tokens_per_s_per_gpu", 1e4), -3),
                             "a.yaml");
            }).field(),
            "validation.published_tflops_per_gpu");
}

TEST_F(ValidationDir, SpeedBiasIsSignedAndGroupedByGpuAndPrecision) {
  // Step times: published twice the simulated one (simulated 2x faster: +100 %) and 1/1.25 of
  // it (simulated slower: -20 %); a rate published at half the simulated one: +100 %.
  auto named = [](const std::string& name, const std::string& metric, double published,
                  const std::string& precision) {
    std::string text = tiny_run(name, "fsdp", metric, published);
    text.replace(text.find("precision: bf16"), 15, "precision: " + precision);
    return text;
  };
  const double step_s =
      simulate_step(parse_scenario(named("x", "step_time_s", 1, "bf16"), "x.yaml")).step_time_s;
  write("slow.yaml", named("slow", "step_time_s", 2.0 * step_s, "bf16"));
  write("fast.yaml", named("fast", "step_time_s", step_s / 1.25, "bf16"));
  const StepReport fp8 = simulate_step(parse_scenario(named("r", "step_time_s", 1, "fp8"), "r"));
  write("rate.yaml",
        named("rate", "tokens_per_s_per_gpu", 0.5 * fp8.tokens_per_s / fp8.gpus, "fp8"));

  const ValidationReport r = validate_directory(dir_.string(), 2);
  EXPECT_NEAR(speed_error_pct(run_named(r, "slow")), 100.0, 1e-9);
  EXPECT_NEAR(run_named(r, "slow").error_pct, -50.0, 1e-9);
  EXPECT_NEAR(speed_error_pct(run_named(r, "fast")), -20.0, 1e-9);
  EXPECT_NEAR(speed_error_pct(run_named(r, "rate")), 100.0, 1e-9);
  std::map<std::string, FamilySummary> by;
  for (const auto& g : summarize_gpu_precisions(r.runs)) by[g.family] = g;
  ASSERT_EQ(by.size(), 2U);
  EXPECT_EQ(by["h100-sxm bf16"].runs, 2);
  EXPECT_NEAR(by["h100-sxm bf16"].median_speed_error_pct, (100.0 - 20.0) / 2, 1e-9);
  EXPECT_NEAR(by["h100-sxm fp8"].median_speed_error_pct, 100.0, 1e-9);
  EXPECT_NEAR(summarize(r.runs).at(0).median_speed_error_pct, 100.0, 1e-9);  // of 3
  EXPECT_NE(validation_text(r).find("By GPU and GEMM precision"), std::string::npos);
  const auto j = nlohmann::json::parse(validation_json(r));
  EXPECT_EQ(j["by_gpu_precision"]["h100-sxm fp8"]["runs"].get<int>(), 1);
  EXPECT_NEAR(j["families"]["fsdp"]["median_speed_error_pct"].get<double>(), 100.0, 1e-9);
  EXPECT_EQ(j["runs"][1]["precision"].get<std::string>(), "fp8");  // rate.yaml
}

TEST_F(ValidationDir, IndistinguishableRunsAreFlaggedOnlyBeyondWhatOneValueCanMatch) {
  // One value is within 12 % of both a and b only if b / a <= 1.12 / 0.88 = 1.2727.
  write("a.yaml", tiny_run("a", "fsdp", "tokens_per_s_per_gpu", 1000.0));
  write("b.yaml", tiny_run("b", "fsdp", "tokens_per_s_per_gpu", 1250.0));
  EXPECT_TRUE(validate_directory(dir_.string(), 1).indistinguishable.empty());
  write("c.yaml", tiny_run("c", "fsdp", "tokens_per_s_per_gpu", 1300.0));
  const ValidationReport r = validate_directory(dir_.string(), 1);
  ASSERT_EQ(r.indistinguishable.size(), 1U);
  EXPECT_EQ(r.indistinguishable[0].published.size(), 3U);
  EXPECT_EQ(r.indistinguishable[0].metric, "tokens_per_s_per_gpu");
  EXPECT_NE(validation_json(r).find("\"indistinguishable\""), std::string::npos);
}

TEST_F(ValidationDir, SameResultsOnAnyThreadCount) {
  for (int i = 0; i < 4; ++i)
    write(fmt::format("r{}.yaml", i), tiny_run(fmt::format("r{}", i), i % 2 ? "fsdp" : "megatron",
                                               "tokens_per_s_per_gpu", 1000.0 * (i + 1)));
  EXPECT_EQ(validation_json(validate_directory(dir_.string(), 1)),
            validation_json(validate_directory(dir_.string(), 3)));
}

// A fitter sees only the other family's runs when a family is held out; its step model predicts
// the held-out runs. This one fits a single number per family set (a test double, not a model).
TEST(Validation, ShippedScenariosStateTheirPublishedFigure) {
  const std::string dir = std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/validation";
  const auto cases = load_validation_cases(validation_files(dir));
  EXPECT_GE(cases.size(), 250U);
  std::set<std::string> names;
  for (const auto& c : cases) {
    EXPECT_TRUE(c.scenario.has_validation) << c.path << ": " << c.error;
    EXPECT_FALSE(c.scenario.validation.source.empty()) << c.path;
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate name " << c.name;
  }
}

TEST(Validation, MissingDirectoryIsAnError) {
  EXPECT_EQ(error_of([] { validate_directory("/nonexistent/validation", 1); }).file(),
            "/nonexistent/validation");
}

}  // namespace
}  // namespace twin::sim
