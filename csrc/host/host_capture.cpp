#include "host_capture.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <memory>
#include <mutex>

#include "../clock.h"
#include "../cupti/tracer.h"
#include "../frames/safe_memory.h"

namespace dlpt::host {

namespace detail {
std::atomic<bool> g_timeline{false};
std::atomic<bool> g_activity{false};
}  // namespace detail

namespace {

struct Capture {
  Session* session = nullptr;
  uint64_t last_mark_ns = 0;  // the last step boundary seen, and whether recording was on after it
  bool last_mark_recorded = false;
  HostOptions opts;
  std::unique_ptr<IdleBlame> blame;
  std::unique_ptr<Timeline> timeline;
  Sampler sampler;
  bool sampling = false;
  bool stopped = false;
  std::string method;
};

/// Two step boundaries closer than this are one (see on_mark).
constexpr uint64_t kSameMarkNs = 20'000;

std::atomic<Capture*> g_live{nullptr};
// The running capture and the last finished one (hooks racing with its end may still hold it).
// Never destroyed: at exit a sampler still running (a profile never stopped) must not be joined
// or destroyed from a static destructor.
std::vector<std::unique_ptr<Capture>>* g_park = new std::vector<std::unique_ptr<Capture>>();

/// A forked child has no sampler thread, and the parent's other threads may have held this
/// capture's locks at fork(): the child forgets it without touching it (leaked on purpose).
void forget_in_child() {
  Capture* c = g_live.exchange(nullptr, std::memory_order_relaxed);
  if (c != nullptr) c->sampler.abandon();
  for (auto& p : *g_park) (void)p.release();
  g_park->clear();
  detail::g_timeline.store(false, std::memory_order_relaxed);
  detail::g_activity.store(false, std::memory_order_relaxed);
}

Capture* live_for(const Session& s) {
  Capture* c = g_live.load(std::memory_order_acquire);
  return c != nullptr && c->session == &s ? c : nullptr;
}

uint64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace

uint64_t clock_ns(const Session& s) {
  if (s.gpu.load(std::memory_order_relaxed)) {
    if (const uint64_t t = cupti_now()) return t;
  }
  return realtime_ns();
}

HostStart start(const HostOptions& opts) {
  static const int registered = pthread_atfork(nullptr, nullptr, forget_in_child);
  (void)registered;
  HostStart res;
  Session* s = current_session();
  if (s == nullptr || g_live.load() != nullptr) return res;
  if (g_park->size() > 1) g_park->erase(g_park->begin(), g_park->end() - 1);
  g_park->push_back(std::make_unique<Capture>());
  Capture* c = g_park->back().get();
  c->session = s;
  c->opts = opts;
  const bool gpu = s->gpu.load();
  if (opts.sample_hz > 0) c->blame = std::make_unique<IdleBlame>(gpu);
  if (opts.timeline_steps > 0)
    c->timeline = std::make_unique<Timeline>(opts.timeline_steps, opts.timeline_events, opts.timeline_armed);
  detail::g_activity.store(gpu && (c->blame || c->timeline), std::memory_order_relaxed);
  g_live.store(c, std::memory_order_release);
  // The core marked the start already when recording starts at once: the same boundary here.
  if (s->collecting.load()) on_mark(*s, true);
  if (opts.sample_hz > 0) {
    c->sampling = c->sampler.start(*s, opts.sample_hz, c->blame.get(), c->timeline.get(), &res.reason);
    if (!c->sampling) c->blame.reset();
    c->sampler.set_step_thread(static_cast<uint64_t>(syscall(SYS_gettid)));
  }
  res.sampling = c->sampling;
  res.method = c->method = safe_memory::method();
  return res;
}

void stop() {
  Capture* c = g_live.load(std::memory_order_acquire);
  if (c == nullptr || c->stopped) return;
  c->stopped = true;
  c->sampler.stop();
  const uint64_t now = clock_ns(*c->session);
  // The time after the last step boundary is outside the steps (the core stops with the last
  // epoch not counted); without boundaries the run is one counted step.
  if (c->blame && c->session->epochs.ever_ended()) c->blame->classify_open(false);
  // Closes the last recorded step if no boundary did (a profile stopped without pausing first).
  if (c->blame && c->last_mark_recorded) c->blame->mark(now, false);
  if (c->timeline) c->timeline->close(now, ticks());
  detail::g_timeline.store(false, std::memory_order_relaxed);
}

void arm_timeline() {
  Capture* c = g_live.load(std::memory_order_acquire);
  if (c != nullptr && !c->stopped && c->timeline) c->timeline->arm();
}

bool running() {
  Capture* c = g_live.load(std::memory_order_acquire);
  return c != nullptr && !c->stopped;
}

HostResult take_result() {
  HostResult r;
  Capture* c = g_live.load(std::memory_order_acquire);
  if (c == nullptr) return r;
  stop();
  detail::g_activity.store(false, std::memory_order_relaxed);
  g_live.store(nullptr, std::memory_order_release);
  r.sampled = c->sampling;
  r.hz = c->opts.sample_hz;
  r.method = c->method;
  r.stats = c->sampler.stats();
  c->sampler.fold_epochs(c->session->epochs);  // the core stopped: every epoch has its class
  r.cells = c->sampler.cells();
  r.outside_cells = c->sampler.outside_cells();
  if (c->blame) {
    r.blamed = true;
    r.gpu = c->session->gpu.load();
    r.blame = c->blame->finish();
  }
  if (c->timeline) {
    r.timeline = true;
    r.events = c->timeline->events();
    r.dropped_events = c->timeline->dropped();
    r.steps_requested = c->timeline->steps_requested();
    r.steps_kept = c->timeline->steps_kept();
    r.window_start_ns = c->timeline->opened_ns();
    r.window_end_ns = c->timeline->closed_ns();
  }
  return r;
}

void on_mark(Session& s, bool recorded, bool ended_counted) {
  Capture* c = live_for(s);
  if (c == nullptr || c->stopped) return;
  const uint64_t now = clock_ns(s);
  c->sampler.set_step_thread(static_cast<uint64_t>(syscall(SYS_gettid)));
  // The interval ending here was not a counted step (warm-up, between step_on calls): not blamed.
  if (c->blame && !ended_counted) c->blame->classify_open(false);
  // A boundary marks twice, microseconds apart (an epoch's end, then set_tracing or
  // set_collecting): one boundary, not an empty step; the second says what the interval is.
  if (c->last_mark_ns != 0 && now < c->last_mark_ns + kSameMarkNs) {
    if (recorded != c->last_mark_recorded) {
      c->last_mark_recorded = recorded;
      if (c->blame) c->blame->set_open(recorded);
    }
    return;
  }
  c->last_mark_ns = now;
  c->last_mark_recorded = recorded;
  if (c->blame) c->blame->mark(now, recorded, s.last_work_corr.load(std::memory_order_relaxed));
  if (c->timeline) {
    c->timeline->mark(now, ticks(), recorded);
    detail::g_timeline.store(c->timeline->open(), std::memory_order_relaxed);
  }
}

void on_cut(Session& s, bool extend) {
  Capture* c = live_for(s);
  if (c != nullptr && !c->stopped && c->blame) c->blame->cut(extend);
}

void on_restore(Session& s) {
  Capture* c = live_for(s);
  if (c != nullptr && !c->stopped && c->blame) c->blame->restore_last_cut();
}

void on_drain() {
  Capture* c = g_live.load(std::memory_order_acquire);
  if (c != nullptr && !c->stopped) c->sampler.drain_codes();
}

void on_op(Session& s, uint64_t tid, NodeId op, uint64_t start_ticks, uint64_t end_ticks) {
  Capture* c = live_for(s);
  if (c == nullptr || !c->timeline || !c->timeline->open()) return;
  Event e;
  e.kind = EventKind::Op;
  e.start = start_ticks;
  e.end = end_ticks;
  e.track = tid;
  e.node = op;
  c->timeline->add(e);
}

void on_api(Session& s, uint64_t tid, uint32_t cbid, bool launch, uint32_t corr, uint64_t start_ticks,
            uint64_t end_ticks, NodeId context) {
  Capture* c = live_for(s);
  if (c == nullptr || !c->timeline || !c->timeline->open()) return;
  if (launch) c->timeline->note_launch(corr);
  Event e;
  e.kind = launch ? EventKind::Api : EventKind::Sync;
  e.start = start_ticks;
  e.end = end_ticks;
  e.track = tid;
  e.node = context;
  e.detail = cbid;
  e.corr = corr;
  c->timeline->add(e);
}

void on_activity(Session& s, EventKind kind, uint32_t device, uint32_t stream, uint32_t corr, uint64_t start,
                 uint64_t end, NodeId leaf) {
  Capture* c = live_for(s);
  if (c == nullptr) return;
  if (c->blame) c->blame->work(device, start, end, corr);
  if (c->timeline && c->timeline->keeps_activity(corr)) {
    Event e;
    e.kind = kind;
    e.start = start;
    e.end = end;
    e.track = static_cast<uint64_t>(device) << 32 | stream;
    e.node = leaf;
    e.corr = corr;
    c->timeline->add(e);
  }
}

}  // namespace dlpt::host
