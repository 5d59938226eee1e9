// A thread's memo of the two nodes an outermost op's start looks up: (its context node, its
// name) -> (its op node, the op's forward phase node).
//
// Why: an outermost op finds its op node as a child of its Python path's node and then the op's
// forward phase as a child of that, two probes of the 128 KiB ChildCache at unrelated places.
// In a step the CUDA driver, torch and Python run between two op callbacks and evict those
// lines, so each probe tends to be a miss (on a Hugging Face decode step, an op start without
// its walk took ~370 ns in place against ~110 ns back to back on a CPU; docs/overhead.md). Here
// both answers sit in one 16-byte slot of a 32 KiB table: one line, usually one miss at most
// (on that step the two lookups went from 192 to 79 ns an op, H100 host, 2026-11-27).
// Nodes never change once created, and the key depends on the session only, so a slot stays
// valid for the session (like ChildCache, it survives a thread's recycling). Direct-mapped: a
// collision overwrites, and ChildCache (then the tree) stays authoritative.
//
// Thread contract: owned by one ThreadState ([MT: owning thread]).
#pragma once

#include <cstdint>
#include <memory>

#include "../common.h"

namespace dlpt {

class OpNodeMemo {
 public:
  OpNodeMemo() : slots_(new Slot[kSlots]) {}

  /// The op node and forward phase remembered for an op named `name_id` under `ctx`, or false.
  bool find(NodeId ctx, uint32_t name_id, NodeId* op, NodeId* forward) const {
    const Slot& s = slots_[index(ctx, name_id)];
    if (s.ctx != ctx || s.name_id != name_id) return false;
    *op = s.op;
    *forward = s.forward;
    return true;
  }

  void put(NodeId ctx, uint32_t name_id, NodeId op, NodeId forward) {
    slots_[index(ctx, name_id)] = Slot{ctx, name_id, op, forward};
  }

 private:
  static constexpr size_t kSlots = 2048;  // 32 KiB: a decode step's ~1,000 op sites fit
  static_assert((kSlots & (kSlots - 1)) == 0, "a power of two: the index is the hash's top bits");
  static constexpr int kBits = __builtin_ctzll(kSlots);
  struct Slot {
    NodeId ctx = kNoNode;  // kNoNode: empty (an op's context is always a node)
    uint32_t name_id = 0;
    NodeId op = kNoNode;
    NodeId forward = kNoNode;
  };
  static_assert(sizeof(Slot) == 16, "four slots a cache line");
  static size_t index(NodeId ctx, uint32_t name_id) {
    const uint64_t h = ((static_cast<uint64_t>(ctx) << 32) | name_id) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> (64 - kBits));
  }

  std::unique_ptr<Slot[]> slots_;
};

}  // namespace dlpt
