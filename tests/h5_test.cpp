// The HDF5 outputs keep their layout (what h5py users read): names, element types, lengths.
#include <gtest/gtest.h>

#include <H5Cpp.h>
#include <string>

#include "netsim/collective.hpp"
#include "topology/fabric.hpp"
#include "twin/campaign.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "twin/sweep.hpp"

namespace twin::sim {
namespace {

hsize_t length(const H5::DataSet& set) {
  hsize_t dims[1] = {0};
  set.getSpace().getSimpleExtentDims(dims);
  return dims[0];
}

TEST(Hdf5, StepResultsLayout) {
  const Scenario s =
      load_scenario(std::string(CLUSTERTWIN_SOURCE_DIR) + "/scenarios/small-3tier.yaml");
  const StepReport r = simulate_step(s);
  const topology::Fabric fabric(s.cluster, s.fabric);
  const std::string path = ::testing::TempDir() + "/results.h5";
  write_step_hdf5(path, r, netsim::link_capacities(fabric));
  H5::H5File file(path, H5F_ACC_RDONLY);
  double step = 0, gpus = 0;
  file.openGroup("/").openAttribute("step_time_s").read(H5::PredType::NATIVE_DOUBLE, &step);
  file.openGroup("/").openAttribute("gpus").read(H5::PredType::NATIVE_DOUBLE, &gpus);
  EXPECT_EQ(step, r.step_time_s);
  EXPECT_EQ(gpus, 64.0);
  const H5::DataSet stage = file.openDataSet("/timeline/stage");
  EXPECT_EQ(stage.getTypeClass(), H5T_INTEGER);
  EXPECT_EQ(length(stage), r.timeline.size());
  const H5::DataSet name = file.openDataSet("/timeline/name");
  EXPECT_EQ(name.getTypeClass(), H5T_STRING);
  std::size_t widest = 1;
  for (const auto& op : r.timeline) widest = std::max(widest, op.name.size());
  EXPECT_EQ(name.getStrType().getSize(), widest);  // fixed length, as wide as the longest
  EXPECT_EQ(length(file.openDataSet("/links/utilization")), fabric.link_count());
  EXPECT_EQ(length(file.openDataSet("/breakdown/seconds")), r.breakdown.size());
}

TEST(Hdf5, CampaignLayout) {
  CampaignInputs in;
  in.nodes = 16;
  in.gpus = 128;
  in.work_s = 5 * 86400.0;
  in.failures.node_mtbf_hours = 200;
  CampaignOptions o;
  o.trials = 3;
  o.threads = 1;
  o.out_dir = ::testing::TempDir() + "/h5_campaign";
  const CampaignReport rep = run_campaign(in, o);
  H5::H5File file(o.out_dir + "/campaign.h5", H5F_ACC_RDONLY);
  for (const char* column :
       {"trial", "wall_days", "ettr", "interruptions", "spares_used", "checkpoints"})
    EXPECT_EQ(length(file.openDataSet(std::string("/trials/") + column)), 3u) << column;
  // Every event of every trial, one row each; trial 0's timeline is the report's sample.
  std::size_t events = 0;
  for (int t = 0; t < 3; ++t) {
    std::vector<CampaignEvent> e;
    run_trial(in, rep.interval_s, o.seed, t, &e);
    events += e.size();
  }
  EXPECT_EQ(length(file.openDataSet("/events/time_h")), events);
  H5::Attribute kinds = file.openGroup("/").openAttribute("event_kinds");
  std::string text;
  kinds.read(kinds.getStrType(), text);
  EXPECT_NE(text.find("checkpoint;"), std::string::npos) << text;
  EXPECT_NE(text.find("done;"), std::string::npos) << text;
}

}  // namespace
}  // namespace twin::sim
