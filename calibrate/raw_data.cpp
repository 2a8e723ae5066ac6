#include "calibrate/raw_data.hpp"

#include <fmt/format.h>

#include <H5Cpp.h>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "h5/writer.hpp"

namespace twin::calibrate {
namespace {

std::vector<double> read_column(const H5::Group& group, const std::string& name) {
  H5::DataSet set = group.openDataSet(name);
  hsize_t dims[1] = {0};
  set.getSpace().getSimpleExtentDims(dims);
  std::vector<double> values(dims[0]);
  if (!values.empty()) set.read(values.data(), H5::PredType::NATIVE_DOUBLE);
  return values;
}

std::string read_text_attribute(const H5::H5Object& object, const std::string& name) {
  if (!object.attrExists(name)) return {};
  H5::Attribute a = object.openAttribute(name);
  std::string value;
  a.read(a.getStrType(), value);
  return value;
}

int read_int_attribute(const H5::H5Object& object, const std::string& name) {
  if (!object.attrExists(name)) return 0;
  int value = 0;
  object.openAttribute(name).read(H5::PredType::NATIVE_INT, &value);
  return value;
}

std::vector<std::string> children(const H5::Group& group) {
  std::vector<std::string> names;
  for (hsize_t i = 0; i < group.getNumObjs(); ++i) names.push_back(group.getObjnameByIdx(i));
  return names;
}

}  // namespace

void write_raw_hdf5(const std::string& path, const RawCalibration& raw) {
  h5::File file(path, "calibration HDF5");
  h5::Group root = file.root();
  root.attribute("format", std::string("clustertwin-calibration"));
  root.attribute("version", 1);
  root.attribute("gpu", raw.gpu);
  root.attribute("host", raw.host);
  root.attribute("date", raw.date);
  h5::Group gemm = root.group("gemm");
  for (const auto& [dtype, samples] : raw.gemm) {
    h5::Group g = gemm.group(dtype);
    std::vector<double> m, n, k, t, f;
    for (const auto& s : samples) {
      m.push_back(s.m);
      n.push_back(s.n);
      k.push_back(s.k);
      t.push_back(s.time_us);
      f.push_back(s.tflops);
    }
    g.column("m", m);
    g.column("n", n);
    g.column("k", k);
    g.column("time_us", t);
    g.column("tflops", f);
  }
  h5::Group hbm = root.group("hbm");
  std::vector<double> b, t, bw;
  for (const auto& s : raw.hbm) {
    b.push_back(s.bytes);
    t.push_back(s.time_us);
    bw.push_back(s.GBps);
  }
  hbm.column("bytes", b);
  hbm.column("time_us", t);
  hbm.column("GBps", bw);
  h5::Group coll = root.group("collectives");
  for (const auto& [op, c] : raw.collectives) {
    h5::Group g = coll.group(op);
    g.attribute("ranks", c.ranks);
    g.attribute("nodes", c.nodes);
    g.column("size_bytes", c.size_bytes);
    g.column("time_us", c.time_us);
    g.column("algbw_GBps", c.algbw_GBps);
    g.column("busbw_GBps", c.busbw_GBps);
  }
}

RawCalibration read_raw_hdf5(const std::string& path) {
  RawCalibration raw;
  std::string where = "/";
  try {
    H5::Exception::dontPrint();
    H5::H5File file(path, H5F_ACC_RDONLY);
    H5::Group root = file.openGroup("/");
    if (read_text_attribute(root, "format") != "clustertwin-calibration")
      throw core::Error("format", read_text_attribute(root, "format"),
                        "not a clustertwin calibration file", path);
    raw.gpu = read_text_attribute(root, "gpu");
    raw.host = read_text_attribute(root, "host");
    raw.date = read_text_attribute(root, "date");
    where = "/gemm";
    H5::Group gemm = file.openGroup("/gemm");
    for (const auto& dtype : children(gemm)) {
      where = "/gemm/" + dtype;
      H5::Group g = gemm.openGroup(dtype);
      const auto m = read_column(g, "m"), n = read_column(g, "n"), k = read_column(g, "k");
      const auto t = read_column(g, "time_us"), f = read_column(g, "tflops");
      if (n.size() != m.size() || k.size() != m.size() || t.size() != m.size() ||
          f.size() != m.size())
        throw core::Error(where, "", "columns of different lengths", path);
      for (std::size_t i = 0; i < m.size(); ++i)
        raw.gemm[dtype].push_back({m[i], n[i], k[i], t[i], f[i]});
    }
    where = "/hbm";
    H5::Group hbm = file.openGroup("/hbm");
    const auto b = read_column(hbm, "bytes"), t = read_column(hbm, "time_us"),
               bw = read_column(hbm, "GBps");
    if (t.size() != b.size() || bw.size() != b.size())
      throw core::Error(where, "", "columns of different lengths", path);
    for (std::size_t i = 0; i < b.size(); ++i) raw.hbm.push_back({b[i], t[i], bw[i]});
    where = "/collectives";
    H5::Group coll = file.openGroup("/collectives");
    for (const auto& op : children(coll)) {
      where = "/collectives/" + op;
      H5::Group g = coll.openGroup(op);
      CollectiveSamples c;
      c.ranks = read_int_attribute(g, "ranks");
      c.nodes = read_int_attribute(g, "nodes");
      c.size_bytes = read_column(g, "size_bytes");
      c.time_us = read_column(g, "time_us");
      c.algbw_GBps = read_column(g, "algbw_GBps");
      c.busbw_GBps = read_column(g, "busbw_GBps");
      raw.collectives[op] = std::move(c);
    }
  } catch (const H5::Exception& e) {
    throw core::Error(where, "", "cannot read calibration HDF5: " + e.getDetailMsg(), path);
  }
  return raw;
}

double fit_gemm_into(const std::vector<GemmSample>& samples, const std::string& dtype,
                     Profile& profile, const std::string& origin) {
  if (samples.size() < 2)
    throw core::Error("gemm." + dtype, std::to_string(samples.size()),
                      "need at least 2 GEMM shapes to fit");
  const double peak = profile.peak_flops(dtype) / 1e12;
  double best_error = std::numeric_limits<double>::infinity();
  double best_half = 0, best_peak_eff = 0;
  Profile trial = profile;
  for (double half = 8; half <= 8192; half *= 1.0905077326652577) {  // 2^(1/8) steps
    trial.gemm_half_dim.value = half;
    trial.gemm_peak_efficiency.value = 1.0;
    // Least squares of measured = eff * peak * shape(m,n,k): eff = sum(x y) / sum(x x).
    double xy = 0, xx = 0;
    for (const auto& s : samples) {
      const double x = peak * trial.gemm_efficiency(s.m, s.n, s.k);
      xy += x * s.tflops;
      xx += x * x;
    }
    const double eff = xy / xx;
    std::vector<double> errors;
    for (const auto& s : samples)
      errors.push_back(
          std::abs(eff * peak * trial.gemm_efficiency(s.m, s.n, s.k) / s.tflops - 1.0));
    std::sort(errors.begin(), errors.end());
    const double median = errors[errors.size() / 2];
    if (median < best_error) {
      best_error = median;
      best_half = half;
      best_peak_eff = eff;
    }
  }
  profile.gemm_half_dim = {best_half,
                           fmt::format("fitted: {} ({} {} shapes)", origin, samples.size(), dtype)};
  profile.gemm_peak_efficiency = {
      std::min(1.0, best_peak_eff),
      fmt::format("fitted: {} ({} {} shapes)", origin, samples.size(), dtype)};
  return 100.0 * best_error;
}

void fit_hbm_into(const std::vector<HbmSample>& samples, Profile& profile,
                  const std::string& origin) {
  if (samples.empty()) throw core::Error("hbm", "", "no HBM copy measurements to fit");
  double best = 0;
  for (const auto& s : samples) best = std::max(best, s.GBps);
  profile.hbm_efficiency = {std::min(1.0, best / profile.hbm_GBps.value),
                            fmt::format("measured: {} (best copy {:.0f} GB/s of {:.0f})", origin,
                                        best, profile.hbm_GBps.value)};
}

}  // namespace twin::calibrate
