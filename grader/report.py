"""Reports of a grading run: console progress, the score table, failure details, JSON.

One function per format, each taking the finished GradingRun; a new format (Markdown,
JUnit, Classroom, Gradescope) is one more function here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO

from grader import __version__
from grader.grade import GradingRun, LabResult

REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
MAX_TESTS_SHOWN = 5  # failed tests detailed per lab on the console; the JSON has all
MAX_MESSAGE_LINES = 6
MAX_RULES_SHOWN = 10


class Progress:
    """Prints `[2/3] reduction: building... testing... 18/18 tests passed... timing... done`."""

    def __init__(self, stream: TextIO, quiet: bool = False) -> None:
        self.stream, self.quiet = stream, quiet

    def _write(self, text: str) -> None:
        if not self.quiet:
            self.stream.write(text)
            self.stream.flush()  # show each stage as it starts, builds take minutes

    def note(self, text: str) -> None:
        self._write(text + "\n")

    def lab_started(self, index: int, count: int, lab: str) -> None:
        self._write(f"[{index}/{count}] {lab}: ")

    def stage(self, text: str) -> None:
        self._write(f"{text}... ")

    def lab_finished(self, result: LabResult) -> None:
        self._write((result.status.name if result.status.is_failure else "done") + "\n")


def console_table(run: GradingRun) -> str:
    """The score table: one row per lab and a total."""
    head = f"{'lab':<15} {'status':<12} {'correctness':>12} {'performance':>12} {'total':>11}  note"
    rows = [head, "-" * len(head)]
    for lab in run.labs:
        rows.append(f"{lab.lab:<15} {lab.status.name:<12} "
                    f"{_points(lab.correctness.points, lab.correctness.max):>12} "
                    f"{_points(lab.performance.points, lab.performance.max):>12} "
                    f"{_points(lab.total, lab.max):>11}  {_note(lab)}")
    rows.append("-" * len(head))
    total, top = grand_total(run)
    rows.append(f"{'total':<15} {'':<12} {'':>12} {'':>12} {_points(total, top):>11}"
                + ("  (interrupted: not every lab was graded)" if run.interrupted else ""))
    return "\n".join(rows)


def failure_details(run: GradingRun) -> str:
    """Every failure with its message and the command that reproduces it ('' if none)."""
    blocks = []
    seen: dict[tuple[str, str], str] = {}  # (message, command) -> first lab that had it
    for lab in run.labs:
        first = seen.setdefault((lab.message, lab.command), lab.lab)
        if lab.status.is_failure and first != lab.lab and lab.command:
            # One CMake configure failure fails every lab: say it once.
            blocks.append(f"{lab.lab}: {lab.status.name}: the same failure as {first}")
        elif lab.status.is_failure:
            text = f"{lab.lab}: {lab.status.name}: {_indent(lab.message, 4).lstrip()}"
            # After a crash or a hang every test without a result is "failed": the message
            # and the command of the test that was running say more.
            ended = lab.status.name in ("CRASH", "TIMEOUT")
            failed = [] if ended else [t for t in lab.correctness.tests if t["status"] == "failed"]
            for test in failed[:MAX_TESTS_SHOWN]:
                message = "\n".join(test["message"].splitlines()[:MAX_MESSAGE_LINES])
                text += f"\n  {test['name']}\n{_indent(message, 4)}\n    reproduce: {test['reproduce']}"
            if len(failed) > MAX_TESTS_SHOWN:
                text += f"\n  ... and {len(failed) - MAX_TESTS_SHOWN} more failed tests: see the JSON report"
            if lab.command and not failed:
                text += f"\n  reproduce: {lab.command}"
            if lab.traceback:
                text += "\n  (the traceback is in the JSON report)"
            blocks.append(text)
        elif lab.bench is not None and lab.performance.reason:
            blocks.append(f"{lab.lab}: no performance points: {lab.performance.reason}"
                          f"\n  reproduce: {lab.reproduce.get('bench', '')}")
        if lab.rules:
            lines = "\n".join(f"    {rule['message']}" for rule in lab.rules[:MAX_RULES_SHOWN])
            if len(lab.rules) > MAX_RULES_SHOWN:
                lines += f"\n    ... and {len(lab.rules) - MAX_RULES_SHOWN} more: see the JSON report"
            blocks.append(f"{lab.lab}: rules broken, -{lab.rule_deduction:g} points:\n{lines}")
        if lab.sanitizer is not None and lab.sanitizer.findings:
            lines = "\n".join(f"    {finding.message}" for finding in lab.sanitizer.findings)
            blocks.append(f"{lab.lab}: compute-sanitizer found errors, -{lab.sanitizer.deduction:g} points:\n{lines}"
                          f"\n  reproduce: {lab.reproduce.get('sanitizer', '')}")
    # Notes, each once with the labs it concerns (a missing compute-sanitizer concerns all).
    notes: dict[str, list[str]] = {}
    for lab in run.labs:
        for note in lab.notes:
            notes.setdefault(note, []).append(lab.lab)
    for note, labs in notes.items():
        blocks.append(f"{', '.join(labs)}: note: {note}")
    blocks += run.notes  # about the whole run, e.g. a submission's ignored changes
    return "\n\n".join(blocks)


def to_json(run: GradingRun) -> dict[str, Any]:
    """The machine-readable report (schema labkit-report, version 1; later fields are
    additions that readers of version 1 may ignore)."""
    options = run.options
    total, top = grand_total(run)
    seed_source = options.seed_source or {"seed": options.seed, "how": "given", "identity": None}
    return {
        "schema": REPORT_SCHEMA,
        "version": REPORT_VERSION,
        "grader_version": __version__,
        "started": run.started,
        "finished": run.finished,
        "interrupted": run.interrupted,
        "root": str(options.root),
        "build_dir": str(options.build_dir),
        "impl": options.impl,
        "seed": options.seed,
        # How the seed was chosen ("command line", "config", "secret file", "random", ...):
        # never the secret itself. `--seed <seed>` reproduces the grade.
        "seed_source": {"how": seed_source.get("how"), "identity": seed_source.get("identity")},
        "submission": str(options.submission) if options.submission else None,
        "overlay": ({k: v for k, v in run.overlay.as_dict().items() if k != "ignored_changes"}
                    if run.overlay else None),
        "ignored_changes": run.overlay.ignored_changes if run.overlay else [],
        "notes": run.notes,
        "config": options.config.as_dict(),
        "labs": [_lab_json(lab) for lab in run.labs],
        "total": total,
        "max": top,
    }


def write_json(run: GradingRun, path: Path) -> None:
    """Write the JSON report atomically, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(to_json(run), indent=2, default=str) + "\n")
    os.replace(tmp, path)


def grand_total(run: GradingRun) -> tuple[float, float]:
    """Points and maximum over all graded labs."""
    return (round(sum(lab.total for lab in run.labs), 2), round(sum(lab.max for lab in run.labs), 2))


def _lab_json(lab: LabResult) -> dict[str, Any]:
    perf = lab.performance
    return {
        "lab": lab.lab,
        "status": lab.status.name,
        "message": lab.message,
        "correctness": {"points": lab.correctness.points, "max": lab.correctness.max,
                        "full": lab.correctness.full, "tests": lab.correctness.tests},
        "performance": {"points": perf.points, "max": perf.max, "ratio": perf.ratio,
                        "t_student_ms": perf.t_student_ms, "t_reference_ms": perf.t_reference_ms,
                        "reason": perf.reason, "workloads": perf.workloads, "flags": perf.flags},
        "rules": lab.rules,
        "deduction": lab.deduction,  # in all: rule_deduction + sanitizer.deduction
        "rule_deduction": lab.rule_deduction,
        "sanitizer": lab.sanitizer.as_dict() if lab.sanitizer else None,
        "gpu_faults": [{"test": t["name"], "fault": t["gpu_fault"]}
                       for t in lab.correctness.tests if t.get("gpu_fault")],
        "notes": lab.notes,
        "bench_runs": lab.bench_runs,
        "total": lab.total,
        "max": lab.max,
        "bench": lab.bench,
        "reproduce": {**lab.reproduce, **({"failure": lab.command} if lab.command else {})},
        "output": lab.output,
        "traceback": lab.traceback,
    }


def _note(lab: LabResult) -> str:
    """A short note for the table: the failure, or how the speed was graded."""
    perf = lab.performance
    if lab.status.is_failure:
        text = lab.message
    elif lab.rules:
        text = f"rule broken: {lab.rules[0]['message']}"
    elif lab.sanitizer is not None and lab.sanitizer.findings:
        text = lab.sanitizer.findings[0].message
    elif perf.reason:
        text = perf.reason
    elif perf.ratio is not None:
        text = f"{perf.ratio:.2f}x the reference time"
    else:
        text = ""
    lines = text.strip().splitlines() or [""]
    text = lines[0]
    if text.endswith(":") and len(lines) > 1:  # "compilation failed:" says little alone
        text += " " + lines[1].strip()
    return text if len(text) <= 60 else text[:57] + "..."


def _points(points: float, top: float) -> str:
    return f"{points:.2f}/{top:g}"


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())
