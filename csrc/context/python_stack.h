// Reading the calling thread's Python frames without the GIL.
//
// RecordFunction and CUPTI callbacks run while the thread is inside C code (torch releases the GIL
// around dispatch). The thread's own frame chain cannot change until it returns to the
// interpreter, so walking it is safe; what is not safe is touching refcounts or calling any
// Python API. We therefore record only (frame address, code object, bytecode offset) here and
// turn code objects into file:line later, under the GIL (see CodeRegistry).
#pragma once

#include <Python.h>

#include <cstddef>

namespace dlpt {

struct RawFrame {
  const void* frame;   // _PyInterpreterFrame*, identity for the per-thread cache
  PyObject* code;      // PyCodeObject*, borrowed (alive while the frame runs)
  int lasti;           // byte offset of the current instruction, for PyCode_Addr2Line
};

/// Every capture keeps at most this many frames, the innermost ones. One cap for all callers:
/// compiled regions compare frame counts taken at different moments.
constexpr size_t kMaxPythonFrames = 256;

/// [MT] Fills `out` with the calling thread's Python frames, innermost first; returns how many.
/// Returns 0 on a thread that has no Python thread state. Never takes the GIL.
size_t capture_python_frames(RawFrame* out, size_t max);

/// [MT] How many Python frames the calling thread has now (at most kMaxPythonFrames).
size_t python_frame_count();

/// [GIL] The frame `skip` levels above the innermost one (0 = innermost), or nullptr.
const void* python_frame_at(size_t skip);

}  // namespace dlpt
