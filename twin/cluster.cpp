#include "twin/cluster.hpp"

#include <utility>

#include "core/error.hpp"

namespace twin::sim {
namespace {

std::shared_ptr<const calibrate::Profile> load(const Scenario& s) {
  try {
    return std::make_shared<const calibrate::Profile>(calibrate::load_profile(s.cluster.gpu));
  } catch (const core::Error& e) {
    throw core::Error("cluster.gpu", s.cluster.gpu, e.reason(), s.source);
  }
}

}  // namespace

Cluster::Cluster(Scenario scenario)
    : Cluster(scenario, std::make_shared<const topology::Fabric>(scenario.cluster, scenario.fabric),
              load(scenario)) {}

Cluster::Cluster(Scenario scenario, std::shared_ptr<const topology::Fabric> fabric,
                 std::shared_ptr<const calibrate::Profile> profile)
    : scenario_(std::move(scenario)), fabric_(std::move(fabric)), profile_(std::move(profile)) {
  state_ = std::make_shared<const topology::FabricState>(fabric_state(scenario_, *fabric_));
}

Cluster Cluster::with(Scenario scenario) const {
  if (!(scenario.cluster == scenario_.cluster) || !(scenario.fabric == scenario_.fabric))
    return Cluster(std::move(scenario));
  return Cluster(std::move(scenario), fabric_, profile_);
}

Cluster Cluster::with_profile(calibrate::Profile profile) const {
  return Cluster(scenario_, fabric_,
                 std::make_shared<const calibrate::Profile>(std::move(profile)));
}

}  // namespace twin::sim
