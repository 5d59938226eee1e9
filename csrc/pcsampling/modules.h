// Module loads, watched only while PC sampling is wanted: the cubins (with their line tables)
// that PC records point into. Through the tracer's CUPTI subscriber when dlpt traces the GPU
// (CUPTI allows one subscriber), else through a subscriber of our own (tools/pc_sampling_check.py,
// gpu=False).
#pragma once

#include <string>
#include <vector>

#include "../events.h"

namespace dlpt::pcsampling {

// on_module_loaded(), which the tracer calls: ../events.h.

/// [GIL] Module loads watched from now on. False with `error` (one line) when CUPTI, its PC
/// sampling API, or a subscriber is not available. `how` says through which subscriber.
bool watch_modules(const std::vector<std::string>& candidates, std::string* how, std::string* error);

}  // namespace dlpt::pcsampling
