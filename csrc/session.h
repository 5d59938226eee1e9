// The state of one profiling session, shared by every capture path.
//
// Lifetime: created by start(), exported by stop(). Callbacks from other threads can still be
// running for a moment after stop() removes them, so a session is never freed while the process
// runs; the last finished one stays parked until the next start() (see begin_session).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cct/busy.h"
#include "cct/correlation.h"
#include "cct/graph_nodes.h"
#include "cct/seq_ranges.h"
#include "cct/tree.h"
#include "context/code_registry.h"

namespace dlpt {

struct Counters {
  std::atomic<uint64_t> activity_records{0};     // activity records processed
  std::atomic<uint64_t> delivered_gpu_ns{0};     // kernel+copy+memset time CUPTI delivered in the window
  std::atomic<uint64_t> dropped_records{0};      // CUPTI reported dropped records
  std::atomic<uint64_t> unknown_correlation{0};  // activity whose launch context was unknown
  std::atomic<uint64_t> unknown_gpu_ns{0};
  // Incremented on every launch by the launching thread: kept off the cache line the buffer
  // thread hammers with the counters above.
  alignas(64) std::atomic<uint64_t> submitted{0};  // launches/copies/memsets mapped in the window
  alignas(64) std::atomic<uint64_t> completed{0};            // distinct correlation ids seen in activity
  std::atomic<uint64_t> outside_window{0};       // activity of launches made while paused
  std::atomic<uint64_t> backward_unresolved{0};  // backward ops whose forward op was not found
  std::atomic<uint64_t> code_lost{0};
  std::atomic<uint64_t> graph_nodes_captured{0};  // CUDA graph nodes whose capture context is known
  std::atomic<uint64_t> graph_replay_ns{0};       // GPU time of replayed graph kernels/copies/memsets
  std::atomic<uint64_t> graph_unmapped_ns{0};     // ... of those captured before profiling started
};

class Session {
 public:
  explicit Session(uint64_t generation) : generation(generation) {}

  const uint64_t generation;
  Tree tree;
  CorrelationTable correlations;
  BusyTracker busy;
  CodeRegistry codes;
  GraphNodeContexts graph_nodes;
  Counters counters;

  /// Whether costs are recorded now (false during skip-first steps and after the active steps).
  std::atomic<bool> collecting{false};
  /// RecordFunction thread id that last started a forward op with a sequence number.
  std::atomic<uint64_t> last_forward_thread{0};
  /// Whether GPU capture (CUPTI) is on for this session.
  std::atomic<bool> gpu{false};

  /// [MT] Sequence ranges of the forward thread with RecordFunction thread id `tid`.
  SeqRanges& seq_ranges(uint64_t tid);
  SeqRanges* find_seq_ranges(uint64_t tid);

 private:
  std::mutex seq_mu_;
  std::unordered_map<uint64_t, std::unique_ptr<SeqRanges>> seq_;
};

/// [MT] The running session, or nullptr. Callbacks load it once and use that pointer throughout.
Session* current_session();

/// [GIL] Creates and publishes a new session (the previous one is parked).
Session* begin_session();
/// [GIL] Unpublishes the running session; returns it (still owned by the park).
Session* end_session();

}  // namespace dlpt
