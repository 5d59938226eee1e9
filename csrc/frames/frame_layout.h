// The layout of CPython's _PyInterpreterFrame, mirrored per version: what walking a thread's
// frames needs (the calling thread's own, python_stack.cpp; another thread's through fault-safe
// reads, remote_stack.cpp). One definition for both, so a CPython upgrade is one change.
//
// CPython keeps _PyInterpreterFrame in its internal headers, which do not compile cleanly as C++
// on every version. We mirror the few fields we read, per version. Layouts checked against
// Include/internal/pycore_frame.h of 3.11, 3.12 and 3.13.
#pragma once

#include <Python.h>

#include <cstdint>

#if PY_VERSION_HEX < 0x030B0000 || PY_VERSION_HEX >= 0x030E0000
#error "dlpt supports CPython 3.11 to 3.13"
#endif

namespace dlpt::frame_layout {

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

constexpr char kOwnedByThread = 0;  // on its thread's stack (not a generator's, not returned)
constexpr char kOwnedByGenerator = 1;
constexpr char kOwnedByFrameObject = 2;  // returned: copied into its frame object
constexpr char kOwnedByCStack = 3;       // 3.12+: shim frames at C->Python entry, no user code

inline const InterpFrame* top_frame(PyThreadState* ts) {
#if PY_VERSION_HEX >= 0x030D0000
  return reinterpret_cast<const InterpFrame*>(ts->current_frame);
#else
  return ts->cframe ? reinterpret_cast<const InterpFrame*>(ts->cframe->current_frame) : nullptr;
#endif
}

}  // namespace dlpt::frame_layout
