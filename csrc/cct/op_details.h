// Details of individual op calls that the tree's counters cannot hold, kept per op node.
//
// - Collectives (torch.distributed): what each c10d op moved, from the ParamCommsDebugInfo torch
//   attaches to its "record_param_comms" record: collective name, dtype, process group, world
//   size, bytes in and out.
// - Input signatures of ops with a FLOP formula (only with CaptureOptions::flops): shapes, dtypes
//   and scalar arguments as JSON text, counted per distinct signature, evaluated by
//   dlpt/insights at stop with torch's own formulas.
//
// [MT] Written by op threads under one mutex: a few hundred calls per step at most (collectives,
// matmuls, convolutions, attention), never the per-op hot path.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../common.h"

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
  void add_comm(NodeId op, const CommCall& c) {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = comm_.try_emplace(op, c);
    if (!fresh) {
      it->second.calls += c.calls;
      it->second.in_bytes += c.in_bytes;
      it->second.out_bytes += c.out_bytes;
    }
  }

  void add_inputs(NodeId op, std::string signature) {
    std::lock_guard<std::mutex> lock(mu_);
    ++inputs_[{op, std::move(signature)}];
  }

  /// [GIL, after capture] Snapshots for export.
  std::map<NodeId, CommCall> comm() {
    std::lock_guard<std::mutex> lock(mu_);
    return comm_;
  }
  std::map<std::pair<NodeId, std::string>, uint64_t> inputs() {
    std::lock_guard<std::mutex> lock(mu_);
    return inputs_;
  }

 private:
  std::mutex mu_;
  std::map<NodeId, CommCall> comm_;
  std::map<std::pair<NodeId, std::string>, uint64_t> inputs_;
};

}  // namespace dlpt
