// The only pybind11 file: converts between Python and the native core. Every entry point is
// [GIL] (pybind11 holds it); stop() releases it internally while flushing CUPTI.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "context/aten_ops.h"
#include "context/thread_state.h"
#include "controller.h"
#include "ending/bindings.h"
#include "export/counters.h"
#include "export/nodes.h"
#include "frames/activations.h"
#include "host/bindings.h"
#include "pcsampling/bindings.h"
#include "testing/seams.h"
#include "trend.h"

namespace py = pybind11;

namespace dlpt {
namespace memory {
void bind_memory(py::module_& m, py::module_& testing);  // csrc/memory/memory_bindings.cpp
}  // namespace memory
namespace {

py::tuple to_tuple(const ExportedMetrics& m) {
  return py::make_tuple(m.calls, m.cpu_ns, m.gpu_ns, m.count, m.bytes, m.sync_ns, m.api_ns, m.min_ns, m.max_ns);
}

py::dict to_dict(const NodeExtras& e) {
  py::dict x;
  if (e.direction) x["direction"] = *e.direction;
  if (e.host_mem) x["host_mem"] = *e.host_mem;
  if (e.device) x["device"] = *e.device;
  if (e.grid) x["grid"] = py::make_tuple((*e.grid)[0], (*e.grid)[1], (*e.grid)[2]);
  if (e.block) x["block"] = py::make_tuple((*e.block)[0], (*e.block)[1], (*e.block)[2]);
  if (e.regs) x["regs"] = *e.regs;
  if (e.smem_static) x["smem_static"] = *e.smem_static;
  if (e.smem_dynamic) x["smem_dynamic"] = *e.smem_dynamic;
  return x;
}

/// (id, parent, kind, name, file, line, metrics_counted, metrics_outside, extras,
/// (sq_cpu_ns, sq_gpu_ns, sq_sync_ns)): dlpt.capture.native.RawNode.
py::tuple to_tuple(const ExportedNode& n) {
  return py::make_tuple(n.id, n.parent, n.kind, n.name, n.file, n.line, to_tuple(n.counted), to_tuple(n.outside),
                        to_dict(n.extras), py::make_tuple(n.sq_cpu_ns, n.sq_gpu_ns, n.sq_sync_ns));
}

py::dict to_dict(const std::map<NodeId, CommCall>& comm) {
  py::dict out;
  for (const auto& [node, c] : comm) {
    py::dict d;
    d["collective"] = c.collective;
    d["dtype"] = c.dtype;
    d["pg_name"] = c.pg_name;
    d["pg_desc"] = c.pg_desc;
    d["world_size"] = c.world_size;
    d["calls"] = c.calls;
    d["in_bytes"] = c.in_bytes;
    d["out_bytes"] = c.out_bytes;
    out[py::int_(node)] = d;
  }
  return out;
}

py::list to_list(const std::map<std::pair<NodeId, std::string>, uint64_t>& inputs) {
  py::list out;
  for (const auto& [key, count] : inputs) out.append(py::make_tuple(key.first, key.second, count));
  return out;
}

void put_counter(py::dict& d, const char* name, uint64_t v) { d[name] = v; }
void put_counter(py::dict& d, const char* name, bool v) { d[name] = v; }
void put_counter(py::dict& d, const char* name, const std::string& v) {
  if (!v.empty()) d[name] = v;  // STR counters: absent when empty
}

py::dict to_dict(const CounterValues& v) {
  py::dict d;
#define DLPT_PUT(name, type, source, doc) put_counter(d, #name, v.name);
  DLPT_COUNTERS(DLPT_PUT)
#undef DLPT_PUT
  return d;
}

/// (name, type, source, doc) of every counter, in export order: what tests hold _C.pyi's
/// Counters TypedDict and the session schema to.
py::list counter_fields() {
  py::list out;
#define DLPT_FIELD(name, type, source, doc) out.append(py::make_tuple(#name, #type, #source, doc));
  DLPT_COUNTERS(DLPT_FIELD)
#undef DLPT_FIELD
  return out;
}

/// Python's cyclic GC off for a scope, as it was before afterwards. The export makes a few
/// objects per node (300k nodes: a million tuples and dicts, none of them in a cycle); every
/// 700 of them would start a young collection, and the growing old generation full ones: for a
/// 100k-line function (300k nodes) the export took 1.70 s with them, 0.31 s without, and there
/// is nothing to collect.
class NoGcScope {
 public:
  NoGcScope() : was_enabled_(PyGC_Disable()) {}
  ~NoGcScope() {
    if (was_enabled_) PyGC_Enable();
  }
  NoGcScope(const NoGcScope&) = delete;
  NoGcScope& operator=(const NoGcScope&) = delete;

 private:
  int was_enabled_;
};

/// "auto", "exact" or "lean" (dlpt.profile's exact_ops, DLPT_OPS): OpMode.
OpMode op_mode(const std::string& name) {
  if (name == "auto") return OpMode::Auto;
  if (name == "exact") return OpMode::Exact;
  if (name == "lean") return OpMode::Lean;
  throw std::invalid_argument("op_mode must be auto, exact or lean, not '" + name + "'");
}

py::dict stop(bool last_counted) {
  StopResult r = stop_capture(last_counted);
  const NoGcScope no_gc;
  Session& s = *r.session;
  py::list nodes;
  const size_t count = s.tree.size();
  for (size_t i = 0; i < count; ++i) nodes.append(to_tuple(export_node(s, static_cast<NodeId>(i))));
  py::list api;
  for (const ApiStat& a : r.api) api.append(py::make_tuple(a.name, a.calls, a.total_ns, a.min_ns, a.max_ns));
  py::dict busy, busy_outside, comm, exposed;
  for (const auto& [dev, t] : r.busy) {
    const py::str key(std::to_string(dev));
    busy[key] = t.busy_ns;
    busy_outside[key] = t.busy_outside_ns;
    if (t.comm_ns) {
      comm[key] = t.comm_ns;
      exposed[key] = t.exposed_ns;
    }
  }
  const py::dict counters = to_dict(counter_values(s, r));
  s.codes.release_all();
  // Per-node details (see OpDetails): collectives, and the input signatures of FLOP-formula ops;
  // of counted epochs, and of the others.
  const py::dict collectives = to_dict(s.details.comm(true));
  const py::dict collectives_outside = to_dict(s.details.comm(false));
  const py::list op_inputs = to_list(s.details.inputs(true));
  const py::list op_inputs_outside = to_list(s.details.inputs(false));
  py::dict out;
  out["nodes"] = nodes;
  out["collectives"] = collectives;
  out["collectives_outside"] = collectives_outside;
  out["op_inputs"] = op_inputs;
  out["op_inputs_outside"] = op_inputs_outside;
  out["api"] = api;
  out["gpu_busy_ns"] = busy;
  out["gpu_busy_outside_ns"] = busy_outside;
  out["gpu_comm_ns"] = comm;
  out["gpu_comm_exposed_ns"] = exposed;
  // Per device, the intervals between step marks: (start, end, recorded, busy, first, last,
  // carried_until, comm, exposed), CUPTI timestamps; first/last 0 when no work ran in the
  // interval, carried_until 0 when none ran on into it (cct/busy.h StepBusy).
  py::dict steps;
  for (const auto& [dev, v] : r.steps) {
    py::list l;
    for (const StepBusy& sb : v)
      l.append(py::make_tuple(sb.start, sb.end, sb.recorded, sb.busy_ns, sb.first, sb.last, sb.carried_until,
                              sb.comm_ns, sb.exposed_ns));
    steps[py::str(std::to_string(dev))] = l;
  }
  out["gpu_steps"] = steps;
  // Collective kernels of counted epochs, by epoch and launch order: (device, epoch, corr, name,
  // start, end, exposed ns per bin) (cct/collectives.h).
  py::list colls;
  for (const CollectiveRecord& c : r.collectives) {
    py::tuple bins(kCollectiveBins);
    for (unsigned i = 0; i < kCollectiveBins; ++i) bins[i] = py::int_(c.exposed_ns[i]);
    colls.append(
        py::make_tuple(c.device, c.tag.epoch, c.tag.corr, s.tree.strings.get(c.tag.name), c.start, c.end, bins));
  }
  out["gpu_collectives"] = colls;
  out["gpu_collectives_over_limit"] = r.collectives_over_limit;
  out["counters"] = counters;
  // Each set_tracing switch: (on, ns it took).
  py::list switches;
  for (const auto& [on, ns] : s.tracing_switch_log) switches.append(py::make_tuple(on, ns));
  out["tracing_switches"] = switches;
  out["gpu"] = s.gpu.load();
  out["op_mode"] = s.lean_ops.load() ? "lean" : "exact";
  out["flush_s"] = r.tracer.flush_s;
  // Numbered op and scope names past the first ones of their pattern, by pattern (StringTable).
  py::dict folded;
  for (const auto& [pattern, n] : s.tree.strings.folds()) folded[py::str(pattern)] = n;
  out["folded_names"] = folded;
  return out;
}

}  // namespace
}  // namespace dlpt

PYBIND11_MODULE(_C, m) {
  m.doc() = "dlpt native core: aten-op and CUPTI capture into an online calling-context tree";
  m.def(
      "start",
      [](bool gpu, const std::vector<std::string>& cupti_candidates, bool collecting, bool python_frames,
         bool nested_ops, const std::vector<std::string>& flops_ops, bool split_backward, const std::string& ops) {
        dlpt::CaptureOptions opts;
        opts.gpu = gpu;
        opts.cupti_candidates = cupti_candidates;
        opts.collecting = collecting;
        opts.python_frames = python_frames;
        opts.nested_ops = nested_ops;
        opts.flops_ops = flops_ops;
        opts.split_backward = split_backward;
        opts.op_mode = dlpt::op_mode(ops);
        dlpt::StartResult r = dlpt::start_capture(opts);
        py::dict out;
        out["gpu"] = r.gpu;
        out["reason"] = r.gpu_reason.empty() ? py::object(py::none()) : py::object(py::str(r.gpu_reason));
        out["cupti_path"] = r.cupti_path;
        out["op_mode"] = r.lean_ops ? "lean" : "exact";
        return out;
      },
      py::arg("gpu"), py::arg("cupti_candidates"), py::arg("collecting") = true, py::arg("python_frames") = true,
      py::arg("nested_ops") = false, py::arg("flops_ops") = std::vector<std::string>{},
      py::arg("split_backward") = false, py::arg("op_mode") = "auto");
  m.def("pause_function_records", &dlpt::pause_function_records,
        "Before a backward pass: aten-op records off (every thread); a token for resume, 0 if not paused.");
  m.def("resume_function_records", &dlpt::resume_function_records, "After that backward pass.");
  m.def("floor_records", &dlpt::floor_records_on_this_thread,
        "Records the floor-mode op callback saw on the calling thread (bench/floor.py).");
  m.def("stop", &dlpt::stop, py::arg("last_counted") = false,
        "Stops capture; the running epoch ends as `last_counted` (as counted if end_epoch was never called).");
  m.def("end_epoch", &dlpt::end_epoch, py::arg("counted"),
        "Ends the running epoch as counted (per-step work) or not; a step mark; returns the new epoch.");
  m.def("cut_counted", &dlpt::cut_counted, py::arg("extend") = false,
        "Every epoch that ended so far is outside the steps from now on: the warm-up's provisional "
        "steps, dropped when the step time is still falling (call right after end_epoch); extend: "
        "kept apart with those the last cut dropped.");
  m.def("restore_last_cut", &dlpt::restore_last_cut,
        "The last cut_counted is undone: the steps it dropped count again (before stop).");
  m.def("set_collecting", &dlpt::set_collecting);
  m.def("set_tracing", &dlpt::set_tracing, py::arg("on"),
        "Tracing off (dlpt's callbacks disabled, CUPTI flushed then disabled or detached) or on again.");
  m.def("mark_step", &dlpt::mark_step);
  m.def("drain_code_refs", &dlpt::drain_code_refs);
  m.def("running", &dlpt::capture_running);
  m.def("scope_push", &dlpt::push_scope, py::arg("name"), py::arg("skip_frames"));
  m.def("scope_pop", &dlpt::pop_scope);
  // Frame anchors (csrc/frames/activations.h; dlpt/capture/frame_anchors.py drives them).
  m.attr("activation_started") = py::reinterpret_steal<py::object>(dlpt::activations::make_start_callback());
  m.def(
      "anchors_enable",
      [](int tool_id, py::object set_local_events, py::object get_local_events, int py_start) {
        dlpt::activations::enable(tool_id, set_local_events.ptr(), get_local_events.ptr(), py_start);
      },
      py::arg("tool_id"), py::arg("set_local_events"), py::arg("get_local_events"), py::arg("py_start"),
      "Walks may stop at anchors: codes asked for are monitored with sys.monitoring tool `tool_id`.");
  m.def("anchors_disable", &dlpt::activations::disable, "Every monitored code's PY_START off again.");
  m.def("anchors_stats", [] {
    const dlpt::activations::Stats st = dlpt::activations::stats();
    py::dict d;
    d["monitored"] = st.monitored;
    d["requested"] = st.requested;
    return d;
  });

  m.def(
      "pairwise_trend",
      [](const std::vector<double>& values) {
        // Holds the GIL: a couple of microseconds, and releasing it at a step's end would let
        // other threads in ahead of the program's.
        const dlpt::PairwiseTrend t = dlpt::pairwise_trend(values);
        return py::make_tuple(t.slope, t.kendall_s);
      },
      py::arg("values"), "Theil-Sen slope and Kendall's S of a series (dlpt/capture/warmup.py).");

  // Unit-test seams (tests/native/test_core_units.py): the core's data structures in isolation.
  py::module_ t = m.def_submodule("_testing", "synthetic-input drivers of the native data structures");
  t.def("count_starts_by_profile", &dlpt::activations::count_starts_by_profile, py::arg("on"),
        "Counts every Python call on this thread as a start (a C profile function): anchors on 3.11.");
  t.def("busy", &dlpt::testing::busy);
  t.def("busy_steps", &dlpt::testing::busy_steps);
  t.def("busy_epochs", &dlpt::testing::busy_epochs);
  t.def("busy_collectives", &dlpt::testing::busy_collectives);
  t.def("epoch_contention", &dlpt::testing::epoch_contention, py::call_guard<py::gil_scoped_release>());
  t.def("seq_ranges", &dlpt::testing::seq_ranges);
  t.def("correlations", &dlpt::testing::correlations);
  t.def("graph_nodes", &dlpt::testing::graph_nodes);
  t.def("tree_children", &dlpt::testing::tree_children);
  t.def("op_name_ids", &dlpt::testing::op_name_ids);
  t.def("counter_fields", &dlpt::counter_fields);
  t.def("line_lookup_cost", &dlpt::testing::line_lookup_cost);
  t.def("remote_frames", &dlpt::testing::remote_frames, py::arg("chunk_bytes"), py::arg("top"));
  t.def("launch", &dlpt::testing::launch, py::arg("corr"));
  t.def("api_call", &dlpt::testing::api_call, py::arg("corr"), py::arg("enter"));
  t.def("comm_kernel", &dlpt::testing::comm_kernel, py::arg("name"));
  t.def("kernel_record", &dlpt::testing::kernel_record, py::arg("corr"), py::arg("start"), py::arg("end"),
        py::arg("device"), py::arg("name"));
  t.def("launch_path_ns", &dlpt::testing::launch_path_ns, py::arg("n"), py::arg("corr0") = 1);
  dlpt::memory::bind_memory(m, t);
  dlpt::host::register_bindings(m);        // host sampler, idle blame, timeline (csrc/host/)
  dlpt::pcsampling::register_bindings(m);  // CUPTI PC sampling (csrc/pcsampling/)
  dlpt::ending::register_bindings(m);      // the end of the process after a signal (csrc/ending/)
}
