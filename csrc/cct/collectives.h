// Every collective-communication kernel of a run, with how much of it ran with no other GPU work
// on its device, in kCollectiveBins equal parts of its duration.
//
// Why: a rank waits for its peers from the start of its collective until the last rank's
// collective started (dlpt/analysis/ranks/arrivals.py). Ranks' clocks need not agree (several
// hosts), so the report across ranks takes that from durations: a collective ends on every rank
// at about the same time, after the last rank arrived, so a rank's kernel is longer than the
// shortest rank's by how long it waited, at its start. Whether that wait cost the rank anything
// depends on whether its GPU had other work meanwhile (FSDP2's prefetched all-gathers spin beside
// compute): only this rank's own records know, so each kernel carries its exposed time per bin,
// and the report reads it over the wait's length.
//
// Filled by BusyTracker (busy.h), which has the other work's intervals when it folds them.
#pragma once

#include <array>
#include <cstdint>

namespace dlpt {

constexpr unsigned kCollectiveBins = 16;

/// What the activity path knows of a collective kernel beyond its interval.
struct CollectiveTag {
  uint32_t epoch = 0;  // the epoch of its launch (cct/epochs.h): the step it belongs to
  uint32_t corr = 0;   // its correlation id: launch order within the process
  uint32_t name = 0;   // interned kernel name (Tree::strings)
};

struct CollectiveRecord {
  uint32_t device = 0;
  CollectiveTag tag;
  uint64_t start = 0, end = 0;
  uint64_t known_until = 0;                            // exposure is filed up to here (BusyTracker::fold)
  std::array<uint64_t, kCollectiveBins> exposed_ns{};  // per bin: time with no other work running

  /// Bin `i`'s interval: [bin_start(i), bin_start(i + 1)).
  uint64_t bin_start(unsigned i) const { return start + (end - start) * i / kCollectiveBins; }
};

}  // namespace dlpt
