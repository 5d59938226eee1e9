// aten operator capture through one global RecordFunction callback.
#pragma once

#include <cstdint>

namespace dlpt {

/// [GIL] Registers the global callback (FUNCTION, BACKWARD_FUNCTION, USER_SCOPE). Inputs are
/// asked for only when op shapes are recorded (FLOP counting): torch then packs every op's
/// arguments.
void install_op_callback(bool needs_inputs);
/// [GIL] Removes it. Callbacks already running on other threads finish against their session.
void remove_op_callback();

/// [GIL] Floor mode (bench/floor.py): a callback with the same settings that only counts records.
void install_floor_op_callback();
void remove_floor_op_callback();
/// Records the floor callback saw on the calling thread since the process started.
uint64_t floor_records_on_this_thread();

}  // namespace dlpt
