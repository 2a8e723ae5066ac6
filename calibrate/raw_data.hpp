#pragma once
/// Raw calibration measurements (what clustertwin-calib measures on a real node) and their HDF5
/// file, plus the fits that turn them into profile figures (calibrate/raw_fit.cpp).
///
/// HDF5 layout (one file per run):
///   /    attributes: format "clustertwin-calibration", version 2, gpu, host, date,
///        l2_bytes (the GPU's L2 size), monitor (how clocks were read, or why not),
///        time_over_ranks ("average" or "maximum")
///   /gemm/<dtype>/{m,n,k,time_us,tflops,sm_clock_MHz,temperature_C,power_W}  one row per shape
///   /hbm/{bytes,time_us,GBps}                     one row per copy size (bytes copied)
///   /collectives/<op>/{size_bytes,time_us,algbw_GBps,busbw_GBps}  attributes ranks, nodes
/// Columns are plain 1-D datasets so any HDF5 tool (h5dump, h5py) reads them without our code.
/// Version 1 files (no clocks, no l2_bytes) read with those fields NaN / 0.

#include <limits>
#include <map>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"

namespace twin::calibrate {

struct GemmSample {
  double m = 0, n = 0, k = 0;
  double time_us = 0;  ///< median of the timed calls
  double tflops = 0;
  /// Observed while the shape ran (NaN when not recorded): mean SM clock, highest temperature,
  /// mean board power.
  double sm_clock_MHz = std::numeric_limits<double>::quiet_NaN();
  double temperature_C = std::numeric_limits<double>::quiet_NaN();
  double power_W = std::numeric_limits<double>::quiet_NaN();
};
struct HbmSample {
  double bytes = 0, time_us = 0, GBps = 0;
};
struct CollectiveSamples {
  int ranks = 0, nodes = 0;
  std::vector<double> size_bytes, time_us, algbw_GBps, busbw_GBps;
};

struct RawCalibration {
  std::string gpu, host, date;
  double l2_bytes = 0;                                  ///< the GPU's L2 size (0: unknown)
  std::string monitor;                                  ///< how clocks were recorded, or why not
  std::string time_over_ranks = "average";              ///< how collective times combine ranks
  std::map<std::string, std::vector<GemmSample>> gemm;  ///< by dtype
  std::vector<HbmSample> hbm;
  std::map<std::string, CollectiveSamples> collectives;  ///< by op
};

void write_raw_hdf5(const std::string& path, const RawCalibration& raw);
/// Throws core::Error naming the file and the missing or malformed group.
RawCalibration read_raw_hdf5(const std::string& path);

/// Fits the profile's GEMM model to measured throughput for one dtype: gemm_half_dim by a
/// search over a log grid, gemm_peak_efficiency by least squares given it (efficiency is
/// linear in it), keeping only half dimensions whose peak efficiency is physical (<= 1).
/// A shape measured above the datasheet peak is a measurement error: core::Error naming it.
/// Returns the median absolute error of predicted TFLOP/s, in percent.
double fit_gemm_into(const std::vector<GemmSample>& samples, const std::string& dtype,
                     Profile& profile, const std::string& origin);

/// Copies whose working set (source + destination) is at least this many times the L2 size
/// count as HBM-bound; smaller ones are partly served from L2.
inline constexpr double kHbmMinWorkingSetOverL2 = 8;

/// HBM efficiency = plateau copy bandwidth / datasheet peak, the plateau being the median
/// (read + write) bandwidth over the copies whose working set is at least
/// kHbmMinWorkingSetOverL2 x `l2_bytes`. Never clamped: a plateau above the datasheet peak is a
/// measurement error (L2 residency, a wrong base profile) and throws core::Error, as does an
/// unknown L2 size or a sweep with no HBM-bound copy.
void fit_hbm_into(const std::vector<HbmSample>& samples, double l2_bytes, Profile& profile,
                  const std::string& origin);

/// What fit_raw_into changed.
struct RawFitReport {
  std::vector<std::string> lines;  ///< one per fitted quantity, human-readable
};

/// Fits everything a raw calibration holds into `profile`: bf16 GEMM (>= 2 shapes), HBM,
/// and each collective measured on >= 2 ranks and >= 2 sizes (via fit_log_into, at the
/// raw file's ranks / nodes).
RawFitReport fit_raw_into(const RawCalibration& raw, Profile& profile, const std::string& origin);

/// Side-by-side table of the figures a calibration measures: GEMM, HBM and every collective
/// curve of `measured`, against `shipped` (its base), with the ratio.
std::string side_by_side(const Profile& shipped, const Profile& measured);

}  // namespace twin::calibrate
