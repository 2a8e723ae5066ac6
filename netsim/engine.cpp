#include "netsim/engine.hpp"

#include "core/error.hpp"
#include "core/text.hpp"
#include "netsim/native_engine.hpp"
#include "netsim/simgrid_engine.hpp"

namespace twin::netsim {

std::unique_ptr<Engine> make_engine(const std::string& name) {
  if (name == "native") return std::make_unique<NativeEngine>();
  if (name == "simgrid") return std::make_unique<SimgridEngine>();
  throw core::Error("engine", name,
                    "unknown network engine; valid: 'native', 'simgrid'" +
                        core::did_you_mean(name, {"native", "simgrid"}));
}

}  // namespace twin::netsim
