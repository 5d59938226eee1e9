"""The host sampler on the CPU: host time lands on the lines that spent it (pure-Python lines
that launch no op included), per thread and GIL state, under dlpt scopes, through generators,
exceptions and deep recursion, and it survives threads that come and go, code that is freed while
sampled, and fork. (Stopping at exit and on signals: tests/cli/test_host_cli.py.)"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

import pytest
import torch

import dlpt
from dlpt.capture import native
from dlpt.model.session import Session
from dlpt.model.source_files import file_kind
from tests.query import Q, line_of

HERE = __file__


def host_by_line(s: Session, file: str = HERE, key: str = "host_ns") -> dict[int, int]:
    """Each line's own host time (its frames' exclusive time)."""
    out: dict[int, int] = {}
    for n in s.nodes:
        if n["kind"] == "frame" and n["file"] == file and n["m"].get(key):
            out[n["line"]] = out.get(n["line"], 0) + n["m"][key]
    return out


def host_under(s: Session, line: int, file: str = HERE, key: str = "host_ns") -> int:
    """A line's inclusive host time: its frames and everything they called (counted once)."""
    q = Q(s)
    seen: set[int] = set()
    for f in q.frames(file, line):
        if not any(a["id"] in seen for a in q.ancestors(f)):
            seen.update(n["id"] for n in q.subtree(f))
    return sum(s.nodes[i]["m"].get(key, 0) for i in seen)


def spin(seconds: float) -> int:
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1  # @spin
    return n


def pause(seconds: float) -> None:
    time.sleep(seconds)  # @pause


def test_a_pure_python_line_gets_its_share_of_the_step() -> None:
    """Each step spends a measured time in a Python loop that launches no op and a measured time
    asleep: both lines show with host time within 10% of what they took."""
    spun = slept = 0.0
    with dlpt.profile(gpu=False, sample_hz=1000, skip_first=1) as prof:
        for _ in range(7):
            recorded = prof._schedule is not None and prof._schedule.warmup.over
            t0 = time.perf_counter()
            spin(0.06)
            t1 = time.perf_counter()
            pause(0.04)
            t2 = time.perf_counter()
            torch.ones(4).sum()
            prof.step()
            if recorded:
                spun += t1 - t0
                slept += t2 - t1
    s = prof.session
    lines = host_by_line(s)
    spin_ns = lines.get(line_of("spin", spin), 0) + lines.get(line_of("spin", spin) - 1, 0)
    pause_ns = lines.get(line_of("pause", pause), 0)
    assert abs(spin_ns / 1e9 - spun) <= 0.1 * spun, (spin_ns / 1e9, spun, lines)
    assert abs(pause_ns / 1e9 - slept) <= 0.1 * slept, (pause_ns / 1e9, slept, lines)
    # Asleep the thread holds no GIL and uses no CPU; spinning it holds the GIL all along.
    gil = host_by_line(s, key="host_gil_ns")
    assert gil.get(line_of("pause", pause), 0) <= 0.05 * pause_ns
    assert sum(gil.get(n, 0) for n in (line_of("spin", spin), line_of("spin", spin) - 1)) >= 0.9 * spin_ns
    host = s.meta["host"]
    assert host["sampling"] and host["sample_hz"] == 1000 and host["samples"] > 0
    top = host["step_thread"]["lines"][0]
    assert (top["file"], top["function"]) == (HERE, "spin")


def worker_spin(stop: threading.Event) -> None:
    while not stop.is_set():
        sum(i * i for i in range(200))  # @worker_spin


def worker_wait(stop: threading.Event) -> None:
    stop.wait()  # @worker_wait


def test_every_python_thread_is_sampled_with_its_gil_state() -> None:
    stop = threading.Event()
    threads = [threading.Thread(target=f, args=(stop,)) for f in (worker_spin, worker_wait)]
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        for t in threads:
            t.start()
        pause(0.3)
        stop.set()
        for t in threads:
            t.join()
    s = prof.session
    busy, idle = line_of("worker_spin", worker_spin), line_of("worker_wait", worker_wait)
    assert host_under(s, busy) > 50_000_000 and host_under(s, idle) > 100_000_000
    assert host_under(s, idle, key="host_gil_ns") < 0.05 * host_under(s, idle)  # waiting on an Event: no GIL
    assert prof.session.meta["host"]["max_threads"] >= 3


def test_threads_of_library_code_only_count_their_cpu_time_not_their_waiting() -> None:
    """A thread in the stdlib's code only (a DataLoader's queue feeder, an idle pool worker: here
    an Event's wait) must not put its waiting on the report's total (issue 33: 234 ms of a
    20-60 ms step); the program's own waiting thread keeps its wall time (the test above)."""
    stop = threading.Event()
    idle = threading.Thread(target=stop.wait, name="idle-library-thread")
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        idle.start()
        pause(0.3)
        stop.set()
        idle.join()
    s = prof.session
    assert s.meta["host"]["max_threads"] >= 2  # the idle thread was sampled
    paused = host_under(s, line_of("pause", pause))
    assert paused > 200_000_000
    # The stdlib's threads only: a thread an earlier test left behind may run an installed
    # package's code (tqdm's monitor, once torch's compiler imported tqdm), whose waiting keeps
    # its wall time by design.
    by_id = {n["id"]: n for n in s.nodes}

    def library_only(n: dict) -> bool:
        while n["parent"] >= 0:
            if n["kind"] == "frame" and file_kind(n["file"]) != "framework":
                return False
            n = by_id[n["parent"]]
        return True

    outside_user = sum(
        n["m"].get("host_ns", 0)
        for n in s.nodes
        if n["kind"] == "frame" and "threading.py" in n["file"] and n["m"].get("host_ns") and library_only(n)
    )
    assert outside_user < 0.1 * paused, (outside_user, paused)


def short_lived(i: int) -> int:
    return sum(range(1000 * (i % 7 + 1)))  # @short


def test_threads_that_start_and_end_all_the_time_do_not_break_it() -> None:
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        end = time.perf_counter() + 0.8
        n = 0
        while time.perf_counter() < end:
            batch = [threading.Thread(target=short_lived, args=(i,)) for i in range(8)]
            for t in batch:
                t.start()
            for t in batch:
                t.join()
            n += 8
    host = prof.session.meta["host"]
    assert n > 50 and host["samples"] > 100
    assert host["torn"] <= host["samples"]  # dropped, counted: never a crash


def with_scope() -> None:
    with dlpt.scope("prep"):
        spin(0.15)  # @in_scope


@pytest.mark.parametrize("idle_first", [0.0, 0.03])
def test_sampled_time_lands_under_the_scope_the_ops_land_under(idle_first: float) -> None:
    # idle_first: the sampler sees the thread before its first scope gives it a thread state
    # (it looked the state up again only every 64 ticks: ~34 ms of the spin landed outside).
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        time.sleep(idle_first)
        with_scope()
    s = prof.session
    scopes = [n for n in s.nodes if n["kind"] == "scope" and n["name"] == "prep"]
    assert scopes
    q = Q(s)
    under = [n for sc in scopes for n in q.subtree(sc["id"])]
    line = line_of("in_scope", with_scope)
    at_line = [n for n in s.nodes if n["kind"] == "frame" and n["line"] == line and n["file"] == __file__]
    # The spin's line, wherever a sample saw it, is under the scope: none of it above it. (How
    # much of its 150 ms was sampled depends on how much of a CPU a busy host gave the sampler;
    # the total of the session holds threads other tests left running.)
    assert at_line and all(n in under for n in at_line), at_line
    assert sum(n["m"].get("host_ns", 0) for n in under) > 20_000_000


def produce(n: int) -> Any:
    for i in range(n):
        spin(0.002)  # @produce
        yield i


def deep(n: int) -> None:
    if n == 0:
        spin(0.2)  # @deep_bottom
        return
    deep(n - 1)  # @deep


def raising(n: int) -> int:
    caught = 0
    end = time.perf_counter() + 0.2
    while time.perf_counter() < end:
        try:
            raise ValueError(n)  # @raise
        except ValueError:
            caught += 1
    return caught


def test_generators_exceptions_and_deep_recursion() -> None:
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        total = sum(produce(100))  # @consume
        deep(600)
        raising(3)
    s = prof.session
    lines = host_by_line(s)
    assert total == sum(range(100))
    assert host_under(s, line_of("produce", produce)) > 50_000_000
    # The generator's frame sits under the consuming line.
    consume = line_of("consume", test_generators_exceptions_and_deep_recursion)
    gen_nodes = [n for n in s.nodes if n["kind"] == "frame" and n["name"] == "produce"]
    assert gen_nodes and all(s.nodes[n["parent"]]["line"] == consume for n in gen_nodes)
    assert host_under(s, line_of("deep_bottom", deep)) > 100_000_000
    assert lines.get(line_of("raise", raising), 0) > 0
    # 600 levels: only the innermost 256 frames are kept, as for ops; no path is deeper.
    depth = {0: 0}
    for n in s.nodes[1:]:
        depth[n["id"]] = depth[n["parent"]] + 1
    assert max(depth.values()) <= 256 + 8


def frames_of_many_locals(depth: int, seconds: float) -> dict[str, Any]:
    """Functions f0 .. f{depth} (f{depth} spins ``seconds``), each frame holding 60 locals: a
    stack of ~600-byte frames, ~36 KB for 60 of them, that spans several of CPython's 16 KiB
    frame-stack chunks (a Hugging Face generate call's shape)."""
    g: dict[str, Any] = {"time": time}
    body = "".join(f"    v{i} = n + {i}\n" for i in range(60))
    for d in range(depth):
        exec(f"def f{d}(n):\n{body}    return f{d + 1}(n)\n", g)
    exec(
        f"def f{depth}(n):\n    end = time.perf_counter() + {seconds}\n    k = 0\n"
        "    while time.perf_counter() < end:\n        k += 1\n    return k\n",
        g,
    )
    return g


def test_a_deep_stack_of_large_frames_is_read_a_chunk_at_a_time() -> None:
    """Frames outside the newest chunk of the thread's frame stack used to be read one by one, a
    system call each (~60 a sample under a decode step's stack): now each chunk is copied in one
    read. Every frame is still on the sampled path."""
    depth = 60
    g = frames_of_many_locals(depth, 0.4)
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        g["f0"](0)
    s = prof.session
    host = s.meta["host"]
    assert host["samples"] >= 100, host
    # A sample reads the thread's state (and, before 3.13, its cframe), then each chunk once.
    assert host["safe_reads"] <= 10 * host["samples"], host
    leaf = [n for n in s.nodes if n["kind"] == "frame" and n["name"] == f"f{depth}" and n["m"].get("host_ns")]
    assert leaf, "no sample on the innermost function"
    by_id = {n["id"]: n for n in s.nodes}
    path, n = [], leaf[0]
    while n["parent"] is not None and n["id"] != 0:
        n = by_id[n["parent"]]
        path.append(n.get("name"))
    assert all(f"f{d}" in path for d in range(depth)), path
    assert sum(x["m"]["host_ns"] for x in leaf) >= 0.3e9


def test_code_freed_while_sampled_is_never_touched() -> None:
    """Functions compiled at run time, run once and dropped: their code objects die while the
    sampler may hold their addresses. Nothing crashes; their time is kept or counted as lost."""
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        end = time.perf_counter() + 1.0
        i = 0
        while time.perf_counter() < end:
            source = (
                f"def f{i}(t):\n    e = time.perf_counter() + t\n    while time.perf_counter() < e: pass\n"
            )
            module = compile(source, f"<gen{i}>", "exec")
            ns: dict[str, Any] = {"time": time}
            exec(module, ns)
            f = ns.pop(f"f{i}")  # no cycle through its globals: freed at once below
            f(0.003)
            del f, module, ns  # the function's code object dies here, maybe mid-sample
            i += 1
    host = prof.session.meta["host"]
    assert i > 20 and host["samples"] > 0
    named = [n for n in prof.session.nodes if n["kind"] == "frame" and n["file"].startswith("<gen")]
    lost = [n for n in prof.session.nodes if n["name"] == "<code freed during profiling>"]
    assert named or lost  # their time is on their own lines, or said to be lost: never a wrong line


def test_sampling_off_and_no_samples_outside_recorded_steps() -> None:
    with dlpt.profile(gpu=False, sample_hz=0) as prof:
        spin(0.05)
    assert "host" not in prof.session.meta or not prof.session.meta["host"].get("sampling")
    assert not any(n["m"].get("host_ns") for n in prof.session.nodes)
    # Warm-up steps are not recorded: neither are their samples.
    with dlpt.profile(gpu=False, sample_hz=1000, skip_first=2) as prof:
        for i in range(3):
            spin(0.05 if i < 2 else 0.0)  # @warmup
            pause(0.05)
            prof.step()
    lines = host_by_line(prof.session)
    assert lines.get(line_of("spin", spin), 0) < 10_000_000, lines  # only the recorded step's


def four_steps_then_teardown() -> Session:
    """Four 10 ms steps, then 0.3 s after the last one (a program's teardown)."""
    with dlpt.profile(gpu=False, sample_hz=1000, calibrate=False, skip_first=0) as prof:
        for _ in range(4):
            spin(0.01)
            prof.step()
        pause(0.3)  # the teardown
    return prof.session


def test_the_end_of_the_run_after_the_last_step_is_not_a_step() -> None:
    # The time between the last step boundary and stop (a program's teardown: destroying its
    # process group, writing checkpoints) is outside the steps: never divided into them.
    session = four_steps_then_teardown()
    host = session.meta["host"]
    assert host["steps"] <= session.meta["steps"]["profiled"] == 4  # the tail is no step
    lines = host_by_line(session)
    assert lines.get(line_of("pause", pause), 0) == 0, lines  # not on the steps' nodes
    assert host["step_thread"]["ns"] < 200_000_000, host["step_thread"]["ns"]  # 4 x 10 ms, not 300 ms more


def test_a_stack_read_across_a_step_boundary_is_not_filed_in_the_step_before(monkeypatch: Any) -> None:
    # The sampler reads the step's epoch, then the stacks. On a busy host it can be kept off the
    # CPU in between while the program ends its last step and starts its teardown: the stack it
    # then reads is the teardown's, which was filed in the last step (the test above failed so
    # under load). Made on purpose here: 20 ms between the two reads. Such a stack is dropped.
    monkeypatch.setenv("DLPT_SAMPLER_LAG_US", "20000")
    session = four_steps_then_teardown()
    assert session.meta["host"]["torn"] >= 1, session.meta["host"]  # dropped, and counted
    lines = host_by_line(session)
    assert lines.get(line_of("pause", pause), 0) == 0, lines


def test_a_forked_child_neither_crashes_nor_inherits_the_sampler() -> None:
    # The child's own sampler must tick at least once; on a loaded 2-core CI machine a 100 ms run
    # once got none, so the child runs until its first samples (at most 3 s) and says why not.
    read_end, write_end = os.pipe()
    with dlpt.profile(gpu=False, sample_hz=1000) as prof:
        spin(0.05)
        pid = os.fork()
        if pid == 0:  # the child: no sampler thread here; it may profile itself
            os.close(read_end)
            report: dict[str, Any] = {}
            try:
                deadline = time.perf_counter() + 3.0
                while time.perf_counter() < deadline and not report.get("samples"):
                    with dlpt.profile(gpu=False, sample_hz=1000) as child:
                        spin(0.1)
                    host = child.session.meta["host"]
                    report = {k: host.get(k) for k in ("sampling", "off", "samples", "ticks", "missed")}
            except BaseException as e:  # noqa: BLE001 - any failure is the child's report
                report = {"error": repr(e)}
            os.write(write_end, json.dumps(report).encode())
            os._exit(0)
        os.close(write_end)
        spin(0.05)
        _, status = os.waitpid(pid, 0)
    with os.fdopen(read_end, "rb") as f:
        report = json.loads(f.read() or b"{}")
    assert os.waitstatus_to_exitcode(status) == 0
    assert report.get("sampling") and report.get("samples"), report
    assert prof.session.meta["host"]["samples"] > 0


def test_the_idle_blame_classifies_samples_against_gpu_work() -> None:
    """The native blame with synthetic input: a 100 ns step with work 40-60 and 70-80; samples
    at 10 (before), 50 (busy), 65 (between), 90 (after)."""
    ops = [
        ("mark", 0, 1, 0, 0),
        ("work", 0, 40, 60, 0),
        ("work", 0, 70, 80, 0),
        ("sample", 10, 1, 5, 1),
        ("sample", 50, 2, 5, 0),
        ("sample", 65, 3, 5, 1),
        ("sample", 90, 4, 5, 0),
        ("mark", 100, 0, 0, 0),
    ]
    out = native.core()._testing.idle_blame(True, ops)
    gaps = {g: {node: ns for node, ns, _ in cells} for g, cells in out["devices"]["0"].items()}
    assert gaps == {"before": {1: 5}, "busy": {2: 5}, "between": {3: 5}, "after": {4: 5}}
    assert out["steps"] == 1 and sorted(n for n, _, _ in out["host"]) == [1, 2, 3, 4]
    # An unrecorded interval keeps nothing; settling resolves closed steps only after a while.
    more = [("mark", 0, 0, 0, 0), ("sample", 5, 9, 5, 0), ("mark", 10, 1, 0, 0), ("sample", 15, 8, 5, 0)]
    out = native.core()._testing.idle_blame(False, [*more, ("mark", 20, 0, 0, 0)])
    assert out["steps"] == 1 and [n for n, _, _ in out["host"]] == [8]


def test_the_idle_blame_files_work_launched_before_a_step_as_the_steps_before() -> None:
    """Step 2 (100-200) starts with launch 2 of step 1 still queued (it runs 100-140); its own
    first work (launch 3) runs 160-180. The host sample at 150 was taken while the GPU waited
    for step 2's first work: "before", not "between" (launch ids 0: unknown, as before)."""

    def ops(known: bool) -> list[tuple[str, int, int, int, int]]:
        c = (lambda i: i) if known else (lambda i: 0)
        return [
            ("mark", 0, 1, 0, 0),
            ("work", 0, 10, 30, c(1)),
            ("mark", 100, 1, c(2), 0),
            ("work", 0, 100, 140, c(2)),
            ("work", 0, 160, 180, c(3)),
            *[("sample", t, node, 5, 0) for t, node in ((120, 1), (150, 2), (170, 3), (190, 4))],
            ("mark", 200, 0, c(3), 0),
        ]

    def gaps(known: bool) -> dict:
        out = native.core()._testing.idle_blame(True, ops(known))
        return {g: {node: ns for node, ns, _ in cells} for g, cells in out["devices"]["0"].items() if cells}

    assert gaps(True) == {"busy": {1: 5, 3: 5}, "before": {2: 5}, "after": {4: 5}}
    assert gaps(False)["between"] == {2: 5}


def test_timeline_keeps_n_steps_and_counts_what_overflows_its_budget() -> None:
    C = native.core()
    C.start(False, [], False)
    C.host_start(1000, 2, 40)
    try:
        for i in range(5):
            C.set_collecting(True) if i == 1 else None
            for _ in range(20):
                torch.ones(2).add(1)  # ops: more events than the budget of 40
            C.mark_step()
        C.set_collecting(False)
    finally:
        C.host_stop()
        C.stop()
    tl = C.host_result()["timeline"]
    assert tl["steps_requested"] == 2 and tl["steps_kept"] == 2
    assert len(tl["events"]) == 40 and tl["dropped"] > 0
