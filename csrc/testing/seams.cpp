#include "seams.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <thread>

#include "../cct/busy.h"
#include "../cct/correlation.h"
#include "../cct/graph_nodes.h"
#include "../cct/seq_ranges.h"
#include "../cct/tree.h"
#include "../context/child_cache.h"
#include "../context/op_names.h"
#include "../cupti/comm_kernels.h"
#include "../cupti/tracer.h"
#include "../frames/code_registry.h"
#include "../frames/remote_stack.h"
#include "../frames/safe_memory.h"

namespace dlpt::testing {

std::map<uint32_t, std::tuple<uint64_t, uint64_t, uint64_t>> busy(
    const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool>>& spans) {
  BusyTracker t;
  for (const auto& [dev, start, end, comm] : spans) t.add(dev, start, end, comm);
  std::map<uint32_t, std::tuple<uint64_t, uint64_t, uint64_t>> out;
  for (const auto& [dev, tot] : t.totals()) out[dev] = {tot.busy_ns, tot.comm_ns, tot.exposed_ns};
  return out;
}

std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, std::vector<uint64_t>>> busy_collectives(
    const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool, uint32_t, uint32_t>>& spans) {
  BusyTracker t;
  for (const auto& [dev, start, end, comm, epoch, corr] : spans) {
    const CollectiveTag tag{epoch, corr, 0};
    t.add(dev, start, end, comm, corr > 0 ? &tag : nullptr);
  }
  t.totals();
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, std::vector<uint64_t>>> out;
  for (const CollectiveRecord& c : t.collectives(nullptr, nullptr))
    out.emplace_back(c.device, c.tag.epoch, c.tag.corr, c.start, c.end,
                     std::vector<uint64_t>(c.exposed_ns.begin(), c.exposed_ns.end()));
  return out;
}

std::map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t, uint64_t>>>
busy_steps(const std::vector<std::tuple<uint64_t, bool, uint32_t>>& marks,
           const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool, uint32_t>>& spans) {
  BusyTracker t;
  for (const auto& [ts, recorded, corr_before] : marks) t.mark_step(ts, recorded, 0, corr_before);
  for (const auto& [dev, start, end, comm, corr] : spans) t.add(dev, start, end, comm, nullptr, corr);
  t.totals();
  std::map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t, uint64_t>>> out;
  for (const auto& [dev, v] : t.steps()) {
    for (const StepBusy& sb : v)
      out[dev].emplace_back(sb.start, sb.end, sb.recorded, sb.busy_ns, sb.first, sb.last, sb.carried_until);
  }
  return out;
}

std::map<uint32_t,
         std::tuple<uint64_t, uint64_t,
                    std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t, uint64_t>>>>
busy_epochs(const std::vector<bool>& classes, bool last_counted,
            const std::vector<std::pair<uint64_t, uint32_t>>& marks,
            const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool>>& spans) {
  Epochs epochs;
  for (bool counted : classes) epochs.end(counted);
  epochs.finish(last_counted);
  BusyTracker t;
  for (const auto& [ts, epoch] : marks) t.mark_step(ts, true, epoch);
  for (const auto& [dev, start, end, comm] : spans) t.add(dev, start, end, comm);
  std::map<uint32_t,
           std::tuple<uint64_t, uint64_t,
                      std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t, uint64_t>>>>
      out;
  for (const auto& [dev, tot] : t.totals(&epochs)) {
    std::get<0>(out[dev]) = tot.busy_ns;
    std::get<1>(out[dev]) = tot.busy_outside_ns;
  }
  for (const auto& [dev, v] : t.steps(&epochs)) {
    for (const StepBusy& sb : v)
      std::get<2>(out[dev]).emplace_back(sb.start, sb.end, sb.recorded, sb.busy_ns, sb.first, sb.last,
                                         sb.carried_until);
  }
  return out;
}

std::tuple<uint64_t, uint64_t, uint64_t, uint64_t> epoch_contention(int threads, uint64_t adds) {
  auto epochs = std::make_unique<Epochs>();
  auto node = std::make_unique<EpochMetrics>();
  std::atomic<int> running{threads};
  std::vector<std::thread> workers;
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&] {
      // At most kBurst adds per epoch and writer, whatever the scheduling (on a loaded machine a
      // writer could otherwise run all its adds in one time slice): boundaries fall between the
      // writers' adds thousands of times.
      constexpr uint64_t kBurst = 64;
      uint32_t last = UINT32_MAX;
      for (uint64_t k = 0; k < adds; ++k) {
        if (k % kBurst == 0) {
          while (epochs->current() == last) std::this_thread::yield();
          last = epochs->current();
        }
        Metrics& m = node->at(epochs->current(), *epochs);
        m.calls.fetch_add(1, std::memory_order_relaxed);
        m.gpu_ns.fetch_add(1, std::memory_order_relaxed);
      }
      running.fetch_sub(1);
    });
  }
  uint64_t ended = 0;
  while (running.load() > 0) {
    epochs->end(ended % 2 == 0);
    ++ended;
    std::this_thread::yield();
  }
  for (auto& w : workers) w.join();
  epochs->finish(false);
  node->fold_all(*epochs);
  const uint64_t gpu = node->counted().gpu_ns.load() + node->outside().gpu_ns.load();
  return {node->counted().calls.load(), node->outside().calls.load(), gpu, ended};
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

std::pair<bool, uint64_t> remote_frames(uint64_t chunk_bytes, uint64_t top) {
  if (!safe_memory::init(nullptr)) throw std::runtime_error("no fault-safe reads here");
  std::vector<char> chunk(chunk_bytes, 0);
  RemoteThread t;
  t.tid = 1;
  t.top = reinterpret_cast<const void*>(top);
  t.chunk = chunk.data();
  t.chunk_end = chunk.data() + chunk.size();
  RemoteStackReader reader;
  RawFrame raw[kMaxPythonFrames];
  size_t n = 0;
  std::vector<PyObject*> fresh;
  const bool torn = reader.frames(t, raw, kMaxPythonFrames, &n, &fresh) == Walk::Torn;
  return {torn, n};
}

bool launch(uint32_t corr) {
  Session* s = current_session();
  if (s == nullptr) return false;
  testing_launch(*s, corr);
  return true;
}

bool api_call(uint32_t corr, bool enter) {
  Session* s = current_session();
  if (s == nullptr) return false;
  testing_api(*s, corr, enter);
  return true;
}

std::pair<std::string, bool> comm_kernel(const std::string& name) {
  // Demangled as kernel_name_id (tracer.cpp) does before it classifies.
  int status = 0;
  char* demangled = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  std::string readable = status == 0 && demangled ? demangled : name;
  std::free(demangled);
  const bool comm = is_comm_kernel_name(readable.c_str());
  return {readable, comm};
}

bool kernel_record(uint32_t corr, uint64_t start, uint64_t end, uint32_t device, const std::string& name) {
  // Records keep arriving after stop() unpublishes the session (until the flush): the last one
  // still takes them, as CUPTI's buffer thread does.
  Session* s = current_session();
  if (s == nullptr) return false;
  // Kernel names are CUPTI-owned and outlive the record: keep this one for the session.
  static std::deque<std::string> names;
  names.push_back(name);
  testing_kernel_record(*s, corr, start, end, device, names.back().c_str());
  return true;
}

// ---- bench seam (issue 32) ---------------------------------------------------------------

double launch_path_ns(uint64_t n, uint32_t corr0) {
  if (current_session() == nullptr || n == 0) return -1.0;
  return static_cast<double>(testing_api_callbacks(corr0, n)) / static_cast<double>(n);
}

}  // namespace dlpt::testing
