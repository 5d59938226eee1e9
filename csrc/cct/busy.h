// GPU busy time per device: the length of the union of kernel/copy/memset intervals.
//
// Records arrive in batches, out of order across streams. Intervals are buffered and, when the
// buffer fills, merged; all merged spans except the most recent few are folded into a running
// total and everything before the fold point is clipped from later intervals. Memory is bounded
// whatever the run length.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

namespace dlpt {

class BusyTracker {
 public:
  /// [MT] Buffer-processing thread(s).
  void add(uint32_t device, uint64_t start, uint64_t end);
  /// Busy nanoseconds per device, everything folded (call after the final flush).
  std::map<uint32_t, uint64_t> totals();

 private:
  struct Device {
    std::vector<std::pair<uint64_t, uint64_t>> pending;
    uint64_t folded_ns = 0;
    uint64_t folded_until = 0;  // intervals are clipped to start here
  };
  void fold(Device& d, size_t keep_spans);

  std::mutex mu_;
  std::map<uint32_t, Device> devices_;
};

}  // namespace dlpt
