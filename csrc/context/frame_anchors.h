// Where a thread's walk from the root may stop: a few of its outer frames whose activation is
// known not to have changed (frames/activations.h), each with the tree node of the path up to
// its caller. A walk that meets one of them has the rest of its path without reading the frames
// outward of it: between two ops of a Hugging Face decode step that is most of ~60 frames.
//
// Which frames: after a walk, the deepest frame it shares (address and code) with the walk
// before, at least kMinDepth from the root and kMinInner from the innermost frame: the frame
// that consecutive ops run under. Only a code that appears once on the stack (a wrapper such as
// Module._call_impl starts again at every level below it, which would void the anchor at once)
// and whose starts are counted (else the code is requested, and a later walk takes it). The
// anchors are a chain of ancestors, outermost first: a walk that stops at one keeps it and those
// outward of it (its callers, so the same activations too) and drops those inward (not met:
// returned); a walk to the root drops them all.
//
// Thread contract: owned by one ThreadState ([MT: owning thread]); ThreadState clears it when a
// scope is entered or left (the nodes it holds would change).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>

#include "../common.h"
#include "../frames/activations.h"
#include "../frames/python_stack.h"

namespace dlpt {

class FrameAnchors {
 public:
  static constexpr size_t kMax = 4;       // anchors per thread: outer levels of one stack
  static constexpr size_t kMinDepth = 8;  // a shallower anchor saves too few frames
  // Frames inward of an anchor (where consecutive ops differ): kMinInner unless a benchmark
  // asks otherwise (BenchSwitches::anchor_min_inner; 0 lets the innermost frame anchor).
  static constexpr size_t kMinInner = 2;
  void set_min_inner(size_t frames) { min_inner_ = frames; }

  struct Anchor {
    NodeId base;            // the path up to its caller
    uint32_t usable_outer;  // user-visible frames outward of it
    uint32_t depth;         // its frame's depth from the root (0: the outermost)
  };

  /// [MT] Walks the calling thread's frames (innermost first, or from frame `from`: see
  /// walk_python_frames) to the root, or to the innermost anchor still valid (then raw[n-1] is
  /// its frame and *hit its index; else -1). Drops the anchors the walk showed gone.
  size_t walk(RawFrame* raw, size_t max, int* hit, const void* from = nullptr) {
    const size_t n = walk_python_frames_to(raw, max, marks_.data(), n_, hit, from);
    n_ = *hit >= 0 ? static_cast<size_t>(*hit) + 1 : 0;
    return n;
  }

  const Anchor& at(int i) const { return anchors_[static_cast<size_t>(i)]; }

  /// After a walk of raw[0..n) from anchor `hit` (or the root, -1): records the chain as it is
  /// now and returns the depth of the frame to anchor next (see above), or -1. Its frame is
  /// raw[n - 1 - (depth - first_depth(hit))].
  int candidate(const RawFrame* raw, size_t n, int hit) {
    const size_t p0 = first_depth(hit);
    const size_t len = p0 + n;
    if (len > kChain) return -1;
    // The walk's frames from the root side, compared with the last chain at the same depths.
    size_t common = p0;  // depths < common (from p0 on) equal the last chain's
    bool same = p0 < len_;
    for (size_t k = 0; k < n; ++k) {
      const size_t d = p0 + k;
      const RawFrame& f = raw[n - 1 - k];
      const void* code = frame_code_of(f.frame);
      Link& l = chain_[d];
      const bool kept = d < len_ && l.frame == f.frame && l.code == code;
      same = same && kept;
      if (same) common = d + 1;
      if (!kept) l = Link{f.frame, code, false};
    }
    len_ = len;
    if (n_ >= kMax || common == 0) return -1;
    const size_t lowest = std::max(hit >= 0 ? p0 + 1 : size_t{0}, kMinDepth);
    // The deepest shared frame that qualifies; a few tries (each scans the chain once): past
    // the wrappers between two levels of a model (_wrapped_call_impl, _call_impl: on the stack
    // at every level) to the level's own forward. A frame found not to qualify is not tried
    // again while it stays on the chain (rejected): most walks share their outer frames with
    // the walk before, and scanning them again on every walk cost more than the rest of the
    // anchor upkeep (decode: ~200 ns a walk). (A code that appeared twice only because of a
    // frame inward of it stays rejected after that frame returned: an anchor missed, never a
    // wrong one.)
    for (size_t d = common, tries = 0; d-- > lowest && tries < 8;) {
      if (len - 1 - d < min_inner_ || chain_[d].rejected) continue;
      ++tries;
      if (chain_[d].code != nullptr && appears_once(chain_[d].code)) return static_cast<int>(d);
      chain_[d].rejected = true;
    }
    return -1;
  }

  /// The frame at `depth` on the last chain cannot anchor (its activation cannot be marked):
  /// not tried again while it stays there.
  void reject(size_t depth) {
    if (depth < len_) chain_[depth].rejected = true;
  }

  /// The depth of raw[n-1] in a walk that stopped at anchor `hit` (0 for a walk to the root).
  size_t first_depth(int hit) const { return hit >= 0 ? at(hit).depth : 0; }

  /// Adds an anchor inward of the current ones.
  void add(const activations::Mark& m, NodeId base, uint32_t usable_outer, uint32_t depth) {
    if (n_ >= kMax) return;
    marks_[n_] = m;
    anchors_[n_] = Anchor{base, usable_outer, depth};
    ++n_;
  }

  void clear() { n_ = 0; }

 private:
  static constexpr size_t kChain = kMaxPythonFrames;

  bool appears_once(const void* code) const {
    int seen = 0;
    for (size_t d = 0; d < len_; ++d) seen += chain_[d].code == code;
    return seen == 1;
  }

  struct Link {
    const void* frame = nullptr;
    const void* code = nullptr;
    bool rejected = false;  // tried and found unable to anchor (see candidate())
  };

  std::array<activations::Mark, kMax> marks_{};  // beside each other: the walk compares them all
  std::array<Anchor, kMax> anchors_{};
  size_t n_ = 0;
  size_t min_inner_ = kMinInner;
  std::array<Link, kChain> chain_{};  // the last chain, outermost first
  size_t len_ = 0;
};

}  // namespace dlpt
