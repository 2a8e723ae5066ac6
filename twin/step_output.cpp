// results.h5 for a training step: plain 1-D datasets, readable with h5py or h5dump.
#include <H5Cpp.h>

#include <algorithm>

#include "core/error.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {
namespace {

template <class T>
void column(H5::Group& g, const std::string& name, const std::vector<T>& values,
            const H5::PredType& type) {
  const hsize_t dims[1] = {values.size()};
  H5::DataSet set = g.createDataSet(name, type, H5::DataSpace(1, dims));
  if (!values.empty()) set.write(values.data(), type);
}

void strings(H5::Group& g, const std::string& name, const std::vector<std::string>& values) {
  std::size_t width = 1;
  for (const auto& v : values) width = std::max(width, v.size());
  std::vector<char> packed(values.size() * width, '\0');
  for (std::size_t i = 0; i < values.size(); ++i)
    std::copy(values[i].begin(), values[i].end(), packed.begin() + i * width);
  H5::StrType type(H5::PredType::C_S1, width);
  const hsize_t dims[1] = {values.size()};
  H5::DataSet set = g.createDataSet(name, type, H5::DataSpace(1, dims));
  if (!values.empty()) set.write(packed.data(), type);
}

void attribute(H5::H5Object& o, const std::string& name, double value) {
  o.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR))
      .write(H5::PredType::NATIVE_DOUBLE, &value);
}

}  // namespace

void write_step_hdf5(const std::string& path, const StepReport& r,
                     const std::vector<double>& capacity) {
  try {
    H5::Exception::dontPrint();
    H5::H5File file(path, H5F_ACC_TRUNC);
    H5::Group root = file.openGroup("/");
    attribute(root, "step_time_s", r.step_time_s);
    attribute(root, "tokens_per_s", r.tokens_per_s);
    attribute(root, "mfu", r.mfu);
    attribute(root, "tflops_per_gpu", r.tflops_per_gpu);
    attribute(root, "gpus", r.gpus);
    H5::Group timeline = file.createGroup("/timeline");
    std::vector<int> stage;
    std::vector<double> start, end;
    std::vector<std::string> stream, name;
    for (const auto& op : r.timeline) {
      stage.push_back(op.stage);
      start.push_back(op.start_s);
      end.push_back(op.end_s);
      stream.push_back(op.stream);
      name.push_back(op.name);
    }
    column(timeline, "stage", stage, H5::PredType::NATIVE_INT);
    column(timeline, "start_s", start, H5::PredType::NATIVE_DOUBLE);
    column(timeline, "end_s", end, H5::PredType::NATIVE_DOUBLE);
    strings(timeline, "stream", stream);
    strings(timeline, "name", name);
    H5::Group links = file.createGroup("/links");
    std::vector<double> utilization(r.link_bytes.size(), 0.0);
    for (std::size_t i = 0; i < r.link_bytes.size() && i < capacity.size(); ++i)
      utilization[i] = capacity[i] > 0 ? r.link_bytes[i] / (capacity[i] * r.step_time_s) : 0.0;
    column(links, "bytes_per_step", r.link_bytes, H5::PredType::NATIVE_DOUBLE);
    column(links, "utilization", utilization, H5::PredType::NATIVE_DOUBLE);
    H5::Group breakdown = file.createGroup("/breakdown");
    std::vector<std::string> names;
    std::vector<double> seconds;
    for (const auto& [n, s] : r.breakdown) {
      names.push_back(n);
      seconds.push_back(s);
    }
    strings(breakdown, "category", names);
    column(breakdown, "seconds", seconds, H5::PredType::NATIVE_DOUBLE);
  } catch (const H5::Exception& e) {
    throw core::Error("--out", path, "cannot write HDF5 results: " + e.getDetailMsg());
  }
}

}  // namespace twin::sim
