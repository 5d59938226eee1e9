// Names of the CUPTI enums that node keys carry (Memcpy nodes: the copy kind and the host side's
// memory kind), as the session format spells them (docs/session-format.md, node extras).
#pragma once

#include <cstdint>

namespace dlpt {

/// CUpti_ActivityMemcpyKind -> "HtoD", "DtoH", ...; "?" for a kind this table does not know.
inline const char* memcpy_kind_name(uint64_t kind) {
  static const char* const kNames[] = {"?",    "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                       "AtoD", "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < sizeof(kNames) / sizeof(kNames[0]) ? kNames[kind] : "?";
}

/// CUpti_ActivityMemoryKind -> "pageable", "pinned", ...; nullptr for unknown (0) or a kind this
/// table does not know.
inline const char* memory_kind_name(uint64_t kind) {
  static const char* const kNames[] = {nullptr, "pageable", "pinned",        "device",
                                       "array", "managed",  "device_static", "managed_static"};
  return kind < sizeof(kNames) / sizeof(kNames[0]) ? kNames[kind] : nullptr;
}

}  // namespace dlpt
