#include "epochs.h"

namespace dlpt {

// ---- Epochs ------------------------------------------------------------------------------

Epochs::~Epochs() {
  for (auto& c : chunks_) delete[] c.load(std::memory_order_relaxed);
}

void Epochs::classify(uint32_t e, bool counted) {
  const uint32_t chunk = e >> kChunkBits;
  std::atomic<uint64_t>* words = chunks_[chunk].load(std::memory_order_acquire);
  if (words == nullptr) {
    words = new std::atomic<uint64_t>[kWordsPerChunk]();
    chunks_[chunk].store(words, std::memory_order_release);
  }
  if (counted) words[(e & (kChunkEpochs - 1)) >> 6].fetch_or(1ull << (e & 63), std::memory_order_release);
}

uint32_t Epochs::end(bool counted) {
  const uint32_t e = current_.load(std::memory_order_relaxed);
  // The last epoch a 32-bit counter can name stays the running one (2^32 steps: never).
  if (e == kFolding - 1) return e;
  classify(e, counted);
  ever_ended_.store(true, std::memory_order_release);
  // Release: whoever reads the new epoch also sees the class of the one that ended.
  current_.store(e + 1, std::memory_order_release);
  return e + 1;
}

void Epochs::finish(bool last_counted) {
  if (finished_.load(std::memory_order_relaxed)) return;
  const bool tail = ever_ended() ? last_counted : true;
  tail_counted_.store(tail, std::memory_order_relaxed);
  const uint32_t e = current_.load(std::memory_order_relaxed);
  classify(e, tail);
  finished_.store(true, std::memory_order_release);
  if (e < kFolding - 1) current_.store(e + 1, std::memory_order_release);
}

void Epochs::cut() {
  cut_epoch_.store(current_.load(std::memory_order_relaxed), std::memory_order_release);
  // Release: a holder that sees the new generation also sees the new cut epoch.
  cut_gen_.fetch_add(1, std::memory_order_release);
}

bool Epochs::counted(uint32_t e) const {
  if (e < cut_epoch_.load(std::memory_order_acquire)) return false;
  if (e >= current_.load(std::memory_order_acquire)) return tail_counted_.load(std::memory_order_relaxed);
  const std::atomic<uint64_t>* words = chunks_[e >> kChunkBits].load(std::memory_order_acquire);
  if (words == nullptr) return false;
  return (words[(e & (kChunkEpochs - 1)) >> 6].load(std::memory_order_acquire) >> (e & 63)) & 1;
}

// ---- metrics ------------------------------------------------------------------------------

namespace {
void move_sum(std::atomic<uint64_t>& from, std::atomic<uint64_t>& to) {
  if (from.load(std::memory_order_relaxed) == 0) return;  // an add racing with this stays: next epoch
  if (const uint64_t v = from.exchange(0, std::memory_order_acq_rel)) to.fetch_add(v, std::memory_order_relaxed);
}

void move_min(std::atomic<uint64_t>& from, std::atomic<uint64_t>& to) {
  if (from.load(std::memory_order_relaxed) == UINT64_MAX) return;
  const uint64_t v = from.exchange(UINT64_MAX, std::memory_order_acq_rel);
  uint64_t cur = to.load(std::memory_order_relaxed);
  while (v < cur && !to.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}

void move_max(std::atomic<uint64_t>& from, std::atomic<uint64_t>& to) {
  if (from.load(std::memory_order_relaxed) == 0) return;
  const uint64_t v = from.exchange(0, std::memory_order_acq_rel);
  uint64_t cur = to.load(std::memory_order_relaxed);
  while (v > cur && !to.compare_exchange_weak(cur, v, std::memory_order_relaxed)) {
  }
}
}  // namespace

void move_metrics(Metrics& from, Metrics& to) {
  move_sum(from.calls, to.calls);
  move_sum(from.cpu_ticks, to.cpu_ticks);
  move_sum(from.gpu_ns, to.gpu_ns);
  move_sum(from.count, to.count);
  move_sum(from.bytes, to.bytes);
  move_sum(from.sync_ticks, to.sync_ticks);
  move_sum(from.api_ticks, to.api_ticks);
  move_min(from.min_ns, to.min_ns);
  move_max(from.max_ns, to.max_ns);
}

EpochMetrics::~EpochMetrics() { delete carry_.load(std::memory_order_relaxed); }

Metrics& EpochMetrics::carry() {
  Metrics* c = carry_.load(std::memory_order_acquire);
  if (c != nullptr) return *c;
  auto* fresh = new Metrics();
  if (carry_.compare_exchange_strong(c, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread's won
  return *c;
}

Metrics& EpochMetrics::at_slow(uint32_t e, const Epochs& epochs) {
  for (;;) {
    uint32_t t = tag_.load(std::memory_order_acquire);
    if (t == e) return pending_;
    if (t == Epochs::kFolding) {
      // Another thread folds this node. An epoch that ended has its class: file it exactly;
      // the running one is carried into the node's next `pending`.
      return e < epochs.current() ? folded(e, epochs) : carry();
    }
    // Ours ended while the node moved on (a late GPU record, a thread that read the epoch just
    // before a boundary): its class is known.
    if (t > e) return folded(e, epochs);
    // t < e: the node holds an epoch that ended (t < e <= current). Claim the fold.
    if (!tag_.compare_exchange_strong(t, Epochs::kFolding, std::memory_order_acq_rel)) continue;
    fold_pending(t, epochs);
    if (Metrics* c = carry_.load(std::memory_order_acquire)) move_metrics(*c, pending_);
    tag_.store(e, std::memory_order_release);
    return pending_;
  }
}

void EpochMetrics::catch_up_with_cuts(const Epochs& epochs) {
  const uint32_t gen = epochs.cut_generation();
  if (gen == cut_gen_) return;
  // Everything filed as counted so far belongs to epochs before the cut (a fold files only
  // epochs that ended, and this runs before any fold after the cut).
  move_metrics(counted_, outside_);
  sq_[0] = sq_[1] = sq_[2] = 0;
  cut_gen_ = gen;
}

void EpochMetrics::fold_pending(uint32_t t, const Epochs& epochs) {
  catch_up_with_cuts(epochs);
  if (epochs.counted(t)) {
    // The epoch's amounts on this node, read just before they move (an add racing with this
    // read moves with them: in the sums, not in the squares).
    const double v[3] = {static_cast<double>(pending_.cpu_ticks.load(std::memory_order_relaxed)),
                         static_cast<double>(pending_.gpu_ns.load(std::memory_order_relaxed)),
                         static_cast<double>(pending_.sync_ticks.load(std::memory_order_relaxed))};
    for (int i = 0; i < 3; ++i) sq_[i] += v[i] * v[i];
  }
  move_metrics(pending_, folded(t, epochs));
}

void EpochMetrics::fold_all(const Epochs& epochs) {
  uint32_t t = tag_.load(std::memory_order_acquire);
  // No fold can be under way after capture; if one were, its epoch is the last one.
  if (t == Epochs::kFolding) t = epochs.current();
  fold_pending(t, epochs);  // catches up with the cuts first
  Metrics& to = folded(t, epochs);
  if (Metrics* c = carry_.load(std::memory_order_acquire)) move_metrics(*c, to);
}

}  // namespace dlpt
