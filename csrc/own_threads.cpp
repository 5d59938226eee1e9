#include "own_threads.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>

namespace dlpt {

namespace {
constexpr int kSlots = 16;  // dlpt starts two Python threads of its own; room to spare
std::atomic<uint64_t> g_own[kSlots];

uint64_t this_tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

/// After fork(), in the child: none of the parent's threads is there.
void forget_in_child() {
  for (auto& slot : g_own) slot.store(0, std::memory_order_relaxed);
}
const int g_registered = pthread_atfork(nullptr, nullptr, forget_in_child);
}  // namespace

void mark_own_thread() {
  const uint64_t tid = this_tid();
  for (auto& slot : g_own) {
    uint64_t empty = 0;
    if (slot.load(std::memory_order_relaxed) == tid) return;
    if (slot.compare_exchange_strong(empty, tid)) return;
  }
  // Full: the thread is sampled like the program's (harmless, and never happens with 16 slots).
}

void unmark_own_thread() {
  const uint64_t tid = this_tid();
  for (auto& slot : g_own) {
    uint64_t mine = tid;
    slot.compare_exchange_strong(mine, 0);
  }
}

bool is_own_thread(uint64_t tid) {
  if (tid == 0) return false;
  for (const auto& slot : g_own) {
    if (slot.load(std::memory_order_relaxed) == tid) return true;
  }
  return false;
}

}  // namespace dlpt
