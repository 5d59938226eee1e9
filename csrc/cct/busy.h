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

#include "collectives.h"
#include "epochs.h"

namespace dlpt {

struct BusyTotals {
  uint64_t busy_ns = 0;          // union of all GPU work (of counted epochs' intervals, see totals)
  uint64_t busy_outside_ns = 0;  // ... of the other epochs' intervals and outside every interval
  uint64_t comm_ns = 0;          // union of communication kernels (counted intervals, as busy_ns)
  uint64_t exposed_ns = 0;       // communication with no other work running (likewise)
};

/// One interval between two step marks, on one device.
struct StepBusy {
  uint64_t start = 0, end = 0;   // the marks (CUPTI timestamps)
  bool recorded = false;         // a recorded step: its epoch was counted (once end_epoch was
                                 // called), else collection was on from its start mark
  uint64_t busy_ns = 0;          // union of GPU work inside it
  uint64_t comm_ns = 0;          // union of communication kernels inside it
  uint64_t exposed_ns = 0;       // ... the part of it with no other work running
  uint64_t first = 0, last = 0;  // first work start and last work end (0: no work)
  uint64_t carried_until = 0;    // the latest end of the previous steps' work in it: started
                                 // before `start`, or launched before it and queued (0: none);
                                 // may lie past `end`. first/last are of the work launched
                                 // inside it where launches are known
};

class BusyTracker {
 public:
  using Span = std::pair<uint64_t, uint64_t>;

  /// [MT] Buffer-processing thread(s). `comm`: a collective-communication kernel; with `tag`,
  /// it is also kept as a CollectiveRecord (collectives()). `corr`: its launch's correlation
  /// id (0: unknown), which tells the step it was launched in (mark_step's `corr_before`).
  void add(uint32_t device, uint64_t start, uint64_t end, bool comm = false, const CollectiveTag* tag = nullptr,
           uint32_t corr = 0);
  /// [MT] A step boundary at CUPTI time `t`; `recorded`: whether collection is on after it;
  /// `epoch`: the epoch running from it on (cct/epochs.h). Work is split into steps by these
  /// marks (host time: in a launch-bound step the GPU runs right behind the host, and that is
  /// when idle time inside a step matters).
  /// `corr_before`: the latest correlation id launched before the mark (0: unknown). Ids only
  /// grow, so work whose id is at most that was launched before the step: queued behind the
  /// previous steps' work, it is theirs, not the step's first (StepBusy::carried_until).
  void mark_step(uint64_t t, bool recorded, uint32_t epoch = 0, uint32_t corr_before = 0);
  /// Totals per device, everything folded (call after the final flush). With `epochs` of a run
  /// that ended epochs (Epochs::ever_ended), busy time is split by the interval it falls in:
  /// `busy_ns` is what fell in intervals of counted epochs, `busy_outside_ns` the rest (other
  /// intervals, before the first mark). Otherwise `busy_ns` is all of it.
  std::map<uint32_t, BusyTotals> totals(const Epochs* epochs = nullptr);
  /// Per device, the intervals between consecutive marks (call after totals()); `recorded` by
  /// the interval's epoch class when `epochs` ended any.
  std::map<uint32_t, std::vector<StepBusy>> steps(const Epochs* epochs = nullptr);

  /// The collective kernels of counted epochs (every one when `epochs` ended none), by epoch,
  /// then launch order, then start; call after totals(). `over_limit`: how many were not kept,
  /// past kMaxCollectives.
  std::vector<CollectiveRecord> collectives(const Epochs* epochs, uint64_t* over_limit);

  /// Union of sorted, possibly overlapping spans (exposed for unit tests).
  static std::vector<Span> merge(std::vector<Span> spans);

 private:
  struct StepAcc {
    uint64_t busy = 0, comm = 0, exposed = 0, first = UINT64_MAX, last = 0;
    uint64_t carried_until = 0;  // StepBusy::carried_until
  };
  struct Device {
    std::vector<Span> work, comm;  // pending, unmerged
    BusyTotals folded;
    uint64_t folded_until = 0;                       // intervals are clipped to start here
    std::vector<StepAcc> steps;                      // by interval after mark i
    std::vector<CollectiveRecord> open_collectives;  // exposure not filed to their end yet
  };
  void fold(Device& d, bool everything);
  /// The interval a time falls in (-1 before the first mark). Under mu_.
  long step_of(uint64_t t) const;
  /// The interval a launch of correlation id `corr` was made in (-1 before the first mark;
  /// kUnknownLaunch without ids). Under mu_.
  long launched_in(uint32_t corr) const;
  static constexpr long kUnknownLaunch = -2;
  /// Files one record's edges: first/last of the step it was launched in (where it starts, with
  /// launches unknown), carried_until of the steps it was queued into or runs on into. Takes
  /// the record whole, before any fold clips it. Under mu_.
  void file_step_edges(Device& d, uint64_t start, uint64_t end, uint32_t corr);
  /// Adds the length of `merged` (sorted, disjoint) inside each interval to `field` of it.
  void add_to_steps(Device& d, const std::vector<Span>& merged, uint64_t cut, uint64_t StepAcc::* field);
  /// Files each open collective's exposure before `cut` against `work` (the device's other work,
  /// merged: everything after the previous cut), and closes those that end by it.
  void file_exposure(Device& d, const std::vector<Span>& work, uint64_t cut);

  static constexpr size_t kMaxMarks = 1u << 20;
  // 2^18 collectives (~40 MB): a 100-layer FSDP2 model's ~300 per step for 800 steps.
  static constexpr size_t kMaxCollectives = 1u << 18;
  std::vector<CollectiveRecord> collectives_;  // closed
  size_t collectives_kept_ = 0;                // open and closed
  uint64_t collectives_over_limit_ = 0;
  std::mutex mu_;
  std::map<uint32_t, Device> devices_;
  std::vector<uint64_t> marks_;
  std::vector<bool> recorded_;
  std::vector<uint32_t> epochs_;      // the epoch running from each mark on
  std::vector<uint32_t> marks_corr_;  // each mark's corr_before (never decreasing)
};

}  // namespace dlpt
