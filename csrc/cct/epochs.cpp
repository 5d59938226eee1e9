#include "epochs.h"

namespace dlpt {

namespace {

/// [MT] What `slot` points at, allocated by the first thread that asks: threads that race
/// allocate one each, and all but the one whose compare-exchange won delete theirs. The owner's
/// destructor frees it.
template <typename T>
T& allocated_once(std::atomic<T*>& slot) {
  T* have = slot.load(std::memory_order_acquire);
  if (have != nullptr) return *have;
  auto* fresh = new T();
  if (slot.compare_exchange_strong(have, fresh, std::memory_order_acq_rel)) return *fresh;
  delete fresh;  // another thread's won
  return *have;
}

}  // namespace

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
  cut_gen_.fetch_add(1, std::memory_order_release);  // what the last cut dropped is outside now
}

void Epochs::cut(bool extend) {
  if (restored_.load(std::memory_order_relaxed) || finished_.load(std::memory_order_relaxed)) return;
  const CutRange old = cut_range();
  const uint64_t keep_from = extend ? old.keep_from : old.cut;
  cut_range_.store(keep_from << 32 | current_.load(std::memory_order_relaxed), std::memory_order_release);
  // Release: a holder that sees the new generation also sees the new range.
  cut_gen_.fetch_add(1, std::memory_order_release);
}

bool Epochs::restore_last_cut() {
  if (cut_range().cut == 0 || restored_.load(std::memory_order_relaxed) || finished_.load(std::memory_order_relaxed)) {
    return false;
  }
  restored_.store(true, std::memory_order_release);
  cut_gen_.fetch_add(1, std::memory_order_release);
  return true;
}

Filed Epochs::filed(uint32_t e) const {
  bool was_counted = false;
  if (e >= current_.load(std::memory_order_acquire)) {
    was_counted = tail_counted_.load(std::memory_order_relaxed);
  } else if (const std::atomic<uint64_t>* words = chunks_[e >> kChunkBits].load(std::memory_order_acquire)) {
    was_counted = (words[(e & (kChunkEpochs - 1)) >> 6].load(std::memory_order_acquire) >> (e & 63)) & 1;
  }
  if (!was_counted) return Filed::Outside;
  const CutRange r = cut_range();
  if (e >= r.cut) return Filed::Counted;
  if (e < r.keep_from) return Filed::Outside;
  if (restored_.load(std::memory_order_acquire)) return Filed::Counted;
  return finished_.load(std::memory_order_acquire) ? Filed::Outside : Filed::Dropped;
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
bool holds_nothing(const Metrics& m) {
  return m.calls.load(std::memory_order_relaxed) == 0 && m.cpu_ticks.load(std::memory_order_relaxed) == 0 &&
         m.gpu_ns.load(std::memory_order_relaxed) == 0 && m.count.load(std::memory_order_relaxed) == 0 &&
         m.bytes.load(std::memory_order_relaxed) == 0 && m.sync_ticks.load(std::memory_order_relaxed) == 0 &&
         m.api_ticks.load(std::memory_order_relaxed) == 0 && m.min_ns.load(std::memory_order_relaxed) == UINT64_MAX &&
         m.max_ns.load(std::memory_order_relaxed) == 0;
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

EpochMetrics::~EpochMetrics() {
  delete carry_.load(std::memory_order_relaxed);
  delete dropped_.load(std::memory_order_relaxed);
}

Metrics& EpochMetrics::carry() { return allocated_once(carry_); }

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

EpochMetrics::Dropped& EpochMetrics::dropped() { return allocated_once(dropped_); }

Metrics& EpochMetrics::bucket(Filed f) {
  switch (f) {
    case Filed::Counted:
      return counted_;
    case Filed::Dropped:
      return dropped().m;
    case Filed::Outside:
      break;
  }
  return outside_;
}

Metrics& EpochMetrics::folded(uint32_t e, const Epochs& epochs) {
  const Filed f = epochs.filed(e);
  if (f == Filed::Dropped && cut_seen_.load(std::memory_order_acquire) != epochs.cut_range().cut) return counted_;
  return bucket(f);
}

void EpochMetrics::move_bucket(Filed from, Filed to) {
  if (from == Filed::Dropped && dropped_.load(std::memory_order_acquire) == nullptr) return;  // none
  // A node with nothing counted needs no dropped bucket (most nodes of a run without a cut).
  if (from == Filed::Counted && to == Filed::Dropped && holds_nothing(counted_) && sq_[0] == 0 && sq_[1] == 0 &&
      sq_[2] == 0) {
    return;
  }
  move_metrics(bucket(from), bucket(to));
  double* sq_from = from == Filed::Counted ? sq_ : from == Filed::Dropped ? dropped().sq : nullptr;
  double* sq_to = to == Filed::Counted ? sq_ : to == Filed::Dropped ? dropped().sq : nullptr;
  if (sq_from == nullptr) return;  // outside keeps no squares
  for (int i = 0; i < 3; ++i) {
    if (sq_to != nullptr) sq_to[i] += sq_from[i];
    sq_from[i] = 0;
  }
}

void EpochMetrics::catch_up_with_cuts(const Epochs& epochs) {
  // Everything filed as counted so far belongs to epochs before any cut it has not followed (a
  // fold files only epochs that ended, and this runs before any fold after the cut).
  seen_.catch_up(epochs, [this](Filed from, Filed to) { move_bucket(from, to); });
  cut_seen_.store(seen_.range.cut, std::memory_order_release);
}

void EpochMetrics::fold_pending(uint32_t t, const Epochs& epochs) {
  catch_up_with_cuts(epochs);
  const Filed f = epochs.filed(t);
  if (f != Filed::Outside) {
    // The epoch's amounts on this node, read just before they move (an add racing with this
    // read moves with them: in the sums, not in the squares).
    const double v[3] = {static_cast<double>(pending_.cpu_ticks.load(std::memory_order_relaxed)),
                         static_cast<double>(pending_.gpu_ns.load(std::memory_order_relaxed)),
                         static_cast<double>(pending_.sync_ticks.load(std::memory_order_relaxed))};
    double* sq = f == Filed::Counted ? sq_ : dropped().sq;
    for (int i = 0; i < 3; ++i) sq[i] += v[i] * v[i];
  }
  move_metrics(pending_, bucket(f));
}

void EpochMetrics::fold_all(const Epochs& epochs) {
  uint32_t t = tag_.load(std::memory_order_acquire);
  // No fold can be under way after capture; if one were, its epoch is the last one.
  if (t == Epochs::kFolding) t = epochs.current();
  fold_pending(t, epochs);  // catches up with the cuts and the stop first
  Metrics& to = bucket(epochs.filed(t));
  if (Metrics* c = carry_.load(std::memory_order_acquire)) move_metrics(*c, to);
}

}  // namespace dlpt
