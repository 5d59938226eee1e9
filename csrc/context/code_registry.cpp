#include "code_registry.h"

namespace dlpt {

namespace {
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
  auto [it, inserted] =
      codes_.try_emplace(code, Entry{State::Pending, {co->co_filename, co->co_name, co->co_firstlineno}});
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
    auto* co = reinterpret_cast<PyCodeObject*>(code);
    // Same object still there? (type, file and name objects, first line all unchanged)
    if (Py_TYPE(code) == &PyCode_Type && Py_REFCNT(code) > 0 && co->co_filename == e.snap.filename &&
        co->co_name == e.snap.name && co->co_firstlineno == e.snap.firstlineno) {
      Py_INCREF(code);
      e.state = State::Owned;
    } else {
      e.state = State::Lost;
    }
  }
  pending_.clear();
}

bool CodeRegistry::describe(PyObject* code, int lasti, std::string* file, std::string* func, int* line) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = codes_.find(code);
    if (it == codes_.end() || it->second.state != State::Owned) return false;
  }
  auto* co = reinterpret_cast<PyCodeObject*>(code);
  *file = utf8(co->co_filename);
  *func = utf8(co->co_qualname ? co->co_qualname : co->co_name);
  *line = PyCode_Addr2Line(co, lasti);
  if (*line < 0) *line = co->co_firstlineno;
  return true;
}

void CodeRegistry::release_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [code, e] : codes_) {
    if (e.state == State::Owned) Py_DECREF(code);
  }
  codes_.clear();
  pending_.clear();
}

}  // namespace dlpt
