#include "controller.h"

#include <Python.h>

#include <stdexcept>

#include "context/aten_ops.h"

namespace dlpt {

StartResult start_capture(bool want_gpu, const std::vector<std::string>& cupti_candidates, bool collecting) {
  if (current_session() != nullptr) throw std::runtime_error("a dlpt profile is already running");
  StartResult res;
  Session* s = begin_session();
  if (want_gpu) {
    std::string error;
    const CuptiApi* api = load_cupti(cupti_candidates, &error);
    if (api == nullptr) {
      res.gpu_reason = error;
    } else {
      res.cupti_path = api->path;
      if (start_gpu_tracing(*api, *s, &error)) {
        res.gpu = true;
      } else {
        res.gpu_reason = error;
      }
    }
  }
  s->collecting.store(collecting, std::memory_order_release);
  install_op_callback();
  return res;
}

void set_collecting(bool on) {
  if (Session* s = current_session()) s->collecting.store(on, std::memory_order_release);
}

void drain_code_refs() {
  if (Session* s = current_session()) s->codes.drain();
}

bool capture_running() { return current_session() != nullptr; }

StopResult stop_capture() {
  Session* s = current_session();
  if (s == nullptr) throw std::runtime_error("no dlpt profile is running");
  StopResult res;
  s->collecting.store(false, std::memory_order_release);
  remove_op_callback();
  s->codes.drain();
  end_session();
  if (s->gpu.load()) {
    // Flushing can wait on CUPTI's worker thread; never hold the GIL across that.
    PyThreadState* saved = PyEval_SaveThread();
    res.tracer = stop_gpu_tracing();
    PyEval_RestoreThread(saved);
    res.api = api_stats();
    res.busy_ns = s->busy.totals();
  }
  res.session = s;
  return res;
}

}  // namespace dlpt
