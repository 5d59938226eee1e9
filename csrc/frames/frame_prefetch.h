// Prefetching the frames of the last walk before walking again.
//
// Between two aten ops of a deep stack (Hugging Face `generate`: ~60 frames) the driver, torch
// and Python evict the interpreter frames from the core's near caches, and the walk is a chain
// of dependent loads (each frame's `previous`): measured in place on an H100 host, decode's op
// starts spent ~30 ms per step walking frames, half of dlpt's own time, where the same walk run
// back to back costs 250 ns at depth 50 (docs/overhead.md).
// The frames of the last walk are where this walk will most likely go (consecutive ops share
// all but their innermost frames), so their lines are requested together, up front, and the
// walk then finds them on the way. A prefetch never faults: an address whose frame has since
// returned costs a wasted request, nothing else. Shallow stacks are not worth it.
// Thread contract: owned by one ThreadState ([MT: owning thread]).
#pragma once

#include <array>
#include <cstddef>

#include "python_stack.h"

namespace dlpt {

class FramePrefetch {
 public:
  /// Requests the lines of the frames remembered last (when the stack was deep).
  void issue() const {
    if (n_ < kMinDepth) return;
    for (size_t i = 0; i < n_; ++i) {
      const char* f = static_cast<const char*>(frames_[i]);
      __builtin_prefetch(f);
      __builtin_prefetch(f + 64);  // a frame's fields the walk reads can straddle two lines
    }
  }

  /// Remembers the frames of this walk (innermost first; the innermost kMax of them).
  void remember(const RawFrame* raw, size_t n) {
    n_ = n < kMax ? n : kMax;
    for (size_t i = 0; i < n_; ++i) frames_[i] = raw[i].frame;
  }

 private:
  static constexpr size_t kMax = 128;
  static constexpr size_t kMinDepth = 16;  // below this the walk is a few hits anyway
  std::array<const void*, kMax> frames_{};
  size_t n_ = 0;
};

}  // namespace dlpt
