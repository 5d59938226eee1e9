// Telling one activation of a Python function from the next at the same frame address.
//
// A walk of a thread's frames (python_stack.h) is O(depth) and a chain of dependent loads: between
// two aten ops of a Hugging Face decode step, ~60 frames, most of dlpt's own time on that step
// (docs/overhead.md). The outer frames rarely change between two ops, but a frame at the same
// address with the same code is no proof: CPython reuses a returned frame's memory for the next
// call, so `y = f(x)` and `z = f(x)` below it leave the same frames at the same addresses.
//
// What proves it: no activation of that code began on this thread since. A new activation at the
// same address must start the code again, and CPython 3.12's sys.monitoring reports every start
// (PY_START) of the code objects a tool asks for (`set_local_events`), nothing else. So dlpt asks
// it for the codes of a few outer frames per thread (the anchors, context/frame_anchors.h), counts
// their starts per thread here, and a walk may stop at an anchor whose code has started no new
// activation since the anchor was taken: the frames outward of it are the ones seen then.
//
// Registering a code needs the GIL, and the walks run without it (inside torch's dispatch): a walk
// requests a code, and a pending call (Py_AddPendingCall: the main thread, at its next eval
// breaker, GIL held) registers it, after checking that some thread's frame still runs it (the
// request holds no reference; a freed code's address could be reused). Registered codes are held
// (a reference each) until monitoring ends, so an address in the registered set is that code.
//
// CPython 3.11 has no sys.monitoring: nothing is registered there (enable() is not called) and
// every walk goes to the root, as before. Tests on any version count starts with a C profile
// function instead (count_starts_by_profile, the _testing seam).
//
// Thread contracts are marked per function: [GIL] holds it; [MT] any thread, no GIL needed;
// [own thread] the per-thread start counts are written by the thread's own PY_START callbacks
// (GIL held) and read by its own walks (no GIL): never by another thread.
#pragma once

#include <Python.h>

#include <cstdint>

namespace dlpt::activations {

/// starts() of a code whose count this thread could not keep (its table was full).
constexpr uint64_t kUnknownStarts = UINT64_MAX;

/// [GIL] Begins monitoring with sys.monitoring tool `tool_id`: `set_local_events` and
/// `get_local_events` are that module's functions, `py_start` its PY_START event bit. With
/// `set_local_events` None, codes are registered without asking CPython (the caller counts
/// starts another way: the test seam). Invalidates every anchor taken before (epoch()).
void enable(int tool_id, PyObject* set_local_events, PyObject* get_local_events, int py_start);

/// [GIL] Ends monitoring: every registered code's PY_START is switched off and its reference
/// dropped; pending requests are forgotten. Invalidates every anchor (epoch()).
void disable();

/// [MT] Whether codes are being monitored now.
bool enabled();

/// [MT] Changes at every enable() and disable(): an anchor is valid only in the epoch it was
/// taken in (after disable() starts stop being counted).
uint64_t epoch();

/// [MT] Whether `code`'s starts are counted (registered in this epoch).
bool is_monitored(const void* code);

/// [MT] Asks for `code` (run by a frame of the calling thread now) to be monitored; registered
/// later by a pending call. Cheap to repeat: requests are deduplicated, at most kMaxCodes in all.
void request(PyObject* code);

/// [own thread] Activations of `code` started on the calling thread while it was monitored
/// (kUnknownStarts: not known).
uint64_t starts(const void* code);

/// [GIL, own thread] Counts a start of `code` on the calling thread (the PY_START callback).
void count_start(PyObject* code);

/// The PY_START callback as a Python callable: activation_started(code, offset) -> None.
PyObject* make_start_callback();

/// One frame's activation, as a walk of the owning thread saw it: the frame, its caller, its
/// code and the code's starts then.
struct Mark {
  const void* frame = nullptr;
  const void* caller = nullptr;
  const void* code = nullptr;
  uint64_t starts = 0;
  uint64_t epoch = 0;
};

/// What take_mark() made of a frame.
enum class MarkResult : uint8_t {
  kTaken,         // *out is its mark
  kNotMonitored,  // its code is not monitored (yet: it may be requested)
  kNever,         // it cannot anchor: a generator's frame (resumed from other callers), or its
                  // code's starts are not counted on this thread
};

/// [own thread] Marks `frame` (one of the calling thread's frames, on its stack now) if it can
/// anchor a walk: owned by the thread, its code monitored, its starts counted.
MarkResult take_mark(const void* frame, Mark* out);

/// [own thread] Whether `frame` (met on the calling thread's stack at m.frame's address) is the
/// activation `m` was taken of: same code and caller, no start of that code since, same epoch.
bool same_activation(const void* frame, const Mark& m);

/// [GIL] Test seam: counts every Python call on the calling thread (a C profile function),
/// on = false removes it. With enable(..., None, ...), the anchors work on CPython 3.11.
void count_starts_by_profile(bool on);

/// [GIL] How many codes are registered now, how many requests were made in this epoch.
struct Stats {
  uint64_t monitored = 0;
  uint64_t requested = 0;
};
Stats stats();

/// Most codes registered in one epoch: the anchors are a few outer frames per thread.
constexpr size_t kMaxCodes = 256;

}  // namespace dlpt::activations
