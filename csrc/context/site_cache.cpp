#include "site_cache.h"

#include "frame_layout.h"

namespace dlpt {

using frame_layout::frame_instr;
using frame_layout::InterpFrame;
using frame_layout::kOwnedByCStack;
using frame_layout::top_frame;

size_t SiteCache::walk(RawFrame* raw, size_t max, NodeId* node, uint32_t* usable, bool* hit) {
  *hit = false;
  // PyGILState_GetThisThreadState reads a thread-local: valid without holding the GIL.
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (ts == nullptr) return 0;
  const InterpFrame* f = top_frame(ts);
  size_t n = 0;
  // The innermost frames pick the set ...
  for (; f != nullptr && n < kIndexFrames && n < max; f = f->previous) {
    if (f->owner == kOwnedByCStack) continue;  // shim frames at C->Python entry: no user code
    raw[n++] = RawFrame{f, frame_instr(f), nullptr, 0};
  }
  Set& set = sets_[index(raw, n)];
  const Slot& a = set.ways[0];
  const Slot& b = set.ways[1];
  bool same_a = a.n != kEmpty && a.n >= n && prefix_same(a, raw, n);
  bool same_b = b.n != kEmpty && b.n >= n && prefix_same(b, raw, n);
  // ... and every further frame is compared with both chains as it is read.
  for (; f != nullptr && n < max; f = f->previous) {
    if (f->owner == kOwnedByCStack) continue;
    const void* instr = frame_instr(f);
    raw[n] = RawFrame{f, instr, nullptr, 0};
    same_a = same_a && n < a.n && a.chain[2 * n] == f && a.chain[2 * n + 1] == instr;
    same_b = same_b && n < b.n && b.chain[2 * n] == f && b.chain[2 * n + 1] == instr;
    ++n;
  }
  const Slot* s = same_a && a.n == n ? &a : (same_b && b.n == n ? &b : nullptr);
  if (s != nullptr) {
    *node = s->node;
    *usable = s->usable;
    *hit = true;
  }
  return n;
}

}  // namespace dlpt
