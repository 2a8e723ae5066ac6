#include "calibrate/raw_data.hpp"

#include <fmt/format.h>

#include <H5Cpp.h>
#include <algorithm>
#include <cmath>

#include "core/error.hpp"

namespace twin::calibrate {
namespace {

void write_column(H5::Group& group, const std::string& name, const std::vector<double>& values) {
  const hsize_t dims[1] = {values.size()};
  H5::DataSpace space(1, dims);
  H5::DataSet set = group.createDataSet(name, H5::PredType::NATIVE_DOUBLE, space);
  if (!values.empty()) set.write(values.data(), H5::PredType::NATIVE_DOUBLE);
}

std::vector<double> read_column(const H5::Group& group, const std::string& name) {
  H5::DataSet set = group.openDataSet(name);
  hsize_t dims[1] = {0};
  set.getSpace().getSimpleExtentDims(dims);
  std::vector<double> values(dims[0]);
  if (!values.empty()) set.read(values.data(), H5::PredType::NATIVE_DOUBLE);
  return values;
}

void write_text_attribute(H5::H5Object& object, const std::string& name, const std::string& value) {
  H5::StrType type(H5::PredType::C_S1, std::max<std::size_t>(1, value.size()));
  H5::Attribute a = object.createAttribute(name, type, H5::DataSpace(H5S_SCALAR));
  a.write(type, value.empty() ? std::string(" ") : value);
}

std::string read_text_attribute(const H5::H5Object& object, const std::string& name) {
  if (!object.attrExists(name)) return {};
  H5::Attribute a = object.openAttribute(name);
  std::string value;
  a.read(a.getStrType(), value);
  return value;
}

void write_int_attribute(H5::H5Object& object, const std::string& name, int value) {
  H5::Attribute a =
      object.createAttribute(name, H5::PredType::NATIVE_INT, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_INT, &value);
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

void write_double_attribute(H5::H5Object& object, const std::string& name, double value) {
  H5::Attribute a =
      object.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR));
  a.write(H5::PredType::NATIVE_DOUBLE, &value);
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
  try {
    H5::Exception::dontPrint();
    H5::H5File file(path, H5F_ACC_TRUNC);
    H5::Group root = file.openGroup("/");
    write_text_attribute(root, "format", "clustertwin-calibration");
    write_int_attribute(root, "version", 2);
    write_text_attribute(root, "gpu", raw.gpu);
    write_text_attribute(root, "host", raw.host);
    write_text_attribute(root, "date", raw.date);
    write_double_attribute(root, "l2_bytes", raw.l2_bytes);
    write_text_attribute(root, "monitor", raw.monitor);
    write_text_attribute(root, "time_over_ranks", raw.time_over_ranks);
    H5::Group gemm = file.createGroup("/gemm");
    for (const auto& [dtype, samples] : raw.gemm) {
      H5::Group g = gemm.createGroup(dtype);
      std::vector<double> m, n, k, t, f, clock, temperature, power;
      for (const auto& s : samples) {
        m.push_back(s.m);
        n.push_back(s.n);
        k.push_back(s.k);
        t.push_back(s.time_us);
        f.push_back(s.tflops);
        clock.push_back(s.sm_clock_MHz);
        temperature.push_back(s.temperature_C);
        power.push_back(s.power_W);
      }
      write_column(g, "m", m);
      write_column(g, "n", n);
      write_column(g, "k", k);
      write_column(g, "time_us", t);
      write_column(g, "tflops", f);
      write_column(g, "sm_clock_MHz", clock);
      write_column(g, "temperature_C", temperature);
      write_column(g, "power_W", power);
    }
    H5::Group hbm = file.createGroup("/hbm");
    std::vector<double> b, t, bw;
    for (const auto& s : raw.hbm) {
      b.push_back(s.bytes);
      t.push_back(s.time_us);
      bw.push_back(s.GBps);
    }
    write_column(hbm, "bytes", b);
    write_column(hbm, "time_us", t);
    write_column(hbm, "GBps", bw);
    H5::Group coll = file.createGroup("/collectives");
    for (const auto& [op, c] : raw.collectives) {
      H5::Group g = coll.createGroup(op);
      write_int_attribute(g, "ranks", c.ranks);
      write_int_attribute(g, "nodes", c.nodes);
      write_column(g, "size_bytes", c.size_bytes);
      write_column(g, "time_us", c.time_us);
      write_column(g, "algbw_GBps", c.algbw_GBps);
      write_column(g, "busbw_GBps", c.busbw_GBps);
    }
  } catch (const H5::Exception& e) {
    throw core::Error("", "", "cannot write calibration HDF5: " + e.getDetailMsg(), path);
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
