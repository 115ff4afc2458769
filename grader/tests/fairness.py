"""Is timing through the judge fair? Every variant of every solution, timed two ways.

The grader times a student's code in a worker process, across a process boundary
(common/judge/session.cu): a fence in the judge's stream ends each sample, and the
boundary's own cost, measured with empty requests, is subtracted. This script checks
that the boundary changes no verdict: for each lab it runs the reference solution's
bench twice, directly (<lab>_solution_bench: the solution linked in, CUDA events) and
through the judge (<lab>_judge_bench with the solution as the implementation under
test), and compares each variant's speed relative to the reference variant. Needs a GPU
and a build of the kit with its solutions:

    python3 -m grader.tests.fairness --build-dir build/dev [--max-time S] [lab ...]

The judge's bench runs with the CUDA_DEVICE_MAX_CONNECTIONS the grader gives it
(`bench_device_connections`; `--judge-connections` overrides it), the direct one with
the driver's default.

Prints one row per variant and workload (whether the grade uses the workload, the
reference's time per call, direct ratio, judge ratio, difference, then both paths'
absolute times per call and their difference in microseconds; a row per workload for
the reference itself) and the boundary's cost per call; exits 1 when a graded
workload's difference exceeds --tolerance (default 2%), or any workload's with
--all-workloads. With --runs N each path runs N times, alternately, and every row compares the medians
of the runs. With --control a last column gives the largest difference of a direct run
from the first (with one run, the direct bench runs twice): the spread of the bench
itself from one process to the next, against which the judge's difference is to be read;
a row then counts as beyond the tolerance only when the judge's difference also exceeds
that row's own spread (a kernel whose time the direct bench cannot reproduce either, such
as histogram's `racy`, with its data race on purpose, is not the judge's doing).

The ungraded workloads include calls of a few tens of microseconds, mostly kernel
launches (sort at n = 16384: about a hundred launches). Their time depends on how fast
the host process launches, which differs between the bench and the sandboxed worker by
more than 2%; the graded workloads are sized so that the GPU's work dominates.

Under each row beyond the tolerance, the quartiles of its calls on both paths (and of the
reference's), in microseconds: a difference of the paths that moves every call shows in
all three, one that a few slow calls make shows in the upper quartile alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from grader import config, manifest, proc
from grader.stages.context import connections_environment

KIT = Path(__file__).resolve().parents[2]


def bench(command: list[str], json_path: Path, timeout: float,
          env: dict[str, str] | None = None) -> dict[str, Any] | None:
    """Runs one bench and returns its JSON, or None (with the reason printed)."""
    result = proc.run([*command, "--json", str(json_path)], timeout=timeout, env=env)
    try:
        return json.loads(json_path.read_text())
    except (OSError, ValueError):
        print(f"  no JSON from {proc.command_string(command)} (exit {result.returncode}):\n{result.output_tail(8)}")
        return None


def ratios(data: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(workload, candidate) -> speed relative to the reference, for the solution's own versions."""
    out = {}
    for workload in data.get("workloads", []):
        for r in workload.get("results", []):
            speed = r.get("speed_vs_reference")
            if r.get("role") in ("student", "variant") and isinstance(speed, (int, float)):
                out[(workload["name"], r["name"])] = speed
    return out


def timed_results(data: dict[str, Any]) -> Iterator[tuple[tuple[str, str], dict[str, Any]]]:
    """((workload, candidate), result) for the solution's own versions and the reference
    (as "reference"): the rows whose times the tables compare."""
    for workload in data.get("workloads", []):
        for r in workload.get("results", []):
            if r.get("role") == "reference":
                yield (workload["name"], "reference"), r
            elif r.get("role") in ("student", "variant"):
                yield (workload["name"], str(r.get("name"))), r


def times(data: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(workload, candidate) -> median time per call in ms, the reference's included (as
    "reference"): the absolute figures behind the ratios, to tell a shift of the variant
    from one of the reference it is compared with."""
    return {key: r["median_ms"] for key, r in timed_results(data) if isinstance(r.get("median_ms"), (int, float))}


def quartiles(data: dict[str, Any]) -> dict[tuple[str, str], tuple[float, float, float]]:
    """(workload, candidate) -> the first quartile, the median and the third quartile of its
    time per call in ms (keys as times()): the shape of the samples behind a median, to
    tell a shift of every call from a longer tail."""
    out = {}
    for key, r in timed_results(data):
        values = tuple(r.get(k) for k in ("q1_ms", "median_ms", "q3_ms"))
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            out[key] = values
    return out


def quartile_line(key: tuple[str, str], direct: list[dict[str, Any]], judge: list[dict[str, Any]]) -> str:
    """A row beyond the tolerance, the quartiles of its calls (and of the reference's) on
    each path in microseconds, each the median over the runs."""
    def shown(runs: list[dict[str, Any]], which: tuple[str, str]) -> str:
        found = [q for q in (quartiles(data).get(which) for data in runs) if q is not None]
        if not found:
            return "-"
        return "/".join(f"{1000 * statistics.median(q[k] for q in found):.1f}" for k in range(3))
    reference = (key[0], "reference")
    return (f"{'':<15} {'':<38} quartiles per call, q1/median/q3 in us: direct {shown(direct, key)}, "
            f"judge {shown(judge, key)}; the reference: direct {shown(direct, reference)}, "
            f"judge {shown(judge, reference)}")


def absolute(direct_ms: float | None, judge_ms: float | None) -> str:
    """The two paths' times per call and their difference in microseconds."""
    if direct_ms is None or judge_ms is None:
        return f"{'-':>9} {'-':>9} {'-':>8}"
    return f"{direct_ms:9.4f} {judge_ms:9.4f} {1000 * (judge_ms - direct_ms):+8.2f}"


def workload_facts(data: dict[str, Any]) -> dict[str, tuple[bool, float | None]]:
    """workload -> (graded, the reference's median time per call in ms)."""
    out = {}
    for workload in data.get("workloads", []):
        reference = next((r for r in workload.get("results", []) if r.get("role") == "reference"), {})
        ms = reference.get("median_ms")
        out[workload["name"]] = (bool(workload.get("graded")), ms if isinstance(ms, (int, float)) else None)
    return out


def row(lab: str, workload: str, variant: str, facts: tuple[bool, float | None], rest: str) -> str:
    graded, ms = facts
    timing = f"{ms:9.3f}" if ms is not None else f"{'-':>9}"
    return f"{lab:<15} {workload[:38]:<38} {'yes' if graded else '':<6} {timing} {variant[:24]:<24} {rest}"


def merge(runs: list[dict[tuple[str, str], float]]) -> dict[tuple[str, str], float]:
    """Per key, the median over the runs that have it."""
    keys = set().union(*runs) if runs else set()
    return {key: statistics.median([run[key] for run in runs if key in run]) for key in keys}


@dataclass
class Comparison:
    """One lab's comparison: its rows, the largest difference on all and on graded
    workloads, the same for the differences the bench's own spread does not explain
    (`beyond`), the judge's boundary figures, and with `control` the largest difference of
    a direct run from the first (the bench's own spread from one process to the next)."""

    rows: list[str]
    worst: float = 0.0
    worst_graded: float = 0.0
    beyond: float = 0.0
    beyond_graded: float = 0.0
    judge: dict[str, Any] | None = None
    spread: float = 0.0


def each_run(key: tuple[str, str], median: float, direct_runs: list[dict[tuple[str, str], float]],
             judge_runs: list[dict[tuple[str, str], float]]) -> str:
    """A row beyond the tolerance, run by run: each path's figure as a difference from the
    direct median, and whether the paths' runs are apart (every judge run beyond every direct
    run, on one side: a difference of the paths) or mixed (the runs overlap: the processes'
    own spread)."""
    direct = [run[key] / median - 1.0 for run in direct_runs if key in run]
    judge = [run[key] / median - 1.0 for run in judge_runs if key in run]
    apart = bool(direct and judge) and (min(judge) > max(direct) or max(judge) < min(direct))
    shown = lambda values: " ".join(f"{100 * v:+.2f}%" for v in values)
    return (f"{'':<15} {'':<38} runs, from the direct median: direct {shown(direct)}; judge {shown(judge)}"
            + (" (apart: the paths differ)" if apart else " (mixed: the runs overlap, the processes' own spread)"))


def compare(lab: str, build: Path, common: list[str], timeout: float, tolerance: float,
            tmp: Path, connections: int = 0, direct_connections: int = 0,
            control: bool = False, runs: int = 1, judge_args: Sequence[str] = ()) -> Comparison:
    """The lab's comparison (Comparison). A row is beyond the tolerance when the judge's
    difference exceeds it and, with `control`, also the row's own spread between direct
    runs: a difference the direct bench shows against itself is not the judge's doing
    (e.g. a kernel with a data race on purpose, whose time varies from run to run).

    Each path runs `runs` times, alternately (direct, judge, direct, ...), and each row
    compares the medians of the runs: one process's own placement of its buffers, which
    moves a call's time by a few microseconds for the whole run, then counts once in
    `runs`. With `control` and one run, the direct bench runs twice. `judge_args` go to
    the judge's bench alone (a judge-only flag: a candidate fix, or a diagnostic such as
    --cold-copies that times the judge without a fix it makes)."""
    library = build / "lib" / f"lib{lab}_solution.so"
    direct_command = [str(build / "bin" / f"{lab}_solution_bench"), f"--reference={library}", *common]
    judge_command = [str(build / "bin" / f"{lab}_judge_bench"), f"--impl={library}", f"--reference={library}", *common,
                     *judge_args]
    directs: list[dict[str, Any] | None] = []
    judges: list[dict[str, Any] | None] = []
    for run in range(max(1, runs)):
        suffix = "" if run == 0 else f".{run + 1}"
        directs.append(bench(direct_command, tmp / f"{lab}.direct{suffix}.json", timeout,
                             connections_environment(direct_connections)))
        judges.append(bench(judge_command, tmp / f"{lab}.judge{suffix}.json", timeout,
                            connections_environment(connections)))
    if control and runs <= 1:
        directs.append(bench(direct_command, tmp / f"{lab}.direct2.json", timeout,
                             connections_environment(direct_connections)))
    if any(data is None for data in directs + judges):
        inf = float("inf")
        return Comparison([f"{lab}: a bench failed"], inf, inf, inf, inf)
    direct_ratios = [ratios(data) for data in directs]
    judge_ratios = [ratios(data) for data in judges]
    a, b = merge(direct_ratios), merge(judge_ratios)
    out = Comparison([])
    ta, tb = merge([times(data) for data in directs]), merge([times(data) for data in judges])
    facts = workload_facts(directs[0])
    for key in sorted(a.keys() & b.keys()):
        diff = b[key] / a[key] - 1.0
        graded = facts.get(key[0], (False, None))
        own, own_diff = "", 0.0
        if control:
            others = [run[key] / direct_ratios[0][key] - 1.0 for run in direct_ratios[1:]
                      if key in run and key in direct_ratios[0]]
            if others:
                own_diff = max(others, key=abs)
                out.spread = max(out.spread, abs(own_diff))
                own = f" {100 * own_diff:+7.2f}%"
            else:
                own = f" {'-':>8}"
        allowed = max(tolerance, abs(own_diff))
        out.worst = max(out.worst, abs(diff))
        out.beyond = max(out.beyond, abs(diff) if abs(diff) > allowed else 0.0)
        if graded[0]:
            out.worst_graded = max(out.worst_graded, abs(diff))
            out.beyond_graded = max(out.beyond_graded, abs(diff) if abs(diff) > allowed else 0.0)
        mark = ("" if abs(diff) <= tolerance else "  <-- beyond tolerance" if abs(diff) > allowed
                else "  (beyond tolerance, within the direct bench's own spread)")
        out.rows.append(row(lab, key[0], key[1], graded, f"{a[key]:8.3f} {b[key]:8.3f} {100 * diff:+7.2f}% "
                            f"{absolute(ta.get(key), tb.get(key))}{own}{mark}"))
        if mark and runs > 1:
            out.rows.append(each_run(key, a[key], direct_ratios, judge_ratios))
        if mark:
            out.rows.append(quartile_line(key, directs, judges))
    for name in sorted({workload for workload, _ in a}):
        key = (name, "reference")
        out.rows.append(row(lab, name, "(the reference)", facts.get(name, (False, None)),
                            f"{1.0:8.3f} {1.0:8.3f} {0.0:+7.2f}% {absolute(ta.get(key), tb.get(key))}"))
    for key in sorted(a.keys() ^ b.keys()):
        out.rows.append(row(lab, key[0], key[1], facts.get(key[0], (False, None)), "timed in one run only"))
    out.judge = judges[-1].get("judge")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.fairness", description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="labs to compare (default: every lab of the kit)")
    parser.add_argument("--build-dir", type=Path, default=KIT / "build" / "dev", help="a build of the kit with solutions")
    parser.add_argument("--max-time", type=float, default=3.0, help="sampling time per workload, at most (s)")
    parser.add_argument("--seed", type=int, default=7, help="the data seed of both runs")
    parser.add_argument("--tolerance", type=float, default=0.02, help="largest allowed difference (fraction)")
    parser.add_argument("--timeout", type=float, default=900, help="per bench run (s)")
    parser.add_argument("--judge-connections", type=int, default=config.DEFAULTS["grader"]["bench_device_connections"],
                        help="CUDA_DEVICE_MAX_CONNECTIONS of the judge's bench, as the grader sets it "
                             "(bench_device_connections; 0: the driver's default)")
    parser.add_argument("--direct-connections", type=int, default=0,
                        help="CUDA_DEVICE_MAX_CONNECTIONS of the direct bench (default 0: the driver's default); "
                             "the same as the judge's tells whether the queues explain a difference")
    parser.add_argument("--control", action="store_true",
                        help="run the direct bench twice and print the second run's difference from the first "
                             "(column 'direct 2'): a judge difference no larger than that is the benches' own "
                             "spread from one process to the next, not the judge's doing")
    parser.add_argument("--runs", type=int, default=1, metavar="N",
                        help="run each path N times, alternately, and compare the medians (default 1): a process's "
                             "placement of its buffers shifts its times for the whole run, and counts once in N")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep both benches' JSON of every lab in DIR (<lab>.direct.json, <lab>.judge.json)")
    parser.add_argument("--judge-arg", action="append", default=[], metavar="ARG",
                        help="an argument for the judge's bench alone, e.g. --judge-arg=--cold-copies to "
                             "time the judge without its copy warm-up, or a candidate fix behind a judge-only flag, "
                             "on the whole table (repeatable)")
    parser.add_argument("--bench-arg", action="append", default=[], metavar="ARG",
                        help="an argument for both benches, e.g. --bench-arg=--shift-allocations=6 to move every "
                             "buffer elsewhere in the GPU's memory in both paths (repeatable)")
    parser.add_argument("--all-workloads", action="store_true",
                        help="exit 1 when any workload differs beyond the tolerance, not only a graded one")
    args = parser.parse_args(argv)
    known = manifest.names(KIT)
    try:
        labs = manifest.resolve_names(args.labs, known) if args.labs else known
    except ValueError as exc:
        parser.error(str(exc))
    common = ["--no-cpu", f"--seed={args.seed}", f"--max-time={args.max_time}", *args.bench_arg]
    print(f"{'lab':<15} {'workload':<38} {'graded':<6} {'ref ms':>9} {'variant':<24} {'direct':>8} {'judge':>8} {'diff':>8}"
          f" {'direct ms':>9} {'judge ms':>9} {'diff us':>8}" + (f" {'direct 2':>8}" if args.control else ""))
    total = Comparison([])
    with tempfile.TemporaryDirectory(prefix="labkit-fairness-") as tmp:
        where = Path(tmp)
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            where = args.keep
        for lab in labs:
            result = compare(lab, args.build_dir.resolve(), common, args.timeout, args.tolerance, where,
                             args.judge_connections, args.direct_connections, args.control, max(1, args.runs),
                             args.judge_arg)
            print("\n".join(result.rows), flush=True)
            if result.judge:
                cost = result.judge.get("boundary", {})
                student, reference = cost.get("student", {}), cost.get("reference", {})
                print(f"{lab:<15} boundary cost per call: student {student.get('median_ms')} ms, "
                      f"reference {reference.get('median_ms')} ms (a call's time is its worker's stamps where the "
                      "judge's clock agrees within it)")
            for name in ("worst", "worst_graded", "beyond", "beyond_graded", "spread"):
                setattr(total, name, max(getattr(total, name), getattr(result, name)))
    print(f"\nlargest difference on the graded workloads: {100 * total.worst_graded:.2f}%, "
          f"on all workloads: {100 * total.worst:.2f}% (tolerance {100 * args.tolerance:.1f}%)")
    if args.control:
        print(f"largest difference of a direct run from the first (the benches' own spread): {100 * total.spread:.2f}%")
        print(f"largest difference beyond both the tolerance and its row's own spread: graded workloads "
              f"{100 * total.beyond_graded:.2f}%, all workloads {100 * total.beyond:.2f}%")
    limit = total.beyond if args.all_workloads else total.beyond_graded
    return 0 if limit == 0.0 else 1

if __name__ == "__main__":
    sys.exit(main())
