#include "session.h"

#include <pthread.h>

#include <vector>

namespace dlpt {

namespace {
std::atomic<Session*> g_current{nullptr};
std::mutex g_park_mu;
std::vector<std::unique_ptr<Session>> g_park;  // the running and the last finished session
uint64_t g_generation = 0;
}  // namespace

SeqRanges& Session::seq_ranges(uint64_t tid) {
  std::lock_guard<std::mutex> lock(seq_mu_);
  auto& p = seq_[tid];
  if (!p) p = std::make_unique<SeqRanges>();
  return *p;
}

SeqRanges* Session::find_seq_ranges(uint64_t tid) {
  std::lock_guard<std::mutex> lock(seq_mu_);
  auto it = seq_.find(tid);
  return it == seq_.end() ? nullptr : it->second.get();
}

Session* current_session() { return g_current.load(std::memory_order_acquire); }

namespace {
/// A forked child (DataLoader workers) inherits the parent's callbacks but not its other threads:
/// a lock one of them held at fork() would never be released. Capture is the parent's business,
/// so the child simply stops capturing.
void stop_capture_in_child() { g_current.store(nullptr, std::memory_order_relaxed); }
}  // namespace

Session* begin_session() {
  static const int atfork_registered = pthread_atfork(nullptr, nullptr, stop_capture_in_child);
  (void)atfork_registered;
  std::lock_guard<std::mutex> lock(g_park_mu);
  // Keep only the last finished session parked: a callback that raced with its stop() could
  // still hold it, but nothing can still hold the one before it (a whole session has passed).
  if (g_park.size() > 1) g_park.erase(g_park.begin(), g_park.end() - 1);
  g_park.push_back(std::make_unique<Session>(++g_generation));
  Session* s = g_park.back().get();
  g_current.store(s, std::memory_order_release);
  return s;
}

Session* end_session() {
  return g_current.exchange(nullptr, std::memory_order_acq_rel);
}

}  // namespace dlpt
