// The counters a session exports (stop()'s "counters", saved as meta.capture), defined once.
//
// DLPT_COUNTERS lists each counter as X(name, type, source, doc):
//   type    U64 (an int), BOOL, or STR (a string exported only when not empty)
//   source  live: a Counters atomic the capture paths increment while the session runs
//           stop:  worked out at stop (tracer report, per-thread sums, the tree, the clock)
//   doc     what it counts
// From this list come the fields of Counters (live ones), of CounterValues (all of them), the
// export (bindings.cpp) and the list tests/native/test_counters.py holds dlpt/_C.pyi's
// `Counters` TypedDict and dlpt/model/meta.py's `Capture` to. The names are the saved sessions'
// keys: never rename one.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

// clang-format off
#define DLPT_COUNTERS(X)                                                                                         \
  X(activity_records, U64, live, "CUPTI activity records processed")                                             \
  X(delivered_gpu_ns, U64, live, "kernel+copy+memset time CUPTI delivered for launches in the window")           \
  X(dropped_records, U64, live, "activity records CUPTI reported dropped")                                       \
  X(unknown_correlation, U64, live, "activity records whose launch context was unknown")                         \
  X(unknown_gpu_ns, U64, live, "GPU time of those records")                                                      \
  X(submitted, U64, stop, "launches mapped while recording and awaiting activity (per-thread sums)")             \
  X(completed, U64, live, "distinct correlation ids of mapped launches seen in activity")                        \
  X(outside_window, U64, live, "activity records of launches made while not collecting")                         \
  X(backward_unresolved, U64, live, "backward ops whose forward op was not found")                               \
  X(code_lost, U64, live, "frames whose code object was freed before it could be described")                     \
  X(graph_nodes_captured, U64, live, "CUDA graph nodes whose capture context is known")                          \
  X(graph_replay_ns, U64, live, "GPU time of replayed graph kernels, copies and memsets")                        \
  X(graph_unmapped_ns, U64, live, "... of graph nodes captured before profiling started")                        \
  X(tree_overflow, U64, stop, "new paths charged to their parent after the node limit was hit")                  \
  X(unmatched_op_ends, U64, live, "op ends whose start was not seen (or overflowed the record stack)")           \
  X(rf_windows, U64, live, "outermost ops run with RecordFunction off inside (windows opened)")                  \
  X(op_records, U64, stop, "RecordFunction start callbacks run (per-thread sums)")                               \
  X(api_callbacks, U64, stop, "CUPTI API enter callbacks run (per-thread sums)")                                 \
  X(self_ns, U64, stop, "sampled time inside dlpt's callbacks, scaled to all calls")                             \
  X(self_python_ns, U64, stop, "... of which walking Python frames")                                             \
  X(self_window_ns, U64, stop, "... of which switching RecordFunction off and on")                               \
  X(self_api_ns, U64, stop, "... of which in CUDA API callbacks (the rest: op and memory callbacks)")           \
  X(python_walks, U64, stop, "walks of a thread's Python frames for a path from the root (per-thread sums)")      \
  X(python_frames_walked, U64, stop, "... the frames they read")                                                 \
  X(anchored_walks, U64, stop, "... of them that stopped at an anchor, a frame whose activation had not changed") \
  X(self_op_end_ns, U64, stop, "sampled time in op end callbacks (part of self_ns)")                              \
  X(walk_read_ns, U64, stop, "sampled time of all walks (op starts and launches) reading frames")                \
  X(walk_site_ns, U64, stop, "... finding or building their chains' paths (site and path caches, tree)")         \
  X(walk_anchor_ns, U64, stop, "... choosing and taking anchors")                                                \
  X(site_misses, U64, stop, "walks whose frame chain no site cache held (its path was built)")                   \
  X(anchors_taken, U64, stop, "anchors taken: frames a later walk may stop at")                                  \
  X(self_op_start_ns, U64, stop, "sampled time in op start callbacks (part of self_ns; their walks included)")   \
  X(outermost_ops, U64, stop, "outermost forward ops started (each walks the Python stack if exact)")            \
  X(op_start_name_ns, U64, stop, "sampled: outermost records finding their name's id and flags")                 \
  X(op_start_nodes_ns, U64, stop, "... outermost forward ops finding their op and forward phase nodes")          \
  X(op_start_rest_ns, U64, stop, "... the rest of their start: record stack, sequence ranges, windows")          \
  X(deferred_ops, U64, stop, "outermost forward ops started without a walk (lean op mode)")                       \
  X(deferred_at_launch, U64, stop, "... walked at a launch, allocation or recorded nested op inside them")     \
  X(deferred_at_end, U64, stop, "... walked at their end: they launched nothing but made an autograd node")       \
  X(tracing_switches, U64, live, "set_tracing calls that switched tracing off or on")                           \
  X(tracing_switch_ns, U64, live, "time those switches took, in all (flushing CUPTI's records included)")        \
  X(tsc, BOOL, stop, "host ticks are TSC cycles (else steady_clock nanoseconds)")                                \
  X(cupti_unsubscribe_error, STR, stop, "why CUPTI could not be released for other profilers (absent: it was)") \
  X(tracing_error, STR, stop, "why GPU tracing could not be resumed after set_tracing(False) (absent: it was)")
// clang-format on

namespace dlpt {

namespace counter_types {
using U64 = uint64_t;
using BOOL = bool;
using STR = std::string;
}  // namespace counter_types

#define DLPT_COUNTER_ATOMIC_live(name) std::atomic<uint64_t> name{0};
#define DLPT_COUNTER_ATOMIC_stop(name)
#define DLPT_COUNTER_ATOMIC(name, type, source, doc) DLPT_COUNTER_ATOMIC_##source(name)

/// The live counters of a running session. [MT] relaxed atomics: any capture thread adds.
struct Counters {
  DLPT_COUNTERS(DLPT_COUNTER_ATOMIC)
};

#define DLPT_COUNTER_VALUE(name, type, source, doc) counter_types::type name{};

/// Every counter's final value, as exported at stop.
struct CounterValues {
  DLPT_COUNTERS(DLPT_COUNTER_VALUE)
};

#undef DLPT_COUNTER_VALUE
#undef DLPT_COUNTER_ATOMIC

}  // namespace dlpt
