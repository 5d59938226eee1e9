// What individual op calls carry beyond their name: a collective's size and process group, the
// input shapes of an op with a FLOP formula. Read from the RecordFunction and torch's
// thread-local debug info, stored in the session's OpDetails.
//
// The second (and last) translation unit that includes ATen: these need ATen/core/ivalue.h and
// torch's c10d ParamCommsUtils.hpp, which the per-op callbacks (aten_ops.cpp) must not pay for
// in build time. Checked against torch 2.11 (CUDA) and 2.13 (CPU).
#pragma once

#include <string_view>

namespace at {
struct RecordFunction;
}

namespace dlpt {

class Session;
class ThreadState;

/// [MT] JSON text of a record's inputs (only valid when the callback asked for inputs), in a
/// buffer of the calling thread's: valid until its next call. No allocation per call once the
/// buffer has grown: a run calls it for every matmul, and a string made and freed each time
/// between the program's tensors was part of what fragmented the heap under --flops.
std::string_view input_signature(const at::RecordFunction& rf);

/// [MT] At a collective's "record_param_comms" record: what it moves, added to the enclosing
/// c10d op's node.
void note_collective(Session& s, ThreadState& ts);

}  // namespace dlpt
