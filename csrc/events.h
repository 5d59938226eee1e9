// The events capture producers hand on: the sink functions the op path (context/aten_ops.cpp)
// and the CUPTI tracer (cupti/tracer.cpp) call, declared below every capture subsystem.
//
// Why a header of its own: the producers sit below the consumers. The host capture (host/) reads
// thread states and the tracer's clock, and PC sampling (pcsampling/) drives CUPTI through the
// tracer, so neither can be included by the code that feeds them without a cycle of folders.
// Producers include this file only; host/host_capture.cpp and pcsampling/modules.cpp define
// what it declares. tests/unit/test_csrc_layers.py holds csrc/'s include graph to its layer
// order, with this file between the session and the capture subsystems.
//
// Each sink starts with one relaxed load of a switch its consumer sets (or is called only after
// the producer checked the inline test below), so a producer pays nothing when nobody listens.
#pragma once

#include <atomic>
#include <cstdint>

#include "common.h"

namespace dlpt {

class Session;

namespace host {

/// What a timeline event is (host/timeline.h keeps them; the exporter writes them by kind).
enum class EventKind : uint8_t { Step = 0, Op = 1, Api = 2, Sync = 3, Kernel = 4, Memcpy = 5, Memset = 6, Sample = 7 };

namespace detail {
extern std::atomic<bool> g_timeline;  // a timeline window is open
extern std::atomic<bool> g_activity;  // the blame or a timeline wants GPU activity
}  // namespace detail

/// [MT] Whether op/API events are wanted now (one relaxed load).
inline bool timeline_on() { return detail::g_timeline.load(std::memory_order_relaxed); }
/// [MT] Whether GPU activity is wanted (one relaxed load).
inline bool activity_on() { return detail::g_activity.load(std::memory_order_relaxed); }

/// [MT] A recorded op ended on thread `tid` (aten_ops.cpp); times in ticks.
void on_op(Session& s, uint64_t tid, NodeId op, uint64_t start_ticks, uint64_t end_ticks);
/// [MT] An outermost watched CUDA API call ended (tracer.cpp): `launch` if it queued GPU work.
void on_api(Session& s, uint64_t tid, uint32_t cbid, bool launch, uint32_t corr, uint64_t start_ticks,
            uint64_t end_ticks, NodeId context);
/// [MT] A kernel, copy or memset record (tracer.cpp): CUPTI times, its leaf node.
void on_activity(Session& s, EventKind kind, uint32_t device, uint32_t stream, uint32_t corr, uint64_t start,
                 uint64_t end, NodeId leaf);

}  // namespace host

namespace pcsampling {

/// [MT] CUPTI's CUPTI_CBID_RESOURCE_MODULE_LOADED callback data (a CUpti_ResourceData): keeps the
/// cubin when module loads are watched; nothing otherwise (pcsampling/modules.cpp).
void on_module_loaded(const void* resource_data);

}  // namespace pcsampling

}  // namespace dlpt
