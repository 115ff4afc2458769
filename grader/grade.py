"""Grade labs one at a time: build -> tests -> bench -> score.

Each lab ends with exactly one status (status.py) and its points; whatever happens in
one lab, including a bug in the grader itself, the next lab is still graded.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from grader import bench, build, gtest, proc, rules, score, status
from grader.config import Config
from grader.score import Correctness, Performance
from grader.status import ResultCode

SOLUTION = "solution"


@dataclass
class Options:
    """What to grade and how; built by cli.py from the command line and the config."""

    root: Path
    build_dir: Path
    impl: str  # "student" or "solution"
    seed: int
    config: Config
    reference_dir: Path | None = None  # given by the user; None: look in <build>/lib
    cuda_arch: str | None = None
    no_build: bool = False
    skip_bench: bool = False

    @property
    def results_dir(self) -> Path:
        """Where the raw gtest and bench JSON of this run are kept, for inspection."""
        return self.build_dir / "results"


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
    deduction: float = 0.0  # points lost to broken rules

    @property
    def total(self) -> float:
        return round(self.correctness.points + self.performance.points - self.deduction, 2)

    @property
    def max(self) -> float:
        return self.correctness.max + self.performance.max


@dataclass
class GradingRun:
    """One invocation of the grader: its options and the labs graded so far."""

    options: Options
    started: str
    finished: str = ""
    labs: list[LabResult] = field(default_factory=list)
    interrupted: bool = False

    @property
    def failed(self) -> bool:
        return self.interrupted or any(lab.status.is_failure for lab in self.labs)


class Progress(Protocol):
    """Receives progress as labs are graded (report.Progress prints it)."""

    def note(self, text: str) -> None: ...
    def lab_started(self, index: int, count: int, lab: str) -> None: ...
    def stage(self, text: str) -> None: ...
    def lab_finished(self, result: LabResult) -> None: ...


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def grade(options: Options, labs: list[str], progress: Progress) -> GradingRun:
    """Grade `labs` in order. Ctrl-C stops early and returns what was graded."""
    run = GradingRun(options, started=now())
    try:
        configured = None
        if not options.no_build:
            progress.note("configuring with CMake...")
            args = build.configure_args(options.root, options.build_dir, solutions=options.impl == SOLUTION,
                                        cuda_arch=options.cuda_arch)
            try:
                configured = build.configure(args, options.build_dir, options.config.grader["configure_timeout_s"])
            except Exception as exc:  # e.g. an unwritable build dir: every lab reports it
                configured = build.BuildResult(ok=False, command=proc.command_string(args),
                                               message=f"could not run CMake ({type(exc).__name__}: {exc})")
        for index, lab in enumerate(labs, 1):
            progress.lab_started(index, len(labs), lab)
            try:
                result = grade_lab(options, lab, configured, progress.stage)
                if result.status is not status.MISSING:
                    apply_rules(options, result)
            except Exception as exc:  # a grader bug must cost one lab, not the report
                result = _blank(options, lab, status.ERROR)
                result.message = (f"the grader failed on this lab ({type(exc).__name__}: {exc}); "
                                  "please report it with the traceback in the JSON report")
                result.traceback = traceback.format_exc()
            run.labs.append(result)
            progress.lab_finished(result)
    except KeyboardInterrupt:
        run.interrupted = True
    run.finished = now()
    return run


def grade_lab(options: Options, lab: str, configured: build.BuildResult | None,
              stage: Callable[[str], None]) -> LabResult:
    """Build, test, time and score one lab."""
    settings = options.config.lab(lab)
    result = _blank(options, lab, status.PASS)
    prefix = lab if options.impl != SOLUTION else f"{lab}_solution"
    if not (options.root / "labs" / lab / f"{lab}.h").is_file():
        return _fail(result, status.MISSING, f"labs/{lab}/{lab}.h not found: this kit has no {lab} lab "
                     "(is --root the kit's top directory?)")
    has_solution = (options.root / "solutions" / lab).is_dir()
    if options.impl == SOLUTION and not has_solution:
        return _fail(result, status.MISSING, f"solutions/{lab} not found: --impl solution needs "
                     "the instructor's kit")

    # Build.
    if not options.no_build:
        stage("building")
        if configured is not None and not configured.ok:
            return _fail(result, status.BUILD_ERROR, configured.message, configured.command, configured.output)
        targets = [f"{prefix}_test", f"{prefix}_bench"]
        if has_solution and options.reference_dir is None and not options.skip_bench:
            targets.append(f"{lab}_solution")  # the reference library the bench times against
        built = build.build_targets(options.build_dir, targets, options.config.grader["build_timeout_s"],
                                    options.root)
        result.reproduce["build"] = built.command
        if not built.ok:
            return _fail(result, status.BUILD_ERROR, built.message, built.command, built.output)

    # Correctness.
    test_bin = options.build_dir / "bin" / f"{prefix}_test"
    if not proc.is_executable(test_bin):
        return _fail(result, status.BUILD_ERROR, f"test binary {test_bin} not found: build the lab "
                     "(run the grader without --no-build)")
    stage("testing")
    tests = gtest.run_tests(test_bin, seed=options.seed, timeout=options.config.grader["test_timeout_s"],
                            json_path=options.results_dir / f"{lab}.gtest.json", cwd=options.root)
    result.reproduce["test"] = tests.command
    result.correctness = score.score_correctness(tests.tests, settings)
    for row in result.correctness.tests:
        row["message"] = row["message"].replace(f"{options.root}/", "")  # kit-relative paths read better
        if row["status"] == "failed":
            row["reproduce"] = tests.reproduce(row["name"])
    result.status, result.message, result.output = tests.status, tests.message, tests.output
    if tests.status is not status.PASS:
        result.command = tests.reproduce(tests.running_test) if tests.running_test else tests.command
        stage(tests.message if tests.status is status.PARTIAL else tests.status.label)
        result.performance = score.score_performance(
            None, settings, correctness_full=result.correctness.full,
            unavailable=f"not timed: the tests ended in {tests.status.name}")
        return result
    stage(tests.message)

    # Performance.
    if options.skip_bench:
        result.performance = score.score_performance(None, settings, correctness_full=True,
                                                     unavailable="bench skipped (--skip-bench)")
        return result
    bench_bin = options.build_dir / "bin" / f"{prefix}_bench"
    if not proc.is_executable(bench_bin):
        result.performance = score.score_performance(None, settings, correctness_full=True,
                                                     unavailable="bench binary not found")
        return _fail(result, status.BUILD_ERROR, f"bench binary {bench_bin} not found: build the lab "
                     "(run the grader without --no-build), or pass --skip-bench")
    reference, missing_reference = _reference(options, lab)
    stage("timing")
    timed = bench.run_bench(bench_bin, seed=options.seed, timeout=options.config.grader["bench_timeout_s"],
                            json_path=options.results_dir / f"{lab}.bench.json", reference=reference,
                            variant=settings.reference_variant, cwd=options.root)
    result.reproduce["bench"] = timed.command
    result.bench = timed.data
    if timed.status is not None:
        _fail(result, timed.status, f"bench: {timed.message}", timed.command, timed.output)
    result.performance = score.score_performance(
        timed.data if timed.status is None else None, settings, correctness_full=True,
        unavailable=f"the bench failed: {timed.message}")
    if missing_reference:
        result.performance = score.Performance(0.0, settings.performance_points, reason=missing_reference)
    return result


def apply_rules(options: Options, result: LabResult) -> None:
    """Checks the lab's required and forbidden patterns; a broken rule costs a fraction of the points."""
    settings = options.config.lab(result.lab)
    files = rules.sources(options.root, result.lab, options.impl)
    findings = rules.check(options.root, files, settings.required_patterns, settings.forbidden_patterns)
    result.rules = [f.as_dict() for f in findings]
    if findings:
        earned = result.correctness.points + result.performance.points
        result.deduction = round(earned * settings.rule_penalty, 2)


def _reference(options: Options, lab: str) -> tuple[Path | None, str]:
    """The reference library to pass to the bench, and why it is missing if it is."""
    name = f"lib{lab}_solution.so"
    if options.reference_dir is not None:
        path = options.reference_dir / name
        if path.is_file():
            return path, ""
        return None, f"{score.NO_REFERENCE} ({path} not found)"
    path = options.build_dir / "lib" / name
    # Not there: the bench looks for the solution library of its own build.
    return (path if path.is_file() else None), ""


def _blank(options: Options, lab: str, code: ResultCode) -> LabResult:
    settings = options.config.lab(lab)
    return LabResult(lab, code, Correctness(0.0, settings.correctness_points, False),
                     Performance(0.0, settings.performance_points, reason=score.NOT_FULL))


def _fail(result: LabResult, code: ResultCode, message: str, command: str = "", output: str = "") -> LabResult:
    result.status, result.message, result.command, result.output = code, message, command, output
    return result
