// Memory capture through torch's memory-reporting hook: start and stop (see torch_reporter.cpp,
// the only file that includes torch's allocator and profiler headers).
#pragma once

#include <string>

namespace dlpt::memory {

struct StartResult {
  bool enabled = false;
  std::string reason;  // why not, when not
};

/// [GIL] Starts reporting allocator events of the running session (its current generation) into
/// tracker(), on the calling thread and the threads that inherit its torch thread-local state
/// (the autograd engine's, for backward passes started here). `track_cpu`: also the CPU
/// allocator's events (torch reports those only when asked, at a cost per CPU allocation; dlpt
/// asks when the program has no CUDA device, so that the CPU runs, and tests, see memory too).
/// Refuses, with the reason, when no dlpt session runs or torch.profiler is active on this thread.
StartResult start_reporting(bool track_cpu);

/// [GIL] Stops reporting: the reporter goes inert at once (for every thread) and is removed from
/// the calling thread's torch thread-local state when it is still the innermost entry there.
void stop_reporting();

/// [GIL] Before torch.profiler enables itself on the calling thread: takes the reporter out of
/// this thread's debug info (torch refuses to start while any profiler state is there). Nested
/// calls count; a thread the reporter is not on is left alone.
void suspend_reporting();
/// [GIL] After torch.profiler disabled itself: puts the reporter back where it was taken out.
void resume_reporting();

}  // namespace dlpt::memory
