// Every entry point is [GIL] (pybind11 holds it) except end_next_signal, which releases it.
#include "bindings.h"

#include <pybind11/stl.h>

#include "../own_threads.h"
#include "signal_end.h"

namespace py = pybind11;

namespace dlpt::ending {

namespace {

/// `set_fn(signum, handler)` (the interpreter's _signal.signal), called again for as long as it
/// raises KeyboardInterrupt: it runs the pending signals' handlers before it changes the
/// handler, and a Ctrl-C that arrived a moment earlier must not raise in dlpt's code. Called
/// from C, nothing in between checks for signals. (old handler, how many KeyboardInterrupts).
py::tuple set_handler_quietly(const py::object& set_fn, int signum, const py::object& handler) {
  for (int interrupts = 0;; ++interrupts) {
    PyObject* old = PyObject_CallFunction(set_fn.ptr(), "iO", signum, handler.ptr());
    if (old != nullptr) return py::make_tuple(py::reinterpret_steal<py::object>(old), interrupts);
    if (!PyErr_ExceptionMatches(PyExc_KeyboardInterrupt) || interrupts > 100000) throw py::error_already_set();
    PyErr_Clear();
  }
}

/// Calls `fn` (on the calling thread, a thread of dlpt's own) with the thread marked for the
/// whole call: marked before `fn`'s first Python frame exists and unmarked after its last is
/// gone. A mark made from inside `fn` left a window in which a thread preempted before it was
/// sampled as the program's (the watchdog, on a loaded 2-core CI machine).
void run_own_thread(const py::function& fn) {
  struct Marked {
    Marked() { mark_own_thread(); }
    ~Marked() { unmark_own_thread(); }
    Marked(const Marked&) = delete;
    Marked& operator=(const Marked&) = delete;
  } marked;
  fn();
}

}  // namespace

void register_bindings(py::module_& m) {
  m.def("end_watch", &watch, py::arg("signum"), py::arg("ends"), py::arg("take_default"),
        "Our C handler in front of the interpreter's for `signum`; whether it is.");
  m.def("end_set_handler", &set_handler_quietly, py::arg("set_fn"), py::arg("signum"), py::arg("handler"),
        "set_fn(signum, handler) again while it raises KeyboardInterrupt: (old handler, interrupts).");
  m.def("end_unwatch", &unwatch, py::arg("signum"));
  m.def("end_watching", &watching, py::arg("signum"));
  m.def("end_grace", &set_grace, py::arg("seconds"));
  m.def("end_arm", &arm, py::arg("signum"), "The grace starts now (unless it runs already).");
  m.def("end_disarm", &disarm);
  m.def("end_armed", &armed, "The signal the grace runs for; 0 when none.");
  m.def("end_text", &set_text, py::arg("prefix"), py::arg("tail"));
  m.def("end_partial", &set_partial, py::arg("paths"));
  m.def("end_open_queue", &open_queue);
  m.def("end_close_queue", &close_queue);
  m.def("end_next_signal", &next_signal, py::arg("generation"), py::arg("timeout_s"),
        py::call_guard<py::gil_scoped_release>(), "The next signal caught; 0 when closed or timed out.");
  m.def("run_own_thread", &run_own_thread, py::arg("fn"),
        "fn() with the calling thread marked as dlpt's for the whole call: the host sampler skips it.");
}

}  // namespace dlpt::ending
