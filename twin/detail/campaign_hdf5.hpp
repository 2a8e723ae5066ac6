#pragma once
// campaign.h5, written as trials finish: /trials (one row per trial) and /events, flushed per
// trial so a killed run keeps what it finished. Event kinds and causes are stored as codes with
// their names in the root attributes event_kinds and event_causes.

#include <string>
#include <vector>

#include "h5/writer.hpp"
#include "twin/campaign.hpp"

namespace twin::sim::detail {

class CampaignHdf5 {
 public:
  /// Throws core::Error naming --out `out_dir` when the file cannot be created.
  explicit CampaignHdf5(const std::string& out_dir);
  ~CampaignHdf5();
  void trial(int i, const TrialResult& r, const std::vector<CampaignEvent>& events);

 private:
  static int code(std::vector<std::string>& list, const std::string& name);
  h5::File file_;
  h5::Group root_;
  h5::Table trials_, events_;
  std::vector<std::string> kinds_, causes_;
};

}  // namespace twin::sim::detail
