// Attaching CUPTI to a session: subscribing, enabling callbacks and activity kinds, suspending
// and resuming tracing (set_tracing), flushing and detaching at stop.
//
// Thread contract: every function here is called by the thread that controls the session,
// [GIL] or [GIL released by caller] (flushing delivers records on this thread, and can wait on
// CUPTI's worker thread).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "../context/thread_state.h"
#include "tracer.h"
#include "tracer_state.h"

namespace dlpt {

using namespace cupti_internal;

namespace {

std::string subscribe_error(const CuptiApi& api, CUptiResult r, const char* old_name) {
  return std::string("CUPTI is already in use") +
         (old_name && old_name[0] ? std::string(" by '") + old_name + "'" : std::string()) + " (" +
         api.error_string(r) + "); another profiler (torch.profiler, nsys, ncu, Proton) holds it";
}

/// Subscribes dlpt's callback; false with `error` saying who holds CUPTI.
bool subscribe(const CuptiApi& api, std::string* error) {
  CUptiResult r;
  if (api.cuptiSubscribe_v2) {
    char old_name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1] = {0};
    CUpti_SubscriberParams params{};
    params.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    params.subscriberName = "dlpt";
    params.oldSubscriberName = old_name;
    params.oldSubscriberSize = sizeof(old_name);
    r = api.cuptiSubscribe_v2(&g.subscriber, on_api, nullptr, &params);
    if (r != CUPTI_SUCCESS) *error = subscribe_error(api, r, old_name);
  } else {
    r = api.cuptiSubscribe(&g.subscriber, on_api, nullptr);
    if (r != CUPTI_SUCCESS) *error = subscribe_error(api, r, nullptr);
  }
  if (r != CUPTI_SUCCESS) {
    g.subscriber = nullptr;
    return false;
  }
  g.attached = true;
  return true;
}

/// The watched driver-API callbacks (g.cls) on or off. The graph-node resource callbacks stay.
void enable_api_callbacks(bool on) {
  for (uint32_t cbid = 1; cbid < kMaxCbid; ++cbid) {
    if (g.cls[cbid] != kNone) g.api->cuptiEnableCallback(on ? 1 : 0, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  }
}

/// Graph node creation and cloning: where replayed kernels were captured.
void enable_resource_callbacks() {
  g.api->cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  g.api->cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  // PC sampling's cubins (csrc/pcsampling/modules.cpp), only once it asked: one callback per
  // module load, nothing per launch.
  if (g.modules)
    g.api->cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
}

/// Activity buffers (at attach), then the kinds in g.kinds; the first failure, or CUPTI_SUCCESS.
CUptiResult enable_activity(const CuptiExperiment& exp, bool register_buffers) {
  CUptiResult r = CUPTI_SUCCESS;
  if (register_buffers) {
    r = g.api->cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    // Hand back filled buffers often, so the records in flight (host memory) stay small however
    // long the run is.
    if (r == CUPTI_SUCCESS && g.api->cuptiActivityFlushPeriod && !exp.no_flush_period)
      g.api->cuptiActivityFlushPeriod(kFlushPeriodMs);
  }
  for (CUpti_ActivityKind kind : g.kinds) {
    if (r == CUPTI_SUCCESS) r = g.api->cuptiActivityEnable(kind);
  }
  return r;
}

/// Forced flushes until every mapped launch of `s` completed, or a flush brings nothing new.
/// The caller synchronised the devices: a forced flush then delivers everything finished; a
/// flush that brings nothing new means the rest never produces activity (failed launch, empty
/// copy), so this stops waiting instead of hanging the user's program.
void drain(Session& s) {
  uint64_t last_completed = UINT64_MAX;
  for (int i = 0; i < 200 && !g.floor; ++i) {
    g.api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const uint64_t done = s.counters.completed.load();
    if (done >= submitted_total(s)) break;
    if (done == last_completed) break;
    last_completed = done;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace

bool start_gpu_tracing(const CuptiApi& api, Session& session, std::string* error) {
  const CuptiExperiment& exp = session.opts.bench.cupti;
  g.reset(api, session.opts.bench);
  if (!subscribe(api, error)) return false;
  // Driver API callbacks only. The runtime implements every launch, copy, memset and sync with
  // the driver, so the driver sees them all (cuBLAS and Triton launch through it directly; the
  // runtime alone misses those). Watching both doubled the callbacks per launch: on an H200,
  // small_mlp went 4.41 ms/step (driver only) vs 5.14 (both), base 3.6-4.3, with identical
  // kernel counts and no unknown correlations.
  for (uint32_t cbid = 1; cbid < kMaxCbid; ++cbid) {
    const char* name = nullptr;
    if (api.cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    const uint8_t cls = classify(name);
    if (cls == kNone || exp.no_callbacks || (exp.launch_only && !starts(name, "cuLaunch"))) continue;
    g.cls[cbid] = cls;
    api.cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    // Statistics slots run out only if a future CUDA adds many more variants: then the extra
    // functions are still traced, just not tabulated.
    if (g.slot_cbid.size() == kMaxWatchedApis) continue;
    g.slot_cbid.push_back(cbid);
    g.slot_name.emplace_back(name);
    g.slot[cbid] = static_cast<uint16_t>(g.slot_cbid.size());
  }
  enable_resource_callbacks();
  g.session.store(&session, std::memory_order_release);
  for (CUpti_ActivityKind kind : kKinds) {
    if (exp.no_activity || (exp.kernel_only && kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) continue;
    g.kinds.push_back(kind);
  }
  const CUptiResult r = enable_activity(exp, true);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("CUPTI activity tracing could not be enabled: ") + api.error_string(r);
    for (CUpti_ActivityKind kind : kKinds) api.cuptiActivityDisable(kind);
    api.cuptiUnsubscribe(g.subscriber);
    g.subscriber = nullptr;
    g.attached = false;
    g.session.store(nullptr);
    return false;
  }
  session.gpu.store(true);
  return true;
}

TracerStopReport stop_gpu_tracing() {
  TracerStopReport rep;
  Session* s = g.session.load(std::memory_order_acquire);
  if (s == nullptr || g.api == nullptr) return rep;
  const auto t0 = std::chrono::steady_clock::now();
  // Detached while tracing was suspended (SuspendMode::Detach): everything was flushed then, and
  // any CUPTI call now would attach it again.
  const bool attached = g.attached;
  if (attached) {
    // Disable callbacks first: nothing new gets mapped while we drain.
    const CUptiResult unsub = g.api->cuptiUnsubscribe(g.subscriber);
    if (unsub != CUPTI_SUCCESS) rep.unsubscribe_error = g.api->error_string(unsub);
    g.subscriber = nullptr;
    g.attached = false;
    drain(*s);
    for (CUpti_ActivityKind kind : kKinds) g.api->cuptiActivityDisable(kind);
    g.api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
  {
    std::lock_guard<std::mutex> lock(g.buffer_mu);
    g.session.store(nullptr, std::memory_order_release);
  }
  // Detach CUPTI from the process. The caller synchronised every device and everything was
  // flushed, which is what cuptiFinalize asks for. Unsubscribing alone leaves this copy of CUPTI
  // attached to the driver: a profiler with its own copy (Triton's Proton bundles one) then
  // cannot subscribe for the rest of the process, and launches keep paying for the hooks.
  // A later start() attaches again. DLPT_KEEP_CUPTI=1 (BenchSwitches::keep_cupti) skips this.
  if (attached && g.api->cuptiFinalize && !s->opts.bench.keep_cupti) {
    const CUptiResult fin = g.api->cuptiFinalize();
    if (fin != CUPTI_SUCCESS) rep.unsubscribe_error = std::string("cuptiFinalize: ") + g.api->error_string(fin);
  }
  {
    std::lock_guard<std::mutex> lock(g.pool_mu);
    for (uint8_t* b : g.pool) std::free(b);
    g.pool.clear();
  }
  rep.submitted = submitted_total(*s);
  rep.completed = s->counters.completed.load();
  rep.flush_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

// Does a subscriber with every callback and activity kind disabled still cost the driver
// something per launch? Not known, and not measurable without a GPU: the driver still has CUPTI
// attached (its API entry points consult the tools layer; dlpt's earlier runs found that an
// attached CUPTI with activity still enabled costs unprofiled work, see docs/overhead.md on
// Proton's deactivate), but whether the disabled state is free is exactly what the two modes
// let bench/paired.py measure: dlpt_suspended (Disable) against dlpt_suspended_detach (Detach)
// and the A/A row. What Detach loses: CUPTI numbers graph nodes afresh once finalized, so
// graphs captured before a detach (torch.compile's reduce-overhead captures them in warm-up)
// no longer map to the lines that captured them (resume forgets those contexts; their replays
// go to the replay's line, counted in graph_unmapped_ns); and no GPU step marks are taken while
// detached (CUPTI's clock would attach it again), so the step intervals around it merge.
bool watch_module_loads(std::string* error) {
  if (!g.attached || g.subscriber == nullptr || g.floor) {
    if (error) *error = "the tracer holds no CUPTI subscriber";
    return false;
  }
  g.modules = true;
  const CUptiResult r =
      g.api->cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_MODULE_LOADED);
  if (r != CUPTI_SUCCESS && error) *error = g.api->error_string(r);
  return r == CUPTI_SUCCESS;
}

void suspend_gpu_tracing(Session& s, SuspendMode mode) {
  if (!g.attached || g.session.load(std::memory_order_acquire) != &s) return;
  // Launches from now on are not mapped; those mapped before are flushed and counted (the caller
  // synchronised the devices), then no activity is recorded.
  enable_api_callbacks(false);
  drain(s);
  for (CUpti_ActivityKind kind : g.kinds) g.api->cuptiActivityDisable(kind);
  g.api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (mode != SuspendMode::Detach) return;
  // Detach CUPTI altogether, as stop does: no subscriber, no CUPTI hooks in the driver.
  g.api->cuptiUnsubscribe(g.subscriber);
  g.subscriber = nullptr;
  g.attached = false;
  if (g.api->cuptiFinalize) g.api->cuptiFinalize();
}

bool resume_gpu_tracing(Session& s, std::string* error) {
  if (g.session.load(std::memory_order_acquire) != &s || g.api == nullptr) return true;
  const CuptiExperiment& exp = s.opts.bench.cupti;
  const bool reattach = !g.attached;
  if (reattach) {
    // SuspendMode::Detach: subscribe again (another profiler may have taken CUPTI meanwhile).
    // CUPTI numbers graph nodes afresh after cuptiFinalize, so the capture contexts of graphs
    // captured before the detach no longer match: forget them (their replays then go to the
    // replay's line and count in graph_unmapped_ns) rather than risk matching another node.
    if (!subscribe(*g.api, error)) return false;
    enable_resource_callbacks();
    s.graph_nodes.clear();
  }
  const CUptiResult r = enable_activity(exp, reattach);
  enable_api_callbacks(true);
  if (r != CUPTI_SUCCESS) {
    *error = std::string("CUPTI activity tracing could not be enabled again: ") + g.api->error_string(r);
    return false;
  }
  return true;
}

}  // namespace dlpt
