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
  std::string unsubscribe_error;  // empty when CUPTI was released for other profilers
};

/// [GIL] Subscribes to CUPTI for `session`. If another client holds CUPTI (torch.profiler, nsys,
/// ncu, Proton) nothing is touched and false is returned with `error` saying who/what. In the
/// CUPTI floor mode (session.opts.bench) the same callbacks and activity kinds are enabled, and
/// nothing is done with them.
bool start_gpu_tracing(const CuptiApi& api, Session& session, std::string* error);

/// [GIL released by caller] Flushes until every mapped correlation completed (or no progress is
/// made), then disables activity and unsubscribes so another profiler can subscribe.
TracerStopReport stop_gpu_tracing();

/// [MT] CUPTI's clock now (the timestamps of activity records), or 0 when not tracing.
uint64_t cupti_now();

/// API call statistics of `s` (per CUDA function, outermost calls only, nanoseconds).
std::vector<ApiStat> api_stats(Session& s);

/// Name of the CUDA driver API behind a Sync node key (its callback id).
std::string sync_api_name(uint64_t cbid);

}  // namespace dlpt
