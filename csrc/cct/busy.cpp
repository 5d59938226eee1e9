#include "busy.h"

#include <algorithm>
#include <tuple>

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

long BusyTracker::step_of(uint64_t t) const {
  return static_cast<long>(std::upper_bound(marks_.begin(), marks_.end(), t) - marks_.begin()) - 1;
}

void BusyTracker::mark_step(uint64_t t, bool recorded, uint32_t epoch, uint32_t corr_before) {
  std::lock_guard<std::mutex> lock(mu_);
  if (marks_.size() == kMaxMarks || (!marks_.empty() && t < marks_.back())) return;
  marks_.push_back(t);
  recorded_.push_back(recorded);
  epochs_.push_back(epoch);
  // Two threads launching at a mark may store their ids out of order: never back.
  marks_corr_.push_back(marks_corr_.empty() ? corr_before : std::max(corr_before, marks_corr_.back()));
}

long BusyTracker::launched_in(uint32_t corr) const {
  if (corr == 0 || marks_corr_.empty() || marks_corr_.back() == 0) return kUnknownLaunch;
  return static_cast<long>(std::lower_bound(marks_corr_.begin(), marks_corr_.end(), corr) - marks_corr_.begin()) - 1;
}

void BusyTracker::add_to_steps(Device& d, const std::vector<Span>& merged, uint64_t cut, uint64_t StepAcc::* field) {
  if (marks_.empty()) return;
  if (d.steps.size() < marks_.size()) d.steps.resize(marks_.size());
  for (Span sp : merged) {
    if (sp.first >= cut) break;
    sp.second = std::min(sp.second, cut);
    long k = step_of(sp.first);
    if (k < 0) {
      if (sp.second <= marks_[0]) continue;
      sp.first = marks_[0];
      k = 0;
    }
    // A span across marks counts in each step for the part inside it.
    while (sp.first < sp.second) {
      const uint64_t step_end = static_cast<size_t>(k) + 1 < marks_.size() ? marks_[k + 1] : UINT64_MAX;
      const uint64_t part_end = std::min(sp.second, step_end);
      d.steps[k].*field += part_end - sp.first;
      sp.first = part_end;
      ++k;
    }
  }
}

void BusyTracker::file_step_edges(Device& d, uint64_t start, uint64_t end, uint32_t corr) {
  if (marks_.empty()) return;
  if (d.steps.size() < marks_.size()) d.steps.resize(marks_.size());
  const long k = step_of(start);
  if (k >= 0) {
    StepAcc& st = d.steps[k];
    const long launched = launched_in(corr);
    if (launched != kUnknownLaunch && launched < k) {
      // Launched in an earlier step, queued behind its work (a host that prepares the next
      // batch while the GPU runs): the GPU is busy with the past, not waiting for this step.
      st.carried_until = std::max(st.carried_until, end);
    } else {
      st.first = std::min(st.first, start);
      st.last = std::max(st.last, end);
    }
  }
  // The later marks it runs past: those steps begin with the GPU busy with it, not idle.
  for (size_t j = static_cast<size_t>(k + 1); j < marks_.size() && marks_[j] < end; ++j)
    d.steps[j].carried_until = std::max(d.steps[j].carried_until, end);
}

void BusyTracker::add(uint32_t device, uint64_t start, uint64_t end, bool comm, const CollectiveTag* tag,
                      uint32_t corr) {
  if (end <= start) return;
  std::lock_guard<std::mutex> lock(mu_);
  Device& d = devices_[device];
  if (comm && tag != nullptr) {
    if (collectives_kept_ < kMaxCollectives) {
      CollectiveRecord c;
      c.device = device;
      c.tag = *tag;
      c.start = start;
      c.end = end;
      // A record arriving after its time was folded: the other work then is gone, and its
      // exposure there reads as none (the report across ranks never counts a wait it cannot see).
      c.known_until = std::max(start, d.folded_until);
      d.open_collectives.push_back(c);
      ++collectives_kept_;
    } else {
      ++collectives_over_limit_;
    }
  }
  file_step_edges(d, start, end, corr);
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
  all = merge(std::move(all));
  d.folded.busy_ns += measure(all, cut);
  add_to_steps(d, all, cut, &StepAcc::busy);
  d.folded.comm_ns += measure(comm, cut);
  add_to_steps(d, comm, cut, &StepAcc::comm);
  file_exposure(d, work, cut);
  const std::vector<Span> exposed = difference(comm, work);
  d.folded.exposed_ns += measure(exposed, cut);
  add_to_steps(d, exposed, cut, &StepAcc::exposed);
  d.work = clip(work, cut);
  d.comm = clip(comm, cut);
  if (cut != UINT64_MAX) d.folded_until = std::max(d.folded_until, cut);
}

void BusyTracker::file_exposure(Device& d, const std::vector<Span>& work, uint64_t cut) {
  size_t kept = 0;
  for (CollectiveRecord& c : d.open_collectives) {
    const uint64_t until = std::min(c.end, cut);
    for (unsigned i = 0; i < kCollectiveBins && c.known_until < until; ++i) {
      const uint64_t from = std::max(c.bin_start(i), c.known_until);
      const uint64_t to = std::min(i + 1 == kCollectiveBins ? c.end : c.bin_start(i + 1), until);
      if (from >= to) continue;
      // Other work inside [from, to): `work` is sorted and disjoint.
      uint64_t covered = 0;
      auto it = std::upper_bound(work.begin(), work.end(), Span{from, UINT64_MAX});
      if (it != work.begin()) --it;
      for (; it != work.end() && it->first < to; ++it) {
        const uint64_t a = std::max(it->first, from), b = std::min(it->second, to);
        if (b > a) covered += b - a;
      }
      c.exposed_ns[i] += (to - from) - covered;
      c.known_until = to;
    }
    c.known_until = std::max(c.known_until, until);
    if (c.known_until >= c.end) {
      collectives_.push_back(c);
    } else {
      d.open_collectives[kept++] = c;
    }
  }
  d.open_collectives.resize(kept);
}

std::vector<CollectiveRecord> BusyTracker::collectives(const Epochs* epochs, uint64_t* over_limit) {
  const bool by_epoch = epochs != nullptr && epochs->ever_ended();
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CollectiveRecord> out;
  out.reserve(collectives_.size());
  for (const CollectiveRecord& c : collectives_) {
    if (!by_epoch || epochs->counted(c.tag.epoch)) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), [](const CollectiveRecord& a, const CollectiveRecord& b) {
    return std::tie(a.tag.epoch, a.tag.corr, a.start) < std::tie(b.tag.epoch, b.tag.corr, b.start);
  });
  if (over_limit != nullptr) *over_limit = collectives_over_limit_;
  return out;
}

std::map<uint32_t, std::vector<StepBusy>> BusyTracker::steps(const Epochs* epochs) {
  const bool by_epoch = epochs != nullptr && epochs->ever_ended();
  std::lock_guard<std::mutex> lock(mu_);
  std::map<uint32_t, std::vector<StepBusy>> out;
  for (auto& [dev, d] : devices_) {
    std::vector<StepBusy>& v = out[dev];
    for (size_t k = 0; k + 1 < marks_.size(); ++k) {
      StepBusy sb;
      sb.start = marks_[k];
      sb.end = marks_[k + 1];
      sb.recorded = by_epoch ? epochs->counted(epochs_[k]) : recorded_[k];
      if (k < d.steps.size()) {
        sb.busy_ns = d.steps[k].busy;
        sb.comm_ns = d.steps[k].comm;
        sb.exposed_ns = d.steps[k].exposed;
        if (d.steps[k].first != UINT64_MAX) {
          sb.first = d.steps[k].first;
          sb.last = d.steps[k].last;
        }
        sb.carried_until = d.steps[k].carried_until;
      }
      v.push_back(sb);
    }
  }
  return out;
}

std::map<uint32_t, BusyTotals> BusyTracker::totals(const Epochs* epochs) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool by_epoch = epochs != nullptr && epochs->ever_ended();
  std::map<uint32_t, BusyTotals> out;
  for (auto& [dev, d] : devices_) {
    fold(d, true);
    BusyTotals t = d.folded;
    if (by_epoch) {
      // Every span is folded into the intervals now: what fell in counted epochs' intervals is
      // per-step work, the rest is outside (the union's parts before the first mark included).
      // Communication likewise: per-step figures divide it by the counted steps.
      StepAcc counted;
      for (size_t k = 0; k < d.steps.size() && k < marks_.size(); ++k) {
        if (!epochs->counted(epochs_[k])) continue;
        counted.busy += d.steps[k].busy;
        counted.comm += d.steps[k].comm;
        counted.exposed += d.steps[k].exposed;
      }
      t.busy_outside_ns = t.busy_ns > counted.busy ? t.busy_ns - counted.busy : 0;
      t.busy_ns = std::min(counted.busy, t.busy_ns);
      t.comm_ns = std::min(counted.comm, t.comm_ns);
      t.exposed_ns = std::min(counted.exposed, t.exposed_ns);
    }
    out[dev] = t;
  }
  return out;
}

}  // namespace dlpt
