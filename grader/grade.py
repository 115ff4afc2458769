"""Grade labs one at a time: build -> tests -> sanitizer -> bench -> score.

Each lab ends with exactly one status (status.py) and its points; whatever happens in
one lab, including a bug in the grader itself, the next lab is still graded. With a
submission (instructor mode) the labs are built in a work tree made from the pristine
kit and the submission's editable files only (overlay.py).
"""

from __future__ import annotations

import dataclasses
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from grader import bench, build, gtest, overlay, proc, rules, sanitize, score, status
from grader.config import COURSE_LABS, Config
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
    no_sanitizer: bool = False
    # Instructor mode: the student's repository; `root` is then the pristine kit.
    submission: Path | None = None
    seed_source: dict[str, Any] | None = None  # how the seed was chosen (seed.SeedChoice.as_dict)

    @property
    def results_dir(self) -> Path:
        """Where the raw gtest and bench JSON of this run are kept, for inspection."""
        return self.build_dir / "results"

    @property
    def work_dir(self) -> Path:
        """Instructor mode: the pristine kit plus the submission's editable files, built here."""
        return self.build_dir / "overlay"


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
    notes: list[str] = field(default_factory=list)  # things to know that are not failures
    bench_runs: int = 0  # how often the bench ran (a noisy bench runs again)

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
    overlay: overlay.Overlay | None = None  # instructor mode: what was taken, missing, ignored
    notes: list[str] = field(default_factory=list)

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


def grade(options: Options, labs: list[str], progress: Progress,
          checkpoint: Callable[[GradingRun], None] | None = None) -> GradingRun:
    """Grade `labs` in order. Ctrl-C stops early and returns what was graded.

    `checkpoint(run)` is called after each lab (e.g. to write the report so far)."""
    run = GradingRun(options, started=now())
    try:
        kit = options  # what is built: the kit itself, or the work tree of a submission
        if options.submission is not None:
            progress.note(f"taking the editable files of {options.submission} into a pristine copy of "
                          f"the kit ({options.root})...")
            try:
                run.overlay = overlay.prepare(
                    options.root, options.submission, options.work_dir, present_labs(options.root),
                    lambda lab: options.config.lab(lab).editable, exclude=[options.build_dir])
            except (overlay.OverlayError, OSError) as exc:
                return _fail_all(run, labs, progress, f"cannot prepare the submission: {exc}")
            if run.overlay.note():
                run.notes.append(run.overlay.note())  # printed with the failure details
            kit = dataclasses.replace(options, root=run.overlay.work)
        configured = None
        if not options.no_build:
            progress.note("configuring with CMake...")
            args = build.configure_args(kit.root, kit.build_dir, solutions=kit.impl == SOLUTION,
                                        cuda_arch=kit.cuda_arch)
            try:
                configured = build.configure(args, kit.build_dir, kit.config.grader["configure_timeout_s"])
            except Exception as exc:  # e.g. an unwritable build dir: every lab reports it
                configured = build.BuildResult(ok=False, command=proc.command_string(args),
                                               message=f"could not run CMake ({type(exc).__name__}: {exc})")
        for index, lab in enumerate(labs, 1):
            progress.lab_started(index, len(labs), lab)
            try:
                if run.overlay is not None and lab in run.overlay.missing:
                    result = _fail(_blank(kit, lab, status.PASS), status.MISSING, run.overlay.missing[lab])
                else:
                    result = grade_lab(kit, lab, configured, progress.stage)
                if result.status is not status.MISSING:
                    apply_rules(kit, result)
                apply_deductions(kit, result)
            except Exception as exc:  # a grader bug must cost one lab, not the report
                result = _blank(options, lab, status.ERROR)
                result.message = (f"the grader failed on this lab ({type(exc).__name__}: {exc}); "
                                  "please report it with the traceback in the JSON report")
                result.traceback = traceback.format_exc()
            run.labs.append(result)
            progress.lab_finished(result)
            _checkpoint(run, checkpoint)
    except KeyboardInterrupt:
        run.interrupted = True
    run.finished = now()
    return run


def present_labs(root: Path) -> list[str]:
    """The labs of the kit at `root` (those with labs/<lab>/<lab>.h), in course order."""
    return [lab for lab in COURSE_LABS if (root / "labs" / lab / f"{lab}.h").is_file()]


def _fail_all(run: GradingRun, labs: list[str], progress: Progress, message: str) -> GradingRun:
    """Every lab ERROR with `message` (the run cannot start)."""
    progress.note(message)
    for lab in labs:
        run.labs.append(_fail(_blank(run.options, lab, status.ERROR), status.ERROR, message))
    run.finished = now()
    return run


def _checkpoint(run: GradingRun, checkpoint: Callable[[GradingRun], None] | None) -> None:
    if checkpoint is None:
        return
    try:
        checkpoint(run)
    except Exception:  # a failed interim report must not stop the grading
        pass


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
        if tests.status is status.PARTIAL:
            run_sanitizer(options, result, test_bin, stage)
        return result
    stage(tests.message)
    run_sanitizer(options, result, test_bin, stage)

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
    timed = _bench(options, lab, bench_bin, reference, settings.reference_variant, 1)
    result.bench_runs = 1
    while result.bench_runs <= options.config.grader["bench_reruns"] and bench.is_noisy(timed):
        result.bench_runs += 1
        stage("noisy, timing again")
        again = _bench(options, lab, bench_bin, reference, settings.reference_variant, result.bench_runs)
        timed = bench.less_noisy(timed, again)
    if result.bench_runs > 1:
        result.notes.append(f"the bench's student/reference ratio was noisy: it ran {result.bench_runs} times "
                            "and the least noisy run was scored" + (" (still noisy)" if bench.is_noisy(timed) else ""))
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


def _bench(options: Options, lab: str, binary: Path, reference: Path | None, variant: str,
           attempt: int) -> bench.BenchRun:
    name = f"{lab}.bench.json" if attempt == 1 else f"{lab}.bench.{attempt}.json"
    return bench.run_bench(binary, seed=options.seed, timeout=options.config.grader["bench_timeout_s"],
                           json_path=options.results_dir / name, reference=reference, variant=variant,
                           cwd=options.root)


def run_sanitizer(options: Options, result: LabResult, test_bin: Path, stage: Callable[[str], None]) -> None:
    """The compute-sanitizer stage, when the lab's settings ask for it (result.sanitizer)."""
    settings = options.config.lab(result.lab)
    if options.no_sanitizer or not settings.sanitizer or not settings.sanitizer_tools:
        why = "--no-sanitizer" if options.no_sanitizer else "sanitizer = false in the config"
        result.sanitizer = sanitize.SanitizerResult(False, note=f"skipped ({why})")
        return
    if result.status is not status.PASS and settings.sanitizer_when != "always":
        result.sanitizer = sanitize.SanitizerResult(False, note="runs once every test passes "
                                                    '(sanitizer_when = "always" runs it anyway)')
        return
    tool = sanitize.find_sanitizer()
    if tool is None:
        result.sanitizer = sanitize.not_found(settings.sanitizer_filter)
        result.notes.append(result.sanitizer.note)
        stage("sanitizer skipped (compute-sanitizer not found)")
        return
    stage("sanitizer")
    found = sanitize.run(test_bin, tools=settings.sanitizer_tools, test_filter=settings.sanitizer_filter,
                         seed=options.seed, timeout=options.config.grader["sanitizer_timeout_s"],
                         root=options.root, cwd=options.root, sanitizer=tool)
    result.sanitizer = found
    if found.runs:  # the command of the first tool that found something, else the first tool's
        first = next((run for run in found.runs if run.status == "errors"), found.runs[0])
        result.reproduce["sanitizer"] = first.command
    result.notes += [run.note for run in found.runs if run.note]
    stage(f"{len(found.findings)} sanitizer finding(s)" if found.findings else "clean")


def apply_rules(options: Options, result: LabResult) -> None:
    """Checks the lab's required and forbidden patterns (built-in ones for student code)."""
    settings = options.config.lab(result.lab)
    files = rules.sources(options.root, result.lab, options.impl, settings.editable)
    builtin = {} if options.impl == SOLUTION else {
        name: rule for name, rule in rules.BUILTIN_RULES.items() if name not in settings.allow}
    findings = rules.check(options.root, files, settings.required_patterns, settings.forbidden_patterns, builtin)
    result.rules = [f.as_dict() for f in findings]


def apply_deductions(options: Options, result: LabResult) -> None:
    """A broken rule costs rule_penalty, sanitizer findings sanitizer_penalty, each a
    fraction of the points earned otherwise; together never more than those points."""
    settings = options.config.lab(result.lab)
    earned = result.correctness.points + result.performance.points
    result.rule_deduction = round(earned * settings.rule_penalty, 2) if result.rules else 0.0
    sanitizer = 0.0
    if result.sanitizer is not None and result.sanitizer.findings:
        sanitizer = round(earned * settings.sanitizer_penalty, 2)
        result.sanitizer.deduction = sanitizer
    result.deduction = round(min(earned, result.rule_deduction + sanitizer), 2)


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
