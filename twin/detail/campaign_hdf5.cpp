// campaign.h5 (see twin/detail/campaign_hdf5.hpp).
#include "twin/detail/campaign_hdf5.hpp"

#include <algorithm>


namespace twin::sim::detail {

namespace {
constexpr double kDay = 86400.0;

}  // namespace

CampaignHdf5::CampaignHdf5(const std::string& out_dir)
    : file_(out_dir + "/campaign.h5", "campaign.h5", "--out"),
      root_(file_.root()),
      trials_(root_.group("trials"),
              {"trial", "wall_days", "ettr", "interruptions", "spares_used", "checkpoints"}),
      events_(root_.group("events"), {"trial", "time_h", "kind", "cause", "progress"}) {}

void CampaignHdf5::trial(int i, const TrialResult& r, const std::vector<CampaignEvent>& events) {
  trials_.append({static_cast<double>(i), r.wall_s / kDay, r.ettr,
                  static_cast<double>(r.interruptions), static_cast<double>(r.spares_used),
                  static_cast<double>(r.checkpoints)});
  std::vector<std::vector<double>> columns(5);  // one write per column, not per event
  for (auto& c : columns) c.reserve(events.size());
  for (const auto& e : events) {
    columns[0].push_back(static_cast<double>(e.trial));
    columns[1].push_back(e.time_h);
    columns[2].push_back(static_cast<double>(code(kinds_, e.kind)));
    columns[3].push_back(static_cast<double>(code(causes_, e.cause)));
    columns[4].push_back(e.progress);
  }
  events_.append_columns(columns);
  file_.flush();
}

CampaignHdf5::~CampaignHdf5() {
  try {
    auto names = [&](const char* attr, const std::vector<std::string>& list) {
      std::string joined;
      for (const auto& s : list) joined += s + ";";
      root_.attribute(attr, joined);
    };
    names("event_kinds", kinds_);
    names("event_causes", causes_);
  } catch (...) {
    // A destructor must not throw; the trials themselves are already flushed.
  }
}

int CampaignHdf5::code(std::vector<std::string>& list, const std::string& name) {
  auto it = std::find(list.begin(), list.end(), name);
  if (it != list.end()) return static_cast<int>(it - list.begin());
  list.push_back(name);
  return static_cast<int>(list.size() - 1);
}

}  // namespace twin::sim::detail
