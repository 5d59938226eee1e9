// A copy of one thread's open scopes (dlpt.scope, top-level record_function regions) that the
// sampler thread can read while the owning thread runs.
//
// The op path places a scope node above the frame that entered the scope (ThreadState::
// frame_node); the sampler must place its samples on the same nodes, but ThreadState's scope
// list is a vector only its thread may touch. Each ThreadState therefore keeps this mirror as
// well: a fixed array behind a sequence lock. The owning thread writes it (push/pop, a few
// stores); the sampler copies it and retries when a write overlapped its copy.
//
// Thread contract: push/pop [MT: owning thread]; read [MT: any thread].
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace dlpt {

struct MirroredScope {
  const void* entry_frame;  // the frame that entered the scope
  uint32_t name_id;         // its name in the session's string table
};

class ScopeMirror {
 public:
  static constexpr size_t kMaxScopes = 32;  // deeper nests are left out of sampled paths (counted)

  void push(const void* entry_frame, uint32_t name_id);
  void pop();

  /// Copies the open scopes (outermost first) into `out`; their number, or -1 when a write kept
  /// overlapping the copy. `version` receives the sequence number the copy is consistent with.
  int read(MirroredScope* out, uint32_t* version) const;

 private:
  std::atomic<uint32_t> seq_{0};  // odd while a write is under way
  std::atomic<uint32_t> depth_{0};
  std::atomic<uint32_t> overflow_{0};  // pushes beyond kMaxScopes not yet popped
  std::atomic<uintptr_t> frames_[kMaxScopes] = {};
  std::atomic<uint32_t> names_[kMaxScopes] = {};
};

}  // namespace dlpt
