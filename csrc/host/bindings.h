// The host capture's Python interface (sampler, idle blame, timeline), registered on dlpt._C by
// bindings.cpp. Kept beside the host capture so the core's binding file changes by one line.
#pragma once

#include <pybind11/pybind11.h>

namespace dlpt::host {

/// Adds host_start, host_stop, host_result, host_running and the host test seams to `m`.
void register_bindings(pybind11::module_& m);

}  // namespace dlpt::host
