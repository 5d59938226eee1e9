// The only translation unit that includes ATen: RecordFunction is all we need from torch, and
// keeping it to one small TU keeps the build to seconds.
//
// Thread contract: both callbacks run on the op's thread, usually without the GIL ([MT]); they
// touch only that thread's ThreadState plus the session's lock-free or internally locked parts.
//
// What a record costs. With a global callback installed, torch builds a RecordFunction for every
// op dispatched through the dispatcher, nested ones included, and calls us twice; that machinery
// alone costs about as much as everything dlpt does per record (see bench/floor.py). A training
// step has 5-15x more nested records (aten::t, aten::addmm under aten::linear, aten::mm under
// MmBackward0, ...) than outermost ones, and nothing about them is needed to put GPU time on
// lines: the outermost op already names the line, and kernels launched inside it land under it.
// So by default (CaptureOptions::nested_ops false) RecordFunction is switched off on the thread
// for the duration of each outermost op that is known to make nested records ("a window"), and
// back on at its end. Switching costs torch a rebuild of its thread-local callback cache: a
// mutex, a copy of the global callback list and a rebuild of every scope's cache, about 6,000
// instructions for the pair, as much as 6-7 records of its machinery (~940 instructions each;
// callgrind, torch 2.13 CPU). So each op name is first watched for kLearnCalls calls (its nested
// records are counted, not recorded) and only ops that made at least
// BenchSwitches::window_min_nested get a window (docs/overhead.md has the measurements). Only
// aten ops and their generated backward nodes may get one (kWindowable, op_names.h): Python
// autograd.Functions and custom ops run arbitrary code, collectives included. With
// nested_ops on, every record is recorded as an op node (aten::mm under aten::matmul), at the
// full cost.
//
// Backward passes made two thirds of a small-GPT training step's records (1,747 -> 584 per step
// without them; docs/overhead.md): the autograd engine wraps
// every node in an "evaluate_function" record, and every aten op a node runs is a record too. None
// of those FUNCTION-scope records is needed: the node's own BACKWARD_FUNCTION record names it and
// grafts it under its forward op, and kernels launched in between land on the last node's
// backward phase, as the wrapper would have placed them. So by default (split_backward) FUNCTION
// records have a global callback of their own, and the Python side brackets each backward pass
// (torch.autograd._engine_run_backward, see dlpt/capture/backward_records.py) with
// pause/resume_function_records, which disable that callback: torch then skips FUNCTION records
// on every thread as cheaply as with no callback at all, while BACKWARD_FUNCTION and USER_SCOPE
// records (the other callback) still arrive. The price: ops another thread runs while a backward
// pass is under way (a serving thread beside a training loop) have no op node of their own; their
// launches land on their Python lines. Not paused when nested ops or FLOPs are asked for, after a
// torch.compile region was seen (a compiled backward's extern ops are the model's own ops), or
// (decided on the Python side) on several ranks or while a torch.distributed process group
// exists (collectives in backward hooks are c10d ops).
//
// Lean op starts (OpMode::Lean, the default with GPU capture; docs/overhead.md, issue 50): an
// outermost forward op's start walks no Python stack (ThreadState::push_deferred). Its first
// launch, allocation or recorded nested record walks from its caller's frame (launch_context);
// an op that launched nothing but made an autograd node walks at its end (its backward is grafted
// under its line); an op that did neither gets no node, and its CPU time reaches its line only
// through the host sampler. Compiled regions, FLOP-counted ops and collectives start as before.
#include <pthread.h>

#include "aten_ops.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <initializer_list>
#include <string>

#include "../events.h"
#include "../session.h"
#include "op_details_capture.h"
#include "thread_state.h"

namespace dlpt {

namespace {

at::CallbackHandle g_handle = 0;  // global: every scope, or BACKWARD_FUNCTION + USER_SCOPE
at::CallbackHandle g_floor_handle = 0;

// split_backward: the FUNCTION-scope callback, and how many backward passes are pausing it now.
// Install, remove, pause, resume and suspend run under the GIL, which orders them.
at::CallbackHandle g_function_handle = 0;
int g_pauses = 0;
uint64_t g_install = 0;  // which install a pause token belongs to

/// Tracing suspended (set_tracing(false)): every callback of dlpt's disabled. The FUNCTION
/// callback is on only when neither a suspension nor a backward pass holds it off.
bool g_suspended = false;
bool g_function_on = true;  // whether g_function_handle is enabled now

void apply_function_state() {
  if (g_function_handle == 0) return;
  const bool want = !g_suspended && g_pauses == 0;
  if (want == g_function_on) return;
  if (want) {
    at::reenableCallback(g_function_handle);
  } else {
    at::disableCallback(g_function_handle);
  }
  g_function_on = want;
}

/// In a forked child: the callbacks above are the parent's (perhaps disabled: the parent was in
/// an untraced window at fork()). The child's first install removes them and starts afresh.
/// Set by the atfork child handler: a plain store, nothing else (only that thread runs then).
bool g_inherited = false;
void note_fork_in_child() { g_inherited = true; }

/// A torch.compile region ran since install: backward passes keep their FUNCTION records, since
/// a compiled backward's extern ops (aten::mm, ...) are ops of the model's own.
std::atomic<bool> g_compiled_seen{false};

constexpr uint8_t kLearnCalls = 3;

/// Ops that find their path at their start in lean mode too: a compiled region (the frames
/// entered since it began are its own), an op whose inputs are recorded with its node (FLOPs),
/// a collective (its record_param_comms child adds to its node). A handful per step.
constexpr uint8_t kExactStart = kCompiledRegion | kFlops | kComm;

/// The RecordFunction whose end must switch RecordFunction back on for this thread. At most one:
/// inside a window no record starts on the thread. Kept outside ThreadState so that the switch
/// happens even if the session ended meanwhile.
thread_local const void* t_window_owner __attribute__((tls_model("initial-exec"))) = nullptr;

/// Records seen by the floor callback on this thread (bench/floor.py reads it).
thread_local uint64_t t_floor_records __attribute__((tls_model("initial-exec"))) = 0;

constexpr char kEvaluatePrefix[] = "autograd::engine::evaluate_function: ";
constexpr size_t kEvaluatePrefixLen = sizeof(kEvaluatePrefix) - 1;

/// The engine wraps every node in "autograd::engine::evaluate_function: <Node>" (scope FUNCTION,
/// no sequence number when its start callback runs). It becomes the `<backward>` phase as soon
/// as the node's own BACKWARD_FUNCTION record tells which forward op it belongs to. (A fresh
/// string each call: checked by prefix, never interned.)
bool is_engine_wrapper(const char* name) {
  return name[0] == 'a' && std::strncmp(name, kEvaluatePrefix, kEvaluatePrefixLen) == 0;
}

/// Where a backward op belongs: under the `<backward>` phase of the outermost forward op that
/// created its autograd node (sequence number + forward thread). Ops without a usable number
/// (AccumulateGrad: -1) go to the last op this thread grafted for: the engine runs AccumulateGrad
/// right after the node that produced the gradient.
NodeId backward_phase(Session& s, ThreadState& ts, const at::RecordFunction& rf) {
  const int64_t seq = rf.seqNr();
  NodeId anchor = kNoNode;
  if (seq >= 0) {
    // The forward thread id is set on BACKWARD_FUNCTION records; if a torch build sets it only
    // after the start callbacks, the thread that last ran forward ops is the best guess.
    const uint64_t fwd_tid =
        rf.forwardThreadId() ? rf.forwardThreadId() : s.last_forward_thread.load(std::memory_order_relaxed);
    if (SeqRanges* ranges = s.seq_ranges.find(fwd_tid)) anchor = ranges->find(seq);
    if (anchor == kNoNode) s.counters.backward_unresolved.fetch_add(1, std::memory_order_relaxed);
  }
  if (anchor != kNoNode) {
    ts.last_backward_anchor = anchor;
  } else {
    anchor = ts.last_backward_anchor;
  }
  if (anchor != kNoNode) return ts.phase(anchor, Phase::Backward);
  // Nothing known: the nearest enclosing context (e.g. the loss.backward() line on CPU).
  const NodeId py = ts.python_context();
  return ts.phase(py != kNoNode ? py : ts.thread_node(), Phase::Backward);
}

/// A torch.compile region starts at entry `e`: frames entered from now on are its own.
void begin_region(OpEntry& e) {
  if (!g_compiled_seen.load(std::memory_order_relaxed)) g_compiled_seen.store(true, std::memory_order_relaxed);
  e.region = true;
  e.region_frame = innermost_python_frame();
}

/// An op recorded with its own node that may run its nested records in a window (see top):
/// either learn whether it makes nested records, or open a window if it does.
void learn_or_open_window(Session& s, ThreadState& ts, OpEntry& e, const at::RecordFunction& rf) {
  if (s.opts.nested_ops) return;
  NameInfo& info = ts.name_info(e.name_id);
  if (!(info.flags & kWindowable)) return;
  if (info.learned_calls < kLearnCalls) {
    if (ts.learner() == nullptr) {
      e.learning = true;
      ts.set_learner();
    }
    return;
  }
  // Another profiler's thread-local callbacks (torch.profiler) would lose the nested ops too.
  if (info.max_nested < s.opts.bench.window_min_nested || t_window_owner != nullptr || at::hasThreadLocalCallbacks())
    return;
  const uint64_t t0 = ticks();
  at::enableRecordFunction(false);
  t_window_owner = &rf;
  ts.window_ticks.add(ticks() - t0);
  s.counters.rf_windows.fetch_add(1, std::memory_order_relaxed);
}

/// A record inside an open op.
void on_nested_start(Session& s, ThreadState& ts, const at::RecordFunction& rf, at::RecordScope scope,
                     bool collecting) {
  OpEntry& parent = ts.top();
  const char* name = rf.name();
  // The common case, kept short: an aten op inside an ordinary op is not recorded (its launches
  // go to the op's context). Nothing about it is looked up. (Other names may be collectives.)
  if (!s.opts.nested_ops && !parent.region && scope != at::RecordScope::BACKWARD_FUNCTION &&
      std::strncmp(name, "aten::", 6) == 0) {
    if (!collecting) return;
    if (OpEntry* learner = ts.learner()) ++learner->nested;
    ts.push(EntryKind::Skip, &rf).ctx_node = parent.ctx_node;
    return;
  }
  if (OpEntry* learner = ts.learner()) ++learner->nested;
  const bool graft = scope == at::RecordScope::BACKWARD_FUNCTION && parent.kind == EntryKind::Wrapper;
  const uint32_t id = ts.name_id(name);
  const uint8_t flags = ts.name_info(id).flags;
  const bool compiled = (flags & kCompiledRegion) != 0;
  // Under a compiled region, ops are launched by Inductor's generated Python: they are what the
  // model runs, each one as good as an outermost op.
  const bool recorded = graft || compiled || parent.region || s.opts.nested_ops || (flags & kComm);
  if (!collecting && !compiled) return;  // paused: only compiled regions are followed
  if (flags & kParamComms) note_collective(s, ts);
  if (flags & (kComm | kParamComms)) {
    // An op that runs a collective never gets a window: it would hide the collective's op.
    if (OpEntry* learner = ts.learner()) ts.name_info(learner->name_id).flags &= ~kWindowable;
  }
  if (!recorded || (flags & (kPlumbing | kParamComms))) {
    OpEntry& e = ts.push(EntryKind::Skip, &rf);
    e.ctx_node = parent.ctx_node;
    e.region = parent.region;
    e.region_frame = parent.region_frame;
    return;
  }
  if (graft) {
    // A backward node: graft it and the engine wrapper around it under its forward op.
    const NodeId phase = backward_phase(s, ts, rf);
    parent.ctx_node = phase;
    OpEntry& e = ts.push(EntryKind::Op, &rf);
    e.op_node = e.ctx_node = ts.child(phase, NodeKind::Op, id);
    e.name_id = id;
    if (compiled) begin_region(e);
    e.start = ticks();
    if (!compiled) learn_or_open_window(s, ts, e, rf);
    return;
  }
  const NodeId parent_ctx = ts.launch_context();  // the enclosing op, or frames under a region
  const NodeKind kind = scope == at::RecordScope::USER_SCOPE ? NodeKind::Scope : NodeKind::Op;
  OpEntry& e = ts.push(EntryKind::Op, &rf);
  e.op_node = e.ctx_node = ts.child(parent_ctx, kind, id);
  e.name_id = id;
  if (flags & kFlops) s.details.add_inputs(e.op_node, input_signature(rf), s.epochs.current());
  if (compiled) {
    // CompiledFunction (an autograd.Function): its own forward/backward phases, and the anchor
    // its CompiledFunctionBackward is grafted under.
    e.ctx_node = ts.phase(e.op_node, Phase::Forward);
    begin_region(e);
    ts.note_forward_op(rf.seqNr(), e.op_node);
  }
  e.start = ticks();
  if (!compiled && parent.region && kind == NodeKind::Op) learn_or_open_window(s, ts, e, rf);
}

/// A record with no op open: an outermost op, a backward node, a top-level scope.
void on_outermost_start(Session& s, ThreadState& ts, const SelfTimer& timer, const at::RecordFunction& rf,
                        at::RecordScope scope, bool collecting) {
  const char* name = rf.name();
  if (scope == at::RecordScope::FUNCTION && is_engine_wrapper(name)) {
    if (collecting) ts.push(EntryKind::Wrapper, &rf).start = ticks();  // placed by its node's record
    return;
  }
  SampledParts parts(timer.parts_sampled());
  const uint32_t id = ts.name_id(name);
  const uint8_t flags = ts.name_info(id).flags;
  parts.mark(ts.op_name_ticks);
  const bool compiled = (flags & kCompiledRegion) != 0;
  if (!collecting && !compiled) return;  // paused: only compiled regions are followed
  if (scope == at::RecordScope::USER_SCOPE) {
    ts.push(EntryKind::TopScope, &rf);
    push_user_scope(ts, id);
    return;
  }
  if (flags & kPlumbing) {
    ts.push(EntryKind::Skip, &rf);
    return;
  }
  if (scope == at::RecordScope::BACKWARD_FUNCTION) {
    const NodeId phase = backward_phase(s, ts, rf);
    OpEntry& e = ts.push(EntryKind::Op, &rf);
    e.op_node = e.ctx_node = ts.child(phase, NodeKind::Op, id);
    e.name_id = id;
    e.start = ticks();
    if (compiled) {
      begin_region(e);
    } else {
      learn_or_open_window(s, ts, e, rf);
    }
    return;
  }
  ts.outermost_ops.add(1);
  if (s.lean_ops.load(std::memory_order_relaxed) && !(flags & kExactStart)) {
    // Lean: no walk now. The op's first launch finds its path (nested ops and later launches
    // reuse it), or its end if it made an autograd node; an op that does neither has no node.
    OpEntry& e = ts.push_deferred(&rf, id, rf.seqNr());
    e.start = ticks();
    learn_or_open_window(s, ts, e, rf);
    parts.mark(ts.op_rest_ticks);
    return;
  }
  // An outermost forward op: capture the Python path once; nested ops and launches reuse it.
  size_t depth = 0;
  const NodeId py = ts.python_context(&depth);
  parts.mark(ts.python_ticks);  // the walk (which also times its own parts)
  NodeId op = kNoNode;
  NodeId forward = kNoNode;
  ts.op_nodes(py != kNoNode ? py : ts.thread_node(), id, &op, &forward);
  parts.mark(ts.op_nodes_ticks);
  OpEntry& e = ts.push(EntryKind::Op, &rf);
  e.op_node = op;
  e.ctx_node = forward;
  e.name_id = id;
  if (flags & kFlops) s.details.add_inputs(e.op_node, input_signature(rf), s.epochs.current());
  if (compiled) begin_region(e);
  ts.note_forward_op(rf.seqNr(), e.op_node);
  e.start = ticks();
  if (!compiled) learn_or_open_window(s, ts, e, rf);
  parts.mark(ts.op_rest_ticks);
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& rf) {
  Session* s = current_session();
  // Suspended: the callback is disabled; one already under way when it was records nothing.
  if (s == nullptr || !s->tracing.load(std::memory_order_relaxed)) return nullptr;
  // While paused (warm-up steps) only compiled regions are followed, and only with GPU capture:
  // that is when reduce-overhead records its CUDA graphs, and a graph's kernels are attributed to
  // the context they were captured in (see GraphNodeContexts), which needs the region's place
  // (its call line, its backward grafted under its forward). A handful of ops per step.
  const bool collecting = s->collecting.load(std::memory_order_relaxed);
  if (!collecting && !s->gpu.load(std::memory_order_relaxed)) return nullptr;
  ThreadState& ts = ThreadState::get(*s);
  SelfTimer timer(ts, &ts.op_start_ticks);
  ts.op_records.add(1);
  if (ts.full()) return nullptr;  // its end finds no entry and is ignored
  if (ts.rf_thread_id == 0) ts.rf_thread_id = rf.threadId();
  const at::RecordScope scope = rf.scope();
  if (ts.no_open_op()) {
    on_outermost_start(*s, ts, timer, rf, scope, collecting);
  } else {
    on_nested_start(*s, ts, rf, scope, collecting);
  }
  return nullptr;
}

/// Pops entries above `rf`'s (records that ended out of order, e.g. a record_function exited
/// after an inner one it enclosed); false if `rf` has no entry at all (its start was not seen).
bool unwind_to(ThreadState& ts, const void* rf) {
  size_t i = ts.depth();
  while (i > 0 && ts.at(i - 1).rf != rf) --i;
  if (i == 0) return false;
  while (ts.depth() > i) {
    if (ts.top().kind == EntryKind::TopScope) ts.pop_scope();
    ts.pop();
  }
  return true;
}

void on_op_end(const at::RecordFunction& rf, at::ObserverContext* /*unused*/) {
  uint64_t window_ticks = 0;
  if (t_window_owner == &rf) {
    const uint64_t t0 = ticks();
    at::enableRecordFunction(true);
    t_window_owner = nullptr;
    window_ticks = ticks() - t0;
  }
  Session* s = current_session();
  if (s == nullptr) return;
  ThreadState* tsp = ThreadState::find(*s);
  if (tsp != nullptr && window_ticks) tsp->window_ticks.add(window_ticks);
  if (tsp == nullptr || tsp->empty()) return;
  ThreadState& ts = *tsp;
  SelfTimer timer(ts, &ts.op_end_ticks);
  if (ts.top().rf != &rf && !unwind_to(ts, &rf)) {
    s->counters.unmatched_op_ends.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  // A lean op that launched nothing but made an autograd node: its backward ops (a view's
  // backward may launch kernels) are grafted under its line, so its path is walked now, while
  // its caller's frame still runs the call.
  if (ts.deferred_on_top() && ts.deferred_seq() >= 0 && at::sequence_number::peek() > ts.deferred_seq()) {
    ts.resolve_deferred();
    ts.deferred_at_end.add(1);
  }
  const OpEntry e = ts.top();
  ts.pop();
  switch (e.kind) {
    case EntryKind::TopScope:
      ts.pop_scope();
      return;
    case EntryKind::Skip:
      // A record we do not time (e.g. a record_function scope inside an op) still passes on the
      // time of timed records beneath it, so the enclosing op does not count that time again.
      if (!ts.empty()) ts.top().child += e.child;
      return;
    case EntryKind::Op:
    case EntryKind::Wrapper:
      break;
  }
  if (e.learning) {
    NameInfo& info = ts.name_info(e.name_id);
    if (info.learned_calls < kLearnCalls) ++info.learned_calls;
    if (e.nested > info.max_nested) info.max_nested = static_cast<uint16_t>(std::min<uint32_t>(e.nested, 0xFFFF));
  }
  if (e.start == 0) return;
  const uint64_t end = ticks();
  const uint64_t dur = end > e.start ? end - e.start : 0;
  // An op that started before tracing was suspended still ends here (RecordFunction keeps the
  // callbacks it started with): its entry is popped above, its cost is not recorded.
  if (s->collecting.load(std::memory_order_relaxed) && s->tracing.load(std::memory_order_relaxed) &&
      e.ctx_node != kNoNode) {
    // CPU-side costs belong to the epoch running when they are added (cct/epochs.h).
    const uint32_t epoch = s->epochs.current();
    s->metrics(e.ctx_node, epoch).add_op_self(dur > e.child ? dur - e.child : 0);
    if (e.op_node != kNoNode) s->metrics(e.op_node, epoch).calls.fetch_add(1, std::memory_order_relaxed);
    if (host::timeline_on() && e.op_node != kNoNode) host::on_op(*s, ts.os_tid, e.op_node, e.start, end);
  }
  if (!ts.empty()) ts.top().child += dur;
}

// -- floor mode --------------------------------------------------------------------------------

std::unique_ptr<at::ObserverContext> floor_start(const at::RecordFunction&) {
  ++t_floor_records;
  return nullptr;
}

void floor_end(const at::RecordFunction&, at::ObserverContext*) {}

at::RecordFunctionCallback callback(at::RecordFunctionCallback::StartCallback start,
                                    at::RecordFunctionCallback::EndCallback end) {
  return at::RecordFunctionCallback(start, end)
      .needsInputs(false)
      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE});
}

}  // namespace

void install_op_callback(bool needs_inputs, bool split_backward) {
  static const int atfork_registered = pthread_atfork(nullptr, nullptr, note_fork_in_child);
  (void)atfork_registered;
  if (g_inherited) {  // a forked child: the parent's callbacks, in whatever state, go
    g_inherited = false;
    remove_op_callback();
    remove_floor_op_callback();
  }
  if (g_handle != 0) return;
  g_compiled_seen.store(false);
  g_pauses = 0;
  g_suspended = false;
  g_function_on = true;
  ++g_install;
  if (!split_backward) {
    g_handle = at::addGlobalCallback(callback(on_op_start, on_op_end).needsInputs(needs_inputs));
    return;
  }
  g_handle = at::addGlobalCallback(callback(on_op_start, on_op_end)
                                       .needsInputs(needs_inputs)
                                       .scopes({at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
  g_function_handle = at::addGlobalCallback(
      callback(on_op_start, on_op_end).needsInputs(needs_inputs).scopes({at::RecordScope::FUNCTION}));
}

void remove_op_callback() {
  for (at::CallbackHandle* h : {&g_handle, &g_function_handle}) {
    if (*h != 0) at::removeCallback(*h);
    *h = 0;
  }
  g_pauses = 0;
  g_suspended = false;  // (a removed callback needs no re-enabling)
  g_function_on = true;
}

uint64_t pause_function_records() {
  if (g_function_handle == 0 || g_compiled_seen.load(std::memory_order_relaxed)) return 0;
  ++g_pauses;
  apply_function_state();
  return g_install;
}

void resume_function_records(uint64_t token) {
  // A token of an earlier install (the profile stopped during the pass): nothing of it is left.
  if (token == 0 || token != g_install || g_function_handle == 0 || g_pauses == 0) return;
  --g_pauses;
  apply_function_state();  // stays off while tracing is suspended
}

void suspend_op_callbacks(bool suspended) {
  if (g_suspended == suspended) return;
  g_suspended = suspended;
  for (at::CallbackHandle h : {g_handle, g_floor_handle}) {
    if (h == 0) continue;
    if (suspended) {
      at::disableCallback(h);
    } else {
      at::reenableCallback(h);
    }
  }
  apply_function_state();
}

void install_floor_op_callback() {
  if (g_floor_handle == 0) g_floor_handle = at::addGlobalCallback(callback(floor_start, floor_end));
}

void remove_floor_op_callback() {
  if (g_floor_handle == 0) return;
  at::removeCallback(g_floor_handle);
  g_floor_handle = 0;
}

uint64_t floor_records_on_this_thread() { return t_floor_records; }

}  // namespace dlpt
