// The end of the process after a signal, bounded without the GIL and without Python's wakeup fd
// (dlpt/cli/signals.py drives it).
//
// Python's own signal handling needs the main thread to come back to the interpreter, and the
// wakeup fd (signal.set_wakeup_fd) belongs to whoever set it last: asyncio takes it and closing
// a loop drops it. A program stuck in native code that holds the GIL (a long C loop) or waits
// without it (a hung rendezvous) never runs a Python handler. So:
//
// - watch(signum) puts a C handler of ours in front of the one installed for the signal (the
//   interpreter's, which signal.signal installs for every Python handler) and calls that one
//   after it: Python sees every signal as before. Any later signal.signal(signum, ...) replaces
//   ours (the program takes the signal over: ours stands aside); dlpt watches again after its
//   own signal.signal calls.
// - A signal our handler catches with `ends` set starts the grace (arm): a native thread (the
//   reaper) waits for its end, then says on stderr what dlpt skips, removes the temporary files
//   of writes under way, restores the signal's default action and raises it: the process dies
//   of it, whatever its threads do.
// - It also queues the signal for next_signal, which dlpt's watchdog thread waits in (GIL
//   released): the Python side saves the profile from there while the main thread is stuck.
//
// Thread contract: watch/unwatch/set_* are [GIL] (they order with signal.signal); the handler
// runs on whatever thread the kernel picks and only touches lock-free atomics, clock_gettime and
// sem_post (async-signal-safe); the reaper is a thread of its own with every async signal
// blocked. A forked child starts with nothing watched, armed or queued.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlpt::ending {

/// [GIL] Our handler in front of the one installed for `signum` (not done over SIG_IGN, nor over
/// SIG_DFL unless `take_default`: then ours replaces it, and a catch only starts the grace and
/// queues the signal). `ends`: a catch starts the grace. Whether it is in front.
bool watch(int signum, bool ends, bool take_default);
/// [GIL] The handler ours chained to is back in front, if ours still is.
void unwatch(int signum);
/// [MT] Whether our handler is in front for `signum` now.
bool watching(int signum);

/// [GIL] The grace the next arm gives, in seconds (> 0).
void set_grace(double seconds);
/// [MT] Start the grace now for `signum`, unless it already runs (for any signal).
void arm(int signum);
/// [GIL] Cancel the grace: dlpt finished in time.
void disarm();
/// [MT] The signal the grace runs for, 0 when none.
int armed();

/// [GIL] The line said when the grace runs out: "<prefix>: SIG<NAME>: <tail>".
void set_text(const std::string& prefix, const std::string& tail);
/// [GIL] The temporary files removed when the grace runs out.
void set_partial(const std::vector<std::string>& paths);

/// [GIL] A new queue for next_signal (the old one's waiter gets 0); its generation.
uint64_t open_queue();
/// [GIL] The queue's waiter gets 0.
void close_queue();
/// [GIL released by caller] The next signal our handler caught, or 0 when the queue of
/// `generation` was closed or `timeout_s` passed.
int next_signal(uint64_t generation, double timeout_s);

}  // namespace dlpt::ending
