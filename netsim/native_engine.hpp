#pragma once
/// The native flow engine: an incremental max-min solver laid out for data locality.
///
/// Flows and links live in dense arrays (routes in one CSR array of hops; the active flows of
/// each link in a vector with O(1) removal). When flows start or end, only the connected
/// component of the flow-link graph that they touch is re-solved; every other flow keeps its
/// rate and its pending completion event (lazy update, as SimGrid's lmm does). Time is a double
/// in seconds here: completion times come from rates, and events closer than 1e-12 relative
/// are processed together. One instance per thread is safe; an instance holds no state between
/// runs.

#include "netsim/engine.hpp"

namespace twin::netsim {

class NativeEngine final : public Engine {
 public:
  FlowResult run(const FlowSet& flows, const std::vector<double>& capacity_Bps) override;
  [[nodiscard]] std::string name() const override { return "native"; }
};

}  // namespace twin::netsim
