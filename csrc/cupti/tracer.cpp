#include "tracer.h"

#include <cxxabi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "../clock.h"
#include "../context/child_cache.h"
#include "../context/thread_state.h"
#include "../host/host_capture.h"

namespace dlpt {

namespace {

// ---- state ----------------------------------------------------------------------------------

enum ApiClass : uint8_t { kNone = 0, kWork = 1, kSync = 2 };
constexpr uint32_t kMaxCbid = 1024;
constexpr size_t kBufferSize = 2u << 20;
constexpr uint32_t kFlushPeriodMs = 100;

/// Everything the tracer keeps from start to stop, in one place with one reset. Only the driver
/// API domain is watched (see start_gpu_tracing).
struct Tracer {
  const CuptiApi* api = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  // The session activity is delivered to. Separate from current_session(): records keep arriving
  // after stop() unpublishes the session, until the final flush.
  std::atomic<Session*> session{nullptr};
  bool floor = false;  // floor mode: subscribed, callbacks and records do nothing
  // kBufferSize (pooled), or an experiment's size (BenchSwitches, never pooled).
  size_t buffer_size = kBufferSize;

  // Watched driver callback ids: their class and a compact index into ThreadState::apis.
  uint8_t cls[kMaxCbid] = {};
  uint16_t slot[kMaxCbid] = {};  // index + 1 into ThreadState::apis; 0 = no statistics slot
  std::vector<uint32_t> slot_cbid;
  std::vector<std::string> slot_name;

  // Activity processing: CUPTI's worker thread, or the thread flushing at stop; under buffer_mu.
  std::mutex buffer_mu;
  // CUPTI-owned name -> interned id, and whether it is a collective-communication kernel.
  std::unordered_map<const char*, std::pair<uint32_t, bool>> kernel_names;
  ChildCache leaves;  // the buffer thread's cache of kernel/copy/memset leaves

  // Activity buffers are recycled rather than freed: CUPTI asks for one on the launching thread
  // whenever the current one fills, and a fresh malloc of this size is an mmap whose first touch
  // page-faults and whose free unmaps (TLB shootdowns across the process's threads). A pool keeps
  // both off the hot path and bounds host memory to the most buffers ever in flight.
  std::mutex pool_mu;
  std::vector<uint8_t*> pool;

  void reset(const CuptiApi& a, const BenchSwitches& bench) {
    api = &a;
    subscriber = nullptr;
    floor = bench.floor == Floor::Cupti;
    buffer_size = bench.cupti.big_buffers ? (64u << 20) : kBufferSize;
    std::fill(std::begin(cls), std::end(cls), kNone);
    std::fill(std::begin(slot), std::end(slot), 0);
    slot_cbid.clear();
    slot_name.clear();
    std::lock_guard<std::mutex> lock(buffer_mu);
    kernel_names.clear();
    leaves.clear();
  }
};
Tracer g;

bool has(const char* s, const char* part) { return std::strstr(s, part) != nullptr; }
bool starts(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

/// Which API calls we watch, decided by name so that every variant (_ptsz, _v2, Ex, cooperative,
/// graph launches) is covered without listing ids that differ between CUDA versions.
uint8_t classify(const char* name) {
  if (has(name, "HostFunc")) return kNone;  // host callbacks: no GPU activity to match
  if (starts(name, "cuLaunch") || starts(name, "cuGraphLaunch")) return kWork;
  // Building or editing graph nodes (cuGraphAddMemcpyNode, ...) runs nothing on the GPU.
  if (starts(name, "cuGraph")) return kNone;
  if (has(name, "Memcpy")) return has(name, "Async") ? kWork : (kWork | kSync);
  if (has(name, "Memset")) return kWork;
  if (starts(name, "cuCtxSynchronize") || starts(name, "cuStreamSynchronize") || starts(name, "cuEventSynchronize"))
    return kSync;
  return kNone;
}

// ---- CUDA graph nodes ([MT]: the capturing thread, inside its launch call) ----------------

/// Remembers where each captured graph node was launched from (see GraphNodeContexts).
void on_graph_node(Session& s, CUpti_CallbackId cbid, const CUpti_ResourceData* rd) {
  const auto* gd = rd ? static_cast<const CUpti_GraphData*>(rd->resourceDescriptor) : nullptr;
  uint64_t id = 0;
  if (gd == nullptr || g.api->cuptiGetGraphNodeId(gd->node, &id) != CUPTI_SUCCESS) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    uint64_t original = 0;
    if (g.api->cuptiGetGraphNodeId(gd->originalNode, &original) == CUPTI_SUCCESS) s.graph_nodes.clone(original, id);
    return;
  }
  ThreadState& ts = ThreadState::get(s);
  // Only nodes made by a launch/copy/memset we watch, i.e. stream capture. Nodes created inside
  // cuGraphInstantiate are internal (their clones are reported separately).
  if (ts.api_depth == 0) return;
  // Captured while collection is paused (warm-up steps, where torch.compile's reduce-overhead
  // records its graphs): no op stack was kept, but the Python path still names the line, and
  // Inductor's generated frames still map to model lines.
  const NodeId ctx = ts.api_context != kNoNode ? ts.api_context : ts.launch_context();
  s.graph_nodes.put(id, ctx);
  s.counters.graph_nodes_captured.fetch_add(1, std::memory_order_relaxed);
  // A captured launch runs nothing now: its activity comes with each replay, under the replay's
  // correlation id. Stop must not wait for it.
  if (ts.api_submitted) {
    ts.submitted.add(static_cast<uint64_t>(-1));
    ts.api_submitted = false;
  }
}

// ---- API callback ([MT]: the calling thread, with or without the GIL) ---------------------

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (g.floor) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (Session* s = current_session()) on_graph_node(*s, cbid, static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= kMaxCbid) return;
  Session* s = current_session();
  if (s == nullptr) return;
  const uint8_t cls = g.cls[cbid];
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  ThreadState& ts = ThreadState::get(*s);
  SelfTimer timer(ts);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    ts.api_callbacks.add(1);
    // Driver calls can nest (a driver entry point calling another): only the outermost is timed
    // and counted; every work call's correlation id is mapped.
    const bool outer = ts.api_depth++ == 0;
    if (outer) {
      ts.api_context = s->collecting.load(std::memory_order_relaxed) ? ts.launch_context() : kNoNode;
      ts.api_start = ticks();
      ts.api_submitted = false;
    }
    if (cls & kWork) {
      const NodeId node = ts.api_context == kNoNode ? CorrelationTable::kOutsideWindow : ts.api_context;
      s->correlations.put(cb->correlationId, node);
      if (outer && ts.api_context != kNoNode) {
        ts.submitted.add(1);
        ts.api_submitted = true;
      }
    }
    return;
  }
  // Exit.
  if (ts.api_depth > 0 && --ts.api_depth == 0 && ts.api_context != kNoNode) {
    const uint64_t t = ticks() - ts.api_start;
    if (const uint16_t slot = g.slot[cbid]) ts.apis[slot - 1].add(t);
    Tree& tree = s->tree;
    tree.node(ts.api_context).m.api_ticks.fetch_add(t, std::memory_order_relaxed);
    if (cls & kSync) {
      const NodeId leaf = ts.child(ts.api_context, NodeKind::Sync, cbid);
      tree.node(leaf).m.sync_ticks.fetch_add(t, std::memory_order_relaxed);
      tree.node(leaf).m.count.fetch_add(1, std::memory_order_relaxed);
    }
    if (host::timeline_on())
      host::on_api(*s, ts.os_tid, cbid, (cls & kWork) != 0, cb->correlationId, ts.api_start, ts.api_start + t,
                   ts.api_context);
    ts.api_context = kNoNode;
  }
}

// ---- Activity buffers (CUPTI's worker thread, or the flushing thread) ---------------------

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  uint8_t* b = nullptr;
  if (g.buffer_size != kBufferSize) {  // an experiment's size: never pooled
    b = static_cast<uint8_t*>(std::aligned_alloc(8, g.buffer_size));
    *buffer = b;
    *size = b ? g.buffer_size : 0;
    *max_records = 0;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(g.pool_mu);
    if (!g.pool.empty()) {
      b = g.pool.back();
      g.pool.pop_back();
    }
  }
  if (b == nullptr) b = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferSize));
  *buffer = b;
  *size = b ? kBufferSize : 0;
  *max_records = 0;
}

void recycle_buffer(uint8_t* buffer, size_t size = kBufferSize) {
  if (size != kBufferSize) {
    std::free(buffer);
    return;
  }
  std::lock_guard<std::mutex> lock(g.pool_mu);
  g.pool.push_back(buffer);
}

/// Under buffer_mu. The interned id of a kernel name, and whether it is a collective-
/// communication kernel (NCCL's are named ncclKernel_* / ncclDevKernel_*).
std::pair<uint32_t, bool> kernel_name_id(Tree& tree, const char* name) {
  if (name == nullptr) name = "<unnamed kernel>";
  auto it = g.kernel_names.find(name);
  if (it != g.kernel_names.end()) return it->second;
  int status = 0;
  char* demangled = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  const char* readable = status == 0 && demangled ? demangled : name;
  const uint32_t id = tree.strings.intern(readable);
  const bool comm = std::strstr(readable, "ncclKernel") != nullptr || std::strstr(readable, "ncclDevKernel") != nullptr;
  std::free(demangled);
  return g.kernel_names.emplace(name, std::make_pair(id, comm)).first->second;
}

/// Under buffer_mu: a leaf (or phase) through the buffer thread's cache.
NodeId leaf(Tree& tree, const NodeKey& key, const KernelConfig* cfg = nullptr) {
  NodeId id = g.leaves.find(key);
  if (id != kNoNode) return id;
  id = tree.child(key, cfg);
  g.leaves.put(key, id);
  return id;
}

/// Where a replayed graph's kernel/copy/memset goes: the `<cuda graph replay>` phase of the
/// context its node was captured in, or of the replay call's context `launch` when the capture
/// happened before profiling started.
NodeId replay_context(Session& s, NodeId launch, uint64_t graph_node_id, uint64_t ns) {
  s.counters.graph_replay_ns.fetch_add(ns, std::memory_order_relaxed);
  NodeId captured = s.graph_nodes.find(graph_node_id);
  if (captured == kNoNode) {
    s.counters.graph_unmapped_ns.fetch_add(ns, std::memory_order_relaxed);
    captured = launch;
  }
  return leaf(s.tree, NodeKey{captured, NodeKind::Phase, phase_key(Phase::GraphReplay), 0});
}

/// Resolves a correlation id; kNoNode for activity outside the window.
NodeId resolve(Session& s, uint32_t corr, uint64_t ns) {
  NodeId node = kNoNode;
  bool first = false;
  switch (s.correlations.get(corr, &node, &first)) {
    case CorrelationTable::Lookup::OutsideWindow:
      s.counters.outside_window.fetch_add(1, std::memory_order_relaxed);
      return kNoNode;
    case CorrelationTable::Lookup::Found:
      s.counters.delivered_gpu_ns.fetch_add(ns, std::memory_order_relaxed);
      if (first) s.counters.completed.fetch_add(1, std::memory_order_relaxed);
      return node;
    case CorrelationTable::Lookup::Unknown:
      break;
  }
  s.counters.delivered_gpu_ns.fetch_add(ns, std::memory_order_relaxed);
  s.counters.unknown_correlation.fetch_add(1, std::memory_order_relaxed);
  s.counters.unknown_gpu_ns.fetch_add(ns, std::memory_order_relaxed);
  return leaf(s.tree, NodeKey{kRootNode, NodeKind::Thread, kUnknownThreadKey, 0});
}

/// Under buffer_mu.
void process_record(Session& s, const CUpti_Activity* rec) {
  Tree& tree = s.tree;
  s.counters.activity_records.fetch_add(1, std::memory_order_relaxed);
  switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
      const uint64_t ns = k->end > k->start ? k->end - k->start : 0;
      NodeId ctx = resolve(s, k->correlationId, ns);
      if (ctx == kNoNode) return;
      if (k->graphNodeId != 0) ctx = replay_context(s, ctx, k->graphNodeId, ns);
      const auto [name_id, comm] = kernel_name_id(tree, k->name);
      s.busy.add(k->deviceId, k->start, k->end, comm);
      KernelConfig cfg;
      cfg.grid[0] = k->gridX;
      cfg.grid[1] = k->gridY;
      cfg.grid[2] = k->gridZ;
      cfg.block[0] = k->blockX;
      cfg.block[1] = k->blockY;
      cfg.block[2] = k->blockZ;
      cfg.regs = k->registersPerThread;
      cfg.smem_static = k->staticSharedMemory;
      cfg.smem_dynamic = k->dynamicSharedMemory;
      const NodeId n = leaf(tree, NodeKey{ctx, NodeKind::Kernel, name_id, k->deviceId}, &cfg);
      tree.node(n).m.add_duration(ns);
      if (host::activity_on())
        host::on_activity(s, host::EventKind::Kernel, k->deviceId, k->streamId, k->correlationId, k->start, k->end, n);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      const uint64_t ns = c->end > c->start ? c->end - c->start : 0;
      NodeId ctx = resolve(s, c->correlationId, ns);
      if (ctx == kNoNode) return;
      if (c->graphNodeId != 0) ctx = replay_context(s, ctx, c->graphNodeId, ns);
      s.busy.add(c->deviceId, c->start, c->end);
      // Host side of the copy: the source for host-to-*, the destination for *-to-host.
      uint8_t host_kind = 0;
      if (c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD || c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA)
        host_kind = c->srcKind;
      if (c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH || c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH)
        host_kind = c->dstKind;
      const NodeId n = leaf(
          tree, NodeKey{ctx, NodeKind::Memcpy, c->copyKind, host_kind | (static_cast<uint64_t>(c->deviceId) << 8)});
      tree.node(n).m.add_duration(ns);
      tree.node(n).m.bytes.fetch_add(c->bytes, std::memory_order_relaxed);
      if (host::activity_on())
        host::on_activity(s, host::EventKind::Memcpy, c->deviceId, c->streamId, c->correlationId, c->start, c->end, n);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      const uint64_t ns = m->end > m->start ? m->end - m->start : 0;
      NodeId ctx = resolve(s, m->correlationId, ns);
      if (ctx == kNoNode) return;
      if (m->graphNodeId != 0) ctx = replay_context(s, ctx, m->graphNodeId, ns);
      s.busy.add(m->deviceId, m->start, m->end);
      const NodeId n = leaf(tree, NodeKey{ctx, NodeKind::Memset, m->deviceId, 0});
      tree.node(n).m.add_duration(ns);
      tree.node(n).m.bytes.fetch_add(m->bytes, std::memory_order_relaxed);
      if (host::activity_on())
        host::on_activity(s, host::EventKind::Memset, m->deviceId, m->streamId, m->correlationId, m->start, m->end, n);
      return;
    }
    default:
      return;
  }
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  Session* s = g.session.load(std::memory_order_acquire);
  if (s != nullptr && g.api != nullptr && valid > 0 && !g.floor) {
    std::lock_guard<std::mutex> lock(g.buffer_mu);
    CUpti_Activity* rec = nullptr;
    while (g.api->cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) process_record(*s, rec);
    size_t dropped = 0;
    if (g.api->cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
      s->counters.dropped_records.fetch_add(dropped, std::memory_order_relaxed);
    }
  }
  recycle_buffer(buffer, size);
}

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

uint64_t submitted_total(Session& s) {
  uint64_t n = 0;
  s.for_each_thread([&](ThreadState& ts) { n += ts.submitted.get(); });
  return n;
}

std::string subscribe_error(const CuptiApi& api, CUptiResult r, const char* old_name) {
  return std::string("CUPTI is already in use") +
         (old_name && old_name[0] ? std::string(" by '") + old_name + "'" : std::string()) + " (" +
         api.error_string(r) + "); another profiler (torch.profiler, nsys, ncu, Proton) holds it";
}

}  // namespace

bool start_gpu_tracing(const CuptiApi& api, Session& session, std::string* error) {
  const CuptiExperiment& exp = session.opts.bench.cupti;
  g.reset(api, session.opts.bench);
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
  // Graph node creation and cloning: where replayed kernels were captured.
  api.cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED);
  api.cuptiEnableCallback(1, g.subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED);
  g.session.store(&session, std::memory_order_release);
  r = api.cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  // Hand back filled buffers often, so the records in flight (host memory) stay small however
  // long the run is.
  if (r == CUPTI_SUCCESS && api.cuptiActivityFlushPeriod && !exp.no_flush_period)
    api.cuptiActivityFlushPeriod(kFlushPeriodMs);
  for (CUpti_ActivityKind kind : kKinds) {
    if (exp.no_activity || (exp.kernel_only && kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) continue;
    if (r == CUPTI_SUCCESS) r = api.cuptiActivityEnable(kind);
  }
  if (r != CUPTI_SUCCESS) {
    *error = std::string("CUPTI activity tracing could not be enabled: ") + api.error_string(r);
    for (CUpti_ActivityKind kind : kKinds) api.cuptiActivityDisable(kind);
    api.cuptiUnsubscribe(g.subscriber);
    g.subscriber = nullptr;
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
  // Disable callbacks first: nothing new gets mapped while we drain.
  const CUptiResult unsub = g.api->cuptiUnsubscribe(g.subscriber);
  if (unsub != CUPTI_SUCCESS) rep.unsubscribe_error = g.api->error_string(unsub);
  g.subscriber = nullptr;
  uint64_t last_completed = UINT64_MAX;
  for (int i = 0; i < 200 && !g.floor; ++i) {
    g.api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const uint64_t done = s->counters.completed.load();
    if (done >= submitted_total(*s)) break;
    // A forced flush after the caller synchronised the devices delivers everything finished;
    // a flush that brings nothing new means the rest never produces activity (failed launch,
    // empty copy), so stop waiting instead of hanging the user's program.
    if (done == last_completed) break;
    last_completed = done;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (CUpti_ActivityKind kind : kKinds) g.api->cuptiActivityDisable(kind);
  g.api->cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  {
    std::lock_guard<std::mutex> lock(g.buffer_mu);
    g.session.store(nullptr, std::memory_order_release);
  }
  // Detach CUPTI from the process. The caller synchronised every device and everything was
  // flushed, which is what cuptiFinalize asks for. Unsubscribing alone leaves this copy of CUPTI
  // attached to the driver: a profiler with its own copy (Triton's Proton bundles one) then
  // cannot subscribe for the rest of the process, and launches keep paying for the hooks.
  // A later start() attaches again. DLPT_KEEP_CUPTI=1 (BenchSwitches::keep_cupti) skips this.
  if (g.api->cuptiFinalize && !s->opts.bench.keep_cupti) {
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

uint64_t cupti_now() {
  uint64_t t = 0;
  if (g.session.load(std::memory_order_acquire) == nullptr || g.api == nullptr) return 0;
  return g.api->cuptiGetTimestamp(&t) == CUPTI_SUCCESS ? t : 0;
}

std::vector<ApiStat> api_stats(Session& s) {
  std::vector<ApiStat> out;
  for (size_t i = 0; i < g.slot_cbid.size(); ++i) {
    ApiStat a{g.slot_name[i], 0, 0, UINT64_MAX, 0};
    s.for_each_thread([&](ThreadState& ts) {
      const ApiCounter& c = ts.apis[i];
      a.calls += c.calls.load(std::memory_order_relaxed);
      a.total_ns += c.ticks.load(std::memory_order_relaxed);
      a.min_ns = std::min(a.min_ns, c.min.load(std::memory_order_relaxed));
      a.max_ns = std::max(a.max_ns, c.max.load(std::memory_order_relaxed));
    });
    if (a.calls == 0) continue;
    a.total_ns = s.rate.to_ns(a.total_ns);
    a.min_ns = s.rate.to_ns(a.min_ns);
    a.max_ns = s.rate.to_ns(a.max_ns);
    out.push_back(a);
  }
  return out;
}

std::string sync_api_name(uint64_t cbid) {
  if (cbid < kMaxCbid && g.slot[cbid]) return g.slot_name[g.slot[cbid] - 1];
  const char* name = nullptr;
  if (cbid < kMaxCbid && g.api &&
      g.api->cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, static_cast<CUpti_CallbackId>(cbid), &name) ==
          CUPTI_SUCCESS &&
      name)
    return name;
  return "sync";
}

}  // namespace dlpt
