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

struct CaptureOptions {
  bool gpu = true;            // CUPTI: kernels, copies, memsets, syncs
  bool python_frames = true;  // walk the Python stack at outermost ops and bare launches
  bool nested_ops = false;    // record ops inside ops (aten::mm under aten::linear); when off,
                              // RecordFunction is switched off inside each outermost op
  bool collecting = true;     // start recording at once (false: paused for skip-first steps)
  // A FUNCTION-scope callback of its own, which backward passes pause (aten_ops.cpp): no aten-op
  // records inside backward passes. Off: one callback for every scope (several ranks).
  bool split_backward = false;
  // An outermost op gets a RecordFunction window once it was seen to make at least this many
  // nested records (see aten_ops.cpp). Env DLPT_WINDOW_MIN_NESTED overrides it (benchmarks).
  uint32_t window_min_nested = 8;
  Floor floor = Floor::None;
  std::vector<std::string> cupti_candidates;
  // Ops whose input shapes are recorded for FLOP counting (empty: none). Needs RecordFunction
  // inputs for every op, and every nested op recorded: an opt-in (--flops).
  std::vector<std::string> flops_ops;
};

}  // namespace dlpt
