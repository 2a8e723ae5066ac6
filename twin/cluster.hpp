#pragma once
/// A cluster built once from a scenario: its fabric (generated or imported), the fabric state
/// the scenario's perturbations describe, and the GPU's hardware profile — the one source of
/// the hardware every analysis uses. The step, the campaign, a sweep point, a collective run and
/// the app each take a Cluster instead of rebuilding these from the scenario.
///
/// Variants of the same hardware (another job, a straggler, degraded cables, an interleaving
/// tried by `virtual_stages: auto`) come from `with()`, which shares the fabric and the profile
/// when the scenario's cluster and fabric sections are unchanged.

#include <memory>

#include "calibrate/profile.hpp"
#include "topology/fabric.hpp"
#include "topology/fabric_state.hpp"
#include "twin/scenario.hpp"

namespace twin::sim {

class Cluster {
 public:
  /// Builds the fabric, applies the perturbations and loads the profile. Throws core::Error
  /// naming the field for a fabric that cannot be built, a perturbation naming a part the
  /// fabric lacks, or an unknown profile.
  explicit Cluster(Scenario scenario);

  /// The same hardware under another scenario: the fabric and profile are shared when its
  /// cluster and fabric sections equal this one's, rebuilt otherwise.
  [[nodiscard]] Cluster with(Scenario scenario) const;
  /// The same fabric and scenario on another profile (a refitted figure, a what-if GPU).
  [[nodiscard]] Cluster with_profile(calibrate::Profile profile) const;

  [[nodiscard]] const Scenario& scenario() const { return scenario_; }
  [[nodiscard]] const topology::Fabric& fabric() const { return *fabric_; }
  [[nodiscard]] std::shared_ptr<const topology::Fabric> shared_fabric() const { return fabric_; }
  /// The fabric with the scenario's failed switches and failed or degraded cables.
  [[nodiscard]] const topology::FabricState& state() const { return *state_; }
  [[nodiscard]] const calibrate::Profile& profile() const { return *profile_; }

 private:
  Cluster(Scenario scenario, std::shared_ptr<const topology::Fabric> fabric,
          std::shared_ptr<const calibrate::Profile> profile);

  Scenario scenario_;
  std::shared_ptr<const topology::Fabric> fabric_;
  std::shared_ptr<const calibrate::Profile> profile_;
  std::shared_ptr<const topology::FabricState> state_;
};

}  // namespace twin::sim
