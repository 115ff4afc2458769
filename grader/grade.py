"""Grade labs: build -> tests -> sanitizer -> bench -> score (DESIGN.md, "Trust boundary").

The kit's part of the build (the judge programs, their workers, the references) is made
once per build folder; each lab's student file is then compiled alone into a library of
the submission's own (build.py). No grade comes from a process that holds student code:
the judge programs run the lab's tests and bench and forward each call of the interface
to a sandboxed worker that loads the student's library (common/worker/). Static checks
read the compiled object (grader/check/).

Each lab ends with exactly one status (status.py) and its points; whatever happens in
one lab, including a bug in the grader itself, the next lab is still graded. The files
graded are always the submission's editable files only, copied into a clean folder
(overlay.py): with --submission from a student's repository onto the instructor's
pristine kit, otherwise from the kit itself.

This module is the run's outline. The command line's mode flags are resolved once into a
plan (plan.py); each lab goes through the stages of grader/stages/, each a function of
(context, lab result): build -> check -> test -> sanitize, several labs side by side, then,
each alone on the GPU, time -> score. When and how many side by side is schedule.py's; what
a lab's result holds is outcome.py's; where the build's files lie is layout.py's.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import time
from collections.abc import Callable

from grader import build, cpu_load, gpu, gpu_load, gpu_lock, overlay, proc, status
from grader.outcome import GradingRun, LabResult, Progress, blank, clocked, fail, grader_failed, now, start_run_clock
from grader.plan import SOLUTION, Options, Plan
from grader.schedule import Prestarter, parallel_labs, prestart_slots, save_lab_seconds, side_by_side
from grader.stages import building, checking, sanitizing, scoring, testing, timing
from grader.stages.context import KitBuild, LabContext, kit_manifests, required_steps

__all__ = ["SOLUTION", "GradingRun", "KitBuild", "LabResult", "Options", "Plan", "Progress", "clocked",
           "grade", "present_labs", "test_lab", "test_labs"]


def grade(options: Options, labs: list[str], progress: Progress,
          checkpoint: Callable[[GradingRun], None] | None = None) -> GradingRun:
    """Grade `labs` in order. Ctrl-C stops early and returns what was graded.

    `checkpoint(run)` is called after each lab (e.g. to write the report so far)."""
    run = GradingRun(options, started=now())
    prestarter: Prestarter | None = None
    origin = start_run_clock()
    load = cpu_load.Sampler(origin).start()
    gpu_load_sampler: gpu_load.Sampler | None = None
    last = time.monotonic()

    def phase_done(phase: str) -> None:
        nonlocal last
        run.seconds[phase] = round(time.monotonic() - last, 2)
        last = time.monotonic()

    try:
        manifests = kit_manifests(options.root)
        if not _take_files(run, labs, progress, manifests):
            return run
        phase_done("files")
        kit, students = _build(run, labs, progress)
        phase_done("build")
        if options.plan.build_only:
            building.save_students(options, labs, kit, run.overlay, students)
            run.finished = now()
            return run
        found_gpus = gpu.devices()
        run.gpu = found_gpus[0].as_dict() if found_gpus else None
        if found_gpus:
            gpu_load_sampler = gpu_load.Sampler(origin, found_gpus[0].uuid, gpu_load.INTERVAL_S).start()
        lock = gpu_lock.for_devices(options.config.grader, found_gpus)
        # Correctness first, several labs at once (tests and the sanitizer may share the
        # GPU), and the bench of each lab whose tests passed set up meanwhile; then, once
        # every lab's tests are over and every bench is set up, in course order, each
        # lab's timing alone on the GPU, and its score. Other graders on this GPU likewise
        # (gpu_lock.py): this run's tests hold the GPU's lock SHARED, each lab's timing
        # EXCLUSIVE (finish_lab), never both at once.
        with lock.shared(on_wait=lambda: progress.note(WAITING_FOR_TIMING)) as hold:
            if hold.missed:
                run.notes.append(f"the tests did not wait for other graders' timing on this GPU: {hold.missed}")
            if hold.waited_s >= 1:
                run.seconds["gpu_wait"] = round(hold.waited_s, 2)
            try:
                prestarter = Prestarter(options, prestart_slots(options, len(labs)), timing.run_bench)
                tested = test_labs(options, labs, kit, students, run.overlay, prestarter, manifests)
                if len(labs) > 1:
                    progress.note(f"testing {len(labs)} labs, up to {parallel_labs(options)} at a time; then timing "
                                  "each alone on the GPU...")
                concurrent.futures.wait(tested.values())
                prestarter.wait_ready(options.config.grader["bench_timeout_s"])
            except KeyboardInterrupt:
                proc.cancel_all()  # the tests end before the lock lets another grader time
                raise
        phase_done("tests")
        save_lab_seconds(options, [future.result()[0] for future in tested.values() if not future.exception()])
        for index, lab in enumerate(labs, 1):
            progress.lab_started(index, len(labs), lab)
            result, stages = tested[lab].result()
            for text in stages:
                progress.stage(text)
            context = LabContext(options, lab, kit, students.get(lab), run.overlay, progress.stage,
                                 manifests.get(lab), pending=prestarter.take(lab))
            result = finish_lab(context, result, lock)
            run.labs.append(result)
            progress.lab_finished(result)
            _checkpoint(run, checkpoint)
        phase_done("timing")
    except KeyboardInterrupt:
        run.interrupted = True
        proc.cancel_all()  # what the labs being tested side by side had started
    finally:
        if prestarter is not None:
            prestarter.cancel_all()  # benches of labs that were not timed after all
        run.cpu_busy = load.stop()
        run.gpu_busy = gpu_load_sampler.stop() if gpu_load_sampler is not None else None
    run.finished = now()
    return run


def _take_files(run: GradingRun, labs: list[str], progress: Progress, manifests: dict) -> bool:
    """The submission's editable files, copied into the run's work folder (run.overlay);
    False after failing every lab when they cannot be taken."""
    options = run.options
    source = options.submission or options.root
    if options.submission is not None:
        progress.note(f"taking the editable files of {options.submission} (the pristine kit: {options.root})...")
    try:
        run.overlay = overlay.prepare(
            options.root, source, options.work_dir, list(manifests),
            lambda lab: options.config.lab(lab).editable, exclude=[options.build_dir],
            optional_of=lambda lab: m.optional_files if (m := manifests.get(lab)) else [])
    except (overlay.OverlayError, OSError) as exc:
        _fail_all(run, labs, progress, f"cannot take the submission's files: {exc}")
        return False
    if run.overlay.note():
        run.notes.append(run.overlay.note())  # printed with the failure details
    return True


def _build(run: GradingRun, labs: list[str], progress: Progress) -> tuple[KitBuild, dict[str, build.StudentBuild]]:
    """What the plan builds: the kit's part and the submission's files, or the submission's
    builds of an earlier --build-only run, or nothing (--no-build)."""
    options, plan = run.options, run.options.plan
    kit = KitBuild()
    students: dict[str, build.StudentBuild] = {}
    if plan.load_students:
        students = building.load_students(options, labs)
    elif plan.build_kit:
        kit = building.build_kit(options, labs, progress)
        if plan.build_students:
            students = building.build_students(options, labs, kit, run.overlay, progress, run.notes)
    return kit, students


def test_labs(options: Options, labs: list[str], kit: KitBuild, students: dict[str, build.StudentBuild],
              taken: overlay.Overlay, prestarter: Prestarter | None = None,
              manifests: dict | None = None,
              ) -> dict[str, concurrent.futures.Future[tuple[LabResult, list[str]]]]:
    """Phase one of every lab (test_lab), `parallel_labs` at a time, the longest first; the
    results by lab. A lab whose tests passed has its bench set up right away (prestarter)."""

    def one(lab: str) -> tuple[LabResult, list[str]]:
        stages: list[str] = []
        try:
            if lab in taken.missing and not options.plan.solution:
                return fail(blank(options, lab, status.PASS), status.MISSING, taken.missing[lab]), stages
            # A lab whose tests passed sets its bench up at once, beside its sanitizer run.
            passed = ((lambda tested: prestarter.start(tested, required_steps((manifests or {}).get(lab))))
                      if prestarter is not None else None)
            return test_lab(options, lab, kit, students.get(lab), taken, stages.append, passed), stages
        except Exception as exc:  # a grader bug must cost one lab, not the report
            return grader_failed(options, lab, exc), stages

    return side_by_side(options, labs, one)


def test_lab(options: Options, lab: str, kit: KitBuild, student: build.StudentBuild | None,
             taken: overlay.Overlay, stage: Callable[[str], None],
             passed: Callable[[LabResult], None] | None = None) -> LabResult:
    """Phase one of a lab whose build is done: build -> check -> test -> sanitize. The result
    remembers the library under test for phase two (finish_lab). `passed` is called with it
    once its tests passed, before the sanitizer: the lab's bench may set up meanwhile (the
    sanitizer never changes the lab's status; its findings cost points when it is scored)."""
    context = LabContext(options, lab, kit, student, taken, stage)
    result = blank(options, lab, status.PASS)
    for step in (building.run, checking.run, testing.run):
        if not step(context, result):
            return result
    if result.status is status.PASS:
        result.implementation = context.implementation
        if passed is not None:
            passed(result)
    sanitizing.run(context, result)
    return result


WAITING_FOR_TIMING = "waiting for another grader's timing on this GPU to end (graders sharing a GPU take turns)..."
WAITING_FOR_GPU = "waiting for the GPU: another grader on it is testing or timing"


def finish_lab(context: LabContext, result: LabResult,
               lock: gpu_lock.GpuLock | gpu_lock.NoLock | None = None) -> LabResult:
    """Phase two of a lab, in its turn alone on the GPU: time -> score. Where the lab is timed
    or profiled, other graders on the GPU wait meanwhile (`lock` held EXCLUSIVE). A grader
    bug costs this lab alone (ERROR)."""
    lock = lock or gpu_lock.NoLock()
    try:
        graded = result.status not in (status.ERROR, status.MISSING)
        alone = lock.exclusive(on_wait=lambda: context.stage(WAITING_FOR_GPU)) if _uses_gpu_alone(context, result) \
            else contextlib.nullcontext(None)
        with alone as hold:
            if hold is not None and hold.waited_s >= 1:
                result.seconds["gpu_wait"] = round(hold.waited_s, 2)
            if result.status is not status.ERROR:
                timing.run(context, result)
            scoring.run(context, result, check_rules=graded)
        if hold is not None and hold.missed:
            result.notes.append(gpu_lock.alone_note(hold, timed=result.bench_runs > 0))
            if result.bench_runs:
                result.performance.flags.append(gpu_lock.SHARED_GPU_FLAG)
    except Exception as exc:  # a grader bug must cost one lab, not the report
        result = grader_failed(context.options, context.lab, exc)
    return result


def _uses_gpu_alone(context: LabContext, result: LabResult) -> bool:
    """Whether phase two of the lab runs on the GPU: its bench is timed (stages/timing.run), or
    the kernels its profiler questions name are profiled (stages/scoring.take_profile)."""
    timed = context.plan.bench and result.status is status.PASS and result.implementation is not None
    profiled = (result.status is not status.ERROR and context.settings.answers and context.settings.profile_answers
                and context.manifest is not None
                and any(q.check == "profile" and q.candidate for q in context.manifest.questions))
    return bool(timed or profiled)


def present_labs(root) -> list[str]:
    """The labs of the kit at `root` (those with a manifest, labs/<lab>/lab.json), in course order."""
    return list(kit_manifests(root))


def _fail_all(run: GradingRun, labs: list[str], progress: Progress, message: str) -> GradingRun:
    """Every lab ERROR with `message` (the run cannot start)."""
    progress.note(message)
    for lab in labs:
        run.labs.append(fail(blank(run.options, lab, status.ERROR), status.ERROR, message))
    run.finished = now()
    return run


def _checkpoint(run: GradingRun, checkpoint: Callable[[GradingRun], None] | None) -> None:
    if checkpoint is None:
        return
    try:
        checkpoint(run)
    except Exception:  # a failed interim report must not stop the grading
        pass
