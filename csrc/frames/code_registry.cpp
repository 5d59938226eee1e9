#include "code_registry.h"

#include "safe_memory.h"

namespace dlpt {

namespace {
// Only touched under the GIL (describe): plain counters.
CodeRegistry::LookupCost g_cost;

std::string utf8(PyObject* s) {
  if (s == nullptr || !PyUnicode_Check(s)) return "?";
  const char* c = PyUnicode_AsUTF8(s);
  if (c == nullptr) {
    PyErr_Clear();
    return "?";
  }
  return c;
}
}  // namespace

CodeRegistry::~CodeRegistry() {
  // References are released explicitly under the GIL (release_all); a registry destroyed without
  // the GIL (interpreter shutdown) leaks them on purpose rather than touching refcounts.
}

void CodeRegistry::note(PyObject* code) {
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  std::lock_guard<std::mutex> lock(mu_);
  Snapshot snap;
  snap.filename = co->co_filename;
  snap.name = co->co_name;
  snap.firstlineno = co->co_firstlineno;
  snap.units = static_cast<uint32_t>(Py_SIZE(co));
  auto [it, inserted] = codes_.try_emplace(code, Entry{State::Pending, snap});
  if (!inserted) return;
  if (PyGILState_Check()) {
    Py_INCREF(code);
    it->second.state = State::Owned;
  } else {
    pending_.push_back(code);
  }
}

void CodeRegistry::drain() {
  std::lock_guard<std::mutex> lock(mu_);
  for (PyObject* code : pending_) {
    Entry& e = codes_[code];
    if (still_the_same(code, e.snap)) {
      Py_INCREF(code);
      e.state = State::Owned;
    } else {
      e.state = State::Lost;
    }
  }
  pending_.clear();
}

bool CodeRegistry::still_the_same(PyObject* code, const Snapshot& snap) {
  // Read fault-safely: its memory may have been freed, even handed back to the system. Where
  // no fault-safe read is available (a seccomp filter refusing both ways), the header is read in
  // place, as the object's memory is most likely still mapped, with the same checks.
  if (!safe_memory::init(nullptr)) return code_header_matches(code, code, snap);
  return code_still_valid(code, snap);
}

int CodeRegistry::line_of(PyObject* code, LineTable& t, int lasti) {
  ++g_cost.lookups;
  if (lasti < 0) return -1;
  if (!t.built) {
    t.built = true;
    // co_lines() yields (start, end, line or None) for consecutive address ranges, in order:
    // exactly the ranges PyCode_Addr2Line walks.
    PyObject* it = PyObject_CallMethod(code, "co_lines", nullptr);
    PyObject* item = nullptr;
    while (it != nullptr && (item = PyIter_Next(it)) != nullptr) {
      int start = 0, end = 0;
      PyObject* line = nullptr;
      if (PyArg_ParseTuple(item, "iiO", &start, &end, &line)) {
        t.starts.push_back(start);
        t.ends.push_back(end);
        const long number = line == Py_None ? -1 : PyLong_AsLong(line);
        t.lines.push_back(static_cast<int>(number));
        ++g_cost.entries_read;
      }
      Py_DECREF(item);
    }
    Py_XDECREF(it);
    if (PyErr_Occurred()) PyErr_Clear();  // a partial table answers what it has; the rest -1
  }
  // The last range starting at or before lasti.
  size_t lo = 0, hi = t.starts.size();
  while (lo < hi) {
    ++g_cost.search_steps;
    const size_t mid = lo + (hi - lo) / 2;
    if (t.starts[mid] <= lasti) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0 || lasti >= t.ends[lo - 1]) return -1;
  return t.lines[lo - 1];
}

bool CodeRegistry::describe(PyObject* code, int lasti, std::string* file, std::string* func, int* line) {
  LineTable* table = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = codes_.find(code);
    if (it == codes_.end() || !confirm(code, it->second)) return false;
    // Entries are never erased before release_all: the table stays put (and only the GIL
    // holder, us, reads or builds it).
    table = &it->second.lines;
  }
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  *file = utf8(co->co_filename);
  *func = utf8(co->co_qualname ? co->co_qualname : co->co_name);
  *line = line_of(code, *table, lasti);
  if (*line < 0) *line = co->co_firstlineno;
  return true;
}

bool CodeRegistry::confirm(PyObject* code, Entry& e) {
  // A reference of ours keeps the object alive, so this check cannot fail unless something broke
  // that promise; if it does, its frames are named lost and the reference is never dropped,
  // rather than read or written through memory that is no longer the object (a freed block's
  // header is the allocator's: one GPU run crashed describing such an object, in 1 of 26, before
  // the sampler's wrap-around fix; not seen since). One fault-safe read per code object, not per
  // frame node: a function of 100k lines has 100k nodes.
  if (e.state != State::Owned) return false;
  if (!e.confirmed) {
    if (!still_the_same(code, e.snap)) {
      e.state = State::Lost;
      return false;
    }
    e.confirmed = true;
  }
  return true;
}

CodeRegistry::LookupCost CodeRegistry::lookup_cost() { return g_cost; }

void CodeRegistry::release_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [code, e] : codes_) {
    if (confirm(code, e)) Py_DECREF(code);
  }
  codes_.clear();
  pending_.clear();
}

}  // namespace dlpt
