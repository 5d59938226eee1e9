// What individual op calls carry beyond their name: a collective's size and process group, the
// input shapes of an op with a FLOP formula. Read from the RecordFunction and torch's
// thread-local debug info, stored in the session's OpDetails.
//
// The second (and last) translation unit that includes ATen: these need ATen/core/ivalue.h and
// torch's c10d ParamCommsUtils.hpp, which the per-op callbacks (aten_ops.cpp) must not pay for
// in build time. Checked against torch 2.11 (CUDA) and 2.13 (CPU).
#pragma once

#include <string>

namespace at {
struct RecordFunction;
}

namespace dlpt {

class Session;
class ThreadState;

/// [MT] JSON text of a record's inputs (only valid when the callback asked for inputs).
std::string input_signature(const at::RecordFunction& rf);

/// [MT] At a collective's "record_param_comms" record: what it moves, added to the enclosing
/// c10d op's node.
void note_collective(Session& s, ThreadState& ts);

}  // namespace dlpt
