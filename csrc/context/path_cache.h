// The tree path of a thread's current Python frames, rebuilt incrementally.
//
// Between two ops the outer frames (main loop, train step, module calls) rarely change. The
// frames of the last path are kept, outermost first, with the tree node reached at each; a new
// walk is compared with them by (frame address, instruction pointer) alone, and only the frames
// that differ are decoded (code object, bytecode offset) and looked up in the tree.
//
// Two uses: the path from the root (outermost ops, bare launches), and the path of the frames
// entered since a torch.compile region started, built under the region's node (launches from
// Inductor's generated code). Thread contract: owned by one ThreadState ([MT: owning thread]).
#pragma once

#include <cstdint>
#include <vector>

#include "../common.h"
#include "../frames/python_stack.h"

namespace dlpt {

class ThreadState;

class PathCache {
 public:
  /// The node of `raw[0..n)` (innermost first) without its outermost `skip` frames, as a path
  /// under `base`. `usable` receives how many user-visible frames the whole walk had (skipped
  /// ones included). Returns `base` when no user-visible frame remains.
  NodeId build(ThreadState& ts, const RawFrame* raw, size_t n, size_t skip, NodeId base, uint32_t* usable);

  /// After build(): the node of the path up to the frame `i` frames in from the outermost one
  /// built (skipped frames included) and the user-visible frames up to it; false past the end.
  bool entry(size_t i, NodeId* node, uint32_t* usable) const {
    if (!valid_ || i >= frames_.size()) return false;
    *node = frames_[i].node;
    *usable = frames_[i].usable;
    return true;
  }

  /// Forget everything (a scope was entered or left: paths above its frame change).
  void invalidate() { valid_ = false; }

 private:
  struct Entry {
    RawFrame raw;     // decoded (raw.code == nullptr: not user code, no node of its own)
    NodeId node;      // node of the path up to and including this frame
    uint32_t usable;  // user-visible frames up to and including this one, from the outermost
  };
  std::vector<Entry> frames_;  // outermost first, skipped frames included (node = base)
  NodeId base_ = kNoNode;
  size_t skip_ = 0;
  bool valid_ = false;
};

}  // namespace dlpt
