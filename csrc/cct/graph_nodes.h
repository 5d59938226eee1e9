// CUDA graph node id -> the calling context the node was captured in.
//
// A replayed graph's kernels carry the correlation id of the cuGraphLaunch that replayed them,
// whose context is the replay line (for torch.compile's reduce-overhead: the model call, for a
// manual torch.cuda.graph: the `g.replay()` line). What the user wants is where each kernel came
// from: the line that launched it while the graph was being captured. CUPTI reports each node's
// creation (inside the capturing launch, on its thread) and each clone made when the graph is
// instantiated; activity records carry the executed (cloned) node's id.
//
// [MT] Written by capturing threads (rare: once per node per capture), read by the activity
// buffer thread for every replayed kernel; one mutex is plenty for that rate.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "../common.h"

namespace dlpt {

class GraphNodeContexts {
 public:
  void put(uint64_t node_id, NodeId context) {
    std::lock_guard<std::mutex> lock(mu_);
    contexts_[node_id] = context;
  }

  /// A node cloned from `original` (graph instantiation, cudaGraphClone) shares its context.
  void clone(uint64_t original, uint64_t node_id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = contexts_.find(original);
    if (it != contexts_.end()) contexts_[node_id] = it->second;
  }

  /// Forgets every node (CUPTI numbers nodes afresh after it was detached).
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    contexts_.clear();
  }

  /// The capture context, or kNoNode when the capture was not seen (made before profiling).
  NodeId find(uint64_t node_id) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = contexts_.find(node_id);
    return it == contexts_.end() ? kNoNode : it->second;
  }

 private:
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, NodeId> contexts_;
};

}  // namespace dlpt
