// results.h5 for a training step: plain 1-D datasets, readable with h5py or h5dump.
#include <string>
#include <utility>

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
  timeline.column("stage", r.timeline, &TimelineOp::stage);
  timeline.column("start_s", r.timeline, &TimelineOp::start_s);
  timeline.column("end_s", r.timeline, &TimelineOp::end_s);
  timeline.column("stream", r.timeline, &TimelineOp::stream);
  timeline.column("name", r.timeline, &TimelineOp::name);
  h5::Group links = root.group("links");
  std::vector<double> utilization(r.link_bytes.size(), 0.0);
  for (std::size_t i = 0; i < r.link_bytes.size() && i < capacity.size(); ++i)
    utilization[i] = capacity[i] > 0 ? r.link_bytes[i] / (capacity[i] * r.step_time_s) : 0.0;
  links.column("bytes_per_step", r.link_bytes);
  links.column("utilization", utilization);
  h5::Group breakdown = root.group("breakdown");
  using Entry = std::pair<std::string, double>;  // category, seconds
  breakdown.column("category", r.breakdown, &Entry::first);
  breakdown.column("seconds", r.breakdown, &Entry::second);
}

}  // namespace twin::sim
