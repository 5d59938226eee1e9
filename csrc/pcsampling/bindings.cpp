#include "bindings.h"

#include <cxxabi.h>
#include <pybind11/stl.h>

#include <cstdlib>

#include "api.h"
#include "collector.h"
#include "cubins.h"
#include "modules.h"

namespace py = pybind11;

namespace dlpt::pcsampling {

namespace {

using Strings = std::vector<std::string>;

/// The kernel's name as dlpt's kernel nodes carry it (demangled, as the tracer does), so the
/// samples join the tree's kernels by name.
std::string readable(const std::string& name) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && demangled ? demangled : name;
  std::free(demangled);
  return out;
}

py::dict info(const Strings& candidates) {
  py::dict d;
  std::string reason;
  const PcApi* api = pc_api(candidates, &reason);
  d["ok"] = api != nullptr;
  d["reason"] = reason;
  d["cupti_path"] = api ? api->cupti_path : std::string();
  d["cupti_version"] = api ? api->version : 0u;
  d["built_with"] = static_cast<uint32_t>(CUPTI_API_VERSION);
  return d;
}

py::dict watch(const Strings& candidates) {
  std::string how, error;
  const bool ok = watch_modules(candidates, &how, &error);
  py::dict d;
  d["ok"] = ok;
  d["how"] = how;
  d["error"] = error;
  return d;
}

py::dict start_sampling(const Strings& candidates, uint32_t period_log2) {
  py::dict d;
  Strings log;
  std::string error;
  const PcApi* api = pc_api(candidates, &error);
  bool ok = false;
  if (api != nullptr) {
    Settings s;
    s.period_log2 = period_log2;
    ok = start(*api, s, &log, &error);
  }
  d["ok"] = ok;
  d["error"] = error;
  d["log"] = log;
  return d;
}

py::dict stop_sampling(const Strings& candidates) {
  py::dict d;
  Strings log;
  std::string error;
  Collected c;
  bool ok = false;
  const PcApi* api = pc_api(candidates, &error);
  if (api != nullptr) {
    py::gil_scoped_release release;  // reading records back and resolving lines touches no Python
    ok = stop(*api, &c, &log, &error);
  }
  py::list lines;
  for (const LineSamples& ls : c.lines) {
    py::dict stalls;
    for (const auto& [name, n] : ls.stalls) {
      if (n) stalls[py::str(name)] = n;
    }
    py::dict row;
    row["function"] = readable(ls.function);
    row["file"] = ls.file;
    row["line"] = ls.line;
    row["samples"] = ls.samples;
    row["stalls"] = stalls;
    lines.append(row);
  }
  d["ok"] = ok;
  d["error"] = error;
  d["log"] = log;
  d["lines"] = lines;
  d["total_samples"] = c.total_samples;
  d["dropped_samples"] = c.dropped_samples;
  d["non_user_samples"] = c.non_user_samples;
  d["hardware_buffer_full"] = c.hardware_buffer_full;
  d["pcs"] = c.pcs;
  d["pcs_resolved"] = c.pcs_resolved;
  d["pcs_without_cubin"] = c.pcs_without_cubin;
  py::dict unresolved;
  for (const auto& [fn, why] : c.unresolved) unresolved[py::str(readable(fn))] = why;
  d["unresolved"] = unresolved;
  d["cubins"] = cubin_store().cubins();
  d["cubin_bytes"] = cubin_store().bytes();
  return d;
}

Strings disable(const Strings& candidates) {
  Strings log;
  if (const PcApi* api = pc_api(candidates, nullptr)) disable_all(*api, &log);
  return log;
}

py::dict reasons(const Strings& candidates) {
  py::dict d;
  Strings log;
  std::string error;
  Strings names;
  if (const PcApi* api = pc_api(candidates, &error)) names = stall_reason_names(*api, &log, &error);
  d["names"] = names;
  d["error"] = error;
  d["log"] = log;
  return d;
}

}  // namespace

void register_bindings(py::module_& m) {
  m.def("pc_sampling_info", &info, py::arg("candidates"),
        "[GIL] Whether CUPTI's PC sampling API is usable: {ok, reason, cupti_path, cupti_version, built_with}.");
  m.def("pc_sampling_watch", &watch, py::arg("candidates"),
        "[GIL] Keep the cubins of modules loaded from now on (their line tables): {ok, how, error}.");
  m.def("pc_sampling_start", &start_sampling, py::arg("candidates"), py::arg("period_log2"),
        "[GIL] Start PC sampling on the current CUDA context: {ok, error, log}.");
  m.def("pc_sampling_stop", &stop_sampling, py::arg("candidates"),
        "[GIL] Stop PC sampling (synchronise first) and read the samples: {ok, error, log, lines, totals}.");
  m.def("pc_sampling_disable", &disable, py::arg("candidates"),
        "[GIL] PC sampling disabled on every configured context; the CUPTI calls made, as lines.");
  m.def("pc_sampling_stall_reasons", &reasons, py::arg("candidates"),
        "[GIL] The stall reason names of the current context: {names, error, log}.");
}

}  // namespace dlpt::pcsampling
