// Details of individual op calls that the tree's counters cannot hold, kept per op node.
//
// - Collectives (torch.distributed): what each c10d op moved, from the ParamCommsDebugInfo torch
//   attaches to its "record_param_comms" record: collective name, dtype, process group, world
//   size, bytes in and out.
// - Input signatures of ops with a FLOP formula (only with CaptureOptions::flops): shapes, dtypes
//   and scalar arguments as JSON text, counted per distinct signature, evaluated by
//   dlpt/capture/flops/ at stop with torch's own formulas.
//
// Like node metrics, counts are split by the class of the epoch they were added in (epochs.h):
// each entry keeps its counted, dropped and outside counts and the counts of one pending epoch,
// folded when a later epoch adds to it and at export; the buckets follow the warm-up's cuts
// first (CutsSeen).
//
// Input signatures (their text and their map's nodes) live in an arena of their own
// (mapped_arena.h): made now and then for the whole run, they must not pin the program's freed
// tensor memory.
//
// [MT] Written by op threads under one mutex: a few hundred calls per step at most (collectives,
// matmuls, convolutions, attention), never the per-op hot path.
#pragma once

#include <cstdint>
#include <map>
#include <memory_resource>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "../common.h"
#include "epochs.h"
#include "mapped_arena.h"

namespace dlpt {

struct CommCall {
  std::string collective;  // e.g. "allreduce", "_allgather_base"
  std::string dtype;       // e.g. "BFloat16"
  std::string pg_name, pg_desc;
  int64_t world_size = 0;
  uint64_t calls = 0, in_bytes = 0, out_bytes = 0;
};

class OpDetails {
 public:
  explicit OpDetails(const Epochs& epochs) : epochs_(epochs) {}

  /// [MT] One call of collective op `op`, in epoch `epoch`.
  void add_comm(NodeId op, const CommCall& c, uint32_t epoch);
  /// [MT] One call of op `op` with input signature `signature`, in epoch `epoch`.
  void add_inputs(NodeId op, std::string_view signature, uint32_t epoch);

  /// [GIL, after capture and Epochs::finish] Snapshots for export: the counts of counted epochs
  /// (`counted`) or of the others; entries with no call in that class are left out.
  std::map<NodeId, CommCall> comm(bool counted);
  std::map<std::pair<NodeId, std::string>, uint64_t> inputs(bool counted);

 private:
  struct CommCounts {
    uint64_t calls = 0, in_bytes = 0, out_bytes = 0;
    void add(const CommCounts& o) {
      calls += o.calls;
      in_bytes += o.in_bytes;
      out_bytes += o.out_bytes;
    }
  };
  /// Counts of type T (with add()) split by epoch class (cct/epochs.h: counted, in the drop,
  /// outside). Under mu_.
  template <typename T>
  struct Split {
    T counted{}, dropped{}, outside{}, pending{};
    uint32_t pending_epoch = 0;
    CutsSeen seen;  // the cuts `counted` and `dropped` were filed under
    bool has_pending = false;
    T& bucket(Filed f) { return f == Filed::Counted ? counted : f == Filed::Dropped ? dropped : outside; }
    T& at(uint32_t e, const Epochs& epochs);
    void fold(const Epochs& epochs);
    void catch_up_with_cuts(const Epochs& epochs);
  };
  struct Count {
    uint64_t n = 0;
    void add(const Count& o) { n += o.n; }
  };
  struct CommEntry {
    CommCall identity;  // the first call's names (calls/bytes unused)
    Split<CommCounts> counts;
  };

  /// An op node and its signature's text (in arena_).
  struct InputKey {
    NodeId op;
    std::string_view signature;
    bool operator<(const InputKey& o) const { return op != o.op ? op < o.op : signature < o.signature; }
  };

  const Epochs& epochs_;
  std::mutex mu_;
  std::map<NodeId, CommEntry> comm_;
  MappedArena arena_;  // before inputs_: its nodes live in it
  std::pmr::map<InputKey, Split<Count>> inputs_{arena_.resource()};
};

}  // namespace dlpt
