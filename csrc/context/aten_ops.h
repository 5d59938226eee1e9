// aten operator capture through one global RecordFunction callback.
#pragma once

namespace dlpt {

/// [GIL] Registers the global callback (FUNCTION, BACKWARD_FUNCTION, USER_SCOPE; no inputs).
void install_op_callback();
/// [GIL] Removes it. Callbacks already running on other threads finish against their session.
void remove_op_callback();

}  // namespace dlpt
