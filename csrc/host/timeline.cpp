#include "timeline.h"

#include <algorithm>

namespace dlpt::host {

Timeline::Timeline(uint32_t steps, size_t capacity, bool armed) : steps_(steps), capacity_(capacity), armed_(armed) {
  events_ = static_cast<Event*>(std::calloc(capacity_, sizeof(Event)));
}

Timeline::~Timeline() { std::free(events_); }

void Timeline::mark(uint64_t clock_ns, uint64_t t, bool recorded) {
  if (done_) return;
  if (!open()) {
    if (!armed_ || !recorded || steps_ == 0 || events_ == nullptr) return;
    ticks0_ = t;
    clock0_ = clock_ns;
    open_.store(true, std::memory_order_release);
  }
  Event e;
  e.kind = EventKind::Step;
  e.start = e.end = clock_ns;
  e.detail = marks_++;
  add(e);
  if (marks_ > steps_ || !recorded) close(clock_ns, t);
}

void Timeline::close(uint64_t clock_ns, uint64_t t) {
  if (!open()) return;
  ticks1_ = t;
  clock1_ = clock_ns;
  done_ = true;
  open_.store(false, std::memory_order_release);
}

void Timeline::add(const Event& e) {
  const size_t i = next_.fetch_add(1, std::memory_order_relaxed);
  if (i >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  Event& slot = events_[i];
  slot.start = e.start;
  slot.end = e.end;
  slot.track = e.track;
  slot.node = e.node;
  slot.detail = e.detail;
  slot.corr = e.corr;
  slot.kind = e.kind;
  slot.flags = e.flags;
  __atomic_store_n(&slot.ready, uint8_t{1}, __ATOMIC_RELEASE);
}

void Timeline::note_launch(uint32_t corr) {
  uint32_t lo = 0;
  corr_lo_.compare_exchange_strong(lo, corr, std::memory_order_relaxed);
  uint32_t hi = corr_hi_.load(std::memory_order_relaxed);
  while (corr > hi && !corr_hi_.compare_exchange_weak(hi, corr, std::memory_order_relaxed)) {
  }
}

bool Timeline::keeps_activity(uint32_t corr) const {
  const uint32_t lo = corr_lo_.load(std::memory_order_relaxed);
  if (lo == 0 || corr < lo) return false;
  // Launches after the window closed are never noted, so corr_hi_ is the window's last one.
  return corr <= corr_hi_.load(std::memory_order_relaxed);
}

uint64_t Timeline::to_clock(uint64_t t) const {
  if (ticks1_ <= ticks0_ || clock1_ <= clock0_) return clock0_ + (t > ticks0_ ? t - ticks0_ : 0);
  const double rate = static_cast<double>(clock1_ - clock0_) / static_cast<double>(ticks1_ - ticks0_);
  const double d = (static_cast<double>(t) - static_cast<double>(ticks0_)) * rate;
  const double v = static_cast<double>(clock0_) + d;
  return v > 0 ? static_cast<uint64_t>(v + 0.5) : 0;
}

std::vector<Event> Timeline::events() const {
  std::vector<Event> out;
  const size_t n = std::min(next_.load(), capacity_);
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Event& e = events_[i];
    if (!__atomic_load_n(&e.ready, __ATOMIC_ACQUIRE)) continue;  // claimed by a racing writer, never finished
    Event c = e;
    if (c.kind == EventKind::Op || c.kind == EventKind::Api || c.kind == EventKind::Sync) {
      c.start = to_clock(c.start);
      c.end = to_clock(c.end);
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace dlpt::host
