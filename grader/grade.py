"""Grade labs: build -> tests -> sanitizer -> bench -> score (DESIGN.md, "Trust boundary").

The kit's part of the build (the judge programs, their workers, the references) is made
once per build folder; each lab's student file is then compiled alone into a library of
the submission's own (build.py). No grade comes from a process that holds student code:
the judge programs run the lab's tests and bench and forward each call of the interface
to a sandboxed worker that loads the student's library (common/judge/). Static checks
read the compiled object (check.py).

Each lab ends with exactly one status (status.py) and its points; whatever happens in
one lab, including a bug in the grader itself, the next lab is still graded. The files
graded are always the submission's editable files only, copied into a clean folder
(overlay.py): with --submission from a student's repository onto the instructor's
pristine kit, otherwise from the kit itself.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import math
import os
import re
import shutil
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol

from grader import answers, bench, build, check, gpu, gtest, manifest, overlay, proc, rules, sanitize, score, status, variants
from grader.config import Config, LabSettings
from grader.score import Correctness, Performance
from grader.status import ResultCode

SOLUTION = "solution"
# A test whose message says this hung in the worker: the lab is TIMEOUT (common/judge/session.cu).
HANG_MARK = "did not return within"
# The judge's option for the sanitizer's runs: the worker calls the student's code on copies
# of exactly each device argument's extent, so memcheck sees any access past an array.
EXACT_BOUNDS = "--exact-bounds"


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
    # A folder of this submission's own (batch: one per student, beside a build folder
    # shared by the class): its files, libraries, checks and raw results. None: in the
    # build folder.
    student_root: Path | None = None
    # The instructor's answer keys (<dir>/<lab>/answer_key.json); None: <root>/solutions.
    answer_keys: Path | None = None
    build_only: bool = False  # compile the submission's files into student_root, grade nothing
    prebuilt: bool = False  # the submission was compiled earlier (build_only): build nothing

    @property
    def own_dir(self) -> Path:
        return self.student_root or self.build_dir

    @property
    def results_dir(self) -> Path:
        """Where the raw gtest and bench JSON of this run are kept, for inspection."""
        return self.own_dir / "results"

    @property
    def work_dir(self) -> Path:
        """The submission's editable files, copied into a clean folder and compiled from there."""
        return self.own_dir / "submission"

    @property
    def student_dir(self) -> Path:
        """The student libraries of this run (<dir>/<lab>/lib<lab>_student.so)."""
        return self.student_root / "lib" if self.student_root else self.build_dir / "student"


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
    checked: bool = False  # the static checks ran (check.py); else the built-in patterns stand in
    steps: dict[str, Any] | None = None  # the registered variants' kernels, read by the checks (steps.py)
    implementation: Path | None = None  # the library under test (between the two phases)
    answers: answers.AnswersResult = field(default_factory=answers.AnswersResult)
    variants: variants.VariantsResult = field(default_factory=variants.VariantsResult)  # the lecture's steps
    seconds: dict[str, float] = field(default_factory=dict)  # stage -> wall time (checks, tests, sanitizer, bench)
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

    @property
    def failed(self) -> bool:
        return self.interrupted or any(lab.status.is_failure for lab in self.labs)


class Progress(Protocol):
    """Receives progress as labs are graded (report.Progress prints it)."""

    def note(self, text: str) -> None: ...
    def lab_started(self, index: int, count: int, lab: str) -> None: ...
    def stage(self, text: str) -> None: ...
    def lab_finished(self, result: LabResult) -> None: ...


@contextlib.contextmanager
def clocked(result: LabResult, stage: str) -> Iterator[None]:
    """Adds the wall time of the block to result.seconds[stage] (shown in the report, so
    an instructor sees where a class's grading time goes)."""
    start = time.monotonic()
    try:
        yield
    finally:
        result.seconds[stage] = round(result.seconds.get(stage, 0.0) + time.monotonic() - start, 2)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class KitBuild:
    """The kit's part of the build: done once per build folder, shared by every submission."""

    configured: build.BuildResult | None = None
    failed: dict[str, build.BuildResult] = field(default_factory=dict)  # lab -> why its judge did not build
    commands: dict[str, build.StudentCommands] = field(default_factory=dict)
    command_errors: dict[str, str] = field(default_factory=dict)


@dataclass
class PendingBench:
    """A lab's first bench run, started as soon as its tests passed, while other labs were
    still tested: it sets up (workers, inputs, expected results) and waits at its gate
    (proc.Gate) until the GPU is free for its timing alone."""

    gate: proc.Gate
    future: concurrent.futures.Future[bench.BenchRun]

    def finish(self) -> bench.BenchRun:
        """Opens the gate and returns the run, with the GPU's telemetry around the timing."""
        before = gpu.telemetry()
        self.gate.open()
        timed = self.future.result()
        if timed.data is not None:
            timed.data["telemetry"] = {"before": before, "after": gpu.telemetry()}
        return timed

    def cancel(self) -> None:
        """No turn for it (the lab failed later, or the run stopped): the bench stops."""
        self.gate.close()


class Prestarter:
    """Starts the first bench run of each lab whose tests passed, up to `slots` of them
    (each holds GPU memory while it waits); the rest set up in their turn."""

    def __init__(self, options: Options, slots: int) -> None:
        self.options = options
        self.slots = slots
        self.pending: dict[str, PendingBench] = {}
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, slots),
                                                           thread_name_prefix="grader-bench")

    def start(self, result: LabResult, required: list[str]) -> None:
        """Sets up `result`'s bench now, if it will be timed and a slot is free."""
        options, lab = self.options, result.lab
        if options.skip_bench or result.status is not status.PASS or result.implementation is None:
            return
        if not proc.is_executable(options.build_dir / "bin" / f"{lab}_judge_bench"):
            return  # time_lab reports it
        with self._lock:
            if len(self.pending) >= self.slots:
                return
            gate = proc.Gate(max_wait_s=options.config.grader["test_timeout_s"] * 4
                             + options.config.grader["bench_timeout_s"] * 12)
            self.pending[lab] = PendingBench(gate, self._pool.submit(_bench, options, result, 1, required, gate))

    def wait_ready(self, timeout: float) -> None:
        """Waits until every started bench is set up (or has ended), at most `timeout` s in
        all: a timing must not share the GPU with another bench's set-up."""
        deadline = time.monotonic() + timeout
        for waiting in list(self.pending.values()):
            if not waiting.future.done():
                waiting.gate.wait_ready(deadline - time.monotonic())

    def take(self, lab: str) -> PendingBench | None:
        return self.pending.pop(lab, None)

    def cancel_all(self) -> None:
        for waiting in self.pending.values():
            waiting.cancel()
        self.pending.clear()
        self._pool.shutdown(wait=False)


def grade(options: Options, labs: list[str], progress: Progress,
          checkpoint: Callable[[GradingRun], None] | None = None) -> GradingRun:
    """Grade `labs` in order. Ctrl-C stops early and returns what was graded.

    `checkpoint(run)` is called after each lab (e.g. to write the report so far)."""
    run = GradingRun(options, started=now())
    prestarter: Prestarter | None = None
    try:
        source = options.submission or options.root
        if options.submission is not None:
            progress.note(f"taking the editable files of {options.submission} (the pristine kit: {options.root})...")
        manifests = kit_manifests(options.root)
        try:
            run.overlay = overlay.prepare(
                options.root, source, options.work_dir, list(manifests),
                lambda lab: options.config.lab(lab).editable, exclude=[options.build_dir],
                optional_of=lambda lab: [m.answers_file] if (m := manifests.get(lab)) and m.answers_file else [])
        except (overlay.OverlayError, OSError) as exc:
            return _fail_all(run, labs, progress, f"cannot take the submission's files: {exc}")
        if run.overlay.note():
            run.notes.append(run.overlay.note())  # printed with the failure details
        kit = KitBuild()
        students: dict[str, build.StudentBuild] = {}
        if options.prebuilt:
            students = {lab: found for lab in labs if (found := build.StudentBuild.load(options.student_dir / lab))}
        elif not options.no_build:
            kit = build_kit(options, labs, progress)
            if options.impl != SOLUTION:
                students = build_students(options, labs, kit, run.overlay, progress, run.notes)
        if options.build_only:
            for lab in labs:
                built = students.get(lab) or build.StudentBuild(False, message=_not_built(kit, run.overlay, lab))
                built.save(options.student_dir / lab)
            run.finished = now()
            return run
        found_gpus = gpu.devices()
        run.gpu = found_gpus[0].as_dict() if found_gpus else None
        # Correctness first, several labs at once (tests and the sanitizer may share the
        # GPU), and the bench of each lab whose tests passed set up meanwhile; then, once
        # every lab's tests are over and every bench is set up, in course order, each
        # lab's timing alone on the GPU, and its score.
        prestarter = Prestarter(options, prestart_slots(options, len(labs)))
        tested = test_labs(options, labs, kit, students, run.overlay, prestarter, manifests)
        if len(labs) > 1:
            progress.note(f"testing {len(labs)} labs, up to {parallel_labs(options)} at a time; then timing "
                          "each alone on the GPU...")
        concurrent.futures.wait(tested.values())
        prestarter.wait_ready(options.config.grader["bench_timeout_s"])
        save_lab_seconds(options, [future.result()[0] for future in tested.values() if not future.exception()])
        for index, lab in enumerate(labs, 1):
            progress.lab_started(index, len(labs), lab)
            result, stages = tested[lab].result()
            for text in stages:
                progress.stage(text)
            try:
                if result.status is not status.ERROR:
                    found = manifests.get(lab)
                    time_lab(options, result, progress.stage, required_steps(found), prestarter.take(lab))
                    if result.status is not status.MISSING:
                        apply_rules(options, result, run.overlay)
                grade_variants(result, manifests.get(lab))
                if result.status is not status.ERROR:
                    apply_deductions(options, result)
                    grade_answers(options, result, manifests.get(lab))
            except Exception as exc:  # a grader bug must cost one lab, not the report
                result = _grader_failed(options, lab, exc)
            run.labs.append(result)
            progress.lab_finished(result)
            _checkpoint(run, checkpoint)
    except KeyboardInterrupt:
        run.interrupted = True
        proc.cancel_all()  # what the labs being tested side by side had started
    finally:
        if prestarter is not None:
            prestarter.cancel_all()  # benches of labs that were not timed after all
    run.finished = now()
    return run


def parallel_labs(options: Options) -> int:
    """How many labs are tested at once: the config's `parallel_labs`, or from the GPU's
    memory (every lab tested holds a judge and a worker context, and test buffers, and
    each sanitizer tool two more) and the CPU cores (a judge and its worker each keep one
    busy while the GPU works)."""
    wanted = options.config.grader.get("parallel_labs", "auto")
    if isinstance(wanted, int):
        return max(1, wanted)
    memory_mb = gpu.memory_mb()
    by_memory = 8 if memory_mb >= 60_000 else 4 if memory_mb >= 40_000 else 2 if memory_mb >= 16_000 else 1
    return max(1, min(by_memory, (os.cpu_count() or 2) // 2))


def prestart_slots(options: Options, labs: int) -> int:
    """How many benches may set up while tests run and wait for their turn: the config's
    `prestart_benches`, or one per 5 GB of GPU memory above 20 GB (a waiting bench holds
    three CUDA contexts and its graded inputs, up to about 4 GB)."""
    wanted = options.config.grader.get("prestart_benches", "auto")
    if isinstance(wanted, int):
        return max(0, min(wanted, labs))
    return max(0, min(labs, (gpu.memory_mb() - 20_000) // 5_000))


def required_steps(lab: manifest.Lab | None) -> list[str]:
    """The lecture's steps a lab requires (timed beside the reference's)."""
    return [v.name for v in lab.required_variants if v.kind == variants.STEP] if lab is not None else []


# Seconds each lab's tests and sanitizer took in the last run of this build folder: the
# longest are tested first, so that the last lab to finish is not a long one started late.
LAB_SECONDS_FILE = "lab_seconds.json"


def _lab_seconds(options: Options) -> dict[str, dict[str, float]]:
    """lab -> {"tests": s, "sanitizer": s} of the last run in this build folder (what can be read)."""
    try:
        known = json.loads((options.build_dir / LAB_SECONDS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for lab, value in known.items() if isinstance(known, dict) else ():
        if isinstance(value, dict):
            value = {k: float(v) for k, v in value.items()
                     if k in ("tests", "sanitizer") and isinstance(v, (int, float)) and not isinstance(v, bool)}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = {"tests": float(value)}  # an older file: one figure for both
        else:
            continue
        if "tests" in value:
            out[lab] = value
    return out


def test_order(options: Options, labs: list[str]) -> list[str]:
    """`labs`, longest first by the last run's seconds (labs not seen yet first, in course order)."""
    known = _lab_seconds(options)

    def seconds(lab: str) -> float:
        return sum(known[lab].values()) if lab in known else float("inf")

    return sorted(labs, key=seconds, reverse=True)


SHARD_SECONDS = 20.0
MAX_SHARDS = 3


def test_shards(options: Options, lab: str) -> int:
    """How many processes run a lab's tests side by side: the config's `test_shards`, or with
    "auto" one per `SHARD_SECONDS` the lab's tests took last time (at most `MAX_SHARDS`), so
    that one long lab does not keep the others waiting at the end of the test phase."""
    wanted = options.config.grader.get("test_shards", 1)
    if isinstance(wanted, int):
        return max(1, wanted)
    last = _lab_seconds(options).get(lab, {}).get("tests", 0.0)
    return max(1, min(MAX_SHARDS, math.ceil(last / SHARD_SECONDS)))


def save_lab_seconds(options: Options, results: list[LabResult]) -> None:
    """Keeps this run's seconds per lab (tests and sanitizer) for test_order and test_shards;
    a lab that did not run its tests keeps its earlier figures."""
    path = options.build_dir / LAB_SECONDS_FILE
    known: dict[str, Any] = dict(_lab_seconds(options))
    for result in results:
        if "tests" in result.seconds:
            # Sharded tests took less wall time than the same tests in one process would:
            # keep the one-process estimate, so that the next run shards them again.
            shards = result.test_shards
            known[result.lab] = {"tests": round(result.seconds["tests"] * shards, 2),
                                 "sanitizer": round(result.seconds.get("sanitizer", 0.0), 2)}
    try:
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
        temporary.replace(path)  # whole or not at all: grading jobs may share the build folder
    except OSError:
        pass  # only the order of the next run depends on it


def test_labs(options: Options, labs: list[str], kit: KitBuild, students: dict[str, build.StudentBuild],
              taken: overlay.Overlay, prestarter: Prestarter | None = None,
              manifests: dict[str, manifest.Lab] | None = None,
              ) -> dict[str, concurrent.futures.Future[tuple[LabResult, list[str]]]]:
    """Phase one of every lab (test_lab), `parallel_labs` at a time, the longest first; the
    results by lab. A lab whose tests passed has its bench set up right away (prestarter)."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(len(labs), parallel_labs(options)) or 1)

    def one(lab: str) -> tuple[LabResult, list[str]]:
        stages: list[str] = []
        try:
            if lab in taken.missing and options.impl != SOLUTION:
                return _fail(_blank(options, lab, status.PASS), status.MISSING, taken.missing[lab]), stages
            result = test_lab(options, lab, kit, students.get(lab), taken, stages.append)
            if prestarter is not None:
                prestarter.start(result, required_steps((manifests or {}).get(lab)))
            return result, stages
        except Exception as exc:  # a grader bug must cost one lab, not the report
            return _grader_failed(options, lab, exc), stages

    futures = {lab: pool.submit(one, lab) for lab in test_order(options, labs)}
    pool.shutdown(wait=False)
    return {lab: futures[lab] for lab in labs}


def _grader_failed(options: Options, lab: str, exc: Exception) -> LabResult:
    result = _blank(options, lab, status.ERROR)
    result.message = (f"the grader failed on this lab ({type(exc).__name__}: {exc}); "
                      "please report it with the traceback in the JSON report")
    result.traceback = traceback.format_exc()
    return result


def present_labs(root: Path) -> list[str]:
    """The labs of the kit at `root` (those with a manifest, labs/<lab>/lab.json), in course order."""
    return list(kit_manifests(root))


def build_kit(options: Options, labs: list[str], progress: Progress) -> KitBuild:
    """Configure the kit and build its judge programs, workers and references (no student code),
    once for all labs; afterwards, what each lab's student build needs from it."""
    kit = KitBuild()
    grader_settings = options.config.grader
    progress.note("configuring the kit with CMake...")
    args = build.configure_args(options.root, options.build_dir, solutions=options.impl == SOLUTION,
                                cuda_arch=options.cuda_arch)
    try:
        kit.configured = build.configure(args, options.build_dir, grader_settings["configure_timeout_s"])
    except Exception as exc:  # e.g. an unwritable build dir: every lab reports it
        kit.configured = build.BuildResult(ok=False, command=proc.command_string(args),
                                           message=f"could not run CMake ({type(exc).__name__}: {exc})")
    if not kit.configured.ok:
        return kit
    targets = {lab: build.judge_targets(lab, reference=_builds_reference(options, lab)) for lab in labs
               if (options.root / "labs" / lab).is_dir()}
    everything = [t for lab_targets in targets.values() for t in lab_targets]
    shown = [-1]

    def show(done: int, total: int) -> None:
        step = max(1, total // 10)
        if done == total or done // step != shown[0]:
            shown[0] = done // step
            progress.note(f"  building the kit's judge programs: {done}/{total} steps")

    progress.note("building the kit's part (judge programs, workers, references; only what changed)...")
    whole = build.build_targets(options.build_dir, everything, grader_settings["build_timeout_s"], options.root,
                                progress=show, keep_going=True)
    for lab, lab_targets in targets.items():
        # After a failed whole build, each lab again alone: a no-op where it succeeded,
        # its own errors where it did not.
        result = whole if whole.ok else build.build_targets(
            options.build_dir, lab_targets, grader_settings["build_timeout_s"], options.root)
        if not result.ok:
            kit.failed[lab] = result
            continue
        if options.impl != SOLUTION:
            try:
                kit.commands[lab] = build.student_commands(options.build_dir, lab, options.root)
            except build.CommandsError as exc:
                kit.command_errors[lab] = str(exc)
    return kit


# The compile jail's verdict for a build folder and toolchain (compile_jail), kept so that a
# class's graders test it once.
JAIL_FILE = "compile_jail.json"


def compile_jail(options: Options, kit: KitBuild, lab: str, limits: proc.Limits) -> tuple[bool, str]:
    """Whether students' files compile inside the jail (build.compile_jail), and a note when
    not. With `compile_jail = "auto"` (the default) it is used where the kernel has Landlock
    and the pristine kit's own file of `lab` compiles inside it (tried once per build
    folder, toolchain and kernel); `false` turns it off."""
    if options.config.grader.get("compile_jail", "auto") is False:
        return False, ""
    abi = proc.Jail.abi()
    if abi < 1:
        return False, ("compile jail: off (this kernel has no Landlock): a student's file can read any file "
                       "this user can read while it compiles")
    commands = kit.commands[lab]
    # The verdict holds for the jail's rules (toolkit, host compiler, linker, include
    # folders; a student's own folders stand in as placeholders, the same for every
    # student of a class), this kernel and this version of the jail's code.
    jail = build.compile_jail(options.build_dir, commands, Path("/student") / f"{lab}.cu", Path("/out"))
    key = json.dumps([os.uname().release, abi, build.JAIL_RULES, sorted(jail.readable), jail.writable])
    record = options.build_dir / JAIL_FILE
    try:
        known = json.loads(record.read_text())
        if known.get("key") == key:
            return bool(known.get("ok")), str(known.get("why", ""))
    except (OSError, ValueError, AttributeError):
        pass
    trial = options.own_dir / "jail-test"
    shutil.rmtree(trial, ignore_errors=True)
    source = trial / "labs" / lab / f"{lab}.cu"
    source.parent.mkdir(parents=True)
    shutil.copyfile(options.root / "labs" / lab / f"{lab}.cu", source)
    try:
        tried = build.build_student(options.build_dir, commands, source, trial / "out", lab,
                                    timeout=options.config.grader["student_build_timeout_s"], limits=limits,
                                    jail=True)
        problem = "" if tried.ok else _first_cause(tried.message + "\n" + (tried.output or ""))
    except (proc.LaunchError, OSError) as exc:  # e.g. the compiler itself may not be run from inside
        problem = str(exc)
    shutil.rmtree(trial, ignore_errors=True)
    why = f"compile jail: off (the kit's own file did not compile inside it: {problem})" if problem else ""
    try:
        record.write_text(json.dumps({"key": key, "ok": not problem, "why": why}) + "\n")
    except OSError:
        pass
    return not problem, why


def _first_cause(text: str) -> str:
    """The line of a failed build's output that says why (a denied file, a missing one),
    else its last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if any(word in line for word in ("Permission denied", "cannot ", "fatal", "No such file")):
            return line
    return lines[-1] if lines else "no message"


def build_students(options: Options, labs: list[str], kit: KitBuild, taken: overlay.Overlay,
                   progress: Progress, notes: list[str] | None = None) -> dict[str, build.StudentBuild]:
    """Compile each lab's student file into its own library, the labs side by side, each in
    the compile jail where it works."""
    grader_settings = options.config.grader
    limits = proc.Limits(memory_bytes=grader_settings["compile_memory_mb"] << 20,
                         file_bytes=grader_settings["compile_file_mb"] << 20)
    wanted = [lab for lab in labs if lab in kit.commands and lab not in taken.missing]
    if not wanted:
        return {}
    jail, why = compile_jail(options, kit, wanted[0], limits)
    if why:
        progress.note(why)
        if notes is not None:
            notes.append(why)
    progress.note(f"compiling the student files of {len(wanted)} lab(s)...")

    def one(lab: str) -> build.StudentBuild:
        source = options.work_dir / "labs" / lab / f"{lab}.cu"
        return build.build_student(options.build_dir, kit.commands[lab], source, options.student_dir / lab, lab,
                                   timeout=grader_settings["student_build_timeout_s"], limits=limits,
                                   display_root=options.work_dir, jail=jail)

    workers = max(1, min(len(wanted), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        built = dict(zip(wanted, pool.map(one, wanted)))
    for lab, student in built.items():
        if not student.ok:
            _quiet_foreign_errors(options, lab, taken, student)
    return built


# A compiler diagnostic's location: "path(12): error", "path:12:3: error", "In file included from path:3".
_LOCATED = re.compile(r"^\s*(?:In file included from |from )?(?P<path>[^\s:()]+?)(?:\((?P<a>\d+)\)|:(?P<b>\d+))")


def _only_own_files(text: str, options: Options, own: list[str]) -> bool:
    """Whether every diagnostic location in compiler output `text` is one of the student's
    own files (by the name shown, or its path in the submission folder)."""
    mine = {str(Path(rel)) for rel in own} | {str(options.work_dir / rel) for rel in own}
    for line in text.splitlines():
        found = _LOCATED.match(line)
        if found and (found.group("a") or found.group("b")) and found.group("path") not in mine:
            return False
    return True


def _quiet_foreign_errors(options: Options, lab: str, taken: overlay.Overlay, student: build.StudentBuild) -> None:
    """A failed compile of a file that includes files outside the kit and the lab (anything the
    grading user can read) must not bring their lines into the report: the compiler's
    messages quote the lines they are about. Its messages are then replaced by the names."""
    lab_manifest = manifest.by_name(options.root).get(lab)
    if lab_manifest is None:
        return
    files = [options.work_dir / rel for rel in taken.copied.get(lab, [])]
    reads = check.foreign_reads(options.root, lab_manifest, files, work_dir=options.own_dir / "checks" / lab)
    if reads == []:
        return  # everything it reads is the kit's, the toolkit's, the system's or the student's
    if reads is None and _only_own_files(student.message + "\n" + student.output, options, taken.copied.get(lab, [])):
        return  # the preprocessor failed in the student's own file (a misspelt #include, say)
    if reads:
        student.message = (f"compilation failed, and your file includes {', '.join(reads[:3])}, outside your lab "
                           "and the kit: the compiler's messages are not shown, since they would quote it. "
                           f"Include only {lab}.h and the kit's headers")
    else:
        student.message = ("compilation failed before its includes could be listed (nvcc -M failed): the "
                           "compiler's messages are not shown, since they could quote a file outside your lab. "
                           f"Check every #include of your file: only {lab}.h and the kit's headers may be included")
    student.output = ""


def _not_built(kit: KitBuild, taken: overlay.Overlay, lab: str) -> str:
    """Why a lab's student library was not built."""
    if kit.configured is not None and not kit.configured.ok:
        return kit.configured.message
    if lab in kit.failed:
        return "the kit's own programs for this lab did not build:\n" + kit.failed[lab].message
    if lab in kit.command_errors:
        return kit.command_errors[lab]
    return taken.missing.get(lab, "not built")


def _builds_reference(options: Options, lab: str) -> bool:
    """Whether this run builds lab's reference library (else it comes from --reference or is absent)."""
    return options.reference_dir is None and (options.root / "solutions" / lab).is_dir()


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


def _implementation(options: Options, lab: str, kit: KitBuild, student: build.StudentBuild | None,
                    result: LabResult) -> Path | None:
    """The library under test, or None after marking `result` BUILD_ERROR."""
    if options.impl == SOLUTION:
        reference, missing = _reference(options, lab)
        if reference is None:
            _fail(result, status.MISSING, missing or f"lib{lab}_solution.so not found: --impl solution needs the "
                  "instructor's kit (solutions/) or --reference")
        return reference
    if lab in kit.command_errors:
        _fail(result, status.BUILD_ERROR, kit.command_errors[lab])
        return None
    if student is not None:
        result.reproduce["build"] = student.command
        if not student.ok:
            _fail(result, status.BUILD_ERROR, student.message, student.command, student.output)
            return None
        return student.library
    library = options.student_dir / lab / f"lib{lab}_student.so"
    if options.no_build and not library.is_file():
        library = options.build_dir / "lib" / f"lib{lab}_student.so"  # the kit's own build of the file
    if not library.is_file():
        _fail(result, status.BUILD_ERROR, f"{library} not found: build the lab (run the grader without --no-build)")
        return None
    return library


def test_lab(options: Options, lab: str, kit: KitBuild, student: build.StudentBuild | None,
             taken: overlay.Overlay, stage: Callable[[str], None]) -> LabResult:
    """Phase one of a lab whose build is done: static checks, tests, sanitizer. The result
    remembers the library under test for phase two (time_lab)."""
    settings = options.config.lab(lab)
    result = _blank(options, lab, status.PASS)
    if not (options.root / "labs" / lab / "lab.json").is_file():
        return _fail(result, status.MISSING, f"labs/{lab}/lab.json not found: this kit has no {lab} lab "
                     "(is --root the kit's top directory?)")
    if kit.configured is not None and not kit.configured.ok:
        return _fail(result, status.BUILD_ERROR, kit.configured.message, kit.configured.command,
                     kit.configured.output)
    if lab in kit.failed:
        failed = kit.failed[lab]
        return _fail(result, status.BUILD_ERROR, "the kit's own programs for this lab did not build (not your "
                     "file: the tests, the bench or the judge):\n" + failed.message, failed.command, failed.output)
    impl = _implementation(options, lab, kit, student, result)
    if impl is None:
        return result
    if options.impl != SOLUTION and (student is not None or not options.no_build):  # they compile: not with --no-build
        with clocked(result, "checks"):
            run_checks(options, lab, result, taken, student, stage)
        if result.status is status.BUILD_ERROR:
            return result

    # Correctness: the judge runs the tests; the implementation runs in its worker.
    test_bin = options.build_dir / "bin" / f"{lab}_judge_test"
    if not proc.is_executable(test_bin):
        return _fail(result, status.BUILD_ERROR, f"judge program {test_bin} not found: build the lab "
                     "(run the grader without --no-build)")
    judge_args = [f"--impl={impl}", f"--call-timeout={options.config.grader['call_timeout_s']}"]
    stage("testing")
    result.test_shards = test_shards(options, lab)
    with clocked(result, "tests"):
        tests = gtest.run_tests(test_bin, seed=options.seed, timeout=options.config.grader["test_timeout_s"],
                                json_path=options.results_dir / f"{lab}.gtest.json", cwd=options.root,
                                extra_args=judge_args, shards=result.test_shards, env=testing_environment(options))
    result.reproduce["test"] = tests.command
    result.correctness = score.score_correctness(tests.tests, settings)
    for row in result.correctness.tests:
        row["message"] = row["message"].replace(f"{options.root}/", "").replace(f"{options.work_dir}/", "")
        if row["status"] == "failed":
            row["reproduce"] = tests.reproduce(row["name"])
    result.status, result.message, result.output = tests.status, tests.message, tests.output
    if tests.status is status.PARTIAL and result.correctness.full:
        # Only tests that weigh nothing failed: a find-the-bug exercise not fixed yet or a
        # further part not written. Their own rows show that; the lab is graded (and timed)
        # as passing.
        result.status = status.PASS
        result.message = (f"all graded tests passed ({tests.message}, all of them in tests that weigh 0: "
                          "find-the-bug exercises and further parts, which earn their own points)")
    hung = next((t for t in tests.tests if t.outcome == "failed" and HANG_MARK in t.message), None)
    if hung is not None and tests.status in (status.PASS, status.PARTIAL):
        result.status = status.TIMEOUT
        result.message = f"{tests.message}; a call hung in {hung.name}: {hung.message.splitlines()[0]}"
        tests.running_test = hung.name
    if result.status is not status.PASS:
        result.command = tests.reproduce(tests.running_test) if tests.running_test else tests.command
        stage(tests.message if result.status is status.PARTIAL else result.status.label)
        result.performance = score.score_performance(
            None, settings, correctness_full=result.correctness.full,
            unavailable=f"not timed: the tests ended in {result.status.name}")
        if result.status in (status.PARTIAL, status.TIMEOUT):
            sanitize_lab(options, result, test_bin, judge_args, stage)
        return result
    stage(result.message)
    sanitize_lab(options, result, test_bin, judge_args, stage)
    result.implementation = impl
    return result


def sanitize_lab(options: Options, result: LabResult, test_bin: Path, judge_args: list[str],
                 stage: Callable[[str], None]) -> None:
    """The sanitizer over the lab's tests (run_sanitizer) and over each find-the-bug
    exercise or part that names tools (check_fixes), all side by side."""
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        fixes = pool.submit(check_fixes, options, result, test_bin, judge_args, stage)
        run_sanitizer(options, result, test_bin, judge_args, stage)
        fixes.result()
    if (result.sanitizer is not None and result.sanitizer.ran) or any(result.fix_checks.values()):
        result.seconds["sanitizer"] = round(time.monotonic() - start, 2)


def time_lab(options: Options, result: LabResult, stage: Callable[[str], None],
             required_variants: list[str] | None = None, pending: PendingBench | None = None) -> None:
    """Phase two: the judge times the student's and the reference's workers (a lab whose
    tests all passed), and the lab's `required_variants` beside the reference's, and
    scores the performance."""
    lab, impl = result.lab, result.implementation
    if impl is None or result.status is not status.PASS:
        if pending is not None:
            pending.cancel()
        return
    settings = options.config.lab(lab)
    if options.skip_bench:
        result.performance = score.score_performance(None, settings, correctness_full=True,
                                                     unavailable="bench skipped (--skip-bench)")
        return
    bench_bin = options.build_dir / "bin" / f"{lab}_judge_bench"
    if not proc.is_executable(bench_bin):
        result.performance = score.score_performance(None, settings, correctness_full=True,
                                                     unavailable="bench binary not found")
        _fail(result, status.BUILD_ERROR, f"judge program {bench_bin} not found: build the lab "
              "(run the grader without --no-build), or pass --skip-bench")
        return
    with clocked(result, "bench"):
        _time_lab(options, result, stage, required_variants or [], pending)


def _time_lab(options: Options, result: LabResult, stage: Callable[[str], None],
              required_variants: list[str], pending: PendingBench | None = None) -> None:
    """time_lab's bench runs (again when noisy, throttled or contradicted) and the score."""
    settings = options.config.lab(result.lab)
    _, missing_reference = _reference(options, result.lab)

    def run() -> bench.BenchRun:
        """One more bench run (result.bench_runs counts them; each writes its own JSON)."""
        result.bench_runs += 1
        if result.bench_runs == 1 and pending is not None:
            return pending.finish()  # set up while the tests ran: its timing starts now
        return _bench(options, result, result.bench_runs, required_variants)

    stage("timing")
    timed = run()
    while result.bench_runs <= options.config.grader["bench_reruns"] and bench.is_noisy(timed):
        stage("noisy, timing again")
        timed = bench.less_noisy(timed, run())
    if result.bench_runs > 1:
        result.notes.append(f"the bench's student/reference ratio was noisy: it ran {result.bench_runs} times "
                            "and the least noisy run was scored" + (" (still noisy)" if bench.is_noisy(timed) else ""))
    slowed = _slowdown(timed)
    if slowed:
        # A GPU that slowed down for heat or a hardware fault is not the student's speed:
        # time again after a pause, and flag the figures if it happens again.
        stage("GPU throttled, cooling down")
        time.sleep(options.config.grader["cooldown_s"])
        again = run()
        if again.status is None and not _slowdown(again):
            timed = again
            result.notes.append(f"the GPU slowed down during timing ({', '.join(slowed)}): timed again after a "
                                f"{options.config.grader['cooldown_s']:g} s pause, and that run was scored")
        else:
            throttled = f"the GPU slowed down during timing ({', '.join(_slowdown(again) or slowed)}) twice, " \
                        "also after a pause: the figures were scored but may be low; grade this lab again"
            result.notes.append(throttled)
    if timed.status is None and _contradicted(timed, settings):
        # Honest code meets this when something else used the GPU meanwhile; forged
        # stamps meet it every time. A run without contradictions is trustworthy.
        stage("clock stamps contradicted, timing again")
        again = run()
        if again.status is None and not _contradicted(again, settings):
            timed = again
            result.notes.append("the judge's clock contradicted the clock stamps around your call in too many "
                                "samples (another process on the GPU does this too): timed again, and the clean "
                                "run was scored")
        else:
            result.notes.append("the judge's clock contradicted the clock stamps around your call in two runs: "
                                "the performance points are withheld; if nothing of yours forges timings or leaves "
                                "work running on a stream of its own, ask for a regrade on an idle GPU")
    result.reproduce["bench"] = timed.command
    result.bench = timed.data
    if timed.status is not None:
        _fail(result, timed.status, f"bench: {timed.message}", timed.command, timed.output)
    result.performance = score.score_performance(
        timed.data if timed.status is None else None, settings, correctness_full=True,
        unavailable=f"the bench failed: {timed.message}")
    if _slowdown(timed):
        result.performance.flags.append("throttled")
    if missing_reference:
        result.performance = score.Performance(0.0, settings.performance_points, reason=missing_reference)
    doubted = [w["name"] for w in result.performance.workloads if w.get("benefit_of_doubt")]
    if doubted:
        result.notes.append(f"full performance points by the benefit of the doubt in {', '.join(doubted)}: "
                            f"slower than {settings.full_credit_ratio:g}x the reference's time, but within "
                            "the timing's 95% confidence interval of it")


def _bench(options: Options, result: LabResult, attempt: int, required: list[str],
           gate: proc.Gate | None = None) -> bench.BenchRun:
    """One run of the lab's judge bench on its implementation under test, with the GPU's
    clocks, temperature, power and clock-event reasons just before and just after it in its
    JSON ("telemetry"). With a `gate` it waits, set up, for the gate's opening
    (PendingBench.finish adds the telemetry then)."""
    lab = result.lab
    name = f"{lab}.bench.json" if attempt == 1 else f"{lab}.bench.{attempt}.json"
    reference, _ = _reference(options, lab)
    before = gpu.telemetry() if gate is None else None
    timed = bench.run_bench(options.build_dir / "bin" / f"{lab}_judge_bench", seed=options.seed,
                            timeout=options.config.grader["bench_timeout_s"], json_path=options.results_dir / name,
                            reference=reference, variant=options.config.lab(lab).reference_variant, cwd=options.root,
                            impl=result.implementation, time_variants=required, gate=gate,
                            env=bench_environment(options))
    if timed.data is not None and gate is None:
        timed.data["telemetry"] = {"before": before, "after": gpu.telemetry()}
    return timed


def _contradicted(timed: bench.BenchRun, settings: LabSettings) -> bool:
    """Whether the run's performance would be withheld because the judge's clock contradicts
    the worker's clock stamps ("boundary")."""
    performance = score.score_performance(timed.data, settings, correctness_full=True)
    return "boundary" in performance.flags


def _slowdown(timed: bench.BenchRun) -> list[str]:
    """The clock-event reasons that slowed the GPU down, seen just after the run ([] if none)."""
    after = ((timed.data or {}).get("telemetry") or {}).get("after") or {}
    return list(after.get("slowdown") or [])


def run_checks(options: Options, lab: str, result: LabResult, taken: overlay.Overlay,
               student: build.StudentBuild | None, stage: Callable[[str], None]) -> None:
    """The static checks on the compiled student file (check.py): findings become rules."""
    lab_manifest = manifest.by_name(options.root).get(lab)
    if lab_manifest is None:
        return
    files = [options.work_dir / rel for rel in taken.copied.get(lab, [])]
    stage("checking")
    checked = check.check_lab(options.root, lab_manifest, files, work_dir=options.own_dir / "checks" / lab,
                              object_file=student.object if student is not None and student.ok else None)
    result.checked = checked.ok
    result.steps = getattr(checked, "steps", None)
    if getattr(checked, "exceeded", False):  # the checks' compile hit a limit: a bomb, not a clean file
        _fail(result, status.BUILD_ERROR, f"static checks: {checked.message}",
              checked.commands[0] if checked.commands else "")
        return
    if not checked.ok:
        result.notes.append(f"static checks: {checked.message}")
        return
    result.rules += [finding.as_dict() for finding in checked.findings]
    if checked.commands:
        result.reproduce["check"] = checked.commands[0]
    reads = next((f for f in checked.findings if f.pattern == check.READS_FILES), None)
    if reads is not None:
        # The bytes of a file of this machine are in the program: any test message about
        # a wrong output could carry them into the student's report. Nothing runs.
        _fail(result, status.BUILD_ERROR, f"static checks: {reads.message}", result.reproduce.get("check", ""))


def run_sanitizer(options: Options, result: LabResult, test_bin: Path, judge_args: list[str],
                  stage: Callable[[str], None]) -> None:
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
    # Exact bounds in every run of the stage (memcheck sees one element past an array), and
    # the same tests once without the tools, to compare what ran (sanitize.compare_with_plain).
    found = sanitize.run(test_bin, tools=settings.sanitizer_tools, test_filter=settings.sanitizer_filter,
                         seed=options.seed, timeout=options.config.grader["sanitizer_timeout_s"],
                         root=options.work_dir, cwd=options.root, sanitizer=tool,
                         extra_args=[*judge_args, EXACT_BOUNDS],
                         log_dir=options.results_dir / f"{result.lab}.sanitizer", only=worker_program(result.lab),
                         env=testing_environment(options), compare=True)
    result.sanitizer = found
    if found.runs:  # the command of the first tool that found something, else the first tool's
        first = next((run for run in found.runs if run.status == "errors"), found.runs[0])
        result.reproduce["sanitizer"] = first.command
    result.notes += [run.note for run in found.runs if run.note] + found.notes
    stage(f"{len(found.findings)} sanitizer finding(s)" if found.findings else "clean")


def testing_environment(options: Options) -> dict[str, str]:
    """Environment overrides of the test and sanitizer runs: the config's
    `test_device_connections` as CUDA_DEVICE_MAX_CONNECTIONS. The driver starts CUDA contexts
    one at a time and sets up every hardware queue of each: fewer queues let the judge
    programs and workers of labs tested side by side start sooner."""
    return connections_environment(options.config.grader["test_device_connections"])


def bench_environment(options: Options) -> dict[str, str]:
    """Environment overrides of the judge's benches: `bench_device_connections`, likewise
    (the benches set up while other labs are tested)."""
    return connections_environment(options.config.grader["bench_device_connections"])


def connections_environment(count: int) -> dict[str, str]:
    """CUDA_DEVICE_MAX_CONNECTIONS=count for a judge program (nothing for 0: the driver's default)."""
    return {"CUDA_DEVICE_MAX_CONNECTIONS": str(count)} if count else {}


def worker_program(lab: str) -> str:
    """The name of the judge's worker program for `lab` (cmake/LabKit.cmake): the one process
    where the student's code runs, and so the one the sanitizer checks."""
    return f"{lab}_worker"


def check_fixes(options: Options, result: LabResult, test_bin: Path, judge_args: list[str],
                stage: Callable[[str], None]) -> None:
    """compute-sanitizer over the tests of each find-the-bug exercise that names tools in
    its manifest entry and whose tests passed (result.fix_checks; variants.grade reads it)."""
    lab = kit_manifests(options.root).get(result.lab)
    wanted = []
    for variant in lab.required_variants if lab is not None else ():
        if variant.kind == variants.STEP or not variant.sanitizer:
            continue
        mine = variants.tests_of(variant.name, result.correctness.tests)
        if not mine or any(t.get("status") != "passed" for t in mine):
            continue  # failing already: nothing for the sanitizer to add
        tool = None if options.no_sanitizer else sanitize.find_sanitizer()
        if tool is None:
            result.fix_checks[variant.name] = None
            continue
        wanted.append((variant, tool))

    def one(variant: variants.RequiredVariant, tool: Path) -> None:
        stage(f"{', '.join(variant.sanitizer)} on {variant.name}")
        result.fix_checks[variant.name] = sanitize.run(
            test_bin, tools=list(variant.sanitizer), test_filter=variants.test_filter(variant), seed=options.seed,
            timeout=options.config.grader["sanitizer_timeout_s"], root=options.work_dir, cwd=options.root,
            sanitizer=tool, extra_args=[*judge_args, EXACT_BOUNDS],
            log_dir=options.results_dir / f"{result.lab}.{variant.name}",
            only=worker_program(result.lab), env=testing_environment(options))

    if wanted:  # each exercise's own run, side by side
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(wanted)) as pool:
            for done in [pool.submit(one, variant, tool) for variant, tool in wanted]:
                done.result()


def apply_rules(options: Options, result: LabResult, taken: overlay.Overlay | None = None) -> None:
    """The lab's required and forbidden patterns from the config and the manifest, and, where the
    static checks could not run, the built-in patterns in their stead (student code only)."""
    settings = options.config.lab(result.lab)
    source_root = options.work_dir if taken is not None and options.impl != SOLUTION else options.root
    files = rules.sources(source_root, result.lab, options.impl, settings.editable)
    builtin = {} if options.impl == SOLUTION or result.checked else {
        name: rule for name, rule in rules.BUILTIN_RULES.items() if name not in settings.allow}
    findings = rules.check(source_root, files, settings.required_patterns, settings.forbidden_patterns, builtin)
    allowed = set(settings.allow)
    result.rules = [r for r in result.rules if r.get("rule") not in allowed] + [f.as_dict() for f in findings]


def apply_deductions(options: Options, result: LabResult) -> None:
    """A broken rule costs rule_penalty, sanitizer findings sanitizer_penalty, each a
    fraction of the points the code earned otherwise (correctness, performance, and the
    steps, find-the-bug exercises and further parts, so that code that breaks a rule, such
    as including the reference, keeps no more of them than of the rest); together never
    more than those points. The graded questions are the student's own writing: not reduced."""
    settings = options.config.lab(result.lab)
    earned = result.correctness.points + result.performance.points + result.variants.points
    result.rule_deduction = round(earned * settings.rule_penalty, 2) if result.rules else 0.0
    sanitizer = 0.0
    if result.sanitizer is not None and result.sanitizer.findings:
        sanitizer = round(earned * settings.sanitizer_penalty, 2)
        result.sanitizer.deduction = sanitizer
    result.deduction = round(min(earned, result.rule_deduction + sanitizer), 2)


def kit_manifests(root: Path) -> dict[str, manifest.Lab]:
    """The manifests of the kit at `root` by lab ({} when they cannot be read: the labs
    then fail on their own, with the reason)."""
    try:
        return manifest.by_name(root)
    except manifest.ManifestError:
        return {}


def grade_variants(result: LabResult, lab: manifest.Lab | None) -> None:
    """The lab's required variants: registered and passing their tests (variants.py), with
    their figures from this run's bench."""
    if lab is None or not lab.required_variants:
        return
    ran = bool(result.correctness.tests) and result.status is not status.ERROR
    result.variants = variants.grade(lab.required_variants, result.correctness.tests if ran else None, result.bench,
                                     result.fix_checks, result.steps)
    # A step that is another step's work, or not the step's speed: flagged for the
    # instructor in the lab's notes too, with both registrations.
    result.notes += [f"lecture step {row['name']}: {row['why']}" for row in result.variants.rows if row.get("flag")]


def grade_answers(options: Options, result: LabResult, lab: manifest.Lab | None) -> None:
    """The lab's graded questions: the student's answers.md (the solution's, with --impl
    solution) against the manifest, the instructor's key and this run's bench figures."""
    settings = options.config.lab(result.lab)
    if lab is None or not lab.questions or not settings.answers:
        return
    if options.impl == SOLUTION:
        path, shown = options.root / "solutions" / result.lab / "answers.md", f"solutions/{result.lab}/answers.md"
    else:
        path, shown = options.work_dir / lab.answers_file, lab.answers_file
    key_path = (options.answer_keys or options.root / "solutions") / result.lab / "answer_key.json"
    try:
        key = answers.read_key(key_path)
    except answers.AnswerKeyError as exc:
        key = {}
        result.notes.append(f"the answer key could not be used ({exc}): numeric answers were not checked")
    feedback = options.config.grader.get("answer_feedback", answers.VERDICT)
    result.answers = answers.grade(lab.questions, path, shown, key, result.bench, settings.question_points,
                                   feedback=feedback, lab=result.lab, key_exists=key_path.is_file())
    if result.answers.note:
        result.notes.append(result.answers.note)
    if any(q["status"] == answers.UNCHECKED and q["check"] == "key" for q in result.answers.questions):
        result.notes.append(f"no answer key at {key_path}: numeric answers were not checked (give the "
                            "instructor's keys with --answer-keys DIR)")


def _reference(options: Options, lab: str) -> tuple[Path | None, str]:
    """The reference library to pass to the bench, and why it is missing if it is."""
    name = f"lib{lab}_solution.so"
    if options.reference_dir is not None:
        path = options.reference_dir / name
        if path.is_file():
            return path, ""
        return None, f"{score.NO_REFERENCE} ({path} not found)"
    path = options.build_dir / "lib" / name
    if path.is_file():
        return path, ""
    return None, f"{score.NO_REFERENCE} ({path} not found: the kit has no solutions/{lab})"


def _blank(options: Options, lab: str, code: ResultCode) -> LabResult:
    settings = options.config.lab(lab)
    return LabResult(lab, code, Correctness(0.0, settings.correctness_points, False),
                     Performance(0.0, settings.performance_points, reason=score.NOT_FULL))


def _fail(result: LabResult, code: ResultCode, message: str, command: str = "", output: str = "") -> LabResult:
    result.status, result.message, result.command, result.output = code, message, command, output
    return result
