// results.h5 for a training step: plain 1-D datasets, readable with h5py or h5dump.
#include "h5/writer.hpp"
#include "twin/step_sim.hpp"

namespace twin::sim {

void write_step_hdf5(const std::string& path, const StepReport& r,
                     const std::vector<double>& capacity) {
  h5::File file(path, "HDF5 results", "--out");
  h5::Group root = file.root();
  root.attribute("step_time_s", r.step_time_s);
  root.attribute("tokens_per_s", r.tokens_per_s);
  root.attribute("mfu", r.mfu);
  root.attribute("tflops_per_gpu", r.tflops_per_gpu);
  root.attribute("gpus", static_cast<double>(r.gpus));
  h5::Group timeline = root.group("timeline");
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
  timeline.column("stage", stage);
  timeline.column("start_s", start);
  timeline.column("end_s", end);
  timeline.column("stream", stream);
  timeline.column("name", name);
  h5::Group links = root.group("links");
  std::vector<double> utilization(r.link_bytes.size(), 0.0);
  for (std::size_t i = 0; i < r.link_bytes.size() && i < capacity.size(); ++i)
    utilization[i] = capacity[i] > 0 ? r.link_bytes[i] / (capacity[i] * r.step_time_s) : 0.0;
  links.column("bytes_per_step", r.link_bytes);
  links.column("utilization", utilization);
  h5::Group breakdown = root.group("breakdown");
  std::vector<std::string> names;
  std::vector<double> seconds;
  for (const auto& [n, s] : r.breakdown) {
    names.push_back(n);
    seconds.push_back(s);
  }
  breakdown.column("category", names);
  breakdown.column("seconds", seconds);
}

}  // namespace twin::sim
