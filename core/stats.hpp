#pragma once
/// Small statistics shared by the fitting and reporting code.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace twin::core {

/// Median of the values (0 for none); the average of the two middle ones for an even count.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/// Mean of the smaller half of the values, ceil(n / 2) of them (0 for none): the objective of a
/// least-trimmed fit of absolute deviations. Like the median it ignores the larger half whatever
/// it holds; unlike the median, a single order statistic, it averages the whole smaller half, so
/// it moves smoothly as the values do.
inline double mean_of_smaller_half(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const std::size_t h = (values.size() + 1) / 2;
  std::sort(values.begin(), values.end());  // summed in ascending order: the same sum every time
  double sum = 0;
  for (std::size_t i = 0; i < h; ++i) sum += values[i];
  return sum / static_cast<double>(h);
}

}  // namespace twin::core
