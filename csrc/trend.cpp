#include "trend.h"

#include <algorithm>

namespace dlpt {

PairwiseTrend pairwise_trend(const std::vector<double>& values) {
  PairwiseTrend out;
  const size_t n = values.size();
  if (n < 2) return out;
  std::vector<double> slopes;
  slopes.reserve(n * (n - 1) / 2);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) {
      const double rise = values[j] - values[i];
      slopes.push_back(rise / static_cast<double>(j - i));
      out.kendall_s += (rise > 0) - (rise < 0);
    }
  }
  // The median as statistics.median takes it: the middle one, or the mean of the middle two.
  const size_t half = slopes.size() / 2;
  std::nth_element(slopes.begin(), slopes.begin() + half, slopes.end());
  const double upper = slopes[half];
  if (slopes.size() % 2) {
    out.slope = upper;
  } else {
    const double lower = *std::max_element(slopes.begin(), slopes.begin() + half);
    out.slope = (lower + upper) / 2;
  }
  return out;
}

}  // namespace dlpt
