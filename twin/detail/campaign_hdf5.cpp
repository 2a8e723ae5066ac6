// campaign.h5 (see twin/detail/campaign_hdf5.hpp).
#include "twin/detail/campaign_hdf5.hpp"

#include <algorithm>

#include "twin/detail/hdf5_error.hpp"

namespace twin::sim::detail {

namespace {
constexpr double kDay = 86400.0;
}

CampaignHdf5::CampaignHdf5(const std::string& path) {
  H5::Exception::dontPrint();
  try {
    file_ = H5::H5File(path, H5F_ACC_TRUNC);
  } catch (const H5::Exception& e) {
    throw hdf5_create_error(path, e.getDetailMsg());
  }
  trials_ = make("/trials",
                 {"trial", "wall_days", "ettr", "interruptions", "spares_used", "checkpoints"});
  events_ = make("/events", {"trial", "time_h", "kind", "cause", "progress"});
}

void CampaignHdf5::trial(int i, const TrialResult& r, const std::vector<CampaignEvent>& events) {
  append(trials_,
         {static_cast<double>(i), r.wall_s / kDay, r.ettr, static_cast<double>(r.interruptions),
          static_cast<double>(r.spares_used), static_cast<double>(r.checkpoints)});
  for (const auto& e : events)
    append(events_,
           {static_cast<double>(e.trial), e.time_h, static_cast<double>(code(kinds_, e.kind)),
            static_cast<double>(code(causes_, e.cause)), e.progress});
  file_.flush(H5F_SCOPE_GLOBAL);
}

CampaignHdf5::~CampaignHdf5() {
  try {
    H5::Group root = file_.openGroup("/");
    auto names = [&](const char* attr, const std::vector<std::string>& list) {
      std::string joined;
      for (const auto& s : list) joined += s + ";";
      H5::StrType type(H5::PredType::C_S1, std::max<std::size_t>(1, joined.size()));
      root.createAttribute(attr, type, H5::DataSpace(H5S_SCALAR))
          .write(type, joined.empty() ? " " : joined);
    };
    names("event_kinds", kinds_);
    names("event_causes", causes_);
  } catch (...) {
    // A destructor must not throw; the trials themselves are already flushed.
  }
}

CampaignHdf5::Table CampaignHdf5::make(const std::string& group,
                                       const std::vector<std::string>& names) {
  Table t;
  H5::Group g = file_.createGroup(group);
  for (const auto& name : names) {
    hsize_t dims[1] = {0}, max[1] = {H5S_UNLIMITED}, chunk[1] = {4096};
    H5::DSetCreatPropList props;
    props.setChunk(1, chunk);
    t.columns.push_back(
        g.createDataSet(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, dims, max), props));
  }
  return t;
}

void CampaignHdf5::append(Table& t, const std::vector<double>& row) {
  const hsize_t size[1] = {t.rows + 1}, offset[1] = {t.rows}, count[1] = {1};
  for (std::size_t c = 0; c < row.size(); ++c) {
    t.columns[c].extend(size);
    H5::DataSpace space = t.columns[c].getSpace();
    space.selectHyperslab(H5S_SELECT_SET, count, offset);
    H5::DataSpace one(1, count);
    t.columns[c].write(&row[c], H5::PredType::NATIVE_DOUBLE, one, space);
  }
  ++t.rows;
}

int CampaignHdf5::code(std::vector<std::string>& list, const std::string& name) {
  auto it = std::find(list.begin(), list.end(), name);
  if (it != list.end()) return static_cast<int>(it - list.begin());
  list.push_back(name);
  return static_cast<int>(list.size() - 1);
}

}  // namespace twin::sim::detail
