// Keeps the code objects that appear in the tree alive until they are symbolised.
//
// Frames are captured without the GIL, so the first sighting of a code object cannot take a
// reference. If the GIL happens to be held (ops called from C code that kept it) the reference is
// taken at once; otherwise the object is queued and referenced at the next drain (every training
// step and at stop), after checking it is still the same code object. A code object is only freed
// when its function or module is deleted, which between two steps is rare; if it happens, its
// frames show as "<code freed during profiling>" instead of a wrong line.
#pragma once

#include <Python.h>

#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

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

 private:
  struct Snapshot {
    PyObject* filename;
    PyObject* name;
    int firstlineno;
  };
  enum class State { Pending, Owned, Lost };
  struct Entry {
    State state;
    Snapshot snap;
  };
  std::mutex mu_;
  std::unordered_map<PyObject*, Entry> codes_;
  std::vector<PyObject*> pending_;
};

}  // namespace dlpt
