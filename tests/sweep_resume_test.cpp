// Sweeps: points are counted and checked before work, and a resumed sweep reuses only the rows
// whose fingerprint (study, scenario after overrides, options, profile, version) matches.
#include <gtest/gtest.h>

#include "test_helpers.hpp"
#include "twin/sweep.hpp"

namespace twin::sim {
namespace {

using test::error_of;

ScenarioText small() {
  return ScenarioText::read(std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-3tier.yaml");
}

TEST(SweepInput, ValuesAreCheckedAndCountedBeforeWork) {
  EXPECT_NE(std::string(error_of([] { (void)parse_vary("k=1,,2"); }).what()).find("empty value"),
            std::string::npos);
  EXPECT_NE(std::string(error_of([] { (void)parse_vary("k=1,2,1"); }).what()).find("twice"),
            std::string::npos);
  // 1:1e9:1 is 10^9 values: refused from the count, nothing generated.
  EXPECT_NE(
      std::string(error_of([] { (void)parse_vary("k=1:1e9:1"); }).what()).find("1000000000 values"),
      std::string::npos);
  EXPECT_EQ(parse_vary("k=1:1e3:1", 1000).values.size(), 1000u);
  EXPECT_THROW((void)parse_vary("k=1:inf:1"), core::Error);
  // A key varied twice would cross itself; a product over the cap is refused.
  const std::vector<Vary> twice{parse_vary("fabric.tiers=2,3"), parse_vary("fabric.tiers=3")};
  EXPECT_NE(std::string(error_of([&] { (void)sweep_points(small(), {}, twice); }).what())
                .find("varied twice"),
            std::string::npos);
  const std::vector<Vary> big{parse_vary("cluster.nic_gbps=100:400:100"),
                              parse_vary("fabric.oversubscription=1,2")};
  EXPECT_EQ(sweep_points(small(), {}, big).size(), 8u);
  EXPECT_NE(std::string(error_of([&] { (void)sweep_points(small(), {}, big, 7); }).what())
                .find("more than 7 points"),
            std::string::npos);
}

struct Study {
  std::vector<Vary> vary{parse_vary("fabric.oversubscription=1,2")};
  std::vector<SweepPoint> points;
  std::vector<std::string> fingerprints;
  Study(const std::vector<std::string>& base, const SweepSettings& s) {
    points = sweep_points(small(), base, vary);
    const std::string study = study_fingerprint(small(), base, vary);
    for (const auto& p : points)
      fingerprints.push_back(point_fingerprint(study, small(), p, s).text());
  }
  [[nodiscard]] std::map<std::string, PointResult> rows() const {
    std::map<std::string, PointResult> out;
    for (const auto& p : points) {
      PointResult r;
      r.index = p.index;
      r.label = p.label;
      r.status = "ok";
      r.fingerprint = fingerprints[static_cast<std::size_t>(p.index)];
      out[p.label] = r;
    }
    return out;
  }
};

TEST(SweepResume, ReusesOnlyMatchingPointsAndSaysWhy) {
  SweepSettings s;
  const Study first({}, s);
  // The same study again: every row is reused.
  EXPECT_EQ(plan_resume(first.rows(), first.points, first.fingerprints, "out").reuse.size(), 2u);
  // Other campaign options: nothing reused, one note naming the options.
  SweepSettings campaign = s;
  campaign.campaign = true;
  campaign.seed = 7;
  const Study seeded({}, campaign);
  const ResumePlan plan = plan_resume(first.rows(), seeded.points, seeded.fingerprints, "out");
  EXPECT_TRUE(plan.reuse.empty());
  ASSERT_EQ(plan.notes.size(), 1u);
  EXPECT_NE(plan.notes[0].find("recomputing 2 point(s) of out: the options differ"),
            std::string::npos)
      << plan.notes[0];
  // Another --set (here the token budget, which changes every answer): another study, refused.
  const Study tokens({"training.tokens=1e12"}, s);
  const core::Error e =
      error_of([&] { (void)plan_resume(first.rows(), tokens.points, tokens.fingerprints, "out"); });
  EXPECT_EQ(e.field(), "--out");
  EXPECT_NE(e.reason().find("another sweep"), std::string::npos);
}

TEST(SweepResume, FingerprintsNameTheirParts) {
  const Fingerprint a{"s", "p", "o", "h", "v"};
  EXPECT_EQ(Fingerprint::parse(a.text()).text(), a.text());
  Fingerprint b = a;
  b.profile = "x";
  EXPECT_NE(b.difference(a).find("hardware profile"), std::string::npos);
  b = a;
  b.version = "x";
  EXPECT_NE(b.difference(a).find("version"), std::string::npos);
  EXPECT_TRUE(Fingerprint::parse("garbage").study.empty());
}

TEST(SweepResume, CsvWithoutFingerprintsIsNotTrusted) {
  SweepSettings s;
  const std::string old_header = "index,point,status,gpus\n0,\"a=1\",ok,64,\"\"\n";
  EXPECT_NE(std::string(error_of([&] { (void)read_csv(old_header, s); }).what())
                .find("older clustertwin"),
            std::string::npos);
  PointResult r;
  r.index = 3;
  r.label = "fabric.tiers=2";
  r.status = "ok";
  r.fingerprint = "a-b-c-d-e";
  r.metrics = {{"gpus", 64}};
  const auto back = read_csv(csv_header(s) + csv_row(r, s), s);
  ASSERT_EQ(back.count("fabric.tiers=2"), 1u);
  EXPECT_EQ(back.at("fabric.tiers=2").fingerprint, "a-b-c-d-e");
  EXPECT_EQ(back.at("fabric.tiers=2").index, 3);
  EXPECT_DOUBLE_EQ(back.at("fabric.tiers=2").metric("gpus"), 64);
}

}  // namespace
}  // namespace twin::sim
