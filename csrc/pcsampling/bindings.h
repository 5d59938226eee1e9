// PC sampling's Python interface, registered on dlpt._C by bindings.cpp (one line there).
#pragma once

#include <pybind11/pybind11.h>

namespace dlpt::pcsampling {

/// Adds pc_sampling_info, pc_sampling_watch, pc_sampling_start, pc_sampling_stop and
/// pc_sampling_disable to `m` (typed in dlpt/_C.pyi).
void register_bindings(pybind11::module_& m);

}  // namespace dlpt::pcsampling
