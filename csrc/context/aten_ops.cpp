// The only translation unit that includes ATen: RecordFunction is all we need from torch, and
// keeping it to one small TU keeps the build to seconds.
//
// Thread contract: both callbacks run on the op's thread, usually without the GIL ([MT]); they
// touch only that thread's ThreadState plus the session's lock-free or internally locked parts.
#include "aten_ops.h"

#include <ATen/record_function.h>

#include <cstring>

#include "../common.h"
#include "../session.h"
#include "thread_state.h"

namespace dlpt {

namespace {

at::CallbackHandle g_handle = 0;

constexpr const char kEvaluatePrefix[] = "autograd::engine::evaluate_function: ";
constexpr size_t kEvaluatePrefixLen = sizeof(kEvaluatePrefix) - 1;

/// Where a backward op belongs: under the `<backward>` phase of the outermost forward op that
/// created its autograd node (sequence number + forward thread). Ops without a usable number
/// (AccumulateGrad: -1) go to the last op this thread grafted for: the engine runs AccumulateGrad
/// right after the node that produced the gradient.
NodeId backward_phase(Session& s, ThreadState& ts, const at::RecordFunction& rf) {
  int64_t seq = rf.seqNr();
  NodeId anchor = kNoNode;
  if (seq >= 0) {
    // The forward thread id is set on BACKWARD_FUNCTION records; if a torch build sets it only
    // after the start callbacks, the thread that last ran forward ops is the best guess.
    uint64_t fwd_tid = rf.forwardThreadId() ? rf.forwardThreadId() : s.last_forward_thread.load(std::memory_order_relaxed);
    if (SeqRanges* ranges = s.find_seq_ranges(fwd_tid)) anchor = ranges->find(seq);
    if (anchor == kNoNode) s.counters.backward_unresolved.fetch_add(1, std::memory_order_relaxed);
  }
  if (anchor != kNoNode) {
    ts.last_backward_anchor = anchor;
  } else {
    anchor = ts.last_backward_anchor;
  }
  if (anchor != kNoNode) return ts.child(anchor, NodeKind::Phase, 1);
  // Nothing known: the nearest enclosing context (e.g. the loss.backward() line on CPU).
  NodeId py = ts.python_context();
  return ts.child(py != kNoNode ? py : ts.thread_node(), NodeKind::Phase, 1);
}

/// The engine wraps every node in "autograd::engine::evaluate_function: <Node>" (scope FUNCTION,
/// no sequence number when its start callback runs). It becomes the `<backward>` phase as soon
/// as the node's own BACKWARD_FUNCTION record tells which forward op it belongs to.
bool is_engine_wrapper(const char* name) {
  return std::strncmp(name, kEvaluatePrefix, kEvaluatePrefixLen) == 0;
}

/// torch.compile's regions run Inductor's generated Python (the wrapper that launches fused
/// kernels and extern ops). Under them, ops and launches keep the Python frames entered since
/// the region started, so the generated lines can be mapped back to the model's own lines.
bool is_compiled_region(const char* name) {
  return std::strncmp(name, "Torch-Compiled Region", 21) == 0 || std::strcmp(name, "CompiledFunction") == 0 ||
         std::strcmp(name, "CompiledFunctionBackward") == 0;
}

/// Remembers that forward sequence numbers from `seq` on were created inside `op` (see
/// SeqRanges), so backward ops can be grafted under it.
void record_forward_op(Session& s, ThreadState& ts, int64_t seq, NodeId op) {
  if (seq < 0) return;
  if (ts.seq_ranges == nullptr) ts.seq_ranges = &s.seq_ranges(ts.rf_thread_id);
  ts.seq_ranges->add(seq, op);
  s.last_forward_thread.store(ts.rf_thread_id, std::memory_order_relaxed);
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& rf) {
  Session* s = current_session();
  if (s == nullptr) return nullptr;
  // While paused (warm-up steps) only compiled regions are followed, and only with GPU capture:
  // that is when reduce-overhead records its CUDA graphs, and a graph's kernels are attributed to
  // the context they were captured in (see GraphNodeContexts), which needs the region's place
  // (its call line, its backward grafted under its forward). A handful of ops per step.
  const bool collecting = s->collecting.load(std::memory_order_relaxed);
  if (!collecting && !s->gpu.load(std::memory_order_relaxed)) return nullptr;
  const char* name = rf.name();
  const bool compiled = is_compiled_region(name);
  if (!collecting && !compiled) return nullptr;
  ThreadState& ts = ThreadState::get(*s);
  ts.rf_thread_id = rf.threadId();
  const at::RecordScope scope = rf.scope();

  if (scope == at::RecordScope::USER_SCOPE && ts.ops.empty()) {
    push_user_scope(ts, name, rf.handle());
    return nullptr;
  }

  OpEntry e{rf.handle(), kNoNode, kNoNode, 0, 0, false, -1};
  if (scope == at::RecordScope::BACKWARD_FUNCTION && (ts.ops.empty() || ts.ops.back().pending_graft)) {
    // A backward node: graft it (and the engine wrapper around it, if any) under its forward op.
    NodeId phase = backward_phase(*s, ts, rf);
    if (!ts.ops.empty()) {
      ts.ops.back().ctx_node = phase;
      ts.ops.back().pending_graft = false;
    }
    e.op_node = e.ctx_node = ts.child(phase, NodeKind::Op, ts.name_id(name));
    if (compiled) e.py_depth = static_cast<int>(python_frame_count());
  } else if (ts.ops.empty() && is_engine_wrapper(name)) {
    e.pending_graft = true;  // ctx_node is set by the node's record, right after
  } else if (ts.ops.empty()) {
    // Outermost forward op: capture the Python path once; nested ops and launches reuse it.
    if (std::strncmp(name, "profiler::", 10) == 0) return nullptr;  // record_function plumbing
    size_t depth = 0;
    NodeId py = ts.python_context(&depth);
    NodeId op = ts.child(py != kNoNode ? py : ts.thread_node(), NodeKind::Op, ts.name_id(name));
    e.op_node = op;
    e.ctx_node = ts.child(op, NodeKind::Phase, 0);
    if (compiled) e.py_depth = static_cast<int>(depth);
    record_forward_op(*s, ts, rf.seqNr(), op);
  } else {
    NodeId parent = ts.launch_context();  // the enclosing op (or the frames under a compiled region)
    NodeKind kind = scope == at::RecordScope::USER_SCOPE ? NodeKind::Scope : NodeKind::Op;
    e.op_node = e.ctx_node = ts.child(parent, kind, ts.name_id(name));
    if (compiled) {
      // CompiledFunction (an autograd.Function): its own forward/backward phases, and the anchor
      // its CompiledFunctionBackward is grafted under.
      e.ctx_node = ts.child(e.op_node, NodeKind::Phase, 0);
      e.py_depth = static_cast<int>(python_frame_count());
      record_forward_op(*s, ts, rf.seqNr(), e.op_node);
    }
  }
  e.start_ns = now_ns();
  ts.ops.push_back(e);
  return nullptr;
}

void on_op_end(const at::RecordFunction& rf, at::ObserverContext* /*unused*/) {
  Session* s = current_session();
  if (s == nullptr) return;
  ThreadState& ts = ThreadState::get(*s);
  const uint64_t handle = rf.handle();
  if (rf.scope() == at::RecordScope::USER_SCOPE && pop_user_scope(ts, handle)) return;
  // Normally the top entry. An end we never saw start (collection began mid-op) matches
  // nothing and is ignored; starts whose end never came are popped with it.
  size_t i = ts.ops.size();
  while (i > 0 && ts.ops[i - 1].handle != handle) --i;
  if (i == 0) return;
  const uint64_t end = now_ns();
  const OpEntry e = ts.ops[i - 1];
  ts.ops.resize(i - 1);
  const uint64_t dur = end > e.start_ns ? end - e.start_ns : 0;
  if (s->collecting.load(std::memory_order_relaxed) && e.ctx_node != kNoNode) {
    Tree& tree = s->tree;
    tree.node(e.ctx_node).m.cpu_ns.fetch_add(dur > e.child_ns ? dur - e.child_ns : 0, std::memory_order_relaxed);
    if (e.op_node != kNoNode) tree.node(e.op_node).m.calls.fetch_add(1, std::memory_order_relaxed);
  }
  if (!ts.ops.empty()) ts.ops.back().child_ns += dur;
}

}  // namespace

void install_op_callback() {
  if (g_handle != 0) return;
  g_handle = at::addGlobalCallback(
      at::RecordFunctionCallback(on_op_start, on_op_end)
          .needsInputs(false)
          .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE}));
}

void remove_op_callback() {
  if (g_handle == 0) return;
  at::removeCallback(g_handle);
  g_handle = 0;
}

}  // namespace dlpt
