// Reading the calling thread's Python frames without the GIL.
//
// RecordFunction and CUPTI callbacks run while the thread is inside C code (torch releases the GIL
// around dispatch). The thread's own frame chain cannot change until it returns to the
// interpreter, so walking it is safe; what is not safe is touching refcounts or calling any
// Python API. We therefore record only (frame address, code object, bytecode offset) here and
// turn code objects into file:line later, under the GIL (see CodeRegistry).
//
// Walking is split in two so that a caller can compare cheaply with what it saw last time: the
// raw walk reads only each frame's address and instruction pointer (two loads of one cache line);
// decode() reads the code object only for frames that differ from a cached path.
#pragma once

#include <Python.h>

#include <cstddef>

#include "activations.h"

namespace dlpt {

/// One frame of the raw walk; `code`/`lasti` are filled by decode().
struct RawFrame {
  const void* frame;  // _PyInterpreterFrame*
  const void* instr;  // its current instruction pointer: identity of (frame, position)
  PyObject* code;     // PyCodeObject*, borrowed (alive while the frame runs); nullptr: not user code
  int lasti;          // byte offset of the current instruction, for PyCode_Addr2Line
};

/// Every capture keeps at most this many frames, the innermost ones. One cap for all callers:
/// compiled regions compare frame counts taken at different moments.
constexpr size_t kMaxPythonFrames = 256;

/// [MT] Fills `out` with the calling thread's frames, innermost first (frame and instr only;
/// C-stack shim frames skipped); returns how many. 0 on a thread without a Python thread state.
/// The walk stops before frame `stop` when it is met (the frames entered since `stop` ran).
/// It starts at frame `from` (one of the calling thread's that is still running, e.g. the one
/// that called the op now running: the frames entered since are left out), else the innermost.
size_t walk_python_frames(RawFrame* out, size_t max, const void* stop = nullptr, const void* from = nullptr);

/// [MT] As walk_python_frames, but the walk stops after the first frame met that is one of
/// `marks` and still the activation it was taken of (activations.h): *hit is that mark's index,
/// or -1 when the walk went to the root (or filled `max`). Marks met that are no longer their
/// activation are walked past. `from` as in walk_python_frames.
size_t walk_python_frames_to(RawFrame* out, size_t max, const activations::Mark* marks, size_t n_marks, int* hit,
                             const void* from = nullptr);

/// [MT] The code object frame `f` (one of the calling thread's, on its stack) runs, borrowed;
/// not checked to be a code object (3.13: the frame's executable).
const void* frame_code_of(const void* f);

/// [MT] The calling thread's innermost frame (as in walk_python_frames), or nullptr.
const void* innermost_python_frame();

/// [MT] Fills f.code and f.lasti; f.code is nullptr for frames that hold no user-visible code
/// (an internal frame, or one still being set up).
void decode_frame(RawFrame& f);

/// [MT] The calling thread's user-visible frames, innermost first, decoded.
size_t capture_python_frames(RawFrame* out, size_t max);

/// [GIL] The frame `skip` levels above the innermost user-visible one (0 = innermost), or nullptr.
const void* python_frame_at(size_t skip);

}  // namespace dlpt
