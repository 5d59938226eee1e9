// Reading another thread's Python frames while it runs.
//
// The op path walks the calling thread's own frames (frames/python_stack.cpp): that chain
// cannot change under it. The sampler reads every Python thread's chain from its own native
// thread, while those threads keep running, so nothing it reads can be trusted: a frame may be
// popped and its memory reused, a chunk of the frame stack freed, a thread state deleted. The
// contract here:
//   - every byte of another thread's memory is read through safe_memory (an unmapped page is an
//     error code, never a fault); no pointer read from there is ever dereferenced directly;
//   - a chain is accepted only if each frame checks out: its code object is a code object (type
//     pointer, size) and its instruction pointer lies inside that code's bytecode; anything else
//     makes the walk "torn" and the sample is dropped (counted), never half-used;
//   - code objects are validated once and cached by address; the cache never keeps them alive
//     (no reference is taken here), so the sampler hands new ones to the session's CodeRegistry
//     through a GIL-holding drain that validates them again (sampler.cpp).
// Reads are system calls (safe_memory), so a walk copies memory in large pieces: each chunk of the
// thread's frame stack, and from 3.12 on the C stack above its first C-to-Python entry frame, one
// read each (a few a walk, where it was one per frame: remote_stack.cpp). Frames are parsed from
// those copies, taken at one instant each.
// What a torn read can still produce is a stack that mixes two instants of the same thread (a
// frame popped and another pushed at the same address between two reads): one sample on a
// neighbouring line. That is the price of never stopping the program's threads.
//
// Thread contract: a RemoteStackReader belongs to the sampler thread.
#pragma once

#include <Python.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "python_stack.h"

namespace dlpt {

/// One Python thread as read at one instant (copied out of its PyThreadState).
struct RemoteThread {
  const void* tstate = nullptr;     // its address: identity only, never dereferenced
  uint64_t tid = 0;                 // native (kernel) thread id
  bool holds_gil = false;           // attached to the interpreter (holds the GIL) at that instant
  const void* top = nullptr;        // innermost _PyInterpreterFrame; nullptr: no Python frames
  const void* chunk = nullptr;      // the frame stack's current chunk...
  const void* chunk_end = nullptr;  // ... in use up to here
};

/// A code object's header as read and validated once.
struct CodeInfo {
  PyObject* filename = nullptr;  // what the registry's drain checks again (with name, firstlineno)
  PyObject* name = nullptr;
  int firstlineno = 0;
  uintptr_t first = 0;  // address of its first code unit
  uint32_t units = 0;   // number of code units
  int firsttraceable = 0;
};

enum class Walk : uint8_t { Ok, Torn };

class RemoteStackReader {
 public:
  RemoteStackReader();

  /// The threads of `interp` (at most `max`); `gil_holder`: the thread state holding the GIL
  /// where the interpreter keeps it globally (3.11), else unused.
  size_t threads(PyInterpreterState* interp, const void* gil_holder, RemoteThread* out, size_t max);

  /// Thread `t`'s user-visible frames, innermost first, decoded (code, lasti), at most `max`
  /// (the innermost ones, as the op path keeps). Code objects seen for the first time are
  /// appended to `fresh_codes` (the sampler registers them).
  Walk frames(const RemoteThread& t, RawFrame* out, size_t max, size_t* n, std::vector<PyObject*>* fresh_codes);

  /// The validated header of `code`, read on first use; nullptr if it is not a code object.
  const CodeInfo* code(PyObject* code, bool* fresh);

  /// Forget a cached code object (its registration failed: the address may be reused).
  void forget(PyObject* code) { codes_.erase(code); }

  /// Fault-safe reads made so far (each a system call): the sampler's cost per sample.
  uint64_t reads() const { return reads_; }

 private:
  /// A copied stretch of a thread's memory (a chunk of its frame stack, or its C stack above an
  /// entry frame): `len` bytes from address `at`, at `offset` in copy_.
  struct Region {
    uintptr_t at = 0;
    size_t len = 0;
    size_t offset = 0;
  };
  /// Bytes of copy_ in use: where the next region goes.
  size_t copied_bytes() const;
  /// Copies the newest chunk's used part (`used` bytes from its start, header included).
  void copy_chunk(const void* chunk, size_t used);
  /// Copies the chunk before the last one copied; false when there is none (or it does not add up).
  bool copy_next_chunk();
  /// Copies the thread's C stack from an entry frame up (see kCStackWindow in the .cpp).
  void copy_window(const void* from);
  /// Where `size` bytes at `frame` are in the copies, or nullptr.
  const char* copied(const void* frame, size_t size) const;
  /// One fault-safe read, counted.
  bool read(const void* addr, void* out, size_t n);
  void read_top(const PyThreadState& ts, RemoteThread* r);

  std::vector<char> copy_;            // the regions' bytes, back to back
  std::vector<Region> regions_;       // this walk's copies, in the order they were made
  const void* next_chunk_ = nullptr;  // the chunk before the last one copied (not read yet)
  uint64_t reads_ = 0;
  std::unordered_map<PyObject*, CodeInfo> codes_;
};

/// Reference counts of live objects stay below this; a freed block's first word holds 0 or an
/// allocator's pointer (pymalloc's free list, glibc's bins: user-space addresses above 2**40).
constexpr Py_ssize_t kMaxPlausibleRefcnt = Py_ssize_t{1} << 40;

/// [MT] Whether a code object read at `code` with this header still looks alive and the same:
/// type, a plausible reference count (a freed block's first word is 0 or an allocator pointer)
/// and the snapshot's file, name and first line. Reads through safe_memory only.
bool code_still_valid(PyObject* code, const CodeInfo& snapshot);

/// The same check on `header`, the object's header already read (its first
/// offsetof(PyCodeObject, co_code_adaptive) bytes); the code registry passes the object itself
/// where no fault-safe read is available.
bool code_header_matches(PyObject* code, const void* header, const CodeInfo& snapshot);

}  // namespace dlpt
