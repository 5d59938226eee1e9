// A thread's cache of whole Python paths: the frame chain of a launch site -> its tree node.
//
// PathCache keeps one path (the last) and rebuilds what differs from it: between two ops of a
// deep stack (Hugging Face: ~60 frames) the innermost 3-6 frames differ, and each of those is
// decoded (its code object read) and looked up in the tree cache, on every op, although the step
// alternates between a few hundred sites that it has seen before. This cache remembers many
// paths, keyed by the exact frame chain: the (frame address, instruction pointer) of every frame,
// innermost first, compared in full, so a hit is the path PathCache would build (same chain ->
// same nodes: the tree keys frames by code object and offset, which the instruction pointer of a
// live frame fixes). A hit costs the raw walk and one compare of 16 bytes per frame; no frame is
// decoded and no tree lookup is made: frames are read once per distinct Python stack.
//
// Set-associative (`Ways` per set; two: least recently used goes, four: the oldest filled that did
// not just hit), indexed by the depth, the base node and the
// innermost frames' instruction pointers (where sites differ); the compare, not the index,
// decides a hit. The path a chain maps to also depends on the scopes open on the thread (a scope
// node goes above the frame that entered it): the key holds the thread's scope state, an id of
// the exact stack of open scopes (ThreadState::scope_state_after), so the sites seen outside a scope
// stay valid inside it and after it. (Clearing the cache at every scope change instead, as
// before, threw every site away twice per training step: torch's optimizer opens a
// record_function scope in `step` and in `zero_grad`.)
//
// Short chains (walks that stopped at an anchor, launches under a compiled region: a handful of
// frames) are kept inside the slot, `Inline` frames at most, so that a hit reads the set's own
// lines and no second, dependent allocation; longer ones are kept in a vector.
// Three per thread: paths from the root (python_context), paths inward of an anchor (under the
// anchor's caller's node: frame_anchors.h) and paths under a compiled region's node
// (python_subpath: Inductor's generated code launches each kernel from its own line of `call`,
// so consecutive launches differ in the outer of the few frames walked, and PathCache rebuilt
// and decoded all of them on every launch). The key includes the node the path hangs under.
// Thread contract: owned by one ThreadState ([MT: owning thread]).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "../common.h"
#include "../frames/python_stack.h"

namespace dlpt {

/// `Sets`: sets (a power of two) of `Ways` slots (2 or 4); `Inline`: frames a chain may have to
/// be kept in its slot. Sizes: thread_state.h.
template <size_t Sets, size_t Inline = 0, size_t Ways = 2>
class SiteCache {
 public:
  /// The node cached for the chain `raw[0..n)` (innermost first, as walked) as a path under
  /// `base` with the scope state `scopes`, or false.
  bool find(const RawFrame* raw, size_t n, NodeId base, uint64_t scopes, NodeId* node, uint32_t* usable) {
    Set& set = sets_[index(raw, n, base, scopes)];
    for (uint8_t way = 0; way < Ways; ++way) {
      const Slot& s = set.ways[way];
      if (s.n == n && s.base == base && s.scopes == scopes && same(s, raw, n)) {
        *node = s.node;
        *usable = s.usable;
        // Two ways: the other is now the least recently used, the next to go. Four: the next
        // to go moves on if it was this one.
        if (Ways == 2 || set.next == way) set.next = static_cast<uint8_t>((way + 1) % Ways);
        return true;
      }
    }
    return false;
  }

  /// Remembers `node` (and the usable-frame count) for the chain `raw[0..n)` under `base` with
  /// the scope state `scopes`.
  void put(const RawFrame* raw, size_t n, NodeId base, uint64_t scopes, NodeId node, uint32_t usable) {
    Set& set = sets_[index(raw, n, base, scopes)];
    Slot& s = set.ways[set.next];
    set.next = static_cast<uint8_t>((set.next + 1) % Ways);  // the way just filled goes last
    const void** c = s.prepare(n);
    for (size_t i = 0; i < n; ++i) {
      c[2 * i] = raw[i].frame;
      c[2 * i + 1] = raw[i].instr;
    }
    s.n = static_cast<uint32_t>(n);
    s.base = base;
    s.scopes = scopes;
    s.node = node;
    s.usable = usable;
  }

  void clear() {
    for (Set& set : sets_) {
      for (Slot& s : set.ways) s.n = kEmpty;
    }
  }

 private:
  static constexpr size_t kSets = Sets;
  static_assert(kSets >= 2 && (kSets & (kSets - 1)) == 0, "a power of two: the index is the hash's top bits");
  static_assert(Ways == 2 || Ways == 4, "two ways (LRU) or four (oldest filled)");
  static constexpr int kSetBits = __builtin_ctzll(kSets);
  static constexpr uint32_t kEmpty = UINT32_MAX;  // no walk has this many frames
  static constexpr size_t kIndexFrames = 8;       // innermost frames that pick the set

  struct Slot {
    uint32_t n = kEmpty;  // frames in the chain
    uint32_t usable = 0;
    NodeId base = kNoNode;  // the node the path hangs under (the root, an anchor's, a compiled region's)
    uint64_t scopes = 0;    // the thread's scope state (ThreadState::scope_state_after)
    NodeId node = kNoNode;
    // frame, instr of each frame, innermost first: here when n <= Inline, else in `spill`
    std::array<const void*, 2 * Inline> inline_chain{};
    std::vector<const void*> spill;

    const void* const* chain() const { return n <= Inline ? inline_chain.data() : spill.data(); }
    const void** prepare(size_t frames) {
      if (frames <= Inline) return inline_chain.data();
      spill.resize(2 * frames);
      return spill.data();
    }
  };
  struct Set {
    std::array<Slot, Ways> ways;
    uint8_t next = 0;
  };

  static size_t index(const RawFrame* raw, size_t n, NodeId base, uint64_t scopes) {
    uint64_t h = (n ^ (static_cast<uint64_t>(base) << 20) ^ (scopes * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B97F4A7C15ull;
    const size_t k = n < kIndexFrames ? n : kIndexFrames;
    for (size_t i = 0; i < k; ++i) h = (h ^ reinterpret_cast<uint64_t>(raw[i].instr)) * 0xFF51AFD7ED558CCDull;
    return static_cast<size_t>(h >> (64 - kSetBits));  // the best-mixed bits of the product
  }

  static bool same(const Slot& s, const RawFrame* raw, size_t n) {
    const void* const* c = s.chain();
    for (size_t i = 0; i < n; ++i) {
      if (c[2 * i + 1] != raw[i].instr || c[2 * i] != raw[i].frame) return false;
    }
    return true;
  }

  std::array<Set, kSets> sets_;
};

}  // namespace dlpt
