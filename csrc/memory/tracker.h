// Memory by calling context: which node allocated each live block, how much each node holds at
// each step's peak of allocated memory, and what was live when an allocation failed.
//
// Fed by the allocator events of torch's memory-reporting hook (torch_reporter.cpp, the only
// file that knows torch's types): an allocation (pointer, bytes, the allocator's totals after it,
// the context node it belongs to), a free, an out-of-memory report. Knows nothing of torch, so
// tests drive it with synthetic events (dlpt._C._testing.memory_events).
//
// The peak snapshot, and why it costs O(1) per event. At each step's peak of allocated memory we
// want, per node, the bytes of its blocks live at that moment. Copying every node's live counter
// whenever the peak rises would cost O(nodes) per allocation through a whole forward pass (where
// nearly every allocation is a new peak). Instead each device keeps an epoch, bumped whenever its
// peak rises, and each (node, device) counter keeps its live bytes plus the value they had at the
// last peak, saved lazily (copy on write): before a counter changes, if its saved epoch is not
// the device's current one, the counter copies its live value into `at_peak` and takes the epoch.
// A counter untouched since the peak still holds its value at the peak in `live`. So "bytes at
// the peak" of a counter is `epoch == device epoch ? at_peak : live`, exact at any moment, and a
// new peak is one increment. Each counted step end reads every counter once (O(counters), not
// O(events)) into its per-step sum, and starts the next step's snapshot at the current state.
//
// Thread contract: allocator events arrive on any thread, often inside the allocator's own lock
// (the CUDA caching allocator reports under its device mutex), with or without the GIL. Every
// method takes this tracker's one mutex for a short, non-blocking critical section that calls
// nothing outside (no Python, no torch, no other dlpt lock; only the C++ heap). Nothing that holds
// this mutex ever waits for anything else, so it cannot deadlock with the allocator's lock or the
// GIL. The step and export methods are called from Python ([GIL]) and take the same mutex.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../common.h"

namespace dlpt::memory {

/// A device as torch names it: c10::DeviceType's value and the index (-1 for the CPU).
struct DeviceId {
  int type = 0;
  int index = -1;
  bool operator==(const DeviceId& o) const { return type == o.type && index == o.index; }
};

/// One counted step's memory on one device.
// One counted step's peak on a device (memory_stop()'s devices[].steps rows, saved as
// meta.memory.devices[].steps objects), defined once as X(name, doc): the struct, the export's
// row order (memory_bindings.cpp) and the list tests/native/test_native_fields.py holds
// dlpt.model.meta.MEMORY_STEP_PEAK to. The names are the saved sessions' keys: never rename one.
// clang-format off
#define DLPT_MEMORY_STEP_PEAK(X)                                                         \
  X(peak_allocated, "the allocator's allocated bytes at the step's peak")                \
  X(reserved_at_peak, "its reserved bytes at that moment (CUDA; 0 on the CPU)")          \
  X(peak_reserved, "the most reserved during the step")                                  \
  X(traced_at_peak, "bytes at the peak of blocks allocated while collecting")
// clang-format on

struct StepPeak {
#define DLPT_STEP_PEAK_FIELD(name, doc) uint64_t name = 0;
  DLPT_MEMORY_STEP_PEAK(DLPT_STEP_PEAK_FIELD)
#undef DLPT_STEP_PEAK_FIELD
};

/// What one (node, device) holds and did: sums over counted steps, and the OOM snapshot.
struct NodeTotals {
  NodeId node = kNoNode;
  size_t device = 0;         // index into Export::devices
  uint64_t alloc_bytes = 0;  // bytes allocated while collecting
  uint64_t allocs = 0;       // allocations while collecting
  uint64_t peak_bytes = 0;   // sum over counted steps of its bytes live at the step's peak
  uint64_t oom_bytes = 0;    // its bytes live when the first allocation failed on that device
};

struct OomReport {
  size_t device = 0;
  uint64_t requested = 0;  // bytes the failing allocation asked for
  uint64_t allocated = 0;  // the allocator's totals then
  uint64_t reserved = 0;
  NodeId node = kNoNode;  // the context of the failing allocation
  uint64_t count = 0;     // failed allocations seen (the snapshot is of the first)
};

struct DeviceExport {
  DeviceId id;
  std::vector<StepPeak> steps;
  uint64_t allocated = 0, reserved = 0;  // the last totals reported
};

/// Everything at the end of a session.
struct Export {
  std::vector<DeviceExport> devices;
  std::vector<NodeTotals> nodes;  // only those with a non-zero value
  bool oom = false;
  OomReport oom_report;
  uint64_t events = 0;        // allocator events seen (allocations, frees, failures)
  uint64_t missed_frees = 0;  // a traced block's address came back allocated without a free seen
};

class Tracker {
 public:
  /// [GIL] Forgets everything: a new session.
  void reset();

  /// [MT] An allocation of `bytes` at `ptr`; `allocated`/`reserved` are the allocator's totals
  /// on that device after it. `node` is its context, kNoNode when it is not traced (not
  /// collecting): untraced blocks still count in the totals, never on a node.
  void on_alloc(DeviceId dev, const void* ptr, uint64_t bytes, uint64_t allocated, uint64_t reserved, NodeId node);
  /// [MT] The block at `ptr` was freed (its size is the one its allocation reported).
  void on_free(DeviceId dev, const void* ptr, uint64_t allocated, uint64_t reserved);
  /// [MT] An allocation of `requested` bytes failed (out of memory); `node` is its context.
  void on_oom(DeviceId dev, uint64_t requested, uint64_t allocated, uint64_t reserved, NodeId node);

  /// [GIL] A step begins now: every device's peak starts at its current state.
  void step_begin();
  /// [GIL] A step ends: when `counted` (a recorded step), its peaks are added to the per-step
  /// lists and every node's bytes at its device's peak to its sum; then the next step begins.
  void step_end(bool counted);
  /// [GIL] Drop what counted steps added so far (a cut of the warm-up: dlpt.capture.schedule).
  /// What it drops is kept for restore_steps, with what the last restart dropped if `extend`.
  void restart_steps(bool extend = false);
  /// [GIL] The last restart_steps is undone (the warm-up restored its last cut): the steps it
  /// dropped count again, before those counted since.
  void restore_steps();
  /// [GIL] The totals so far.
  Export snapshot();

 private:
  struct Counter {
    uint64_t live = 0, at_peak = 0, epoch = 0;
    uint64_t alloc_bytes = 0, allocs = 0, peak_bytes = 0, oom_bytes = 0;
    uint64_t dropped_peak_bytes = 0;  // peak_bytes of the drop (restart_steps)
  };
  struct Block {
    NodeId node;
    uint32_t device;
    uint64_t bytes;
  };
  struct Device {
    DeviceId id;
    uint64_t allocated = 0, reserved = 0;  // last reported totals
    uint64_t traced = 0;                   // live bytes of traced blocks
    uint64_t epoch = 1;                    // bumped at every new peak (see the file comment)
    StepPeak step;                         // this step's peak so far
    bool oom = false;                      // a snapshot was taken at a failure on this device
    std::vector<StepPeak> steps;
    std::vector<StepPeak> dropped_steps;  // the drop's steps (restart_steps)
  };

  static uint64_t key(NodeId node, uint32_t device) { return static_cast<uint64_t>(node) << 8 | device; }
  uint32_t device_slot(DeviceId id);                                     // under mu_
  void update_totals(Device& d, uint64_t allocated, uint64_t reserved);  // under mu_
  Counter& touch(NodeId node, uint32_t device);                          // under mu_
  void begin_step_locked();                                              // under mu_
  void release_block(const Block& b);                                    // under mu_

  static constexpr uint32_t kMaxDevices = 64;  // beyond: the last slot is shared

  std::mutex mu_;
  std::vector<Device> devices_;
  std::unordered_map<const void*, Block> live_;
  std::unordered_map<uint64_t, Counter> counters_;  // key(node, device)
  OomReport oom_;
  bool any_oom_ = false;
  uint64_t events_ = 0;
  uint64_t missed_frees_ = 0;
};

/// The process's tracker (allocator callbacks can outlive a session: it is never destroyed).
Tracker& tracker();

}  // namespace dlpt::memory
