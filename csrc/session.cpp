#include "session.h"

#include <pthread.h>

#include <vector>

#include "context/thread_state.h"

namespace dlpt {

namespace {
std::atomic<Session*> g_current{nullptr};
// The park (the running and the last finished session) and its lock are never destroyed: a
// thread that ends after the extension's static destructors ran still gives its state back
// through them (retire_thread_state, from a pthread key destructor). torch's autograd engine
// ends its device threads from its own static destructor, at exit, after ours: with a destroyed
// mutex and vector there, every program that ran a backward under dlpt.profile() died of
// SIGSEGV at exit (status 139 instead of its own). The process is ending: nothing leaks.
std::mutex& park_mu() {
  static auto* mu = new std::mutex;
  return *mu;
}
std::vector<std::unique_ptr<Session>>& park() {
  static auto* sessions = new std::vector<std::unique_ptr<Session>>;
  return *sessions;
}
uint64_t g_generation = 0;
}  // namespace

SeqRanges& SeqRangesByThread::get(uint64_t tid) {
  if (SeqRanges* r = find(tid)) return *r;
  std::lock_guard<std::mutex> lock(mu_);
  const size_t n = count_.load(std::memory_order_relaxed);
  for (size_t i = 0; i < n; ++i) {
    if (tids_[i].load(std::memory_order_relaxed) == tid) return *ranges_[i];
  }
  // More forward threads than slots: the last slot is shared (grafting degrades, never breaks).
  if (n == kMaxThreads) return *ranges_[kMaxThreads - 1];
  ranges_[n] = std::make_unique<SeqRanges>();
  tids_[n].store(tid, std::memory_order_relaxed);
  count_.store(n + 1, std::memory_order_release);
  return *ranges_[n];
}

SeqRanges* SeqRangesByThread::find(uint64_t tid) const {
  const size_t n = count_.load(std::memory_order_acquire);
  for (size_t i = 0; i < n; ++i) {
    if (tids_[i].load(std::memory_order_relaxed) == tid) return ranges_[i].get();
  }
  return nullptr;
}

Session::Session(uint64_t gen, const CaptureOptions& o) : generation(gen), opts(o) {}

Session::~Session() = default;

ThreadState* Session::attach_thread(uint64_t os_tid) {
  {
    std::lock_guard<std::mutex> lock(threads_mu_);
    if (!idle_.empty()) {
      ThreadState* ts = idle_.back();
      idle_.pop_back();
      ts->recycle(os_tid);  // under the lock: the sampler reads os_tid under it
      thread_attaches_.fetch_add(1, std::memory_order_release);
      return ts;
    }
  }
  auto ts = std::make_unique<ThreadState>(*this, os_tid);
  ThreadState* raw = ts.get();
  std::lock_guard<std::mutex> lock(threads_mu_);
  threads_.push_back(std::move(ts));
  thread_attaches_.fetch_add(1, std::memory_order_release);
  return raw;
}

void Session::retire_thread(ThreadState* ts) {
  std::lock_guard<std::mutex> lock(threads_mu_);
  idle_.push_back(ts);
}

size_t Session::thread_states() {
  std::lock_guard<std::mutex> lock(threads_mu_);
  return threads_.size();
}

Session* current_session() { return g_current.load(std::memory_order_acquire); }

namespace {
/// A forked child (DataLoader workers) inherits the parent's callbacks but not its other threads:
/// a lock one of them held at fork() would never be released. Capture is the parent's business,
/// so the child simply stops capturing.
void stop_capture_in_child() { g_current.store(nullptr, std::memory_order_relaxed); }
}  // namespace

Session* begin_session(const CaptureOptions& opts) {
  static const int atfork_registered = pthread_atfork(nullptr, nullptr, stop_capture_in_child);
  (void)atfork_registered;
  std::lock_guard<std::mutex> lock(park_mu());
  // Keep only the last finished session parked: a callback that raced with its stop() could
  // still hold it, but nothing can still hold the one before it (a whole session has passed).
  std::vector<std::unique_ptr<Session>>& parked = park();
  if (parked.size() > 1) parked.erase(parked.begin(), parked.end() - 1);
  parked.push_back(std::make_unique<Session>(++g_generation, opts));
  Session* s = parked.back().get();
  s->rate.begin();
  g_current.store(s, std::memory_order_release);
  return s;
}

void retire_thread_state(uint64_t generation, ThreadState* ts) {
  // Under the park's lock: begin_session cannot free the session meanwhile.
  std::lock_guard<std::mutex> lock(park_mu());
  for (auto& s : park()) {
    if (s->generation == generation) {
      s->retire_thread(ts);
      return;
    }
  }
}

Session* end_session() {
  Session* s = g_current.exchange(nullptr, std::memory_order_acq_rel);
  if (s) s->rate.end();
  return s;
}

}  // namespace dlpt
