// Python entry points of memory capture (dlpt.capture.memory calls them), kept beside the memory
// code rather than in bindings.cpp, which only calls bind_memory(). Every entry point is [GIL].
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "torch_reporter.h"
#include "tracker.h"

namespace py = pybind11;

namespace dlpt::memory {

namespace {

/// The export as plain Python data (see dlpt/_C.pyi, MemoryExport).
py::dict to_dict(const Export& e) {
  py::list devices;
  for (const DeviceExport& d : e.devices) {
    py::list steps;
    for (const StepPeak& s : d.steps) {
      py::list row;  // in DLPT_MEMORY_STEP_PEAK's order
#define DLPT_EXPORT_PEAK(name, doc) row.append(s.name);
      DLPT_MEMORY_STEP_PEAK(DLPT_EXPORT_PEAK)
#undef DLPT_EXPORT_PEAK
      steps.append(py::tuple(row));
    }
    py::dict dev;
    dev["type"] = d.id.type;
    dev["index"] = d.id.index;
    dev["allocated"] = d.allocated;
    dev["reserved"] = d.reserved;
    dev["steps"] = steps;
    devices.append(dev);
  }
  py::list nodes;
  for (const NodeTotals& n : e.nodes)
    nodes.append(py::make_tuple(n.node, n.device, n.alloc_bytes, n.allocs, n.peak_bytes, n.oom_bytes));
  py::dict out;
  out["devices"] = devices;
  out["nodes"] = nodes;
  out["events"] = e.events;
  out["missed_frees"] = e.missed_frees;
  if (e.oom) {
    const OomReport& o = e.oom_report;
    py::dict oom;
    oom["device"] = o.device;
    oom["requested"] = o.requested;
    oom["allocated"] = o.allocated;
    oom["reserved"] = o.reserved;
    oom["node"] = o.node == kNoNode ? py::int_(-1) : py::int_(o.node);
    oom["count"] = o.count;
    out["oom"] = oom;
  } else {
    out["oom"] = py::none();
  }
  return out;
}

py::dict start(bool track_cpu) {
  const StartResult r = start_reporting(track_cpu);
  py::dict out;
  out["enabled"] = r.enabled;
  out["reason"] = r.reason.empty() ? py::object(py::none()) : py::object(py::str(r.reason));
  return out;
}

py::dict stop(bool run_as_step) {
  stop_reporting();
  Tracker& t = tracker();
  if (run_as_step) t.step_end(true);  // a run without steps: the whole window is its one step
  return to_dict(t.snapshot());
}

using Event = std::tuple<std::string, int, int, uint64_t, uint64_t, uint64_t, uint64_t, int64_t>;

/// Synthetic events through a fresh tracker: (what, device type, device index, ptr, bytes,
/// allocated, reserved, node) with what = "alloc" (node -1: untraced), "free", "oom" (bytes:
/// requested), "step_begin", "step_end" (bytes: counted), "restart" (bytes: extend), "restore".
py::dict events(const std::vector<Event>& evs) {
  Tracker t;
  for (const auto& [what, type, index, ptr, bytes, allocated, reserved, node] : evs) {
    const DeviceId dev{type, index};
    const auto* p = reinterpret_cast<const void*>(ptr);
    const NodeId n = node < 0 ? kNoNode : static_cast<NodeId>(node);
    if (what == "alloc") {
      t.on_alloc(dev, p, bytes, allocated, reserved, n);
    } else if (what == "free") {
      t.on_free(dev, p, allocated, reserved);
    } else if (what == "oom") {
      t.on_oom(dev, bytes, allocated, reserved, n);
    } else if (what == "step_begin") {
      t.step_begin();
    } else if (what == "step_end") {
      t.step_end(bytes != 0);
    } else if (what == "restart") {
      t.restart_steps(bytes != 0);
    } else if (what == "restore") {
      t.restore_steps();
    } else {
      throw py::value_error("unknown memory event " + what);
    }
  }
  return to_dict(t.snapshot());
}

}  // namespace

void bind_memory(py::module_& m, py::module_& testing) {
  m.def("memory_start", &start, py::arg("track_cpu"),
        "Start reporting allocator events to the running session: {'enabled', 'reason'}.");
  m.def("memory_step_begin", [] { tracker().step_begin(); }, "A step begins: peaks restart from now.");
  m.def(
      "memory_step_end", [](bool counted) { tracker().step_end(counted); }, py::arg("counted"),
      "A step ended; `counted`: it was a recorded step (its peak counts).");
  m.def(
      "memory_restart_steps", [](bool extend) { tracker().restart_steps(extend); }, py::arg("extend") = false,
      "Forget the counted steps' peaks (kept for memory_restore_steps; extend: with the last ones forgotten).");
  m.def(
      "memory_restore_steps", [] { tracker().restore_steps(); },
      "Count again the peaks the last memory_restart_steps forgot.");
  m.def("memory_stop", &stop, py::arg("run_as_step"), "Stop reporting; what was recorded.");
  m.def("memory_suspend", &suspend_reporting, "Before torch.profiler starts on this thread: step aside.");
  m.def("memory_resume", &resume_reporting, "After torch.profiler stopped on this thread: back.");
  testing.def("memory_events", &events);
  testing.def("memory_step_fields", [] {
    std::vector<std::pair<std::string, std::string>> out;  // (name, doc) in export order
#define DLPT_PEAK_FIELD(name, doc) out.emplace_back(#name, doc);
    DLPT_MEMORY_STEP_PEAK(DLPT_PEAK_FIELD)
#undef DLPT_PEAK_FIELD
    return out;
  });
}

}  // namespace dlpt::memory
