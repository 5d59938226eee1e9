// A thread's name -> interned id lookup for op, scope and backward-node names, with what the
// hot path needs to know about each name, decided once per distinct name.
//
// Dispatcher op names are stable `const char*` (they live in the operator's schema): a
// direct-mapped cache by pointer answers those, verified by content because a pointer can be
// reused for another text. Autograd node names and record_function names are fresh strings on
// every call: they are found by a hash of their content, without building a std::string.
// Thread contract: owned by one thread ([MT: owning thread]); interning new text goes through
// the session's StringTable (its own mutex), a few hundred times per session.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../cct/tree.h"

namespace dlpt {

/// What the op callbacks need to know about a name.
enum NameFlag : uint8_t {
  kCompiledRegion = 1,  // torch.compile's regions: "Torch-Compiled Region: …", CompiledFunction[Backward]
  kPlumbing = 2,        // profiler::… ops (record_function's own plumbing): never recorded
  kComm = 4,            // torch.distributed's collectives (c10d::…): recorded even when nested
  kParamComms = 8,      // "record_param_comms": carries what the enclosing collective moves
  kFlops = 16,          // an op whose input shapes are recorded (CaptureOptions::flops_ops)
  // May run its nested records in a RecordFunction window (aten_ops.cpp): aten ops and the
  // autograd nodes torch generates for them ("MmBackward0"). Not a Python autograd.Function's
  // node ("RegisterPostBackwardFunctionBackward": arbitrary Python, e.g. FSDP2's reduce-scatter)
  // nor a custom op: a window would hide the collectives they run. Cleared for a name whose calls
  // were seen running a collective.
  kWindowable = 32,
};

/// [GIL] The op names that get kFlops, for the session about to start (before any callback).
void set_flops_ops(const std::vector<std::string>& names);

/// Per thread, per name: flags and what was learned about the op's nested records.
struct NameInfo {
  bool seen = false;  // this thread has set the flags
  uint8_t flags = 0;
  uint8_t learned_calls = 0;  // outermost calls observed with nested records visible
  uint16_t max_nested = 0;    // most nested records one such call made
};

class OpNames {
 public:
  explicit OpNames(StringTable& strings);

  /// [MT: owning thread] The interned id of `name`.
  uint32_t id(const char* name);
  /// [MT: owning thread] This thread's info about name `id` (valid until the next id() call).
  NameInfo& info(uint32_t id) { return infos_[id]; }

 private:
  struct PtrSlot {
    const char* ptr = nullptr;   // the caller's pointer
    const char* text = nullptr;  // our stable copy of its text at the time
    uint32_t id = 0;
  };
  struct TextSlot {
    uint64_t hash = 0;
    const char* text = nullptr;  // stable (StringTable), nullptr = empty slot
    uint32_t id = 0;
  };
  TextSlot by_content(const char* name);
  void grow_text_table();

  static constexpr size_t kPtrSlots = 1024;
  StringTable& strings_;
  std::unique_ptr<PtrSlot[]> ptr_cache_;
  std::vector<TextSlot> texts_;  // open addressing, power-of-two size, load <= 1/2
  size_t text_count_ = 0;
  std::vector<NameInfo> infos_;  // indexed by global id
};

}  // namespace dlpt
