#include "nodes.h"

#include "../cupti/tracer.h"
#include "cupti_names.h"

namespace dlpt {

namespace {

/// `host_min`: the node's min_ns is a host duration in ticks (an op's fastest call), not a GPU
/// activity's nanoseconds.
ExportedMetrics export_metrics(const Metrics& m, const TickRate& r, bool host_min) {
  ExportedMetrics e;
  e.calls = m.calls.load();
  e.cpu_ns = r.to_ns(m.cpu_ticks.load());
  e.gpu_ns = m.gpu_ns.load();
  e.count = m.count.load();
  e.bytes = m.bytes.load();
  e.sync_ns = r.to_ns(m.sync_ticks.load());
  e.api_ns = r.to_ns(m.api_ticks.load());
  const uint64_t min_ns = m.min_ns.load();
  e.min_ns = min_ns == UINT64_MAX ? 0 : (host_min ? r.to_ns(min_ns) : min_ns);
  e.max_ns = m.max_ns.load();
  return e;
}

}  // namespace

ExportedNode export_node(Session& s, NodeId id) {
  Node& n = s.tree.node(id);
  ExportedNode out;
  out.id = id;
  out.parent = n.parent == kNoNode ? -1 : static_cast<int64_t>(n.parent);
  out.kind = node_kind_name(n.kind);
  NodeExtras& x = out.extras;
  switch (n.kind) {
    case NodeKind::Root:
      out.name = "<root>";
      break;
    case NodeKind::Thread:
      out.name = n.a == kUnknownThreadKey ? "<unknown>" : "<thread " + std::to_string(n.a) + ">";
      break;
    case NodeKind::Frame:
      if (!s.codes.describe(reinterpret_cast<PyObject*>(n.a), static_cast<int>(n.b), &out.file, &out.name, &out.line)) {
        out.name = "<code freed during profiling>";
        s.counters.code_lost.fetch_add(1);
      }
      break;
    case NodeKind::Scope:
    case NodeKind::Op:
      out.name = s.tree.strings.get(static_cast<uint32_t>(n.a));
      break;
    case NodeKind::Phase:
      out.name = phase_name(static_cast<Phase>(n.a));
      break;
    case NodeKind::Kernel:
      out.name = s.tree.strings.get(static_cast<uint32_t>(n.a));
      x.device = n.b;
      x.grid = {n.cfg.grid[0], n.cfg.grid[1], n.cfg.grid[2]};
      x.block = {n.cfg.block[0], n.cfg.block[1], n.cfg.block[2]};
      x.regs = n.cfg.regs;
      x.smem_static = n.cfg.smem_static;
      x.smem_dynamic = n.cfg.smem_dynamic;
      break;
    case NodeKind::Memcpy: {
      const char* dir = memcpy_kind_name(n.a);
      out.name = std::string("[memcpy ") + dir + "]";
      x.direction = dir;
      if (const char* mem = memory_kind_name(n.b & 0xFF)) x.host_mem = mem;
      x.device = n.b >> 8;
      break;
    }
    case NodeKind::Memset:
      out.name = "[memset]";
      x.device = n.a;
      break;
    case NodeKind::Sync:
      out.name = "[sync " + sync_api_name(n.a) + "]";
      break;
  }
  n.m.fold_all(s.epochs);
  const bool host_min = n.kind != NodeKind::Kernel && n.kind != NodeKind::Memcpy && n.kind != NodeKind::Memset;
  out.counted = export_metrics(n.m.counted(), s.rate, host_min);
  out.outside = export_metrics(n.m.outside(), s.rate, host_min);
  const double ns_per_tick = s.rate.ns_per_tick();
  out.sq_cpu_ns = n.m.sq_cpu_ticks() * ns_per_tick * ns_per_tick;
  out.sq_gpu_ns = n.m.sq_gpu_ns();
  out.sq_sync_ns = n.m.sq_sync_ticks() * ns_per_tick * ns_per_tick;
  return out;
}

}  // namespace dlpt
