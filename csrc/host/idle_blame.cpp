#include "idle_blame.h"

#include <algorithm>
#include <utility>

namespace dlpt::host {

const char* gap_name(Gap g) {
  switch (g) {
    case Gap::Before:
      return "before";
    case Gap::Between:
      return "between";
    case Gap::After:
      return "after";
    case Gap::Busy:
      return "busy";
  }
  return "?";
}

void IdleBlame::mark(uint64_t t, bool recorded, uint32_t corr_before) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!intervals_.empty() && t < intervals_.back().start) t = intervals_.back().start;
  corr_before_ = std::max(corr_before_, corr_before);
  Interval iv{t, recorded};
  iv.corr_before = corr_before_;
  intervals_.push_back(std::move(iv));
}

void IdleBlame::classify_open(bool counted) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!intervals_.empty() && !counted) intervals_.back().recorded = false;
}

void IdleBlame::set_open(bool recorded) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!intervals_.empty()) intervals_.back().recorded = recorded;
}

void IdleBlame::cut(bool extend) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i + 1 < intervals_.size(); ++i) {
    Interval& iv = intervals_[i];
    iv.dropped = iv.recorded || (extend && iv.dropped);  // else one an earlier cut dropped is gone
    iv.recorded = false;
  }
  if (!extend) dropped_ = BlameTotals{};
  merge_steps(totals_, dropped_);
  totals_.steps = 0;
  totals_.host.clear();
  totals_.devices.clear();
}

void IdleBlame::restore_last_cut() {
  std::lock_guard<std::mutex> lock(mu_);
  for (Interval& iv : intervals_) {
    if (iv.dropped) iv.recorded = true;
    iv.dropped = false;
  }
  merge_steps(dropped_, totals_);
  dropped_ = BlameTotals{};
}

void IdleBlame::merge_steps(const BlameTotals& from, BlameTotals& into) {
  into.steps += from.steps;
  for (const auto& [node, cell] : from.host) into.host[node].merge(cell);
  for (const auto& [dev, gaps] : from.devices) {
    auto& to = into.devices[dev];
    for (size_t g = 0; g < kGaps; ++g) {
      for (const auto& [node, cell] : gaps[g]) to[g][node].merge(cell);
    }
  }
}

void IdleBlame::work(uint32_t device, uint64_t start, uint64_t end, uint32_t corr) {
  if (!gpu_ || end <= start) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (intervals_.empty() || start < intervals_.front().start) {
    ++totals_.late_spans;  // before every unresolved step: its step was resolved (or none began)
    if (intervals_.empty() || end <= intervals_.front().start) return;
  } else {
    // The interval the work started in: the last one starting at or before it.
    auto it = std::upper_bound(intervals_.begin(), intervals_.end(), start,
                               [](uint64_t t, const Interval& iv) { return t < iv.start; });
    Interval& iv = *(it - 1);
    // Work launched before the interval's mark (queued behind the previous steps') keeps the
    // GPU busy, but is not the step's first or last work: idle after it is still "before".
    if (corr == 0 || corr > iv.corr_before) {
      auto [w, inserted] = iv.work.try_emplace(device, Span{start, end});
      if (!inserted) {
        w->second.first = std::min(w->second.first, start);
        w->second.second = std::max(w->second.second, end);
      }
    }
  }
  Device& d = devices_[device];
  if (d.pending.size() + d.merged.size() >= kMaxSpans) {
    pressure();
    if (d.pending.size() + d.merged.size() >= kMaxSpans) {
      ++totals_.spans_dropped;
      return;
    }
  }
  d.pending.emplace_back(start, end);
}

void IdleBlame::sample(uint64_t t, NodeId node, uint64_t weight_ns, bool gil) {
  std::lock_guard<std::mutex> lock(mu_);
  if (intervals_.empty() || t < intervals_.front().start) return;  // before the first mark
  if (samples_.size() >= kMaxSamples) {
    pressure();
    if (samples_.size() >= kMaxSamples) {
      ++totals_.samples_dropped;
      return;
    }
  }
  if (!samples_.empty() && t < samples_.back().t) t = samples_.back().t;  // keep them sorted
  samples_.push_back(Sample{t, weight_ns, node, gil});
}

void IdleBlame::pressure() {
  if (intervals_.size() >= 2) {
    ++totals_.resolved_early;
    resolve_one();
  }
}

bool IdleBlame::busy(Device& d, uint64_t t) {
  if (!d.pending.empty()) {
    d.merged.insert(d.merged.end(), d.pending.begin(), d.pending.end());
    d.pending.clear();
    std::sort(d.merged.begin(), d.merged.end());
    std::vector<Span> out;
    for (const Span& s : d.merged) {
      if (!out.empty() && s.first <= out.back().second) {
        out.back().second = std::max(out.back().second, s.second);
      } else {
        out.push_back(s);
      }
    }
    d.merged.swap(out);
  }
  auto it = std::upper_bound(d.merged.begin(), d.merged.end(), Span{t, UINT64_MAX});
  return it != d.merged.begin() && t < (it - 1)->second;
}

void IdleBlame::resolve_one() {
  const Interval iv = std::move(intervals_.front());
  intervals_.pop_front();
  const uint64_t end = intervals_.front().start;
  // A step the last cut dropped is resolved apart: restore_last_cut may count it again.
  BlameTotals* into = iv.recorded ? &totals_ : iv.dropped ? &dropped_ : nullptr;
  if (into != nullptr) {
    ++into->steps;
    if (gpu_) {
      // Every device seen so far is judged, also one without work in this step (idle throughout).
      for (auto& [dev, d] : devices_) (void)into->devices[dev];
    }
  }
  while (!samples_.empty() && samples_.front().t < end) {
    const Sample s = samples_.front();
    samples_.pop_front();
    if (into == nullptr || s.t < iv.start) continue;
    into->host[s.node].add(s.weight, s.gil);
    if (!gpu_) continue;
    for (auto& [dev, d] : devices_) {
      Gap gap = Gap::Busy;
      if (!busy(d, s.t)) {
        auto w = iv.work.find(dev);
        if (w == iv.work.end() || s.t < w->second.first) {
          gap = Gap::Before;
        } else if (s.t >= w->second.second) {
          gap = Gap::After;
        } else {
          gap = Gap::Between;
        }
      }
      into->devices[dev][static_cast<size_t>(gap)][s.node].add(s.weight, s.gil);
    }
  }
  // Spans that ended before the next interval cannot cover any later sample.
  for (auto& [dev, d] : devices_) {
    auto keep = [end](const Span& s) { return s.second > end; };
    d.merged.erase(std::stable_partition(d.merged.begin(), d.merged.end(), keep), d.merged.end());
    d.pending.erase(std::stable_partition(d.pending.begin(), d.pending.end(), keep), d.pending.end());
  }
}

void IdleBlame::settle(uint64_t now) {
  std::lock_guard<std::mutex> lock(mu_);
  while (intervals_.size() >= 2 && (!gpu_ || now >= intervals_[1].start + kSettleNs)) resolve_one();
}

BlameTotals IdleBlame::finish() {
  std::lock_guard<std::mutex> lock(mu_);
  while (intervals_.size() >= 2) resolve_one();
  samples_.clear();
  return totals_;
}

}  // namespace dlpt::host
