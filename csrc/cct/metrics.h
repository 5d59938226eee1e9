// The metrics of one node: what every cost adds to.
#pragma once

#include <atomic>
#include <cstdint>

namespace dlpt {

/// Exclusive metrics of one node. Relaxed atomics: op threads and the CUPTI buffer thread add
/// concurrently; nobody needs ordering between different counters. Host times are in ticks
/// (clock.h), converted to nanoseconds at export; GPU times are CUPTI nanoseconds.
struct Metrics {
  std::atomic<uint64_t> calls{0};       // ops/scopes run
  std::atomic<uint64_t> cpu_ticks{0};   // op CPU self time
  std::atomic<uint64_t> gpu_ns{0};      // kernel / memcpy / memset time on the GPU, by node kind
  std::atomic<uint64_t> count{0};       // kernels / copies / memsets / syncs completed
  std::atomic<uint64_t> bytes{0};       // copy bytes
  std::atomic<uint64_t> sync_ticks{0};  // host time blocked in synchronisation
  std::atomic<uint64_t> api_ticks{0};   // CUDA API host time of calls made in this context
  // A kernel's, copy's or memset's shortest/longest activity (ns); on an op's context node (its
  // <forward> phase, or the op) its fastest single call's CPU self time, in ticks: a floor that a
  // busy host's preemptions do not move (docs/numbers.md, "dlpt diff").
  std::atomic<uint64_t> min_ns{UINT64_MAX};
  std::atomic<uint64_t> max_ns{0};

  void add_duration(uint64_t ns);    /// [MT] gpu_ns/count/min/max in one go
  void add_op_self(uint64_t ticks);  /// [MT] cpu_ticks and the fastest call (min_ns, in ticks)
};

}  // namespace dlpt
