// The tracer's state and callbacks, shared by tracer.cpp (callbacks, activity processing) and
// attach.cpp (subscribing, enabling, suspending, detaching). Internal to csrc/cupti/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../context/child_cache.h"
#include "../session.h"
#include "loader.h"

namespace dlpt::cupti_internal {

enum ApiClass : uint8_t { kNone = 0, kWork = 1, kSync = 2 };
constexpr uint32_t kMaxCbid = 1024;
constexpr size_t kBufferSize = 2u << 20;
constexpr uint32_t kFlushPeriodMs = 100;

/// Everything the tracer keeps from start to stop, in one place with one reset. Only the driver
/// API domain is watched (see start_gpu_tracing).
struct Tracer {
  const CuptiApi* api = nullptr;
  CUpti_SubscriberHandle subscriber = nullptr;
  bool attached = false;                  // subscribed now (false while suspended in SuspendMode::Detach)
  std::vector<CUpti_ActivityKind> kinds;  // the activity kinds enabled at start
  // The session activity is delivered to. Separate from current_session(): records keep arriving
  // after stop() unpublishes the session, until the final flush.
  std::atomic<Session*> session{nullptr};
  bool floor = false;    // floor mode: subscribed, callbacks and records do nothing
  bool modules = false;  // module loads forwarded to PC sampling (watch_module_loads)
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
    attached = false;
    kinds.clear();
    floor = bench.floor == Floor::Cupti;
    modules = false;
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
extern Tracer g;

constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

/// Whether `s` starts with `prefix`.
bool starts(const char* s, const char* prefix);
/// Which API calls we watch (kNone, kWork, kSync), by callback name.
uint8_t classify(const char* name);

/// [MT] CUPTI's callback for every enabled driver-API and resource callback.
void CUPTIAPI on_api(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data);
/// [MT] CUPTI's activity buffer callbacks.
void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);

/// Launches mapped on every thread of `s` and awaiting activity.
uint64_t submitted_total(Session& s);

}  // namespace dlpt::cupti_internal
