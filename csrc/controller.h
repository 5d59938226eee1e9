// Session control: what the Python layer calls to start, steer and stop capture.
// Every function here is [GIL]: called from Python with the GIL held.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cupti/tracer.h"
#include "session.h"

namespace dlpt {

struct StartResult {
  bool gpu = false;
  std::string gpu_reason;  // why GPU capture is off, when it is
  std::string cupti_path;
};

/// Starts a session: op callback always, CUPTI when `want_gpu`. Collection starts paused when
/// `collecting` is false (skip-first steps). Throws std::runtime_error if one is running.
StartResult start_capture(bool want_gpu, const std::vector<std::string>& cupti_candidates, bool collecting);

/// Pauses/resumes cost recording at step boundaries.
void set_collecting(bool on);

/// Takes references to code objects first seen since the last drain (see CodeRegistry).
void drain_code_refs();

bool capture_running();

struct StopResult {
  Session* session = nullptr;  // parked; valid until the next start
  TracerStopReport tracer;
  std::vector<ApiStat> api;
  std::map<uint32_t, uint64_t> busy_ns;
};

/// Stops capture. Releases the GIL while it flushes CUPTI. Throws if nothing is running.
StopResult stop_capture();

}  // namespace dlpt
