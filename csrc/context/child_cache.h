// A thread's cache of tree lookups: (parent, kind, a, b) -> child node id.
//
// Every op, frame and phase on the hot path is found as a child of its parent. The tree's own
// map takes a mutex; nodes never change once created, so each thread keeps what it found here,
// without locks. Fixed size (4096 slots, 128 KiB), open addressing with a short probe; when the
// probe window is full the oldest-placed slot is overwritten (the tree stays authoritative).
#pragma once

#include <cstdint>
#include <memory>

#include "../cct/tree.h"

namespace dlpt {

class ChildCache {
 public:
  ChildCache() : slots_(new Slot[kSlots]) {}

  /// [MT: owning thread] The cached child, or kNoNode.
  NodeId find(const NodeKey& k) const {
    size_t i = index(k);
    for (unsigned p = 0; p < kProbe; ++p, i = (i + 1) & kMask) {
      const Slot& s = slots_[i];
      if (s.value == kNoNode) return kNoNode;
      if (s.parent == k.parent && s.kind == k.kind && s.a == k.a && s.b == k.b) return s.value;
    }
    return kNoNode;
  }

  /// [MT: owning thread]
  void put(const NodeKey& k, NodeId value) {
    size_t i = index(k);
    size_t victim = i;
    for (unsigned p = 0; p < kProbe; ++p, i = (i + 1) & kMask) {
      if (slots_[i].value == kNoNode) {
        victim = i;
        break;
      }
    }
    slots_[victim] = Slot{k.parent, k.kind, value, k.a, k.b};
  }

  void clear() {
    for (size_t i = 0; i < kSlots; ++i) slots_[i].value = kNoNode;
  }

 private:
  static constexpr size_t kSlots = 4096;
  static constexpr size_t kMask = kSlots - 1;
  static constexpr unsigned kProbe = 4;
  struct Slot {
    NodeId parent = kNoNode;
    NodeKind kind = NodeKind::Root;
    NodeId value = kNoNode;
    uint64_t a = 0;
    uint64_t b = 0;
  };
  static size_t index(const NodeKey& k) { return NodeKeyHash{}(k)&kMask; }

  std::unique_ptr<Slot[]> slots_;
};

}  // namespace dlpt
