#include "remote_stack.h"

#include <cstddef>
#include <cstring>

#include "frame_layout.h"
#include "safe_memory.h"

namespace dlpt {

namespace {

using frame_layout::CodeUnit;
using frame_layout::InterpFrame;

/// The most of a frame-stack chunk copied in one read (frames beyond it are read one by one).
constexpr size_t kChunkCopy = 64 * 1024;
/// A chain longer than this (skipped shim frames included) is taken for a cycle of stale links.
constexpr size_t kMaxLinks = 4 * kMaxPythonFrames;
/// Header bytes of a code object read to validate it: everything before its bytecode.
constexpr size_t kCodeHeader = offsetof(PyCodeObject, co_code_adaptive);

bool aligned(const void* p) { return (reinterpret_cast<uintptr_t>(p) & (alignof(void*) - 1)) == 0; }

/// The code object's header fields, from a raw copy of its first kCodeHeader bytes.
bool parse_code(PyObject* code, const char* raw, CodeInfo* out) {
  PyCodeObject co;
  static_assert(kCodeHeader <= sizeof(PyCodeObject), "header within the struct");
  std::memcpy(static_cast<void*>(&co), raw, kCodeHeader);
  const PyObject* ob = reinterpret_cast<const PyObject*>(&co);
  if (Py_TYPE(ob) != &PyCode_Type) return false;
  const Py_ssize_t refcnt = ob->ob_refcnt;
  if (refcnt < 1 || refcnt >= kMaxPlausibleRefcnt) return false;
  const Py_ssize_t units = reinterpret_cast<const PyVarObject*>(ob)->ob_size;
  if (units <= 0 || units > (Py_ssize_t{1} << 26)) return false;
  out->filename = co.co_filename;
  out->name = co.co_name;
  out->firstlineno = co.co_firstlineno;
  out->first = reinterpret_cast<uintptr_t>(code) + kCodeHeader;
  out->units = static_cast<uint32_t>(units);
  out->firsttraceable = co._co_firsttraceable;
  return out->firsttraceable >= 0 && static_cast<uint32_t>(out->firsttraceable) <= out->units;
}

/// The innermost frame and GIL state of a thread, from a copy of its PyThreadState.
void read_top(const PyThreadState& ts, RemoteThread* r) {
#if PY_VERSION_HEX >= 0x030D0000
  r->top = ts.current_frame;
  r->holds_gil = ts._status.holds_gil;
#else
#if PY_VERSION_HEX >= 0x030C0000
  r->holds_gil = ts._status.active;  // 3.12: set while the thread state is attached (holds the GIL)
#endif
  _PyCFrame cframe;
  r->top = ts.cframe != nullptr && safe_memory::read(ts.cframe, &cframe) ? cframe.current_frame : nullptr;
#endif
}

}  // namespace

RemoteStackReader::RemoteStackReader() : chunk_copy_(kChunkCopy) {}

size_t RemoteStackReader::threads(PyInterpreterState* interp, const void* gil_holder, RemoteThread* out, size_t max) {
  // The list head is read with a plain load (one aligned word of the interpreter, which lives as
  // long as the process); everything reached from it goes through safe_memory.
  const void* p = PyInterpreterState_ThreadHead(interp);
  size_t n = 0;
  for (size_t links = 0; p != nullptr && n < max && links < 4 * max; ++links) {
    PyThreadState ts;
    if (!aligned(p) || !safe_memory::read(p, &ts, sizeof(ts)) || ts.interp != interp) break;
    RemoteThread& r = out[n++];
    r = RemoteThread{};
    r.tstate = p;
    r.tid = ts.native_thread_id;
    r.holds_gil = p == gil_holder;
    read_top(ts, &r);
    r.chunk = ts.datastack_chunk;
    r.chunk_end = ts.datastack_top;
    p = ts.next;
  }
  return n;
}

const CodeInfo* RemoteStackReader::code(PyObject* code, bool* fresh) {
  *fresh = false;
  auto it = codes_.find(code);
  if (it != codes_.end()) return &it->second;
  alignas(PyCodeObject) char raw[kCodeHeader];
  CodeInfo info;
  if (!aligned(code) || !safe_memory::read(code, raw, kCodeHeader) || !parse_code(code, raw, &info)) return nullptr;
  if (codes_.size() >= (1u << 16)) codes_.clear();  // bounded: a program that makes code forever
  *fresh = true;
  return &codes_.emplace(code, info).first->second;
}

Walk RemoteStackReader::frames(const RemoteThread& t, RawFrame* out, size_t max, size_t* n_out,
                               std::vector<PyObject*>* fresh_codes) {
  *n_out = 0;
  // Most frames live in the current chunk of the thread's frame stack: copy its used part in one
  // read instead of one read per frame (a syscall each).
  const char* base = static_cast<const char*>(t.chunk);
  size_t copied = 0;
  if (base != nullptr && t.chunk_end > t.chunk) {
    const size_t used = static_cast<size_t>(static_cast<const char*>(t.chunk_end) - base);
    copied = safe_memory::read_prefix(base, chunk_copy_.data(), used < kChunkCopy ? used : kChunkCopy);
  }
  size_t n = 0;
  const auto* f = static_cast<const InterpFrame*>(t.top);
  for (size_t links = 0; f != nullptr && n < max; ++links) {
    if (links == kMaxLinks || !aligned(f)) return Walk::Torn;
    InterpFrame copy;
    // Whether the frame lies in the copied part of the chunk, as integers: `f` may be any
    // value a torn read produced, and pointer arithmetic on it can wrap (a link near the top of
    // the address space passed `at + size <= end` and the copy then read far outside the
    // buffer: the sampler's crash of issue 22).
    const uintptr_t at = reinterpret_cast<uintptr_t>(f);
    const uintptr_t from = reinterpret_cast<uintptr_t>(base);
    if (base != nullptr && at >= from && at - from <= copied && copied - (at - from) >= sizeof(InterpFrame)) {
      std::memcpy(static_cast<void*>(&copy), chunk_copy_.data() + (at - from), sizeof(InterpFrame));
    } else if (!safe_memory::read(f, &copy, sizeof(copy))) {
      return Walk::Torn;
    }
    const auto* next = copy.previous;
    if (copy.owner < 0 || copy.owner > frame_layout::kOwnedByCStack) return Walk::Torn;
    // A frame handed to its frame object has returned (CPython copies it there on its way out);
    // a chain that ends in a generator's frame was read while that generator yielded (a
    // suspended generator's frame links to nothing): a running thread's chain always ends in a
    // frame of its own (or, 3.12+, a C-stack entry frame).
    if (copy.owner == frame_layout::kOwnedByFrameObject) return Walk::Torn;
    if (next == nullptr && copy.owner == frame_layout::kOwnedByGenerator) return Walk::Torn;
    if (copy.owner == frame_layout::kOwnedByCStack) {  // 3.12+: C->Python entry shim, no user code
      f = next;
      continue;
    }
    PyObject* code = frame_layout::frame_code(&copy);
    if (code == nullptr) return Walk::Torn;
    bool fresh = false;
    const CodeInfo* info = code == Py_None ? nullptr : this->code(code, &fresh);
    if (info == nullptr) {
      // 3.13 keeps None in some internal frames; anything else that is not a code object means
      // the chain was read mid-change.
      if (PY_VERSION_HEX >= 0x030D0000 && code == Py_None) {
        f = next;
        continue;
      }
      return Walk::Torn;
    }
    if (fresh) fresh_codes->push_back(code);
    const auto instr = reinterpret_cast<uintptr_t>(frame_layout::frame_instr(&copy));
    // 3.11/3.12 start a frame one code unit before its first (prev_instr).
    if (instr + sizeof(CodeUnit) < info->first || instr >= info->first + info->units * sizeof(CodeUnit))
      return Walk::Torn;
    // A frame still being set up (before its RESUME) has no meaningful position yet: as the op
    // path (decode_frame), it gets no node.
    const bool incomplete = copy.owner != frame_layout::kOwnedByGenerator &&
                            instr < info->first + static_cast<uintptr_t>(info->firsttraceable) * sizeof(CodeUnit);
    if (!incomplete) {
      const long lasti = static_cast<long>(instr) - static_cast<long>(info->first);  // bytes, as decode_frame
      out[n++] = RawFrame{f, reinterpret_cast<const void*>(instr), code, static_cast<int>(lasti)};
    }
    f = next;
  }
  *n_out = n;
  return Walk::Ok;
}

bool code_still_valid(PyObject* code, const CodeInfo& snapshot) {
  alignas(PyCodeObject) char raw[kCodeHeader];
  return aligned(code) && safe_memory::read(code, raw, kCodeHeader) && code_header_matches(code, raw, snapshot);
}

bool code_header_matches(PyObject* code, const void* header, const CodeInfo& snapshot) {
  CodeInfo now;
  if (!parse_code(code, static_cast<const char*>(header), &now)) return false;
  return now.filename == snapshot.filename && now.name == snapshot.name && now.firstlineno == snapshot.firstlineno &&
         now.units == snapshot.units;
}

}  // namespace dlpt
