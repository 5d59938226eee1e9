// Keeps the code objects that appear in the tree alive until they are symbolised.
//
// Frames are captured without the GIL, so the first sighting of a code object cannot take a
// reference. If the GIL happens to be held (ops called from C code that kept it) the reference is
// taken at once; otherwise the object is queued and referenced at the next drain (every training
// step and at stop), after checking it is still the same code object. A code object is only freed
// when its function or module is deleted, which between two steps is rare; if it happens, its
// frames show as "<code freed during profiling>" instead of a wrong line. That check reads the
// object fault-safely and wants a plausible reference count (frames/remote_stack.h, as the
// sampler's): a freed block keeps its type and fields under pymalloc, with the free-list link
// where the reference count was, so "type is code, refcount > 0" took freed memory for the
// object and Py_INCREF wrote into the allocator's free list (tests/native/test_freed_code.py).
//
// Lines are looked up at stop, once per frame node, through one line table per code object,
// built on its first lookup (co_lines(), read once) and binary-searched: O(log n) per node.
// PyCode_Addr2Line walks the code's line table from its start on every call (CPython 3.11-3.13
// keep no index unless tracing is on), which made stop quadratic in a function's length: one
// generated function of 100k one-op lines took 74 s to stop.
#pragma once

#include <Python.h>

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "remote_stack.h"

namespace dlpt {

class CodeRegistry {
 public:
  ~CodeRegistry();

  /// [MT] Called on the first sighting of `code` in a captured path (per thread).
  void note(PyObject* code);

  /// [GIL] Takes references to queued code objects.
  void drain();

  /// [GIL] file, function and line of (code, lasti). False if the code object was lost.
  bool describe(PyObject* code, int lasti, std::string* file, std::string* func, int* line);

  /// [GIL] Drops every reference (session discarded).
  void release_all();

  /// What line lookups cost, process-wide since import (tests/native/test_stop_linear.py):
  /// lookups made, line-table entries read while building tables, binary-search steps.
  struct LookupCost {
    uint64_t lookups = 0, entries_read = 0, search_steps = 0;
  };
  static LookupCost lookup_cost();

 private:
  /// What identifies the object a code pointer was first seen as (its file and name objects,
  /// first line and length: the fields code_still_valid compares).
  using Snapshot = CodeInfo;
  /// [GIL] Whether `code` is still the object `snap` was taken of.
  static bool still_the_same(PyObject* code, const Snapshot& snap);
  enum class State { Pending, Owned, Lost };
  /// Where each line starts: the address ranges of co_lines(), as their start offsets and lines
  /// (-1: no line), sorted by offset; ends_[i] is where range i ends.
  struct LineTable {
    bool built = false;
    std::vector<int> starts, ends, lines;
  };
  struct Entry {
    State state;
    Snapshot snap;
    LineTable lines;
    bool confirmed = false;  // Owned, and checked once more to be the object (confirm)
  };
  /// [GIL] Whether `e` is Owned and `code` still the object its reference was taken on, checked
  /// once per entry (a failed check makes it Lost).
  static bool confirm(PyObject* code, Entry& e);
  /// [GIL] The line of byte offset `lasti` in `table` (built from `code` on first use), or -1.
  static int line_of(PyObject* code, LineTable& table, int lasti);
  std::mutex mu_;
  std::unordered_map<PyObject*, Entry> codes_;
  std::vector<PyObject*> pending_;
};

}  // namespace dlpt
