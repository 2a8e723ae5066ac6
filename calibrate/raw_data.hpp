#pragma once
/// Raw calibration measurements (what clustertwin-calib measures on a real node) and their HDF5
/// file, plus the fits that turn them into profile figures.
///
/// HDF5 layout (one file per run):
///   /                       attributes: format "clustertwin-calibration", version 1, gpu, host,
///   date /gemm/<dtype>/{m,n,k,time_us,tflops}          one row per GEMM shape
///   /hbm/{bytes,time_us,GBps}                     one row per copy size
///   /collectives/<op>/{size_bytes,time_us,algbw_GBps,busbw_GBps}  attributes ranks, nodes
/// Columns are plain 1-D datasets so any HDF5 tool (h5dump, h5py) reads them without our code.

#include <map>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"

namespace twin::calibrate {

struct GemmSample {
  double m = 0, n = 0, k = 0, time_us = 0, tflops = 0;
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
  std::map<std::string, std::vector<GemmSample>> gemm;  ///< by dtype
  std::vector<HbmSample> hbm;
  std::map<std::string, CollectiveSamples> collectives;  ///< by op
};

void write_raw_hdf5(const std::string& path, const RawCalibration& raw);
/// Throws core::Error naming the file and the missing or malformed group.
RawCalibration read_raw_hdf5(const std::string& path);

/// Fits the profile's GEMM model to measured throughput for one dtype: gemm_half_dim by a
/// search over a log grid, gemm_peak_efficiency by least squares given it (efficiency is
/// linear in it). Returns the median absolute error of predicted TFLOP/s, in percent.
double fit_gemm_into(const std::vector<GemmSample>& samples, const std::string& dtype,
                     Profile& profile, const std::string& origin);

/// HBM efficiency = best measured copy bandwidth / datasheet peak.
void fit_hbm_into(const std::vector<HbmSample>& samples, Profile& profile,
                  const std::string& origin);

}  // namespace twin::calibrate
