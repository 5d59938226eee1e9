// Shared helpers for the native core.
//
// Thread-contract markers used in comments across csrc/:
//   /// [MT]     may run concurrently on any thread (op callbacks, CUPTI threads), without the GIL.
//   /// [GIL]    must be called with the GIL held (Python-facing entry points).
#pragma once

#include <chrono>
#include <cstdint>

namespace dlpt {

/// [MT] Monotonic host clock in nanoseconds (steady_clock is a vDSO call, ~20 ns).
inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

using NodeId = uint32_t;
constexpr NodeId kNoNode = 0xFFFFFFFFu;
constexpr NodeId kRootNode = 0;

}  // namespace dlpt
