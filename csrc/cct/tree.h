// The calling-context tree: an arena of nodes addressed by index, aggregated online.
//
// Every cost (op CPU time, kernel/copy/memset time, sync wait, API time) is added to exactly one
// node as it arrives, so memory grows with the number of distinct calling-context paths, never
// with run length. Nodes are never removed while a session lives, so a NodeId handed out once
// stays valid; that is what lets threads cache ids without locks.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "../common.h"

namespace dlpt {

enum class NodeKind : uint8_t { Root, Thread, Frame, Scope, Op, Phase, Kernel, Memcpy, Memset, Sync };

const char* node_kind_name(NodeKind kind);

/// What a Phase node stands for (its NodeKey.a): the forward or backward part of an op's work,
/// or the kernels of a replayed CUDA graph placed where they were captured.
enum class Phase : uint8_t { Forward = 0, Backward = 1, GraphReplay = 2 };

/// The key of a Phase node.
constexpr uint64_t phase_key(Phase p) { return static_cast<uint64_t>(p); }

/// "<forward>", "<backward>", "<cuda graph replay>".
const char* phase_name(Phase p);

/// The key of the Thread node that collects GPU work whose launch context is unknown (shown as
/// "<unknown>"): never lost, always shown. Real Thread nodes are keyed by an OS thread id, never 0.
constexpr uint64_t kUnknownThreadKey = 0;

/// Identity of a node among its siblings. `a`/`b` depend on the kind:
///   Frame: code object pointer, bytecode offset   Op/Scope: interned name id
///   Phase: phase_key(Phase)   Kernel: name id, device
///   Memcpy: copy kind, host-memory kind | device << 8   Memset: device   Sync: API (domain << 16 | cbid)
///   Thread: OS thread id (kUnknownThreadKey: launches of unknown context)
struct NodeKey {
  NodeId parent;
  NodeKind kind;
  uint64_t a;
  uint64_t b;
  bool operator==(const NodeKey& o) const { return parent == o.parent && kind == o.kind && a == o.a && b == o.b; }
};

struct NodeKeyHash {
  size_t operator()(const NodeKey& k) const noexcept {
    uint64_t h = k.a * 0x9E3779B97F4A7C15ull;
    h ^= (k.b + 0x7F4A7C159E3779B9ull + (h << 6) + (h >> 2));
    h ^= (static_cast<uint64_t>(k.parent) << 8 | static_cast<uint64_t>(k.kind)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 29));
  }
};

/// Exclusive metrics of one node. Relaxed atomics: op threads and the CUPTI buffer thread add
/// concurrently; nobody needs ordering between different counters. Host times are in ticks
/// (clock.h), converted to nanoseconds at export; GPU times are CUPTI nanoseconds.
struct Metrics {
  std::atomic<uint64_t> calls{0};       // ops/scopes run
  std::atomic<uint64_t> cpu_ticks{0};   // op CPU self time
  std::atomic<uint64_t> gpu_ns{0};      // kernel / memcpy / memset time on the GPU, by node kind
  std::atomic<uint64_t> count{0};       // kernels / copies / memsets / syncs completed
  std::atomic<uint64_t> bytes{0};       // copy bytes
  std::atomic<uint64_t> sync_ticks{0};  // host time blocked in synchronisation
  std::atomic<uint64_t> api_ticks{0};   // CUDA API host time of calls made in this context
  std::atomic<uint64_t> min_ns{UINT64_MAX};
  std::atomic<uint64_t> max_ns{0};

  void add_duration(uint64_t ns);  /// [MT] gpu_ns/count/min/max in one go
};

/// Launch configuration, set once when a kernel leaf is created.
struct KernelConfig {
  uint32_t grid[3] = {0, 0, 0};
  uint32_t block[3] = {0, 0, 0};
  uint32_t regs = 0;
  uint32_t smem_static = 0;
  uint32_t smem_dynamic = 0;
};

struct Node {
  NodeId parent = kNoNode;
  NodeKind kind = NodeKind::Root;
  uint64_t a = 0;
  uint64_t b = 0;
  Metrics m;
  KernelConfig cfg;
};

/// Interned strings (op names, kernel names, scope names). [MT] under its own mutex.
/// Strings never move once interned (a deque), so `stable_text` pointers stay valid for the
/// table's lifetime.
class StringTable {
 public:
  uint32_t intern(std::string_view s, const char** stable_text = nullptr);
  std::string get(uint32_t id) const;
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;  // views into strings_
};

class Tree {
 public:
  Tree();
  ~Tree();
  Tree(const Tree&) = delete;
  Tree& operator=(const Tree&) = delete;

  /// [MT] The child of `key.parent` with this identity, created on first use. Takes a mutex;
  /// hot paths go through ThreadState's cache first. `cfg` only applies when it is created.
  NodeId child(const NodeKey& key, const KernelConfig* cfg = nullptr);

  /// [MT] Lock-free access to an existing node (chunks never move).
  Node& node(NodeId id) { return chunks_[id >> kChunkBits][id & kChunkMask]; }
  const Node& node(NodeId id) const { return chunks_[id >> kChunkBits][id & kChunkMask]; }

  /// [MT] Number of nodes created so far.
  size_t size() const { return size_.load(std::memory_order_acquire); }

  /// True once the node limit was hit; further new paths land on their parent (counted).
  uint64_t overflowed() const { return overflow_.load(std::memory_order_relaxed); }

  StringTable strings;

 private:
  static constexpr unsigned kChunkBits = 12;
  static constexpr uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr uint32_t kChunkMask = kChunkSize - 1;
  static constexpr uint32_t kMaxChunks = 1024;  // 4M nodes: far beyond any real model

  std::mutex mu_;
  std::unordered_map<NodeKey, NodeId, NodeKeyHash> children_;
  std::unique_ptr<Node[]> chunks_[kMaxChunks];
  std::atomic<size_t> size_{0};
  std::atomic<uint64_t> overflow_{0};
};

}  // namespace dlpt
