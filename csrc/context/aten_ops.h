// aten operator capture through RecordFunction callbacks.
#pragma once

#include <cstdint>

namespace dlpt {

/// [GIL] Registers the callbacks. With `split_backward` off, one global callback for every scope
/// (FUNCTION, BACKWARD_FUNCTION, USER_SCOPE). With it on, FUNCTION records (aten ops) get a global
/// callback of their own, which backward passes pause (pause_function_records, aten_ops.cpp).
/// Inputs are asked for only when op shapes are recorded (FLOP counting): torch then packs every
/// op's arguments.
void install_op_callback(bool needs_inputs, bool split_backward);
/// [GIL] Removes them. Callbacks already running on other threads finish against their session.
void remove_op_callback();

/// [GIL] Before a backward pass: disables the FUNCTION callback (every thread) until the matching
/// resume, counting nested and concurrent passes. Returns a token for resume_function_records,
/// 0 when nothing was paused (not split, or a torch.compile region was seen).
uint64_t pause_function_records();
/// [GIL] After that backward pass.
void resume_function_records(uint64_t token);

/// [GIL] Tracing suspended (set_tracing): every RecordFunction callback of dlpt's disabled, so
/// torch runs no dlpt code per op (nor builds a RecordFunction for ops no other callback wants);
/// or enabled again as at install. A backward pass's pause still holds the FUNCTION callback off.
/// Records that started before a suspension still end through dlpt's callback (RecordFunction
/// keeps the callbacks it started with): their entries are popped, their costs not recorded.
void suspend_op_callbacks(bool suspended);

/// [GIL] Floor mode (bench/floor.py): a callback with the same settings that only counts records.
void install_floor_op_callback();
void remove_floor_op_callback();
/// Records the floor callback saw on the calling thread since the process started.
uint64_t floor_records_on_this_thread();

}  // namespace dlpt
