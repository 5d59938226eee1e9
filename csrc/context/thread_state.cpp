#include "thread_state.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>

namespace dlpt {


ThreadState& ThreadState::get(Session& s) {
  // Owned by the thread; destroyed at thread exit. Only this thread reads or writes it.
  thread_local std::unique_ptr<ThreadState> ts;
  if (!ts) ts = std::make_unique<ThreadState>();
  if (ts->generation != s.generation) ts->reset(s);
  return *ts;
}

void ThreadState::reset(Session& s) {
  session = &s;
  generation = s.generation;
  ops.clear();
  scopes.clear();
  last_backward_anchor = kNoNode;
  seq_ranges = nullptr;
  api_depth = 0;
  api_submitted = false;
  path_cache_.clear();
  cached_scopes_version_ = ~0ull;
  thread_node_ = kNoNode;
  child_cache_.clear();
  name_cache_.clear();
  ids_by_text_.clear();
}

NodeId ThreadState::child(NodeId parent, NodeKind kind, uint64_t a, uint64_t b) {
  NodeKey key{parent, kind, a, b};
  auto it = child_cache_.find(key);
  if (it != child_cache_.end()) return it->second;
  NodeId id = session->tree.child(key);
  child_cache_.emplace(key, id);
  return id;
}

uint32_t ThreadState::name_id(const char* name) {
  // Dispatcher op names live as long as the op: a pointer hit (confirmed by the text) is the fast
  // path. Autograd node names are fresh strings on every call, so their pointers never repeat;
  // they are found by content, and their pointers are not cached (that map would grow forever).
  auto it = name_cache_.find(name);
  if (it != name_cache_.end() && it->second.text == name) return it->second.id;
  std::string text(name);
  auto by_text = ids_by_text_.find(text);
  if (by_text != ids_by_text_.end()) return by_text->second;
  uint32_t id = session->tree.strings.intern(text);
  ids_by_text_.emplace(text, id);
  // First sighting of this text: remember the pointer too, in case it is a stable one.
  if (name_cache_.size() < kMaxNameCache) name_cache_[name] = NameCacheEntry{id, std::move(text)};
  return id;
}

NodeId ThreadState::thread_node() {
  if (thread_node_ == kNoNode) {
    thread_node_ = child(kRootNode, NodeKind::Thread, static_cast<uint64_t>(syscall(SYS_gettid)));
  }
  return thread_node_;
}

NodeId ThreadState::python_context(size_t* depth) {
  RawFrame frames[kMaxPythonFrames];
  size_t n = capture_python_frames(frames, kMaxPythonFrames);
  if (depth) *depth = n;
  if (n == 0) return kNoNode;
  return build_path(frames, n);
}

NodeId ThreadState::python_subpath(NodeId base, size_t depth) {
  RawFrame frames[kMaxPythonFrames];
  size_t n = capture_python_frames(frames, kMaxPythonFrames);
  NodeId parent = base;
  for (size_t i = n > depth ? n - depth : 0; i-- > 0;) parent = frame_child(parent, frames[i]);
  return parent;
}

NodeId ThreadState::frame_child(NodeId parent, const RawFrame& f) {
  NodeKey key{parent, NodeKind::Frame, reinterpret_cast<uint64_t>(f.code), static_cast<uint64_t>(f.lasti)};
  auto it = child_cache_.find(key);
  if (it != child_cache_.end()) return it->second;
  NodeId id = session->tree.child(key);
  child_cache_.emplace(key, id);
  session->codes.note(f.code);
  return id;
}

NodeId ThreadState::build_path(const RawFrame* frames, size_t n) {
  // frames[] is innermost first; the tree path runs outermost first. Reuse the cached prefix:
  // the outer frames (main loop, train step, module call) rarely change between ops.
  if (cached_scopes_version_ != scopes_version_) {
    path_cache_.clear();
    cached_scopes_version_ = scopes_version_;
  }
  size_t common = 0;
  while (common < n && common < path_cache_.size()) {
    const RawFrame& f = frames[n - 1 - common];
    const CachedFrame& c = path_cache_[common];
    if (f.frame != c.frame || f.code != c.code || f.lasti != c.lasti) break;
    ++common;
  }
  path_cache_.resize(common);
  NodeId parent = common ? path_cache_.back().node : kRootNode;
  for (size_t i = common; i < n; ++i) {
    const RawFrame& f = frames[n - 1 - i];
    // A dlpt scope entered by this frame sits above it.
    for (const ScopeEntry& sc : scopes) {
      if (sc.entry_frame == f.frame) parent = child(parent, NodeKind::Scope, sc.name_id);
    }
    NodeId id = frame_child(parent, f);
    path_cache_.push_back(CachedFrame{f.frame, f.code, f.lasti, id});
    parent = id;
  }
  return parent;
}

NodeId ThreadState::launch_context() {
  if (!ops.empty() && ops.back().ctx_node != kNoNode) {
    const OpEntry& top = ops.back();
    return top.py_depth >= 0 ? python_subpath(top.ctx_node, static_cast<size_t>(top.py_depth)) : top.ctx_node;
  }
  NodeId py = python_context();
  if (py != kNoNode) return py;
  if (last_backward_anchor != kNoNode) return child(last_backward_anchor, NodeKind::Phase, 1);
  return thread_node();
}

void push_scope(const char* name, size_t skip_frames) {
  Session* s = current_session();
  if (s == nullptr) return;
  ThreadState& ts = ThreadState::get(*s);
  ts.scopes.push_back(ScopeEntry{python_frame_at(skip_frames), ts.name_id(name), 0});
  ++ts.scopes_version_;
}

void pop_scope() {
  Session* s = current_session();
  if (s == nullptr) return;
  ThreadState& ts = ThreadState::get(*s);
  if (!ts.scopes.empty()) ts.scopes.pop_back();
  ++ts.scopes_version_;
}

}  // namespace dlpt

namespace dlpt {

namespace {
/// [MT] Whether a code object belongs to torch's record_function plumbing (the frames between
/// the code that opened a USER_SCOPE region and the RecordFunction). Reads the filename's bytes
/// directly (compact ASCII strings store them inline): no allocation, no Python call.
bool is_record_function_plumbing(PyObject* code) {
  PyObject* fn = reinterpret_cast<PyCodeObject*>(code)->co_filename;
  if (fn == nullptr || !PyUnicode_Check(fn) || !PyUnicode_IS_COMPACT_ASCII(fn)) return false;
  const char* s = static_cast<const char*>(PyUnicode_DATA(fn));
  return std::strstr(s, "/torch/autograd/profiler") != nullptr || std::strstr(s, "/torch/_ops.py") != nullptr ||
         std::strstr(s, "/torch/profiler/") != nullptr;
}
}  // namespace

void push_user_scope(ThreadState& ts, const char* name, uint64_t handle) {
  // The scope goes above the frame that opened it: the user's `with record_function(...)` line,
  // or, for regions torch opens itself (Optimizer.step), torch's frame under the user's call.
  RawFrame frames[kMaxPythonFrames];
  size_t n = capture_python_frames(frames, kMaxPythonFrames);
  const void* entry = nullptr;
  for (size_t i = 0; i < n && entry == nullptr; ++i) {
    if (!is_record_function_plumbing(frames[i].code)) entry = frames[i].frame;
  }
  ts.scopes.push_back(ScopeEntry{entry, ts.name_id(name), handle});
  ++ts.scopes_version_;
}

bool pop_user_scope(ThreadState& ts, uint64_t handle) {
  if (ts.scopes.empty() || ts.scopes.back().rf_handle != handle) return false;
  ts.scopes.pop_back();
  ++ts.scopes_version_;
  return true;
}

}  // namespace dlpt
