#include "signal_end.h"

#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace dlpt::ending {

namespace {

constexpr int kSignals = 65;  // 1..64 on Linux

struct Watched {
  std::atomic<bool> in_front{false};  // our handler is installed (as far as we know)
  std::atomic<bool> ends{false};      // a catch starts the grace
  struct sigaction chained{};         // what ours calls: written under the GIL before installing ours
};
Watched g_watched[kSignals];

std::atomic<int64_t> g_grace_ns{10'000'000'000};
std::atomic<int64_t> g_deadline_ns{0};
std::atomic<int> g_armed{0};  // the signal the grace runs for
std::atomic<bool> g_arming{false};

std::atomic<uint64_t> g_pending{0};  // signals queued for next_signal, one bit each
std::atomic<uint64_t> g_queue{0};    // the queue's generation
sem_t g_queue_sem;                   // posted by the handler: the watchdog wakes
sem_t g_reaper_sem;                  // posted by arm/disarm: the reaper looks again

std::mutex g_text_mu;  // the text and the files, set under the GIL, read by the reaper
std::string g_prefix = "dlpt";
std::string g_tail = "ending now";
std::vector<std::string> g_partial;

std::once_flag g_started;
std::atomic<bool> g_reaper_running{false};

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool valid(int signum) { return signum > 0 && signum < kSignals; }

/// sem_wait/sem_timedwait that retries on EINTR; false on timeout.
bool wait_sem(sem_t* sem, const timespec* until_realtime) {
  for (;;) {
    const int rc = until_realtime ? sem_timedwait(sem, until_realtime) : sem_wait(sem);
    if (rc == 0) return true;
    if (errno != EINTR) return false;
  }
}

timespec realtime_after(double seconds) {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const double whole = std::floor(seconds);
  ts.tv_sec += static_cast<time_t>(whole);
  ts.tv_nsec += static_cast<long>((seconds - whole) * 1e9);
  if (ts.tv_nsec >= 1'000'000'000) {
    ts.tv_sec += 1;
    ts.tv_nsec -= 1'000'000'000;
  }
  return ts;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

std::string signal_name(int signum) {
  switch (signum) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGQUIT:
      return "SIGQUIT";
    default:
      return "signal " + std::to_string(signum);
  }
}

/// The grace ran out: say what is skipped, remove the partial files, die of the signal.
[[noreturn]] void die(int signum) {
  {
    std::lock_guard<std::mutex> lock(g_text_mu);
    for (const std::string& path : g_partial) ::unlink(path.c_str());
    // A status line may be drawn on a terminal's last row: the line starts on a clean one.
    const std::string clear = isatty(2) ? "\r\033[K" : "";
    write_all(2, clear + g_prefix + ": " + signal_name(signum) + ": " + g_tail + "\n");
  }
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(signum, &dfl, nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, signum);
  pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  pthread_kill(pthread_self(), signum);  // this thread: the only one sure not to block it now
  kill(getpid(), signum);
  sleep(2);  // delivery is immediate for an unblocked signal; this is the fallback only
  _exit(128 + signum);
}

void reaper() {
  pthread_setname_np(pthread_self(), "dlpt-grace");
  for (;;) {
    const int signum = g_armed.load(std::memory_order_acquire);
    if (signum == 0) {
      wait_sem(&g_reaper_sem, nullptr);
      continue;
    }
    const int64_t left = g_deadline_ns.load(std::memory_order_acquire) - now_ns();
    if (left <= 0) die(signum);
    // Wake at the deadline, or when disarmed (posted); a little early is looked at again.
    const timespec until = realtime_after(std::min<double>(static_cast<double>(left) / 1e9, 0.05));
    wait_sem(&g_reaper_sem, &until);
  }
}

void forget_in_child();

void start_reaper() {
  std::call_once(g_started, [] {
    sem_init(&g_queue_sem, 0, 0);
    sem_init(&g_reaper_sem, 0, 0);
    pthread_atfork(nullptr, nullptr, forget_in_child);
  });
  if (g_reaper_running.exchange(true)) return;
  // Every async signal blocked in the reaper: process-directed signals go to the program's threads.
  sigset_t all, old;
  sigfillset(&all);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, s);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_t thread;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  const int rc = pthread_create(
      &thread, &attr,
      [](void*) -> void* {
        reaper();
        return nullptr;
      },
      nullptr);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (rc != 0) g_reaper_running.store(false);
}

void on_signal(int signum, siginfo_t* info, void* context) {
  const int saved = errno;
  Watched& w = g_watched[signum];
  if (w.ends.load(std::memory_order_relaxed)) arm(signum);
  g_pending.fetch_or(uint64_t{1} << (signum - 1), std::memory_order_release);
  sem_post(&g_queue_sem);
  const struct sigaction& c = w.chained;
  if (c.sa_flags & SA_SIGINFO) {
    if (c.sa_sigaction != nullptr) c.sa_sigaction(signum, info, context);
  } else if (c.sa_handler != SIG_DFL && c.sa_handler != SIG_IGN && c.sa_handler != nullptr) {
    c.sa_handler(signum);
  }
  errno = saved;
}

bool ours(const struct sigaction& sa) { return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == &on_signal; }

/// After fork(), in the child: the parent's grace, queue and reaper are not this process's.
void forget_in_child() {
  for (int s = 1; s < kSignals; ++s) {
    Watched& w = g_watched[s];
    struct sigaction now{};
    if (w.in_front.load() && sigaction(s, nullptr, &now) == 0 && ours(now)) sigaction(s, &w.chained, nullptr);
    w.in_front.store(false);
    w.ends.store(false);
  }
  g_armed.store(0);
  g_arming.store(false);
  g_pending.store(0);
  g_reaper_running.store(false);
  sem_init(&g_queue_sem, 0, 0);
  sem_init(&g_reaper_sem, 0, 0);
}

}  // namespace

bool watch(int signum, bool ends, bool take_default) {
  if (!valid(signum)) return false;
  start_reaper();
  Watched& w = g_watched[signum];
  struct sigaction now{};
  if (sigaction(signum, nullptr, &now) != 0) return false;
  if (ours(now)) {
    w.ends.store(ends);
    w.in_front.store(true);
    return true;
  }
  const bool info = (now.sa_flags & SA_SIGINFO) != 0;
  const bool handled = info ? now.sa_sigaction != nullptr : now.sa_handler != SIG_DFL && now.sa_handler != SIG_IGN;
  const bool dfl = !info && now.sa_handler == SIG_DFL;
  if (!handled && !(dfl && take_default)) return false;
  w.chained = now;
  w.ends.store(ends);
  struct sigaction mine = now;
  mine.sa_sigaction = &on_signal;
  mine.sa_flags = (now.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
  if (sigaction(signum, &mine, nullptr) != 0) return false;
  w.in_front.store(true);
  return true;
}

void unwatch(int signum) {
  if (!valid(signum)) return;
  Watched& w = g_watched[signum];
  struct sigaction now{};
  if (sigaction(signum, nullptr, &now) == 0 && ours(now)) sigaction(signum, &w.chained, nullptr);
  w.in_front.store(false);
  w.ends.store(false);
}

bool watching(int signum) {
  if (!valid(signum)) return false;
  struct sigaction now{};
  return sigaction(signum, nullptr, &now) == 0 && ours(now);
}

void set_grace(double seconds) {
  if (!(seconds > 0) || !std::isfinite(seconds)) return;
  g_grace_ns.store(static_cast<int64_t>(seconds * 1e9));
}

void arm(int signum) {
  if (!valid(signum) || g_arming.exchange(true)) return;
  g_deadline_ns.store(now_ns() + g_grace_ns.load(std::memory_order_relaxed), std::memory_order_release);
  g_armed.store(signum, std::memory_order_release);
  sem_post(&g_reaper_sem);
}

void disarm() {
  g_armed.store(0, std::memory_order_release);
  g_arming.store(false);
  sem_post(&g_reaper_sem);
}

int armed() { return g_armed.load(std::memory_order_acquire); }

void set_text(const std::string& prefix, const std::string& tail) {
  std::lock_guard<std::mutex> lock(g_text_mu);
  g_prefix = prefix;
  g_tail = tail;
}

void set_partial(const std::vector<std::string>& paths) {
  std::lock_guard<std::mutex> lock(g_text_mu);
  g_partial = paths;
}

uint64_t open_queue() {
  start_reaper();
  g_pending.store(0);
  const uint64_t gen = g_queue.fetch_add(1) + 1;
  sem_post(&g_queue_sem);  // a waiter of the previous generation leaves
  return gen;
}

void close_queue() {
  g_queue.fetch_add(1);
  sem_post(&g_queue_sem);
}

int next_signal(uint64_t generation, double timeout_s) {
  const timespec until = realtime_after(timeout_s);
  for (;;) {
    if (g_queue.load() != generation) return 0;
    uint64_t bits = g_pending.load(std::memory_order_acquire);
    while (bits != 0) {
      const int bit = __builtin_ctzll(bits);
      if (g_pending.compare_exchange_weak(bits, bits & ~(uint64_t{1} << bit))) return bit + 1;
    }
    if (!wait_sem(&g_queue_sem, &until)) return 0;  // timed out
  }
}

}  // namespace dlpt::ending
