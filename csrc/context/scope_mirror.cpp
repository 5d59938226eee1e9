#include "scope_mirror.h"

namespace dlpt {

namespace {
constexpr auto kRelaxed = std::memory_order_relaxed;
}  // namespace

void ScopeMirror::push(const void* entry_frame, uint32_t name_id) {
  const uint32_t s = seq_.load(kRelaxed);
  seq_.store(s + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  const uint32_t d = depth_.load(kRelaxed);
  if (d < kMaxScopes) {
    frames_[d].store(reinterpret_cast<uintptr_t>(entry_frame), kRelaxed);
    names_[d].store(name_id, kRelaxed);
    depth_.store(d + 1, kRelaxed);
  } else {
    overflow_.store(overflow_.load(kRelaxed) + 1, kRelaxed);
  }
  seq_.store(s + 2, std::memory_order_release);
}

void ScopeMirror::pop() {
  const uint32_t s = seq_.load(kRelaxed);
  seq_.store(s + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  if (const uint32_t o = overflow_.load(kRelaxed)) {
    overflow_.store(o - 1, kRelaxed);
  } else if (const uint32_t d = depth_.load(kRelaxed)) {
    depth_.store(d - 1, kRelaxed);
  }
  seq_.store(s + 2, std::memory_order_release);
}

int ScopeMirror::read(MirroredScope* out, uint32_t* version) const {
  for (int attempt = 0; attempt < 4; ++attempt) {
    const uint32_t s1 = seq_.load(std::memory_order_acquire);
    if (s1 & 1) continue;
    uint32_t d = depth_.load(kRelaxed);
    if (d > kMaxScopes) d = kMaxScopes;
    for (uint32_t i = 0; i < d; ++i) {
      out[i].entry_frame = reinterpret_cast<const void*>(frames_[i].load(kRelaxed));
      out[i].name_id = names_[i].load(kRelaxed);
    }
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(kRelaxed) == s1) {
      *version = s1;
      return static_cast<int>(d);
    }
  }
  return -1;
}

}  // namespace dlpt
