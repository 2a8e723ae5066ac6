// clustertwin-calib's CPU-testable half: option validation, launch detection, nccl-tests text
// and data check, base-profile choice, the HBM/GEMM fits' refusals, and the raw -> fit ->
// profile round trip through `clustertwin calibrate fit --raw`.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "calibrate/bench/gpu_monitor.hpp"
#include "calibrate/bench/launch.hpp"
#include "calibrate/bench/nccl_pattern.hpp"
#include "calibrate/bench/nccl_text.hpp"
#include "calibrate/bench/options.hpp"
#include "calibrate/fit.hpp"
#include "calibrate/gpu_match.hpp"
#include "calibrate/nccl_tests.hpp"
#include "calibrate/profile.hpp"
#include "calibrate/raw_data.hpp"
#include "core/error.hpp"
#include "test_helpers.hpp"

namespace twin::calib {
namespace {

using test::error_of;

Options parse(const std::string& command_line) {
  OptionParser parser;
  parser.app().parse(command_line, false);
  return parser.validated();
}

core::Error option_error(const std::string& command_line) {
  return error_of([&] { (void)parse(command_line); });
}

// --- options --------------------------------------------------------------------------------

TEST(CalibOptions, DefaultsAreNcclTestsAndMamfDefaults) {
  const Options o = parse("");
  EXPECT_EQ(o.ops, calib_ops());
  EXPECT_DOUBLE_EQ(o.min_bytes, 8);
  EXPECT_DOUBLE_EQ(o.max_bytes, 16.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.time_over_ranks, TimeOverRanks::average);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.gemm_iters, 100);
  EXPECT_DOUBLE_EQ(o.gemm_warmup_s, 30);
}

TEST(CalibOptions, QuickShortensOnlyWhatIsNotGiven) {
  const Options quick = parse("--quick");
  EXPECT_DOUBLE_EQ(quick.max_bytes, 1024.0 * 1024 * 1024);
  EXPECT_EQ(quick.gemm_iters, 50);
  EXPECT_DOUBLE_EQ(quick.gemm_warmup_s, 10);
  const Options explicit_max = parse("--quick --max-bytes 4G --gemm-iters 200");
  EXPECT_DOUBLE_EQ(explicit_max.max_bytes, 4.0 * 1024 * 1024 * 1024);
  EXPECT_EQ(explicit_max.gemm_iters, 200);
}

TEST(CalibOptions, ParsesSizesAndOps) {
  EXPECT_DOUBLE_EQ(parse_bytes("64K", "x"), 65536);
  EXPECT_DOUBLE_EQ(parse_bytes("16M", "x"), 16.0 * 1048576);
  EXPECT_DOUBLE_EQ(parse_bytes("1GiB", "x"), 1073741824);
  EXPECT_DOUBLE_EQ(parse_bytes("100", "x"), 100);
  const Options o = parse("--ops alltoall,sendrecv --time-over-ranks max --no-check");
  EXPECT_EQ(o.ops, (std::vector<std::string>{"alltoall", "sendrecv"}));
  EXPECT_EQ(o.time_over_ranks, TimeOverRanks::maximum);
  EXPECT_FALSE(o.check);
}

TEST(CalibOptions, EveryMistakeIsFoundBeforeAnyWork) {
  const core::Error typo = option_error("--ops all_reduce,all_gathr");
  EXPECT_EQ(typo.field(), "--ops");
  EXPECT_EQ(typo.value(), "all_gathr");
  EXPECT_NE(typo.reason().find("did you mean 'all_gather'"), std::string::npos);
  EXPECT_EQ(option_error("--ops all_reduce,,sendrecv").value(), "");
  EXPECT_EQ(option_error("--ops all_reduce,all_reduce").reason(), "listed twice");
  EXPECT_EQ(option_error("--min-bytes 0").field(), "--min-bytes");  // would loop forever
  EXPECT_EQ(option_error("--min-bytes 12x").field(), "--min-bytes");
  EXPECT_EQ(option_error("--max-bytes=-1G").field(), "--max-bytes");
  EXPECT_EQ(option_error("--min-bytes 4K --max-bytes 1K").field(), "--max-bytes");
  EXPECT_EQ(option_error("--iters 0").field(), "--iters");  // would divide by zero
  EXPECT_EQ(option_error("--warmup=-1").field(), "--warmup");
  EXPECT_EQ(option_error("--gemm-iters 0").field(), "--gemm-iters");
  EXPECT_EQ(option_error("--timeout 0").field(), "--timeout");
  EXPECT_EQ(option_error("--time-over-ranks median").field(), "--time-over-ranks");
  EXPECT_EQ(option_error("--no-gemm --no-hbm --no-nccl").reason(), "nothing left to measure");
  EXPECT_EQ(option_error("--base h100").value(), "h100");  // unknown profile, found up front
  EXPECT_EQ(parse("--base h200-sxm").base, "h200-sxm");
}

// --- launch detection -----------------------------------------------------------------------

TEST(CalibLaunch, NoLauncher) {
  const Launch l = detect_launch({{"HOME", "/root"}, {"SLURM_JOB_ID", "7"}});
  EXPECT_FALSE(l.launched());
  EXPECT_EQ(l.world_size, 1);
  EXPECT_NO_THROW(check_launch(l, false));
}

TEST(CalibLaunch, OpenMpiWinsOverTheAllocationsSlurmVariables) {
  const Launch l = detect_launch({{"OMPI_COMM_WORLD_SIZE", "16"},
                                  {"OMPI_COMM_WORLD_RANK", "11"},
                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"},
                                  {"SLURM_STEP_ID", "0"},
                                  {"SLURM_PROCID", "1"},
                                  {"SLURM_STEP_NUM_TASKS", "2"}});
  EXPECT_EQ(l.launcher, "Open MPI");
  EXPECT_EQ(l.world_size, 16);
  EXPECT_EQ(l.rank, 11);
  EXPECT_EQ(l.local_rank, 3);
  EXPECT_EQ(l.local_size, 8);
}

TEST(CalibLaunch, SrunWithPmixIsSeen) {
  const Launch l = detect_launch({{"SLURM_STEP_ID", "0"},
                                  {"SLURM_PROCID", "9"},
                                  {"SLURM_STEP_NUM_TASKS", "16"},
                                  {"SLURM_LOCALID", "1"},
                                  {"SLURM_NODEID", "1"},
                                  {"SLURM_STEP_TASKS_PER_NODE", "8(x2)"},
                                  {"PMIX_RANK", "9"}});
  EXPECT_EQ(l.launcher, "Slurm srun (PMIx)");
  EXPECT_EQ(l.world_size, 16);
  EXPECT_EQ(l.rank, 9);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.local_size, 8);
  const Launch uneven = detect_launch({{"SLURM_STEP_ID", "3"},
                                       {"SLURM_PROCID", "9"},
                                       {"SLURM_STEP_NUM_TASKS", "12"},
                                       {"SLURM_NODEID", "1"},
                                       {"SLURM_STEP_TASKS_PER_NODE", "8,4"}});
  EXPECT_EQ(uneven.launcher, "Slurm srun");
  EXPECT_EQ(uneven.local_size, 4);
  // A batch script (no job step) is not a launch, whatever SLURM_NTASKS says.
  EXPECT_FALSE(detect_launch({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "16"}}).launched());
}

TEST(CalibLaunch, HydraAndBarePmix) {
  const Launch hydra = detect_launch(
      {{"PMI_SIZE", "4"}, {"PMI_RANK", "2"}, {"MPI_LOCALRANKID", "2"}, {"MPI_LOCALNRANKS", "4"}});
  EXPECT_EQ(hydra.world_size, 4);
  EXPECT_EQ(hydra.rank, 2);
  EXPECT_EQ(hydra.local_size, 4);
  const Launch pmix = detect_launch({{"PMIX_RANK", "5"}});
  EXPECT_EQ(pmix.launcher, "PMIx");
  EXPECT_EQ(pmix.world_size, 0);  // unknown
  EXPECT_EQ(pmix.rank, 5);
}

TEST(CalibLaunch, MalformedVariablesAreErrors) {
  EXPECT_EQ(error_of([] {
              detect_launch({{"OMPI_COMM_WORLD_SIZE", "eight"}});
            }).field(),
            "OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(error_of([] {
              detect_launch({{"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_RANK", "4"}});
            }).field(),
            "rank");
}

TEST(CalibLaunch, BuildWithoutMpiRefusesALauncherOfSeveralRanks) {
  const Launch eight = detect_launch({{"OMPI_COMM_WORLD_SIZE", "8"}});
  EXPECT_NE(error_of([&] { check_launch(eight, false); }).reason().find("built without MPI"),
            std::string::npos);
  EXPECT_NO_THROW(check_launch(eight, true));
  EXPECT_NO_THROW(check_launch(detect_launch({{"OMPI_COMM_WORLD_SIZE", "1"}}), false));
  EXPECT_THROW(check_launch(detect_launch({{"PMIX_RANK", "0"}}), false), core::Error);
}

TEST(CalibLaunch, RanksNeverShareAGpu) {
  EXPECT_EQ(device_for_rank(3, 8, 8, "n1"), 3);
  EXPECT_EQ(device_for_rank(3, 8, 1, "n1"), 0);  // launcher bound one GPU per rank
  const core::Error over = error_of([] { device_for_rank(3, 8, 4, "n1"); });
  EXPECT_EQ(over.value(), "8");
  EXPECT_NE(over.reason().find("see 4 GPUs"), std::string::npos);
  EXPECT_NO_THROW(check_distinct_gpus({"a", "b", "c"}, "n1"));
  EXPECT_NE(error_of([] {
              check_distinct_gpus({"a", "b", "a"}, "n1");
            })
                .reason()
                .find("local ranks 0 and 2"),
            std::string::npos);
}

// --- nccl-tests text and data check ---------------------------------------------------------

TEST(CalibNcclText, CountsArePerRankAndNoRowRepeats) {
  // all_gather on 8 ranks: 8 B and 16 B hold fewer floats than ranks (count 0): skipped.
  const auto gather = sweep_points(CollOp::all_gather, 8, 8, 1024);
  ASSERT_EQ(gather.size(), 6u);
  EXPECT_EQ(gather[0].count, 1u);  // per rank
  EXPECT_EQ(gather[0].size_bytes, 32u);
  EXPECT_EQ(gather.back().count, 32u);
  EXPECT_EQ(gather.back().size_bytes, 1024u);
  // reduce_scatter on 3 ranks from 16 B: count 4 / 3 = 1 per rank, send 3 floats = 12 B.
  const auto rs = sweep_points(CollOp::reduce_scatter, 3, 16, 64);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].count, 1u);
  EXPECT_EQ(rs[0].size_bytes, 12u);
  EXPECT_EQ(rs[2].count, 5u);
  EXPECT_EQ(rs[2].size_bytes, 60u);
  const auto reduce = sweep_points(CollOp::all_reduce, 8, 1, 64);
  ASSERT_EQ(reduce.size(), 5u);  // 1 and 2 B hold no float
  EXPECT_EQ(reduce[0].count, 1u);
  for (CollOp op : {CollOp::all_reduce, CollOp::all_gather, CollOp::reduce_scatter,
                    CollOp::alltoall, CollOp::sendrecv}) {
    std::set<std::size_t> sizes;
    for (const auto& p : sweep_points(op, 7, 1, 1 << 20)) {
      EXPECT_GT(p.count, 0u);
      EXPECT_TRUE(sizes.insert(p.size_bytes).second) << p.size_bytes;
    }
  }
}

TEST(CalibNcclText, BufferShiftCyclesThroughTheCapacity) {
  EXPECT_EQ(buffer_shift(0, 100, 1000), 0u);
  EXPECT_EQ(buffer_shift(3, 100, 1000), 300u);
  EXPECT_EQ(buffer_shift(12, 100, 1000), 200u);
  EXPECT_EQ(buffer_shift(5, 1000, 1000), 0u);
  EXPECT_EQ(buffer_shift(5, 0, 1000), 0u);
}

std::string synthetic_log(const std::string& op, int ranks, const Options& options) {
  std::string devices;
  for (int r = 0; r < ranks; ++r)
    devices +=
        fmt::format("#  Rank {:>2} Group  0 Pid {:>6} on {:>10} device {:>2} [0x{:02x}] {}\n", r,
                    100 + r, "node-a", r, 16 + r, "NVIDIA H200");
  std::string text = log_header(op, ranks, 8, 1 << 20, options, devices);
  double sum = 0;
  int rows = 0;
  for (const auto& p : sweep_points(coll_op(op), ranks, 8, 1 << 20)) {
    const double us = 10 + static_cast<double>(p.size_bytes) / 100e3;
    const double algbw = static_cast<double>(p.size_bytes) / (us * 1e-6) / 1e9;
    const double busbw = algbw * calibrate::bus_factor(op, ranks);
    text += log_row(op, p, us, algbw, busbw, 0);
    sum += busbw;
    ++rows;
  }
  return text + log_footer(sum / rows);
}

TEST(CalibNcclText, EveryOpRoundTripsThroughOurNcclTestsParser) {
  const Options options = parse("");
  for (const std::string& op : calib_ops()) {
    SCOPED_TRACE(op);
    const int ranks = 8;
    const calibrate::NcclTestsLog log =
        calibrate::parse_nccl_tests(synthetic_log(op, ranks, options), "nccl-" + op + ".txt");
    ASSERT_EQ(log.runs.size(), 1u);
    EXPECT_EQ(log.runs[0].op, op);
    EXPECT_EQ(log.ranks, ranks);
    EXPECT_EQ(log.nodes, 1);
    EXPECT_EQ(log.gpus_per_node, ranks);
    EXPECT_EQ(log.gpu_model, "NVIDIA H200");
    const auto points = sweep_points(coll_op(op), ranks, 8, 1 << 20);
    ASSERT_EQ(log.runs[0].rows.size(), points.size());
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& row = log.runs[0].rows[i];
      EXPECT_DOUBLE_EQ(row.size_bytes, static_cast<double>(points[i].size_bytes));
      EXPECT_DOUBLE_EQ(row.count, static_cast<double>(points[i].count));
      EXPECT_EQ(row.type, "float");
      EXPECT_EQ(row.redop, is_reduction(coll_op(op)) ? "sum" : "none");
      EXPECT_EQ(row.root, -1);
    }
    // Per-rank counts: all_gather, reduce_scatter and alltoall print size / (4 n).
    const auto& last = log.runs[0].rows.back();
    const bool split = op == "all_gather" || op == "reduce_scatter" || op == "alltoall";
    EXPECT_DOUBLE_EQ(last.count * 4 * (split ? ranks : 1), last.size_bytes);
    EXPECT_NEAR(last.busbw_GBps / last.algbw_GBps, calibrate::bus_factor(op, ranks), 0.01);
    ASSERT_TRUE(log.runs[0].avg_busbw_GBps.has_value());
  }
}

/// Element i of each rank's receive buffer, computed from the collectives' definitions on
/// host copies of the send buffers (independently of expected()).
std::vector<std::vector<float>> simulate(CollOp op, int n, std::size_t c) {
  std::vector<std::vector<float>> send(static_cast<std::size_t>(n)), recv(send.size());
  for (int r = 0; r < n; ++r)
    for (std::size_t i = 0; i < send_elements(op, n, c); ++i)
      send[static_cast<std::size_t>(r)].push_back(pattern(r, i));
  for (int r = 0; r < n; ++r) {
    auto& out = recv[static_cast<std::size_t>(r)];
    out.assign(recv_elements(op, n, c), 0.0f);
    const std::size_t rr = static_cast<std::size_t>(r);
    for (std::size_t i = 0; i < out.size(); ++i) {
      switch (op) {
        case CollOp::all_reduce:
          for (const auto& s : send) out[i] += s[i];
          break;
        case CollOp::all_gather:
          out[i] = send[i / c][i % c];
          break;
        case CollOp::reduce_scatter:
          for (const auto& s : send) out[i] += s[rr * c + i];
          break;
        case CollOp::alltoall:  // block p of my output is block r of peer p's input
          out[i] = send[i / c][rr * c + i % c];
          break;
        case CollOp::sendrecv:
          out[i] = send[static_cast<std::size_t>((r + n - 1) % n)][i];
          break;
      }
    }
  }
  return recv;
}

TEST(CalibDataCheck, ExpectedValuesMatchTheCollectivesDefinitions) {
  const int n = 4;
  const std::size_t c = 6;
  for (CollOp op : {CollOp::all_reduce, CollOp::all_gather, CollOp::reduce_scatter,
                    CollOp::alltoall, CollOp::sendrecv}) {
    const auto recv = simulate(op, n, c);
    for (int r = 0; r < n; ++r)
      for (std::size_t i = 0; i < recv[static_cast<std::size_t>(r)].size(); ++i)
        ASSERT_EQ(expected(op, r, n, c, i), recv[static_cast<std::size_t>(r)][i])
            << static_cast<int>(op) << " rank " << r << " element " << i;
  }
  // A misplaced block is caught: rank 1's all_gather block 0 and block 1 differ.
  EXPECT_NE(expected(CollOp::all_gather, 1, n, c, 0), expected(CollOp::all_gather, 1, n, c, c));
}

// --- bus factor, base profile, monitor -------------------------------------------------------

TEST(CalibBusFactor, GatherScatterAndHypercubeUseNMinusOneOverN) {
  for (const char* op : {"gather", "scatter", "hypercube", "all_gather", "alltoall"})
    EXPECT_DOUBLE_EQ(calibrate::bus_factor(op, 8), 7.0 / 8.0) << op;
  EXPECT_DOUBLE_EQ(calibrate::bus_factor("broadcast", 8), 1.0);
  // A gather log generated with bus bandwidth 40 GB/s fits 40, not 40 x 8/7.
  std::vector<calibrate::SizePoint> points;
  for (double s = 1 << 20; s <= (1 << 30); s *= 2)
    points.push_back({s, 15 + s * (7.0 / 8.0) / 40e9 * 1e6});
  const calibrate::HockneyFit fit =
      calibrate::fit_hockney(points, calibrate::bus_factor("gather", 8));
  EXPECT_NEAR(fit.bus_bandwidth_GBps, 40, 0.01);
  EXPECT_NEAR(fit.latency_us, 15, 0.01);
}

TEST(CalibBaseProfile, ChosenFromTheDeviceName) {
  EXPECT_EQ(calibrate::shipped_profile_for_gpu("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(calibrate::shipped_profile_for_gpu("NVIDIA H200"), "h200-sxm");
  EXPECT_EQ(calibrate::shipped_profile_for_gpu("NVIDIA A100-SXM4-80GB"), "a100-sxm-80gb");
  EXPECT_EQ(calibrate::shipped_profile_for_gpu("NVIDIA A100-SXM4-40GB"), "a100-sxm-40gb");
  for (const char* other : {"NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL",
                            "NVIDIA GH200 480GB", "NVIDIA A100-PCIE-40GB", "NVIDIA L40S"})
    EXPECT_FALSE(calibrate::shipped_profile_for_gpu(other).has_value()) << other;
  const core::Error none = error_of([] { calibrate::choose_base_profile("NVIDIA L40S", ""); });
  EXPECT_EQ(none.value(), "NVIDIA L40S");
  EXPECT_NE(none.reason().find("--base"), std::string::npos);
  EXPECT_EQ(calibrate::choose_base_profile("NVIDIA L40S", "my.json"), "my.json");
  const auto shipped = calibrate::shipped_profile_names();
  for (const char* name : {"h100-sxm", "h200-sxm", "a100-sxm-80gb"})
    EXPECT_NE(std::find(shipped.begin(), shipped.end(), name), shipped.end()) << name;
}

TEST(CalibMonitor, MissingNvmlIsReportedNotInvented) {
  const GpuMonitor monitor("0000:18:00.0", "libnvidia-ml-absent.so.1");
  EXPECT_FALSE(monitor.available());
  EXPECT_NE(monitor.status().find("not recorded"), std::string::npos);
  EXPECT_TRUE(std::isnan(monitor.read().sm_clock_MHz));
  ReadingSummary summary;
  summary.add(monitor.read());
  EXPECT_EQ(summary.samples, 0);
  summary.add({1980, 1593, 61, 690, 0});
  summary.add({1755, 1593, 67, 700, 4});
  EXPECT_DOUBLE_EQ(summary.mean_sm_clock_MHz(), 1867.5);
  EXPECT_DOUBLE_EQ(summary.low_high.sm_clock_MHz, 1755);
  EXPECT_DOUBLE_EQ(summary.low_high.temperature_C, 67);
  EXPECT_EQ(summary.low_high.clock_event_reasons, 4u);
}

}  // namespace
}  // namespace twin::calib

namespace twin::calibrate {
namespace {

using test::error_of;

// --- fits: plateau, refusals, and the raw -> fit -> profile round trip -----------------------

TEST(CalibFits, HbmFitsThePlateauAndNeverClamps) {
  Profile p = load_profile("h100-sxm");  // 3,350 GB/s
  const double l2 = 50e6;
  // 16 MiB copies (32 MiB working set) sit in L2 and read 6,000 GB/s: excluded.
  const std::vector<HbmSample> sweep = {
      {16 << 20, 0, 6000}, {256 << 20, 0, 2900}, {512 << 20, 0, 2950}, {1 << 30, 0, 2940}};
  fit_hbm_into(sweep, l2, p, "test");
  EXPECT_NEAR(p.hbm_efficiency.value, 2940.0 / 3350, 1e-12);
  EXPECT_NE(p.hbm_efficiency.source.find("3 sizes"), std::string::npos);
  // An H200 measured against the H100's datasheet: reported, not clamped to 1.
  const std::vector<HbmSample> h200 = {{256 << 20, 0, 4300}, {1 << 30, 0, 4310}};
  Profile h100 = load_profile("h100-sxm");
  const core::Error too_high = error_of([&] { fit_hbm_into(h200, l2, h100, "test"); });
  EXPECT_EQ(too_high.field(), "hbm_efficiency");
  EXPECT_NE(too_high.reason().find("measurement error"), std::string::npos);
  EXPECT_DOUBLE_EQ(h100.hbm_efficiency.value, load_profile("h100-sxm").hbm_efficiency.value);
  EXPECT_EQ(error_of([&] { fit_hbm_into(sweep, 0, p, "t"); }).field(), "l2_bytes");
  EXPECT_THROW(fit_hbm_into({{16 << 20, 0, 6000}}, l2, p, "t"), core::Error);
}

TEST(CalibFits, GemmAbovePeakIsAMeasurementError) {
  Profile p = load_profile("h100-sxm");
  const std::vector<GemmSample> samples = {{8192, 8192, 8192, 1, 700}, {4096, 4096, 4096, 1, 1100}};
  EXPECT_NE(error_of([&] { fit_gemm_into(samples, "bf16", p, "t"); }).field().find("4096x4096"),
            std::string::npos);
}

struct Truth {
  double half_dim = 300, peak_eff = 0.80, hbm_eff = 0.90, latency_us = 20, busbw_GBps = 360;
};

/// A calibration.h5 as clustertwin-calib would write it on an 8-GPU H200 node whose figures
/// are `truth`.
RawCalibration synthetic_h200(const Truth& truth) {
  Profile model = load_profile("h200-sxm");
  model.gemm_half_dim.value = truth.half_dim;
  model.gemm_peak_efficiency.value = truth.peak_eff;
  RawCalibration raw;
  raw.gpu = "NVIDIA H200";
  raw.host = "gpu-node-7";
  raw.date = "2026-11-30";
  raw.l2_bytes = 50e6;
  raw.monitor = "NVML (libnvidia-ml.so.1)";
  for (double d : {1024.0, 2048.0, 4096.0, 8192.0, 1000.0, 8200.0}) {
    const double tflops = 989 * model.gemm_efficiency(d, d, d);
    GemmSample s{d, d, d, 2 * d * d * d / (tflops * 1e12) * 1e6, tflops};
    s.sm_clock_MHz = 1830;
    s.temperature_C = 64;
    s.power_W = 690;
    raw.gemm["bf16"].push_back(s);
  }
  for (double bytes : {256.0 * 1048576, 512.0 * 1048576, 1024.0 * 1048576})
    raw.hbm.push_back({bytes, 2 * bytes / (truth.hbm_eff * 4800e9) * 1e6, truth.hbm_eff * 4800});
  CollectiveSamples& ar = raw.collectives["all_reduce"];
  ar.ranks = 8;
  ar.nodes = 1;
  const double factor = bus_factor("all_reduce", 8);
  for (double s = 1 << 20; s <= (1 << 30); s *= 2) {
    const double us = truth.latency_us + s * factor / (truth.busbw_GBps * 1e3);
    ar.size_bytes.push_back(s);
    ar.time_us.push_back(us);
    ar.algbw_GBps.push_back(s / (us * 1e3));
    ar.busbw_GBps.push_back(s / (us * 1e3) * factor);
  }
  return raw;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(CalibRoundTrip, RawFileThroughFitRawToProfile) {
  const Truth truth;
  const std::string dir = ::testing::TempDir() + "/calib_round_trip";
  std::filesystem::create_directories(dir);
  write_raw_hdf5(dir + "/calibration.h5", synthetic_h200(truth));
  const RawCalibration back = read_raw_hdf5(dir + "/calibration.h5");
  EXPECT_DOUBLE_EQ(back.l2_bytes, 50e6);
  EXPECT_EQ(back.monitor, "NVML (libnvidia-ml.so.1)");
  EXPECT_DOUBLE_EQ(back.gemm.at("bf16")[2].sm_clock_MHz, 1830);
  EXPECT_DOUBLE_EQ(back.gemm.at("bf16")[2].temperature_C, 64);

  // The documented workflow: no logs, no --base (the H200 is recognised from the file).
  const std::string command = std::string(CLUSTERTWIN_CLI) + " calibrate fit --raw " + dir +
                              "/calibration.h5 -o " + dir + "/profile.json > " + dir +
                              "/fit.txt 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << read_text(dir + "/fit.txt");
  const std::string printed = read_text(dir + "/fit.txt");
  EXPECT_NE(printed.find("base profile 'h200-sxm'"), std::string::npos) << printed;
  EXPECT_NE(printed.find("measured"), std::string::npos) << printed;  // the side-by-side table

  const Profile fitted = load_profile(dir + "/profile.json");
  EXPECT_DOUBLE_EQ(fitted.hbm_GBps.value, 4800);  // measured against the H200's datasheet
  EXPECT_NEAR(fitted.hbm_efficiency.value, truth.hbm_eff, 1e-9);
  EXPECT_NEAR(fitted.gemm_peak_efficiency.value, truth.peak_eff, 0.01);
  EXPECT_NEAR(fitted.gemm_half_dim.value, truth.half_dim, truth.half_dim * 0.05);
  const CollectiveCurve* curve = fitted.find_curve("all_reduce", "ring", "intra_node", 1 << 28);
  ASSERT_NE(curve, nullptr);
  EXPECT_NEAR(curve->bus_bandwidth_GBps.value, truth.busbw_GBps, truth.busbw_GBps * 0.01);
  EXPECT_NEAR(curve->latency_us.value, truth.latency_us, 0.5);
  EXPECT_EQ(curve->gpus_per_node, 8);

  // The library path gives the same profile.
  Profile direct = load_profile("h200-sxm");
  fit_raw_into(back, direct, "test");
  EXPECT_DOUBLE_EQ(direct.hbm_efficiency.value, fitted.hbm_efficiency.value);
  EXPECT_DOUBLE_EQ(direct.gemm_half_dim.value, fitted.gemm_half_dim.value);
}

TEST(CalibRoundTrip, UnknownGpuNeedsBase) {
  const std::string dir = ::testing::TempDir() + "/calib_unknown_gpu";
  std::filesystem::create_directories(dir);
  RawCalibration raw = synthetic_h200(Truth{});
  raw.gpu = "NVIDIA H100 PCIe";
  write_raw_hdf5(dir + "/calibration.h5", raw);
  const std::string fit = std::string(CLUSTERTWIN_CLI) + " calibrate fit --raw " + dir +
                          "/calibration.h5 -o " + dir + "/p.json";
  const int refused = std::system((fit + " > " + dir + "/out.txt 2>&1").c_str());
  EXPECT_NE(refused, 0);
  EXPECT_NE(read_text(dir + "/out.txt").find("no shipped profile describes this GPU"),
            std::string::npos)
      << read_text(dir + "/out.txt");
  // With an explicit base the same file fits (the H200 figures are then > 1 of an H100: refused
  // as a measurement error, not clamped).
  const int against_h100 =
      std::system((fit + " --base h100-sxm > " + dir + "/out2.txt 2>&1").c_str());
  EXPECT_NE(against_h100, 0);
  EXPECT_NE(read_text(dir + "/out2.txt").find("measurement error"), std::string::npos)
      << read_text(dir + "/out2.txt");
  EXPECT_EQ(std::system((fit + " --base h200-sxm > /dev/null 2>&1").c_str()), 0);
}

}  // namespace
}  // namespace twin::calibrate
