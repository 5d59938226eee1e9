// Host timestamps for the hot path.
//
// Every timed op and CUDA API call reads the clock twice. steady_clock is a vDSO call (~20 ns,
// more under some hypervisors); the TSC is one instruction (~7 ns) and, on CPUs with an
// invariant TSC (constant_tsc + nonstop_tsc: the same rate on every core, in every power
// state), converts to nanoseconds exactly enough with one rate calibrated over the session.
// Where the TSC is not invariant (or not x86-64) ticks are steady_clock nanoseconds.
//
// Capture stores durations in ticks (Metrics::cpu_ticks, ...); export converts them with the
// session's TickRate.
#pragma once

#include <chrono>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace dlpt {

/// [MT] Monotonic host clock in nanoseconds.
inline uint64_t now_ns() {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

namespace detail {
/// Set once, before any capture starts (tsc_usable() at the first session start).
extern bool g_use_tsc;
}  // namespace detail

/// [MT] The hot-path timestamp, in ticks.
inline uint64_t ticks() {
#if defined(__x86_64__)
  if (detail::g_use_tsc) return __rdtsc();
#endif
  return now_ns();
}

/// Ticks -> nanoseconds for one session: two (ticks, ns) pairs taken at start and at stop.
class TickRate {
 public:
  /// [GIL] Decides, once per process, whether ticks are TSC cycles; then takes the first pair.
  void begin();
  /// [GIL] Takes the second pair; rate() is valid afterwards.
  void end();
  /// Nanoseconds per tick (1 when ticks are nanoseconds).
  double ns_per_tick() const { return ns_per_tick_; }
  uint64_t to_ns(uint64_t t) const { return static_cast<uint64_t>(static_cast<double>(t) * ns_per_tick_ + 0.5); }
  bool tsc() const { return tsc_; }

 private:
  uint64_t t0_ = 0, ns0_ = 0;
  double ns_per_tick_ = 1.0;
  bool tsc_ = false;
};

}  // namespace dlpt
