#include "topology/spec.hpp"

#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::topology {

std::string_view to_string(RoutingMode mode) {
  switch (mode) {
    case RoutingMode::dmodk:
      return "dmodk";
    case RoutingMode::ecmp:
      return "ecmp";
    case RoutingMode::adaptive:
      return "adaptive";
  }
  return "?";
}

std::vector<std::string> routing_mode_names() {
  return {"dmodk", "ecmp", "adaptive"};
}

RoutingMode parse_routing_mode(std::string_view text, std::string_view field) {
  if (text == "dmodk") return RoutingMode::dmodk;
  if (text == "ecmp") return RoutingMode::ecmp;
  if (text == "adaptive") return RoutingMode::adaptive;
  throw core::Error(std::string(field), std::string(text),
                    "unknown routing mode; valid: " + core::quoted_list(routing_mode_names()) +
                        core::did_you_mean(text, routing_mode_names()));
}

}  // namespace twin::topology
