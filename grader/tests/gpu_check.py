"""The verdicts of `bash .ci/gpu-check` on the grader's reports: one line per phase.

    python3 -m grader.tests.gpu_check solutions REPORT [--labs LAB ...]
    python3 -m grader.tests.gpu_check skeletons REPORT [--labs LAB ...]
    python3 -m grader.tests.gpu_check time REPORT
    python3 -m grader.tests.gpu_check timeline REPORT

`solutions`: the reference solutions must earn every point: every lab PASS, its total its
maximum, every automatically checked answer correct (none left to the instructor for
want of a GPU line or a figure), every lecture step earned. `skeletons`: the student
skeletons must earn no correctness point, and none may crash, hang or fail to build.
Both need every expected lab in the report. Prints the verdict line; exit status 0 when
it holds, 1 when not, 2 when the report cannot be read. `time` is no verdict: one line on
where the grading run's time went (its stages, the longest parts of its labs, and what the
benches' own accounts say of the timing stage), for the grading-time work. `timeline` is
none either: the run drawn in text, a row per lab, where each of its stages ran (the
report's "spans"), so that one sees which labs' tests, sanitizer runs and bench set-ups
overlapped; after each row, the lab's test seconds and how many of them the test binary
itself counted (the rest is its processes' start and end); under the rows, how busy the
host's processors were (the report's "cpu_busy") and how busy the grading GPU was (its
"gpu_busy": the time a kernel ran, the time its memory was in use).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grader import cpu_load, gpu_load
from grader.gpu_specs import device_label

# Statuses a skeleton must never get: it builds, runs and fails its tests cleanly.
SKELETON_FORBIDDEN = ("BUILD_ERROR", "CRASH", "TIMEOUT", "ERROR", "NO_GPU", "MISSING")


def _labs(report: dict[str, Any], expected: list[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    labs = {lab.get("lab"): lab for lab in report.get("labs") or [] if isinstance(lab, dict)}
    return labs, [lab for lab in expected if lab not in labs]


def gpu_named(report: dict[str, Any]) -> str:
    """The GPU the report says graded it ('' when it names none)."""
    return device_label(report.get("gpu"))


def check_solutions(report: dict[str, Any], expected: list[str]) -> tuple[bool, str]:
    """(holds, summary line) for a grade of the reference solutions."""
    labs, missing = _labs(report, expected)
    problems = [f"{lab}: not graded" for lab in missing]
    answered = answers_max = 0.0
    for name, lab in labs.items():
        total, top = lab.get("total"), lab.get("max")
        if lab.get("status") != "PASS":
            problems.append(f"{name}: {lab.get('status')} ({str(lab.get('message') or '')[:120]})")
        elif not isinstance(total, (int, float)) or not isinstance(top, (int, float)) or total < top:
            problems.append(f"{name}: {total}/{top}")
        answers = lab.get("answers") or {}
        answered += float(answers.get("points") or 0)
        answers_max += float(answers.get("max") or 0)
        for question in answers.get("questions") or []:
            if question.get("check") != "manual" and question.get("status") != "correct":
                # The whole reason: with --answer-feedback figures it ends with the figure
                # this GPU measured, which a solution's answers.md needs a line for.
                problems.append(f"{name}: answer {question.get('id')} {question.get('status')} "
                                f"({str(question.get('why') or '')[:300]})")
        steps = lab.get("variants") or {}
        if float(steps.get("points") or 0) < float(steps.get("max") or 0):
            problems.append(f"{name}: lecture steps {steps.get('points')}/{steps.get('max')}")
    where = gpu_named(report)
    head = (f"{report.get('total')}/{report.get('max')} points, answers {answered:g}/{answers_max:g}, "
            f"{len(labs)} labs" + (f", on {where}" if where else ""))
    if report.get("interrupted"):
        problems.append("the grading run was interrupted")
    if problems:
        return False, f"FAIL {head}: " + "; ".join(problems)
    return True, f"PASS {head}"


def check_skeletons(report: dict[str, Any], expected: list[str]) -> tuple[bool, str]:
    """(holds, summary line) for a grade of the student skeletons."""
    labs, missing = _labs(report, expected)
    problems = [f"{lab}: not graded" for lab in missing]
    earned = 0.0
    statuses: dict[str, int] = {}
    for name, lab in labs.items():
        correctness = (lab.get("correctness") or {}).get("points") or 0
        earned += float(correctness)
        statuses[str(lab.get("status"))] = statuses.get(str(lab.get("status")), 0) + 1
        if lab.get("status") in SKELETON_FORBIDDEN:
            problems.append(f"{name}: {lab.get('status')} ({str(lab.get('message') or '')[:120]})")
        if correctness:
            problems.append(f"{name}: {correctness} correctness points for a skeleton")
    head = (f"correctness {earned:g} points over {len(labs)} labs, statuses "
            + ", ".join(f"{s} {n}" for s, n in sorted(statuses.items())))
    if report.get("interrupted"):
        problems.append("the grading run was interrupted")
    if problems:
        return False, f"FAIL {head}: " + "; ".join(problems)
    return True, f"PASS {head} (no crash, hang or build error)"


# A lab's parts in its report's "seconds" that the bench's own account splits (the rest of
# "bench" is the bench process's start and end, the GPU's telemetry and any rerun).
BENCH_PARTS = ("bench_calibration", "bench_workloads")
# A lab's seconds that are part of another of its figures, not a part of its own.
INNER_PARTS = (*BENCH_PARTS, "tests_in_binary")


def _seconds(found: Any) -> dict[str, float]:
    """The numbers of a report's "seconds" object (anything else left out)."""
    if not isinstance(found, dict):
        return {}
    return {str(name): float(value) for name, value in found.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


def time_line(report: dict[str, Any], longest: int = 3) -> str:
    """Where a grading run's time went: its stages, its `longest` lab parts, and the
    benches' seconds (one at a time, in the timing stage) with what their JSON says of them."""
    head = ", ".join(f"{name} {value:.1f}" for name, value in _seconds(report.get("seconds")).items())
    parts: list[tuple[float, str]] = []
    bench = dict.fromkeys(("bench", *BENCH_PARTS), 0.0)
    timed = 0
    for lab in report.get("labs") or []:
        seconds = _seconds(lab.get("seconds")) if isinstance(lab, dict) else {}
        parts += [(value, f"{lab.get('lab')} {name} {value:.1f}") for name, value in seconds.items()
                  if name not in INNER_PARTS]
        if "bench" in seconds:
            timed += 1
            for name in bench:
                bench[name] += seconds.get(name, 0.0)
    line = f"time: {head} s" if head else "time: no stage seconds"
    if parts:
        line += "; longest: " + ", ".join(text for _, text in sorted(parts, reverse=True)[:longest])
    if timed:
        rest = bench["bench"] - bench["bench_calibration"] - bench["bench_workloads"]
        line += (f"; benches ({timed} lab{'s' * (timed != 1)}) {bench['bench']:.1f} s: "
                 f"calibration {bench['bench_calibration']:.1f}, workloads {bench['bench_workloads']:.1f}, "
                 f"the rest {rest:.1f}")
    return line


# The stages a timeline draws, each with its letter; a later one is drawn over an earlier.
TIMELINE_STAGES = (("bench_set_up", "b", "bench set-up"), ("bench_gate", ".", "bench waiting for its turn"),
                   ("tests", "t", "tests"), ("sanitizer", "s", "sanitizer"), ("bench", "T", "bench timing"),
                   ("profile", "p", "profile"))
TIMELINE_WIDTH = 60
RUN_PHASES = ("files", "build", "tests", "timing")  # one after another: the run's length


def _spans(value: Any) -> list[tuple[float, float]]:
    """The well-formed [start, end] pairs of a report's span list (others left out)."""
    found = []
    for pair in value if isinstance(value, list) else []:
        if (isinstance(pair, list) and len(pair) == 2
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)
                and 0 <= pair[0] <= pair[1] < 1e6):
            found.append((float(pair[0]), float(pair[1])))
    return found


def timeline(report: dict[str, Any], width: int = TIMELINE_WIDTH) -> list[str]:
    """The grading run in text: a header with the scale and the letters, then a row per lab
    with a column per `width`-th of the run, each column showing the stage that ran then."""
    labs = [lab for lab in report.get("labs") or [] if isinstance(lab, dict) and isinstance(lab.get("spans"), dict)]
    drawn = {str(lab.get("lab")): {stage: _spans(lab["spans"].get(stage)) for stage, _, _ in TIMELINE_STAGES}
             for lab in labs}
    ends = [end for stages in drawn.values() for spans in stages.values() for _, end in spans]
    if not ends:
        return ["timeline: the report has no spans (a grader from before they were kept)"]
    phases = _seconds(report.get("seconds"))
    total = max(max(ends), sum(value for name, value in phases.items() if name in RUN_PHASES))
    column = total / width if total > 0 else 1.0
    letters = ", ".join(f"{letter} {meaning}" for _, letter, meaning in TIMELINE_STAGES)
    lines = [f"timeline of {total:.1f} s, a column {column:.2f} s: {letters}"]
    for lab in labs:
        name = str(lab.get("lab"))
        row = [" "] * width
        for stage, letter, _ in TIMELINE_STAGES:
            for start, end in drawn[name][stage]:
                first = min(width - 1, int(start / column))
                last = max(first + 1, min(width, round(end / column)))
                row[first:last] = [letter] * (last - first)
        seconds = _seconds(lab.get("seconds"))
        tail = ""
        if "tests" in seconds:
            tail = f" tests {seconds['tests']:.1f} s"
            if "tests_in_binary" in seconds:
                tail += f" ({seconds['tests_in_binary']:.1f} s in the binary)"
        lines.append(f"{name:<15}|{''.join(row)}|{tail}")
    cpu = cpu_row(report.get("cpu_busy"), column, width)
    return lines + ([cpu] if cpu else []) + gpu_rows(report.get("gpu_busy"), column, width)


def load_row(label: str, samples: list[tuple[float, float]], interval: Any, column: float, width: int,
             meaning: str) -> str:
    """A row of tenths under a timeline: per column, the mean share of its samples (9: 90%
    or more), blank where it has none; each sample covers the interval before it."""
    if not samples:
        return ""
    interval = interval if isinstance(interval, (int, float)) and not isinstance(interval, bool) else 0.0
    columns: list[list[float]] = [[] for _ in range(width)]
    for when, share in samples:
        middle = max(0.0, when - interval / 2)
        columns[min(width - 1, int(middle / column))].append(share)
    row = "".join(str(min(9, int(10 * sum(c) / len(c)))) if c else " " for c in columns)
    return f"{label:<15}|{row}| {meaning}"


def cpu_row(load: Any, column: float, width: int) -> str:
    """The row of the host's processor load under a timeline (grader/cpu_load.py)."""
    samples = cpu_load.samples_of(load)
    if not samples:
        return ""
    cores = load.get("cores")
    return load_row("cpu busy", samples, load.get("interval_s"), column, width,
                    f"tenths of the host's {cores if isinstance(cores, int) else '?'} cores busy")


def gpu_rows(load: Any, column: float, width: int) -> list[str]:
    """The rows of the grading GPU's load under a timeline (grader/gpu_load.py): the share
    of time a kernel ran, and the share of time its memory was read or written."""
    samples = gpu_load.samples_of(load)
    if not samples:
        return []
    interval = load.get("interval_s")
    return [load_row("gpu kernels", [(when, kernels) for when, kernels, _ in samples], interval, column, width,
                     "tenths of the time a kernel ran on the GPU"),
            load_row("gpu memory", [(when, memory) for when, _, memory in samples], interval, column, width,
                     "tenths of the time the GPU's memory was read or written")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.gpu_check", description=__doc__.split("\n\n")[0])
    parser.add_argument("kind", choices=("solutions", "skeletons", "time", "timeline"))
    parser.add_argument("report", type=Path, help="the grader's report.json")
    parser.add_argument("--labs", nargs="*", default=[], help="the labs the report must hold")
    args = parser.parse_args(argv)
    try:
        report = json.loads(args.report.read_text())
        if not isinstance(report, dict) or report.get("schema") != "labkit-report":
            raise ValueError("not a labkit-report")
    except (OSError, ValueError) as exc:
        print(f"FAIL cannot read the report {args.report}: {exc}")
        return 2
    if args.kind == "time":
        print(time_line(report))
        return 0
    if args.kind == "timeline":
        print("\n".join(timeline(report)))
        return 0
    ok, line = (check_solutions if args.kind == "solutions" else check_skeletons)(report, args.labs)
    print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
