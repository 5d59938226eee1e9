// Unit-test seams: drive the native core's data structures directly with synthetic input
// (no GPU, no profile), so that tests/native/test_core_units.py checks each in isolation.
// Exposed as dlpt._C._testing by bindings.cpp. Nothing here runs during profiling.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace dlpt::testing {

/// BusyTracker: (device, start, end, comm) spans in the given order -> device -> (busy, comm,
/// exposed) ns. Over 65,536 spans per device exercise the bounded-memory folding.
std::map<uint32_t, std::tuple<uint64_t, uint64_t, uint64_t>> busy(
    const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool>>& spans);

/// BusyTracker steps: marks (t, recorded, corr_before) first, then spans (device, start, end,
/// comm, corr) -> device -> per interval (start, end, recorded, busy, first, last,
/// carried_until).
std::map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t, uint64_t>>>
busy_steps(const std::vector<std::tuple<uint64_t, bool, uint32_t>>& marks,
           const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool, uint32_t>>& spans);

/// BusyTracker split by epochs: epochs 0, 1, ... end with `classes` (counted or not), the next
/// one as `last_counted` (Epochs::finish); marks (t, epoch) and spans as in busy_steps -> device
/// -> (busy of counted epochs' intervals, busy outside them, per interval (start, end, recorded,
/// busy, first, last, carried_until)).
std::map<uint32_t,
         std::tuple<uint64_t, uint64_t,
                    std::vector<std::tuple<uint64_t, uint64_t, bool, uint64_t, uint64_t, uint64_t, uint64_t>>>>
busy_epochs(const std::vector<bool>& classes, bool last_counted,
            const std::vector<std::pair<uint64_t, uint32_t>>& marks,
            const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool>>& spans);

/// BusyTracker's collective records: spans (device, start, end, comm, epoch, corr) in the given
/// order, those with comm and corr > 0 tagged as collectives -> (device, epoch, corr, start, end,
/// exposed ns per bin), as collectives() returns them.
std::vector<std::tuple<uint32_t, uint32_t, uint32_t, uint64_t, uint64_t, std::vector<uint64_t>>> busy_collectives(
    const std::vector<std::tuple<uint32_t, uint64_t, uint64_t, bool, uint32_t, uint32_t>>& spans);

/// The sampler's frame reader on a synthetic thread: its frame-stack chunk a real buffer of
/// `chunk_bytes` zeros, its innermost frame link `top` (any value a torn read could produce).
/// Returns (torn, frames read).
std::pair<bool, uint64_t> remote_frames(uint64_t chunk_bytes, uint64_t top);

/// EpochMetrics under contention: `threads` native threads each add 1 to one node's `calls` and
/// `gpu_ns` `adds` times (at most 64 per epoch each), while this thread ends epochs (alternately
/// counted and not) until they are done; then everything is folded. Returns (calls counted,
/// calls outside, gpu_ns counted + outside, epochs ended).
std::tuple<uint64_t, uint64_t, uint64_t, uint64_t> epoch_contention(int threads, uint64_t adds);

/// SeqRanges: add (seq, node) pairs in order, then look up each query (-1: not found).
std::vector<int64_t> seq_ranges(const std::vector<std::pair<int64_t, uint32_t>>& adds,
                                const std::vector<int64_t>& queries);

/// CorrelationTable: put (corr, node) pairs, then get each id: (status, node, first_time), status
/// 0 found, 1 outside window, 2 unknown. `outside` marks ids put as outside the window.
std::vector<std::tuple<int, int64_t, bool>> correlations(const std::vector<std::tuple<uint32_t, uint32_t, bool>>& puts,
                                                         const std::vector<uint32_t>& gets);

/// GraphNodeContexts: ops ("put", node, ctx) / ("clone", original, node), then find each id (-1).
std::vector<int64_t> graph_nodes(const std::vector<std::tuple<std::string, uint64_t, uint64_t>>& ops,
                                 const std::vector<uint64_t>& finds);

/// Tree + ChildCache: create children for (parent, kind, a, b) keys in order through a cache of
/// one thread; returns the ids (equal keys -> equal ids, parents before children).
std::vector<uint32_t> tree_children(const std::vector<std::tuple<uint32_t, int, uint64_t, uint64_t>>& keys);

/// OpNames: ids for names given as (buffer index, text): each text is copied into the buffer slot
/// before lookup, so one pointer can carry different texts (as torch's fresh strings do).
std::vector<uint32_t> op_name_ids(const std::vector<std::pair<int, std::string>>& lookups);

/// CodeRegistry's line lookups since import: (lookups, line-table entries read, binary-search
/// steps). What stop() costs per frame node, counted rather than timed.
std::tuple<uint64_t, uint64_t, uint64_t> line_lookup_cost();

/// The tracer's kernel classifier on `name` as CUPTI reports it: (the name the tracer interns,
/// demangled when it demangles; whether it is a communication kernel).
std::pair<std::string, bool> comm_kernel(const std::string& name);

/// The running session's launch path: a launch with correlation id `corr` made now on the calling
/// thread (its context and epoch mapped, as the driver-API callbacks do). False without a session.
bool launch(uint32_t corr);

/// Only the entry (`enter`) or only the exit of such a launch call.
bool api_call(uint32_t corr, bool enter);

/// The running session's activity path: a kernel record of launch `corr` arriving now.
bool kernel_record(uint32_t corr, uint64_t start, uint64_t end, uint32_t device, const std::string& name);

// ---- bench seam (issue 32, bench/launch_path.py) -----------------------------------------

/// The per-launch path: `n` launch calls on the calling thread through the very CUPTI driver-API
/// callback (enter + exit each, synthetic callback records), from the caller's Python stack.
/// Returns nanoseconds per launch (enter + exit), or -1 without a session.
double launch_path_ns(uint64_t n, uint32_t corr0);

}  // namespace dlpt::testing
