#include "controller.h"

#include <Python.h>

#include <stdexcept>

#include "context/aten_ops.h"
#include "context/op_names.h"
#include "context/thread_state.h"
#include "host/host_capture.h"

namespace dlpt {

namespace {
/// A step mark at CUPTI's current time, recorded or not by the collection state now.
void mark(Session& s) {
  host::on_mark(s, s.collecting.load(std::memory_order_relaxed));
  if (!s.gpu.load(std::memory_order_relaxed)) return;
  if (const uint64_t t = cupti_now()) s.busy.mark_step(t, s.collecting.load(std::memory_order_relaxed));
}
}  // namespace

StartResult start_capture(const CaptureOptions& options) {
  if (current_session() != nullptr) throw std::runtime_error("a dlpt profile is already running");
  CaptureOptions opts = options;
  // Counting FLOPs needs the matmuls inside composite ops (aten::mm under aten::linear, ...).
  if (!opts.flops_ops.empty()) opts.nested_ops = true;
  // Benchmark-only switches: read here, once, from the environment (options.h).
  opts.bench = read_bench_switches();
  set_flops_ops(opts.flops_ops);
  StartResult res;
  Session* s = begin_session(opts);
  const Floor floor_mode = opts.bench.floor;
  const bool floor = floor_mode != Floor::None;
  if (opts.gpu && (!floor || floor_mode == Floor::Cupti)) {
    std::string error;
    const CuptiApi* api = load_cupti(opts.cupti_candidates, &error);
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
  s->collecting.store(opts.collecting, std::memory_order_release);
  if (opts.collecting) mark(*s);
  if (floor_mode == Floor::OpCallback) {
    install_floor_op_callback();
  } else if (!floor) {
    install_op_callback(!opts.flops_ops.empty(), opts.split_backward && !opts.nested_ops);
  }
  return res;
}

void set_collecting(bool on) {
  Session* s = current_session();
  if (s == nullptr || s->collecting.load() == on) return;
  s->collecting.store(on, std::memory_order_release);
  mark(*s);
}

void mark_step() {
  if (Session* s = current_session()) mark(*s);
}

void drain_code_refs() {
  if (Session* s = current_session()) s->codes.drain();
  host::on_drain();
}

bool capture_running() { return current_session() != nullptr; }

StopResult stop_capture() {
  Session* s = current_session();
  if (s == nullptr) throw std::runtime_error("no dlpt profile is running");
  StopResult res;
  if (s->collecting.exchange(false, std::memory_order_acq_rel)) mark(*s);
  remove_op_callback();
  remove_floor_op_callback();
  s->codes.drain();
  end_session();
  if (s->gpu.load()) {
    // Flushing can wait on CUPTI's worker thread; never hold the GIL across that.
    PyThreadState* saved = PyEval_SaveThread();
    res.tracer = stop_gpu_tracing();
    PyEval_RestoreThread(saved);
    res.api = api_stats(*s);
    res.busy = s->busy.totals();
    res.steps = s->busy.steps();
  }
  s->for_each_thread([&](ThreadState& ts) {
    res.self.op_records += ts.op_records.get();
    res.self.api_callbacks += ts.api_callbacks.get();
    res.self.self_ns += ts.self_ticks.get();
    res.self.python_ns += ts.python_ticks.get();
    res.self.window_ns += ts.window_ticks.get();
  });
  res.self.self_ns = s->rate.to_ns(res.self.self_ns);
  res.self.python_ns = s->rate.to_ns(res.self.python_ns);
  res.self.window_ns = s->rate.to_ns(res.self.window_ns);
  res.session = s;
  return res;
}

}  // namespace dlpt
