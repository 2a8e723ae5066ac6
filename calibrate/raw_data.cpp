#include "calibrate/raw_data.hpp"

#include <fmt/format.h>

#include <H5Cpp.h>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"
#include "h5/writer.hpp"

namespace twin::calibrate {
namespace {

// Written through h5/writer.hpp like every other output; read back here with the HDF5 C++ API.

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

/// A column added in format version 2: NaN-filled when an older file lacks it.
std::vector<double> read_optional_column(const H5::Group& group, const std::string& name,
                                         std::size_t rows) {
  if (!group.nameExists(name)) return std::vector<double>(rows, std::nan(""));
  return read_column(group, name);
}

double read_double_attribute(const H5::H5Object& object, const std::string& name) {
  if (!object.attrExists(name)) return 0;
  double value = 0;
  object.openAttribute(name).read(H5::PredType::NATIVE_DOUBLE, &value);
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
  root.attribute("version", 2);
  root.attribute("gpu", raw.gpu);
  root.attribute("host", raw.host);
  root.attribute("date", raw.date);
  root.attribute("l2_bytes", raw.l2_bytes);
  root.attribute("monitor", raw.monitor);
  root.attribute("time_over_ranks", raw.time_over_ranks);
  h5::Group gemm = root.group("gemm");
  for (const auto& [dtype, samples] : raw.gemm) {
    h5::Group g = gemm.group(dtype);
    g.column("m", samples, &GemmSample::m);
    g.column("n", samples, &GemmSample::n);
    g.column("k", samples, &GemmSample::k);
    g.column("time_us", samples, &GemmSample::time_us);
    g.column("tflops", samples, &GemmSample::tflops);
    g.column("sm_clock_MHz", samples, &GemmSample::sm_clock_MHz);
    g.column("temperature_C", samples, &GemmSample::temperature_C);
    g.column("power_W", samples, &GemmSample::power_W);
  }
  h5::Group hbm = root.group("hbm");
  hbm.column("bytes", raw.hbm, &HbmSample::bytes);
  hbm.column("time_us", raw.hbm, &HbmSample::time_us);
  hbm.column("GBps", raw.hbm, &HbmSample::GBps);
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
    raw.l2_bytes = read_double_attribute(root, "l2_bytes");
    raw.monitor = read_text_attribute(root, "monitor");
    if (root.attrExists("time_over_ranks"))
      raw.time_over_ranks = read_text_attribute(root, "time_over_ranks");
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
      const auto clock = read_optional_column(g, "sm_clock_MHz", m.size());
      const auto temperature = read_optional_column(g, "temperature_C", m.size());
      const auto power = read_optional_column(g, "power_W", m.size());
      if (clock.size() != m.size() || temperature.size() != m.size() || power.size() != m.size())
        throw core::Error(where, "", "columns of different lengths", path);
      for (std::size_t i = 0; i < m.size(); ++i)
        raw.gemm[dtype].push_back(
            {m[i], n[i], k[i], t[i], f[i], clock[i], temperature[i], power[i]});
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
      const std::size_t rows = c.size_bytes.size();
      if (c.time_us.size() != rows || c.algbw_GBps.size() != rows || c.busbw_GBps.size() != rows)
        throw core::Error(where, "", "columns of different lengths", path);
      raw.collectives[op] = std::move(c);
    }
  } catch (const H5::Exception& e) {
    throw core::Error(where, "", "cannot read calibration HDF5: " + e.getDetailMsg(), path);
  }
  return raw;
}

}  // namespace twin::calibrate
