// Session control: what the Python layer calls to start, steer and stop capture.
// Every function here is [GIL]: called from Python with the GIL held.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cupti/tracer.h"
#include "options.h"
#include "session.h"

namespace dlpt {

struct StartResult {
  bool gpu = false;
  std::string gpu_reason;  // why GPU capture is off, when it is
  std::string cupti_path;
  bool lean_ops = false;  // outermost ops defer their Python walk (OpMode)
};

/// Starts a session: the op callback always, CUPTI when `opts.gpu`; in a floor mode (the
/// environment's BenchSwitches, read here), only that one mechanism, doing nothing. Collection
/// starts paused when `opts.collecting` is false (skip-first steps). Throws std::runtime_error if one is running.
StartResult start_capture(const CaptureOptions& opts);

/// Pauses/resumes cost recording at step boundaries.
void set_collecting(bool on);

/// A step boundary (call after the step window decided whether the next step is recorded): GPU
/// work is split into steps at these marks (BusyTracker::steps).
void mark_step();

/// Ends the running epoch (cct/epochs.h) as `counted` (per-step work) or not (outside the
/// steps), starts the next and returns its number; also a step mark (mark_step), whose closed
/// interval takes the class given here. 0 when no profile runs (a forked child).
uint32_t end_epoch(bool counted);

/// Every epoch that ended so far is outside the steps from now on (Epochs::cut): the warm-up's
/// provisional steps, dropped when it sees the step time still falling; `extend`: with those the
/// last cut dropped (kept apart together until the stop). Call right after an end_epoch. A no-op
/// when no profile runs.
void cut_counted(bool extend = false);

/// The last cut_counted is undone (Epochs::restore_last_cut): the steps dropped count again.
/// Call before stop, once the step schedule decided (dlpt.capture.schedule). A no-op when no
/// profile runs or nothing was cut.
void restore_last_cut();

/// Tracing off or on for the running session (idempotent; a no-op without one). Off: dlpt's
/// RecordFunction callbacks disabled, CUPTI's driver-API callbacks disabled and its activity
/// flushed (the caller synchronised the devices) and disabled, or CUPTI detached altogether
/// (BenchSwitches::suspend); nothing is recorded and nothing of dlpt's runs per op or launch. On:
/// everything enabled again as at start. The session, thread states, caches and code registry
/// stay. Each switch is counted and timed (counters tracing_switches, tracing_switch_ns; the
/// session's tracing_switch_log). Releases the GIL while CUPTI flushes.
void set_tracing(bool on);

/// Takes references to code objects first seen since the last drain (see CodeRegistry).
void drain_code_refs();

bool capture_running();

/// What dlpt's own callbacks did on all threads (for the report's "profiling added" line).
struct SelfCost {
  uint64_t op_records = 0;      // RecordFunction start callbacks run
  uint64_t api_callbacks = 0;   // CUPTI API enter callbacks run
  uint64_t self_ns = 0;         // sampled time inside dlpt's callbacks, scaled to all calls
  uint64_t python_ns = 0;       // ... of which walking Python frames
  uint64_t api_ns = 0;          // ... of which in CUDA API callbacks
  uint64_t window_ns = 0;       // ... of which switching RecordFunction off and on
  uint64_t python_walks = 0;    // walks of the Python stack for a path from the root
  uint64_t frames_walked = 0;   // ... the frames they read
  uint64_t anchored_walks = 0;  // ... of them stopped at an anchor
  uint64_t op_end_ns = 0;       // sampled time in op end callbacks
  uint64_t walk_read_ns = 0;    // sampled time of all walks reading frames
  uint64_t walk_site_ns = 0;    // ... finding or building their paths
  uint64_t walk_anchor_ns = 0;  // ... choosing and taking anchors
  uint64_t site_misses = 0;     // walks whose chain no site cache held
  uint64_t anchors_taken = 0;   // anchors taken
  uint64_t op_start_ns = 0;     // sampled time in op start callbacks
  uint64_t outermost_ops = 0;   // outermost forward ops started
  uint64_t op_name_ns = 0;      // sampled: outermost records finding their name
  uint64_t op_nodes_ns = 0;     // ... outermost forward ops finding their nodes
  uint64_t op_rest_ns = 0;      // ... the rest of their start
  // Lean op starts (OpMode::Lean):
  uint64_t deferred_ops = 0;        // outermost forward ops started without a walk
  uint64_t deferred_at_launch = 0;  // ... walked at a launch inside them
  uint64_t deferred_at_end = 0;     // ... walked at their end (an autograd node)
};

struct StopResult {
  Session* session = nullptr;  // parked; valid until the next start
  TracerStopReport tracer;
  std::vector<ApiStat> api;
  std::map<uint32_t, BusyTotals> busy;
  std::map<uint32_t, std::vector<StepBusy>> steps;
  std::vector<CollectiveRecord> collectives;  // of counted epochs (BusyTracker::collectives)
  uint64_t collectives_over_limit = 0;
  SelfCost self;
};

/// Stops capture. The running epoch ends as `last_counted` (as counted if end_epoch was never
/// called: one epoch, everything recorded counts). Releases the GIL while it flushes CUPTI.
/// Throws if nothing is running.
StopResult stop_capture(bool last_counted);

}  // namespace dlpt
