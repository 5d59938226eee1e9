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
#include "epochs.h"

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
  EpochMetrics m;  // exclusive metrics, by epoch class (epochs.h)
  KernelConfig cfg;
};

/// Interned strings (op names, kernel names, scope names). [MT] under its own mutex.
/// Strings never move once interned (a deque), so `stable_text` pointers stay valid for the
/// table's lifetime.
///
/// Op and scope names (intern_name) may be made afresh without end: a record_function named
/// f"batch_{i}" each step would add a name and its subtree every step. The first
/// kNamesBeforeFolding names that differ only in their numbers are kept as they are; every later
/// one becomes their pattern, numbers written "#" ("batch_#"), and is counted (folds()).
class StringTable {
 public:
  static constexpr uint32_t kNamesBeforeFolding = 256;

  uint32_t intern(std::string_view s, const char** stable_text = nullptr);
  /// Like intern, for an op or scope name: `*folded` tells whether the id is that of the name's
  /// pattern instead (`*stable_text` is then the pattern's text, not `s`).
  uint32_t intern_name(std::string_view s, const char** stable_text, bool* folded);
  std::string get(uint32_t id) const;
  size_t size() const;
  /// (pattern, names folded into it) of every pattern that folded some.
  std::vector<std::pair<std::string, uint64_t>> folds() const;

 private:
  uint32_t insert_locked(std::string_view s, const char** stable_text);

  mutable std::mutex mu_;
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, uint32_t> ids_;  // views into strings_
  std::unordered_map<std::string, uint32_t> variants_;  // pattern -> names of it kept as they are
  std::unordered_map<std::string, uint64_t> folded_;    // pattern -> names of it folded
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
