// Forward sequence number -> the outermost forward op that created it, per forward thread.
//
// Autograd numbers nodes per thread, monotonically. Every node created between the start of
// outermost op A (sequence number a) and the start of the next outermost op B (b > a) was created
// inside A, so one entry per outermost op answers "which forward call site made node s": the last
// entry with start <= s. This is what lets a backward op (seqNr, forwardThreadId) be grafted
// under the forward line that caused it.
//
// Bounded (512 KiB per forward thread): the oldest entries are dropped past kMaxEntries. Backward
// normally runs within the same step as its forward, a few thousand outermost ops later at most
// (a GPT-2 124M training step has about 1,500 outermost ops with autograd).
#pragma once

#include <cstdint>
#include <deque>
#include <mutex>

#include "../common.h"

namespace dlpt {

class SeqRanges {
 public:
  static constexpr size_t kMaxEntries = 1u << 15;

  /// [MT] Forward thread, at each outermost op with a sequence number (the number the next
  /// autograd node will get). Ops that create no node (no input requires grad) leave the counter
  /// where it was, so several outermost ops can share a number: only the last of them can have
  /// created that node, so the last one wins. (Nested ops never get here: the outermost op
  /// stands for them.)
  void add(int64_t seq, NodeId op_node) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!entries_.empty() && entries_.back().seq >= seq) {
      if (entries_.back().seq == seq) entries_.back().node = op_node;
      return;
    }
    entries_.push_back({seq, op_node});
    if (entries_.size() > kMaxEntries) entries_.pop_front();
  }

  /// [MT] Backward thread. kNoNode when `seq` is older than anything kept.
  NodeId find(int64_t seq) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.empty() || seq < entries_.front().seq) return kNoNode;
    size_t lo = 0, hi = entries_.size();  // last entry with entry.seq <= seq
    while (hi - lo > 1) {
      size_t mid = (lo + hi) / 2;
      if (entries_[mid].seq <= seq) lo = mid; else hi = mid;
    }
    return entries_[lo].node;
  }

 private:
  struct Entry {
    int64_t seq;
    NodeId node;
  };
  mutable std::mutex mu_;
  std::deque<Entry> entries_;
};

}  // namespace dlpt
