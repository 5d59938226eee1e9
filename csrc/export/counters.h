// The final values of every counter (counters.h) of a stopped session.
#pragma once

#include "../controller.h"
#include "../counters.h"

namespace dlpt {

/// [GIL] After stop_capture and after the nodes were exported (exporting counts code_lost).
CounterValues counter_values(const Session& s, const StopResult& r);

}  // namespace dlpt
