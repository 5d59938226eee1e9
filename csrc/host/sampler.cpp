#include "sampler.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>

#include "../context/thread_state.h"
#include "../frames/safe_memory.h"
#include "../own_threads.h"
#include "host_capture.h"
#include "idle_blame.h"
#include "timeline.h"

namespace dlpt::host {

namespace {

constexpr size_t kMaxThreads = 256;
/// Each sample stands for the time since the previous tick: when the sampler thread gets a CPU
/// late (a busy machine), the stack it sees then gets the whole interval, so the host time still
/// adds up to the wall time. A tick later than this (the process was stopped, the machine
/// suspended) counts only this much.
constexpr uint64_t kMaxWeightNs = 200'000'000;

/// The kernel's CPU-time clock of thread `tid`: what pthread_getcpuclockid builds from a
/// pthread_t (CPUCLOCK_SCHED | CPUCLOCK_PERTHREAD on ~tid << 3), made from the kernel id so that
/// a thread that ended meanwhile is an EINVAL, never a use of its freed pthread struct.
uint64_t thread_cpu_ns(uint64_t tid) {
  const auto id = static_cast<clockid_t>((~static_cast<uint32_t>(tid)) << 3 | 6u);
  timespec ts;
  if (clock_gettime(id, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t own_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

bool finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

/// [GIL] A pending call: CPython runs it on the main thread, with the GIL, at its next check.
int drain_pending(void*) {
  on_drain();
  return 0;
}

}  // namespace

bool Sampler::start(Session& s, uint32_t hz, IdleBlame* blame, Timeline* timeline, std::string* why) {
  if (thread_ || hz == 0) return false;
  if (!safe_memory::init(why)) return false;
  session_ = &s;
  interp_ = PyInterpreterState_Main();
  blame_ = blame;
  timeline_ = timeline;
  hz_ = hz;
  period_ns_ = std::max<uint64_t>(1'000'000'000ull / hz, 10'000);
  stop_requested_ = false;
  // The thread blocks every asynchronous signal: a process-directed signal (Ctrl-C, SIGTERM)
  // must reach a Python thread, whose blocking call it interrupts, not this one. Faults stay
  // unblocked: the kernel kills a thread that faults with them blocked without running any
  // handler, so faulthandler (or a debugger's) could not say where.
  sigset_t all, old;
  sigfillset(&all);
  for (const int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP}) sigdelset(&all, fault);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  try {
    thread_ = std::make_unique<std::thread>([this] { run(); });
  } catch (const std::exception& e) {
    if (why) *why = std::string("could not start the sampler thread: ") + e.what();
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return thread_ != nullptr;
}

void Sampler::stop() {
  if (thread_) {
    {
      std::lock_guard<std::mutex> lock(wake_mu_);
      stop_requested_ = true;
    }
    wake_.notify_all();
    // The thread never takes the GIL (nor waits on anything the GIL holder holds): joining it
    // with the GIL held cannot deadlock.
    thread_->join();
    thread_.reset();
  }
  drain_codes();
}

void Sampler::abandon() { (void)thread_.release(); }

void Sampler::drain_codes() {
  std::vector<std::pair<PyObject*, CodeInfo>> batch;
  {
    std::lock_guard<std::mutex> lock(codes_mu_);
    batch.swap(to_register_);
    drain_scheduled_.store(false, std::memory_order_relaxed);
  }
  if (batch.empty() || session_ == nullptr) return;
  std::vector<PyObject*> lost;
  for (const auto& [code, info] : batch) {
    // With the GIL held no thread can free it now; validated through safe reads first, since
    // it may have been freed between the sample and now.
    if (code_still_valid(code, info)) {
      session_->codes.note(code);
    } else {
      lost.push_back(code);
    }
  }
  if (!lost.empty()) {
    std::lock_guard<std::mutex> lock(codes_mu_);
    lost_.insert(lost_.end(), lost.begin(), lost.end());
    stats_codes_lost_ += lost.size();
  }
}

void Sampler::run() {
  pthread_setname_np(pthread_self(), "dlpt-sampler");
  const uint64_t cpu0 = own_cpu_ns();
  using Clock = std::chrono::steady_clock;
  const auto period = std::chrono::nanoseconds(period_ns_);
  auto next = Clock::now() + period;
  auto last = Clock::now();
  std::unique_lock<std::mutex> lock(wake_mu_);
  while (!stop_requested_) {
    wake_.wait_until(lock, next, [this] { return stop_requested_; });
    if (stop_requested_) break;
    lock.unlock();
    const auto now = Clock::now();
    if (now >= next) {
      const auto late = now - next;
      if (late >= period) {
        stats_.missed += static_cast<uint64_t>(late / period);
        next = now + period;
      } else {
        next += period;
      }
      const auto elapsed =
          static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - last).count());
      last = now;
      tick(std::min(elapsed, std::max(kMaxWeightNs, period_ns_)));
    }
    lock.lock();
  }
  stats_.sampler_cpu_ns = own_cpu_ns() - cpu0;
  stats_.safe_reads = reader_.reads();
}

std::vector<HostCell>& Sampler::cells_of(Filed f) {
  return f == Filed::Counted ? cells_ : f == Filed::Dropped ? dropped_cells_ : outside_cells_;
}

void Sampler::file_pending(const Epochs& epochs) {
  seen_.catch_up(epochs, [this](Filed from_class, Filed to_class) {
    std::vector<HostCell>& from = cells_of(from_class);
    std::vector<HostCell>& to = cells_of(to_class);
    if (to.size() < from.size()) to.resize(from.size());
    for (size_t i = 0; i < from.size(); ++i) to[i].add(from[i]);
    from.clear();
  });
  if (pending_.empty()) return;
  std::vector<HostCell>& to = cells_of(epochs.filed(pending_epoch_));
  for (const auto& [node, c] : pending_) {
    if (node >= to.size()) to.resize(std::max<size_t>(node + 1, to.size() * 2));
    to[node].add(c);
  }
  pending_.clear();
}

void Sampler::fold_epochs(const Epochs& epochs) { file_pending(epochs); }

void Sampler::tick(uint64_t weight_ns) {
  Session& s = *session_;
  ++tick_no_;
  // Untraced steps (set_tracing) are timed, not traced: no samples, as no other cost.
  if (!s.collecting.load(std::memory_order_acquire) || !s.tracing.load(std::memory_order_acquire)) return;
  if (const uint32_t e = s.epochs.current(); e != pending_epoch_) {
    file_pending(s.epochs);
    pending_epoch_ = e;
  }
  ++stats_.ticks;
  stats_.sampled_wall_ns += weight_ns;
  if (const uint32_t lag = s.opts.bench.sampler_lag_us) std::this_thread::sleep_for(std::chrono::microseconds(lag));
  {
    std::lock_guard<std::mutex> lock(codes_mu_);
    for (PyObject* code : lost_) reader_.forget(code);
    lost_.clear();
  }
  const uint64_t clock = clock_ns(s);
  const void* gil_holder = nullptr;
#if PY_VERSION_HEX < 0x030C0000
  // 3.11 keeps the GIL holder interpreter-wide: this returns it (one atomic load), not ours.
  gil_holder = _PyThreadState_UncheckedGet();
#endif
  RemoteThread threads[kMaxThreads];
  const size_t n = reader_.threads(interp_, gil_holder, threads, kMaxThreads);
  stats_.max_threads = std::max<uint64_t>(stats_.max_threads, n);
  for (size_t i = 0; i < n; ++i) {
    if (!is_own_thread(threads[i].tid)) sample_thread(threads[i], weight_ns, clock);  // not dlpt's watchdog
  }
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    it = it->second.seen == tick_no_ ? std::next(it) : tracks_.erase(it);
  }
  if (!fresh_.empty()) {
    {
      std::lock_guard<std::mutex> lock(codes_mu_);
      for (PyObject* code : fresh_) {
        bool again = false;
        if (const CodeInfo* info = reader_.code(code, &again)) to_register_.emplace_back(code, *info);
      }
    }
    fresh_.clear();
    if (!drain_scheduled_.exchange(true) && !finalizing()) {
      if (Py_AddPendingCall(&drain_pending, nullptr) != 0) drain_scheduled_.store(false);
    }
  }
  if (blame_ != nullptr) blame_->settle(clock);
}

void Sampler::sample_thread(const RemoteThread& t, uint64_t weight_ns, uint64_t clock_ns) {
  ThreadTrack& tt = tracks_[t.tid];
  if (tt.tstate != t.tstate) {
    tt = ThreadTrack{};
    tt.tstate = t.tstate;
  }
  tt.seen = tick_no_;
  const uint64_t cpu = thread_cpu_ns(t.tid);
  const uint64_t cpu_delta = tt.cpu_ns != 0 && cpu >= tt.cpu_ns ? std::min(cpu - tt.cpu_ns, weight_ns) : 0;
  tt.cpu_ns = cpu;
  if (t.top == nullptr) return;
  RawFrame raw[kMaxPythonFrames];
  size_t nf = 0;
  if (reader_.frames(t, raw, kMaxPythonFrames, &nf, &fresh_) == Walk::Torn) {
    ++stats_.torn;
    return;
  }
  // A step boundary since the tick read the epoch (this thread was descheduled in between: a
  // busy host): the stack may be of either side, so it is dropped rather than filed in the step
  // before (a program's teardown after its last step was read as part of that step).
  if (session_->epochs.current() != pending_epoch_) {
    ++stats_.torn;
    return;
  }
  if (nf == 0) return;
  // A thread without a known state is looked up again as soon as any state was attached: its
  // first scope is usually what attaches one, and its samples from then on belong under it (a
  // lookup every 64 ticks left up to 64 ms of a scope's time outside it).
  if (tt.scopes == nullptr) {
    const uint64_t attaches = session_->thread_attaches();
    if (attaches != tt.scopes_attaches) {
      tt.scopes = find_scopes(t.tid);
      tt.scopes_attaches = attaches;
    }
  }
  MirroredScope scopes[ScopeMirror::kMaxScopes];
  int nscopes = 0;
  uint32_t version = 0;
  if (tt.scopes != nullptr) {
    nscopes = tt.scopes->read(scopes, &version);
    if (nscopes < 0) {
      ++stats_.scope_retries;
      nscopes = 0;
      version = UINT32_MAX - 1;  // an odd version no consistent read has: the path is rebuilt
    }
  }
  const NodeId node = path_node(tt, raw, nf, scopes, nscopes, version);
  HostCell& cell = pending_[node];
  cell.wall_ns += weight_ns;
  if (t.holds_gil) cell.gil_ns += weight_ns;
  cell.cpu_ns += cpu_delta;
  ++cell.samples;
  ++stats_.samples;
  if (blame_ != nullptr && t.tid == step_tid_.load(std::memory_order_relaxed))
    blame_->sample(clock_ns, node, weight_ns, t.holds_gil);
  if (timeline_ != nullptr && timeline_->open()) {
    Event e;
    e.kind = EventKind::Sample;
    e.start = clock_ns > weight_ns ? clock_ns - weight_ns : 0;  // the interval this sample stands for
    e.end = clock_ns;
    e.track = t.tid;
    e.node = node;
    e.flags = t.holds_gil ? 1 : 0;
    timeline_->add(e);
  }
}

NodeId Sampler::path_node(ThreadTrack& tt, const RawFrame* raw, size_t n, const MirroredScope* scopes, int nscopes,
                          uint32_t version) {
  // Scopes entered or left since the last sample move nodes above their frames: start over.
  if (version != tt.scope_version) {
    tt.path.clear();
    tt.scope_version = version;
  }
  // The outer frames rarely change between samples: reuse the nodes of the common prefix,
  // compared by (frame address, instruction pointer), as the op path's PathCache does.
  size_t common = 0;
  while (common < n && common < tt.path.size()) {
    const RawFrame& f = raw[n - 1 - common];
    const PathEntry& e = tt.path[common];
    if (f.frame != e.frame || f.instr != e.instr) break;
    ++common;
  }
  tt.path.resize(common);
  NodeId parent = common ? tt.path.back().node : kRootNode;
  for (size_t i = common; i < n; ++i) {
    const RawFrame& f = raw[n - 1 - i];
    // As ThreadState::frame_node: a scope's node goes above the frame that entered it.
    for (int k = 0; k < nscopes; ++k) {
      if (scopes[k].entry_frame == f.frame) parent = child(parent, NodeKind::Scope, scopes[k].name_id, 0);
    }
    parent = child(parent, NodeKind::Frame, reinterpret_cast<uint64_t>(f.code), static_cast<uint64_t>(f.lasti));
    tt.path.push_back(PathEntry{f.frame, f.instr, parent});
  }
  return parent;
}

NodeId Sampler::child(NodeId parent, NodeKind kind, uint64_t a, uint64_t b) {
  const NodeKey key{parent, kind, a, b};
  NodeId id = children_.find(key);
  if (id != kNoNode) return id;
  id = session_->tree.child(key);
  children_.put(key, id);
  return id;
}

ScopeMirror* Sampler::find_scopes(uint64_t tid) {
  ScopeMirror* found = nullptr;
  session_->for_each_thread([&](ThreadState& ts) {
    if (ts.os_tid == tid) found = &ts.scope_mirror;
  });
  return found;
}

}  // namespace dlpt::host
