#include "python_stack.h"

#include <cstdint>

#include "frame_layout.h"

namespace dlpt {

using frame_layout::CodeUnit;
using frame_layout::frame_code;
using frame_layout::frame_instr;
using frame_layout::InterpFrame;
using frame_layout::kOwnedByCStack;
using frame_layout::kOwnedByGenerator;
using frame_layout::top_frame;

namespace {
/// Where a walk starts: frame `from`, else the calling thread's innermost frame (nullptr without
/// a Python thread state).
const InterpFrame* first_frame(const void* from) {
  if (from != nullptr) return static_cast<const InterpFrame*>(from);
  // PyGILState_GetThisThreadState reads a thread-local: valid without holding the GIL.
  PyThreadState* ts = PyGILState_GetThisThreadState();
  return ts == nullptr ? nullptr : top_frame(ts);
}
}  // namespace

size_t walk_python_frames(RawFrame* out, size_t max, const void* stop, const void* from) {
  size_t n = 0;
  for (const InterpFrame* f = first_frame(from); f != nullptr && f != stop && n < max; f = f->previous) {
    if (f->owner == kOwnedByCStack) continue;  // shim frames at C->Python entry: no user code
    out[n++] = RawFrame{f, frame_instr(f), nullptr, 0};
  }
  return n;
}

size_t walk_python_frames_to(RawFrame* out, size_t max, const activations::Mark* marks, size_t n_marks, int* hit,
                             const void* from) {
  *hit = -1;
  size_t n = 0;
  for (const InterpFrame* f = first_frame(from); f != nullptr && n < max; f = f->previous) {
    if (f->owner == kOwnedByCStack) continue;
    out[n++] = RawFrame{f, frame_instr(f), nullptr, 0};
    for (size_t i = 0; i < n_marks; ++i) {
      if (marks[i].frame == f && activations::same_activation(f, marks[i])) {
        *hit = static_cast<int>(i);
        return n;
      }
    }
  }
  return n;
}

const void* frame_code_of(const void* f) { return frame_code(static_cast<const InterpFrame*>(f)); }

const void* innermost_python_frame() {
  RawFrame f;
  return walk_python_frames(&f, 1) ? f.frame : nullptr;
}

void decode_frame(RawFrame& rf) {
  const auto* f = static_cast<const InterpFrame*>(rf.frame);
  rf.code = nullptr;
  PyObject* code = frame_code(f);
  if (code == nullptr || Py_TYPE(code) != &PyCode_Type) return;
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  const CodeUnit* first = reinterpret_cast<const CodeUnit*>(co->co_code_adaptive);
  const CodeUnit* instr = static_cast<const CodeUnit*>(rf.instr);
  // A frame still being set up (before its RESUME) has no meaningful position yet.
  if (f->owner != kOwnedByGenerator && instr < first + co->_co_firsttraceable) return;
  rf.lasti = static_cast<int>((instr - first) * static_cast<long>(sizeof(CodeUnit)));
  rf.code = code;
}

size_t capture_python_frames(RawFrame* out, size_t max) {
  RawFrame raw[kMaxPythonFrames];
  const size_t n = walk_python_frames(raw, max < kMaxPythonFrames ? max : kMaxPythonFrames);
  size_t kept = 0;
  for (size_t i = 0; i < n; ++i) {
    decode_frame(raw[i]);
    if (raw[i].code != nullptr) out[kept++] = raw[i];
  }
  return kept;
}

const void* python_frame_at(size_t skip) {
  RawFrame frames[kMaxPythonFrames];
  size_t n = capture_python_frames(frames, kMaxPythonFrames);
  return skip < n ? frames[skip].frame : nullptr;
}

}  // namespace dlpt
