#include "activations.h"

#include <frameobject.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "frame_layout.h"

namespace dlpt::activations {

using frame_layout::frame_code;
using frame_layout::InterpFrame;
using frame_layout::kOwnedByThread;

namespace {

std::atomic<bool> g_enabled{false};
std::atomic<uint64_t> g_epoch{1};

// [GIL] The monitoring tool and its functions (None: the caller counts starts itself).
int g_tool = -1;
PyObject* g_set_local_events = nullptr;
PyObject* g_get_local_events = nullptr;
int g_py_start = 1;

// The registered codes: an open-addressed set of addresses, written under the GIL (insert-only
// within an epoch, cleared by disable()), read by walks on any thread without it.
constexpr size_t kSlots = 1024;  // a power of two, 4x kMaxCodes: short probes
static_assert(kSlots >= 2 * kMaxCodes && (kSlots & (kSlots - 1)) == 0);
std::array<std::atomic<const void*>, kSlots> g_monitored{};
std::vector<PyObject*> g_held;  // [GIL] a reference to each registered code

// Requests from walks, registered by the pending call. [g_requests_mu]
std::mutex g_requests_mu;
std::vector<PyObject*> g_queue;
std::unordered_set<const void*> g_requested;
bool g_call_scheduled = false;

size_t slot_of(const void* p) {
  // Code objects are 16-byte aligned heap objects: drop the low bits, mix the rest.
  return static_cast<size_t>((reinterpret_cast<uint64_t>(p) >> 4) * 0x9E3779B97F4A7C15ull >> 54) & (kSlots - 1);
}

void insert_monitored(const void* code) {
  for (size_t i = 0, s = slot_of(code); i < kSlots; ++i, s = (s + 1) & (kSlots - 1)) {
    const void* cur = g_monitored[s].load(std::memory_order_relaxed);
    if (cur == code) return;
    if (cur == nullptr) {
      g_monitored[s].store(code, std::memory_order_release);
      return;
    }
  }
}

/// [GIL] Whether some thread of this interpreter has a frame running `code` now: then `code` is
/// a live code object (the frame holds it), whatever the address held when it was requested.
bool running_somewhere(const void* code) {
  PyInterpreterState* interp = PyInterpreterState_Get();
  for (PyThreadState* t = PyInterpreterState_ThreadHead(interp); t != nullptr; t = PyThreadState_Next(t)) {
    for (const InterpFrame* f = frame_layout::top_frame(t); f != nullptr; f = f->previous) {
      if (frame_code(f) == code) return true;
    }
  }
  return false;
}

/// [GIL] Switches PY_START for our tool on or off for `code`, keeping its other events. False if
/// CPython refused (the error is cleared: this runs inside the user's program, as a pending call
/// or at stop). With no set_local_events (the test seam) there is nothing to switch.
bool set_py_start(PyObject* code, bool on) {
  if (g_set_local_events == Py_None) return true;
  PyObject* cur = PyObject_CallFunction(g_get_local_events, "iO", g_tool, code);
  const long events = cur != nullptr ? PyLong_AsLong(cur) : -1;
  Py_XDECREF(cur);
  PyObject* r = events < 0 ? nullptr
                           : PyObject_CallFunction(g_set_local_events, "iOl", g_tool, code,
                                                   on ? events | g_py_start : events & ~g_py_start);
  const bool done = r != nullptr;
  Py_XDECREF(r);
  PyErr_Clear();
  return done;
}

/// [GIL, main thread] The pending call: registers the requested codes that still run.
int register_requested(void*) {
  std::vector<PyObject*> todo;
  {
    std::lock_guard<std::mutex> lock(g_requests_mu);
    todo.swap(g_queue);
    g_call_scheduled = false;
  }
  if (!g_enabled.load(std::memory_order_relaxed)) return 0;
  for (PyObject* code : todo) {
    if (is_monitored(code)) continue;
    if (!running_somewhere(code) || !PyCode_Check(code)) {
      std::lock_guard<std::mutex> lock(g_requests_mu);
      g_requested.erase(code);  // gone before it could be registered: a later walk may ask again
      continue;
    }
    Py_INCREF(code);
    if (!set_py_start(code, true)) {
      Py_DECREF(code);
      continue;
    }
    g_held.push_back(code);
    insert_monitored(code);
  }
  return 0;  // never an error: that would raise inside whatever the main thread was running
}

/// Per-thread counts of registered codes' starts. [own thread]
struct StartTable {
  static constexpr size_t kSize = 2 * kMaxCodes;  // at most kMaxCodes registered: half full at most
  std::array<const void*, kSize> code{};
  std::array<uint64_t, kSize> starts{};
  size_t used = 0;
  bool full = false;
  uint64_t epoch = 0;

  /// The slot of `c`, or of the empty slot where it would go (or kSize: neither, table full).
  size_t find(const void* c) const {
    for (size_t i = 0, s = slot_of(c) & (kSize - 1); i < kSize; ++i, s = (s + 1) & (kSize - 1)) {
      if (code[s] == c || code[s] == nullptr) return s;
    }
    return kSize;
  }
};
// Initial-exec: read on every anchored walk; a dynamic TLS access would call __tls_get_addr.
thread_local std::unique_ptr<StartTable> t_starts __attribute__((tls_model("initial-exec")));

PyObject* start_callback(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs >= 1) count_start(args[0]);
  Py_RETURN_NONE;
}

PyMethodDef g_start_callback_def = {
    "activation_started", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(start_callback)),
    METH_FASTCALL, "sys.monitoring PY_START callback of dlpt's frame anchors: counts the code's start."};

int profile_hook(PyObject*, PyFrameObject* frame, int what, PyObject*) {
  if (what == PyTrace_CALL) {
    PyCodeObject* code = PyFrame_GetCode(frame);
    count_start(reinterpret_cast<PyObject*>(code));
    Py_DECREF(code);
  }
  return 0;
}

}  // namespace

void enable(int tool_id, PyObject* set_local_events, PyObject* get_local_events, int py_start) {
  if (g_enabled.load()) disable();
  g_tool = tool_id;
  Py_INCREF(set_local_events);
  Py_INCREF(get_local_events);
  g_set_local_events = set_local_events;
  g_get_local_events = get_local_events;
  g_py_start = py_start;
  g_epoch.fetch_add(1);
  g_enabled.store(true);
}

void disable() {
  if (!g_enabled.load()) return;
  g_enabled.store(false);
  g_epoch.fetch_add(1);  // before the codes go: no anchor of this epoch is valid from here on
  for (PyObject* code : g_held) {
    set_py_start(code, false);
    Py_DECREF(code);
  }
  g_held.clear();
  for (auto& slot : g_monitored) slot.store(nullptr, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(g_requests_mu);
    g_queue.clear();
    g_requested.clear();
  }
  Py_CLEAR(g_set_local_events);
  Py_CLEAR(g_get_local_events);
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

uint64_t epoch() { return g_epoch.load(std::memory_order_acquire); }

bool is_monitored(const void* code) {
  if (code == nullptr || !enabled()) return false;
  for (size_t i = 0, s = slot_of(code); i < kSlots; ++i, s = (s + 1) & (kSlots - 1)) {
    const void* cur = g_monitored[s].load(std::memory_order_acquire);
    if (cur == code) return true;
    if (cur == nullptr) return false;
  }
  return false;
}

void request(PyObject* code) {
  if (code == nullptr || !enabled() || is_monitored(code)) return;
  std::lock_guard<std::mutex> lock(g_requests_mu);
  if (g_requested.size() >= kMaxCodes || !g_requested.insert(code).second) return;
  g_queue.push_back(code);
  if (!g_call_scheduled) {
    // Needs neither the GIL nor a thread state; fails only when CPython's queue is full.
    if (Py_AddPendingCall(register_requested, nullptr) == 0) {
      g_call_scheduled = true;
    } else {
      g_queue.pop_back();
      g_requested.erase(code);
    }
  }
}

uint64_t starts(const void* code) {
  const StartTable* t = t_starts.get();
  if (t == nullptr || t->epoch != epoch()) return 0;  // none counted in this epoch on this thread
  const size_t s = t->find(code);
  if (s < StartTable::kSize && t->code[s] == code) return t->starts[s];
  return t->full ? kUnknownStarts : 0;
}

void count_start(PyObject* code) {
  if (!is_monitored(code)) return;
  if (!t_starts) t_starts = std::make_unique<StartTable>();
  StartTable& t = *t_starts;
  const uint64_t now = epoch();
  if (t.epoch != now) {  // counts of an earlier epoch: its codes may be gone
    t = StartTable{};
    t.epoch = now;
  }
  const size_t s = t.find(code);
  if (s == StartTable::kSize) {
    t.full = true;
  } else if (t.code[s] == code) {
    ++t.starts[s];
  } else if (t.used < StartTable::kSize / 2) {
    t.code[s] = code;
    t.starts[s] = 1;
    ++t.used;
  } else {
    t.full = true;  // its starts are not counted: starts() says unknown for it
  }
}

PyObject* make_start_callback() { return PyCFunction_NewEx(&g_start_callback_def, nullptr, nullptr); }

void count_starts_by_profile(bool on) { PyEval_SetProfile(on ? profile_hook : nullptr, nullptr); }

Stats stats() {
  Stats s;
  s.monitored = g_held.size();
  std::lock_guard<std::mutex> lock(g_requests_mu);
  s.requested = g_requested.size();
  return s;
}

MarkResult take_mark(const void* frame, Mark* out) {
  const auto* f = static_cast<const InterpFrame*>(frame);
  if (f->owner != kOwnedByThread) return MarkResult::kNever;
  // The epoch before the registered set: disable() clears `enabled` before it moves the epoch
  // on, so a mark that reads the new epoch finds nothing monitored and is not taken.
  const uint64_t e = epoch();
  const void* code = frame_code(f);
  if (!is_monitored(code)) return MarkResult::kNotMonitored;
  const uint64_t n = starts(code);
  if (n == kUnknownStarts) return MarkResult::kNever;
  *out = Mark{frame, f->previous, code, n, e};
  return MarkResult::kTaken;
}

bool same_activation(const void* frame, const Mark& m) {
  const auto* f = static_cast<const InterpFrame*>(frame);
  // The epoch first: after disable() the code may be freed and its starts no longer counted.
  return m.epoch == epoch() && f->owner == kOwnedByThread && frame_code(f) == m.code && f->previous == m.caller &&
         starts(m.code) == m.starts;
}

}  // namespace dlpt::activations
