#pragma once
#include <string>

namespace twin::calibrate {

/// One number and where it came from.
struct Figure {
  double value = 0.0;
  std::string source;
};

}  // namespace twin::calibrate
