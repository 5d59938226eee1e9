// The only pybind11 file: converts between Python and the native core. Every entry point is
// [GIL] (pybind11 holds it); stop() releases it internally while flushing CUPTI.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>

#include "context/aten_ops.h"
#include "context/thread_state.h"
#include "controller.h"
#include "testing/seams.h"

namespace py = pybind11;

namespace dlpt {
namespace {

const char* kMemcpyKinds[] = {"?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
const char* kMemoryKinds[] = {"",      "pageable", "pinned",        "device",
                              "array", "managed",  "device_static", "managed_static"};

/// Name, file, line and extras of one node, by kind.
py::tuple export_node(Session& s, NodeId id) {
  const Node& n = s.tree.node(id);
  std::string name, file;
  int line = 0;
  py::dict x;
  switch (n.kind) {
    case NodeKind::Root:
      name = "<root>";
      break;
    case NodeKind::Thread:
      name = n.a == 0 ? "<unknown>" : "<thread " + std::to_string(n.a) + ">";
      break;
    case NodeKind::Frame:
      if (!s.codes.describe(reinterpret_cast<PyObject*>(n.a), static_cast<int>(n.b), &file, &name, &line)) {
        name = "<code freed during profiling>";
        s.counters.code_lost.fetch_add(1);
      }
      break;
    case NodeKind::Scope:
    case NodeKind::Op:
      name = s.tree.strings.get(static_cast<uint32_t>(n.a));
      break;
    case NodeKind::Phase:
      name = n.a == 0 ? "<forward>" : n.a == 1 ? "<backward>" : "<cuda graph replay>";
      break;
    case NodeKind::Kernel:
      name = s.tree.strings.get(static_cast<uint32_t>(n.a));
      x["device"] = n.b;
      x["grid"] = py::make_tuple(n.cfg.grid[0], n.cfg.grid[1], n.cfg.grid[2]);
      x["block"] = py::make_tuple(n.cfg.block[0], n.cfg.block[1], n.cfg.block[2]);
      x["regs"] = n.cfg.regs;
      x["smem_static"] = n.cfg.smem_static;
      x["smem_dynamic"] = n.cfg.smem_dynamic;
      break;
    case NodeKind::Memcpy: {
      const char* dir = n.a < 11 ? kMemcpyKinds[n.a] : "?";
      const uint64_t mem = n.b & 0xFF;
      name = std::string("[memcpy ") + dir + "]";
      x["direction"] = dir;
      if (mem > 0 && mem < 8) x["host_mem"] = kMemoryKinds[mem];
      x["device"] = n.b >> 8;
      break;
    }
    case NodeKind::Memset:
      name = "[memset]";
      x["device"] = n.a;
      break;
    case NodeKind::Sync:
      name = "[sync " + sync_api_name(n.a) + "]";
      break;
  }
  const Metrics& m = n.m;
  const TickRate& r = s.rate;
  uint64_t min_ns = m.min_ns.load();
  py::tuple metrics = py::make_tuple(m.calls.load(), r.to_ns(m.cpu_ticks.load()), m.gpu_ns.load(), m.count.load(),
                                     m.bytes.load(), r.to_ns(m.sync_ticks.load()), r.to_ns(m.api_ticks.load()),
                                     min_ns == UINT64_MAX ? 0 : min_ns, m.max_ns.load());
  return py::make_tuple(id, n.parent == kNoNode ? -1 : static_cast<int64_t>(n.parent), node_kind_name(n.kind), name,
                        file, line, metrics, x);
}

py::dict stop() {
  StopResult r = stop_capture();
  Session& s = *r.session;
  py::list nodes;
  const size_t count = s.tree.size();
  for (size_t i = 0; i < count; ++i) nodes.append(export_node(s, static_cast<NodeId>(i)));
  py::list api;
  for (const ApiStat& a : r.api) api.append(py::make_tuple(a.name, a.calls, a.total_ns, a.min_ns, a.max_ns));
  py::dict busy, comm, exposed;
  for (const auto& [dev, t] : r.busy) {
    const py::str key(std::to_string(dev));
    busy[key] = t.busy_ns;
    if (t.comm_ns) {
      comm[key] = t.comm_ns;
      exposed[key] = t.exposed_ns;
    }
  }
  const Counters& c = s.counters;
  py::dict counters;
  counters["activity_records"] = c.activity_records.load();
  counters["delivered_gpu_ns"] = c.delivered_gpu_ns.load();
  counters["dropped_records"] = c.dropped_records.load();
  counters["unknown_correlation"] = c.unknown_correlation.load();
  counters["unknown_gpu_ns"] = c.unknown_gpu_ns.load();
  counters["submitted"] = r.tracer.submitted;
  counters["completed"] = r.tracer.completed;
  counters["outside_window"] = c.outside_window.load();
  counters["backward_unresolved"] = c.backward_unresolved.load();
  counters["code_lost"] = c.code_lost.load();
  counters["graph_nodes_captured"] = c.graph_nodes_captured.load();
  counters["graph_replay_ns"] = c.graph_replay_ns.load();
  counters["graph_unmapped_ns"] = c.graph_unmapped_ns.load();
  counters["tree_overflow"] = s.tree.overflowed();
  counters["unmatched_op_ends"] = c.unmatched_op_ends.load();
  counters["rf_windows"] = c.rf_windows.load();
  counters["op_records"] = r.self.op_records;
  counters["api_callbacks"] = r.self.api_callbacks;
  counters["self_ns"] = r.self.self_ns;
  counters["self_python_ns"] = r.self.python_ns;
  counters["self_window_ns"] = r.self.window_ns;
  counters["tsc"] = s.rate.tsc();
  if (!r.tracer.unsubscribe_error.empty()) counters["cupti_unsubscribe_error"] = r.tracer.unsubscribe_error;
  s.codes.release_all();
  // Per-node details (see OpDetails): collectives, and the input signatures of FLOP-formula ops.
  py::dict collectives;
  for (const auto& [node, c] : s.details.comm()) {
    py::dict d;
    d["collective"] = c.collective;
    d["dtype"] = c.dtype;
    d["pg_name"] = c.pg_name;
    d["pg_desc"] = c.pg_desc;
    d["world_size"] = c.world_size;
    d["calls"] = c.calls;
    d["in_bytes"] = c.in_bytes;
    d["out_bytes"] = c.out_bytes;
    collectives[py::int_(node)] = d;
  }
  py::list op_inputs;
  for (const auto& [key, count] : s.details.inputs()) op_inputs.append(py::make_tuple(key.first, key.second, count));
  py::dict out;
  out["nodes"] = nodes;
  out["collectives"] = collectives;
  out["op_inputs"] = op_inputs;
  out["api"] = api;
  out["gpu_busy_ns"] = busy;
  out["gpu_comm_ns"] = comm;
  out["gpu_comm_exposed_ns"] = exposed;
  // Per device, the intervals between step marks: (start, end, recorded, busy, first, last),
  // CUPTI timestamps; first/last 0 when no work ran in the interval.
  py::dict steps;
  for (const auto& [dev, v] : r.steps) {
    py::list l;
    for (const StepBusy& sb : v) l.append(py::make_tuple(sb.start, sb.end, sb.recorded, sb.busy_ns, sb.first, sb.last));
    steps[py::str(std::to_string(dev))] = l;
  }
  out["gpu_steps"] = steps;
  out["counters"] = counters;
  out["gpu"] = s.gpu.load();
  out["flush_s"] = r.tracer.flush_s;
  return out;
}

}  // namespace
}  // namespace dlpt

PYBIND11_MODULE(_C, m) {
  m.doc() = "dlpt native core: aten-op and CUPTI capture into an online calling-context tree";
  m.def(
      "start",
      [](bool gpu, const std::vector<std::string>& cupti_candidates, bool collecting, bool python_frames,
         bool nested_ops, int floor, const std::vector<std::string>& flops_ops, bool split_backward) {
        if (floor < 0 || floor > 2) throw std::invalid_argument("floor must be 0, 1 or 2");
        dlpt::CaptureOptions opts;
        opts.gpu = gpu;
        opts.cupti_candidates = cupti_candidates;
        opts.collecting = collecting;
        opts.python_frames = python_frames;
        opts.nested_ops = nested_ops;
        opts.floor = static_cast<dlpt::Floor>(floor);
        opts.flops_ops = flops_ops;
        opts.split_backward = split_backward;
        dlpt::StartResult r = dlpt::start_capture(opts);
        py::dict out;
        out["gpu"] = r.gpu;
        out["reason"] = r.gpu_reason.empty() ? py::object(py::none()) : py::object(py::str(r.gpu_reason));
        out["cupti_path"] = r.cupti_path;
        return out;
      },
      py::arg("gpu"), py::arg("cupti_candidates"), py::arg("collecting") = true, py::arg("python_frames") = true,
      py::arg("nested_ops") = false, py::arg("floor") = 0, py::arg("flops_ops") = std::vector<std::string>{},
      py::arg("split_backward") = false);
  m.def("pause_function_records", &dlpt::pause_function_records,
        "Before a backward pass: aten-op records off (every thread); a token for resume, 0 if not paused.");
  m.def("resume_function_records", &dlpt::resume_function_records, "After that backward pass.");
  m.def("floor_records", &dlpt::floor_records_on_this_thread,
        "Records the floor-mode op callback saw on the calling thread (bench/floor.py).");
  m.def("stop", &dlpt::stop);
  m.def("set_collecting", &dlpt::set_collecting);
  m.def("mark_step", &dlpt::mark_step);
  m.def("drain_code_refs", &dlpt::drain_code_refs);
  m.def("running", &dlpt::capture_running);
  m.def("scope_push", &dlpt::push_scope, py::arg("name"), py::arg("skip_frames"));
  m.def("scope_pop", &dlpt::pop_scope);

  // Unit-test seams (tests/native/test_core_units.py): the core's data structures in isolation.
  py::module_ t = m.def_submodule("_testing", "synthetic-input drivers of the native data structures");
  t.def("busy", &dlpt::testing::busy);
  t.def("busy_steps", &dlpt::testing::busy_steps);
  t.def("seq_ranges", &dlpt::testing::seq_ranges);
  t.def("correlations", &dlpt::testing::correlations);
  t.def("graph_nodes", &dlpt::testing::graph_nodes);
  t.def("tree_children", &dlpt::testing::tree_children);
  t.def("op_name_ids", &dlpt::testing::op_name_ids);
}
