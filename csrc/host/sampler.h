// The host sampler: a native thread that records the Python stack of every Python thread at a
// fixed rate into the session's calling-context tree, with the time the thread spent there.
//
// Design (why a separate thread reading memory, not a signal handler): a signal delivered to each
// Python thread (timer_create + SIGEV_THREAD_ID) could walk the thread's own chain, but it
// interrupts the program's system calls (EINTR reaches native code that does not retry), runs
// inside whatever the thread was doing (a frame half pushed, dlpt's own tree mutex held: no
// insertion from a handler) and needs a second thread to aggregate anyway. This thread instead
// never stops or signals the program: it wakes every period, lists the interpreter's thread
// states and reads each thread's frame chain through fault-safe reads (remote_stack.h says what
// is trusted and how), so a torn chain is a dropped sample, never a crash; it never takes the
// GIL, so it cannot deadlock with the program. What it costs the program is the CPU it uses
// (its own core on a multi-core host) and cache traffic; its own CPU time is reported.
//
// Per sample and thread: the path of its frames (with the scopes its ThreadState mirrors, so
// sampled time lands on the same nodes as ops) and the time since the last tick, added to the
// node in this sampler's own side table (HostMetrics: wall time, the part with the GIL held, the
// thread's CPU time); the step's thread also feeds the idle blame, and, while a timeline window
// is open, every sample is an event.
//
// Code objects seen for the first time are validated again under the GIL before the session's
// CodeRegistry takes a reference (drain_codes: a pending call the sampler schedules, the step
// boundary's drain, and stop): nothing the sampler read unsafely reaches CPython unchecked.
//
// Thread contract: start/stop/drain_codes [GIL]; everything else runs on the sampler thread.
#pragma once

#include <Python.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../context/child_cache.h"
#include "../context/scope_mirror.h"
#include "../frames/remote_stack.h"
#include "../session.h"

namespace dlpt::host {

class IdleBlame;
class Timeline;

/// Host time per node, written by the sampler thread only, read after it stopped.
struct HostCell {
  uint64_t wall_ns = 0;  // sampled wall time
  uint64_t gil_ns = 0;   // ... of which the thread held the GIL (ran Python)
  uint64_t cpu_ns = 0;   // the thread's CPU time over those intervals
  uint64_t samples = 0;
  void add(const HostCell& o) {
    wall_ns += o.wall_ns;
    gil_ns += o.gil_ns;
    cpu_ns += o.cpu_ns;
    samples += o.samples;
  }
};

// The sampler's numbers (host_result()["stats"], saved as meta.host's keys), defined once as
// X(name, doc). From this list come SamplerStats, the export (bindings.cpp) and the list
// tests/native/test_native_fields.py holds dlpt/_C.pyi's `SamplerStats` and
// dlpt.model.meta.SAMPLER_STATS to. The names are the saved sessions' keys: never rename one.
// clang-format off
#define DLPT_SAMPLER_STATS(X)                                                                  \
  X(ticks, "wake-ups while recording")                                                         \
  X(samples, "thread stacks recorded")                                                         \
  X(torn, "stacks dropped: read while they changed, or across a step boundary")                \
  X(missed, "ticks skipped because the previous one ran late")                                 \
  X(scope_retries, "scope lists that kept changing while read (sampled without)")              \
  X(codes_lost, "code objects that failed validation under the GIL")                           \
  X(max_threads, "most Python threads seen at once")                                           \
  X(sampler_cpu_ns, "the sampler thread's own CPU time")                                       \
  X(sampled_wall_ns, "wall time covered by ticks while recording")                              \
  X(safe_reads, "fault-safe reads of other threads' memory (a system call each)")
// clang-format on

struct SamplerStats {
#define DLPT_SAMPLER_STAT_FIELD(name, doc) uint64_t name = 0;
  DLPT_SAMPLER_STATS(DLPT_SAMPLER_STAT_FIELD)
#undef DLPT_SAMPLER_STAT_FIELD
};

class Sampler {
 public:
  /// [GIL] Starts the thread for `s` at `hz`; `blame`/`timeline` may be nullptr. False and why
  /// when frames cannot be read safely here.
  bool start(Session& s, uint32_t hz, IdleBlame* blame, Timeline* timeline, std::string* why);
  /// [GIL] Stops and joins the thread (idempotent), then registers the last code objects.
  void stop();
  /// [GIL] Validates the code objects the thread saw first and hands them to the registry.
  void drain_codes();
  /// [MT] The thread whose samples are blamed for GPU idle (the one that ends steps).
  void set_step_thread(uint64_t tid) { step_tid_.store(tid, std::memory_order_relaxed); }
  /// [fork child] The thread does not exist here: forget it without joining.
  void abandon();

  /// After stop and the core's stop (every epoch classified): the sampled cells of counted
  /// epochs (per-step work) and of the others (set-up, warm-up, the end of the run).
  void fold_epochs(const Epochs& epochs);
  const std::vector<HostCell>& cells() const { return cells_; }
  const std::vector<HostCell>& outside_cells() const { return outside_cells_; }
  /// After stop: what the thread did.
  SamplerStats stats() const {
    SamplerStats out = stats_;
    out.codes_lost = stats_codes_lost_.load();
    return out;
  }
  uint32_t hz() const { return hz_; }

 private:
  struct PathEntry {
    const void* frame;
    const void* instr;
    NodeId node;
  };
  struct ThreadTrack {
    const void* tstate = nullptr;
    std::vector<PathEntry> path;  // outermost first
    uint32_t scope_version = UINT32_MAX;
    uint64_t cpu_ns = 0;  // last CPU time read (0: none yet)
    uint64_t seen = 0;    // tick of the last sighting
    ScopeMirror* scopes = nullptr;
    uint64_t scopes_attaches = UINT64_MAX;  // Session::thread_attaches() at the last lookup
  };

  void run();
  void tick(uint64_t weight_ns);
  void sample_thread(const RemoteThread& t, uint64_t weight_ns, uint64_t clock_ns);
  NodeId path_node(ThreadTrack& tt, const RawFrame* raw, size_t n, const MirroredScope* scopes, int nscopes,
                   uint32_t version);
  NodeId child(NodeId parent, NodeKind kind, uint64_t a, uint64_t b);
  ScopeMirror* find_scopes(uint64_t tid);

  Session* session_ = nullptr;
  PyInterpreterState* interp_ = nullptr;
  IdleBlame* blame_ = nullptr;
  Timeline* timeline_ = nullptr;
  uint32_t hz_ = 0;
  uint64_t period_ns_ = 0;
  std::atomic<uint64_t> step_tid_{0};

  std::unique_ptr<std::thread> thread_;
  std::mutex wake_mu_;
  std::condition_variable wake_;
  bool stop_requested_ = false;

  // Sampler thread only.
  RemoteStackReader reader_;
  ChildCache children_;
  std::unordered_map<uint64_t, ThreadTrack> tracks_;
  // Cells by node id of counted epochs, of the drop's (cct/epochs.h), and of the others;
  // `pending_` holds the running epoch's (`pending_epoch_`), filed when the sampler sees a later
  // epoch (an ended epoch's class is known: cct/epochs.h) or at fold_epochs. Samples of untraced
  // steps are not taken.
  std::vector<HostCell> cells_;
  std::vector<HostCell> dropped_cells_;
  std::vector<HostCell> outside_cells_;
  std::unordered_map<NodeId, HostCell> pending_;
  uint32_t pending_epoch_ = 0;
  CutsSeen seen_;  // the cuts cells_ and dropped_cells_ were filed under
  std::vector<HostCell>& cells_of(Filed f);
  void file_pending(const Epochs& epochs);
  std::vector<PyObject*> fresh_;
  SamplerStats stats_;
  uint64_t tick_no_ = 0;

  // Code objects awaiting validation under the GIL (fresh ones in, lost ones back).
  std::mutex codes_mu_;
  std::vector<std::pair<PyObject*, CodeInfo>> to_register_;
  std::vector<PyObject*> lost_;
  std::atomic<bool> drain_scheduled_{false};
  std::atomic<uint64_t> stats_codes_lost_{0};  // written under the GIL (drain_codes)
};

}  // namespace dlpt::host
