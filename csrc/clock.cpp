#include "clock.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

namespace dlpt {

namespace detail {
bool g_use_tsc = false;
}  // namespace detail

namespace {

/// Whether the kernel reports an invariant TSC (same rate on all cores and in all power states).
bool tsc_usable() {
#if defined(__x86_64__)
  if (const char* env = std::getenv("DLPT_NO_TSC"); env && *env && std::strcmp(env, "0") != 0) return false;
  std::ifstream info("/proc/cpuinfo");
  std::string line;
  while (std::getline(info, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    }
  }
#endif
  return false;
}

/// A (ticks, ns) pair read as close together as possible: ticks taken on both sides of the
/// clock read and averaged.
void pair(uint64_t* t, uint64_t* ns) {
  const uint64_t a = ticks();
  *ns = now_ns();
  const uint64_t b = ticks();
  *t = a + (b - a) / 2;
}

}  // namespace

void TickRate::begin() {
  static const bool usable = tsc_usable();
  detail::g_use_tsc = usable;
  tsc_ = usable;
  pair(&t0_, &ns0_);
  ns_per_tick_ = 1.0;
}

void TickRate::end() {
  // A rate measured over less than a few milliseconds is too coarse: wait that long if needed
  // (only very short profiles pay it, once, at stop).
  constexpr uint64_t kMinSpanNs = 2'000'000;
  const uint64_t elapsed = now_ns() - ns0_;
  if (tsc_ && elapsed < kMinSpanNs) std::this_thread::sleep_for(std::chrono::nanoseconds(kMinSpanNs - elapsed));
  uint64_t t1 = 0, ns1 = 0;
  pair(&t1, &ns1);
  if (tsc_ && t1 > t0_ && ns1 > ns0_) {
    ns_per_tick_ = static_cast<double>(ns1 - ns0_) / static_cast<double>(t1 - t0_);
  } else {
    ns_per_tick_ = 1.0;
  }
}

}  // namespace dlpt
