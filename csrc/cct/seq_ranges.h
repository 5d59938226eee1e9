// Forward sequence number -> the outermost forward op that created it, per forward thread.
//
// Autograd numbers nodes per thread, monotonically. Every node created between the start of
// outermost op A (sequence number a) and the start of the next outermost op B (b > a) was created
// inside A, so one entry per outermost op answers "which forward call site made node s": the last
// entry with start <= s. This is what lets a backward op (seqNr, forwardThreadId) be grafted
// under the forward line that caused it.
//
// A ring of kCapacity entries (512 KiB per forward thread): the oldest entries are overwritten.
// Backward normally runs within the same step as its forward, a few thousand outermost ops later
// at most (a GPT-2 124M training step has about 1,500 outermost ops with autograd).
//
// Thread contract: exactly one writer (the forward thread that owns this table, on every
// outermost op: it must not lock), any number of readers (the autograd engine's threads, once
// per backward node). Lock-free: slots are relaxed atomics published by a release store of the
// count; a reader that may have raced with the writer overwriting the oldest slots says
// "not found" rather than return a wrong node.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "../common.h"

namespace dlpt {

class SeqRanges {
 public:
  static constexpr uint64_t kCapacity = 1u << 15;

  SeqRanges() : slots_(new Slot[kCapacity]) {}

  /// [MT] Writer only, at each outermost op with a sequence number (the number the next
  /// autograd node will get). Ops that create no node (no input requires grad) leave the counter
  /// where it was, so several outermost ops can share a number: only the last of them can have
  /// created that node, so the last one wins.
  void add(int64_t seq, NodeId op_node) {
    const uint64_t n = count_.load(std::memory_order_relaxed);
    if (n > 0) {
      Slot& last = slots_[(n - 1) & kMask];
      const int64_t last_seq = last.seq.load(std::memory_order_relaxed);
      if (last_seq >= seq) {
        if (last_seq == seq) last.node.store(op_node, std::memory_order_release);
        return;
      }
    }
    Slot& slot = slots_[n & kMask];
    slot.seq.store(seq, std::memory_order_relaxed);
    slot.node.store(op_node, std::memory_order_relaxed);
    count_.store(n + 1, std::memory_order_release);
  }

  /// [MT] Any thread. kNoNode when `seq` is older than anything kept.
  NodeId find(int64_t seq) const {
    const uint64_t n = count_.load(std::memory_order_acquire);
    if (n == 0) return kNoNode;
    // The writer may overwrite the oldest slots while we search: stay clear of them.
    const uint64_t oldest = n > kCapacity - kMargin ? n - (kCapacity - kMargin) : 0;
    if (seq < slot_seq(oldest)) return kNoNode;
    uint64_t lo = oldest, hi = n;  // last index with seq <= target
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (slot_seq(mid) <= seq)
        lo = mid;
      else
        hi = mid;
    }
    const NodeId node = slots_[lo & kMask].node.load(std::memory_order_acquire);
    // Overwritten meanwhile? Then what we read may belong to a newer entry.
    if (count_.load(std::memory_order_acquire) - lo >= kCapacity) return kNoNode;
    return node;
  }

 private:
  static constexpr uint64_t kMask = kCapacity - 1;
  static constexpr uint64_t kMargin = 1024;
  struct Slot {
    std::atomic<int64_t> seq{0};
    std::atomic<NodeId> node{kNoNode};
  };
  int64_t slot_seq(uint64_t i) const { return slots_[i & kMask].seq.load(std::memory_order_relaxed); }

  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> count_{0};
};

}  // namespace dlpt
