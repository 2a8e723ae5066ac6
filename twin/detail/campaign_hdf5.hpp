#pragma once
// campaign.h5, written as trials finish: /trials (one row per trial) and /events, flushed per
// trial so a killed run keeps what it finished. Event kinds and causes are stored as codes with
// their names in the root attributes event_kinds and event_causes.

#include <H5Cpp.h>

#include <string>
#include <vector>

#include "twin/campaign.hpp"

namespace twin::sim::detail {

class CampaignHdf5 {
 public:
  explicit CampaignHdf5(const std::string& path);
  ~CampaignHdf5();
  void trial(int i, const TrialResult& r, const std::vector<CampaignEvent>& events);

 private:
  struct Table {
    std::vector<H5::DataSet> columns;
    hsize_t rows = 0;
  };
  Table make(const std::string& group, const std::vector<std::string>& names);
  void append(Table& t, const std::vector<double>& row);
  static int code(std::vector<std::string>& list, const std::string& name);
  H5::H5File file_;
  Table trials_, events_;
  std::vector<std::string> kinds_, causes_;
};

}  // namespace twin::sim::detail
