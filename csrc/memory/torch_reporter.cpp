// The one place that depends on torch's memory-reporting internals. Checked against torch 2.11
// (CUDA build, the GPU machine's), 2.13 (CPU build) and 2.15 (CUDA build): the declarations below
// are identical in the three, and libc10_cuda.so of 2.11 and 2.15 calls both report functions.
//
// What torch offers, and why this one. Torch has two supported ways to observe allocations:
//
//  1. The memory-reporting hook torch.profiler's `profile_memory` uses: c10's allocators call
//     c10::reportMemoryUsageToProfiler(ptr, +/-bytes, total_allocated, total_reserved, device) on
//     every allocation and free, and c10::reportOutOfMemoryToProfiler(...) when one fails; both
//     look up a c10::MemoryReportingInfoBase in the calling thread's c10::ThreadLocalDebugInfo
//     under DebugInfoKind::PROFILER_STATE (c10/core/Allocator.cpp). The CUDA caching allocator
//     calls them unconditionally (alloc_found_block and free, under the device's mutex; the OOM
//     report right before it throws OutOfMemoryError, still under the mutex). The CPU allocator
//     (ProfiledCPUMemoryReporter, c10/core/CPUAllocator.cpp) reports only while
//     memoryProfilingEnabled() says so, outside its own mutex, and reports a failed allocation
//     (alloc_cpu's error) the same way before rethrowing. Debug info is part of torch's
//     ThreadLocalState, which the autograd engine restores on its device threads for the graph
//     task of a backward() called here, so backward passes on the GPU report too.
//  2. The CUDA caching allocator's trace tracker (attachAllocatorTraceTracker): every thread,
//     but CUDA builds only, linked against libc10_cuda (absent from CPU wheels), and it cannot be
//     detached again (trackers live as long as the allocator).
//
// (1) covers the CPU too (so it is tested on CI's CPU torch), needs no CUDA symbol, and is
// undone at stop; its limit is that only threads carrying our debug info report (the thread that
// started the profile and the autograd threads working for it; other Python threads do not).
//
// The slot is shared with torch.profiler, and torch's profiler code static_casts whatever it finds
// there to torch::profiler::impl::ProfilerStateBase (profilerEnabled(), getProfilerConfig(), the
// Kineto callbacks). So the reporter IS a ProfilerStateBase, with a Disabled config: to torch it
// reads as "no profiler enabled". Starting torch.profiler still refuses while any state is in the
// slot (torch 2.13's enableProfiler: "Profiler is already enabled on this thread"), so while a
// torch profiler runs on the thread the reporter steps aside: suspend_reporting() takes it out
// before torch pushes its state, resume_reporting() puts it back after torch popped it
// (dlpt.capture.memory wraps torch's enable/disable functions for that; allocations made
// meanwhile go to torch.profiler). dlpt refuses to start memory capture while a torch profiler is
// active on the thread, since pushing on top of it would hide Kineto's state from its callbacks.
//
// Thread contract: reportMemoryUsage / reportOutOfMemory run on whichever thread allocates or
// frees, often inside the CUDA allocator's lock, with or without the GIL ([MT]). They never call
// Python, never take the GIL, and take only locks nothing holds while allocating from torch: the
// tracker's mutex (tracker.h) and, through ThreadState::launch_context (an allocation's context,
// as a kernel launched at that moment would get it), the tree's and code registry's mutexes,
// which are held only around map updates. A free needs no context: its block's node is in the
// tracker. Nothing here throws into the allocator.
#include "torch_reporter.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <atomic>
#include <memory>

#include "../context/thread_state.h"
#include "../session.h"
#include "tracker.h"

namespace dlpt::memory {

namespace {

namespace tp = torch::profiler::impl;

class Reporter final : public tp::ProfilerStateBase {
 public:
  Reporter(uint64_t generation, bool track_cpu)
      : tp::ProfilerStateBase(tp::ProfilerConfig(tp::ProfilerState::Disabled)),
        generation_(generation),
        track_cpu_(track_cpu) {}

  /// [MT] An allocation (alloc_size > 0) or a free (< 0).
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                         c10::Device device) override {
    if (alloc_size == 0 || !wanted(device)) return;
    Session* s = session();
    if (s == nullptr) return;
    const DeviceId dev{static_cast<int>(device.type()), static_cast<int>(device.index())};
    try {
      if (alloc_size < 0) {
        tracker().on_free(dev, ptr, total_allocated, total_reserved);
        return;
      }
      NodeId node = kNoNode;
      // Attributed only while costs are recorded and traced: in an untraced step (set_tracing)
      // the thread's context is stale, so its blocks count in the totals, on no line.
      if (s->collecting.load(std::memory_order_relaxed) && s->tracing.load(std::memory_order_relaxed)) {
        ThreadState& ts = ThreadState::get(*s);
        SelfTimer timer(ts);
        node = ts.launch_context();
        tracker().on_alloc(dev, ptr, static_cast<uint64_t>(alloc_size), total_allocated, total_reserved, node);
        return;
      }
      tracker().on_alloc(dev, ptr, static_cast<uint64_t>(alloc_size), total_allocated, total_reserved, node);
    } catch (...) {  // out of host memory for our own maps: lose this event, never the program
    }
  }

  /// [MT] An allocation of alloc_size bytes failed; the allocator throws right after.
  void reportOutOfMemory(int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                         c10::Device device) override {
    if (!wanted(device)) return;
    Session* s = session();
    if (s == nullptr) return;
    try {
      const NodeId node = ThreadState::get(*s).launch_context();
      tracker().on_oom({static_cast<int>(device.type()), static_cast<int>(device.index())},
                       static_cast<uint64_t>(alloc_size > 0 ? alloc_size : 0), total_allocated, total_reserved, node);
    } catch (...) {
    }
  }

  /// [MT] Asked by the CPU allocator on every allocation and free: whether to report them.
  bool memoryProfilingEnabled() const override { return track_cpu_ && session() != nullptr; }

  tp::ActiveProfilerType profilerType() override { return tp::ActiveProfilerType::NONE; }

  void deactivate() { active_.store(false, std::memory_order_release); }

 private:
  /// The session this reporter belongs to while it runs (never in a forked child, where the
  /// core's session is gone), else nullptr.
  Session* session() const {
    if (!active_.load(std::memory_order_acquire)) return nullptr;
    Session* s = current_session();
    return s != nullptr && s->generation == generation_ ? s : nullptr;
  }
  bool wanted(c10::Device device) const { return track_cpu_ || !device.is_cpu(); }

  const uint64_t generation_;
  const bool track_cpu_;
  std::atomic<bool> active_{true};
};

// The reporter of the running memory capture and the debug-info entry it was pushed as: start and
// stop run under the GIL, which orders them.
std::shared_ptr<Reporter> g_reporter;
std::shared_ptr<c10::ThreadLocalDebugInfo> g_pushed;
// While suspended: the thread's debug info the reporter was taken from (it goes back on top of
// exactly that), and how many suspensions are open.
std::shared_ptr<c10::ThreadLocalDebugInfo> g_below;
int g_suspended = 0;

/// Whether the reporter is the innermost debug info of the calling thread.
bool innermost() { return g_pushed && c10::ThreadLocalDebugInfo::current().get() == g_pushed.get(); }

}  // namespace

StartResult start_reporting(bool track_cpu) {
  StartResult r;
  Session* s = current_session();
  if (s == nullptr) {
    r.reason = "no dlpt profile is running";
    return r;
  }
  stop_reporting();
  if (tp::profilerEnabled()) {
    r.reason = "torch.profiler is running on this thread (it reports allocations to itself)";
    return r;
  }
  tracker().reset();
  g_suspended = 0;
  g_below.reset();
  g_reporter = std::make_shared<Reporter>(s->generation, track_cpu);
  c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, g_reporter);
  g_pushed = c10::ThreadLocalDebugInfo::current();
  tracker().step_begin();
  r.enabled = true;
  return r;
}

void stop_reporting() {
  if (!g_reporter) return;
  g_reporter->deactivate();
  // Removed only where it is the innermost entry of this thread (stopped on the thread that
  // started it, with nothing pushed since); otherwise it stays there inert, harmless to torch.
  if (innermost()) c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  g_pushed.reset();
  g_below.reset();
  g_suspended = 0;
  g_reporter.reset();
}

void suspend_reporting() {
  if (!g_reporter) return;
  if (g_suspended > 0) {
    ++g_suspended;  // nested: the reporter is already out
    return;
  }
  if (!innermost()) return;  // another thread, or something pushed since: nothing to take out
  c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  g_below = c10::ThreadLocalDebugInfo::current();
  g_pushed.reset();
  g_suspended = 1;
}

void resume_reporting() {
  if (!g_reporter || g_suspended == 0 || --g_suspended > 0) return;
  // Back only where it was taken out, with torch's state gone again; otherwise it stays out
  // (and the session reports fewer allocations, never a wrong state to torch).
  if (c10::ThreadLocalDebugInfo::current().get() == g_below.get()) {
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, g_reporter);
    g_pushed = c10::ThreadLocalDebugInfo::current();
  }
  g_below.reset();
}

}  // namespace dlpt::memory
