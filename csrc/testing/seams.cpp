#include "seams.h"

#include <cstring>
#include <memory>

#include "../cct/busy.h"
#include "../cct/correlation.h"
#include "../cct/graph_nodes.h"
#include "../cct/seq_ranges.h"
#include "../cct/tree.h"
#include "../context/child_cache.h"
#include "../context/code_registry.h"
#include "../context/op_names.h"

namespace dlpt::testing {

std::map<uint32_t, std::tuple<uint64_t, uint64_t, uint64_t>> busy(
    const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool>>& spans) {
  BusyTracker t;
  for (const auto& [dev, start, end, comm] : spans) t.add(dev, start, end, comm);
  std::map<uint32_t, std::tuple<uint64_t, uint64_t, uint64_t>> out;
  for (const auto& [dev, tot] : t.totals()) out[dev] = {tot.busy_ns, tot.comm_ns, tot.exposed_ns};
  return out;
}

std::map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t>>> busy_steps(
    const std::vector<std::pair<uint64_t, bool>>& marks,
    const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool>>& spans) {
  BusyTracker t;
  for (const auto& [ts, recorded] : marks) t.mark_step(ts, recorded);
  for (const auto& [dev, start, end, comm] : spans) t.add(dev, start, end, comm);
  t.totals();
  std::map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t>>> out;
  for (const auto& [dev, v] : t.steps()) {
    for (const StepBusy& sb : v) out[dev].emplace_back(sb.start, sb.end, sb.recorded, sb.busy_ns, sb.first, sb.last);
  }
  return out;
}

std::vector<int64_t> seq_ranges(const std::vector<std::pair<int64_t, uint32_t>>& adds,
                                const std::vector<int64_t>& queries) {
  auto r = std::make_unique<SeqRanges>();
  for (const auto& [seq, node] : adds) r->add(seq, node);
  std::vector<int64_t> out;
  for (int64_t q : queries) {
    const NodeId n = r->find(q);
    out.push_back(n == kNoNode ? -1 : static_cast<int64_t>(n));
  }
  return out;
}

std::vector<std::tuple<int, int64_t, bool>> correlations(const std::vector<std::tuple<uint32_t, uint32_t, bool>>& puts,
                                                         const std::vector<uint32_t>& gets) {
  auto t = std::make_unique<CorrelationTable>();
  for (const auto& [corr, node, outside] : puts) t->put(corr, outside ? CorrelationTable::kOutsideWindow : node);
  std::vector<std::tuple<int, int64_t, bool>> out;
  for (uint32_t corr : gets) {
    NodeId node = kNoNode;
    bool first = false;
    const auto status = t->get(corr, &node, &first);
    const int code = status == CorrelationTable::Lookup::Found           ? 0
                     : status == CorrelationTable::Lookup::OutsideWindow ? 1
                                                                         : 2;
    out.emplace_back(code, code == 0 ? static_cast<int64_t>(node) : -1, first);
  }
  return out;
}

std::vector<int64_t> graph_nodes(const std::vector<std::tuple<std::string, uint64_t, uint64_t>>& ops,
                                 const std::vector<uint64_t>& finds) {
  GraphNodeContexts g;
  for (const auto& [op, a, b] : ops) {
    if (op == "put") g.put(a, static_cast<NodeId>(b));
    if (op == "clone") g.clone(a, b);
  }
  std::vector<int64_t> out;
  for (uint64_t id : finds) {
    const NodeId n = g.find(id);
    out.push_back(n == kNoNode ? -1 : static_cast<int64_t>(n));
  }
  return out;
}

std::vector<uint32_t> tree_children(const std::vector<std::tuple<uint32_t, int, uint64_t, uint64_t>>& keys) {
  auto tree = std::make_unique<Tree>();
  ChildCache cache;
  std::vector<uint32_t> out;
  for (const auto& [parent, kind, a, b] : keys) {
    const NodeKey key{parent, static_cast<NodeKind>(kind), a, b};
    NodeId id = cache.find(key);
    if (id == kNoNode) {
      id = tree->child(key);
      cache.put(key, id);
    }
    out.push_back(id);
  }
  return out;
}

std::vector<uint32_t> op_name_ids(const std::vector<std::pair<int, std::string>>& lookups) {
  StringTable strings;
  OpNames names(strings);
  std::vector<std::unique_ptr<char[]>> buffers;
  std::vector<uint32_t> out;
  for (const auto& [slot, text] : lookups) {
    while (buffers.size() <= static_cast<size_t>(slot)) buffers.push_back(std::make_unique<char[]>(256));
    std::strncpy(buffers[slot].get(), text.c_str(), 255);
    out.push_back(names.id(buffers[slot].get()));
  }
  return out;
}

std::tuple<uint64_t, uint64_t, uint64_t> line_lookup_cost() {
  const CodeRegistry::LookupCost c = CodeRegistry::lookup_cost();
  return {c.lookups, c.entries_read, c.search_steps};
}

}  // namespace dlpt::testing
