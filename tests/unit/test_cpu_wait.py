"""A busy host, measured: the step thread's wait for a CPU (dlpt.capture.cpu_wait) read from the
kernel, summed over the counted steps by the step schedule, and said in the report's header
(dlpt.analysis.report.busy_host) and beside each run of a diff."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from dlpt.analysis.cpu_wait import BUSY_SHARE, cpu_wait
from dlpt.analysis.report import build_report
from dlpt.capture.cpu_wait import ThreadWaits
from dlpt.model.session import Session
from tests.unit.test_schedule import MS, Run
from tests.unit.test_suggestions_view import STEPS, flops_session

linux_schedstat = pytest.mark.skipif(
    not os.path.exists("/proc/thread-self/schedstat"), reason="no per-thread schedstat here"
)

_SPIN = "import time\nt = time.time()\nwhile time.time() - t < 5: pass\n"


def _spin(ms: float) -> None:
    end = time.perf_counter() + ms / 1000
    while time.perf_counter() < end:
        pass


@linux_schedstat
def test_a_thread_sharing_its_cpu_with_a_spinning_process_is_seen_waiting() -> None:
    """Pinned to one CPU beside a process that spins there, a thread that spins 300 ms waits for
    the CPU about half that time; the same reader on an unreadable file knows nothing."""
    cpu = min(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    spinner = subprocess.Popen(
        [sys.executable, "-c", f"import os\nos.sched_setaffinity(0, {{{cpu}}})\n{_SPIN}"]
    )
    try:
        os.sched_setaffinity(0, {cpu})
        time.sleep(0.3)  # the spinner is running on that CPU
        waits = ThreadWaits()
        assert waits.available
        waits.mark()
        _spin(300)
        waited = waits.since_mark()
    finally:
        os.sched_setaffinity(0, before)
        spinner.kill()
        spinner.wait()
    assert waited >= 60 * MS  # half of 300 ms where the two share the CPU fairly
    missing = ThreadWaits("/proc/thread-self/no-such-file")
    missing.mark()
    assert not missing.available and missing.since_mark() == 0


@linux_schedstat
def test_a_mark_on_another_thread_measures_nothing() -> None:
    """/proc/thread-self names the thread that opened it: a step that ends on another thread than
    the one it began on reports no wait, never another thread's."""
    waits = ThreadWaits()
    t = threading.Thread(target=waits.mark)
    t.start()
    t.join()
    assert waits.since_mark() == 0
    waits.mark()
    assert waits.since_mark() >= 0
    waits.close()


class FakeWaits:
    """The step thread's waits for a CPU, as the test sets them for the next step."""

    available = True

    def __init__(self) -> None:
        self.next = 0

    def mark(self) -> None:
        pass

    def since_mark(self) -> int:
        out, self.next = self.next, 0
        return out

    def close(self) -> None:
        pass


class WaitingRun(Run):
    def __init__(self, **kw: Any) -> None:
        self.waits = FakeWaits()
        super().__init__(waits=self.waits, **kw)

    def step(self, ns: int, source: str = "optimizer", waited: int = 0) -> None:  # type: ignore[override]
        self.waits.next = waited
        super().step(ns, source)


def test_the_counted_steps_wait_is_summed_cut_with_them_and_restored_with_them() -> None:
    r = WaitingRun(calibrate=False)
    r.step(100 * MS, waited=50 * MS)  # the first: never counted
    for _ in range(10):
        r.step(10 * MS, waited=3 * MS)
    assert r.s.waited_ns == 30 * MS and r.s.times()["waited_ns"] == 30 * MS
    assert r.s.times()["counted_ns"] == 100 * MS
    r.s._drop_counted()  # a cut: the counted steps are outside, their wait with them
    assert r.s.waited_ns == 0
    assert "waited_ns" not in Run().s.times()  # unknown: not said


def test_the_counted_steps_wait_follows_a_restored_drop() -> None:
    """A fall too late to count from (test_schedule.late_fall's run, each step waiting 1 ms):
    the restored steps' waits count again with them."""
    r = WaitingRun()
    ms = 20.0
    for i in range(6):
        r.step((30 - 2 * i) * MS, waited=MS)
    for _ in range(20):
        r.step(20 * MS, waited=MS)
    while r.s.warmup.cuts < 2:
        ms *= 0.97
        r.step(int(ms * MS), waited=MS)
    r.step(int(ms * MS), waited=MS)
    r.s.close()
    assert r.restored and r.s.counted >= 20
    assert r.s.waited_ns == r.s.counted * MS


def _with_wait(h: Any, waited_share: float | None) -> Session:
    d = flops_session(h).to_dict()
    counted = 40 * MS * STEPS
    d["meta"]["step_time"] = {
        "counted_ns": counted,
        **({} if waited_share is None else {"waited_ns": round(waited_share * counted)}),
    }
    return Session.from_dict(d)


def test_the_header_warns_of_a_busy_host_and_says_nothing_of_a_quiet_one(h: Any) -> None:
    busy = build_report(_with_wait(h, 0.52))
    facts = [f for f in busy.header if f.kind == "busy_host"]
    assert len(facts) == 1 and facts[0].level == "warn"
    assert "waited 52% of its steps for a CPU (20.80ms/step)" in facts[0].text
    assert "dlpt diff judges CPU lines on each op's fastest call" in facts[0].text
    for share in (None, 0.0006, BUSY_SHARE / 2):
        quiet = build_report(_with_wait(h, share))
        assert not [f for f in quiet.header if f.kind == "busy_host"]
    assert cpu_wait(_with_wait(h, None).typed_meta) is None


def test_a_diff_says_which_run_waited_for_a_cpu(h: Any) -> None:
    """Terminal, HTML model and the compare answer name each run's host: a busy run beside a
    quiet one is where the host moved the means."""
    import io

    from rich.console import Console

    from dlpt.model.metrics import METRICS
    from dlpt.query.compare import compare_answer, judged
    from dlpt.renderers.html.diff_page import build_diff_model
    from dlpt.renderers.terminal.diff import render_diff
    from dlpt.views.diff import diff_view

    view = diff_view(_with_wait(h, 0.51), _with_wait(h, 0.001))
    console = Console(width=250, color_system=None, record=True, file=io.StringIO())
    console.print(render_diff(view))
    text = console.export_text()
    assert "busy host: waited for a CPU 51% of its steps" in text
    assert "quiet host (0.1% waiting for a CPU)" in text
    model = build_diff_model(view)
    assert model["a"]["host"].startswith("busy host") and model["b"]["host"].startswith("quiet host")
    cpu = METRICS["cpu"]
    shift, changes = judged(view.diff, cpu)
    answer = compare_answer(view.diff, cpu, shift, changes)
    assert answer["a"]["waited_share"] == 0.51 and answer["b"]["waited_share"] == 0.001
    unknown = diff_view(_with_wait(h, None), _with_wait(h, None))
    assert (
        unknown.diff.a.host_text == ""
        and "waited_share" not in compare_answer(unknown.diff, cpu, *judged(unknown.diff, cpu))["a"]
    )
