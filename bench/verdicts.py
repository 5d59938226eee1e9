"""The known-answer harness: every verdict dlpt prints, checked on runs whose truth is set by
construction, many times each, with how often it was right (docs/numbers.md quotes the tables).

    python bench/verdicts.py diff   --pairs 20 [--busy 2] [--dir DIR]   # dlpt diff on lines.py pairs
    python bench/verdicts.py judge  DIR                                 # the diff tables again from saved runs
    python bench/verdicts.py judge-cross DIR                            # ...over every cross pair of those runs
    python bench/verdicts.py warmup [--seeds 300]                       # the warm-up rule on simulated series
    python bench/verdicts.py steps  --runs 10 [--busy 2]                # warm-up end to end: the README's command, short runs
    python bench/verdicts.py ranks  --runs 10 [--busy 2] [--cases TEXT] # stragglers: two gloo ranks, one sleeping
    python bench/verdicts.py judge-ranks DIR                            # the stragglers table again from saved jobs
    python bench/verdicts.py verify --pairs 5 [--runs 3] [--busy 0]     # dlpt verify's exit status on lines.py pairs
    python bench/verdicts.py suggest --runs 3 [--device cuda|cpu] [--busy 0]  # suggestions' gains against applying them
    python bench/verdicts.py judge-suggest DIR                          # the suggestions table again from saved runs

``--busy K`` runs K processes that spin on the CPU for the whole run (a host "with both cores
busy" on a 2-core machine). Tables go to stdout and to bench/results/verdicts-<part>-<host>-<date>.md
with the raw outcomes beside them (.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import verdict_diff
from verdict_rates import Rate, table
from verdict_runs import REPO, busy_host, profile

from dlpt.analysis.cpu_wait import cpu_wait
from dlpt.analysis.report.busy_host import busy_host_facts
from dlpt.model.meta import typed
from dlpt.model.units import Units

RESULTS = REPO / "bench" / "results"


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_").lower()


def _write(part: str, title: str, rates: list[Rate], raw: dict, notes: list[str]) -> Path:
    stamp = time.strftime("%Y-%m-%d-%H%M%S")
    host = os.environ.get("VERDICTS_HOST") or f"cpu{os.cpu_count()}"
    base = RESULTS / f"verdicts-{part}-{host}-{stamp}"
    text = "\n".join([f"# {title}", "", *notes, "", table(rates), ""])
    base.with_suffix(".md").write_text(text)
    base.with_suffix(".json").write_text(json.dumps({"rates": [r.as_dict() for r in rates], **raw}, indent=1))
    print(text)
    print(f"wrote {base}.md and .json")
    return base


def run_diff(args: argparse.Namespace) -> None:
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    runs: list[dict] = []
    with busy_host(args.busy):
        for i in range(args.pairs):
            for steps in sorted({c.steps for c in verdict_diff.CASES}):
                for side in ("a", "b"):
                    out = root / f"base{steps}" / f"{i}-{side}.json"
                    out.parent.mkdir(exist_ok=True)
                    runs.append(profile(verdict_diff.base_args(steps), out))
            for case in verdict_diff.CASES:
                if case.changed is None and not case.host:
                    continue  # A/A: the base pair
                out = root / _slug(case.name) / f"{i}.json"
                out.parent.mkdir(exist_ok=True)
                runs.append(profile(verdict_diff.case_args(case), out))
            print(f"pair {i + 1}/{args.pairs} done", flush=True)
    (root / "runs.json").write_text(json.dumps({"busy": args.busy, "runs": runs}, indent=1))
    judge_diff(root)


def judge_diff(root: Path) -> None:
    meta = json.loads((root / "runs.json").read_text()) if (root / "runs.json").exists() else {}
    rates: list[Rate] = []
    raw: dict = {}
    for case in verdict_diff.CASES:
        outcomes = []
        for a in sorted((root / f"base{case.steps}").glob("*-a.json")):
            i = a.name.split("-")[0]
            b = (root / f"base{case.steps}" / f"{i}-b.json") if case.changed is None and not case.host else (
                root / _slug(case.name) / f"{i}.json")
            if b.exists():
                outcomes.append(verdict_diff.judge_pair(a, b, case.changed))
        rates += verdict_diff.rates(case, outcomes)
        raw[case.name] = [o.__dict__ for o in outcomes]
    loads = [r["load"] for r in meta.get("runs", [])]
    notes = [
        f"`python bench/verdicts.py diff --busy {meta.get('busy', '?')}` on {platform.node()} "
        f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}; load average before each run "
        f"{min(loads, default=0):.1f}-{max(loads, default=0):.1f}. Programs: bench/known_answers/lines.py "
        f"(counts {verdict_diff.BASE}: LINE-B 67% of the step, LINE-A 11%).",
    ]
    _write("diff", "dlpt diff on pairs of known truth", rates, {"outcomes": raw, "runs": meta}, notes)


def judge_cross(root: Path) -> None:
    """The diff tables again from saved runs, over every cross pair: each base run against each
    other base run of its length (A/A), each changed run against each base run. Many more pairs
    than `judge`, but not independent (a run is in many): rates, not intervals, are what they
    add."""
    import itertools

    rates: list[Rate] = []
    raw: dict = {}
    for case in verdict_diff.CASES:
        bases = sorted((root / f"base{case.steps}").glob("*.json"))
        if case.changed is None and not case.host:
            pairs = list(itertools.combinations(bases, 2))
        else:
            pairs = [(a, b) for b in sorted((root / _slug(case.name)).glob("*.json")) for a in bases]
        outcomes = [verdict_diff.judge_pair(a, b, case.changed) for a, b in pairs]
        rates += verdict_diff.rates(case, outcomes)
        raw[case.name] = [o.__dict__ for o in outcomes]
    notes = [
        f"`python bench/verdicts.py judge-cross {root}` on {platform.node()}, {time.strftime('%Y-%m-%d')}: "
        "the saved runs of one `diff` batch, judged in every cross pair (each base run against each other, "
        "each changed run against each base run of its length). The pairs share runs: the intervals "
        "below assume independent pairs and are too narrow; read the counts.",
    ]
    _write("diff-cross", "dlpt diff on cross pairs of known truth", rates, {"outcomes": raw}, notes)


def run_warmup(args: argparse.Namespace) -> None:
    if args.old:
        os.environ["VERDICTS_HOST"] = os.environ.get("VERDICTS_HOST", "sim") + "-old"
    import verdict_warmup as vw

    rates: list[Rate] = []
    rows, raw = [], {}
    rule = vw.OldRule(args.old) if args.old else None
    for case in vw.CASES:
        runs = [vw.simulate(case, seed, rule) for seed in range(args.seeds)]
        rates += vw.rates(case, runs)
        rows.append(vw.summary(case, runs))
        raw[case.name] = [{"counted": len(r.counted), "first": min(r.counted, default=0),
                           "falling": r.falling_counted, "thrown": r.steady_thrown} for r in runs]
    notes = [
        f"`python bench/verdicts.py warmup --seeds {args.seeds}{' --old ' + args.old if args.old else ''}`: "
        f"{args.old or 'dlpt/capture/warmup.py through dlpt/capture/schedule.py'} on simulated step times (bench/verdict_warmup.py), "
        "each case over that many seeds.",
        "",
        vw.SUMMARY_HEADER,
        *rows,
    ]
    _write("warmup", "The warm-up rule on step times of known truth", rates, {"runs": raw}, notes)


def run_steps(args: argparse.Namespace) -> None:
    """The warm-up end to end: the README's main command, a 10-step run, a settling run."""
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    cases = [
        ("the README's command (examples/mlp_train.py, 60 steps)", [str(REPO / "examples" / "mlp_train.py")],
         ">= 20 steps counted", lambda m: m["steps"]["profiled"] >= 20, True),
        ("a 10-step run (lines.py 10 4 24 8)", ["lines.py", "10", "4", "24", "8"],
         ">= 5 steps counted", lambda m: m["steps"]["profiled"] >= 5, True),
        ("settling: +20 ms falling over 48 steps, 90 steps (settle.py)", ["settle.py", "90", "48", "20"],
         "none of the first 30 steps counted", lambda m: m["steps"]["warmup"]["steps"] >= 30, True),
        # Its own processes keep its first steps waiting, on any host: no truth for the busy-host row.
        ("its own processes spin beside its first 15 of 60 steps (contend.py)", ["contend.py", "60", "15"],
         "none of the first 15 steps counted", lambda m: m["steps"]["warmup"]["steps"] >= 15, False),
    ]
    rates: list[Rate] = []
    raw: dict = {}
    with busy_host(args.busy):
        for name, argv, verdict, right, host_known in cases:
            metas = []
            for i in range(args.runs):
                out = root / f"{_slug(name)[:40]}-{i}.json"
                r = profile(argv, out)
                if r["rc"] == 0:
                    metas.append(json.loads(out.read_text())["meta"])
            rates.append(Rate(name, verdict, sum(1 for m in metas if right(m)), len(metas), (">=", 0.95)))
            said = [_says_busy(m) for m in metas]
            host = "says the host was busy" if args.busy else "says nothing of a busy host"
            if host_known:
                rates.append(Rate(name, host, sum(1 for s in said if s == bool(args.busy)), len(metas), (">=", 0.95)))
            raw[name] = [
                {"profiled": m["steps"]["profiled"], "warmup": m["steps"]["warmup"], "waited": _waited(m)}
                for m in metas
            ]
    counted = {k: [r["profiled"] for r in v] for k, v in raw.items()}
    waited = {k: [r["waited"] for r in v] for k, v in raw.items()}
    notes = [
        f"`python bench/verdicts.py steps --runs {args.runs} --busy {args.busy}` on {platform.node()} "
        f"({os.cpu_count()} cores, Linux {platform.release()}: the scheduler decides how long a thread"
        f" that sleeps or runs briefly waits beside spinners), {time.strftime('%Y-%m-%d')}. Steps counted per run: "
        + "; ".join(f"{k}: {v}" for k, v in counted.items()),
        "The share of the counted steps' wall time the step's thread waited for a CPU, per run: "
        + "; ".join(f"{k}: {v}" for k, v in waited.items()),
    ]
    host = "on a busy host" if args.busy else "on a quiet host"
    _write("steps", f"The warm-up end to end, {host}", rates, {"runs": raw}, notes)


def _says_busy(meta: dict) -> bool:
    """Whether the report of a run with ``meta`` warns of a busy host (its header's fact)."""
    m = typed(meta)
    return bool(busy_host_facts(m, Units(steps=m.profiled_steps)))


def _waited(meta: dict) -> float | None:
    """The share of the counted steps' wall time the step's thread waited for a CPU."""
    w = cpu_wait(typed(meta))
    return None if w is None else round(w.share, 4)


def run_ranks(args: argparse.Namespace) -> None:
    import verdict_ranks as vr

    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    with busy_host(args.busy):
        for case in [c for c in vr.CASES if args.cases in c.name]:
            for i in range(args.runs):
                out = root / _slug(case.name) / f"{i}.json"
                out.parent.mkdir(exist_ok=True)
                vr.run(case, out)
    (root / "runs.json").write_text(json.dumps({"busy": args.busy, "runs": args.runs}))
    judge_ranks(root)


def judge_ranks(root: Path) -> None:
    """The stragglers table of the jobs saved under ``root`` (each case's runs in its folder)."""
    import verdict_ranks as vr

    meta = json.loads((root / "runs.json").read_text()) if (root / "runs.json").exists() else {}
    rates: list[Rate] = []
    raw: dict = {}
    for case in vr.CASES:
        folder = root / _slug(case.name)
        stems = sorted({p.name.split(".rank")[0] for p in folder.glob("*.rank*.json")})
        outs = [vr.judge(folder / f"{stem}.json") for stem in stems]
        if outs:
            rates += vr.rates(case, outs)
            raw[case.name] = [o.__dict__ for o in outs]
    notes = [
        f"`python bench/verdicts.py ranks --busy {meta.get('busy', '?')}` (judged again: `judge-ranks DIR`) on "
        f"{platform.node()} ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}: two gloo ranks under torchrun "
        "(bench/known_answers/ranks.py), with that many processes spinning on the CPU beside them.",
    ]
    _write("ranks", "Stragglers on jobs of known truth", rates, {"outcomes": raw, "runs": meta}, notes)


def judge_gpu(root: Path) -> None:
    """The diff tables of bench/verdict_gpu.py's runs (unpacked into ``root``)."""
    import tarfile

    from verdict_diff import Case, judge_pair, rates as diff_rates

    for tar in root.glob("*.tar.gz"):
        with tarfile.open(tar) as t:
            t.extractall(root, filter="data")
    rates: list[Rate] = []
    raw: dict = {}
    workloads = sorted({p.name.split("-")[0] for p in root.glob("*-a1-*.json")})
    for wl in workloads:
        for name, other, changed in (("A/A", "a2", None), ("LINE-EXTRA x1.5", "b15", "LINE-EXTRA"),
                                     ("LINE-EXTRA x2", "b2", "LINE-EXTRA")):
            case = Case(f"{wl}: {name}", (0, 0, 0), changed)
            outcomes = []
            for a in sorted(root.glob(f"{wl}-a1-*.json")):
                b = root / a.name.replace("-a1-", f"-{other}-")
                if b.exists():
                    outcomes.append(judge_pair(a, b, changed))
            rates += diff_rates(case, outcomes)
            raw[case.name] = [o.__dict__ for o in outcomes]
    notes = [f"`python bench/verdict_gpu.py` on the device, judged here with `python bench/verdicts.py judge-gpu`; "
             f"{os.environ.get('VERDICTS_HOST', '')}"]
    _write("diff-gpu", "dlpt diff on GPU workloads with a known extra matmul", rates, {"outcomes": raw}, notes)


def run_verify(args: argparse.Namespace) -> None:
    import verdict_verify as vv

    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    by_case: dict[str, list] = {c.name: [] for c in vv.PICKED}
    os.environ["KNOWN_DEVICE"] = args.device  # lines.py reads it, under every run verify starts
    with busy_host(args.busy):
        for i in range(args.pairs):
            base = root / f"base-{i}.json"
            if profile(verdict_diff.base_args(40), base)["rc"] != 0:
                continue
            for case in vv.PICKED:
                o = vv.verify(base, case, root / f"{_slug(case.name)}-{i}.json", args.runs)
                by_case[case.name].append(o)
                print(f"pair {i + 1}: {case.name}: exit {o.status} ({o.runs} runs, {o.seconds:.0f}s, load {o.load:.1f})",
                      flush=True)
    rates = [r for c in vv.PICKED for r in vv.rates(c, by_case[c.name])]
    loads = [o.load for v in by_case.values() for o in v]
    notes = [
        f"`python bench/verdicts.py verify --pairs {args.pairs} --runs {args.runs} --busy {args.busy} "
        f"--device {args.device}` on "
        f"{platform.node()} ({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')}; load average before each "
        f"verify {min(loads, default=0):.1f}-{max(loads, default=0):.1f}. Right: exit 1 where a line was made "
        "heavier, exit 0 for the same program or a slower host; exit 3 (can't tell) is counted apart.",
    ]
    raw = {k: [o.__dict__ for o in v] for k, v in by_case.items()}
    part = "verify" if args.device == "cpu" else f"verify-{args.device}"
    _write(part, "dlpt verify on pairs of known truth", rates, {"outcomes": raw}, notes)


def run_suggest(args: argparse.Namespace) -> None:
    import verdict_suggest as vs

    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    with busy_host(args.busy):  # the paired gain is measured on the same host as the profiles
        for case in [c for c in vs.CASES if args.device in ("all", c.device) and args.cases in c.name]:
            for i in range(args.runs):
                o = vs.run(case, root / case.name / str(i), args.steps, args.rounds)
                print(f"{case.name} {i + 1}/{args.runs}: found {o.found} at line {o.at_line}, on fixed {o.on_fixed}, "
                      f"estimate {o.estimate_ns / 1e6:.2f} ms, measured {o.measured_ns / 1e6:.2f} ms", flush=True)
    (root / "runs.json").write_text(json.dumps(vars(args)))
    judge_suggest(root)


def judge_suggest(root: Path) -> None:
    """The suggestions table of the runs saved under ``root`` (each case's runs in its folder)."""
    import verdict_suggest as vs

    meta = json.loads((root / "runs.json").read_text()) if (root / "runs.json").exists() else {}
    rates: list[Rate] = []
    rows, raw = [], {}
    for case in vs.CASES:
        outs = [vs.judge(case, d) for d in sorted((root / case.name).glob("*")) if (d / "paired.json").exists()]
        if outs:
            rates += vs.rates(case, outs)
            rows.append(vs.summary(case, outs))
            raw[case.name] = [o.__dict__ for o in outs]
    notes = [
        f"`python bench/verdicts.py suggest --runs {meta.get('runs', '?')} --device {meta.get('device', '?')} "
        f"--steps {meta.get('steps', '?')} --rounds {meta.get('rounds', '?')} --busy {meta.get('busy', 0)}` on "
        f"{platform.node()} "
        f"({os.cpu_count()} cores), {time.strftime('%Y-%m-%d')} {os.environ.get('VERDICTS_HOST', '')}: each case of "
        "bench/known_answers/suggest.py profiled as it is and fixed, and the fix's gain measured by the program's "
        "own clock, paired in one process (bench/verdict_suggest.py says when an estimate is right).",
        "",
        vs.SUMMARY_HEADER,
        *rows,
    ]
    part = "suggest-busy" if meta.get("busy") else "suggest"
    _write(part, "Suggestions' estimated gains against applying them", rates, {"outcomes": raw, "runs": meta}, notes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="part", required=True)
    d = sub.add_parser("diff")
    d.add_argument("--pairs", type=int, default=20)
    d.add_argument("--busy", type=int, default=2)
    d.add_argument("--dir", default="/tmp/dlpt-verdicts-diff")
    w = sub.add_parser("warmup")
    w.add_argument("--seeds", type=int, default=300)
    w.add_argument("--old", help="a warm-up module of an earlier build (git show REV:dlpt/capture/warmup.py)")
    st = sub.add_parser("steps")
    st.add_argument("--runs", type=int, default=10)
    st.add_argument("--busy", type=int, default=2)
    st.add_argument("--dir", default="/tmp/dlpt-verdicts-steps")
    rk = sub.add_parser("ranks")
    rk.add_argument("--runs", type=int, default=10)
    rk.add_argument("--busy", type=int, default=0)
    rk.add_argument("--dir", default="/tmp/dlpt-verdicts-ranks")
    rk.add_argument("--cases", default="", help="only the cases whose name holds this text (e.g. symmetric)")
    jr = sub.add_parser("judge-ranks")
    jr.add_argument("dir")
    jg = sub.add_parser("judge-gpu")
    jg.add_argument("dir")
    vf = sub.add_parser("verify")
    vf.add_argument("--pairs", type=int, default=5)
    vf.add_argument("--runs", type=int, default=1)
    vf.add_argument("--busy", type=int, default=0)
    vf.add_argument("--device", default="cpu", help="where lines.py runs (cuda: on the GPU, judged by GPU time)")
    vf.add_argument("--dir", default="/tmp/dlpt-verdicts-verify")
    sg = sub.add_parser("suggest")
    sg.add_argument("--runs", type=int, default=3)
    sg.add_argument("--device", default="all", choices=["all", "cuda", "cpu"])
    sg.add_argument("--cases", default="", help="only the cases whose name holds this text")
    sg.add_argument("--steps", type=int, default=150, help="steps of each profiled run")
    sg.add_argument("--rounds", type=int, default=8, help="rounds of the paired measurement")
    sg.add_argument("--busy", type=int, default=0)
    sg.add_argument("--dir", default="/tmp/dlpt-verdicts-suggest")
    js = sub.add_parser("judge-suggest")
    js.add_argument("dir")
    j = sub.add_parser("judge")
    j.add_argument("dir")
    jc = sub.add_parser("judge-cross")
    jc.add_argument("dir")
    args = ap.parse_args()
    if args.part == "diff":
        run_diff(args)
    elif args.part == "warmup":
        run_warmup(args)
    elif args.part == "steps":
        run_steps(args)
    elif args.part == "ranks":
        run_ranks(args)
    elif args.part == "judge-ranks":
        judge_ranks(Path(args.dir))
    elif args.part == "judge-gpu":
        judge_gpu(Path(args.dir))
    elif args.part == "verify":
        run_verify(args)
    elif args.part == "suggest":
        run_suggest(args)
    elif args.part == "judge-suggest":
        judge_suggest(Path(args.dir))
    elif args.part == "judge":
        judge_diff(Path(args.dir))
    elif args.part == "judge-cross":
        judge_cross(Path(args.dir))


if __name__ == "__main__":
    main()
