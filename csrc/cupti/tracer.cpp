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
#include "../events.h"
#include "comm_kernels.h"
#include "tracer_state.h"

namespace dlpt {

namespace cupti_internal {

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
  // cuGraphInstantiate are internal (their clones are reported separately). Not while tracing is
  // suspended (no launch is watched then: a depth left from before the switch is stale).
  if (ts.api_depth == 0 || !s.tracing.load(std::memory_order_relaxed) ||
      ts.api_generation != s.tracing_generation.load(std::memory_order_relaxed))
    return;
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

/// A watched driver call's entry on the calling thread: maps a work call's correlation id to
/// the calling context and the running epoch.
void api_enter(Session& s, ThreadState& ts, uint8_t cls, uint32_t correlation_id) {
  ts.api_callbacks.add(1);
  // A call that entered before a set_tracing switch never saw its exit: start afresh.
  const uint32_t generation = s.tracing_generation.load(std::memory_order_relaxed);
  if (ts.api_generation != generation) {
    ts.api_depth = 0;
    ts.api_context = kNoNode;
    ts.api_generation = generation;
  }
  // Driver calls can nest (a driver entry point calling another): only the outermost is timed
  // and counted; every work call's correlation id is mapped.
  const bool outer = ts.api_depth++ == 0;
  if (outer) {
    ts.api_context = s.collecting.load(std::memory_order_relaxed) ? ts.launch_context() : kNoNode;
    ts.api_start = ticks();
    ts.api_submitted = false;
  }
  if (cls & kWork) {
    const NodeId node = ts.api_context == kNoNode ? CorrelationTable::kOutsideWindow : ts.api_context;
    // The launch's epoch travels with its id: its activity is filed by it (cct/epochs.h).
    s.correlations.put(correlation_id, node, s.epochs.current());
    s.last_work_corr.store(correlation_id, std::memory_order_relaxed);
    if (outer && ts.api_context != kNoNode) {
      ts.submitted.add(1);
      ts.api_submitted = true;
    }
  }
}

/// Its exit: the outermost call's host time, and a sync's wait, in the running epoch.
void api_exit(Session& s, ThreadState& ts, uint8_t cls, uint32_t cbid, uint32_t correlation_id) {
  // The exit of a call that entered before a set_tracing switch: dropped (api_enter resets).
  if (ts.api_generation != s.tracing_generation.load(std::memory_order_relaxed)) return;
  if (ts.api_depth > 0 && --ts.api_depth == 0 && ts.api_context != kNoNode) {
    const uint64_t t = ticks() - ts.api_start;
    if (const uint16_t slot = cbid < kMaxCbid ? g.slot[cbid] : 0) ts.apis[slot - 1].add(t);
    const uint32_t epoch = s.epochs.current();
    s.metrics(ts.api_context, epoch).api_ticks.fetch_add(t, std::memory_order_relaxed);
    if (cls & kSync) {
      Metrics& m = s.metrics(ts.child(ts.api_context, NodeKind::Sync, cbid), epoch);
      m.sync_ticks.fetch_add(t, std::memory_order_relaxed);
      m.count.fetch_add(1, std::memory_order_relaxed);
    }
    if (host::timeline_on())
      host::on_api(s, ts.os_tid, cbid, (cls & kWork) != 0, correlation_id, ts.api_start, ts.api_start + t,
                   ts.api_context);
    ts.api_context = kNoNode;
  }
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (g.floor) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) return pcsampling::on_module_loaded(data);
    if (Session* s = current_session()) on_graph_node(*s, cbid, static_cast<const CUpti_ResourceData*>(data));
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || cbid >= kMaxCbid) return;
  Session* s = current_session();
  // Suspended: the callbacks are disabled; one already under way when they were does nothing.
  if (s == nullptr || !s->tracing.load(std::memory_order_relaxed)) return;
  const uint8_t cls = g.cls[cbid];
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  ThreadState& ts = ThreadState::get(*s);
  SelfTimer timer(ts, &ts.api_self_ticks);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    api_enter(*s, ts, cls, cb->correlationId);
  } else {
    api_exit(*s, ts, cls, cbid, cb->correlationId);
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
  const bool comm = is_comm_kernel_name(readable);
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

/// Resolves a correlation id to its launch context and the epoch of its launch; kNoNode for
/// activity outside the window. Records of an unknown id go to the "<unknown>" thread node, in
/// the epoch running when they arrive (their launch is not known).
NodeId resolve(Session& s, uint32_t corr, uint64_t ns, uint32_t* epoch) {
  NodeId node = kNoNode;
  bool first = false;
  switch (s.correlations.get(corr, &node, &first, epoch)) {
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
  *epoch = s.epochs.current();
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
      uint32_t epoch = 0;
      NodeId ctx = resolve(s, k->correlationId, ns, &epoch);
      if (ctx == kNoNode) return;
      if (k->graphNodeId != 0) ctx = replay_context(s, ctx, k->graphNodeId, ns);
      const auto [name_id, comm] = kernel_name_id(tree, k->name);
      const CollectiveTag tag{epoch, k->correlationId, name_id};
      s.busy.add(k->deviceId, k->start, k->end, comm, &tag, k->correlationId);
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
      s.metrics(n, epoch).add_duration(ns);
      if (host::activity_on())
        host::on_activity(s, host::EventKind::Kernel, k->deviceId, k->streamId, k->correlationId, k->start, k->end, n);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* c = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
      const uint64_t ns = c->end > c->start ? c->end - c->start : 0;
      uint32_t epoch = 0;
      NodeId ctx = resolve(s, c->correlationId, ns, &epoch);
      if (ctx == kNoNode) return;
      if (c->graphNodeId != 0) ctx = replay_context(s, ctx, c->graphNodeId, ns);
      s.busy.add(c->deviceId, c->start, c->end, false, nullptr, c->correlationId);
      // Host side of the copy: the source for host-to-*, the destination for *-to-host.
      uint8_t host_kind = 0;
      if (c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD || c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA)
        host_kind = c->srcKind;
      if (c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH || c->copyKind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH)
        host_kind = c->dstKind;
      const NodeId n = leaf(
          tree, NodeKey{ctx, NodeKind::Memcpy, c->copyKind, host_kind | (static_cast<uint64_t>(c->deviceId) << 8)});
      Metrics& mt = s.metrics(n, epoch);
      mt.add_duration(ns);
      mt.bytes.fetch_add(c->bytes, std::memory_order_relaxed);
      if (host::activity_on())
        host::on_activity(s, host::EventKind::Memcpy, c->deviceId, c->streamId, c->correlationId, c->start, c->end, n);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
      const uint64_t ns = m->end > m->start ? m->end - m->start : 0;
      uint32_t epoch = 0;
      NodeId ctx = resolve(s, m->correlationId, ns, &epoch);
      if (ctx == kNoNode) return;
      if (m->graphNodeId != 0) ctx = replay_context(s, ctx, m->graphNodeId, ns);
      s.busy.add(m->deviceId, m->start, m->end, false, nullptr, m->correlationId);
      const NodeId n = leaf(tree, NodeKey{ctx, NodeKind::Memset, m->deviceId, 0});
      Metrics& mt = s.metrics(n, epoch);
      mt.add_duration(ns);
      mt.bytes.fetch_add(m->bytes, std::memory_order_relaxed);
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

uint64_t submitted_total(Session& s) {
  uint64_t n = 0;
  s.for_each_thread([&](ThreadState& ts) { n += ts.submitted.get(); });
  return n;
}

}  // namespace cupti_internal

using namespace cupti_internal;

uint64_t cupti_now() {
  uint64_t t = 0;
  // Not while detached (SuspendMode::Detach): any CUPTI call would attach it again.
  if (g.session.load(std::memory_order_acquire) == nullptr || g.api == nullptr || !g.attached) return 0;
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

void testing_launch(Session& s, uint32_t corr) {
  ThreadState& ts = ThreadState::get(s);
  api_enter(s, ts, kWork, corr);
  api_exit(s, ts, kWork, 0, corr);
}

void testing_api(Session& s, uint32_t corr, bool enter) {
  ThreadState& ts = ThreadState::get(s);
  if (enter) {
    api_enter(s, ts, kWork, corr);
  } else {
    api_exit(s, ts, kWork, 0, corr);
  }
}

uint64_t testing_api_callbacks(uint32_t corr0, uint64_t n) {
  constexpr CUpti_CallbackId kCbid = CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel;
  // Without a GPU nothing classified the launch call (attach.cpp does, at start): classify it as
  // a launch for the loop only, as attach.cpp would (the real class when CUPTI is attached).
  const uint8_t saved = g.cls[kCbid];
  if (saved == kNone) g.cls[kCbid] = kWork;
  CUpti_CallbackData cb{};
  cb.functionName = "cuLaunchKernel";
  const auto t0 = std::chrono::steady_clock::now();
  for (uint64_t i = 0; i < n; ++i) {
    cb.correlationId = corr0 + static_cast<uint32_t>(i);
    cb.callbackSite = CUPTI_API_ENTER;
    on_api(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, kCbid, &cb);
    cb.callbackSite = CUPTI_API_EXIT;
    on_api(nullptr, CUPTI_CB_DOMAIN_DRIVER_API, kCbid, &cb);
  }
  const auto t1 = std::chrono::steady_clock::now();
  g.cls[kCbid] = saved;
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count());
}

void testing_kernel_record(Session& s, uint32_t corr, uint64_t start, uint64_t end, uint32_t device, const char* name) {
  std::lock_guard<std::mutex> lock(g.buffer_mu);
  // The activity thread's caches hold one session's node ids (a real session clears them when
  // its tracing starts): a seam session starts afresh too.
  static uint64_t generation = 0;
  if (generation != s.generation) {
    generation = s.generation;
    g.kernel_names.clear();
    g.leaves.clear();
  }
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.correlationId = corr;
  k.start = start;
  k.end = end;
  k.deviceId = device;
  k.name = name;
  process_record(s, reinterpret_cast<const CUpti_Activity*>(&k));
}

}  // namespace dlpt
