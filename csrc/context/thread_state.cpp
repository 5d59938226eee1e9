#include "thread_state.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>

namespace dlpt {

namespace {

/// The calling thread's state and the session generation it belongs to. Initial-exec TLS: the
/// extension is loaded once, early (import dlpt), and two words fit the static TLS surplus that
/// glibc keeps for dlopen'ed libraries.
struct TlsSlot {
  uint64_t generation;
  ThreadState* state;
};
thread_local TlsSlot t_slot __attribute__((tls_model("initial-exec"))) = {0, nullptr};

/// [MT: the ending thread] A thread that had a state ends: give the state back to its session
/// (if that session is still alive: retire_thread_state checks). Static TLS is still readable
/// while pthread key destructors run.
void on_thread_exit(void*) {
  const TlsSlot slot = t_slot;
  t_slot = TlsSlot{0, nullptr};
  if (slot.state != nullptr) retire_thread_state(slot.generation, slot.state);
}

/// The key whose destructor tells dlpt a thread ended (its value only needs to be non-null).
pthread_key_t exit_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    pthread_key_create(&k, on_thread_exit);
    return k;
  }();
  return key;
}

}  // namespace

ThreadState& ThreadState::get(Session& s) {
  TlsSlot& slot = t_slot;
  if (slot.generation == s.generation) return *slot.state;
  ThreadState* ts = s.attach_thread(static_cast<uint64_t>(syscall(SYS_gettid)));
  slot = TlsSlot{s.generation, ts};
  pthread_setspecific(exit_key(), ts);  // once per thread and session: not on the hot path
  return *ts;
}

ThreadState* ThreadState::find(const Session& s) {
  const TlsSlot& slot = t_slot;
  return slot.generation == s.generation ? slot.state : nullptr;
}

ThreadState::ThreadState(Session& s, uint64_t tid)
    : session(s), generation(s.generation), os_tid(tid), names_(s.tree.strings) {
  anchors_.set_min_inner(s.opts.bench.anchor_min_inner);
}

void ThreadState::recycle(uint64_t tid) {
  os_tid = tid;
  rf_thread_id = 0;
  last_backward_anchor = kNoNode;
  seq_ranges = nullptr;
  while (!scopes_.empty()) pop_scope();
  for (size_t i = 0; i < ScopeMirror::kMaxScopes * 2; ++i) scope_mirror.pop();  // overflow too
  api_depth = 0;
  api_start = 0;
  api_context = kNoNode;
  api_submitted = false;
  api_generation = 0;
  depth_ = 0;
  open_ops_ = 0;
  learner_ = -1;
  deferred_ = -1;
  forget_paths();
  requested_.fill(nullptr);
  thread_node_ = kNoNode;  // the thread node is keyed by the OS thread id
}

void ThreadState::forget_paths() {
  scopes_changed();
  root_sites_.clear();
  region_sites_.clear();
  anchor_sites_.clear();
}

void ThreadState::scopes_changed() {
  root_path_.invalidate();
  region_path_.invalidate();
  anchors_.clear();
  anchor_path_.invalidate();
}

uint64_t ThreadState::scope_state_after(const void* entry_frame, uint32_t name_id) {
  const ScopeStateKey key{scope_state_, name_id, entry_frame};
  const auto it = scope_states_.find(key);
  if (it != scope_states_.end()) return it->second;
  const uint64_t id = next_scope_state_++;
  if (scope_states_.size() < kMaxScopeStates) scope_states_.emplace(key, id);
  return id;
}

OpEntry& ThreadState::push(EntryKind kind, const void* rf) {
  OpEntry& e = stack_[depth_++];
  e = OpEntry{};
  e.rf = rf;
  e.kind = kind;
  if (kind != EntryKind::TopScope) ++open_ops_;
  return e;
}

void ThreadState::pop() {
  --depth_;
  if (stack_[depth_].kind != EntryKind::TopScope) --open_ops_;
  if (learner_ == static_cast<int>(depth_)) learner_ = -1;
  if (deferred_ == static_cast<int>(depth_)) deferred_ = -1;
}

OpEntry& ThreadState::push_deferred(const void* rf, uint32_t name_id, int64_t seq) {
  deferred_frame_ = session.opts.python_frames ? innermost_python_frame() : nullptr;
  deferred_seq_ = seq;
  OpEntry& e = push(EntryKind::Op, rf);
  e.name_id = name_id;
  deferred_ = static_cast<int>(depth_) - 1;
  deferred_ops.add(1);
  return e;
}

void ThreadState::resolve_deferred() {
  if (deferred_ < 0) return;
  const size_t at = static_cast<size_t>(deferred_);
  deferred_ = -1;
  OpEntry& e = stack_[at];
  // No frame at its start (a thread without Python): none below it now either.
  const NodeId py = deferred_frame_ != nullptr ? python_context(nullptr, deferred_frame_) : kNoNode;
  op_nodes(py != kNoNode ? py : thread_node(), e.name_id, &e.op_node, &e.ctx_node);
  note_forward_op(deferred_seq_, e.op_node);
  // Records opened inside it since (not recorded: a recorded one would have resolved it) take
  // its context, as they took their parent's at their start.
  for (size_t i = at + 1; i < depth_; ++i) {
    if (stack_[i].ctx_node == kNoNode) stack_[i].ctx_node = stack_[i - 1].ctx_node;
  }
}

void ThreadState::note_forward_op(int64_t seq, NodeId op) {
  if (seq < 0) return;
  if (seq_ranges == nullptr) seq_ranges = &session.seq_ranges.get(rf_thread_id);
  seq_ranges->add(seq, op);
  if (session.last_forward_thread.load(std::memory_order_relaxed) != rf_thread_id) {
    session.last_forward_thread.store(rf_thread_id, std::memory_order_relaxed);
  }
}

NodeId ThreadState::child(NodeId parent, NodeKind kind, uint64_t a, uint64_t b) {
  const NodeKey key{parent, kind, a, b};
  NodeId id = children_.find(key);
  if (id != kNoNode) return id;
  id = session.tree.child(key);
  children_.put(key, id);
  return id;
}

void ThreadState::op_nodes(NodeId parent, uint32_t name_id, NodeId* op, NodeId* forward) {
  if (session.opts.bench.op_memo && op_memo_.find(parent, name_id, op, forward)) return;
  *op = child(parent, NodeKind::Op, name_id);
  *forward = phase(*op, Phase::Forward);
  op_memo_.put(parent, name_id, *op, *forward);
}

NodeId ThreadState::thread_node() {
  if (thread_node_ == kNoNode) thread_node_ = child(kRootNode, NodeKind::Thread, os_tid);
  return thread_node_;
}

NodeId ThreadState::frame_child(NodeId parent, const RawFrame& f) {
  const NodeKey key{parent, NodeKind::Frame, reinterpret_cast<uint64_t>(f.code), static_cast<uint64_t>(f.lasti)};
  NodeId id = children_.find(key);
  if (id != kNoNode) return id;
  id = session.tree.child(key);
  children_.put(key, id);
  session.codes.note(f.code);
  return id;
}

NodeId ThreadState::frame_node(NodeId parent, const RawFrame& f) {
  for (const ScopeEntry& sc : scopes_) {
    if (sc.entry_frame == f.frame) parent = child(parent, NodeKind::Scope, sc.name_id);
  }
  return frame_child(parent, f);
}

NodeId ThreadState::python_context(size_t* depth, const void* from) {
  if (depth) *depth = 0;
  if (!session.opts.python_frames) return kNoNode;
  SampledParts parts(sampling);
  RawFrame raw[kMaxPythonFrames];
  root_prefetch_.issue();  // the last walk's frames, requested together (frame_prefetch.h)
  int hit = -1;            // to the root, or to an anchor whose outer path is known
  size_t n = anchors_.walk(raw, kMaxPythonFrames, &hit, from);
  if (hit >= 0 && anchors_.at(hit).depth + n > kMaxPythonFrames) {
    // Deeper than a capture keeps: a walk from the root keeps the innermost frames only, and
    // the same site must map to the same path either way.
    anchors_.clear();
    hit = -1;
    n = walk_python_frames(raw, kMaxPythonFrames, nullptr, from);
  }
  root_prefetch_.remember(raw, n);
  python_walks.add(1);
  frames_walked.add(n);
  parts.mark(walk_read_ticks);
  uint32_t usable = 0;
  NodeId node = kNoNode;
  // A site seen before: its node without decoding a frame or looking one up (site_cache.h).
  if (hit >= 0) {
    anchored_walks.add(1);
    const FrameAnchors::Anchor& a = anchors_.at(hit);
    uint32_t inner = 0;
    if (!anchor_sites_.find(raw, n, a.base, scope_state_, &node, &inner)) {
      site_misses.add(1);
      node = anchor_path_.build(*this, raw, n, 0, a.base, &inner);
      anchor_sites_.put(raw, n, a.base, scope_state_, node, inner);
    }
    usable = a.usable_outer + inner;
  } else if (n && !root_sites_.find(raw, n, kRootNode, scope_state_, &node, &usable)) {
    site_misses.add(1);
    node = root_path_.build(*this, raw, n, 0, kRootNode, &usable);
    root_sites_.put(raw, n, kRootNode, scope_state_, node, usable);
  }
  parts.mark(walk_site_ticks);
  if (activations::enabled()) {
    take_anchor(raw, n, hit);
    parts.mark(walk_anchor_ticks);
  }
  if (depth) *depth = usable;
  return usable ? node : kNoNode;
}

void ThreadState::take_anchor(const RawFrame* raw, size_t n, int hit) {
  if (hit < 0 && n >= kMaxPythonFrames) return;  // maybe cut short: the depths are not from the root
  const int d = anchors_.candidate(raw, n, hit);
  if (d < 0) return;
  const size_t p0 = anchors_.first_depth(hit);
  const size_t k = static_cast<size_t>(d) - p0;  // its index from the outermost frame walked (>= 1)
  const void* frame = raw[n - 1 - k].frame;
  activations::Mark m;
  switch (activations::take_mark(frame, &m)) {
    case activations::MarkResult::kTaken:
      break;
    case activations::MarkResult::kNever:
      anchors_.reject(static_cast<size_t>(d));  // not tried again while it stays on the chain
      return;
    case activations::MarkResult::kNotMonitored: {
      // Ask once in a while (the request is registered by a pending call).
      const void* code = frame_code_of(frame);
      for (const void* c : requested_) {
        if (c == code) return;
      }
      requested_[requested_next_++ % requested_.size()] = code;
      activations::request(const_cast<PyObject*>(static_cast<const PyObject*>(code)));
      return;
    }
  }
  // The path up to its caller, from the cache of the kind of walk this was (built for this
  // chain now if a site-cache hit skipped it).
  NodeId base = kNoNode;
  uint32_t usable = 0;
  if (hit >= 0) {
    const FrameAnchors::Anchor a = anchors_.at(hit);
    anchor_path_.build(*this, raw, n, 0, a.base, nullptr);
    if (!anchor_path_.entry(k - 1, &base, &usable)) return;
    usable += a.usable_outer;
  } else {
    root_path_.build(*this, raw, n, 0, kRootNode, nullptr);
    if (!root_path_.entry(k - 1, &base, &usable)) return;
  }
  anchors_.add(m, base, usable, static_cast<uint32_t>(d));
  anchors_taken.add(1);
}

NodeId ThreadState::python_subpath(NodeId base, const void* since) {
  if (!session.opts.python_frames) return base;
  // Only the frames newer than the region's start: a launch from Inductor's generated code
  // walks a handful of frames, not the whole stack.
  SampledParts parts(sampling);
  RawFrame raw[kMaxPythonFrames];
  const size_t n = walk_python_frames(raw, kMaxPythonFrames, since);
  parts.mark(walk_read_ticks);
  if (n == 0) return base;
  NodeId node = kNoNode;
  uint32_t usable = 0;
  // A launch site of this region seen before: no frame decoded (site_cache.h).
  if (!region_sites_.find(raw, n, base, scope_state_, &node, &usable)) {
    site_misses.add(1);
    node = region_path_.build(*this, raw, n, 0, base, nullptr);
    region_sites_.put(raw, n, base, scope_state_, node, 0);
  }
  parts.mark(walk_site_ticks);
  return node;
}

NodeId ThreadState::launch_context() {
  if (deferred_ >= 0) {  // a lean op's first launch: its path now (push_deferred)
    resolve_deferred();
    deferred_at_launch.add(1);
  }
  if (depth_ > 0 && stack_[depth_ - 1].ctx_node != kNoNode) {
    const OpEntry& top = stack_[depth_ - 1];
    return top.region ? python_subpath(top.ctx_node, top.region_frame) : top.ctx_node;
  }
  const NodeId py = python_context();
  if (py != kNoNode) return py;
  if (last_backward_anchor != kNoNode) return phase(last_backward_anchor, Phase::Backward);
  return thread_node();
}

void ThreadState::push_scope(const void* entry_frame, uint32_t name_id) {
  const uint64_t state = scope_state_after(entry_frame, name_id);
  scopes_.push_back(ScopeEntry{entry_frame, name_id, scope_state_});
  scope_state_ = state;
  scope_mirror.push(entry_frame, name_id);
  scopes_changed();
}

void ThreadState::pop_scope() {
  if (!scopes_.empty()) {
    scope_state_ = scopes_.back().outer_state;
    scopes_.pop_back();
    scope_mirror.pop();
  }
  scopes_changed();
}

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

void push_user_scope(ThreadState& ts, uint32_t name_id) {
  // The scope goes above the frame that opened it: the user's `with record_function(...)` line,
  // or, for regions torch opens itself (Optimizer.step), torch's frame under the user's call.
  RawFrame frames[kMaxPythonFrames];
  const size_t n = capture_python_frames(frames, kMaxPythonFrames);
  const void* entry = nullptr;
  for (size_t i = 0; i < n && entry == nullptr; ++i) {
    if (!is_record_function_plumbing(frames[i].code)) entry = frames[i].frame;
  }
  ts.push_scope(entry, name_id);
}

void push_scope(const char* name, size_t skip_frames) {
  Session* s = current_session();
  if (s == nullptr) return;
  ThreadState& ts = ThreadState::get(*s);
  ts.push_scope(python_frame_at(skip_frames), ts.name_id(name));
}

void pop_scope() {
  Session* s = current_session();
  if (s == nullptr) return;
  ThreadState& ts = ThreadState::get(*s);
  ts.pop_scope();
}

}  // namespace dlpt
