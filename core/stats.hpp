#pragma once
/// Small statistics shared by the fitting and reporting code.

#include <algorithm>
#include <vector>

namespace twin::core {

/// Median of the values (0 for none); the average of the two middle ones for an even count.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace twin::core
