#include "busy.h"

#include <algorithm>

namespace dlpt {

namespace {
constexpr size_t kFoldAt = 1u << 16;
constexpr size_t kKeepSpans = 1024;  // recent spans left open for late, overlapping records
}  // namespace

void BusyTracker::add(uint32_t device, uint64_t start, uint64_t end) {
  if (end <= start) return;
  std::lock_guard<std::mutex> lock(mu_);
  Device& d = devices_[device];
  start = std::max(start, d.folded_until);
  if (end <= start) return;
  d.pending.emplace_back(start, end);
  if (d.pending.size() >= kFoldAt) fold(d, kKeepSpans);
}

void BusyTracker::fold(Device& d, size_t keep_spans) {
  auto& v = d.pending;
  std::sort(v.begin(), v.end());
  std::vector<std::pair<uint64_t, uint64_t>> merged;
  for (const auto& iv : v) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  size_t fold_n = merged.size() > keep_spans ? merged.size() - keep_spans : 0;
  for (size_t i = 0; i < fold_n; ++i) {
    d.folded_ns += merged[i].second - merged[i].first;
    d.folded_until = merged[i].second;
  }
  v.assign(merged.begin() + static_cast<long>(fold_n), merged.end());
}

std::map<uint32_t, uint64_t> BusyTracker::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<uint32_t, uint64_t> out;
  for (auto& [dev, d] : devices_) {
    fold(d, 0);
    out[dev] = d.folded_ns;
  }
  return out;
}

}  // namespace dlpt
