// Correlation id -> context node, filled at API-launch time and read when CUPTI delivers the
// activity record, possibly much later and on another thread.
//
// A fixed ring indexed by id: CUPTI correlation ids increase monotonically per process, so a
// slot is only reused after 2^20 newer launches, far more than can be in flight. Lock-free: the
// launch callback does two stores, the buffer thread two loads. Memory is constant (12 MiB).
// Each id also carries the epoch of its launch (cct/epochs.h): GPU activity is filed by the
// epoch it was launched in, whenever its record arrives.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "../common.h"

namespace dlpt {

class CorrelationTable {
 public:
  /// Marks a launch made while collection was paused (skip-first / after active steps): its
  /// activity is expected and deliberately not counted.
  static constexpr NodeId kOutsideWindow = 0x7FFFFFFEu;

  enum class Lookup { Found, OutsideWindow, Unknown };

  CorrelationTable() : slots_(new std::atomic<uint64_t>[kSlots]), epochs_(new std::atomic<uint32_t>[kSlots]) {
    for (uint32_t i = 0; i < kSlots; ++i) {
      slots_[i].store(0, std::memory_order_relaxed);
      epochs_[i].store(0, std::memory_order_relaxed);
    }
  }

  /// [MT] Called from the CUPTI API callback on the launching thread; `epoch`: the launch's.
  void put(uint32_t corr, NodeId node, uint32_t epoch = 0) {
    // The epoch first: the release store of the slot publishes it with the id.
    epochs_[corr & kMask].store(epoch, std::memory_order_relaxed);
    slots_[corr & kMask].store(pack(corr, node), std::memory_order_release);
  }

  /// [MT] Called from buffer processing. `first_time` tells whether this is the first activity
  /// record seen for this id (graph launches and runtime+driver pairs map several records to one
  /// id), which is what the completion count at stop() compares against.
  Lookup get(uint32_t corr, NodeId* node, bool* first_time, uint32_t* epoch = nullptr) {
    std::atomic<uint64_t>& slot = slots_[corr & kMask];
    uint64_t v = slot.load(std::memory_order_acquire);
    if (v == 0 || static_cast<uint32_t>(v >> 32) != corr) return Lookup::Unknown;
    if (epoch) *epoch = epochs_[corr & kMask].load(std::memory_order_relaxed);
    uint32_t low = static_cast<uint32_t>(v);
    *first_time = (low & kSeen) == 0;
    if (*first_time) slot.compare_exchange_strong(v, v | kSeen, std::memory_order_acq_rel);
    *node = low & ~kSeen;
    return *node == kOutsideWindow ? Lookup::OutsideWindow : Lookup::Found;
  }

 private:
  static constexpr uint32_t kSlots = 1u << 20;
  static constexpr uint32_t kMask = kSlots - 1;
  static constexpr uint32_t kSeen = 0x80000000u;
  static uint64_t pack(uint32_t corr, NodeId node) { return (static_cast<uint64_t>(corr) << 32) | (node & ~kSeen); }
  std::unique_ptr<std::atomic<uint64_t>[]> slots_;
  std::unique_ptr<std::atomic<uint32_t>[]> epochs_;  // the launch epoch of each slot's id
};

}  // namespace dlpt
