// The warm-up's statistics on a window of step times (dlpt/capture/warmup.py), native because
// they run at every step end on the program's thread while the warm-up lasts: over 32 steps the
// 496 pairwise slopes cost the step ~100 µs in Python (a 2 ms CPU step grew 3-5% across the
// window, offsetting about the 5% fall the test looks for), ~2 µs here (docs/overhead.md).
#pragma once

#include <cstdint>
#include <vector>

namespace dlpt {

/// Both trend statistics of one series, from the slopes between every pair of its points
/// (x = 0, 1, ...).
struct PairwiseTrend {
  double slope = 0.0;     // Theil-Sen: the median of the pairwise slopes (0 with fewer than 2 points)
  int64_t kendall_s = 0;  // Kendall's S: pairs that rose minus pairs that fell
};

/// [MT] The pairwise trend of `values` (oldest first). Matches Python's
/// statistics.median([(v[j] - v[i]) / (j - i) for i < j]) bit for bit where the values are
/// integers below 2**53 or doubles (every difference is exact, the division rounds once).
PairwiseTrend pairwise_trend(const std::vector<double>& values);

}  // namespace dlpt
