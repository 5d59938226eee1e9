// GPU busy time per device, and how much of the communication was exposed.
//
// Busy time is the length of the union of all kernel/copy/memset intervals. Communication
// (collective kernels: NCCL's) is also kept apart: its union, and the part of it during which no
// other GPU work ran on that device ("exposed" communication, which is what a step waits for;
// communication overlapped with compute is free).
//
// Records arrive in batches, out of order across streams. Intervals are buffered and, when the
// buffer fills, merged; everything before a cut point (the start of the most recent spans, which
// late records may still overlap) is folded into running totals, and later intervals are clipped
// to start there. Memory is bounded whatever the run length.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace dlpt {

struct BusyTotals {
  uint64_t busy_ns = 0;     // union of all GPU work
  uint64_t comm_ns = 0;     // union of communication kernels
  uint64_t exposed_ns = 0;  // communication with no other work running
};

class BusyTracker {
 public:
  using Span = std::pair<uint64_t, uint64_t>;

  /// [MT] Buffer-processing thread(s). `comm`: a collective-communication kernel.
  void add(uint32_t device, uint64_t start, uint64_t end, bool comm = false);
  /// Totals per device, everything folded (call after the final flush).
  std::map<uint32_t, BusyTotals> totals();

  /// Union of sorted, possibly overlapping spans (exposed for unit tests).
  static std::vector<Span> merge(std::vector<Span> spans);

 private:
  struct Device {
    std::vector<Span> work, comm;  // pending, unmerged
    BusyTotals folded;
    uint64_t folded_until = 0;     // intervals are clipped to start here
  };
  void fold(Device& d, bool everything);

  std::mutex mu_;
  std::map<uint32_t, Device> devices_;
};

}  // namespace dlpt
