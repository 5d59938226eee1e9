// The state of one profiling session, shared by every capture path.
//
// Lifetime: created by start(), exported by stop(). Callbacks from other threads can still be
// running for a moment after stop() removes them, so a session is never freed while the process
// runs; the last finished one stays parked until the next start() (see begin_session).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cct/busy.h"
#include "cct/correlation.h"
#include "cct/epochs.h"
#include "cct/graph_nodes.h"
#include "cct/op_details.h"
#include "cct/seq_ranges.h"
#include "cct/tree.h"
#include "clock.h"
#include "counters.h"
#include "frames/code_registry.h"
#include "options.h"

namespace dlpt {

class ThreadState;

/// Per forward thread sequence ranges, found without a lock (a handful of forward threads).
class SeqRangesByThread {
 public:
  /// [MT] The ranges of forward thread `tid` (RecordFunction's thread id), created on first use.
  SeqRanges& get(uint64_t tid);
  /// [MT] Lock-free lookup; nullptr if that thread never ran a forward op with autograd.
  SeqRanges* find(uint64_t tid) const;

 private:
  static constexpr size_t kMaxThreads = 64;
  std::mutex mu_;  // creation only
  std::atomic<size_t> count_{0};
  std::atomic<uint64_t> tids_[kMaxThreads] = {};
  std::unique_ptr<SeqRanges> ranges_[kMaxThreads];
};

class Session {
 public:
  Session(uint64_t generation, const CaptureOptions& opts);
  ~Session();

  const uint64_t generation;
  const CaptureOptions opts;
  Tree tree;
  Epochs epochs;  // before `details`, which files by them
  CorrelationTable correlations;
  BusyTracker busy;
  CodeRegistry codes;
  GraphNodeContexts graph_nodes;
  Counters counters;
  SeqRangesByThread seq_ranges;
  OpDetails details{epochs};
  TickRate rate;

  /// Whether costs are recorded now (false during skip-first steps and after the active steps).
  std::atomic<bool> collecting{false};
  /// RecordFunction thread id that last started a forward op with a sequence number.
  std::atomic<uint64_t> last_forward_thread{0};
  /// Whether GPU capture (CUPTI) is on for this session.
  std::atomic<bool> gpu{false};
  /// The correlation id of the latest work call (launch, copy, memset) to enter, on any
  /// thread: a step mark reads it to tell the work launched before it (BusyTracker::mark_step).
  /// Relaxed: the step's own thread sees its own launches; another thread's racing launch may
  /// land on either side of the mark.
  std::atomic<uint32_t> last_work_corr{0};
  /// Outermost forward ops defer their Python walk (OpMode::Lean, resolved from opts.op_mode and
  /// whether CUPTI attached). Set by start_capture before the op callbacks are installed.
  std::atomic<bool> lean_ops{false};
  /// Whether tracing runs (set_tracing): off, dlpt's callbacks are disabled and record nothing.
  std::atomic<bool> tracing{true};
  /// Bumped at every set_tracing switch: a CUDA API call that entered before one and exits (or
  /// not) after it is dropped, not matched with a later call (ThreadState::api_generation).
  std::atomic<uint32_t> tracing_generation{0};
  /// [GIL] Every set_tracing switch: (on, nanoseconds it took), the first kMaxSwitchLog of them.
  std::vector<std::pair<bool, uint64_t>> tracing_switch_log;
  static constexpr size_t kMaxSwitchLog = 4096;
  /// [GIL] Why GPU tracing could not be resumed (empty: it always was).
  std::string tracing_error;

  /// [MT] The metrics a cost of node `id` in epoch `epoch` is added to (cct/epochs.h): the
  /// running epoch for CPU-side costs, the launch's epoch for GPU activity.
  Metrics& metrics(NodeId id, uint32_t epoch) { return tree.node(id).m.at(epoch, epochs); }

  /// [MT] The calling thread's state (see ThreadState::get): one a thread that ended left
  /// (ThreadState::recycle), else a new one.
  ThreadState* attach_thread(uint64_t os_tid);
  /// [MT] `ts`'s thread ended: the state waits for the next new thread.
  void retire_thread(ThreadState* ts);
  /// [MT] How many thread states this session made (bounded by the threads alive at once).
  size_t thread_states();
  /// [MT] How many times a thread state was attached (made or recycled) so far: a reader that
  /// found no state for a thread looks again only when this moved (Sampler::sample_thread).
  uint64_t thread_attaches() const { return thread_attaches_.load(std::memory_order_acquire); }
  /// [MT] Calls `fn` on every thread state of this session (under the registry lock).
  template <typename Fn>
  void for_each_thread(Fn&& fn) {
    std::lock_guard<std::mutex> lock(threads_mu_);
    for (auto& t : threads_) fn(*t);
  }

 private:
  std::mutex threads_mu_;
  std::vector<std::unique_ptr<ThreadState>> threads_;
  std::vector<ThreadState*> idle_;  // states of threads that ended, owned by threads_
  // Bumped under threads_mu_ after the state is in threads_: a reader that sees the new count
  // finds the state when it takes the lock.
  std::atomic<uint64_t> thread_attaches_{0};
};

/// [MT] The running session, or nullptr. Callbacks load it once and use that pointer throughout.
Session* current_session();

/// [GIL] Creates and publishes a new session (the previous one is parked).
Session* begin_session(const CaptureOptions& opts);
/// [GIL] Unpublishes the running session; returns it (still owned by the park).
Session* end_session();
/// [MT] A thread that had state `ts` in the session of `generation` ended: hand the state back
/// if that session is still parked (an older one was freed with its states).
void retire_thread_state(uint64_t generation, ThreadState* ts);

}  // namespace dlpt
