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
//   filed as counted moves to outside when it next looks (its cut generation is behind):
//   EpochMetrics at its next fold, the other holders (op details, the host sampler, the idle
//   blame) likewise or at once.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "metrics.h"

namespace dlpt {

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
  bool counted(uint32_t e) const;

  /// [GIL] Every epoch that ended so far is outside from now on (see the top of this file).
  void cut();
  /// [MT] How many cuts there were: a holder that filed counted amounts under an older value
  /// moves them to outside before it files more.
  uint32_t cut_generation() const { return cut_gen_.load(std::memory_order_acquire); }

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
  std::atomic<uint32_t> cut_epoch_{0};  // epochs below it are outside (the last cut)
  std::atomic<uint32_t> cut_gen_{0};
  std::atomic<std::atomic<uint64_t>*> chunks_[kMaxChunks] = {};
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

  /// After capture (no writer left): folds everything into counted and outside.
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
  Metrics& at_slow(uint32_t e, const Epochs& epochs);
  Metrics& carry();
  Metrics& folded(uint32_t e, const Epochs& epochs) { return epochs.counted(e) ? counted_ : outside_; }
  // Folds `pending_` (holding epoch `t`) into its class, squaring its amounts into sq_ when
  // counted. Only by the thread that claimed the fold (tag_ == kFolding) or after capture.
  void fold_pending(uint32_t t, const Epochs& epochs);

  std::atomic<uint32_t> tag_{0};  // the epoch `pending_` holds, or Epochs::kFolding
  Metrics pending_;
  Metrics counted_, outside_;
  double sq_[3] = {0, 0, 0};  // see sq_cpu_ticks(); written only by the folding thread
  // The cut generation counted_ and sq_ were filed under (Epochs::cut_generation); only the
  // folding thread reads or writes it. Behind: counted_ moves to outside_ before the next fold.
  uint32_t cut_gen_ = 0;
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
