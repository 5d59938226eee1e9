// Host capture: the sampler (host time per line), the idle blame (which lines the host was in
// while the GPU waited) and the timeline window, tied to the running session. The core calls
// the hooks below from its hot paths; each starts with one relaxed load and returns at once when
// nothing of this is on.
//
// Lifetime: start() after the core's start_capture, stop() before its stop_capture (the sampler
// must be joined before the tree is exported), take_result() after it (the GPU activity of the
// window and of the last steps arrives during the core's final flush). Hooks may still run on
// other threads for a moment after take_result: the capture they see stays parked (never freed
// while a later one may race with it), as sessions are.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../events.h"
#include "../session.h"
#include "idle_blame.h"
#include "sampler.h"
#include "timeline.h"

namespace dlpt::host {

struct HostOptions {
  uint32_t sample_hz = 0;           // 0: no sampler
  uint32_t timeline_steps = 0;      // 0: no timeline window
  size_t timeline_events = 500000;  // the window's budget of events
  bool timeline_armed = true;       // false: the window opens only after arm_timeline()
};

struct HostStart {
  bool sampling = false;
  std::string reason;  // why the sampler is off, when it was asked for
  std::string method;  // how frames are read ("process_vm_readv", "/proc/self/mem")
};

struct HostResult {
  bool sampled = false;
  uint32_t hz = 0;
  std::string method;
  SamplerStats stats;
  std::vector<HostCell> cells;          // by node id: counted epochs
  std::vector<HostCell> outside_cells;  // ... the others (outside counted steps)
  BlameTotals blame;
  bool blamed = false;  // idle blame was kept (sampler on)
  bool gpu = false;     // ... against GPU work
  bool timeline = false;
  std::vector<Event> events;
  uint64_t dropped_events = 0;
  uint32_t steps_requested = 0, steps_kept = 0;
  uint64_t window_start_ns = 0, window_end_ns = 0;
};

/// [GIL] Starts host capture for the running session (none running: a no-op).
HostStart start(const HostOptions& opts);
/// [GIL] Stops the sampler and closes the timeline window. Idempotent.
void stop();
/// [GIL] After the core's stop: everything captured (stops first if needed).
HostResult take_result();
/// [GIL] The warm-up is over: the timeline window opens at the next recorded step boundary.
void arm_timeline();
/// [GIL] Whether host capture is running.
bool running();

// timeline_on(), activity_on() and the sinks on_op, on_api, on_activity: ../events.h.

/// [MT] The host clock of `s`: CUPTI's with GPU capture (the clock of activity records), else
/// CLOCK_REALTIME, which CUPTI's timestamps are based on.
uint64_t clock_ns(const Session& s);

/// [GIL] A step boundary of `s` (controller.cpp), `recorded`: whether the interval after it is
/// recorded (collecting and traced); `ended_counted`: whether the interval it ends is a counted
/// step (false: an epoch ended outside the steps, e.g. a warm-up step; the idle blame drops it).
/// A boundary within microseconds of the last one (a switch right after an epoch's end) updates
/// the interval it opened.
void on_mark(Session& s, bool recorded, bool ended_counted = true);
/// [GIL] A cut of `s`'s epochs (cct/epochs.h), right after a step boundary: the idle blame
/// drops the steps before it.
void on_cut(Session& s, bool extend);
/// [GIL] The last cut was undone (Epochs::restore_last_cut): the idle blame records its steps again.
void on_restore(Session& s);
/// [GIL] The step boundary's code-reference drain (controller.cpp).
void on_drain();
}  // namespace dlpt::host
