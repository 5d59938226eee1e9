// Per-thread capture state: the aten op stack, dlpt scopes, the cached Python path and caches of
// tree lookups. Only its own thread touches a ThreadState (no locks), with one exception noted
// below. It is reset lazily when a new session starts (generation check).
#pragma once

#include <Python.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "../cct/tree.h"
#include "../session.h"
#include "python_stack.h"

namespace dlpt {

/// One aten op (or skipped wrapper) running on this thread.
struct OpEntry {
  uint64_t handle;      // RecordFunction handle, to pair start and end
  NodeId op_node;       // where `calls` is counted (kNoNode for wrappers shown as their phase)
  NodeId ctx_node;      // where its CPU self time, child ops and kernel launches go
  uint64_t start_ns;
  uint64_t child_ns;    // wall time of child ops, subtracted to get self time
  bool pending_graft;   // engine wrapper waiting for its node's record to say where it goes
  int py_depth;         // >= 0: a torch.compile region; Python frames deeper than this many
                        // (Inductor's generated code) are captured beneath it. -1 otherwise.
};

struct ScopeEntry {
  const void* entry_frame;  // the frame that entered the scope; the scope node goes above it
  uint32_t name_id;
  uint64_t rf_handle;       // USER_SCOPE RecordFunction that opened it (0 for dlpt.scope)
};

struct CachedFrame {
  const void* frame;
  PyObject* code;
  int lasti;
  NodeId node;
};

class ThreadState {
 public:
  /// [MT] This thread's state, reset if it belongs to an older session.
  static ThreadState& get(Session& s);

  /// Child lookup through a thread-local cache (nodes are immutable once created).
  NodeId child(NodeId parent, NodeKind kind, uint64_t a, uint64_t b = 0);

  /// Innermost node of the current Python path (frames and scopes), or kNoNode without frames.
  /// `depth` receives the number of frames seen.
  NodeId python_context(size_t* depth = nullptr);
  /// The frames deeper than `depth` (those entered since a compiled region started), as a path
  /// under `base`; `base` itself when there are none.
  NodeId python_subpath(NodeId base, size_t depth);
  /// Where a GPU launch / sync made now belongs: the running op, else the Python path, else
  /// this thread's own node.
  NodeId launch_context();
  NodeId thread_node();
  /// Interned id of an op/scope name (cached by pointer, verified by content).
  uint32_t name_id(const char* name);

  Session* session = nullptr;
  uint64_t generation = 0;
  uint64_t rf_thread_id = 0;           // RecordFunction's id of this thread
  std::vector<OpEntry> ops;
  std::vector<ScopeEntry> scopes;
  NodeId last_backward_anchor = kNoNode;  // last forward op a backward op was grafted under
  SeqRanges* seq_ranges = nullptr;        // this thread's forward ranges (owned by the session)

  // CUPTI API nesting (runtime calls wrap driver calls): only the outermost call is timed.
  int api_depth = 0;
  uint64_t api_start_ns = 0;
  NodeId api_context = kNoNode;
  bool api_submitted = false;  // the outermost call was counted as a launch awaiting activity

 private:
  void reset(Session& s);
  NodeId build_path(const RawFrame* frames, size_t n);
  NodeId frame_child(NodeId parent, const RawFrame& f);

  uint64_t scopes_version_ = 0;     // bumped on scope push/pop; invalidates path_cache_
  uint64_t cached_scopes_version_ = ~0ull;
  std::vector<CachedFrame> path_cache_;  // outermost first
  NodeId thread_node_ = kNoNode;
  std::unordered_map<NodeKey, NodeId, NodeKeyHash> child_cache_;
  struct NameCacheEntry {
    uint32_t id;
    std::string text;
  };
  static constexpr size_t kMaxNameCache = 1u << 14;
  std::unordered_map<const char*, NameCacheEntry> name_cache_;
  std::unordered_map<std::string, uint32_t> ids_by_text_;

  friend void push_scope(const char* name, size_t skip_frames);
  friend void pop_scope();
  friend void push_user_scope(ThreadState& ts, const char* name, uint64_t handle);
  friend bool pop_user_scope(ThreadState& ts, uint64_t handle);
};

/// [MT] A torch.profiler.record_function (USER_SCOPE) region opened outside any op: like
/// dlpt.scope, placed above the innermost frame that is not torch's own.
void push_user_scope(ThreadState& ts, const char* name, uint64_t handle);
/// [MT] Closes it if `handle` opened the innermost scope; false otherwise.
bool pop_user_scope(ThreadState& ts, uint64_t handle);

/// [GIL] dlpt.scope entry/exit on the calling thread: the scope's node is placed above the frame
/// `skip_frames` levels up from the innermost one (the user's frame that entered it).
void push_scope(const char* name, size_t skip_frames);
void pop_scope();

}  // namespace dlpt
