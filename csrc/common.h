// Shared helpers for the native core.
//
// Thread-contract markers used in comments across csrc/:
//   /// [MT]     may run concurrently on any thread (op callbacks, CUPTI threads), without the GIL.
//   /// [GIL]    must be called with the GIL held (Python-facing entry points).
#pragma once

#include <cstdint>

namespace dlpt {

using NodeId = uint32_t;
constexpr NodeId kNoNode = 0xFFFFFFFFu;
constexpr NodeId kRootNode = 0;

}  // namespace dlpt
