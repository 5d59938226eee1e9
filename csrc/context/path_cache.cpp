#include "path_cache.h"

#include "thread_state.h"

namespace dlpt {

NodeId PathCache::build(ThreadState& ts, const RawFrame* raw, size_t n, size_t skip, NodeId base,
                        uint32_t* usable_out) {
  if (!valid_ || base != base_ || skip != skip_) {
    frames_.clear();
    base_ = base;
    skip_ = skip;
    valid_ = true;
  }
  size_t common = 0;
  const size_t cached = frames_.size();
  while (common < n && common < cached) {
    const RawFrame& f = raw[n - 1 - common];
    const RawFrame& c = frames_[common].raw;
    if (f.frame != c.frame || f.instr != c.instr) break;
    ++common;
  }
  frames_.resize(common);
  NodeId parent = common ? frames_.back().node : base;
  uint32_t usable = common ? frames_.back().usable : 0;
  for (size_t i = common; i < n; ++i) {
    RawFrame f = raw[n - 1 - i];
    decode_frame(f);
    if (f.code != nullptr && ++usable > skip) parent = ts.frame_node(parent, f);
    frames_.push_back(Entry{f, parent, usable});
  }
  if (usable_out) *usable_out = usable;
  return parent;
}

}  // namespace dlpt
