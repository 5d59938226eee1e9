// A tiny extension around the host sampler's frame reader (csrc/frames/remote_stack.cpp), built
// against any CPython 3.11-3.13 without torch: tests/native/test_remote_stack_versions.py runs it
// under each interpreter it finds, so every mirrored frame layout is read from a real, running
// interpreter of that version.
#include <Python.h>

#include <vector>

#include "frames/remote_stack.h"
#include "frames/safe_memory.h"

namespace {

struct Read {
  uint64_t tid;
  bool gil;
  bool torn;
  std::vector<dlpt::RawFrame> frames;
  uint64_t frame_reads;  // fault-safe reads its frames took (code objects cached after round 1)
};

/// walk(rounds) -> (list of (tid, holds_gil, [(filename, name, line), ...], frame reads) of the
/// last round, torn walks over all rounds). Reads with the GIL released, so the threads run meanwhile.
PyObject* walk(PyObject*, PyObject* args) {
  int rounds = 1;
  if (!PyArg_ParseTuple(args, "|i", &rounds)) return nullptr;
  std::string why;
  if (!dlpt::safe_memory::init(&why)) return PyErr_Format(PyExc_RuntimeError, "%s", why.c_str());
  PyInterpreterState* interp = PyInterpreterState_Main();
  std::vector<Read> reads;
  long torn = 0;
  Py_BEGIN_ALLOW_THREADS;
  dlpt::RemoteStackReader reader;
  std::vector<PyObject*> fresh;
  for (int r = 0; r < rounds; ++r) {
    const void* holder = nullptr;
#if PY_VERSION_HEX < 0x030C0000
    holder = _PyThreadState_UncheckedGet();
#endif
    dlpt::RemoteThread threads[64];
    const size_t n = reader.threads(interp, holder, threads, 64);
    reads.clear();
    for (size_t i = 0; i < n; ++i) {
      Read rd{threads[i].tid, threads[i].holds_gil, false, std::vector<dlpt::RawFrame>(dlpt::kMaxPythonFrames), 0};
      size_t nf = 0;
      const uint64_t reads0 = reader.reads();
      if (threads[i].top != nullptr &&
          reader.frames(threads[i], rd.frames.data(), rd.frames.size(), &nf, &fresh) == dlpt::Walk::Torn) {
        ++torn;
        rd.torn = true;
      }
      rd.frames.resize(nf);
      rd.frame_reads = reader.reads() - reads0;
      reads.push_back(std::move(rd));
    }
  }
  Py_END_ALLOW_THREADS;
  PyObject* out = PyList_New(0);
  for (const Read& rd : reads) {
    if (rd.torn || rd.frames.empty()) continue;  // counted in `torn`, or no Python frame
    PyObject* frames = PyList_New(0);
    for (const dlpt::RawFrame& f : rd.frames) {
      bool fresh_code = false;
      dlpt::RemoteStackReader check;
      const dlpt::CodeInfo* info = check.code(f.code, &fresh_code);
      // The test's functions live as long as the module: validated again before use anyway.
      if (info == nullptr || !dlpt::code_still_valid(f.code, *info)) continue;
      auto* co = reinterpret_cast<PyCodeObject*>(f.code);
      PyObject* item = Py_BuildValue("(OOi)", co->co_filename, co->co_name, PyCode_Addr2Line(co, f.lasti));
      PyList_Append(frames, item);
      Py_DECREF(item);
    }
    PyObject* row = Py_BuildValue("(KOOK)", static_cast<unsigned long long>(rd.tid), rd.gil ? Py_True : Py_False,
                                  frames, static_cast<unsigned long long>(rd.frame_reads));
    PyList_Append(out, row);
    Py_DECREF(row);
    Py_DECREF(frames);
  }
  return Py_BuildValue("(Nl)", out, torn);
}

PyMethodDef methods[] = {{"walk", walk, METH_VARARGS, "read every thread's frames"}, {nullptr, nullptr, 0, nullptr}};
PyModuleDef module = {PyModuleDef_HEAD_INIT, "_remote_probe", nullptr, -1, methods};

}  // namespace

PyMODINIT_FUNC PyInit__remote_probe(void) { return PyModule_Create(&module); }
