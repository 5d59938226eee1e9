// Per-thread capture state: the stack of open records (aten ops, scopes), the cached Python
// path, caches of tree and name lookups, and this thread's CUDA API statistics.
//
// Thread contract: a ThreadState belongs to one thread and one session. Only its thread writes
// it; the session owns it (so it outlives its thread) and stop() reads the fields marked
// "read at stop" after capture has been switched off. When its thread ends (a pthread key's
// destructor), the state goes back to its session, which hands it to the next new thread
// (recycle): memory is bounded by the threads alive at once, not by every thread that ever ran
// an op. The "read at stop" counters keep summing across its threads; the caches of tree and
// name lookups stay valid (they depend on the session only), the rest is reset. It is reached
// through an initial-exec thread-local pointer: one %fs-relative load, no __tls_get_addr call,
// on every callback.
#pragma once

#include <Python.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "../cct/tree.h"
#include "../clock.h"
#include "../frames/frame_prefetch.h"
#include "../frames/python_stack.h"
#include "../session.h"
#include "child_cache.h"
#include "frame_anchors.h"
#include "op_names.h"
#include "op_node_memo.h"
#include "path_cache.h"
#include "scope_mirror.h"
#include "site_cache.h"

namespace dlpt {

/// What an entry of the record stack stands for.
enum class EntryKind : uint8_t {
  Op,        // an op (or a scope inside an op) with its own node; timed
  Wrapper,   // autograd's evaluate_function wrapper, placed once its node's record says where
  TopScope,  // a record_function region opened outside any op: pushed on the scope list
  Skip,      // a record that is not recorded (nested, plumbing): inherits its parent's context
};

/// One RecordFunction that started on this thread and has not ended.
struct OpEntry {
  const void* rf = nullptr;            // the RecordFunction: start and end callbacks get the same object
  NodeId op_node = kNoNode;            // where `calls` is counted (kNoNode: not counted)
  NodeId ctx_node = kNoNode;           // where its CPU self time, child ops and launches go
  uint64_t start = 0;                  // ticks at start (0: not timed)
  uint64_t child = 0;                  // ticks spent in timed child entries, subtracted for self time
  bool region = false;                 // a torch.compile region: the Python frames entered since it started
                                       // (Inductor's generated code) are captured beneath it
  const void* region_frame = nullptr;  // ... the innermost Python frame when it started
  uint32_t name_id = 0;                // learning entries: whose nested-record statistics to update
  uint32_t nested = 0;                 // learning entries: nested records seen below this entry
  EntryKind kind = EntryKind::Skip;
  bool learning = false;  // counts its nested records (see aten_ops.cpp, RecordFunction windows)
};

struct ScopeEntry {
  const void* entry_frame;  // the frame that entered the scope; the scope node goes above it
  uint32_t name_id;
  uint64_t outer_state;  // the thread's scope state before this scope was entered
};

/// Per-thread statistics of one watched CUDA API function. Single writer: relaxed atomics
/// (plain loads and stores, no locked instructions) so that stop() may read them.
struct ApiCounter {
  std::atomic<uint64_t> calls{0}, ticks{0}, min{UINT64_MAX}, max{0};
  void add(uint64_t t) {
    calls.store(calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    ticks.store(ticks.load(std::memory_order_relaxed) + t, std::memory_order_relaxed);
    if (t < min.load(std::memory_order_relaxed)) min.store(t, std::memory_order_relaxed);
    if (t > max.load(std::memory_order_relaxed)) max.store(t, std::memory_order_relaxed);
  }
};

/// A single-writer counter other threads may read at stop.
struct OwnedCounter {
  std::atomic<uint64_t> v{0};
  void add(uint64_t d) { v.store(v.load(std::memory_order_relaxed) + d, std::memory_order_relaxed); }
  uint64_t get() const { return v.load(std::memory_order_relaxed); }
};

/// Watched CUDA API functions get a compact index (see tracer.cpp); this many at most.
constexpr size_t kMaxWatchedApis = 192;  // CUDA 13 has 150 launch/copy/memset/sync variants

class ThreadState {
 public:
  static constexpr size_t kMaxDepth = 256;

  /// [MT] The calling thread's state for `s`, created on first use.
  static ThreadState& get(Session& s);
  /// [MT] The calling thread's state if it was created for `s`, else nullptr (no allocation).
  static ThreadState* find(const Session& s);

  ThreadState(Session& s, uint64_t os_tid);

  /// [MT: the new owning thread, under the session's thread registry lock] Makes a state whose
  /// thread ended the state of thread `tid`: per-thread context reset, counters and caches kept.
  void recycle(uint64_t tid);

  // -- the record stack ---------------------------------------------------------------------
  bool full() const { return depth_ == kMaxDepth; }
  bool empty() const { return depth_ == 0; }
  size_t depth() const { return depth_; }
  OpEntry& top() { return stack_[depth_ - 1]; }
  OpEntry& at(size_t i) { return stack_[i]; }
  /// Pushes a fresh entry of `kind` for `rf`.
  OpEntry& push(EntryKind kind, const void* rf);
  /// Pops the top entry (which the caller has read).
  void pop();
  /// No op open (only top-level scopes, or nothing): the next op record is an outermost op.
  bool no_open_op() const { return open_ops_ == 0; }
  /// The entry counting nested records for the outermost op being learned, if any.
  OpEntry* learner() { return learner_ >= 0 ? &stack_[static_cast<size_t>(learner_)] : nullptr; }
  void set_learner() { learner_ = static_cast<int>(depth_) - 1; }

  // -- lean ops (OpMode::Lean): an outermost op whose context waits for its first launch -----
  /// [MT] Pushes outermost forward op `name_id` without walking the Python stack: only the
  /// innermost frame now is kept (the op's caller, which cannot return before the op does, so
  /// its chain stays as it is). resolve_deferred() walks from it when a launch, a recorded
  /// nested op or the op's autograd node needs the path; `seq` is the op's forward sequence
  /// number (-1: none), recorded then (SeqRanges). At most one (an outermost op) at a time.
  OpEntry& push_deferred(const void* rf, uint32_t name_id, int64_t seq);
  /// [MT] The entry on top is the deferred op, still without a context.
  bool deferred_on_top() const { return deferred_ >= 0 && static_cast<size_t>(deferred_) + 1 == depth_; }
  int64_t deferred_seq() const { return deferred_seq_; }
  /// [MT] The deferred op's path now (walked from its caller's frame): its op and forward nodes,
  /// given to the records opened inside it since, and its sequence range. No-op without one.
  void resolve_deferred();
  /// [MT] Forward sequence numbers from `seq` on were created inside outermost op `op`
  /// (SeqRanges): backward ops are grafted under it. Nothing for seq < 0.
  void note_forward_op(int64_t seq, NodeId op);

  // -- lookups -------------------------------------------------------------------------------
  /// [MT] Child lookup through this thread's cache (nodes are immutable once created).
  NodeId child(NodeId parent, NodeKind kind, uint64_t a, uint64_t b = 0);
  /// [MT] The phase node `p` under `parent`.
  NodeId phase(NodeId parent, Phase p) { return child(parent, NodeKind::Phase, phase_key(p)); }
  /// [MT] An outermost op's node under `parent` and the op's forward phase (op_node_memo.h).
  void op_nodes(NodeId parent, uint32_t name_id, NodeId* op, NodeId* forward);
  uint32_t name_id(const char* name) { return names_.id(name); }
  NameInfo& name_info(uint32_t id) { return names_.info(id); }

  /// Innermost node of the current Python path (frames and scopes), or kNoNode without frames
  /// (or with Python-frame capture off). `depth` receives the number of user-visible frames.
  /// `from`: walk from this frame of the thread's (still running) instead of the innermost.
  NodeId python_context(size_t* depth = nullptr, const void* from = nullptr);
  /// The frames entered since frame `since` (a compiled region's start), as a path under `base`;
  /// `base` itself when there are none.
  NodeId python_subpath(NodeId base, const void* since);
  /// Where a GPU launch / sync made now belongs: the running op, else the Python path, else
  /// this thread's own node.
  NodeId launch_context();
  NodeId thread_node();
  /// The node of frame `f` under `parent`, with any scope entered by that frame in between.
  NodeId frame_node(NodeId parent, const RawFrame& f);

  // -- scopes (dlpt.scope and top-level record_function regions) ---------------------------
  void push_scope(const void* entry_frame, uint32_t name_id);
  void pop_scope();

  Session& session;
  const uint64_t generation;
  uint64_t os_tid;  // written under the session's thread registry lock only

  uint64_t rf_thread_id = 0;              // RecordFunction's id of this thread
  NodeId last_backward_anchor = kNoNode;  // last forward op a backward op was grafted under
  SeqRanges* seq_ranges = nullptr;        // this thread's forward ranges (owned by the session)
  ScopeMirror scope_mirror;               // scopes_ as the host sampler reads them (host/sampler.cpp)

  // -- CUDA API calls (tracer.cpp) -----------------------------------------------------------
  // Driver calls can nest (a driver entry point calling another): only the outermost is timed.
  int api_depth = 0;
  uint64_t api_start = 0;
  NodeId api_context = kNoNode;
  bool api_submitted = false;   // the outermost call was counted as a launch awaiting activity
  uint32_t api_generation = 0;  // Session::tracing_generation when the outermost call entered

  // -- read at stop ---------------------------------------------------------------------------
  OwnedCounter submitted;          // launches mapped and awaiting activity
  OwnedCounter op_records;         // RecordFunction callbacks run (start and end count once)
  OwnedCounter api_callbacks;      // CUPTI API callbacks run (enter and exit count once)
  OwnedCounter self_ticks;         // sampled time inside dlpt's callbacks, scaled to all calls
  OwnedCounter python_ticks;       // ... of which op starts walking Python frames (timed with the parts)
  OwnedCounter api_self_ticks;     // ... of which in CUDA API callbacks (the rest: op and memory ones)
  OwnedCounter window_ticks;       // time switching RecordFunction off and on (every switch)
  OwnedCounter python_walks;       // walks of the Python stack for a path from the root
  OwnedCounter frames_walked;      // ... the frames they read
  OwnedCounter anchored_walks;     // ... of them stopped at an anchor (frame_anchors.h)
  OwnedCounter op_end_ticks;       // sampled time in op end callbacks
  OwnedCounter walk_read_ticks;    // sampled time of every walk (op starts, launches) reading frames
  OwnedCounter walk_site_ticks;    // ... finding or building the chain's path
  OwnedCounter walk_anchor_ticks;  // ... choosing and taking anchors
  OwnedCounter site_misses;        // walks whose chain no site cache held (path built)
  OwnedCounter anchors_taken;      // anchors taken (frame_anchors.h)
  OwnedCounter op_start_ticks;     // sampled time in op start callbacks
  OwnedCounter outermost_ops;      // outermost forward ops started (each walks the Python stack if exact)
  OwnedCounter op_name_ticks;      // sampled: outermost records finding their name's id and flags
  OwnedCounter op_nodes_ticks;     // ... outermost forward ops finding their op and phase nodes
  OwnedCounter op_rest_ticks;      // ... and the rest of their start (record stack, sequence ranges, windows)
  // Lean op starts (OpMode::Lean):
  OwnedCounter deferred_ops;        // outermost forward ops started without a walk (lean ops)
  OwnedCounter deferred_at_launch;  // ... walked at a launch, allocation or recorded nested op inside
  OwnedCounter deferred_at_end;     // ... walked at their end: they made an autograd node, launched nothing
  std::array<ApiCounter, kMaxWatchedApis> apis;

  /// Self-time sampling: every kSelfSample-th callback is timed (see SelfTimer).
  static constexpr uint32_t kSelfSample = 32;
  uint32_t self_countdown = 1;
  /// The callback running now is one whose parts are timed (set by SelfTimer): the parts of a
  /// walk, of an op start. Another callback of kSelfSample than the one timed whole.
  bool sampling = false;

 private:
  NodeId frame_child(NodeId parent, const RawFrame& f);
  /// After a walk of raw[0..n) (from anchor `hit`, or the root): anchors the frame consecutive
  /// walks share, or asks for its code to be monitored (frame_anchors.h).
  void take_anchor(const RawFrame* raw, size_t n, int hit);
  void forget_paths();  // every cached path, site and anchor (the thread was recycled)
  /// A scope was entered or left: the last paths and the anchors hold nodes of the old scope
  /// state; the site caches stay (their key has the state).
  void scopes_changed();
  /// The id of the scope stack that entering scope (entry_frame, name_id) on top of the
  /// current one makes: the same stack gets the same id (site_cache.h).
  uint64_t scope_state_after(const void* entry_frame, uint32_t name_id);

  std::array<OpEntry, kMaxDepth> stack_;
  size_t depth_ = 0;
  int open_ops_ = 0;
  int learner_ = -1;
  int deferred_ = -1;                     // the deferred op's index on the record stack, or -1
  const void* deferred_frame_ = nullptr;  // ... the innermost Python frame at its start (nullptr: none)
  int64_t deferred_seq_ = -1;             // ... its forward sequence number
  std::vector<ScopeEntry> scopes_;
  // The scope state: 0 with no scope open; else an id of the exact stack of open scopes (each
  // (outer state, entry frame, name) interned once). Past kMaxScopeStates stacks, a new stack
  // gets a fresh id each time (never equal to one cached: a miss, never a wrong path).
  static constexpr size_t kMaxScopeStates = 4096;
  struct ScopeStateKey {
    uint64_t outer;
    uint32_t name_id;
    const void* entry_frame;
    bool operator==(const ScopeStateKey& o) const {
      return outer == o.outer && name_id == o.name_id && entry_frame == o.entry_frame;
    }
  };
  struct ScopeStateHash {
    size_t operator()(const ScopeStateKey& k) const {
      return std::hash<const void*>{}(k.entry_frame) ^ (static_cast<size_t>(k.outer) * 0x9E3779B97F4A7C15ull) ^
             (static_cast<size_t>(k.name_id) << 17);
    }
  };
  uint64_t scope_state_ = 0;
  uint64_t next_scope_state_ = 1;  // 64 bits: fresh ids never wrap around to one in use
  std::unordered_map<ScopeStateKey, uint64_t, ScopeStateHash> scope_states_;
  PathCache root_path_;  // the Python path from the root
  // Sizes (sets of two chains, four for regions): a compiled step launches each of its few
  // hundred kernels from its own line of the generated code (a compiled GPT's forward and
  // backward: ~400 sites); the 256 chains these caches held before evicted sites every step.
  // Memory: 16 bytes per frame of each chain (root chains are the whole stack: ~500 KiB at depth
  // 60 when full); a slot with 8 frames inline is ~180 bytes (anchor sites ~90 KiB, region sites
  // ~360 KiB a thread).
  SiteCache<256> root_sites_;               // ... of every launch site seen, by exact frame chain (before root_path_)
  FramePrefetch root_prefetch_;             // the frames of the last walk from the root
  FrameAnchors anchors_;                    // where a walk from the root may stop (frames/activations.h)
  PathCache anchor_path_;                   // the frames inward of an anchor, under its caller's node
  SiteCache<256, 8> anchor_sites_;          // ... of every chain seen inward of an anchor (before anchor_path_)
  std::array<const void*, 8> requested_{};  // codes this thread asked to monitor lately
  size_t requested_next_ = 0;
  PathCache region_path_;  // frames under the innermost torch.compile region
  // Four ways: a compiled GPT's ~400 sites in 512 sets of two left ~20 sets with three or more
  // sites, which evicted each other every step (37-45 misses a step on an H100, 2026-11-27).
  SiteCache<512, 8, 4> region_sites_;  // ... of every launch site seen under a region's node (before region_path_)
  NodeId thread_node_ = kNoNode;
  ChildCache children_;
  OpNodeMemo op_memo_;  // before children_ at outermost op starts (bench switch: DLPT_OP_MEMO=0)
  OpNames names_;
};

/// [MT] The parts of a sampled callback (ThreadState::sampling): each mark() adds the ticks
/// since the last mark (or skip) to a part's counter, scaled like SelfTimer's. Does nothing in
/// callbacks that are not sampled.
class SampledParts {
 public:
  explicit SampledParts(bool on) : last_(on ? ticks() : 0) {}
  void mark(OwnedCounter& part) {
    if (last_ == 0) return;
    const uint64_t now = ticks();
    part.add((now - last_) * ThreadState::kSelfSample);
    last_ = now;
  }

 private:
  uint64_t last_;
};

/// [MT] Times every kSelfSample-th dlpt callback on this thread, end to end, and adds the time
/// scaled by kSelfSample: an estimate of what dlpt's own callback code costs, for the report.
/// The parts of a callback (SampledParts: a walk's reading, site and anchors; an op start's name,
/// nodes and rest) are timed in another callback of kSelfSample, half-way between two timed
/// whole: their own TSC reads (up to ten in an op start) would otherwise be counted in the
/// self time they are meant to split. Both only while the session is recording.
class SelfTimer {
 public:
  /// `part`: a counter that also takes this callback's time (which kind of callback it was).
  explicit SelfTimer(ThreadState& ts, OwnedCounter* part = nullptr) : ts_(ts), part_(part) {
    const uint32_t left = --ts.self_countdown;
    if (left != 0 && left != ThreadState::kSelfSample / 2) return;
    if (!ts.session.collecting.load(std::memory_order_relaxed)) {
      if (left == 0) ts.self_countdown = ThreadState::kSelfSample;
      return;
    }
    if (left == 0) {
      ts.self_countdown = ThreadState::kSelfSample;
      start_ = ticks();
    } else {
      ts.sampling = true;
      parts_ = true;
    }
  }
  ~SelfTimer() {
    if (parts_) ts_.sampling = false;
    if (start_ == 0) return;
    const uint64_t t = (ticks() - start_) * ThreadState::kSelfSample;
    ts_.self_ticks.add(t);
    if (part_ != nullptr) part_->add(t);
  }
  /// Whether this callback's parts are timed (SampledParts; not the callback whole).
  bool parts_sampled() const { return parts_; }
  SelfTimer(const SelfTimer&) = delete;
  SelfTimer& operator=(const SelfTimer&) = delete;

 private:
  ThreadState& ts_;
  OwnedCounter* part_;
  uint64_t start_ = 0;
  bool parts_ = false;
};

/// [MT] A torch.profiler.record_function (USER_SCOPE) region opened outside any op: like
/// dlpt.scope, placed above the innermost frame that is not torch's own.
void push_user_scope(ThreadState& ts, uint32_t name_id);

/// [GIL] dlpt.scope entry/exit on the calling thread: the scope's node is placed above the frame
/// `skip_frames` levels up from the innermost one (the user's frame that entered it).
void push_scope(const char* name, size_t skip_frames);
void pop_scope();

}  // namespace dlpt
