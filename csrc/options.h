// What a session captures. Fixed at start(); read on the hot path without synchronisation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlpt {

/// Floor modes exist to measure what profiling costs, piece by piece (bench/floor.py): each
/// installs only one of the mechanisms dlpt is built on, doing nothing in it.
enum class Floor : uint8_t {
  None = 0,        // real capture
  OpCallback = 1,  // a RecordFunction callback with dlpt's settings that only counts records
  Cupti = 2,       // a CUPTI subscriber with dlpt's callbacks and activity kinds, doing nothing
};

/// Experiments on CUPTI's own cost (bench/paired.py's cupti_floor_* and dlpt_*_like modes).
struct CuptiExperiment {
  bool kernel_only = false;      // kernel activity only (no copies, memsets)
  bool launch_only = false;      // launch callbacks only (no copy, memset, sync callbacks)
  bool no_flush_period = false;  // CUPTI's own flush heuristics instead of dlpt's period
  bool big_buffers = false;      // 64 MiB activity buffers (never pooled)
  bool no_callbacks = false;     // floor mode only: no API callbacks at all
  bool no_activity = false;      // floor mode only: no activity kinds at all
};

/// What set_tracing(false) does to CUPTI (bench/paired.py's dlpt_suspended modes).
enum class SuspendMode : uint8_t {
  Disable = 0,  // API callbacks and activity kinds disabled; the subscriber stays
  Detach = 1,   // unsubscribed and detached (cuptiFinalize); subscribed again on resume
};

/// Switches that exist only for benchmarks, each read from one environment variable once, at
/// start (read_bench_switches), never on the hot path:
///   DLPT_FLOOR              "op_callback" or "cupti" (also 1, 2): a floor mode (bench/floor.py)
///   DLPT_CUPTI_EXPERIMENT   comma-separated CuptiExperiment names (kernel_only, launch_only,
///                           no_flush_period, big_buffers, no_callbacks, no_activity)
///   DLPT_WINDOW_MIN_NESTED  nested records an op must make to get a RecordFunction window
///   DLPT_KEEP_CUPTI         1: stop() unsubscribes but does not detach CUPTI (cuptiFinalize)
///   DLPT_SUSPEND            "disable" (default) or "detach": SuspendMode
///   DLPT_OP_MEMO            0: outermost op starts look their nodes up without OpNodeMemo
///   DLPT_ANCHOR_MIN_INNER   frames a frame anchor keeps inward of it (frame_anchors.h; default 2)
struct BenchSwitches {
  Floor floor = Floor::None;
  CuptiExperiment cupti;
  // An outermost op gets a RecordFunction window once it was seen to make at least this many
  // nested records (see aten_ops.cpp).
  uint32_t window_min_nested = 8;
  bool keep_cupti = false;
  SuspendMode suspend = SuspendMode::Disable;
  bool op_memo = true;
  uint32_t anchor_min_inner = 2;
  // The host sampler waits this long between reading the step epoch and reading the stacks: the
  // descheduling of a busy host, made on purpose (tests/native/test_host_sampler.py).
  uint32_t sampler_lag_us = 0;
};

/// [GIL] The switches of the environment now. Throws std::invalid_argument on a DLPT_FLOOR or
/// DLPT_SUSPEND value it does not know (a benchmark's typo must not silently measure another
/// thing).
BenchSwitches read_bench_switches();

/// How an outermost forward op finds its calling context (context/aten_ops.cpp, docs/overhead.md).
///   Exact  every op start walks the Python stack: each op's CPU time and calls on its line
///   Lean   no walk at the start: the op's context is found at its first launch (or recorded
///          nested op), or at its end if it made an autograd node (its backward needs the line);
///          an op that does neither has no node: its CPU time reaches its line only through
///          the host sampler. Every launch keeps its exact line, context and op either way
///   Auto   Lean when GPU capture is on, else Exact (CPU op time is then the main metric)
enum class OpMode : uint8_t { Auto = 0, Exact = 1, Lean = 2 };

struct CaptureOptions {
  bool gpu = true;            // CUPTI: kernels, copies, memsets, syncs
  bool python_frames = true;  // walk the Python stack at outermost ops and bare launches
  bool nested_ops = false;    // record ops inside ops (aten::mm under aten::linear); when off,
                              // RecordFunction is switched off inside each outermost op
  bool collecting = true;     // start recording at once (false: paused for skip-first steps)
  // A FUNCTION-scope callback of its own, which backward passes pause (aten_ops.cpp): no aten-op
  // records inside backward passes. Off: one callback for every scope (several ranks).
  bool split_backward = false;
  OpMode op_mode = OpMode::Auto;
  std::vector<std::string> cupti_candidates;
  // Ops whose input shapes are recorded for FLOP counting (empty: none). Needs RecordFunction
  // inputs for every op, and every nested op recorded: an opt-in (--flops).
  std::vector<std::string> flops_ops;
  BenchSwitches bench;  // set by start_capture from the environment
};

}  // namespace dlpt
