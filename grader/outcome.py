"""What grading says about each lab (LabResult) and about a run (GradingRun): the one model
that the stages fill in and every report renders."""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Protocol

from grader import answers, overlay, sanitize, score, status, variants, writeup
from grader.plan import Options
from grader.score import Correctness, Performance
from grader.status import ResultCode


@dataclass
class LabResult:
    """Everything the reports say about one lab."""

    lab: str
    status: ResultCode
    correctness: Correctness
    performance: Performance
    message: str = ""
    command: str = ""  # reproduces this lab's failure (status), if any
    reproduce: dict[str, str] = field(default_factory=dict)  # stage -> command
    bench: dict[str, Any] | None = None  # raw bench JSON
    output: str = ""  # output tail of the stage that failed
    traceback: str = ""  # for ERROR: where the grader itself failed
    rules: list[dict[str, Any]] = field(default_factory=list)  # broken rules (rules.Finding)
    deduction: float = 0.0  # points lost in all: rule_deduction + the sanitizer's
    rule_deduction: float = 0.0
    sanitizer: sanitize.SanitizerResult | None = None
    # Fix exercises with "sanitizer" tools: their own run over the exercise's tests (None:
    # it could not run), so that a race the tests cannot see still fails the exercise.
    fix_checks: dict[str, sanitize.SanitizerResult | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # things to know that are not failures
    bench_runs: int = 0  # how often the bench ran (a noisy bench runs again)
    checked: bool = False  # the static checks ran (grader/check/); else the built-in patterns stand in
    steps: dict[str, Any] | None = None  # the registered variants' kernels, read by the checks (steps.py)
    implementation: Path | None = None  # the library under test (between the two phases)
    answers: answers.AnswersResult = field(default_factory=answers.AnswersResult)
    variants: variants.VariantsResult = field(default_factory=variants.VariantsResult)  # the lecture's steps
    # The write-up graded by hand (labs/<lab>/WRITEUP.md): recorded, its form checked, no points here.
    writeup: writeup.WriteupResult | None = None
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall time (checks, tests, sanitizer, bench)
    # stage -> when it ran: [start, end] in seconds since the grading run began (start_run_clock),
    # one pair each time it ran; shows which labs' stages overlapped (a diagnostic).
    spans: dict[str, list[list[float]]] = field(default_factory=dict)
    test_shards: int = 1  # processes that ran the tests side by side (test_shards)
    # --profile: Nsight Compute's figures of the graded call ({"text", "kernels"}), or why
    # none were taken ({"error"}); feedback only, never part of the score.
    profile: dict[str, Any] | None = None

    @property
    def total(self) -> float:
        return round(self.correctness.points + self.performance.points + self.answers.points
                     + self.variants.points - self.deduction, 2)

    @property
    def max(self) -> float:
        return self.correctness.max + self.performance.max + self.answers.max + self.variants.max


@dataclass
class GradingRun:
    """One invocation of the grader: its options and the labs graded so far."""

    options: Options
    started: str
    finished: str = ""
    labs: list[LabResult] = field(default_factory=list)
    interrupted: bool = False
    overlay: overlay.Overlay | None = None  # instructor mode: what was taken, missing, ignored
    notes: list[str] = field(default_factory=list)
    # The GPU that graded the run (gpu.Device.as_dict of the first visible one; None when
    # none could be read), named in every report so that a student knows which GPU counts.
    gpu: dict[str, Any] | None = None
    # Wall seconds of the run's phases (PHASES), where a whole grading run's time goes.
    seconds: dict[str, float] = field(default_factory=dict)
    # How busy the host's processors were during the run (cpu_load.Sampler.stop), or None.
    cpu_busy: dict[str, Any] | None = None
    # How busy the grading GPU was during the run (gpu_load.Sampler.stop), or None.
    gpu_busy: dict[str, Any] | None = None

    @property
    def failed(self) -> bool:
        return self.interrupted or any(lab.status.is_failure for lab in self.labs)


class Progress(Protocol):
    """Receives progress as labs are graded (report.Progress prints it)."""

    def note(self, text: str) -> None: ...
    def lab_started(self, index: int, count: int, lab: str) -> None: ...
    def stage(self, text: str) -> None: ...
    def lab_finished(self, result: LabResult) -> None: ...


# When the grading run began (grade.run restarts it): the origin of every span.
_run_origin = time.monotonic()


def start_run_clock() -> float:
    """The grading run begins now: spans count from here (returned, in time.monotonic())."""
    global _run_origin
    _run_origin = time.monotonic()
    return _run_origin


def note_span(result: LabResult, stage: str, start: float, end: float) -> None:
    """Records that `stage` of `result`'s lab ran from `start` to `end` (time.monotonic())."""
    result.spans.setdefault(stage, []).append([round(start - _run_origin, 2), round(end - _run_origin, 2)])


@contextlib.contextmanager
def clocked(result: LabResult, stage: str) -> Iterator[None]:
    """Adds the wall time of the block to result.seconds[stage] (shown in the report, so
    an instructor sees where a class's grading time goes), and its span."""
    start = time.monotonic()
    try:
        yield
    finally:
        end = time.monotonic()
        result.seconds[stage] = round(result.seconds.get(stage, 0.0) + end - start, 2)
        note_span(result, stage, start, end)


# A grading run's phases, in order, with what each holds (GradingRun.seconds).
PHASES = {
    "files": "the submission's files taken",
    "build": "the kit's part and the submission's libraries",
    "tests": "the labs' tests, sanitizer and bench set-up, side by side",
    "timing": "each lab's bench alone on the GPU, then its score",
}


def phase_line(seconds: dict[str, float]) -> str:
    """`time: 52 s in all; files 0.1 s, build 2.3 s, tests 20.5 s, timing 29.1 s (...)`."""
    shown = [phase for phase in PHASES if phase in seconds]
    if not shown:
        return ""
    return (f"time: {sum(seconds[p] for p in shown):.0f} s in all; "
            + ", ".join(f"{p} {seconds[p]:.1f} s" for p in shown)
            + " (" + "; ".join(f"{p}: {PHASES[p]}" for p in shown if p in ("tests", "timing")) + ")")


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")



def blank(options: Options, lab: str, code: ResultCode) -> LabResult:
    settings = options.config.lab(lab)
    return LabResult(lab, code, Correctness(0.0, settings.correctness_points, False),
                     Performance(0.0, settings.performance_points, reason=score.NOT_FULL))


def fail(result: LabResult, code: ResultCode, message: str, command: str = "", output: str = "") -> LabResult:
    result.status, result.message, result.command, result.output = code, message, command, output
    return result


def grader_failed(options: Options, lab: str, exc: Exception) -> LabResult:
    result = blank(options, lab, status.ERROR)
    result.message = (f"the grader failed on this lab ({type(exc).__name__}: {exc}); "
                      "please report it with the traceback in the JSON report")
    result.traceback = traceback.format_exc()
    return result
