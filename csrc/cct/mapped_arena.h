// Memory for records that live as long as a session, in blocks of their own (mmap), never from
// the heap the program's tensors come from.
//
// Small long-lived records allocated with malloc land between the program's freed tensor blocks
// and pin them: --flops with changing input shapes (a new signature record now and then, between
// allocations of ever other sizes) took 3.9 GB where the run takes 0.34 GB without dlpt, glibc
// unable to reuse or return the memory around them. A monotonic arena over mapped blocks keeps
// them apart; everything is unmapped when the session ends.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <memory_resource>
#include <new>

namespace dlpt {

/// Blocks straight from mmap (for a monotonic_buffer_resource over it: few, growing blocks).
class MappedBlocks : public std::pmr::memory_resource {
 private:
  void* do_allocate(size_t bytes, size_t /*align: a page is aligned for anything*/) override {
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  void do_deallocate(void* p, size_t bytes, size_t /*align*/) override { munmap(p, bytes); }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

/// A session's arena: allocations are never freed one by one, all of them go with the arena.
/// [MT] Not thread-safe: its owner's lock guards it.
class MappedArena {
 public:
  MappedArena() = default;
  MappedArena(const MappedArena&) = delete;
  MappedArena& operator=(const MappedArena&) = delete;

  std::pmr::memory_resource* resource() { return &arena_; }

 private:
  static constexpr size_t kFirstBlock = size_t{1} << 20;
  MappedBlocks blocks_;
  std::pmr::monotonic_buffer_resource arena_{kFirstBlock, &blocks_};
};

}  // namespace dlpt
