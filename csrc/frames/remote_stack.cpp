#include "remote_stack.h"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "frame_layout.h"
#include "safe_memory.h"

namespace dlpt {

namespace {

using frame_layout::CodeUnit;
using frame_layout::InterpFrame;

/// A thread's frames live in the chunks of its frame stack (_PyStackChunk, chained from the
/// newest: 16 KiB each unless one frame needs more). A deep stack of large frames spans several:
/// a Hugging Face decode step's ~60 frames take three or four. Each chunk's used part is copied
/// in one read, lazily (the walk goes outward as the chain does: a chunk is read when a frame
/// lies outside those copied), instead of one read per frame outside the newest chunk: a system
/// call each, ~60 a sample on decode (the sampler's 49 us a sample, docs/overhead.md).
/// At most this much is copied per walk, all chunks together; frames beyond it are read one by one.
constexpr size_t kCopyBudget = 256 * 1024;
constexpr size_t kMaxRegions = 16;
/// What is read of an older chunk before its header says how much of it is used: CPython's chunk
/// size (a larger chunk's rest takes a second read).
constexpr size_t kChunkFirstRead = 16 * 1024;
constexpr size_t kChunkHeader = offsetof(_PyStackChunk, data);
/// From 3.12 on, C code that calls Python (a module's __call__ through its type's slot) leaves an
/// entry frame on the thread's C stack between the two Python frames: one per nn.Module level of
/// a model's stack, each outside every chunk. Older ones lie at higher addresses of the same C
/// stack, a few KiB apart: the stack above the first one met is copied in one read of this
/// much, which holds the next ones (20 levels: 22 reads a walk before, 3-4 after).
constexpr size_t kCStackWindow = 32 * 1024;
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

}  // namespace

bool RemoteStackReader::read(const void* addr, void* out, size_t n) {
  ++reads_;
  return safe_memory::read(addr, out, n);
}

/// The innermost frame and GIL state of a thread, from a copy of its PyThreadState.
void RemoteStackReader::read_top(const PyThreadState& ts, RemoteThread* r) {
#if PY_VERSION_HEX >= 0x030D0000
  r->top = ts.current_frame;
  r->holds_gil = ts._status.holds_gil;
#else
#if PY_VERSION_HEX >= 0x030C0000
  r->holds_gil = ts._status.active;  // 3.12: set while the thread state is attached (holds the GIL)
#endif
  _PyCFrame cframe;
  r->top = ts.cframe != nullptr && read(ts.cframe, &cframe, sizeof(cframe)) ? cframe.current_frame : nullptr;
#endif
}

RemoteStackReader::RemoteStackReader() : copy_(kCopyBudget) { regions_.reserve(kMaxRegions); }

size_t RemoteStackReader::copied_bytes() const {
  return regions_.empty() ? 0 : regions_.back().offset + regions_.back().len;
}

void RemoteStackReader::copy_chunk(const void* chunk, size_t used) {
  next_chunk_ = nullptr;
  const size_t offset = copied_bytes();
  if (chunk == nullptr || !aligned(chunk) || regions_.size() >= kMaxRegions || offset + kChunkHeader > kCopyBudget)
    return;
  ++reads_;
  const size_t got = safe_memory::read_prefix(chunk, copy_.data() + offset, std::min(used, kCopyBudget - offset));
  if (got < kChunkHeader) return;
  regions_.push_back(Region{reinterpret_cast<uintptr_t>(chunk), got, offset});
  _PyStackChunk header;
  std::memcpy(static_cast<void*>(&header), copy_.data() + offset, kChunkHeader);
  next_chunk_ = header.previous;
}

bool RemoteStackReader::copy_next_chunk() {
  const void* chunk = next_chunk_;
  next_chunk_ = nullptr;
  if (chunk == nullptr || regions_.empty() || regions_.size() >= kMaxRegions || !aligned(chunk)) return false;
  const size_t offset = copied_bytes();
  if (offset + kChunkHeader > kCopyBudget) return false;
  char* to = copy_.data() + offset;
  const size_t first = std::min(kChunkFirstRead, kCopyBudget - offset);
  ++reads_;
  size_t got = safe_memory::read_prefix(chunk, to, first);
  if (got < kChunkHeader) return false;
  _PyStackChunk header;
  std::memcpy(static_cast<void*>(&header), to, kChunkHeader);
  // An older chunk's `top` (slots in use) was saved when the next one was pushed. A torn or
  // stale link gives a header that does not add up: the chain ends here (its frames are then
  // read one by one, and checked as always).
  if (header.size < kChunkHeader || header.size > (size_t{1} << 30) ||
      header.top > (header.size - kChunkHeader) / sizeof(PyObject*))
    return false;
  const size_t used = kChunkHeader + header.top * sizeof(PyObject*);
  if (used > got && got == first && offset + used <= kCopyBudget) {
    ++reads_;  // a chunk larger than CPython's default: its rest
    got += safe_memory::read_prefix(static_cast<const char*>(chunk) + got, to + got, used - got);
  }
  regions_.push_back(Region{reinterpret_cast<uintptr_t>(chunk), std::min(got, used), offset});
  next_chunk_ = header.previous;
  return true;
}

void RemoteStackReader::copy_window(const void* from) {
  const size_t offset = copied_bytes();
  if (regions_.size() >= kMaxRegions || offset >= kCopyBudget) return;
  ++reads_;
  const size_t got =
      safe_memory::read_prefix(from, copy_.data() + offset, std::min(kCStackWindow, kCopyBudget - offset));
  if (got > 0) regions_.push_back(Region{reinterpret_cast<uintptr_t>(from), got, offset});
}

const char* RemoteStackReader::copied(const void* frame, size_t size) const {
  // As integers: `frame` may be any value a torn read produced, and pointer arithmetic on it can
  // wrap (a link near the top of the address space passed `at + size <= end` and the copy then
  // read far outside the buffer: the sampler's crash of issue 22).
  const uintptr_t at = reinterpret_cast<uintptr_t>(frame);
  for (const Region& r : regions_) {
    if (at >= r.at && at - r.at <= r.len && r.len - (at - r.at) >= size) return copy_.data() + r.offset + (at - r.at);
  }
  return nullptr;
}

size_t RemoteStackReader::threads(PyInterpreterState* interp, const void* gil_holder, RemoteThread* out, size_t max) {
  // The list head is read with a plain load (one aligned word of the interpreter, which lives as
  // long as the process); everything reached from it goes through safe_memory.
  const void* p = PyInterpreterState_ThreadHead(interp);
  size_t n = 0;
  for (size_t links = 0; p != nullptr && n < max && links < 4 * max; ++links) {
    PyThreadState ts;
    if (!aligned(p) || !read(p, &ts, sizeof(ts)) || ts.interp != interp) break;
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
  if (!aligned(code) || !read(code, raw, kCodeHeader) || !parse_code(code, raw, &info)) return nullptr;
  if (codes_.size() >= (1u << 16)) codes_.clear();  // bounded: a program that makes code forever
  *fresh = true;
  return &codes_.emplace(code, info).first->second;
}

Walk RemoteStackReader::frames(const RemoteThread& t, RawFrame* out, size_t max, size_t* n_out,
                               std::vector<PyObject*>* fresh_codes) {
  *n_out = 0;
  regions_.clear();
  next_chunk_ = nullptr;  // (a thread without a chunk: none from the last walk either)
  if (t.chunk != nullptr && t.chunk_end > t.chunk)
    copy_chunk(t.chunk, static_cast<size_t>(static_cast<const char*>(t.chunk_end) - static_cast<const char*>(t.chunk)));
  size_t n = 0;
  const auto* f = static_cast<const InterpFrame*>(t.top);
  for (size_t links = 0; f != nullptr && n < max; ++links) {
    if (links == kMaxLinks || !aligned(f)) return Walk::Torn;
    InterpFrame copy;
    const char* in_copy = copied(f, sizeof(InterpFrame));
    while (in_copy == nullptr && copy_next_chunk()) in_copy = copied(f, sizeof(InterpFrame));
    if (in_copy != nullptr) {
      std::memcpy(static_cast<void*>(&copy), in_copy, sizeof(InterpFrame));
    } else {
      if (!read(f, &copy, sizeof(copy))) return Walk::Torn;
      // An entry frame with frames beyond it: the next entry frames are likely above it (see
      // kCStackWindow). (The outermost one, where the thread entered Python, has none.)
      if (copy.owner == frame_layout::kOwnedByCStack && copy.previous != nullptr) copy_window(f);
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
