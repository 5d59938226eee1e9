// dlpt's own Python threads (the CLI's signal watchdog, its status line): threads the host
// sampler must not record as the program's. A handful at most, so a fixed table of kernel
// thread ids, read lock-free by the sampler on every tick.
#pragma once

#include <cstdint>

namespace dlpt {

/// [MT] The calling thread is dlpt's own until unmark_own_thread (from the same thread).
void mark_own_thread();
/// [MT] The calling thread is no longer dlpt's own.
void unmark_own_thread();
/// [MT] Whether kernel thread `tid` is marked (lock-free: the sampler asks on every tick).
bool is_own_thread(uint64_t tid);

}  // namespace dlpt
