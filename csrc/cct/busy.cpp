#include "busy.h"

#include <algorithm>

namespace dlpt {

namespace {
constexpr size_t kFoldAt = 1u << 16;
constexpr size_t kKeepSpans = 1024;  // recent spans left open for late, overlapping records

using Span = BusyTracker::Span;

/// Length of `spans` (sorted, disjoint) before `cut`.
uint64_t measure(const std::vector<Span>& spans, uint64_t cut) {
  uint64_t n = 0;
  for (const Span& s : spans) {
    if (s.first >= cut) break;
    n += std::min(s.second, cut) - s.first;
  }
  return n;
}

/// a minus b, both sorted and disjoint.
std::vector<Span> difference(const std::vector<Span>& a, const std::vector<Span>& b) {
  std::vector<Span> out;
  size_t j = 0;
  for (Span s : a) {
    while (j < b.size() && b[j].second <= s.first) ++j;
    size_t k = j;
    while (k < b.size() && b[k].first < s.second) {
      if (b[k].first > s.first) out.emplace_back(s.first, b[k].first);
      s.first = std::max(s.first, b[k].second);
      if (s.first >= s.second) break;
      ++k;
    }
    if (s.first < s.second) out.push_back(s);
  }
  return out;
}

/// The parts of `spans` at or after `cut`.
std::vector<Span> clip(const std::vector<Span>& spans, uint64_t cut) {
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (s.second > cut) out.emplace_back(std::max(s.first, cut), s.second);
  }
  return out;
}

/// Where the most recent `keep` spans begin (everything from there on stays open).
uint64_t open_from(const std::vector<Span>& merged, size_t keep) {
  if (merged.empty()) return UINT64_MAX;
  return merged[merged.size() > keep ? merged.size() - keep : 0].first;
}
}  // namespace

std::vector<Span> BusyTracker::merge(std::vector<Span> v) {
  std::sort(v.begin(), v.end());
  std::vector<Span> merged;
  for (const Span& iv : v) {
    if (!merged.empty() && iv.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, iv.second);
    } else {
      merged.push_back(iv);
    }
  }
  return merged;
}

void BusyTracker::add(uint32_t device, uint64_t start, uint64_t end, bool comm) {
  if (end <= start) return;
  std::lock_guard<std::mutex> lock(mu_);
  Device& d = devices_[device];
  start = std::max(start, d.folded_until);
  if (end <= start) return;
  (comm ? d.comm : d.work).emplace_back(start, end);
  if (d.work.size() + d.comm.size() >= kFoldAt) fold(d, false);
}

void BusyTracker::fold(Device& d, bool everything) {
  std::vector<Span> work = merge(std::move(d.work));
  std::vector<Span> comm = merge(std::move(d.comm));
  const uint64_t cut = everything ? UINT64_MAX : std::min(open_from(work, kKeepSpans), open_from(comm, kKeepSpans));
  std::vector<Span> all = work;
  all.insert(all.end(), comm.begin(), comm.end());
  d.folded.busy_ns += measure(merge(std::move(all)), cut);
  d.folded.comm_ns += measure(comm, cut);
  d.folded.exposed_ns += measure(difference(comm, work), cut);
  d.work = clip(work, cut);
  d.comm = clip(comm, cut);
  if (cut != UINT64_MAX) d.folded_until = std::max(d.folded_until, cut);
}

std::map<uint32_t, BusyTotals> BusyTracker::totals() {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<uint32_t, BusyTotals> out;
  for (auto& [dev, d] : devices_) {
    fold(d, true);
    out[dev] = d.folded;
  }
  return out;
}

}  // namespace dlpt
