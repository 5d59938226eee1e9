// The signal ending's Python interface (dlpt/capture/signal_end.py drives it), registered on
// dlpt._C by bindings.cpp.
#pragma once

#include <pybind11/pybind11.h>

namespace dlpt::ending {

/// Adds end_watch, end_unwatch, end_watching, end_grace, end_arm, end_disarm, end_armed,
/// end_text, end_partial, end_open_queue, end_close_queue, end_next_signal and the own-thread
/// marks to `m`.
void register_bindings(pybind11::module_& m);

}  // namespace dlpt::ending
