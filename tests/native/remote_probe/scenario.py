"""Run by tests/native/test_remote_stack_versions.py under one interpreter, with _remote_probe
importable: threads in known places, read from outside while they run; prints one JSON line."""

import json
import sys
import threading

import _remote_probe


def leaf_spin(stop):
    while not stop.is_set():
        pass  # @spin


def mid(stop):
    leaf_spin(stop)  # @mid


def numbers(stop):
    while not stop.is_set():
        yield 1  # @gen


def consume(stop):
    for _ in numbers(stop):  # @consume
        pass


# A stack of 40 frames of 60 locals each (~24 KB): it spans two or more of CPython's 16 KiB
# frame-stack chunks, as a Hugging Face generate call's does.
DEPTH = 40
_BODY = "".join(f"    v{i} = stop\n" for i in range(60))
for _d in range(DEPTH):
    exec(f"def deep{_d}(stop):\n{_BODY}    deep{_d + 1}(stop)\n")
exec(f"def deep{DEPTH}(stop):\n    leaf_spin(stop)\n")


class Layer:
    """A module-like object: each level is entered through its type's __call__ slot (C), so from
    3.12 on every level adds an entry frame on the C stack between two Python frames."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, stop):
        self.inner(stop)  # @layer


def layers(stop):
    net = leaf_spin
    for _ in range(20):
        net = Layer(net)
    net(stop)


def blocked(ev):
    ev.wait()  # @wait


def churn(stop):
    while not stop.is_set():
        t = threading.Thread(target=sum, args=(range(1000),))
        t.start()
        t.join()


def main():
    stop, ev = threading.Event(), threading.Event()
    threads = [
        threading.Thread(target=f, args=(a,), name=f.__name__)
        for f, a in (
            (mid, stop),
            (consume, stop),
            (blocked, ev),
            (churn, stop),
            (deep0, stop),  # noqa: F821 - defined by exec above
            (layers, stop),
        )
    ]
    for t in threads:
        t.start()
    ids = {t.native_id: t.name for t in threads}
    ids[threading.main_thread().native_id] = "main"
    out, torn = {}, 0
    for _ in range(200):  # reads while threads start and end all the time
        seen, t = _remote_probe.walk(5)
        torn += t
        for tid, gil, frames, reads in seen:
            if tid not in ids:
                continue
            entry = out.setdefault(ids[tid], {"gil": [], "stacks": [], "frame_reads": []})
            entry["gil"].append(gil)
            entry["frame_reads"].append(reads)
            stack = [[f.rsplit("/", 1)[-1], n, ln] for f, n, ln in frames]
            if stack not in entry["stacks"]:
                entry["stacks"].append(stack)
    stop.set()
    ev.set()
    for t in threads:
        t.join()
    print(json.dumps({"version": list(sys.version_info[:2]), "threads": out, "torn": torn}))


main()
