// The tree's nodes as plain records for export: name, file and line, per-kind extras, metrics in
// nanoseconds. bindings.cpp only converts these to Python objects.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "../session.h"

namespace dlpt {

/// A node's metrics, host times converted to nanoseconds. Field order is the exported tuple's
/// (dlpt.capture.native.RawMetrics).
struct ExportedMetrics {
  uint64_t calls = 0, cpu_ns = 0, gpu_ns = 0, count = 0, bytes = 0, sync_ns = 0, api_ns = 0, min_ns = 0, max_ns = 0;
};

/// Extras of one node, each present only for the kinds that have it (docs/session-format.md).
/// Exported in this field order.
struct NodeExtras {
  std::optional<std::string> direction;  // memcpy: "HtoD", ...
  std::optional<std::string> host_mem;   // memcpy: the host side's memory kind, when known
  std::optional<uint64_t> device;        // kernel, memcpy, memset
  std::optional<std::array<uint32_t, 3>> grid, block;
  std::optional<uint32_t> regs, smem_static, smem_dynamic;  // kernel
};

struct ExportedNode {
  NodeId id = 0;
  int64_t parent = -1;  // -1: the root
  const char* kind = "";
  std::string name, file;
  int line = 0;
  ExportedMetrics counted;  // costs of counted epochs (per-step work)
  ExportedMetrics outside;  // costs of the other epochs (outside the steps)
  // Per-step second moments of counted epochs, ns^2: cpu, gpu (kernel/copy/memset), sync.
  double sq_cpu_ns = 0, sq_gpu_ns = 0, sq_sync_ns = 0;
  NodeExtras extras;
};

/// [GIL] Node `id` of `s`, after capture stopped and Epochs::finish (its metrics are folded
/// here; frames are described through the code registry, which takes the GIL's Python objects;
/// a lost code object is counted in code_lost).
ExportedNode export_node(Session& s, NodeId id);

}  // namespace dlpt
