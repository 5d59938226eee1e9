// The events of a window of steps, for a timeline (--timeline N; exported as a Chrome trace for
// Perfetto, drawn in the HTML report).
//
// The window opens at the first recorded step boundary once it is armed, and closes N boundaries
// later (or when the profile stops). The profile arms it when the warm-up is over (the warm-up's
// steps are recorded too, as outside-steps work; they are not the window's: issue 33), so the
// window holds the first N counted steps (with automatic warm-up detection, from the second: the
// first counted step is known to be counted only when it ends). While it is open, every
// recorded op, watched CUDA API call (launches, copies, memsets, syncs), host sample and step
// boundary is appended, and so are the kernels, copies and memsets launched inside it (told by
// their correlation id, which CUDA hands out in increasing order: the window's launches are one
// range). Memory is a fixed budget of events, allocated when the window is asked for; events
// past it are counted, not kept.
//
// Times: host events carry tick() stamps (clock.h), converted at export with the (ticks, clock)
// pairs taken when the window opened and closed; GPU events, samples and step marks carry the
// host clock of host_capture (CUPTI's clock with GPU capture, CLOCK_REALTIME without), so all
// share one time base.
//
// Thread contract: add() and the accepts/launch checks [MT] (lock-free: a slot is claimed with
// one atomic add and published with a release store); open/close/mark [GIL] (step boundaries);
// events() after capture stopped.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "../common.h"
#include "../events.h"  // EventKind

namespace dlpt::host {

struct Event {
  uint64_t start = 0, end = 0;  // ticks (Op, Api, Sync) or host clock ns (the others)
  uint64_t track = 0;           // host events: OS thread id; GPU events: device << 32 | stream
  uint32_t node = kNoNode;      // op node, launch context, activity leaf, sampled leaf
  uint32_t detail = 0;          // Api/Sync: callback id; Step: step number in the window
  uint32_t corr = 0;            // correlation id (Api, Kernel, Memcpy, Memset)
  EventKind kind = EventKind::Step;
  uint8_t flags = 0;  // Sample: 1 = held the GIL
  uint8_t ready = 0;  // published (atomic access only)
};

class Timeline {
 public:
  /// [GIL] Keeps the events of `steps` steps, at most `capacity` events; `armed`: whether the
  /// window may open at the next recorded boundary (else only after arm()).
  Timeline(uint32_t steps, size_t capacity, bool armed = true);
  ~Timeline();
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;

  /// [GIL] A step boundary at host clock `clock_ns` (ticks `t`); `recorded`: whether recording
  /// is on after it. Opens, counts and closes the window.
  void mark(uint64_t clock_ns, uint64_t t, bool recorded);
  /// [GIL] The warm-up is over: the window opens at the next recorded boundary.
  void arm() { armed_ = true; }
  /// [GIL] The profile stops: closes the window if still open.
  void close(uint64_t clock_ns, uint64_t t);

  /// [MT] Whether events are being kept now.
  bool open() const { return open_.load(std::memory_order_relaxed); }
  /// [MT] Appends `e` (dropped and counted when the budget is spent).
  void add(const Event& e);
  /// [MT] A launch inside the window: its activity will be kept.
  void note_launch(uint32_t corr);
  /// [MT] Whether the activity of correlation id `corr` belongs to the window.
  bool keeps_activity(uint32_t corr) const;

  /// After capture stopped: the published events, host ticks converted to clock ns.
  std::vector<Event> events() const;
  uint64_t dropped() const { return dropped_.load(); }
  uint32_t steps_requested() const { return steps_; }
  uint32_t steps_kept() const { return marks_ > 0 ? marks_ - 1 : 0; }
  uint64_t opened_ns() const { return clock0_; }
  uint64_t closed_ns() const { return clock1_; }

 private:
  uint64_t to_clock(uint64_t ticks) const;

  const uint32_t steps_;
  const size_t capacity_;
  Event* events_ = nullptr;  // calloc'ed: pages are touched only as events arrive
  std::atomic<size_t> next_{0};
  std::atomic<uint64_t> dropped_{0};
  std::atomic<bool> open_{false};
  bool armed_ = true;  // the window may open (the warm-up is over)
  bool done_ = false;  // the window closed; it never reopens
  uint32_t marks_ = 0;
  uint64_t ticks0_ = 0, clock0_ = 0, ticks1_ = 0, clock1_ = 0;
  std::atomic<uint32_t> corr_lo_{0}, corr_hi_{0};
};

}  // namespace dlpt::host
