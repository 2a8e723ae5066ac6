// Bad input of every kind ends in a clear core::Error naming the field, value and reason, before
// any work; numbers here are derivable by hand (see each comment).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "calibrate/nccl_tests.hpp"
#include "core/file.hpp"
#include "core/parallel.hpp"
#include "core/text.hpp"
#include "failure_models/failures.hpp"
#include "test_helpers.hpp"
#include "topology/bom.hpp"
#include "topology/fabric.hpp"
#include "twin/scenario.hpp"
#include "twin/yaml_reader.hpp"

namespace twin::sim {
namespace {

using test::error_of;

Scenario with(const std::vector<std::string>& overrides) {
  return parse_scenario(default_scenario_yaml(), "<default>", overrides);
}

std::string reason_of(const std::vector<std::string>& overrides) {
  return error_of([&] { (void)with(overrides); }).what();
}

TEST(StrictNumbers, RealsMustBeFiniteAndInRange) {
  for (const char* v : {".inf", "-.inf", ".nan", "inf", "nan"})
    EXPECT_NE(reason_of({std::string("costs.node_usd=") + v}).find("finite"), std::string::npos)
        << v;
  EXPECT_NE(reason_of({"training.tokens=1e400"}).find("range of a double"), std::string::npos);
  EXPECT_NE(reason_of({"costs.pue=fast"}).find("expected a number"), std::string::npos);
  EXPECT_DOUBLE_EQ(with({"costs.pue=+1.5"}).costs.pue, 1.5);
}

TEST(StrictNumbers, IntegersAreExactAndDoNotWrap) {
  // 3,000,000,000 does not fit an int: refused, not wrapped to -1,294,967,296.
  const std::string wrap = reason_of({"cluster.nodes=3000000000"});
  EXPECT_NE(wrap.find("out of range"), std::string::npos) << wrap;
  EXPECT_EQ(wrap.find("-1,294"), std::string::npos);
  EXPECT_NE(reason_of({"cluster.nodes=2.5"}).find("not a fraction"), std::string::npos);
  // Exactly integral real notation is an integer.
  EXPECT_EQ(with({"cluster.nodes=1e2", "fabric.tiers=2"}).cluster.nodes, 100);
  EXPECT_NE(reason_of({"fabric.routing_seed=-1"}).find("must not be negative"), std::string::npos);
  std::int64_t s = 0;
  std::uint64_t u = 0;
  EXPECT_TRUE(detail::parse_integer("18446744073709551615", 0, UINT64_MAX, s, u).empty());
  EXPECT_EQ(u, UINT64_MAX);
  EXPECT_FALSE(detail::parse_integer("18446744073709551616", 0, UINT64_MAX, s, u).empty());
}

TEST(StrictNumbers, MessagesNeverShowWrappedCounts) {
  // 1e9 nodes x 8 GPUs = 8e9 GPUs: the message states it, not an int wrapped negative.
  const std::string r = error_of([] {
                          const Scenario s = with({"cluster.nodes=1e9"});
                          const topology::Fabric fabric(s.cluster, s.fabric);
                        }).what();
  EXPECT_NE(r.find("8,000,000,000 GPUs"), std::string::npos) << r;
  EXPECT_NE(r.find("1,048,576"), std::string::npos) << r;
  EXPECT_EQ(r.find("-5"), std::string::npos) << r;
}

TEST(ScenarioInput, DuplicateKeysAreErrorsNotFirstWins) {
  const std::string yaml = "schema_version: 1\ncluster:\n  nodes: 4\n  nodes: 8\n";
  const core::Error e = error_of([&] { (void)parse_scenario(yaml, "dup.yaml"); });
  EXPECT_EQ(e.field(), "cluster.nodes");
  EXPECT_NE(e.reason().find("lines 3 and 4"), std::string::npos) << e.what();
  EXPECT_EQ(e.file(), "dup.yaml");
}

TEST(ScenarioInput, EmptySetValueIsAnErrorNotTheDefault) {
  const core::Error e = error_of([] { (void)with({"fabric.tiers="}); });
  EXPECT_EQ(e.field(), "fabric.tiers");
  EXPECT_NE(e.reason().find("empty value"), std::string::npos);
  EXPECT_NE(reason_of({"fabric..tiers=2"}).find("empty key"), std::string::npos);
}

TEST(ScenarioInput, UnknownGpuIsRefusedEvenWithoutAJob) {
  const std::string yaml = "schema_version: 1\ncluster: {nodes: 4, gpu: nosuchgpu}\n";
  const core::Error e = error_of([&] { (void)parse_scenario(yaml, "f.yaml"); });
  EXPECT_EQ(e.field(), "cluster.gpu");
  EXPECT_NE(e.reason().find("'h100-sxm'"), std::string::npos);
}

TEST(ScenarioInput, PerturbationsAreCheckedAgainstTheCluster) {
  EXPECT_NE(reason_of({"perturbations.slow_gpu.gpu=4096"}).find("has 4,096"), std::string::npos);
  EXPECT_NE(reason_of({"perturbations.failed_cables=[x]"}).find("expected an integer"),
            std::string::npos);
  EXPECT_NE(reason_of({"perturbations.failed_switches=[[a]]"}).find("spine[3]"), std::string::npos);
  // A fabric-only scenario: the switch name is checked against the fabric it would build.
  const Scenario s = with({"perturbations.failed_switches=[\"spine[999]\"]"});
  const topology::Fabric fabric(s.cluster, s.fabric);
  EXPECT_NE(
      std::string(error_of([&] { (void)fabric_state(s, fabric); }).what()).find("spine[0..127]"),
      std::string::npos);
}

TEST(ScenarioInput, AbsurdTrainingAndCostValuesAreRefused) {
  EXPECT_NE(reason_of({"training.tokens=1e30"}).find("beyond any data set"), std::string::npos);
  EXPECT_NE(reason_of({"training.price_per_gpu_hour=-2"}).find("negative"), std::string::npos);
  EXPECT_NE(reason_of({"costs.nic_usd_per_100gbps=-1"}).find("negative"), std::string::npos);
}

TEST(ScenarioInput, OverridesAreRecordedForTheHeader) {
  EXPECT_EQ(with({"cluster.nodes=16"}).overrides, std::vector<std::string>{"cluster.nodes=16"});
}

TEST(Files, NonRegularAndHugeInputsAreRefused) {
  EXPECT_NE(std::string(error_of([] { (void)core::read_text_file("/dev/zero", "log"); }).what())
                .find("not a regular file"),
            std::string::npos);
  EXPECT_NE(std::string(error_of([] { (void)core::read_text_file("/tmp", "log"); }).what())
                .find("directory"),
            std::string::npos);
  const std::string path = ::testing::TempDir() + "clustertwin_big_input.txt";
  std::ofstream(path) << std::string(2048, 'x');
  EXPECT_EQ(core::read_text_file(path, "log").size(), 2048u);
  EXPECT_NE(std::string(error_of([&] { (void)core::read_text_file(path, "log", 1024); }).what())
                .find("more than"),
            std::string::npos);
  // --out: a file or a device is refused before any work.
  EXPECT_EQ(error_of([&] { core::prepare_output_dir(path); }).field(), "--out");
  EXPECT_NE(std::string(error_of([] { core::prepare_output_dir("/dev/null"); }).what())
                .find("not a directory"),
            std::string::npos);
  std::filesystem::remove(path);
}

TEST(Threads, RequestsAreCappedByItemsAndTheLimit) {
  EXPECT_EQ(core::worker_threads(40000, 1'000'000), core::kMaxWorkerThreads);
  EXPECT_EQ(core::worker_threads(8, 3), 3);
  EXPECT_EQ(core::worker_threads(-3, 5), std::min(5, core::worker_threads(0, 5)));
  EXPECT_GE(core::worker_threads(0, 0), 1);
  // Results still arrive in order with more threads asked for than items.
  std::vector<int> order;
  core::ordered_parallel(
      5, 64, [](int i) { return i * i; }, [&](int i, int sq) { order.push_back(sq - i * i + i); });
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4}));
}

TEST(Fingerprint, IsStableFnv1a) {
  // FNV-1a 64 of "" is the offset basis; of "a" the published test vector af63dc4c8601ec8c.
  EXPECT_EQ(core::fingerprint(""), "cbf29ce484222325");
  EXPECT_EQ(core::fingerprint("a"), "af63dc4c8601ec8c");
}

}  // namespace
}  // namespace twin::sim

namespace twin::topology {
namespace {

using test::error_of;

Bom bom_of(int nodes, int tiers, int radix, double oversubscription = 1.0) {
  ClusterSpec c;
  c.nodes = nodes;
  FabricSpec f;
  f.tiers = tiers;
  f.switch_radix = radix;
  f.oversubscription = oversubscription;
  return compute_bom(Fabric(c, f));
}

TEST(FatTreeSizing, CostFollowsTheGpusNotTheRadix) {
  // 8 nodes x 8 rails: 8 leaves of 8 NICs, each with 8 uplinks (1:1); 3 tiers add 8 spines of 8
  // down / 8 up and 8 cores: 24 switches, 64 + 64 + 64 = 192 cables, at radix 64 or 256 alike
  // (before: 264 switches and 17,472 cables at radix 256).
  for (int radix : {64, 256, 100000}) {
    const Bom b = bom_of(8, 3, radix);
    EXPECT_EQ(b.switches_total(), 24) << radix;
    EXPECT_EQ(b.cables_total(), 192) << radix;
  }
  // 2 tiers: 8 leaves with 8 uplinks all fit one spine of 64 ports: 9 switches, 128 cables.
  EXPECT_EQ(bom_of(8, 2, 64).switches_total(), 9);
  EXPECT_EQ(bom_of(8, 2, 256).switches_total(), 9);
  EXPECT_EQ(bom_of(8, 2, 256).cables_total(), 128);
  // Full leaves are unchanged: the reference 4,096-GPU tree keeps 320 switches.
  EXPECT_EQ(bom_of(512, 3, 64).switches_total(), 320);
}

TEST(FatTreeSizing, OversubscriptionIsBuiltExactlyOrRefused) {
  ClusterSpec c;
  c.nodes = 8;
  FabricSpec f;
  f.switch_radix = 8;
  f.oversubscription = 2;
  // 2:1 of 8 ports: 4 down / 2 up (not 5 / 2 = 2.5:1).
  EXPECT_EQ(FatTreeGeometry::derive(c, f).leaf_down, 4);
  EXPECT_EQ(FatTreeGeometry::derive(c, f).leaf_up, 2);
  // 3:1 on 8 nodes per rail: leaves of 6 hold 6 + 2 nodes on 2 + 2 uplinks = 2:1 as built.
  f.oversubscription = 3;
  const core::Error e = error_of([&] { (void)FatTreeGeometry::derive(c, f); });
  EXPECT_EQ(e.field(), "fabric.oversubscription");
  EXPECT_NE(e.reason().find("2:1, not 3:1"), std::string::npos) << e.what();
  // 12 nodes fill two leaves of 6 per rail: built as 3:1.
  c.nodes = 12;
  EXPECT_DOUBLE_EQ(compute_bom(Fabric(c, f)).leaf_oversubscription, 3.0);
  // No whole split of 8 ports is within 1% of 1.1:1.
  f.oversubscription = 1.1;
  EXPECT_NE(std::string(error_of([&] { (void)FatTreeGeometry::derive(c, f); }).what())
                .find("closest it allows is 1:1 (4 down / 4 up)"),
            std::string::npos);
}

}  // namespace
}  // namespace twin::topology

namespace twin::failures {
namespace {

using test::error_of;

TEST(Progress, DalyEfficiencyMatchesTheClosedForm) {
  // M = 1 h, C = 60 s, R = 600 s: max over tau of e^{-R/M} tau / (M (e^{(tau+C)/M} - 1)) is
  // 0.701 near tau = sqrt(2 C M) = 657 s (e^{-1/6} = 0.846 times 657 / (3600 x 0.2204)).
  EXPECT_NEAR(best_efficiency(1.0 / 3600, 60, 600, 1e6), 0.701, 0.003);
  EXPECT_DOUBLE_EQ(best_efficiency(0, 60, 600, 1e6), 1.0);
}

TEST(Progress, RatesThatAllowNoProgressAreRefused) {
  FailureSpec f;
  RecoverySpec r;
  f.rate_multiplier = 1e300;
  const core::Error e = error_of([&] { validate(f, r, 512, 40); });
  EXPECT_EQ(e.field(), "failures.rate_multiplier");
  EXPECT_NE(e.reason().find("never finish"), std::string::npos);
  f.rate_multiplier = 1;
  r.checkpoint_write_s = 1e12;
  EXPECT_EQ(error_of([&] { validate(f, r, 512, 40); }).field(), "recovery.checkpoint_write_s");
  r.checkpoint_write_s = 60;
  validate(f, r, 512, 40);  // the reference campaign is fine
}

}  // namespace
}  // namespace twin::failures

namespace twin::calibrate {
namespace {

using test::error_of;

const char* kHeader =
    "# nccl-tests all_reduce_perf\n"
    "#       size    count   type  redop  root    time   algbw   busbw #wrong     time   algbw   "
    "busbw #wrong\n";

TEST(NcclTestsInput, AHeaderWithoutAlgbwIsAnErrorNotACrash) {
  // "speed" where nccl-tests writes "algbw" (in either block) used to index tokens[-1].
  const std::string in_place =
      "#  size count type redop root time algbw busbw #wrong time speed busbw #wrong\n"
      "   1024   256 float sum  -1  10.0  0.10  0.18  0  10.0  0.10  0.18  0\n"
      "# Avg bus bandwidth : 0.18\n";
  EXPECT_NE(
      std::string(error_of([&] { (void)parse_nccl_tests(in_place, "l.log", "all_reduce"); }).what())
          .find("lacks size/time/algbw/busbw"),
      std::string::npos);
  const std::string out_of_place =
      "#  size count type redop root time speed busbw #wrong time algbw busbw #wrong\n"
      "   1024   256 float sum  -1  10.0  0.10  0.18  0  10.0  0.10  0.18  0\n"
      "# Avg bus bandwidth : 0.18\n";
  EXPECT_THROW((void)parse_nccl_tests(out_of_place, "l.log", "all_reduce"), core::Error);
}

TEST(NcclTestsInput, RowsWithWrongResultsAreWarnedAndExcluded) {
  const std::string log = std::string(kHeader) +
                          "   1024   256 float sum  -1  10.0  0.10  0.18  0  10.0  0.10  0.18  0\n"
                          "   2048   512 float sum  -1  11.0  0.19  0.33  3  11.0  0.19  0.33  0\n"
                          "   4096  1024 float sum  -1  12.0  0.34  0.60  0  12.0  0.34  0.60  "
                          "N/A\n"
                          "# Avg bus bandwidth : 0.3\n";
  const NcclTestsLog parsed = parse_nccl_tests(log, "w.log");
  ASSERT_EQ(parsed.runs.size(), 1u);
  ASSERT_EQ(parsed.runs[0].rows.size(), 2u);
  EXPECT_DOUBLE_EQ(parsed.runs[0].rows[1].size_bytes, 4096);
  ASSERT_EQ(parsed.warnings.size(), 1u);
  EXPECT_NE(parsed.warnings[0].find("line 4: 3 wrong result(s) at 2048 bytes"), std::string::npos)
      << parsed.warnings[0];
}

TEST(NcclTestsInput, GarbledCountsAreErrors) {
  const std::string log = std::string("# 99999999999999 nodes x 8\n") + kHeader +
                          "   1024   256 float sum  -1  10.0  0.10  0.18  0  10.0  0.10  0.18  0\n"
                          "# Avg bus bandwidth : 0.18\n";
  EXPECT_THROW((void)parse_nccl_tests(log, "g.log"), core::Error);
}

}  // namespace
}  // namespace twin::calibrate
