#include "python_stack.h"

#include <cstdint>

// CPython keeps _PyInterpreterFrame in its internal headers, which do not compile cleanly as C++
// on every version. We mirror the few fields we read, per version. Layouts checked against
// Include/internal/pycore_frame.h of 3.11, 3.12 and 3.13.
#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "dlpt supports CPython 3.11 to 3.13"
#endif

namespace dlpt {
namespace {

using CodeUnit = uint16_t;  // _Py_CODEUNIT

#if PY_VERSION_HEX < 0x030C0000  // 3.11
struct InterpFrame {
  PyObject* f_func;
  PyObject* f_globals;
  PyObject* f_builtins;
  PyObject* f_locals;
  PyCodeObject* f_code;
  PyObject* frame_obj;
  InterpFrame* previous;
  CodeUnit* prev_instr;
  int stacktop;
  bool is_entry;
  char owner;
};
inline PyObject* frame_code(const InterpFrame* f) { return reinterpret_cast<PyObject*>(f->f_code); }
inline const CodeUnit* frame_instr(const InterpFrame* f) { return f->prev_instr; }
#elif PY_VERSION_HEX < 0x030D0000  // 3.12
struct InterpFrame {
  PyCodeObject* f_code;
  InterpFrame* previous;
  PyObject* f_funcobj;
  PyObject* f_globals;
  PyObject* f_builtins;
  PyObject* f_locals;
  PyObject* frame_obj;
  CodeUnit* prev_instr;
  int stacktop;
  uint16_t return_offset;
  char owner;
};
inline PyObject* frame_code(const InterpFrame* f) { return reinterpret_cast<PyObject*>(f->f_code); }
inline const CodeUnit* frame_instr(const InterpFrame* f) { return f->prev_instr; }
#else                              // 3.13
struct InterpFrame {
  PyObject* f_executable;  // a code object, or None for some internal frames
  InterpFrame* previous;
  PyObject* f_funcobj;
  PyObject* f_globals;
  PyObject* f_builtins;
  PyObject* f_locals;
  PyObject* frame_obj;
  CodeUnit* instr_ptr;
  int stacktop;
  uint16_t return_offset;
  char owner;
};
inline PyObject* frame_code(const InterpFrame* f) { return f->f_executable; }
inline const CodeUnit* frame_instr(const InterpFrame* f) { return f->instr_ptr; }
#endif

constexpr char kOwnedByGenerator = 1;
constexpr char kOwnedByCStack = 3;  // 3.12+: shim frames at C->Python entry, no user code

inline const InterpFrame* top_frame(PyThreadState* ts) {
#if PY_VERSION_HEX >= 0x030D0000
  return reinterpret_cast<const InterpFrame*>(ts->current_frame);
#else
  return ts->cframe ? reinterpret_cast<const InterpFrame*>(ts->cframe->current_frame) : nullptr;
#endif
}

}  // namespace

size_t walk_python_frames(RawFrame* out, size_t max, const void* stop) {
  // PyGILState_GetThisThreadState reads a thread-local: valid without holding the GIL.
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr) return 0;
  size_t n = 0;
  for (const InterpFrame* f = top_frame(ts); f != nullptr && f != stop && n < max; f = f->previous) {
    if (f->owner == kOwnedByCStack) continue;  // shim frames at C->Python entry: no user code
    out[n++] = RawFrame{f, frame_instr(f), nullptr, 0};
  }
  return n;
}

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
