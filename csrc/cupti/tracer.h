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

/// [GIL released by caller] set_tracing(false): the watched API callbacks off (launches are no
/// longer mapped), the records of launches mapped before flushed and counted (the caller
/// synchronised the devices), the activity kinds off; in SuspendMode::Detach also unsubscribed
/// and detached (cuptiFinalize). The graph-node resource callbacks stay (disable mode).
void suspend_gpu_tracing(Session& s, SuspendMode mode);
/// [GIL released by caller] set_tracing(true): everything on again as at start (subscribed again
/// after a detach; graph-node capture contexts from before a detach are forgotten). False with
/// `error` when CUPTI could not be taken back (another profiler took it meanwhile).
bool resume_gpu_tracing(Session& s, std::string* error);

/// [GIL] Module loads forwarded to PC sampling (csrc/pcsampling/modules.cpp) through the
/// tracer's subscriber, also after a resume. False with `error` when the tracer holds none.
bool watch_module_loads(std::string* error);

/// [MT] CUPTI's clock now (the timestamps of activity records), or 0 when not tracing.
uint64_t cupti_now();

/// API call statistics of `s` (per CUDA function, outermost calls only, nanoseconds).
std::vector<ApiStat> api_stats(Session& s);

/// Name of the CUDA driver API behind a Sync node key (its callback id).
std::string sync_api_name(uint64_t cbid);

// ---- testing seams (testing/seams.h): the launch and activity paths without a GPU ----------

/// [GIL] What the driver-API callbacks do for one launch with correlation id `corr` made now on
/// the calling thread (enter, then exit): its context and epoch mapped to the id.
void testing_launch(Session& s, uint32_t corr);
/// [GIL] Only the entry (`enter`) or only the exit of such a launch call.
void testing_api(Session& s, uint32_t corr, bool enter);
/// [GIL] A kernel activity record for `corr`, processed as the activity thread processes one.
void testing_kernel_record(Session& s, uint32_t corr, uint64_t start, uint64_t end, uint32_t device, const char* name);

/// The per-launch path as CUPTI drives it: `n` cuLaunchKernel enter/exit callback pairs through
/// on_api itself (synthetic callback records, correlation ids from `corr0`) on the calling
/// thread. Returns the wall nanoseconds of the loop. For bench/launch_path.py.
uint64_t testing_api_callbacks(uint32_t corr0, uint64_t n);

}  // namespace dlpt
