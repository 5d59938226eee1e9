// Step epochs: every cost is classified, after the fact, as per-step work or as work outside
// the steps (warm-up, a final evaluation, set-up before the first step).
//
// The run is a sequence of epochs: epoch 0 starts at start(), end_epoch(counted) ends the
// running one and starts the next, stop() ends the last. An epoch's class (counted or outside)
// is known only when it ends, so costs are recorded first and filed later:
//
// - Which epoch a cost belongs to: CPU-side costs (op CPU time, calls, CUDA API time, sync
//   waits) to the epoch running when they are added; GPU activity to the epoch of its launch
//   (carried with the correlation id), whenever its record arrives.
// - Where it is kept (EpochMetrics, one per node): its counted and its outside metrics, and
//   `pending` metrics tagged with the one epoch they hold. A cost of the tagged epoch goes to
//   `pending` (the hot path: one load and a compare more than a plain add); the first cost of a
//   later epoch folds `pending` into counted or outside by the tagged epoch's class, then retags
//   it; a cost of an epoch that already ended (a GPU record arriving late, a thread that read the
//   epoch just before a boundary) goes straight to that epoch's class. At stop every node is
//   folded.
// - Classes are one bit per epoch (Epochs), in chunks allocated as epochs end: 2 million steps
//   take 256 KiB.
// - A cut (Epochs::cut, the warm-up's: dlpt/capture/warmup.py) turns every epoch that ended
//   before it into outside: the warm-up counts its steps provisionally and drops them when it
//   sees the step time still falling. Future folds read the new class; what each holder already
//   filed as counted moves out when it next looks (its cut generation is behind): EpochMetrics at
//   its next fold, the other holders (op details, the host sampler, the idle blame) likewise or
//   at once.
// - The last cut can be undone until the run stops (Epochs::restore_last_cut): a fall seen a
//   few steps before the run ended, after a long stretch without one, leaves too few steps to
//   count (a busy host's quiet moment looks like a fall), and the warm-up then counts from the
//   cut before that stretch. So what a cut drops is kept apart, *dropped*, until a later cut that
//   starts a drop of its own (then outside for good), the restore (counted again) or the run's
//   stop (outside: Epochs::finish). A cut that *extends* the drop (the warm-up's cuts a few steps
//   apart: a fall seen over several steps) adds to it instead. A holder keeps three buckets
//   (counted, dropped, outside) and follows these events with CutsSeen.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "metrics.h"

namespace dlpt {

/// Where a cost of an ended epoch is filed now (see the top of this file).
enum class Filed : uint8_t { Counted, Dropped, Outside };

/// The running epoch and the class of every epoch that ended.
class Epochs {
 public:
  Epochs() = default;
  ~Epochs();
  Epochs(const Epochs&) = delete;
  Epochs& operator=(const Epochs&) = delete;

  /// [MT] The running epoch. Every epoch below it has its class.
  uint32_t current() const { return current_.load(std::memory_order_acquire); }

  /// [GIL] Ends the running epoch as `counted` (per-step work) or not (outside the steps);
  /// returns the new running epoch.
  uint32_t end(bool counted);

  /// [GIL] At stop: the running epoch ends as `last_counted`, or as counted if end() was never
  /// called (one epoch, today's result: everything recorded counts). Costs still arriving for it
  /// (GPU records flushed at stop) or after it (a callback racing with stop) take the same class.
  void finish(bool last_counted);

  /// [MT] Whether ended epoch `e` (e < current(), or any epoch after finish) was counted: given
  /// as counted when it ended, and not before the last cut.
  bool counted(uint32_t e) const { return filed(e) == Filed::Counted; }
  /// [MT] Where a cost of ended epoch `e` goes: counted as above; dropped if it was counted and
  /// lies in the drop (cut_range(): [keep_from, cut)), until the restore or the stop; else
  /// outside.
  Filed filed(uint32_t e) const;

  /// [GIL] Every epoch that ended so far is not counted from now on (see the top of this file):
  /// those since the last cut are dropped, with those the last cut dropped if `extend`, else
  /// alone (the earlier drop is outside for good). A no-op after the restore or finish.
  void cut(bool extend = false);
  /// [GIL] Before finish: the dropped epochs count again (a no-op without a cut, or a second
  /// time). Returns whether there was a cut to undo.
  bool restore_last_cut();
  /// [MT] Changes with every cut, the restore and finish: a holder whose CutsSeen is behind
  /// moves its buckets (CutsSeen::catch_up) before it files more.
  uint32_t cut_generation() const { return cut_gen_.load(std::memory_order_acquire); }
  /// [MT] The dropped epochs [keep_from, cut) and the last cut, read together: counted epochs
  /// from `cut` on count.
  struct CutRange {
    uint32_t keep_from = 0, cut = 0;
  };
  CutRange cut_range() const {
    const uint64_t r = cut_range_.load(std::memory_order_acquire);
    return {static_cast<uint32_t>(r >> 32), static_cast<uint32_t>(r)};
  }
  /// [MT] Whether the dropped epochs were restored; whether the run stopped.
  bool restored() const { return restored_.load(std::memory_order_acquire); }
  bool finished() const { return finished_.load(std::memory_order_acquire); }

  /// Whether end() was called in this session.
  bool ever_ended() const { return ever_ended_.load(std::memory_order_acquire); }

  /// The tag value of EpochMetrics while one thread folds it (never an epoch).
  static constexpr uint32_t kFolding = UINT32_MAX;

 private:
  static constexpr unsigned kChunkBits = 18;  // 2^18 epochs (32 KiB) per chunk
  static constexpr uint32_t kChunkEpochs = 1u << kChunkBits;
  static constexpr uint32_t kMaxChunks = 1u << 14;  // 2^32 epochs
  static constexpr size_t kWordsPerChunk = kChunkEpochs / 64;

  void classify(uint32_t e, bool counted);

  std::atomic<uint32_t> current_{0};
  std::atomic<bool> ever_ended_{false};
  std::atomic<bool> finished_{false};
  // The class of every epoch from the last one on, once finished (before: never asked).
  std::atomic<bool> tail_counted_{true};
  // CutRange packed (keep_from << 32 | cut) so that a reader never sees half a cut.
  std::atomic<uint64_t> cut_range_{0};
  std::atomic<uint32_t> cut_gen_{0};
  std::atomic<bool> restored_{false};
  std::atomic<std::atomic<uint64_t>*> chunks_[kMaxChunks] = {};
};

/// What a holder of counted, dropped and outside amounts has followed of the cuts (see top).
/// Only the thread that files into the holder (or holds its lock) calls catch_up.
struct CutsSeen {
  uint32_t generation = 0;
  Epochs::CutRange range;  // the cut range the buckets were filed under
  bool restored = false, finished = false;

  /// Brings the holder's buckets up to date with `epochs`: calls move(from, to) for each move,
  /// in order. The holder's counted amounts are of epochs from its range's cut up to the next
  /// cut (a holder files only epochs that ended), its dropped ones of its range. Cuts since:
  /// a range that still begins where the holder's does was extended (counted joins the drop);
  /// one that begins at the holder's cut is one new drop (the old one is outside for good,
  /// counted is the new drop); any other lies after both (all outside). The restore counts the
  /// drop again; the stop makes it outside.
  template <typename Move>
  void catch_up(const Epochs& epochs, Move&& move) {
    const uint32_t gen = epochs.cut_generation();
    if (gen == generation) return;
    generation = gen;
    const Epochs::CutRange now = epochs.cut_range();
    if (now.cut != range.cut) {
      if (now.keep_from == range.keep_from) {
        move(Filed::Counted, Filed::Dropped);
      } else {
        move(Filed::Dropped, Filed::Outside);
        move(Filed::Counted, now.keep_from == range.cut ? Filed::Dropped : Filed::Outside);
      }
      range = now;
    }
    if (epochs.restored() && !restored) {
      move(Filed::Dropped, Filed::Counted);
      restored = true;
    }
    if (epochs.finished() && !finished) {
      move(Filed::Dropped, Filed::Outside);
      finished = true;
    }
  }
};

/// One node's metrics, split by the class of the epoch each cost belongs to (see top).
///
/// [MT] Any number of threads add concurrently, without locks; moving an amount between metric
/// sets is an atomic exchange of that amount, so an add is never lost and never counted twice.
/// What a boundary can misfile: an add racing with another thread's fold of the same node (the
/// first add of that node in a new epoch) lands in the node's new `pending`, i.e. in the next
/// epoch: the writer read the old tag just before the fold, or found the fold under way (its add
/// is carried into the new `pending`). Only if end_epoch() itself runs during that fold (tens of
/// nanoseconds) can such an add land one epoch early instead. Single-writer nodes (kernel, copy
/// and memset leaves: the activity thread) are always filed exactly.
class EpochMetrics {
 public:
  EpochMetrics() = default;
  ~EpochMetrics();
  EpochMetrics(const EpochMetrics&) = delete;
  EpochMetrics& operator=(const EpochMetrics&) = delete;

  /// [MT] The metrics a cost of epoch `e` is added to now.
  Metrics& at(uint32_t e, const Epochs& epochs) {
    if (tag_.load(std::memory_order_acquire) == e) return pending_;
    return at_slow(e, epochs);
  }

  /// After capture (no writer left; Epochs::finish called): folds everything into counted and
  /// outside.
  void fold_all(const Epochs& epochs);
  const Metrics& counted() const { return counted_; }
  const Metrics& outside() const { return outside_; }

  /// Second moments of the per-step amounts of counted epochs: the sum over counted epochs of
  /// (that epoch's cpu_ticks)^2, (gpu_ns)^2 and (sync_ticks)^2. Taken when a node's `pending`
  /// folds (once per node per epoch it was touched in: the cost is proportional to the nodes a
  /// step touched); costs filed straight into `counted` (a late record of an epoch the node
  /// already moved past, an add racing with a fold) are in the sums but not in the squares.
  /// After fold_all only.
  double sq_cpu_ticks() const { return sq_[0]; }
  double sq_gpu_ns() const { return sq_[1]; }
  double sq_sync_ticks() const { return sq_[2]; }

 private:
  /// What the last cut dropped from this node (kept until the next cut, the restore or the
  /// stop), with its squares. Allocated the first time a cut drops something of it.
  struct Dropped {
    Metrics m;
    double sq[3] = {0, 0, 0};
  };

  Metrics& at_slow(uint32_t e, const Epochs& epochs);
  Metrics& carry();
  Dropped& dropped();
  // Where a cost of ended epoch `e` goes when it is filed straight into its class. A dropped
  // epoch's cost goes to counted_ while this node has not yet followed the cut that dropped it:
  // its catch-up moves counted_ to dropped then (its tag is after the drop's start, so it
  // followed every earlier cut; a fold racing with this add can leave it in counted_, as any
  // add racing with a fold: see above).
  Metrics& folded(uint32_t e, const Epochs& epochs);
  Metrics& bucket(Filed f);
  // Folds `pending_` (holding epoch `t`) into its class, squaring its amounts into sq_ when
  // counted (dropped: the dropped squares). Only by the thread that claimed the fold (tag_ ==
  // kFolding) or after capture.
  void fold_pending(uint32_t t, const Epochs& epochs);
  // Moves one bucket into another, squares with it (CutsSeen::catch_up's move).
  void move_bucket(Filed from, Filed to);

  std::atomic<uint32_t> tag_{0};  // the epoch `pending_` holds, or Epochs::kFolding
  Metrics pending_;
  Metrics counted_, outside_;
  double sq_[3] = {0, 0, 0};  // see sq_cpu_ticks(); written only by the folding thread
  // The cuts counted_, dropped and sq_ were filed under; only the folding thread reads or writes
  // it. Behind: the buckets move before the next fold.
  CutsSeen seen_;
  std::atomic<uint32_t> cut_seen_{0};  // seen_.range.cut, for folded() on other threads
  std::atomic<Dropped*> dropped_{nullptr};
  void catch_up_with_cuts(const Epochs& epochs);
  // Costs of the running epoch added while another thread folds this node: moved into
  // `pending_` by the next fold (so never filed into an earlier epoch). Allocated on first use:
  // folds overlap with adds of the same node rarely.
  std::atomic<Metrics*> carry_{nullptr};
};

/// Moves everything in `from` into `to` (exchanges: concurrent adds to `from` either move or
/// stay). [MT]
void move_metrics(Metrics& from, Metrics& to);

}  // namespace dlpt
