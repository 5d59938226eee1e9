// GPU capture through CUPTI: API callbacks map each launch/copy/memset correlation id to the
// launching thread's calling context; activity records are then added to that context's leaves.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "../session.h"
#include "loader.h"

namespace dlpt {

struct ApiStat {
  std::string name;
  uint64_t calls, total_ns, min_ns, max_ns;
};

struct TracerStopReport {
  uint64_t submitted = 0;
  uint64_t completed = 0;
  double flush_s = 0;
};

/// [GIL] Subscribes to CUPTI for `session`. If another client holds CUPTI (torch.profiler, nsys,
/// ncu, Proton) nothing is touched and false is returned with `error` saying who/what.
bool start_gpu_tracing(const CuptiApi& api, Session& session, std::string* error);

/// [GIL released by caller] Flushes until every mapped correlation completed (or no progress is
/// made), then disables activity and unsubscribes so another profiler can subscribe.
TracerStopReport stop_gpu_tracing();

/// API call statistics of the last session (per CUDA function, outermost calls only).
std::vector<ApiStat> api_stats();

/// Name of the CUDA API behind a Sync node key (domain << 16 | cbid).
std::string sync_api_name(uint64_t key);

}  // namespace dlpt
