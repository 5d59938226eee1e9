// CUPTI PC sampling on one CUDA context: configured once (continuous collection, so kernels keep
// running concurrently; start/stop control, so only the chosen steps are sampled), started and
// stopped around those steps, its records read back and summed per (kernel, source line).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "api.h"

namespace dlpt::pcsampling {

/// Samples of one kernel on one source line (file "" when unresolved), by stall reason.
struct LineSamples {
  std::string function;  // the kernel's (mangled) name, as CUPTI gives it
  std::string file;
  uint32_t line = 0;
  uint64_t samples = 0;
  std::vector<std::pair<std::string, uint64_t>> stalls;  // reason -> samples, by reason index
};

struct Collected {
  std::vector<LineSamples> lines;
  uint64_t total_samples = 0;    // CUPTI's count, all kernels of the range
  uint64_t dropped_samples = 0;  // lost in the hardware buffer
  uint64_t non_user_samples = 0;
  bool hardware_buffer_full = false;
  uint64_t pcs = 0;                // distinct PC records read
  uint64_t pcs_resolved = 0;       // of them, with a source line
  uint64_t pcs_without_cubin = 0;  // their module was loaded before dlpt watched module loads
  // Why PCs of a kernel had no source line (the first reason seen, per kernel; at most 64 kernels).
  std::map<std::string, std::string> unresolved;
};

struct Settings {
  uint32_t period_log2 = 10;  // samples every 2^period_log2 cycles per SM (CUPTI: 5..31)
  size_t hardware_buffer = 128u << 20;
  size_t scratch_buffer = 16u << 20;
  size_t pcs_per_read = 4096;
};

/// [GIL] The context current on the calling thread: configured on first use, then sampling
/// started. False with `error` (one line: CUPTI's error string and what failed). Each CUPTI call
/// and its result is appended to `log` (the diagnostic tool prints it).
bool start(const PcApi& api, const Settings& settings, std::vector<std::string>* log, std::string* error);

/// [GIL] Stops sampling on the context it was started on (the caller synchronised it first, so
/// the sampled kernels have finished) and reads every record back.
bool stop(const PcApi& api, Collected* out, std::vector<std::string>* log, std::string* error);

/// [GIL] PC sampling disabled on every configured context (end of the profile), so another tool
/// can use it. Idempotent.
void disable_all(const PcApi& api, std::vector<std::string>* log);

/// [GIL] The stall reason names CUPTI reports for the current context (the diagnostic tool).
std::vector<std::string> stall_reason_names(const PcApi& api, std::vector<std::string>* log, std::string* error);

}  // namespace dlpt::pcsampling
