"""An answer as plain text (``dlpt query SESSION`` without ``--json``, and the text part of the
MCP tools' results): the header's facts with their basis, the top lines, one line's detail, the
suggestions. Every string from the session has its control characters escaped
(:func:`dlpt.model.safe_text.escape_control`): a session may hold anything."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dlpt.model.safe_text import escape_control as esc
from dlpt.model.units import PLAIN

__all__ = ["answer_text", "lines_text", "suggestions_text", "value_text"]


def value_text(v: float, unit: str) -> str:
    if unit == "ns":
        return PLAIN.time(v)
    if unit == "bytes":
        return PLAIN.bytes(v)
    return PLAIN.count(v)


def _header_text(answer: Mapping[str, Any]) -> list[str]:
    h = answer["header"]
    out = [f"program: {esc(h['program'])}"]
    steps = h["steps"]
    warm = steps.get("warmup")
    warmup = f"; warm-up {warm['steps']} steps ({warm['how']})" if warm else ""
    out.append(f"steps: {steps['counted']} counted{warmup}: {steps['basis']}")
    st = h.get("step_time")
    if st is not None:
        interval = f" ({PLAIN.time(st['lo_ns'])}-{PLAIN.time(st['hi_ns'])})" if "lo_ns" in st else ""
        out.append(f"step: {PLAIN.time(st['median_ns'])}{interval}, {st['basis']}")
    out.append(f"dlpt's cost: {esc(h['cost']['text'])}")
    m = h.get("mfu")
    if m is not None and "value" in m:
        out.append(
            f"MFU: {100 * m['value']:.1f}% ({m['achieved_tflops']:g} TFLOP/s; {esc(m['peak_source'])})"
        )
    return out


def lines_text(answer: Mapping[str, Any]) -> list[str]:
    """The top lines, one a row: own cost per step, its interval, share, place and text."""
    unit = answer["metric"]["unit"]
    per = "per step" if answer["per"] == "step" else "per run"
    out = [
        f"top lines by own {answer['metric']['label']} ({per}; {answer['lines_with_cost']} lines with any):"
    ]
    for row in answer["lines"]:
        ci = f" ±{value_text(row['ci95'], unit)}" if row.get("ci95") is not None else ""
        text = f"  {esc(row['text'])}" if "text" in row else ""
        out.append(
            f"  {value_text(row['self'], unit):>10}{ci:<12} {100 * row['share']:5.1f}%  "
            f"{esc(row['where'])} {esc(row['function'])}{text}"
        )
    return out


def _detail_text(d: Mapping[str, Any], unit: str) -> list[str]:
    out = [f"line {esc(d['where'])} {esc(d['function'])}: own {value_text(d['self'], unit)}"]
    for n, text in d.get("source", []):
        mark = ">" if n == d["line"] else " "
        out.append(f"  {mark}{n:5d}  {esc(text)}")
    for leaf in d.get("leaves", []):
        out.append(
            f"  {leaf['kind']:<7} {PLAIN.time(leaf['ns']):>10} x{leaf['count']:g}  {esc(leaf['name'])}"
        )
    for op in d.get("ops_by_name", []):
        out.append(f"  op      {PLAIN.time(op['cpu_ns']):>10} x{op['calls']:g}  {esc(op['name'])}")
    for kind in ("callers", "callees"):
        for c in d.get(kind, []):
            out.append(
                f"  {kind[:-1]:<7} {value_text(c['total'], unit):>10}  {esc(c['where'])} {esc(c['function'])}"
            )
    return out


def suggestions_text(suggestions: list[Mapping[str, Any]]) -> list[str]:
    if not suggestions:
        return ["no suggestions: no rule found a measured gain in this run"]
    return [f"  {esc(s['gain'])}  {esc(s['title'])} ({esc(s['where'])})" for s in suggestions]


def answer_text(answer: Mapping[str, Any]) -> str:
    """The whole answer as text."""
    out = _header_text(answer)
    out += ["", *lines_text(answer)]
    if "line" in answer:
        out += ["", *_detail_text(answer["line"], answer["metric"]["unit"])]
    out += ["", "suggestions:", *suggestions_text(answer["suggestions"])]
    return "\n".join(out)


def _change_row(row: Mapping[str, Any], unit: str) -> str:
    ratio = row.get("ratio")
    change = "new" if ratio is None and row.get("b") else f"{ratio:.2f}x" if ratio is not None else "-"
    if row.get("lo") is not None and row.get("hi") is not None:
        change += f" ({row['lo']:.2f}-{row['hi']:.2f})"
    verdict = row.get("verdict") or "untested"
    if row.get("basis"):  # judged on the ops' fastest calls (dlpt.analysis.diff.FASTEST)
        change += f" on {row['basis']}"
    text = f"  {esc(row['text'])}" if "text" in row else ""
    return (
        f"  {verdict:<10} {value_text(row['a'], unit):>10} -> {value_text(row['b'], unit):<10} {change:<20} "
        f"{esc(row['where'])}{text}"
    )


def compare_text(c: Mapping[str, Any]) -> list[str]:
    """A comparison answer: the run shift, then the lines in diff's order."""
    shift = c.get("run_shift")
    if shift is None:
        out = ["run shift: not tested (a session saved no per-step spreads)"]
    else:
        known = shift.get("why") != "host"
        comparable = "" if shift["comparable"] or not known else ": not comparable"
        why = f" ({shift['why']})" if shift.get("why") else ""
        basis = f" on {shift['basis']}" if shift.get("basis") else ""
        fast = shift.get("fastest")
        fastest = ""
        if fast:
            fastest = (
                f", {fast['factor']:.2f}x ({fast['lo']:.2f}-{fast['hi']:.2f}) at their ops' fastest calls"
            )
        out = [
            f"run shift: B/A {shift['factor']:.2f}x ({shift['lo']:.2f}-{shift['hi']:.2f}) from "
            f"{shift['lines']} lines{fastest}, {shift['verdict']}{basis}{why}{comparable}"
        ]
    counts = ", ".join(f"{n} {v}" for v, n in c["verdicts"].items() if n)
    out.append(f"lines ({esc(c['metric']['label'])} per step, A -> B, change after the run shift): {counts}")
    out += [_change_row(row, c["metric"]["unit"]) for row in c["lines"]]
    return out


def _measure(p: Mapping[str, Any]) -> str:
    """What the next run measured of a predicted gain (a gain is positive)."""
    if "measured_ns" not in p:
        return str(p["measured"])
    host = f"host time {PLAIN.time(p['host_ns'])}, " if "host_ns" in p else ""
    own = (
        f"own {PLAIN.time(p['measured_ns'])} ({PLAIN.time(p['measured_after_shift_ns'])} after the run shift"
    )
    return f"measured {host}{own}; {p['verdict']}): {100 * p['realised']:.0f}% of the prediction"


def verify_text(v: Mapping[str, Any]) -> str:
    """``dlpt verify``'s answer: the decision and its reasons last, where a CI log ends."""
    out = compare_text(v["compare"])
    preds = v.get("predictions") or []
    if preds:
        out.append("suggestions of the base, predicted against measured (per step):")
    for p in preds:
        out.append(
            f"  {esc(p['where'])} {esc(p['rule'])}: predicted -{PLAIN.time(p['predicted_ns'])}, {_measure(p)}"
        )
    runs = v.get("runs") or []
    each = "; ".join(f"{r['seconds']:g}s, {r['decision']}" for r in runs)
    out.append(f"runs: {len(runs)} ({each})")
    out.append(f"verify: {v['decision']} (exit {v['status']})")
    out += [f"  {esc(r)}" for r in v["reasons"]]
    return "\n".join(out)
