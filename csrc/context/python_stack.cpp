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
#else  // 3.13
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

/// The code object of a frame that holds user-visible code, or nullptr for shim / incomplete frames.
inline PyObject* usable_code(const InterpFrame* f, int* lasti) {
  if (f->owner == kOwnedByCStack) return nullptr;
  PyObject* code = frame_code(f);
  if (code == nullptr || Py_TYPE(code) != &PyCode_Type) return nullptr;
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  const CodeUnit* first = reinterpret_cast<const CodeUnit*>(co->co_code_adaptive);
  const CodeUnit* instr = frame_instr(f);
  // A frame still being set up (before its RESUME) has no meaningful position yet.
  if (f->owner != kOwnedByGenerator && instr < first + co->_co_firsttraceable) return nullptr;
  *lasti = static_cast<int>((instr - first) * static_cast<long>(sizeof(CodeUnit)));
  return code;
}

}  // namespace

size_t capture_python_frames(RawFrame* out, size_t max) {
  // PyGILState_GetThisThreadState reads a thread-local: valid without holding the GIL.
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr) return 0;
  size_t n = 0;
  for (const InterpFrame* f = top_frame(ts); f != nullptr && n < max; f = f->previous) {
    int lasti = 0;
    PyObject* code = usable_code(f, &lasti);
    if (code == nullptr) continue;
    out[n++] = RawFrame{f, code, lasti};
  }
  return n;
}

size_t python_frame_count() {
  RawFrame frames[kMaxPythonFrames];
  return capture_python_frames(frames, kMaxPythonFrames);
}

const void* python_frame_at(size_t skip) {
  RawFrame frames[kMaxPythonFrames];
  size_t n = capture_python_frames(frames, kMaxPythonFrames);
  return skip < n ? frames[skip].frame : nullptr;
}

}  // namespace dlpt
