"""Why does a call take longer in the judge's worker? One lab's bench in several set-ups.

The fairness tool (grader/tests/fairness.py) found compact's single-pass calls 3-7 us
slower through the judge than in the student's own bench, steadily. These calls start
with a cudaMemsetAsync of their workspace and end with a 4-byte synchronous cudaMemcpy
to the host, which no other lab's timed calls do. This probe runs the lab's bench
alternately in the set-ups below, each a switch of one suspected cause, and prints each
candidate's median time per call in the direct bench and, for every other set-up, how
many microseconds it differs from that. The probe found the cause (the copy path, Jc
below), and the judge now warms it before every timed call; the probe keeps the set-up
without the warm-up to show what it buys on the GPU at hand:

    D   the direct bench (<lab>_solution_bench), the driver's default queues: the student's
    D1  the direct bench with CUDA_DEVICE_MAX_CONNECTIONS=1, as the grader gives the judge
    J   the judge's bench (<lab>_judge_bench) as the grader runs it (one queue): before
        each timed call's lead every worker makes one memset and one 4-byte synchronous
        copy to the host of its own, outside the call's clock stamps. A direct bench's
        set-up uses the copy path in its own process right before every call (fresh data:
        a copy of the expected count; else the call before); without the warm-up a
        worker's call is the first user of its process's copy path since the judge's or
        the other worker's turn on the GPU
    J0  the judge's bench with the driver's default queues
    Jc  J with --cold-copies: no warm-up (how the grader timed before the probe found
        the cause)
    Jn  J with --no-sandbox: no seccomp, Landlock or dropped capabilities in the workers

    python3 -m grader.tests.fairness_probe --build-dir build/dev [--keep DIR] [--plan D,J,...]

The default plan (D J Jc D J Jc) times compact's graded shape at 30,000,001
ints (--graded-only --size 30000001 --time-variants single_pass,two_pass: the student's
default, single_pass_vec; single_pass; two_pass; the reference, three_pass; the same as
ref: in the reference's worker; CUB and a device-to-device copy, which run in the
judge's own process), sampling 1 s per run: six runs of 2-4 s each. Before the judge
warmed the copy path (J then was today's Jc), Jn, D1 and J0 changed nothing that
mattered on an H100 and an H200; an untimed request that readied each call's worker
before the judge's set-up (since removed) closed half of the gap on an H100 and none on
an H200, since the judge's own set-up came between; and the warm-up left 3% of the gap
on an H100 and 34% on an H200, at the price of some more boundary cost on the H100 (the
warm-up runs inside the judge's clock, though outside the stamps).

How to read it. The rows whose J column is 2 us or more (the gap) are summed up at the
end, per set-up, as the share of the gap that is left (judge set-ups) or reproduced (D1).
Jc is read the other way round: over the rows whose Jc column is 2 us or more, the share
of Jc's gap that the judge as graded (J) leaves, so a small share says the warm-up works.
For the others:
  - Jn leaves little: the sandbox is the cause; the workers' report (printed below the
    table) says whether the kernel forces speculative store bypass mitigation on them
    (seccomp implies it where spec_store_bypass_disable=seccomp, the default of kernels
    before 5.16), and the worker logs' refused system calls are counted;
  - D1 reproduces it, or J0 leaves little: the number of hardware queues is the cause,
    and the grader's bench_device_connections (or the direct bench's) should change;
  - none of them: the cause is on the GPU side of the worker's context (its memory, the
    GPU's switch between contexts), to be looked at with nsys on both benches.
The per-set-up counts of retaken and suspect samples (and the boundary excess) tell
whether the judge's check of the clock stamps, rather than the stamps, moved a time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import manifest
from grader.tests.fairness import bench, merge

KIT = Path(__file__).resolve().parents[2]
CONNECTIONS = "CUDA_DEVICE_MAX_CONNECTIONS"


@dataclass(frozen=True)
class Setup:
    label: str
    judge: bool
    connections: int  # CUDA_DEVICE_MAX_CONNECTIONS (0: unset, the driver's default)
    options: tuple[str, ...]
    what: str
    undoes_fix: bool = False  # switches off what the grader does to close a gap (read the other way round)


SETUPS = {s.label: s for s in [
    Setup("D", False, 0, (), "direct bench, the driver's default queues (the student's own)"),
    Setup("D1", False, 1, (), "direct bench, CUDA_DEVICE_MAX_CONNECTIONS=1"),
    Setup("J", True, 1, (), "judge bench as graded (CUDA_DEVICE_MAX_CONNECTIONS=1)"),
    Setup("J0", True, 0, (), "judge bench, the driver's default queues"),
    Setup("Jc", True, 1, ("--cold-copies",), "judge bench, no copy warm-up before each call", undoes_fix=True),
    Setup("Jn", True, 1, ("--no-sandbox",), "judge bench, workers without their sandbox"),
]}
DEFAULT_PLAN = "D,J,Jc,D,J,Jc"
GAP_US = 2.0  # a row whose J differs from D by this much or more shows the gap


def parse_plan(text: str) -> list[str]:
    """The set-ups' labels in run order; ValueError for an unknown one, or a plan
    without the baselines D and J."""
    plan = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [label for label in plan if label not in SETUPS]
    if unknown:
        raise ValueError(f"unknown set-up {', '.join(unknown)} (known: {', '.join(SETUPS)})")
    if "D" not in plan or "J" not in plan:
        raise ValueError("the plan needs D and J, the baselines every other set-up is read against")
    return plan


def command(setup: Setup, lab: str, build: Path, bench_args: list[str]) -> list[str]:
    library = build / "lib" / f"lib{lab}_solution.so"
    if setup.judge:
        return [str(build / "bin" / f"{lab}_judge_bench"), f"--impl={library}", f"--reference={library}",
                *setup.options, *bench_args]
    return [str(build / "bin" / f"{lab}_solution_bench"), f"--reference={library}", *bench_args]


def environment(setup: Setup, scratch: Path) -> dict[str, str]:
    """The set-up's overrides: its queues, and for a judge a TMPDIR of its own, where the
    workers' logs stay for refused_calls(). The probe takes CUDA_DEVICE_MAX_CONNECTIONS out
    of its own environment first (main), so that 0 means the driver's default."""
    env = {CONNECTIONS: str(setup.connections)} if setup.connections else {}
    if setup.judge:
        scratch.mkdir(parents=True, exist_ok=True)
        env["TMPDIR"] = str(scratch)
    return env


def candidate_times(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(workload, candidate name) -> the candidate's result, for every timed one."""
    out = {}
    for workload in doc.get("workloads", []):
        for r in workload.get("results", []):
            if isinstance(r.get("median_ms"), (int, float)):
                out[(workload.get("name", "?"), r.get("name", "?"))] = r
    return out


def medians(docs: list[dict[str, Any]]) -> dict[tuple[str, str], float]:
    """Per candidate, the median over the runs of its median time per call (ms)."""
    return merge([{key: r["median_ms"] for key, r in candidate_times(doc).items()} for doc in docs])


def stamp_checks(docs: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, int, float | None]]:
    """Per candidate of a judge set-up: samples retaken and suspect (summed over the runs)
    and the median boundary excess (us), None where no run has one."""
    out: dict[tuple[str, str], tuple[int, int, float | None]] = {}
    runs = [candidate_times(doc) for doc in docs]
    for key in set().union(*runs) if runs else set():
        results = [run[key] for run in runs if key in run]
        excess = [1000 * r["boundary_excess_ms"] for r in results if isinstance(r.get("boundary_excess_ms"), (int, float))]
        out[key] = (sum(int(r.get("boundary_retaken") or 0) for r in results),
                    sum(int(r.get("boundary_suspect") or 0) for r in results),
                    statistics.median(excess) if excess else None)
    return out


def gap_shares(times: dict[str, dict[tuple[str, str], float]], gap_us: float = GAP_US) -> dict[str, float | None]:
    """For each set-up other than D and J, the median over the rows with a gap (J at
    least `gap_us` slower than D) of (set-up - D) / (J - D): for a judge set-up the share
    of the gap left (0: closed), for a direct one the share reproduced. A set-up that
    undoes a fix of the grader's (Jc) is read the other way round: over the rows where it
    is `gap_us` or more slower than D, the share of its gap that J leaves (J - D) /
    (set-up - D). None without such rows or without the set-up's times."""
    direct, judge = times.get("D", {}), times.get("J", {})

    def median_share(slow: dict, fast: dict) -> float | None:
        rows = [key for key in direct.keys() & slow.keys() & fast.keys() if 1000 * (slow[key] - direct[key]) >= gap_us]
        shares = [(fast[key] - direct[key]) / (slow[key] - direct[key]) for key in rows]
        return statistics.median(shares) if shares else None

    out: dict[str, float | None] = {}
    for label, other in times.items():
        if label in ("D", "J"):
            continue
        undoes = label in SETUPS and SETUPS[label].undoes_fix
        out[label] = median_share(other, judge) if undoes else median_share(judge, other)
    return out


def reading(label: str, share: float | None) -> str:
    """One line on what a set-up's share of the gap says (see the module's docstring)."""
    if share is None:
        return f"{label}: no row shows the gap, nothing to read"
    if SETUPS[label].undoes_fix:
        verdict = "the fix works" if share <= 0.25 else (
            "the fix closes part of it" if share <= 0.75 else "the fix changes nothing that matters")
        return f"{label} ({SETUPS[label].what}): the judge as graded leaves {100 * share:.0f}% of this gap; {verdict}"
    judge = SETUPS[label].judge
    what = "left" if judge else "reproduced"
    if judge:
        verdict = "closes the gap: this switch names the cause" if share <= 0.25 else (
            "closes part of it" if share <= 0.75 else "changes nothing that matters")
    else:
        verdict = "reproduces the gap in the direct bench: this switch names the cause" if share >= 0.75 else (
            "reproduces part of it" if share >= 0.25 else "changes nothing that matters")
    return f"{label} ({SETUPS[label].what}): {100 * share:.0f}% of the gap {what}; {verdict}"


def worker_lines(docs: list[dict[str, Any]]) -> list[str]:
    """The lines of the workers' reports that bear on timing (sandbox, seccomp, speculation,
    the copy warm-up), each once."""
    lines: list[str] = []
    for doc in docs:
        text = ((doc.get("judge") or {}).get("workers")) or ""
        for line in text.splitlines():
            if re.search(r"speculation|seccomp as the judge|sandbox: off|copy warm-up", line) and line not in lines:
                lines.append(line)
    return lines


def refused_calls(scratch: Path) -> dict[str, int]:
    """System call number -> how many times the workers' logs under `scratch` say it was refused."""
    counts: dict[str, int] = {}
    for log in sorted(scratch.glob("labkit-worker-*/*.log")):
        try:
            text = log.read_text(errors="replace")
        except OSError:
            continue
        for number in re.findall(r"refused system call (\d+)", text):
            counts[number] = counts.get(number, 0) + 1
    return counts


def table(times: dict[str, dict[tuple[str, str], float]], checks: dict[str, dict], order: list[str]) -> list[str]:
    """The rows: per candidate, D's time per call (ms) and every other set-up's difference
    from it (us); then the judge set-ups' retaken/suspect samples and boundary excess (us)."""
    others = [label for label in order if label != "D"]
    judges = [label for label in order if SETUPS[label].judge]
    rows = [f"{'workload':<34} {'candidate':<22} {'D ms':>8} " + " ".join(f"{label + ' us':>8}" for label in others)
            + "   " + " ".join(f"{label + ' r/s/excess':>18}" for label in judges)]
    direct = times.get("D", {})
    for key in sorted(direct):
        cells = []
        for label in others:
            value = times.get(label, {}).get(key)
            cells.append(f"{1000 * (value - direct[key]):+8.2f}" if value is not None else f"{'-':>8}")
        stamps = []
        for label in judges:
            retaken, suspect, excess = checks.get(label, {}).get(key, (0, 0, None))
            stamps.append(f"{retaken:>5}/{suspect:<3}/{excess:+7.2f}" if excess is not None else
                          f"{retaken:>5}/{suspect:<3}/{'-':>7}")
        rows.append(f"{key[0][:34]:<34} {key[1][:22]:<22} {direct[key]:8.4f} " + " ".join(cells) + "   " +
                    " ".join(f"{cell:>18}" for cell in stamps))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.fairness_probe", description=__doc__.split("\n\n")[0])
    parser.add_argument("lab", nargs="?", default="compact", help="the lab (default compact)")
    parser.add_argument("--build-dir", type=Path, default=KIT / "build" / "dev", help="a build of the kit with solutions")
    parser.add_argument("--plan", default=DEFAULT_PLAN,
                        help=f"set-ups in run order, comma-separated (default {DEFAULT_PLAN}; known: {', '.join(SETUPS)})")
    parser.add_argument("--size", type=int, default=30000001, help="the bench's --size (0: the lab's graded sizes)")
    parser.add_argument("--variants", default="single_pass,two_pass",
                        help="the bench's --time-variants: variants timed beside the graded pair ('' for none)")
    parser.add_argument("--seconds", type=float, default=1.0, help="sampling time per workload and run (s)")
    parser.add_argument("--seed", type=int, default=7, help="the data seed of every run")
    parser.add_argument("--timeout", type=float, default=180, help="per bench run (s)")
    parser.add_argument("--keep", type=Path, metavar="DIR",
                        help="keep every run's JSON (<n>.<set-up>.json) and the workers' logs in DIR")
    args = parser.parse_args(argv)
    try:
        plan = parse_plan(args.plan)
    except ValueError as exc:
        parser.error(str(exc))
    if args.lab not in manifest.names(KIT):
        parser.error(f"unknown lab {args.lab!r}")
    inherited = os.environ.pop(CONNECTIONS, None)  # 0 in a set-up means the driver's default
    if inherited is not None:
        print(f"note: {CONNECTIONS}={inherited} in this environment is ignored; each set-up sets its own")
    bench_args = ["--no-cpu", "--graded-only", f"--seed={args.seed}", f"--min-time={args.seconds}",
                  f"--max-time={args.seconds}"]
    if args.size > 0:
        bench_args.append(f"--size={args.size}")
    if args.variants:
        bench_args.append(f"--time-variants={args.variants}")
    build = args.build_dir.resolve()
    docs: dict[str, list[dict[str, Any]]] = {label: [] for label in plan}
    refused: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="labkit-fairness-probe-") as tmp:
        where = args.keep or Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        for n, label in enumerate(plan, 1):
            setup = SETUPS[label]
            scratch = where / f"{n}.{label}.tmp"
            print(f"run {n}/{len(plan)}: {label}, {setup.what}", flush=True)
            doc = bench(command(setup, args.lab, build, bench_args), where / f"{n}.{label}.json", args.timeout,
                        environment(setup, scratch))
            if doc is None or doc.get("status", "ok") != "ok":
                why = "" if doc is None else f" ({doc.get('status')}: {doc.get('message', '')})"
                print(f"{label}: the bench failed{why}; this run is left out")
                continue
            docs[label].append(doc)
            if setup.judge:
                tally = refused.setdefault(label, {})
                for number, count in refused_calls(scratch).items():
                    tally[number] = tally.get(number, 0) + count
    order = list(dict.fromkeys(label for label in plan if docs[label]))
    if "D" not in order or "J" not in order:
        print("no run of D or of J succeeded: nothing to compare")
        return 1
    times = {label: medians(docs[label]) for label in order}
    checks = {label: stamp_checks(docs[label]) for label in order if SETUPS[label].judge}
    print()
    print("\n".join(table(times, checks, order)))
    print(f"\n(us: the set-up's median time per call minus D's; r/s/excess: samples retaken / suspect, "
          f"summed over the runs, and the median boundary excess in us)")
    for label in order:
        if label in ("D", "J"):
            continue
        print(reading(label, gap_shares(times).get(label)))
    for label in order:
        if not SETUPS[label].judge:
            continue
        for line in worker_lines(docs[label]):
            print(f"{label} worker: {line}")
        calls = refused.get(label)
        print(f"{label} workers' logs: " + (", ".join(f"system call {nr} refused {count}x"
                                                       for nr, count in sorted(calls.items()))
                                           if calls else "no refused system call"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
