// Every entry point is [GIL] (pybind11 holds it).
#include "bindings.h"

#include <pybind11/stl.h>

#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "../cupti/tracer.h"
#include "../frames/safe_memory.h"
#include "host_capture.h"
#include "idle_blame.h"
#include "sampler.h"

namespace py = pybind11;

namespace dlpt::host {

namespace {

py::list cells_list(const BlameByNode& by_node) {
  py::list out;
  for (const auto& [node, cell] : by_node) out.append(py::make_tuple(node, cell.ns, cell.gil_ns));
  return out;
}

/// (node id, wall ns, GIL ns, CPU ns, samples) of every sampled node.
py::list sampled_cells(const std::vector<HostCell>& cells) {
  py::list out;
  for (size_t i = 0; i < cells.size(); ++i) {
    const HostCell& c = cells[i];
    if (c.samples) out.append(py::make_tuple(i, c.wall_ns, c.gil_ns, c.cpu_ns, c.samples));
  }
  return out;
}

py::dict stats_dict(const SamplerStats& s) {
  py::dict d;
#define DLPT_EXPORT_STAT(name, doc) d[#name] = s.name;
  DLPT_SAMPLER_STATS(DLPT_EXPORT_STAT)
#undef DLPT_EXPORT_STAT
  return d;
}

/// Test seam: the sampler's stats as (name, doc), in export order (DLPT_SAMPLER_STATS).
std::vector<std::pair<std::string, std::string>> sampler_stat_fields() {
  std::vector<std::pair<std::string, std::string>> out;
#define DLPT_STAT_FIELD(name, doc) out.emplace_back(#name, doc);
  DLPT_SAMPLER_STATS(DLPT_STAT_FIELD)
#undef DLPT_STAT_FIELD
  return out;
}

py::object blame_dict(const HostResult& r) {
  if (!r.blamed) return py::none();
  const BlameTotals& b = r.blame;
  py::dict d;
  d["steps"] = b.steps;
  d["gpu"] = r.gpu;
  d["host"] = cells_list(b.host);
  py::dict devices;
  for (const auto& [dev, gaps] : b.devices) {
    py::dict g;
    for (size_t i = 0; i < kGaps; ++i) g[gap_name(static_cast<Gap>(i))] = cells_list(gaps[i]);
    devices[py::str(std::to_string(dev))] = g;
  }
  d["devices"] = devices;
  d["samples_dropped"] = b.samples_dropped;
  d["spans_dropped"] = b.spans_dropped;
  d["resolved_early"] = b.resolved_early;
  d["late_spans"] = b.late_spans;
  return d;
}

py::object timeline_dict(const HostResult& r) {
  if (!r.timeline) return py::none();
  py::dict d;
  d["steps_requested"] = r.steps_requested;
  d["steps_kept"] = r.steps_kept;
  d["start_ns"] = r.window_start_ns;
  d["end_ns"] = r.window_end_ns;
  d["dropped"] = r.dropped_events;
  py::list events;
  std::set<uint32_t> cbids;
  for (const Event& e : r.events) {
    events.append(py::make_tuple(static_cast<int>(e.kind), e.start, e.end, e.track,
                                 e.node == kNoNode ? int64_t{-1} : int64_t{e.node}, e.detail, e.corr, e.flags));
    if (e.kind == EventKind::Api || e.kind == EventKind::Sync) cbids.insert(e.detail);
  }
  d["events"] = events;
  py::dict names;
  for (uint32_t cbid : cbids) names[py::int_(cbid)] = sync_api_name(cbid);
  d["api_names"] = names;
  return d;
}

py::dict result() {
  const HostResult r = take_result();
  py::dict d;
  d["sampled"] = r.sampled;
  d["hz"] = r.hz;
  d["method"] = r.method;
  d["stats"] = stats_dict(r.stats);
  d["cells"] = sampled_cells(r.cells);
  d["cells_outside"] = sampled_cells(r.outside_cells);
  d["blame"] = blame_dict(r);
  d["timeline"] = timeline_dict(r);
  return d;
}

/// Test seam: IdleBlame fed with (kind, a, b, c, d) records in order — ("mark", t, recorded,
/// corr_before), ("work", device, start, end, corr), ("sample", t, node, weight, gil),
/// ("settle", now), ("cut", extend), ("restore") — then finished.
py::dict blame_seam(bool gpu, const std::vector<std::tuple<std::string, uint64_t, uint64_t, uint64_t, uint64_t>>& ops) {
  IdleBlame b(gpu);
  for (const auto& [kind, a, x, y, z] : ops) {
    if (kind == "mark") {
      b.mark(a, x != 0, static_cast<uint32_t>(y));
    } else if (kind == "work") {
      b.work(static_cast<uint32_t>(a), x, y, static_cast<uint32_t>(z));
    } else if (kind == "sample") {
      b.sample(a, static_cast<NodeId>(x), y, z != 0);
    } else if (kind == "settle") {
      b.settle(a);
    } else if (kind == "cut") {
      b.cut(a != 0);
    } else if (kind == "restore") {
      b.restore_last_cut();
    }
  }
  HostResult r;
  r.blamed = true;
  r.gpu = gpu;
  r.blame = b.finish();
  return blame_dict(r).cast<py::dict>();
}

}  // namespace

void register_bindings(py::module_& m) {
  m.def(
      "host_start",
      [](uint32_t sample_hz, uint32_t timeline_steps, size_t timeline_events, bool timeline_armed) {
        HostOptions o;
        o.timeline_armed = timeline_armed;
        o.sample_hz = sample_hz;
        o.timeline_steps = timeline_steps;
        o.timeline_events = timeline_events;
        const HostStart r = start(o);
        py::dict d;
        d["sampling"] = r.sampling;
        d["reason"] = r.reason.empty() ? py::object(py::none()) : py::object(py::str(r.reason));
        d["method"] = r.method;
        return d;
      },
      py::arg("sample_hz"), py::arg("timeline_steps") = 0, py::arg("timeline_events") = 500000,
      py::arg("timeline_armed") = true, "Starts the host sampler and the timeline window for the running session.");
  m.def("host_arm_timeline", &arm_timeline,
        "The warm-up is over: the timeline window opens at the next recorded step boundary.");
  m.def("host_stop", &stop, "Stops the sampler (before stop()).");
  m.def("host_result", &result, "What host capture recorded (after stop()).");
  m.def("host_running", &running);
  py::module_ t = m.attr("_testing").cast<py::module_>();
  t.def("idle_blame", &blame_seam);
  t.def("sampler_stat_fields", &sampler_stat_fields);
  t.def("safe_read_method", [] {
    std::string why;
    return safe_memory::init(&why) ? std::string(safe_memory::method()) : why;
  });
}

}  // namespace dlpt::host
