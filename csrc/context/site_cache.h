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
// 2-way set-associative with LRU replacement, indexed by the depth, the base node and the
// innermost frames' instruction pointers (where sites differ); the compare, not the index,
// decides a hit. Must be cleared when the path a chain maps to can change: a scope entered or
// left (thread_state.cpp).
// Two per thread: paths from the root (python_context) and paths under a compiled region's node
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

/// `Sets`: sets of two ways (a power of two). Sizes: thread_state.h.
template <size_t Sets>
class SiteCache {
 public:
  /// The node cached for the chain `raw[0..n)` (innermost first, as walked) as a path under
  /// `base`, or false.
  bool find(const RawFrame* raw, size_t n, NodeId base, NodeId* node, uint32_t* usable) {
    Set& set = sets_[index(raw, n, base)];
    for (uint8_t way = 0; way < 2; ++way) {
      const Slot& s = set.ways[way];
      if (s.n == n && s.base == base && same(s, raw, n)) {
        *node = s.node;
        *usable = s.usable;
        set.next = way ^ 1;  // the other way is now the least recently used: the next to go
        return true;
      }
    }
    return false;
  }

  /// Remembers `node` (and the usable-frame count) for the chain `raw[0..n)` under `base`.
  void put(const RawFrame* raw, size_t n, NodeId base, NodeId node, uint32_t usable) {
    Set& set = sets_[index(raw, n, base)];
    Slot& s = set.ways[set.next];
    set.next ^= 1;  // the way just filled is the most recently used
    s.chain.resize(2 * n);
    for (size_t i = 0; i < n; ++i) {
      s.chain[2 * i] = raw[i].frame;
      s.chain[2 * i + 1] = raw[i].instr;
    }
    s.n = static_cast<uint32_t>(n);
    s.base = base;
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
  static constexpr int kSetBits = __builtin_ctzll(kSets);
  static constexpr uint32_t kEmpty = UINT32_MAX;  // no walk has this many frames
  static constexpr size_t kIndexFrames = 8;       // innermost frames that pick the set

  struct Slot {
    uint32_t n = kEmpty;  // frames in the chain
    uint32_t usable = 0;
    NodeId base = kNoNode;  // the node the path hangs under (the root, or a compiled region's)
    NodeId node = kNoNode;
    std::vector<const void*> chain;  // frame, instr of each frame, innermost first
  };
  struct Set {
    std::array<Slot, 2> ways;
    uint8_t next = 0;
  };

  static size_t index(const RawFrame* raw, size_t n, NodeId base) {
    uint64_t h = (n ^ (static_cast<uint64_t>(base) << 20)) * 0x9E3779B97F4A7C15ull;
    const size_t k = n < kIndexFrames ? n : kIndexFrames;
    for (size_t i = 0; i < k; ++i) h = (h ^ reinterpret_cast<uint64_t>(raw[i].instr)) * 0xFF51AFD7ED558CCDull;
    return static_cast<size_t>(h >> (64 - kSetBits));  // the best-mixed bits of the product
  }

  static bool same(const Slot& s, const RawFrame* raw, size_t n) {
    const void* const* c = s.chain.data();
    for (size_t i = 0; i < n; ++i) {
      if (c[2 * i + 1] != raw[i].instr || c[2 * i] != raw[i].frame) return false;
    }
    return true;
  }

  std::array<Set, kSets> sets_;
};

}  // namespace dlpt
