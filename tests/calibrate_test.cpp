#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "calibrate/calibration.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_data.hpp"
#include "core/error.hpp"
#include "test_helpers.hpp"

namespace twin::calibrate {
namespace {

const std::string kData = CLUSTERTWIN_TEST_DATA;

using test::error_of;

TEST(NcclTests, ReadsThePublicH100Log) {
  const NcclTestsLog log = read_nccl_tests(kData + "/nccl-tests/h100-1node-8gpu-all_reduce.log");
  ASSERT_EQ(log.runs.size(), 1u);
  const NcclTestsRun& run = log.runs[0];
  EXPECT_EQ(run.op, "all_reduce");
  ASSERT_EQ(run.rows.size(), 10u);
  EXPECT_DOUBLE_EQ(run.rows[0].size_bytes, 33554432);
  EXPECT_DOUBLE_EQ(run.rows[0].time_us, 182.87);
  EXPECT_DOUBLE_EQ(run.rows[0].busbw_GBps, 321.10);
  EXPECT_DOUBLE_EQ(run.rows[0].inplace_busbw_GBps, 321.08);
  EXPECT_EQ(run.rows[0].root, -1);
  EXPECT_DOUBLE_EQ(run.rows[9].busbw_GBps, 482.27);
  EXPECT_DOUBLE_EQ(*run.avg_busbw_GBps, 437.957);
  // Scale from the file's "1 node x 8" annotation (it has no "# Using devices" block).
  EXPECT_EQ(log.nodes, 1);
  EXPECT_EQ(log.gpus_per_node, 8);
  // nccl-tests' own busbw = algbw * 2(n-1)/n.
  EXPECT_NEAR(run.rows[0].algbw_GBps * bus_factor("all_reduce", 8), run.rows[0].busbw_GBps, 0.01);
}

TEST(NcclTests, ReadsTheOldFormatV100LogAndInfersAllReduce) {
  const NcclTestsLog log = read_nccl_tests(kData + "/nccl-tests/v100-8node-degraded.log");
  ASSERT_EQ(log.runs.size(), 1u);
  EXPECT_EQ(log.runs[0].op, "all_reduce");  // busbw/algbw = 1.97 > 1: only all-reduce
  ASSERT_EQ(log.runs[0].rows.size(), 2u);
  EXPECT_DOUBLE_EQ(log.runs[0].rows[1].busbw_GBps, 4.32);
  EXPECT_EQ(log.runs[0].rows[1].type, "float");
  EXPECT_EQ(log.nodes, 8);
  EXPECT_EQ(log.gpus_per_node, 8);
}

const char* kTwoCollectives =
    R"(# nThread 1 nGpus 1 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20
#
# Using devices
#  Rank  0 Group  0 Pid  11 on     node-a device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  12 on     node-a device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid  13 on     node-b device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid  14 on     node-b device  1 [0x2a] NVIDIA H100 80GB HBM3
# Collective test starting: all_gather_perf
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024            64     float    none      -1    20.00    0.05    0.04    N/A    20.10    0.05    0.04    N/A
        2048           128     float    none      -1    21.00    0.10    0.07    N/A    21.10    0.10    0.07    N/A
        4096           256     float    none      -1    22.00    0.19    0.14    N/A    22.10    0.19    0.14    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 0.0833
#
# Collective test starting: alltoall_perf
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
        1024            64     float    none      -1    30.00    0.03    0.03      0    30.10    0.03    0.03      0
        2048           128     float    none      -1    31.00    0.07    0.05      0    31.10    0.07    0.05      0
# Avg bus bandwidth    : 0.04
)";

TEST(NcclTests, DevicesBlockAndSeveralCollectives) {
  const NcclTestsLog log = parse_nccl_tests(kTwoCollectives, "two.log");
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.gpus_per_node, 2);
  EXPECT_EQ(log.gpu_model, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(log.runs.size(), 2u);
  EXPECT_EQ(log.runs[0].op, "all_gather");
  EXPECT_EQ(log.runs[0].rows.size(), 3u);
  EXPECT_EQ(log.runs[1].op, "alltoall");
  EXPECT_DOUBLE_EQ(*log.runs[1].avg_busbw_GBps, 0.04);
}

TEST(NcclTests, AnAbbreviatedDevicesBlockGivesTheRankCountAndTheLastDeviceTheSplit) {
  // A README that keeps only the last rank's line: "Rank 3" means 4 ranks, and the last rank
  // sits on the last node's last GPU, so its "device 1" makes 2 GPUs per node, 2 nodes.
  std::string text = kTwoCollectives;
  for (const char* dropped : {"#  Rank  0 ", "#  Rank  1 ", "#  Rank  2 "}) {
    const auto at = text.find(dropped);
    text.erase(at, text.find('\n', at) + 1 - at);
  }
  const NcclTestsLog log = parse_nccl_tests(text, "readme.log");
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.nodes, 2);
  EXPECT_EQ(log.gpus_per_node, 2);
  ASSERT_EQ(log.warnings.size(), 1u);  // the inference is said, not silent
  EXPECT_NE(log.warnings[0].find("lists 1 of the log's 4 ranks"), std::string::npos);
  EXPECT_NE(log.warnings[0].find("2 node(s) x 2 GPUs"), std::string::npos);

  // "device 2" cannot be the last of equal nodes holding 4 ranks: the split stays unknown, and
  // the scale comes from --nodes or --gpus-per-node, the other factor from the ranks.
  std::string odd = text;
  odd.replace(odd.find("device  1"), 9, "device  2");
  const NcclTestsLog unsplit = parse_nccl_tests(odd, "readme.log");
  EXPECT_EQ(unsplit.ranks, 4);
  EXPECT_EQ(unsplit.nodes, 0);
  const auto unknown = error_of([&] { log_scale(unsplit, 0, 0); });
  EXPECT_EQ(unknown.file(), "readme.log");
  EXPECT_NE(unknown.reason().find("4 ranks"), std::string::npos);
  EXPECT_NE(unknown.reason().find("--nodes"), std::string::npos);
  const LogScale by_nodes = log_scale(unsplit, 2, 0);
  EXPECT_EQ(by_nodes.nodes, 2);
  EXPECT_EQ(by_nodes.gpus_per_node, 2);
  const LogScale by_gpus = log_scale(unsplit, 0, 4);
  EXPECT_EQ(by_gpus.nodes, 1);
  EXPECT_EQ(by_gpus.gpus_per_node, 4);
  EXPECT_EQ(error_of([&] { log_scale(unsplit, 3, 0); }).field(), "--nodes");
  EXPECT_EQ(error_of([&] { log_scale(unsplit, 0, 3); }).field(), "--gpus-per-node");
  // The full block gives the split; an override of one factor keeps the rank count.
  const NcclTestsLog full = parse_nccl_tests(kTwoCollectives, "two.log");
  EXPECT_TRUE(full.warnings.empty());
  EXPECT_EQ(log_scale(full, 0, 0).nodes, 2);
  EXPECT_EQ(log_scale(full, 4, 0).gpus_per_node, 1);
}

TEST(NcclTests, TruncatedOrGarbledLogsNameTheLine) {
  std::string text = kTwoCollectives;
  // Cut in the middle of the last row.
  const auto cut = text.find("        2048           128     float    none      -1    31.00");
  const auto short_row = error_of([&] { parse_nccl_tests(text.substr(0, cut + 40), "cut.log"); });
  EXPECT_EQ(short_row.file(), "cut.log");
  EXPECT_EQ(short_row.field(), "line 22");
  EXPECT_NE(short_row.reason().find("truncated"), std::string::npos);
  // Cut after a whole row: no closing "Avg bus bandwidth".
  const auto no_avg = error_of([&] { parse_nccl_tests(text.substr(0, cut), "cut.log"); });
  EXPECT_NE(no_avg.reason().find("Avg bus bandwidth"), std::string::npos);
  // A number that is not one.
  std::string garbled = text;
  garbled.replace(garbled.find("21.00"), 5, "2l.00");
  const auto bad = error_of([&] { parse_nccl_tests(garbled, "bad.log"); });
  EXPECT_EQ(bad.field(), "line 14");
  EXPECT_EQ(bad.value(), "2l.00");
  EXPECT_THROW(parse_nccl_tests("hello\n", "x.log"), core::Error);
  EXPECT_THROW(parse_nccl_tests("", "x.log"), core::Error);
  EXPECT_THROW(read_nccl_tests("/nonexistent.log"), core::Error);
}

std::vector<SizePoint> synthetic(double latency_us, double busbw_GBps, double factor, double from,
                                 double to, double noise = 0.0) {
  std::vector<SizePoint> pts;
  int i = 0;
  for (double s = from; s <= to; s *= 2, ++i) {
    const double t = latency_us + s * factor / (busbw_GBps * 1e3);
    // Deterministic +-noise alternating, so the test cannot flake.
    pts.push_back({s, t * (1.0 + (i % 2 ? noise : -noise))});
  }
  return pts;
}

TEST(Fit, RecoversKnownLatencyAndBandwidth) {
  const double factor = bus_factor("all_reduce", 16);  // 1.875
  const HockneyFit exact = fit_hockney(synthetic(25.0, 380.0, factor, 1024, 16e9), factor);
  EXPECT_NEAR(exact.latency_us, 25.0, 25.0 * 1e-9);
  EXPECT_NEAR(exact.bus_bandwidth_GBps, 380.0, 380.0 * 1e-9);
  EXPECT_NEAR(exact.quality.r2, 1.0, 1e-12);
  EXPECT_LT(exact.quality.loo_median_abs_error_pct, 1e-6);
  const HockneyFit noisy = fit_hockney(synthetic(25.0, 380.0, factor, 1024, 16e9, 0.01), factor);
  EXPECT_NEAR(noisy.latency_us, 25.0, 25.0 * 0.03);
  EXPECT_NEAR(noisy.bus_bandwidth_GBps, 380.0, 380.0 * 0.03);
  EXPECT_NEAR(noisy.quality.median_abs_error_pct, 1.0, 0.1);
  EXPECT_GT(noisy.quality.r2, 0.999);
}

TEST(Fit, FindsAnAlgorithmSwitch) {
  // LL-like below 1 MiB (5 us, 40 GB/s), Simple-like above (30 us, 400 GB/s).
  const double factor = 1.75;
  auto pts = synthetic(5.0, 40.0, factor, 4096, 512 * 1024);
  const auto large = synthetic(30.0, 400.0, factor, 1 << 20, 8e9);
  pts.insert(pts.end(), large.begin(), large.end());
  const auto segments = fit_segments(pts, factor);
  ASSERT_EQ(segments.size(), 2u);
  EXPECT_NEAR(segments[0].latency_us, 5.0, 1e-6);
  EXPECT_NEAR(segments[0].bus_bandwidth_GBps, 40.0, 1e-6);
  EXPECT_NEAR(segments[1].latency_us, 30.0, 1e-6);
  EXPECT_NEAR(segments[1].bus_bandwidth_GBps, 400.0, 1e-6);
  EXPECT_DOUBLE_EQ(segments[1].min_bytes, 1 << 20);
  // One regime stays one segment.
  EXPECT_EQ(fit_segments(synthetic(5.0, 40.0, factor, 4096, 1e9, 0.002), factor).size(), 1u);
}

TEST(Fit, RejectsUnfittableData) {
  EXPECT_THROW(fit_hockney({{1024, 10}}, 1.0), core::Error);
  EXPECT_THROW(fit_hockney({{1024, 10}, {0, 5}}, 1.0), core::Error);
  EXPECT_THROW(fit_hockney({{1024, 10}, {2048, 10}, {4096, 10}}, 1.0), core::Error);
}

TEST(Bounds, LinkLimitedBusBandwidth) {
  const Profile h100 = load_profile("h100-sxm");
  EXPECT_DOUBLE_EQ(link_limited_busbw_GBps("all_reduce", "ring", 1, 8, h100), 450.0);
  // NVLS: algbw <= 450 * 8/9 = 400, busbw = 400 * 2 * 7/8 = 700.
  EXPECT_NEAR(link_limited_busbw_GBps("all_reduce", "nvls", 1, 8, h100), 700.0, 1e-9);
  // Across nodes: 8 NICs of 50 GB/s.
  EXPECT_DOUBLE_EQ(link_limited_busbw_GBps("all_reduce", "ring", 4, 8, h100), 400.0);
  // All-to-all on 2 nodes: a GPU's NIC carries half its data: 50 * 15/8.
  EXPECT_NEAR(link_limited_busbw_GBps("alltoall", "pairwise", 2, 8, h100), 93.75, 1e-9);
  EXPECT_DOUBLE_EQ(link_limited_busbw_GBps("sendrecv", "direct", 2, 8, h100), 50.0);
}

TEST(AttentionTable, BeyondTheLongestLengthTheRateApproachesItsLimit) {
  // Work grows as s^2, per-row overheads as s: R(s) = R_inf s / (s + s0) through the last two
  // points. FlashAttention (v1) on A100, causal, head dim 128: 80 at 8k, 83 at 16k TFLOP/s give
  // s0 = 3 / (80 / 8192 - 83 / 16384) = 638.3 and R_inf = 83 (16384 + s0) / 16384 = 86.2.
  AttentionTable t;
  t.head_dims = {64, 128};
  t.seq_lens = {8192, 16384};
  t.fwd_tflops = {{90, 90}, {80, 83}};  // head dim 64 stops rising: it stays flat
  t.bwd_tflops = t.fwd_tflops;
  const double s0 = 3.0 / (80.0 / 8192 - 83.0 / 16384);
  EXPECT_DOUBLE_EQ(t.tflops(true, 128, 16384), 83.0);
  EXPECT_NEAR(t.tflops(true, 128, 32768), 83.0 * (32768 / (32768 + s0)) / (16384 / (16384 + s0)),
              1e-9);
  EXPECT_NEAR(t.tflops(true, 128, 32768), 84.58, 0.01);
  EXPECT_LT(t.tflops(true, 128, 1 << 24), 83.0 * (16384 + s0) / 16384);
  EXPECT_DOUBLE_EQ(t.tflops(true, 64, 65536), 90.0);
  EXPECT_DOUBLE_EQ(t.tflops(false, 128, 12000), t.tflops(true, 128, 12000));  // inside: as before
}

TEST(Profile, ShippedProfilesLoadWithProvenance) {
  for (const auto& name : shipped_profile_names()) {
    const Profile p = load_profile(name);
    EXPECT_EQ(p.name, name);
    EXPECT_FALSE(p.hbm_GBps.source.empty());
    for (const auto& c : p.collectives) EXPECT_FALSE(c.efficiency.source.empty()) << name;
    // Round trip.
    EXPECT_EQ(to_json(parse_profile(to_json(p), "roundtrip")), to_json(p));
  }
  EXPECT_EQ(shipped_profile_names().size(), 4u);
  const Profile h100 = load_profile("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peak_flops("bf16"), 989e12);
  EXPECT_DOUBLE_EQ(h100.nic_payload_Bps(), 47.5e9);
  EXPECT_DOUBLE_EQ(load_profile("a100-sxm-80gb").nvlink_GBps.value, 300.0);
  EXPECT_DOUBLE_EQ(load_profile("h200-sxm").hbm_GBps.value, 4800.0);
  // The 40 GB A100: the 80 GB part's compute and NVLink, HBM2 at 1,555 GB/s.
  const Profile a100_40 = load_profile("a100-sxm-40gb");
  EXPECT_DOUBLE_EQ(a100_40.hbm_GB.value, 42.95);  // 40 GiB
  EXPECT_DOUBLE_EQ(a100_40.hbm_GBps.value, 1555.0);
  EXPECT_DOUBLE_EQ(a100_40.peak_flops("bf16"), load_profile("a100-sxm-80gb").peak_flops("bf16"));
}

TEST(Profile, GemmModelReproducesTheMeasuredBestShape) {
  // The peak efficiency was derived so that the measured best shape comes out at its measured
  // 792.1 of 989 TFLOP/s (H100) and 267.9 of 312 (A100), to the 4 digits stored.
  EXPECT_NEAR(load_profile("h100-sxm").gemm_efficiency(6144, 17920, 2816), 792.1 / 989, 1e-4);
  EXPECT_NEAR(load_profile("a100-sxm-80gb").gemm_efficiency(6912, 16384, 2048), 267.9 / 312, 1e-4);
  const Profile h100 = load_profile("h100-sxm");
  // Smaller and ragged shapes run less efficiently.
  EXPECT_LT(h100.gemm_efficiency(512, 512, 512), h100.gemm_efficiency(8192, 8192, 8192));
  EXPECT_LT(h100.gemm_efficiency(8192, 8192, 8193), h100.gemm_efficiency(8192, 8192, 8192));
}

TEST(Profile, ShippedNvlsCurvesAreTheFitOfThePublicLog) {
  const NcclTestsLog log = read_nccl_tests(kData + "/nccl-tests/h100-1node-8gpu-all_reduce.log");
  Profile refit = load_profile("h100-sxm");
  const auto fits = fit_log_into(log, refit);
  ASSERT_EQ(fits.size(), 1u);
  ASSERT_EQ(fits[0].segments.size(), 2u);
  const Profile shipped = load_profile("h100-sxm");
  for (const auto& seg : fits[0].segments) {
    EXPECT_EQ(seg.curve.algorithm, "nvls");  // above the 450 GB/s a ring could reach
    const CollectiveCurve* c =
        shipped.find_curve("all_reduce", "nvls", "intra_node", seg.fit.min_bytes);
    ASSERT_NE(c, nullptr);
    EXPECT_NEAR(c->latency_us.value, seg.fit.latency_us, 1e-9);
    EXPECT_NEAR(c->efficiency.value, seg.curve.efficiency.value, 1e-12);
    EXPECT_LT(seg.fit.quality.median_abs_error_pct, 1.0);
    EXPECT_LT(seg.fit.quality.loo_median_abs_error_pct, 2.0);
  }
  // Size lookup picks the segment; outside every range, the nearest.
  EXPECT_LT(shipped.find_curve("all_reduce", "nvls", "intra_node", 64e6)->max_bytes, 1e9);
  EXPECT_GT(shipped.find_curve("all_reduce", "nvls", "intra_node", 64e9)->min_bytes, 1e9);
  EXPECT_LT(shipped.find_curve("all_reduce", "nvls", "intra_node", 8)->max_bytes, 1e9);
  EXPECT_EQ(shipped.find_curve("all_reduce", "nvls", "inter_node"), nullptr);
}

TEST(Profile, BadProfilesNameTheField) {
  const auto unknown = error_of([] { load_profile("h100"); });
  EXPECT_NE(std::string(unknown.what()).find("did you mean"), std::string::npos) << unknown.what();
  std::string text = to_json(load_profile("h100-sxm"));
  std::string no_source = text;
  no_source.replace(no_source.find("\"source\""), 8, "\"origin\"");
  const auto e = error_of([&] { parse_profile(no_source, "p.json"); });
  EXPECT_EQ(e.file(), "p.json");
  EXPECT_NE(e.field().find("gpu.peak_tflops"), std::string::npos) << e.what();
  EXPECT_THROW(parse_profile("{", "p.json"), core::Error);
  // A number past the range of a double is an error with the file, not an escaping exception.
  const auto overflow = error_of([] { parse_profile(R"({"version": 1e8609})", "p.json"); });
  EXPECT_EQ(overflow.file(), "p.json");
  // A count past an int (found by the profile fuzzer) is refused, not converted.
  auto with_version = [&](const std::string& v) {
    std::string t = text;
    const std::string key = "\"version\": 1";
    t.replace(t.find(key), key.size(), "\"version\": " + v);
    return t;
  };
  const auto huge = error_of([&] { parse_profile(with_version("8.2e49"), "p.json"); });
  EXPECT_EQ(huge.field(), "version");
  EXPECT_NE(huge.reason().find("whole number"), std::string::npos) << huge.what();
  EXPECT_EQ(error_of([&] { parse_profile(with_version("1.5"), "p.json"); }).field(), "version");
  std::string bad_eff = text;
  bad_eff.replace(bad_eff.find("\"payload_efficiency\": {\n      \"value\": 0.95"),
                  std::string("\"payload_efficiency\": {\n      \"value\": 0.95").size(),
                  "\"payload_efficiency\": {\n      \"value\": 1.95");
  EXPECT_EQ(error_of([&] { parse_profile(bad_eff, "p.json"); }).field(), "nic.payload_efficiency");
  // The derived 16-bit GEMM rate a fit falls back to is a fraction of peak like the rate itself.
  std::string bad_prior = text;
  const std::size_t at = bad_prior.find("\"kernels\": {");
  ASSERT_NE(at, std::string::npos);
  bad_prior.insert(at + 12,
                   "\"gemm16_efficiency_prior\": {\"value\": 10.8059, \"source\": \"test\"}, ");
  EXPECT_EQ(error_of([&] { parse_profile(bad_prior, "p.json"); }).field(),
            "kernels.gemm16_efficiency_prior");
}

}  // namespace
}  // namespace twin::calibrate

namespace twin::calibrate {
namespace {

TEST(RawData, Hdf5RoundTripAndFitsRecoverKnownParameters) {
  Profile truth = load_profile("h100-sxm");
  truth.gemm_peak_efficiency.value = 0.83;
  truth.gemm_half_dim.value = 256;
  RawCalibration raw;
  raw.gpu = "NVIDIA H100 80GB HBM3";
  raw.host = "node-a";
  raw.date = "2026-11-29";
  for (double d : {256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 1000.0, 8200.0}) {
    const double tflops = 989 * truth.gemm_efficiency(d, d, d);
    raw.gemm["bf16"].push_back({d, d, d, 2 * d * d * d / (tflops * 1e12) * 1e6, tflops});
  }
  raw.hbm = {{1e9, 700, 2857.1}, {2e9, 1380, 2898.6}};
  raw.collectives["all_reduce"] = {8, 1, {1e6, 2e6}, {10, 15}, {100, 133}, {175, 233}};
  const std::string path = ::testing::TempDir() + "/calibration.h5";
  write_raw_hdf5(path, raw);
  const RawCalibration back = read_raw_hdf5(path);
  EXPECT_EQ(back.gpu, raw.gpu);
  EXPECT_EQ(back.date, raw.date);
  ASSERT_EQ(back.gemm.at("bf16").size(), raw.gemm.at("bf16").size());
  EXPECT_DOUBLE_EQ(back.gemm.at("bf16")[3].tflops, raw.gemm.at("bf16")[3].tflops);
  EXPECT_EQ(back.collectives.at("all_reduce").ranks, 8);
  EXPECT_DOUBLE_EQ(back.collectives.at("all_reduce").busbw_GBps[1], 233);

  Profile fitted = load_profile("h100-sxm");
  const double error = fit_gemm_into(back.gemm.at("bf16"), "bf16", fitted, "test");
  EXPECT_LT(error, 0.5);
  EXPECT_NEAR(fitted.gemm_half_dim.value, 256, 256 * 0.05);
  EXPECT_NEAR(fitted.gemm_peak_efficiency.value, 0.83, 0.01);
  fit_hbm_into(back.hbm, 50e6, fitted, "test");  // both copies are HBM-bound: their median
  EXPECT_NEAR(fitted.hbm_efficiency.value, (2857.1 + 2898.6) / 2 / 3350, 1e-9);
  EXPECT_THROW(read_raw_hdf5(::testing::TempDir() + "/missing.h5"), core::Error);
}

}  // namespace
}  // namespace twin::calibrate
