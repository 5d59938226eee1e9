// Reads of this process's own memory that fail instead of faulting.
//
// The host sampler reads other threads' Python frames while those threads run: a frame can be
// popped, a chunk of the frame stack freed (unmapped) or a thread state deleted between reading a
// pointer and following it. Following such a pointer with a plain load could crash the program.
// Every read of memory another thread owns therefore goes through here: process_vm_readv(2) on
// our own pid (the kernel copies and reports EFAULT for an unmapped page), or, where a seccomp
// filter refuses that call, pread(2) on /proc/self/mem (same guarantee, one more syscall layer).
// A torn or stale pointer then costs an error code, never a signal.
//
// Thread contract: [MT] every function; the method is decided once (init, under the GIL) and
// again in a forked child (the fd of /proc/self/mem names the parent's memory there).
#pragma once

#include <cstddef>
#include <string>

namespace dlpt::safe_memory {

/// [GIL] Decides how to read (process_vm_readv, else /proc/self/mem); false and why when
/// neither works (then the sampler stays off).
bool init(std::string* why);

/// [MT] Copies `n` bytes at `addr` into `out`; false if any of them cannot be read.
bool read(const void* addr, void* out, size_t n);

/// [MT] Copies what can be read of `n` bytes at `addr` (a prefix, possibly empty); its length.
size_t read_prefix(const void* addr, void* out, size_t n);

template <typename T>
bool read(const void* addr, T* out) {
  return read(addr, out, sizeof(T));
}

/// "process_vm_readv", "/proc/self/mem" or "none".
const char* method();

}  // namespace dlpt::safe_memory
