#include "tree.h"

namespace dlpt {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
    case NodeKind::Root:
      return "root";
    case NodeKind::Thread:
      return "thread";
    case NodeKind::Frame:
      return "frame";
    case NodeKind::Scope:
      return "scope";
    case NodeKind::Op:
      return "op";
    case NodeKind::Phase:
      return "phase";
    case NodeKind::Kernel:
      return "kernel";
    case NodeKind::Memcpy:
      return "memcpy";
    case NodeKind::Memset:
      return "memset";
    case NodeKind::Sync:
      return "sync";
  }
  return "unknown";
}

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Forward:
      return "<forward>";
    case Phase::Backward:
      return "<backward>";
    case Phase::GraphReplay:
      return "<cuda graph replay>";
  }
  return "<phase>";
}

void Metrics::add_duration(uint64_t ns) {
  gpu_ns.fetch_add(ns, std::memory_order_relaxed);
  count.fetch_add(1, std::memory_order_relaxed);
  uint64_t cur = min_ns.load(std::memory_order_relaxed);
  while (ns < cur && !min_ns.compare_exchange_weak(cur, ns, std::memory_order_relaxed)) {
  }
  cur = max_ns.load(std::memory_order_relaxed);
  while (ns > cur && !max_ns.compare_exchange_weak(cur, ns, std::memory_order_relaxed)) {
  }
}

void Metrics::add_op_self(uint64_t ticks) {
  cpu_ticks.fetch_add(ticks, std::memory_order_relaxed);
  uint64_t cur = min_ns.load(std::memory_order_relaxed);
  while (ticks < cur && !min_ns.compare_exchange_weak(cur, ticks, std::memory_order_relaxed)) {
  }
}

uint32_t StringTable::intern(std::string_view s, const char** stable_text) {
  std::lock_guard<std::mutex> lock(mu_);
  return insert_locked(s, stable_text);
}

uint32_t StringTable::insert_locked(std::string_view s, const char** stable_text) {
  auto it = ids_.find(s);
  if (it != ids_.end()) {
    if (stable_text) *stable_text = strings_[it->second].c_str();
    return it->second;
  }
  uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.emplace_back(s);
  ids_.emplace(std::string_view(strings_.back()), id);
  if (stable_text) *stable_text = strings_.back().c_str();
  return id;
}

namespace {
/// `s` with every run of digits written "#"; empty when it has none.
std::string digit_pattern(std::string_view s) {
  std::string out;
  bool any = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool digit = s[i] >= '0' && s[i] <= '9';
    if (!digit) {
      out += s[i];
    } else if (i == 0 || s[i - 1] < '0' || s[i - 1] > '9') {
      out += '#';
      any = true;
    }
  }
  return any ? out : std::string();
}
}  // namespace

uint32_t StringTable::intern_name(std::string_view s, const char** stable_text, bool* folded) {
  *folded = false;
  std::lock_guard<std::mutex> lock(mu_);
  if (ids_.count(s) != 0) return insert_locked(s, stable_text);
  std::string pattern = digit_pattern(s);
  if (pattern.empty()) return insert_locked(s, stable_text);
  uint32_t& kept = variants_[pattern];
  if (kept < kNamesBeforeFolding) {
    ++kept;
    return insert_locked(s, stable_text);
  }
  *folded = true;
  ++folded_[pattern];
  return insert_locked(pattern, stable_text);
}

std::vector<std::pair<std::string, uint64_t>> StringTable::folds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {folded_.begin(), folded_.end()};
}

std::string StringTable::get(uint32_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < strings_.size() ? strings_[id] : std::string("?");
}

size_t StringTable::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return strings_.size();
}

Tree::Tree() {
  chunks_[0].reset(new Node[kChunkSize]);
  chunks_[0][0].kind = NodeKind::Root;
  size_.store(1, std::memory_order_release);
}

Tree::~Tree() = default;

NodeId Tree::child(const NodeKey& key, const KernelConfig* cfg) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = children_.find(key);
  if (it != children_.end()) return it->second;
  size_t id = size_.load(std::memory_order_relaxed);
  if (id >= static_cast<size_t>(kMaxChunks) * kChunkSize) {
    // Out of room: charge the cost to the parent rather than lose it.
    overflow_.fetch_add(1, std::memory_order_relaxed);
    return key.parent;
  }
  uint32_t chunk = static_cast<uint32_t>(id >> kChunkBits);
  if (!chunks_[chunk]) chunks_[chunk].reset(new Node[kChunkSize]);
  Node& n = chunks_[chunk][id & kChunkMask];
  n.parent = key.parent;
  n.kind = key.kind;
  n.a = key.a;
  n.b = key.b;
  if (cfg) n.cfg = *cfg;
  children_.emplace(key, static_cast<NodeId>(id));
  // Publish after the node is fully written: readers iterate up to size().
  size_.store(id + 1, std::memory_order_release);
  return static_cast<NodeId>(id);
}

}  // namespace dlpt
