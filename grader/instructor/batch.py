"""Grade a class: `python3 -m grader batch ROSTER --out DIR` writes DIR/gradebook.csv.

ROSTER is a CSV file whose header names the columns `student` and `path`; `path` is a
local clone of the student's repository (relative paths are relative to the roster's
folder).

There must be a GPU: without one, batch stops at once (exit 3) before building anything,
unless --allow-no-gpu (each lab that builds is then NO_GPU, e.g. to check a roster or the
builds on a CPU machine).

The class shares one build of the pristine kit (DIR/work/_kit: its judge programs,
workers and references, built once); a submission costs only its own files' compiles.
Those run on the cores the graders do not use, ahead of the GPUs, while they grade the
students before: up to two students per GPU and one more at a time (each with a core per
lab), and up to that many plus two per GPU compiling or compiled and not yet graded. Each
GPU grades, among the students whose compile has ended, the one with the most labs built
(the longest to grade, so that quick ones fill the end of the run): for each student,

    python3 -m grader --submission PATH --pristine PRISTINE --build-dir DIR/work/_kit
                      --student-dir DIR/work/STUDENT --build-only [lab ...]
    python3 -m grader --submission PATH --pristine PRISTINE --build-dir DIR/work/_kit
                      --student-dir DIR/work/STUDENT --prebuilt --json DIR/reports/STUDENT.json [lab ...]

so only the student-editable files come from the submission and the grader draws a
hidden seed, recorded in the report. With several GPUs, one grading job runs per GPU
(CUDA_VISIBLE_DEVICES names it); a bench always runs alone on its GPU. --jobs above the
number of GPUs is safe too: the jobs share the GPUs round-robin, and graders that share a
GPU take turns for timing (grader/gpu_lock.py: one's tests may run beside another's tests,
never beside its timing), so a timing never shares the GPU with another student's work. It
gains where the tests, the sanitizer and the compiles leave the GPU idle; each student's
--timeout then includes the waits for the other jobs' timing. The compiles check the shared kit build before compiling (a Ninja
run): one at a time does that part, the compiles themselves run side by side.

    DIR/gradebook.csv           student, total, max, points per lab, status, seed
    DIR/class.html              the class at a glance, from the same reports (dashboard.py; also with --collect)
    DIR/grading-sheet.csv       the write-ups handed in, one row per student and lab, a column per rubric
                                item to fill in by hand; and the written answers, one row per student,
                                lab and question, with the answer's start and its points to fill in
                                (instructor/handgrades.py)
    DIR/reports/STUDENT.json    the grader's report (python3 -m grader report turns it into Markdown ...)
    DIR/logs/STUDENT.log        the grader's output
    DIR/status/STUDENT.json     how the grader process ended (read by --resume and --collect)
    DIR/profile-cache/          the profiler questions' figures of the kit's own kernels, taken once
                                per GPU for the class (--profile-cache, grader/profile_cache.py)
    DIR/timing.json             the last run's wall time, the kit's build, the compiles (seconds per
                                student), and per GPU its busy time and its idle time: waiting for a
                                compile (the compiles did not keep up) or at the end (no student left)

--hand-grades FILE (the grading sheet, filled in) adds the write-ups' and written answers'
hand-graded points to the gradebook's totals, with --collect or a grading run; a sheet with an error is refused before
anything is graded.

--resume skips students whose report is complete. --slurm FILE writes a Slurm job array
(one task per roster row) instead of grading; --collect then assembles the gradebook.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import json
import os
import queue
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader import build, commandline, gpu, manifest, proc
from grader import layout as kit_layout
from grader.instructor import class_outputs, handgrades, slurm
from grader.instructor.cores import ahead_limit, build_slots, split_cores
from grader.instructor.gpu_use import GpuUse, compile_line, gpu_lines
from grader.instructor.gradebook import (Entry, Layout, RosterError, complete_report, progress_line,
                                         read_json, read_roster, _graded)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
KIT_ROOT = Path(__file__).resolve().parents[2]
GRADER_ENV = "LABKIT_BATCH_GRADER"  # a command replacing `python3 -m grader` (tests, wrappers)
DEFAULT_TIMEOUT_S = 3600
GRACE_S = 30  # after SIGINT, the grader writes its partial report and ends its children
# What the grader prints (stages/building.build_students) once a --build-only run is past the shared
# kit build (configure check, Ninja, the compile jail's trial) and compiles the
# submission's own files: from then on the next student's compile may start beside it.
KIT_READY_MARKER = "compiling the student files of"


# --- GPUs --------------------------------------------------------------------------------

def gpu_ids(spec: str = "auto") -> list[str]:
    """The GPUs to spread jobs over: CUDA_VISIBLE_DEVICES when set (a Slurm allocation),
    else the devices nvidia-smi lists (gpu.devices); [] when there is none to name."""
    if spec != "auto":
        if spec.strip().isdigit():  # a count; a list has a comma ("0,2", or "3," for GPU 3 alone)
            return [str(i) for i in range(int(spec))]
        return [one.strip() for one in spec.split(",") if one.strip()]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
    if visible:
        return [one.strip() for one in visible.split(",") if one.strip()]
    return [device.index for device in gpu.devices()]


def unknown_gpus(wanted: list[str]) -> list[str]:
    """The GPU indices in `wanted` that nvidia-smi does not list ([] when it lists none, or
    when CUDA_VISIBLE_DEVICES already narrows what it shows)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", "").strip():
        return []
    listed = {device.index for device in gpu.devices()}
    return [one for one in wanted if one.isdigit() and listed and one not in listed]


def no_gpu_message(why: str) -> str:
    """What batch says, before building anything, on a machine without a usable GPU."""
    return (f"grader batch: error: no usable GPU: {why}. Nothing was built and no one was graded. "
            "--allow-no-gpu builds and grades anyway (every lab that builds is then NO_GPU), e.g. to check a "
            "roster or the students' builds on a CPU machine; --slurm only writes a job script and needs no GPU "
            "here.")


# --- grading one student --------------------------------------------------------------------

def grader_command() -> list[str]:
    custom = os.environ.get(GRADER_ENV)
    return shlex.split(custom) if custom else [sys.executable, "-m", "grader"]


def grade_one(entry: Entry, layout: Layout, *, pristine: Path, labs: list[str], timeout: float,
              gpu: str | None, build_jobs: int | None, keep_work: bool, stop: threading.Event,
              grader_args: list[str] = (), phase: str = "all", cores: set[int] | None = None,
              kit_lock: threading.Lock | None = None) -> dict[str, Any]:
    """Run the grader on one submission; returns (and saves) how the process ended.

    `phase`: "all" (one process that builds and grades, in a build folder of the student's
    own), "build" (compile the submission's files, in the class's shared build), or
    "grade" (grade what "build" compiled). `cores` pins the process and its children.
    `kit_lock` (phase "build"): held from the start until the grader says it compiles the
    submission's own files (KIT_READY_MARKER) or ends, so that one compile at a time runs
    Ninja in the shared kit build; the compiles themselves overlap."""
    status: dict[str, Any] = {"student": entry.student, "path": str(entry.path) if entry.path else None,
                              "gpu": gpu, "exit": None, "timed_out": False, "interrupted": False, "seconds": 0.0}
    if not entry.present:
        status["missing"] = True
        _save_status(layout, status)
        return status
    report = layout.report(entry.student)
    if phase != "build":
        report.unlink(missing_ok=True)  # a stale report must not pass for this run's
    for folder in (report.parent, layout.log(entry.student).parent):
        folder.mkdir(parents=True, exist_ok=True)
    command = _grader_call(entry, layout, pristine, labs, grader_args, phase)
    env = dict(os.environ)
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    if build_jobs:  # several graders compile at once: share the cores instead of oversubscribing them
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(build_jobs))
    status["command"] = proc.command_string(command, {"CUDA_VISIBLE_DEVICES": gpu} if gpu is not None else None)
    if kit_lock is not None:
        while not kit_lock.acquire(timeout=0.5):
            if stop.is_set():
                status["interrupted"] = True
                return status
    start = time.monotonic()
    status["started"] = start  # the monotonic clock: for the busy time of its GPU, not saved
    if not _run_grader(command, env, layout.log(entry.student), status, phase=phase, cores=cores,
                       kit_lock=kit_lock, stop=stop, timeout=timeout):
        _save_status(layout, status)
        return status
    status["ended"] = time.monotonic()
    status["seconds"] = round(status["ended"] - start, 1)
    if phase == "build":
        return status  # the grading phase saves the status
    if not keep_work and complete_report(report, labs or None):
        shutil.rmtree(layout.work(entry.student), ignore_errors=True)
    _save_status(layout, status)
    return status


def _grader_call(entry: Entry, layout: Layout, pristine: Path, labs: list[str], grader_args: list[str],
                 phase: str) -> list[str]:
    """The grader's command line for one student and phase (grade_one)."""
    report = layout.report(entry.student)
    command = [*grader_command(), "--submission", str(entry.path), "--pristine", str(pristine)]
    if phase == "all":
        command += ["--build-dir", str(layout.work(entry.student)), "--json", str(report)]
    else:
        command += ["--build-dir", str(layout.kit_build), "--student-dir", str(layout.work(entry.student))]
        command += ["--build-only"] if phase == "build" else ["--prebuilt", "--json", str(report)]
    if phase != "build":  # the class's profiler figures: taken once per GPU, not once per student
        command += ["--profile-cache", str(layout.profile_cache)]
    return [*command, *grader_args, *labs]


def _run_grader(command: list[str], env: dict[str, str], log_path: Path, status: dict[str, Any], *, phase: str,
                cores: set[int] | None, kit_lock: threading.Lock | None, stop: threading.Event,
                timeout: float) -> bool:
    """Runs the grader process, its output into the log, until it ends, times out or `stop`
    (status: exit, timed_out, interrupted); releases `kit_lock` once the grader says the kit
    is ready. False when it could not start (status: error)."""
    locked = kit_lock is not None
    start = status["started"]
    with log_path.open("w" if phase != "grade" else "a") as log:
        log.write(f"$ {status['command']}\n")
        log.flush()
        log_start = log.tell()

        def pin() -> None:
            if cores:
                os.sched_setaffinity(0, cores)
            if phase == "build":
                os.nice(10)  # compiles yield to the graders where they share a core

        try:
            try:
                child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         cwd=KIT_ROOT, env=env, start_new_session=True,
                                         preexec_fn=pin if (cores or phase == "build") else None)
            except OSError as exc:
                log.write(f"cannot start the grader: {exc}\n")
                status["exit"], status["error"] = None, f"cannot start the grader ({exc.strerror or exc})"
                return False
            while True:
                try:
                    status["exit"] = child.wait(timeout=0.2 if locked else 0.5)
                    break
                except subprocess.TimeoutExpired:
                    if stop.is_set() or time.monotonic() - start > timeout:
                        status["timed_out" if not stop.is_set() else "interrupted"] = True
                        status["exit"] = _stop(child)
                        break
                    if locked and _says(log_path, log_start, KIT_READY_MARKER):
                        kit_lock.release()
                        locked = False
        finally:
            if locked:
                kit_lock.release()
    return True


def _says(log: Path, offset: int, text: str) -> bool:
    """Whether the log, from byte `offset` on, holds `text`."""
    try:
        with log.open("rb") as stream:
            stream.seek(offset)
            return text.encode() in stream.read()
    except OSError:
        return False


def _stop(child: subprocess.Popen) -> int | None:
    """SIGINT first: the grader then kills its running program and writes a partial
    report; SIGKILL to the group if it has not ended after GRACE_S."""
    for sig, wait in ((signal.SIGINT, GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(child.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            return child.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return child.returncode


def _save_status(layout: Layout, status: dict[str, Any]) -> None:
    path = layout.status(status["student"])
    path.parent.mkdir(parents=True, exist_ok=True)
    status["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    tmp = path.with_name(path.name + ".tmp")
    saved = {key: value for key, value in status.items() if key not in ("started", "ended")}
    tmp.write_text(json.dumps(saved, indent=2) + "\n")
    os.replace(tmp, path)


# --- command line -------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="batch",
        prog="python3 -m grader batch",
        description="Grade many local submissions with the pristine kit and hidden seeds into a gradebook "
                    "(DIR/gradebook.csv) and per-student reports (DIR/reports/).",
        epilog="ROSTER: a CSV file with the header `student,path` (path: a clone of the student's repository; "
               "relative to the roster's folder). Exit status: 0 every submission graded; 1 some grader "
               "failed or timed out; 2 bad usage or roster; 3 no usable GPU (said before anything is built; "
               "--allow-no-gpu grades anyway); 130 interrupted (the gradebook holds what was done).")
    parser.add_argument("roster", type=Path, help="CSV file with the columns student,path")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR", help="where the gradebook, reports and logs go")
    parser.add_argument("--pristine", type=Path, metavar="DIR",
                        help="the kit to build each submission in; only student-editable files come from the "
                             "submission (default: $LABKIT_PRISTINE, else this kit)")
    parser.add_argument("--secret-file", type=Path, metavar="FILE",
                        help="passed to the grader: derive each hidden seed from this instructor secret and the "
                             "submission, so a regrade of the same submission gets the same seed")
    parser.add_argument("--grader-arg", action="append", default=[], metavar="ARG",
                        help="an extra argument for every grader run, e.g. --grader-arg=--no-sanitizer (repeatable)")
    parser.add_argument("--labs", nargs="+", metavar="LAB", help="labs to grade (default: every lab the grader finds)")
    parallel = parser.add_mutually_exclusive_group()
    parallel.add_argument("--jobs", type=int, metavar="N",
                          help="students graded at once (default: one per GPU); more jobs than GPUs share the GPUs "
                               "round-robin, and graders sharing a GPU take turns for timing (its timings stay alone "
                               "on it; each student's --timeout includes the waits)")
    parallel.add_argument("--gpus", default="auto", metavar="auto|N|LIST",
                          help="GPUs to use, one job each: auto (CUDA_VISIBLE_DEVICES, else every GPU nvidia-smi "
                               "lists), a count N (GPUs 0 to N-1), or a list such as 0,2 (GPU 2 alone: 2,) "
                               "(default: auto)")
    parser.add_argument("--allow-no-gpu", action="store_true",
                        help="grade even where no GPU is found (passed on to each student's grading: every lab "
                             "that builds is then NO_GPU), e.g. to check a roster or the builds on a CPU machine; "
                             "without it batch stops at once with exit status 3")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                        help=f"seconds per student before the grader is stopped (default: {DEFAULT_TIMEOUT_S})")
    parser.add_argument("--resume", action="store_true", help="skip students whose report is already complete")
    parser.add_argument("--keep-work", action="store_true",
                        help="keep each student's build folder DIR/work/STUDENT (default: deleted once graded)")
    parser.add_argument("--slurm", type=Path, metavar="FILE",
                        help="write a Slurm job-array script (one task per student) instead of grading")
    parser.add_argument("--sbatch", action="append", default=[], metavar="OPTION",
                        help="an extra #SBATCH line for --slurm, e.g. --sbatch=--partition=gpu (repeatable)")
    parser.add_argument("--collect", action="store_true",
                        help="grade nothing: assemble the gradebook from DIR (after the Slurm array)")
    parser.add_argument("--hand-grades", type=Path, metavar="FILE",
                        help=f"the grading sheet ({handgrades.SHEET_NAME}) with the write-ups' and written "
                             "answers' points filled in: "
                             "added to the gradebook's totals (with --collect, or after grading)")
    parser.add_argument("--task", type=int, metavar="INDEX", help=argparse.SUPPRESS)  # one roster row (Slurm)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader batch`; returns the exit status."""
    parsed = _parse(argv)
    if isinstance(parsed, int):
        return parsed
    args, labs, entries = parsed
    out = args.out.resolve()
    pristine = (args.pristine or Path(os.environ.get("LABKIT_PRISTINE") or KIT_ROOT)).resolve()
    if args.secret_file:
        if not args.secret_file.is_file():
            print(f"grader batch: error: --secret-file {args.secret_file} not found", file=sys.stderr)
            return EXIT_USAGE
        args.grader_arg = ["--secret-file", str(args.secret_file.resolve()), *args.grader_arg]
    if not (pristine / "labs").is_dir():
        print(f"grader batch: error: --pristine {pristine} is not a kit (it has no labs/ folder)", file=sys.stderr)
        return EXIT_USAGE
    course = _kit_labs(pristine)
    try:
        labs = _labs(labs, course)
    except SystemExit as exc:
        print(exc.code, file=sys.stderr)
        return EXIT_USAGE
    layout = Layout(out)
    rubrics = class_outputs.rubrics(pristine)
    try:
        grades = handgrades.read_sheet(args.hand_grades.resolve(), entries, rubrics,
                                       class_outputs.manual_questions(pristine)) if args.hand_grades else None
    except handgrades.HandGradeError as exc:
        print(f"grader batch: error: the grading sheet cannot be used (nothing was graded or written):\n  {exc}",
              file=sys.stderr)
        return EXIT_USAGE
    args.hand = grades
    if args.slurm:
        return slurm.write_slurm(args, len(entries), out, pristine, labs, grader=grader_command(), kit_root=KIT_ROOT)
    if args.collect:
        return class_outputs.finish(entries, layout, labs, course, rubrics, args)
    if args.task is not None and not 0 <= args.task < len(entries):
        print(f"grader batch: error: --task {args.task} is outside the roster's rows 0-{len(entries) - 1}",
              file=sys.stderr)
        return EXIT_USAGE
    refused = _preflight(args, pristine, layout, labs)
    if refused is not None:
        return refused
    args.grader_arg = with_instructor_feedback(args.grader_arg)
    if args.task is not None:
        entry = entries[args.task]
        status = grade_one(entry, layout, pristine=pristine, labs=labs, timeout=args.timeout, gpu=None,
                           build_jobs=None, keep_work=args.keep_work, stop=threading.Event(),
                           grader_args=args.grader_arg)
        print(progress_line(1, 1, entry, status, layout, labs))
        return EXIT_OK if _graded(entry, layout, labs) else EXIT_FAILED
    return run_batch(entries, layout, args, labs, pristine)


def _parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str], list[Entry]] | int:
    """The command line and the roster, checked; or the exit status after saying what is wrong."""
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
        if args.timeout <= 0:
            raise SystemExit("grader batch: error: --timeout must be a positive number of seconds")
        if args.jobs is not None and args.jobs < 1:
            raise SystemExit("grader batch: error: --jobs must be at least 1")
        if args.gpus != "auto" and not gpu_ids(args.gpus):
            raise SystemExit(f"grader batch: error: --gpus {args.gpus} names no GPU: give a count (1 for GPU 0) or "
                             "a list of indices with a comma (0,2; GPU 2 alone: 2,)")
        entries = read_roster(args.roster.resolve())
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return EXIT_USAGE
        return int(exc.code or 0)
    except RosterError as exc:
        print(f"grader batch: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    return args, args.labs or [], entries


def _preflight(args: argparse.Namespace, pristine: Path, layout: Layout, labs: list[str]) -> int | None:
    """Before grading: a machine without a usable GPU, a --gpus it lacks, or GPUs the build
    cannot run on are told so now, not after the builds (the exit status); None: go on."""
    if args.allow_no_gpu:
        args.grader_arg = [*args.grader_arg, "--allow-no-gpu"]
    else:
        found = gpu.probe()
        if not found.ok:
            print(no_gpu_message(found.why), file=sys.stderr)
            return EXIT_NO_GPU
    if args.gpus != "auto" and (missing := unknown_gpus(gpu_ids(args.gpus))):
        print(f"grader batch: error: --gpus {args.gpus}: nvidia-smi lists no GPU {', '.join(missing)} on this "
              "machine (`nvidia-smi -L` lists those there are)", file=sys.stderr)
        return EXIT_USAGE
    try:
        problems = [] if args.allow_no_gpu else architecture_problems(pristine, layout, labs, args)
    except ValueError as exc:  # a --cuda-arch among the grader's arguments that CMake would not take
        print(f"grader batch: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if problems:
        for line in problems:
            print(f"grader batch: error: {line} Nothing was built or graded.", file=sys.stderr)
        return EXIT_NO_GPU
    return None


def _grader_option(grader_args: list[str], name: str) -> str | None:
    """The value of `name` among the grader's own arguments (`--name V` or `--name=V`), the last one given."""
    found = None
    for i, arg in enumerate(grader_args):
        if arg == name and i + 1 < len(grader_args):
            found = grader_args[i + 1]
        elif arg.startswith(name + "="):
            found = arg.split("=", 1)[1]
    return found


def architecture_problems(pristine: Path, layout: Layout, labs: list[str], args: argparse.Namespace) -> list[str]:
    """Why the GPUs this batch grades on cannot run the kit's build or the reference package
    ([] when they can): said once, before the kit is built, instead of once per student.
    ValueError for a --cuda-arch among the grader's arguments that is no architecture."""
    from grader import arch  # the grader's own check before each grading run (grader/arch.py)

    wanted = set(gpu_ids(args.gpus)) if args.gpus != "auto" else None
    devices = [d for d in gpu.devices() if wanted is None or d.index in wanted]
    cuda_arch = _grader_option(args.grader_arg, "--cuda-arch")
    cuda_arch = arch.parse_cuda_arch(cuda_arch) if cuda_arch else None  # ValueError: the caller's usage error
    reference = _grader_option(args.grader_arg, "--reference") or os.environ.get("LABKIT_REFERENCE_DIR")
    timed = labs or _kit_labs(pristine)
    verdict = arch.for_grading(root=pristine, build_dir=layout.kit_build, mode=arch.BUILD, cuda_arch=cuda_arch,
                               reference_dir=Path(reference) if reference else None,
                               labs=[] if "--skip-bench" in args.grader_arg else timed, devices=devices)
    return [line.replace("pass --cuda-arch ", "pass --grader-arg=--cuda-arch=") for line in verdict.errors]


def with_instructor_feedback(grader_args: list[str]) -> list[str]:
    """`grader_args` and, where this kit's grader has the option and the instructor gave none,
    `--answer-feedback figures`: the instructor's reports show the figures behind each answer."""
    if any(arg == "--answer-feedback" or arg.startswith("--answer-feedback=") for arg in grader_args):
        return grader_args
    return [*grader_args, "--answer-feedback", "figures"] if grader_has_option("--answer-feedback") else grader_args


def grader_has_option(option: str) -> bool:
    """Whether `python3 -m grader` (this kit's grader/cli.py) accepts `option`."""
    try:
        from grader import cli
        return option in cli.build_parser().format_usage().replace("[", " ").replace("]", " ").split()
    except Exception:  # an older or broken cli: pass nothing it may not know
        return False


def prepare_kit(layout: Layout, pristine: Path, labs: list[str], timeout: float, grader_args: list[str]) -> bool:
    """Builds the pristine kit's part once for the class (judge programs, workers, references)."""
    log = layout.out / "logs" / "_kit.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [*grader_command(), "--root", str(pristine), "--build-dir", str(layout.kit_build), "--build-only",
               "--student-dir", str(layout.out / "work" / "_pristine"),
               *[a for a in grader_args if a.startswith("--cuda-arch")], *labs]
    print("building the pristine kit's part once for the class (judge programs, workers, references)...",
          flush=True)
    with log.open("w") as out:
        out.write(f"$ {proc.command_string(command)}\n")
        out.flush()
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  cwd=KIT_ROOT, timeout=timeout)
        except subprocess.TimeoutExpired:
            print(f"  the kit's build took longer than {timeout:g} s: see {log}", flush=True)
            return False
    # Exit 1 means only that some skeleton did not build; the kit's part is what counts here.
    ok = done.returncode in (0, 1) and (layout.kit_build / kit_layout.CMAKE_CACHE).is_file()
    if not ok:
        print(f"  the kit's build failed: see {log}", flush=True)
    return ok


def run_batch(entries: list[Entry], layout: Layout, args: argparse.Namespace, labs: list[str], pristine: Path) -> int:
    """Grades the roster's students (compiles ahead, one grading job per GPU slot); the exit status."""
    return BatchRun(entries, layout, args, labs, pristine).run()


def labs_built(student_dir: Path, labs: list[str]) -> int:
    """How many of `labs` a student's compile built (the records the build phase leaves in
    its --student-dir, which --prebuilt grades from): the work its grading will take, roughly."""
    return sum(1 for lab in labs if (record := build.StudentBuild.load(student_dir / lab)) is not None and record.ok)


class BatchRun:
    """One batch over the class: the compiles run ahead of the graders, `builders` students at
    a time, on their own cores; each runs Ninja in the shared kit build under kit_lock, then
    compiles beside the others. A compiled student goes to `ready`; each grading job takes the
    one there with the most labs built (the longest to grade; among equals, the first
    compiled), so no GPU waits for one compile while another student is ready, and the short
    gradings (files that did not compile) fill the end of the run instead of a long one
    running alone on one GPU. `ahead` bounds the students compiling or compiled and not taken yet."""

    def __init__(self, entries: list[Entry], layout: Layout, args: argparse.Namespace, labs: list[str],
                 pristine: Path) -> None:
        self.entries, self.layout, self.args, self.labs, self.pristine = entries, layout, args, labs, pristine
        self.gpus = gpu_ids(args.gpus)
        self.jobs = args.jobs or max(1, len(self.gpus))
        lab_count = len(labs or _kit_labs(pristine)) or 1
        # Each grading job on cores of its own, beside its GPU where the machine says which.
        self.job_cores, self.build_cores = split_cores(self.jobs, lab_count, self.gpus)
        self.grade_cores = set().union(*self.job_cores) if self.job_cores else None
        self.builders = build_slots(self.jobs, lab_count, self.build_cores)
        self.todo: list[Entry] = []
        self.done = 0
        self.stop = threading.Event()
        self.interrupted = False
        # (-labs built, order of arrival, entry, the build's status, whether it holds a place ahead)
        self.ready: queue.PriorityQueue[tuple[int, int, Entry, dict[str, Any], bool]] = queue.PriorityQueue()
        self.arrivals = itertools.count()
        self.ahead = threading.Semaphore(ahead_limit(self.jobs, self.builders))
        self.kit_lock = threading.Lock()
        self.compiles: list[tuple[float, float]] = []  # (seconds, waited for the kit's check); append is atomic
        self.use = GpuUse(list(dict.fromkeys(self.gpus)) if self.gpus else [None])
        self.unclaimed = 0  # students no job has claimed yet
        self.claim_lock = threading.Lock()
        self.results: queue.Queue[tuple[Entry, dict[str, Any]]] = queue.Queue()

    def run(self) -> int:
        self._announce()
        self._resume()
        wall0 = time.monotonic()
        prepare_kit(self.layout, self.pristine, self.labs, self.args.timeout, self.args.grader_arg)
        kit_s = time.monotonic() - wall0
        print(f"  the kit's part took {kit_s:.0f} s", flush=True)
        self._grade_all()
        self._timing(wall0, kit_s, time.monotonic())
        course = _kit_labs(self.pristine)
        code = class_outputs.finish(self.entries, self.layout, self.labs, course,
                                    class_outputs.rubrics(self.pristine), self.args)
        return EXIT_INTERRUPTED if self.interrupted else code

    def _announce(self) -> None:
        gpus, builders = self.gpus, self.builders
        where = (f"GPU{'s' * (len(gpus) != 1)} {','.join(gpus)}" if gpus
                 else "no GPU (--allow-no-gpu: every lab that builds is NO_GPU)")
        cores = (f"; cores: {len(self.grade_cores)} for the graders, {len(self.build_cores)} for the compiles"
                 if self.grade_cores else "")
        turns = ("; graders sharing a GPU take turns for timing" if gpus and self.jobs > len(set(gpus)) else "")
        print(f"grading {len(self.entries)} students, {self.jobs} at a time on {where}, the compiles of {builders} "
              f"student{'s' * (builders != 1)} at a time ahead of them{cores}{turns}; output in {self.layout.out}",
              flush=True)

    def _resume(self) -> None:
        """With --resume, the students whose report is complete are counted done, not graded."""
        layout, labs = self.layout, self.labs
        for entry in self.entries:
            if self.args.resume and entry.present and complete_report(layout.report(entry.student), labs or None):
                self.done += 1
                print(progress_line(self.done, len(self.entries), entry,
                                    read_json(layout.status(entry.student)) or {}, layout, labs, resumed=True),
                      flush=True)
            else:
                self.todo.append(entry)

    def _build(self, entry: Entry) -> None:
        """Compiles one student's files (phase "build"), when a place ahead is free."""
        compiled: dict[str, Any] = {"skipped": True}
        held = False
        try:
            if not entry.present:
                return  # nothing to compile: its grading says it is missing
            while not (held := self.ahead.acquire(timeout=0.5)):
                if self.stop.is_set():
                    return
            if self.stop.is_set():
                return
            asked = time.monotonic()
            compiled = grade_one(entry, self.layout, pristine=self.pristine, labs=self.labs,
                                 timeout=self.args.timeout, gpu=None, build_jobs=None, keep_work=True,
                                 stop=self.stop, grader_args=self.args.grader_arg, phase="build",
                                 cores=self.build_cores, kit_lock=self.kit_lock)
            if "started" in compiled:
                self.compiles.append((compiled.get("seconds", 0.0), compiled["started"] - asked))
        finally:
            # Always one per student: each job waits for the one it claimed.
            built = (labs_built(self.layout.work(entry.student), self.labs or _kit_labs(self.pristine))
                     if "started" in compiled else 0)
            self.ready.put((-built, next(self.arrivals), entry, compiled, held))

    def _job(self, one: str | None, cores: set[int] | None = None) -> None:
        """Grades on GPU `one` (CUDA_VISIBLE_DEVICES), on `cores`, the next compiled student,
        until none is left."""
        while not self.stop.is_set():
            with self.claim_lock:
                if self.unclaimed == 0:
                    return  # from here on this job has nothing to grade: its GPU is idle at the end
                self.unclaimed -= 1
            waiting = time.monotonic()
            _, _, entry, compiled, held = self.ready.get()  # every claim gets one: each build puts one
            self.use.add_wait(one, waiting, time.monotonic())
            if held:
                self.ahead.release()
            if self.stop.is_set():
                self.results.put((entry, {"student": entry.student, "skipped": True}))
                continue
            # Its files are compiled (or failed to: the grading says so).
            status = grade_one(entry, self.layout, pristine=self.pristine, labs=self.labs, timeout=self.args.timeout,
                               gpu=one, build_jobs=None, keep_work=self.args.keep_work, stop=self.stop,
                               grader_args=self.args.grader_arg, phase="grade", cores=cores)
            if "started" in status and "ended" in status:
                self.use.add(one, status["started"], status["ended"])
            self.results.put((entry, status))

    def _report(self, entry: Entry, status: dict[str, Any]) -> None:
        if not status.get("skipped"):
            self.done += 1
            print(progress_line(self.done, len(self.entries), entry, status, self.layout, self.labs), flush=True)

    def _grade_all(self) -> None:
        """The compiles and the grading jobs, until every student is graded or Ctrl-C."""
        builder = concurrent.futures.ThreadPoolExecutor(max_workers=self.builders)
        for entry in self.todo:
            builder.submit(self._build, entry)
        self.unclaimed = len(self.todo)
        gpus = self.gpus
        try:
            with concurrent.futures.ThreadPoolExecutor(max_workers=self.jobs) as pool:
                running = [pool.submit(self._job, gpus[k % len(gpus)] if gpus else None,
                                       self.job_cores[k] if self.job_cores else None) for k in range(self.jobs)]
                self._collect(running)
                for future in running:
                    future.result()  # a job's own failure (a bug) shows here
        finally:
            # Every student was taken (or the run stops): no compile is left to wait for. After a
            # job's failure this ends the compiles still running or waiting for their turn.
            self.stop.set()
            builder.shutdown(wait=True, cancel_futures=True)

    def _collect(self, running: list[concurrent.futures.Future]) -> None:
        """Prints each student's line as the jobs grade them; Ctrl-C stops the running graders."""
        while True:
            try:
                if all(future.done() for future in running) and self.results.empty():
                    break
                self._report(*self.results.get(timeout=1.0))
            except queue.Empty:
                continue
            except KeyboardInterrupt:
                if not self.interrupted:
                    print("\ninterrupted: stopping the running graders (their partial reports are kept)...",
                          flush=True)
                self.interrupted = True
                self.stop.set()

    def _timing(self, wall0: float, kit_s: float, end: float) -> None:
        """DIR/timing.json, and the summary of where the time went."""
        jobs, builders, labs = self.jobs, self.builders, self.labs
        wall = end - wall0
        per_gpu = self.use.summary(wall0 + kit_s, end)
        compiled_s = [seconds for seconds, _ in self.compiles]
        compile_info = {"students": len(compiled_s), "builders": builders, "ahead": ahead_limit(jobs, builders),
                        "cores": len(self.build_cores) if self.build_cores else None,
                        "per_student_s": round(sum(compiled_s) / len(compiled_s), 1) if compiled_s else 0.0,
                        "max_s": round(max(compiled_s, default=0.0), 1),
                        "kit_check_wait_s": round(sum(wait for _, wait in self.compiles), 1)}
        timing = {"students": len(self.todo), "labs": labs or _kit_labs(self.pristine), "jobs": jobs,
                  "gpus": self.gpus, "builders": builders,
                  "cores": {"graders": len(self.grade_cores) if self.grade_cores else None,
                            "compiles": len(self.build_cores) if self.build_cores else None},
                  "wall_s": round(wall, 1), "kit_s": round(kit_s, 1), "grading_s": round(wall - kit_s, 1),
                  "compile_s": round(sum(compiled_s), 1), "compiles": compile_info, "per_gpu": per_gpu,
                  "waited_s": round(sum(one["waited_s"] for one in per_gpu), 1),
                  "tail_s": round(sum(one["tail_s"] for one in per_gpu), 1), "interrupted": self.interrupted}
        _write_json(self.layout.timing, timing)
        if self.todo:
            self._print_timing(wall, kit_s, timing, compile_info)

    def _print_timing(self, wall: float, kit_s: float, timing: dict[str, Any], compile_info: dict[str, Any]) -> None:
        grading, count = timing["grading_s"], len(self.todo)
        print(f"{count} students in {wall:.0f} s: the kit's part {kit_s:.0f} s, then {grading:.0f} s grading "
              f"({grading / count:.1f} s per student)", flush=True)
        if compile_info["students"]:
            print(compile_line(compile_info), flush=True)
        if self.gpus:
            for line in gpu_lines(timing["per_gpu"]):
                print(line, flush=True)
            print("  (busy: a grader process held that GPU, from its start to its end: tests, sanitizer, bench and "
                  "the CPU work between them; waited: the GPU was free but its next student's files were still "
                  "compiling, the compiles did not keep up; idle at the end: no student was left for it while the "
                  "other GPUs graded their last ones)", flush=True)


def _kit_labs(pristine: Path) -> list[str]:
    """The labs of the pristine kit (what the grader grades when --labs names none)."""
    try:
        return manifest.names(pristine)
    except Exception:  # a broken lab.json: the grader reports it; here it only sizes the jobs
        return []


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def _labs(names: list[str] | None, known: list[str]) -> list[str]:
    """--labs in the spelling of `known` (the pristine kit's labs); SystemExit for one it lacks."""
    if not names:
        return []
    by_lower = {lab.lower(): lab for lab in known}
    unknown = [name for name in names if name.lower() not in by_lower]
    if unknown:
        raise SystemExit(f"grader batch: error: unknown lab {unknown[0]!r}: the labs are {', '.join(known)}")
    return [by_lower[name.lower()] for name in names]
