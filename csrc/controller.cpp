#include "controller.h"

#include <Python.h>

#include <stdexcept>

#include "context/aten_ops.h"
#include "context/op_names.h"
#include "context/thread_state.h"
#include "host/host_capture.h"

namespace dlpt {

namespace {
/// A step mark at CUPTI's current time, recorded or not by the collection state now, starting
/// the interval of the running epoch. `ended_counted`: whether the interval it ends counted.
void mark(Session& s, bool ended_counted = true) {
  host::on_mark(s, s.collecting.load(std::memory_order_relaxed) && s.tracing.load(std::memory_order_relaxed),
                ended_counted);
  if (!s.gpu.load(std::memory_order_relaxed)) return;
  if (const uint64_t t = cupti_now())
    s.busy.mark_step(t, s.collecting.load(std::memory_order_relaxed), s.epochs.current(),
                     s.last_work_corr.load(std::memory_order_relaxed));
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
  // Lean ops on GPU runs (exactness is owed to GPU work), exact on CPU runs unless asked.
  res.lean_ops = opts.op_mode == OpMode::Lean || (opts.op_mode == OpMode::Auto && res.gpu);
  s->lean_ops.store(res.lean_ops, std::memory_order_relaxed);
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
  // Collection stops at the end of the profile: the interval that ends here, since the last
  // step boundary, is outside the steps once any step ended (the core stops with the last epoch
  // not counted); filed as counted, its host samples were divided into the steps (the program's
  // teardown as a per-step cost).
  mark(*s, on || !s->epochs.ever_ended());
}

void mark_step() {
  if (Session* s = current_session()) mark(*s);
}

uint32_t end_epoch(bool counted) {
  Session* s = current_session();
  if (s == nullptr) return 0;
  const uint32_t next = s->epochs.end(counted);
  // The interval that ends here is filed by the class just given (BusyTracker::steps, totals).
  mark(*s, counted);
  return next;
}

void cut_counted(bool extend) {
  Session* s = current_session();
  if (s == nullptr) return;
  s->epochs.cut(extend);
  host::on_cut(*s, extend);
}

void restore_last_cut() {
  Session* s = current_session();
  if (s == nullptr || !s->epochs.restore_last_cut()) return;
  host::on_restore(*s);
}

void set_tracing(bool on) {
  Session* s = current_session();
  if (s == nullptr || s->tracing.load(std::memory_order_acquire) == on) return;
  const uint64_t t0 = now_ns();
  // A CUDA API call under way across the switch is dropped (ThreadState::api_generation).
  s->tracing_generation.fetch_add(1, std::memory_order_relaxed);
  const bool gpu = s->gpu.load();
  if (!on) {
    // First: callbacks already under way stop recording. Then nothing of dlpt's runs.
    s->tracing.store(false, std::memory_order_release);
    suspend_op_callbacks(true);
    if (gpu) {
      PyThreadState* saved = PyEval_SaveThread();  // flushing can wait on CUPTI's thread
      suspend_gpu_tracing(*s, s->opts.bench.suspend);
      PyEval_RestoreThread(saved);
    }
  } else {
    // First: callbacks enabled from here on record at once.
    s->tracing.store(true, std::memory_order_release);
    if (gpu) {
      std::string error;
      PyThreadState* saved = PyEval_SaveThread();
      const bool resumed = resume_gpu_tracing(*s, &error);
      PyEval_RestoreThread(saved);
      if (!resumed && s->tracing_error.empty()) s->tracing_error = error;
    }
    suspend_op_callbacks(false);
  }
  // Host capture (idle blame, timeline): the interval from here is traced or not.
  host::on_mark(*s, on && s->collecting.load(std::memory_order_relaxed));
  const uint64_t ns = now_ns() - t0;
  s->counters.tracing_switches.fetch_add(1, std::memory_order_relaxed);
  s->counters.tracing_switch_ns.fetch_add(ns, std::memory_order_relaxed);
  if (s->tracing_switch_log.size() < Session::kMaxSwitchLog) s->tracing_switch_log.emplace_back(on, ns);
}

void drain_code_refs() {
  if (Session* s = current_session()) s->codes.drain();
  host::on_drain();
}

bool capture_running() { return current_session() != nullptr; }

StopResult stop_capture(bool last_counted) {
  Session* s = current_session();
  if (s == nullptr) throw std::runtime_error("no dlpt profile is running");
  StopResult res;
  if (s->collecting.exchange(false, std::memory_order_acq_rel)) mark(*s);
  remove_op_callback();
  remove_floor_op_callback();
  s->codes.drain();
  end_session();
  // Before the flush: the records it delivers belong to epochs that all have their class now.
  s->epochs.finish(last_counted);
  if (s->gpu.load()) {
    // Flushing can wait on CUPTI's worker thread; never hold the GIL across that.
    PyThreadState* saved = PyEval_SaveThread();
    res.tracer = stop_gpu_tracing();
    PyEval_RestoreThread(saved);
    res.api = api_stats(*s);
    res.busy = s->busy.totals(&s->epochs);
    res.steps = s->busy.steps(&s->epochs);
    res.collectives = s->busy.collectives(&s->epochs, &res.collectives_over_limit);
  }
  s->for_each_thread([&](ThreadState& ts) {
    res.self.op_records += ts.op_records.get();
    res.self.api_callbacks += ts.api_callbacks.get();
    res.self.self_ns += ts.self_ticks.get();
    res.self.python_ns += ts.python_ticks.get();
    res.self.api_ns += ts.api_self_ticks.get();
    res.self.window_ns += ts.window_ticks.get();
    res.self.python_walks += ts.python_walks.get();
    res.self.frames_walked += ts.frames_walked.get();
    res.self.anchored_walks += ts.anchored_walks.get();
    res.self.op_end_ns += ts.op_end_ticks.get();
    res.self.walk_read_ns += ts.walk_read_ticks.get();
    res.self.walk_site_ns += ts.walk_site_ticks.get();
    res.self.walk_anchor_ns += ts.walk_anchor_ticks.get();
    res.self.site_misses += ts.site_misses.get();
    res.self.anchors_taken += ts.anchors_taken.get();
    res.self.op_start_ns += ts.op_start_ticks.get();
    res.self.outermost_ops += ts.outermost_ops.get();
    res.self.op_name_ns += ts.op_name_ticks.get();
    res.self.op_nodes_ns += ts.op_nodes_ticks.get();
    res.self.op_rest_ns += ts.op_rest_ticks.get();
    res.self.deferred_ops += ts.deferred_ops.get();
    res.self.deferred_at_launch += ts.deferred_at_launch.get();
    res.self.deferred_at_end += ts.deferred_at_end.get();
  });
  res.self.self_ns = s->rate.to_ns(res.self.self_ns);
  res.self.python_ns = s->rate.to_ns(res.self.python_ns);
  res.self.api_ns = s->rate.to_ns(res.self.api_ns);
  res.self.window_ns = s->rate.to_ns(res.self.window_ns);
  for (uint64_t* t : {&res.self.op_end_ns, &res.self.walk_read_ns, &res.self.walk_site_ns, &res.self.walk_anchor_ns,
                      &res.self.op_start_ns, &res.self.op_name_ns, &res.self.op_nodes_ns, &res.self.op_rest_ns})
    *t = s->rate.to_ns(*t);
  res.session = s;
  return res;
}

}  // namespace dlpt
