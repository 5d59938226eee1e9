// GPU idle blamed on the host: which Python lines the step's thread was in while the GPU waited.
//
// Each recorded step (between two step marks, CUPTI clock) splits a device's time into busy
// (some kernel, copy or memset running) and idle: before the step's first GPU work, between its
// kernels, after its last (the same split as meta.gpu_steps: first/last are the earliest start
// and latest end of the work that started inside the step). Every host sample of the step's
// thread taken inside the step is put into one of those four classes, per device, and its
// weight (the sampling interval) summed per calling-context node: "the GPU idled before its
// first kernel while the host was in data.py:41 load_batch".
//
// GPU records arrive late and out of order (CUPTI's buffers, up to its flush period after the
// work ran), so a step is resolved only once it is closed and settled (the clock has moved
// kSettleNs past its end), or at the end of the profile after the final flush. Memory is bounded:
// samples and spans of unresolved steps only (caps below; beyond them the oldest closed step is
// resolved early, or, within one endless step, new samples and spans are dropped: both
// counted), and per (device, class, node) sums, whose size is bounded by the tree's.
//
// Thread contract: [MT] every method, under one mutex (activity from CUPTI's buffer thread,
// samples from the sampler thread, marks from the thread ending a step).
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "../common.h"

namespace dlpt::host {

enum class Gap : uint8_t { Before = 0, Between = 1, After = 2, Busy = 3 };
constexpr size_t kGaps = 4;
const char* gap_name(Gap g);

struct BlameCell {
  uint64_t ns = 0;      // sampled wall time
  uint64_t gil_ns = 0;  // ... of which the thread held the GIL
  void add(uint64_t w, bool gil) {
    ns += w;
    if (gil) gil_ns += w;
  }
  void merge(const BlameCell& o) {
    ns += o.ns;
    gil_ns += o.gil_ns;
  }
};

using BlameByNode = std::unordered_map<NodeId, BlameCell>;

/// Sums over the resolved recorded steps.
struct BlameTotals {
  uint64_t steps = 0;  // recorded steps resolved
  BlameByNode host;    // every sample of the step's thread inside a recorded step
  std::map<uint32_t, std::array<BlameByNode, kGaps>> devices;
  uint64_t samples_dropped = 0;  // samples beyond the cap inside one unresolved step
  uint64_t spans_dropped = 0;    // GPU spans beyond the cap
  uint64_t resolved_early = 0;   // steps resolved before they settled (caps reached)
  uint64_t late_spans = 0;       // GPU work of a step already resolved
};

class IdleBlame {
 public:
  /// `gpu`: classify against GPU work (else only the host sums are kept, steps resolve at once).
  explicit IdleBlame(bool gpu) : gpu_(gpu) {}

  /// `corr_before`: the latest correlation id launched before the mark (0: unknown; see
  /// BusyTracker::mark_step): work launched before it is the previous steps', not this one's.
  void mark(uint64_t t, bool recorded, uint32_t corr_before = 0);
  /// The open interval is recorded only if it was and `counted` (it ended outside the steps).
  void classify_open(bool counted);
  /// The open interval is recorded or not (a switch right after the mark that opened it).
  void set_open(bool recorded);
  /// A cut (cct/epochs.h): every step before the open interval was provisional and is dropped,
  /// resolved (its sums) or not (no longer recorded). What it drops is kept apart, with what the
  /// last cut dropped if `extend`, until a cut that does not extend it or restore_last_cut
  /// (finish leaves it out).
  void cut(bool extend = false);
  /// The last cut is undone (Epochs::restore_last_cut): the steps it dropped are recorded again.
  void restore_last_cut();
  /// GPU work of a launch with correlation id `corr` (0: unknown, filed as the step's own).
  void work(uint32_t device, uint64_t start, uint64_t end, uint32_t corr = 0);
  void sample(uint64_t t, NodeId node, uint64_t weight_ns, bool gil);
  /// Resolves closed steps that ended at least kSettleNs before `now`.
  void settle(uint64_t now);
  /// Resolves every closed step (call after the final flush) and returns the sums.
  BlameTotals finish();

  static constexpr uint64_t kSettleNs = 500'000'000;  // 5x CUPTI's flush period (tracer.cpp)
  static constexpr size_t kMaxSamples = 1u << 17;
  static constexpr size_t kMaxSpans = 1u << 20;  // per device

 private:
  using Span = std::pair<uint64_t, uint64_t>;
  struct Sample {
    uint64_t t, weight;
    NodeId node;
    bool gil;
  };
  struct Interval {
    uint64_t start;
    bool recorded;
    bool dropped = false;           // recorded until a cut dropped it (resolved into dropped_)
    std::map<uint32_t, Span> work;  // device -> (first start, last end) of work starting inside,
                                    // launched after the mark where launches are known
    uint32_t corr_before = 0;       // mark()'s
  };
  struct Device {
    std::vector<Span> pending;  // unmerged
    std::vector<Span> merged;   // sorted, disjoint
  };

  void resolve_one();  // under mu_: the oldest closed interval
  // The step sums of `from` (steps, host, devices) added to `into`.
  static void merge_steps(const BlameTotals& from, BlameTotals& into);
  void pressure();  // under mu_: caps reached
  bool busy(Device& d, uint64_t t);

  const bool gpu_;
  std::mutex mu_;
  std::deque<Interval> intervals_;  // unresolved; the last one is still open
  uint32_t corr_before_ = 0;        // the latest mark's (never decreasing)
  std::deque<Sample> samples_;
  std::map<uint32_t, Device> devices_;
  BlameTotals totals_;
  BlameTotals dropped_;  // the sums (steps, host, devices) of the drop's steps
};

}  // namespace dlpt::host
