// Which GPU kernels are collective communication, by name: NCCL's (and RCCL's, which keep the
// names), ncclDevKernel_* (NCCL >= 2.19), ncclKernel_* (older) and ncclSymkDevKernel_* (the
// symmetric-memory kernels of NCCL >= 2.27). The tracer splits exposed from
// overlapped communication by it; dlpt/model/comm_names.py (is_comm_kernel) classifies the
// session's kernel nodes, and tests/native/test_comm_kernels.py holds the two to a list of NCCL's
// real kernel names (through dlpt._C._testing.comm_kernel).
#pragma once

#include <cstring>
#include <initializer_list>

namespace dlpt {

/// `name`: a kernel's name as the tracer interns it (demangled when it demangles).
inline bool is_comm_kernel_name(const char* name) {
  for (const char* mark : {"ncclKernel", "ncclDevKernel", "ncclSymkDevKernel"})
    if (std::strstr(name, mark) != nullptr) return true;
  return false;
}

}  // namespace dlpt
