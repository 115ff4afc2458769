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
GPU grades the next student whose compile has ended, in the order they end: for each
student,

    python3 -m grader --submission PATH --pristine PRISTINE --build-dir DIR/work/_kit
                      --student-dir DIR/work/STUDENT --build-only [lab ...]
    python3 -m grader --submission PATH --pristine PRISTINE --build-dir DIR/work/_kit
                      --student-dir DIR/work/STUDENT --prebuilt --json DIR/reports/STUDENT.json [lab ...]

so only the student-editable files come from the submission and the grader draws a
hidden seed, recorded in the report. With several GPUs, one grading job runs per GPU
(CUDA_VISIBLE_DEVICES names it), so timings never share a device; a bench always runs
alone on its GPU. The compiles check the shared kit build before compiling (a Ninja
run): one at a time does that part, the compiles themselves run side by side.

    DIR/gradebook.csv           student, total, max, points per lab, status, seed
    DIR/reports/STUDENT.json    the grader's report (python3 -m grader report turns it into Markdown ...)
    DIR/logs/STUDENT.log        the grader's output
    DIR/status/STUDENT.json     how the grader process ended (read by --resume and --collect)
    DIR/timing.json             the last run's wall time, the kit's build, the compiles (seconds per
                                student), and per GPU its busy time and its idle time: waiting for a
                                compile (the compiles did not keep up) or at the end (no student left)

--resume skips students whose report is complete. --slurm FILE writes a Slurm job array
(one task per roster row) instead of grading; --collect then assembles the gradebook.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import io
import json
import os
import queue
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader import commandline, gpu, manifest, proc
from grader.report import REPORT_SCHEMA, Report, read

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
KIT_ROOT = Path(__file__).resolve().parents[2]
GRADER_ENV = "LABKIT_BATCH_GRADER"  # a command replacing `python3 -m grader` (tests, wrappers)
DEFAULT_TIMEOUT_S = 3600
GRACE_S = 30  # after SIGINT, the grader writes its partial report and ends its children
MISSING = "missing submission"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")  # becomes a file name
# What the grader prints (grade.build_students) once a --build-only run is past the shared
# kit build (configure check, Ninja, the compile jail's trial) and compiles the
# submission's own files: from then on the next student's compile may start beside it.
KIT_READY_MARKER = "compiling the student files of"


class RosterError(Exception):
    """The roster cannot be used; the message says where and what to do."""


@dataclass
class Entry:
    index: int  # 0-based row among the students (the Slurm array index)
    line: int  # line in the roster file
    student: str
    path: Path | None  # None: the roster gives no path

    @property
    def present(self) -> bool:
        return self.path is not None and self.path.is_dir()


def read_roster(path: Path) -> list[Entry]:
    """The roster's students, checked: header, names, duplicates (RosterError)."""
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet may write a byte-order mark
    except FileNotFoundError:
        raise RosterError(f"roster {path} not found: pass a CSV file with the header `student,path`") from None
    except OSError as exc:
        raise RosterError(f"cannot read the roster {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RosterError(f"roster {path} is not UTF-8 text: save it as CSV (UTF-8)") from None
    rows = list(csv.reader(io.StringIO(text)))
    header = [cell.strip().lower() for cell in rows[0]] if rows else []
    if "student" not in header or "path" not in header:
        found = ",".join(rows[0]) if rows else "an empty file"
        raise RosterError(f"{path}: the first line must be the header `student,path` (found: {found})")
    s_col, p_col = header.index("student"), header.index("path")
    entries: list[Entry] = []
    seen: dict[str, int] = {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row) or row[0].lstrip().startswith("#"):
            continue
        student = row[s_col].strip() if s_col < len(row) else ""
        raw = row[p_col].strip() if p_col < len(row) else ""
        if not student:
            raise RosterError(f"{path}:{line}: no student name")
        if not _SAFE_NAME.match(student):
            raise RosterError(f"{path}:{line}: student {student!r} cannot name a file: use letters, digits "
                              "and . _ - @ + (e.g. the GitHub user name)")
        if student.lower() in seen:
            raise RosterError(f"{path}:{line}: student {student!r} is listed twice (also on line "
                              f"{seen[student.lower()]}): keep one row per student")
        seen[student.lower()] = line
        where = None
        if raw:
            where = Path(raw).expanduser()
            where = (where if where.is_absolute() else path.parent / where).resolve()
        entries.append(Entry(len(entries), line, student, where))
    if not entries:
        raise RosterError(f"{path}: no student rows under the header")
    return entries


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

@dataclass
class Layout:
    out: Path

    def report(self, student: str) -> Path:
        return self.out / "reports" / f"{student}.json"

    def log(self, student: str) -> Path:
        return self.out / "logs" / f"{student}.log"

    def status(self, student: str) -> Path:
        return self.out / "status" / f"{student}.json"

    def work(self, student: str) -> Path:
        return self.out / "work" / student

    @property
    def kit_build(self) -> Path:
        """The build of the pristine kit the class shares."""
        return self.out / "work" / "_kit"

    @property
    def gradebook(self) -> Path:
        return self.out / "gradebook.csv"

    @property
    def timing(self) -> Path:
        """The last run's wall time, kit build and busy time per GPU (read by class_scale)."""
        return self.out / "timing.json"


def grader_command() -> list[str]:
    custom = os.environ.get(GRADER_ENV)
    return shlex.split(custom) if custom else [sys.executable, "-m", "grader"]


def read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None


def read_report(path: Path) -> Report | None:
    """The grader's report at `path`, read into the model every rendering uses, or None when there is none: no file,
    not JSON, or no list of labs in it."""
    found = read(read_json(path))
    return found if found.has_labs else None


def complete_report(path: Path, labs: list[str] | None) -> Report | None:
    """The report at `path` if it is whole (not interrupted, every wanted lab graded), else None."""
    found = read_report(path)
    if found is None or found.schema != REPORT_SCHEMA or found.interrupted:
        return None
    graded = {lab.name for lab in found.labs}
    if not graded or not found.finished or (labs and not set(labs) <= graded):
        return None
    return found


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
    command = [*grader_command(), "--submission", str(entry.path), "--pristine", str(pristine)]
    if phase == "all":
        command += ["--build-dir", str(layout.work(entry.student)), "--json", str(report)]
    else:
        command += ["--build-dir", str(layout.kit_build), "--student-dir", str(layout.work(entry.student))]
        command += ["--build-only"] if phase == "build" else ["--prebuilt", "--json", str(report)]
    command += [*grader_args, *labs]
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
    locked = kit_lock is not None
    start = time.monotonic()
    status["started"] = start  # the monotonic clock: for the busy time of its GPU, not saved
    with layout.log(entry.student).open("w" if phase != "grade" else "a") as log:
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
                _save_status(layout, status)
                return status
            while True:
                try:
                    status["exit"] = child.wait(timeout=0.2 if locked else 0.5)
                    break
                except subprocess.TimeoutExpired:
                    if stop.is_set() or time.monotonic() - start > timeout:
                        status["timed_out" if not stop.is_set() else "interrupted"] = True
                        status["exit"] = _stop(child)
                        break
                    if locked and _says(layout.log(entry.student), log_start, KIT_READY_MARKER):
                        kit_lock.release()
                        locked = False
        finally:
            if locked:
                kit_lock.release()
    status["ended"] = time.monotonic()
    status["seconds"] = round(status["ended"] - start, 1)
    if phase == "build":
        return status  # the grading phase saves the status
    if not keep_work and complete_report(report, labs or None):
        shutil.rmtree(layout.work(entry.student), ignore_errors=True)
    _save_status(layout, status)
    return status


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


# --- the gradebook --------------------------------------------------------------------------

def row_for(entry: Entry, layout: Layout, labs: list[str] | None) -> dict[str, Any]:
    """One gradebook row: points from the report, or what happened instead."""
    row: dict[str, Any] = {"student": entry.student, "total": "", "max": "", "labs": {}, "status": "", "seed": ""}
    if not entry.present:
        where = f"no folder {entry.path}" if entry.path else "no path in the roster"
        row.update(total=0, status=f"{MISSING} ({where})")
        return row
    graded = read_report(layout.report(entry.student))
    ended = read_json(layout.status(entry.student)) or {}
    if graded is not None:
        row.update(total=graded.total, max=graded.max, seed="" if graded.seed is None else graded.seed)
        failing = []
        for lab in graded.labs:
            if lab.name == "?":  # a lab the report does not name has no column
                continue
            row["labs"][lab.name] = lab.total
            if lab.status.is_failure:
                failing.append(f"{lab.name} {lab.status.name}")
        missing = [lab for lab in labs or [] if lab not in row["labs"]]
        text = "; ".join(failing) if failing else "ok"
        if graded.interrupted or missing:
            why = (f"timed out after {ended.get('seconds', '?')} s" if ended.get("timed_out")
                   else "interrupted" if graded.interrupted else "labs missing from the report")
            text = f"incomplete ({why}; not graded: {', '.join(missing) or 'the rest'}); {text}"
        row["status"] = text
        return row
    log = layout.log(entry.student)
    if not ended:
        row["status"] = "not graded yet"
    elif ended.get("timed_out"):
        row["status"] = f"timed out after {ended.get('seconds')} s without a report (log: {log})"
    elif ended.get("interrupted"):
        row["status"] = "interrupted before the report was written"
    else:
        row["status"] = (f"grader failed ({ended.get('error') or 'exit ' + str(ended.get('exit'))}, no report): "
                         f"{_last_line(log)} (log: {log})")
    return row


def _last_line(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1][:200] if lines else ""


def write_gradebook(entries: list[Entry], layout: Layout, labs: list[str] | None,
                    course: list[str] | None = None) -> list[dict[str, Any]]:
    """DIR/gradebook.csv for every roster row; returns the rows. A column per lab of `labs`,
    else per lab graded, in the order of `course` (the pristine kit's labs; without it, the
    order the reports list them), then those `course` lacks."""
    rows = [row_for(entry, layout, labs) for entry in entries]
    graded = list(dict.fromkeys(lab for row in rows for lab in row["labs"] if lab))
    columns = labs or [lab for lab in (course or graded) if lab in graded]
    extra = sorted({lab for lab in graded if lab not in columns})
    columns = [*columns, *extra]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student", "total", "max", *columns, "status", "seed"])
    for row in rows:
        writer.writerow([row["student"], row["total"], row["max"], *(row["labs"].get(lab, "") for lab in columns),
                         row["status"], row["seed"]])
    layout.out.mkdir(parents=True, exist_ok=True)
    tmp = layout.gradebook.with_name("gradebook.csv.tmp")
    tmp.write_text(buffer.getvalue())
    os.replace(tmp, layout.gradebook)
    return rows


def progress_line(done: int, count: int, entry: Entry, status: dict[str, Any], layout: Layout,
                  labs: list[str] | None, resumed: bool = False) -> str:
    row = row_for(entry, layout, labs)
    if not entry.present:
        text = row["status"]
    elif row["max"] != "":
        text = f"{row['total']}/{row['max']}" + ("" if row["status"] == "ok" else f" ({row['status']})")
    else:
        text = row["status"]
    when = "resumed" if resumed else f"{status.get('seconds', 0):.0f} s"
    if not resumed and status.get("gpu") is not None:
        when += f" on GPU {status['gpu']}"
    return f"[{done}/{count}] {entry.student}: {text} ({when})"


# --- Slurm ------------------------------------------------------------------------------------

def slurm_script(roster: Path, out: Path, count: int, pristine: Path, labs: list[str], timeout: float,
                 sbatch: list[str], grader_args: list[str] = ()) -> str:
    """A job array with one task per roster row; each task grades its row with --task."""
    minutes = int(timeout // 60) + 15  # the grader's own timeout, and time to build and clean up
    task = [*grader_command(), "batch", str(roster), "--out", str(out), "--pristine", str(pristine),
            "--timeout", f"{timeout:g}", *(f"--grader-arg={arg}" for arg in grader_args),
            "--task", "${SLURM_ARRAY_TASK_ID}", *(["--labs", *labs] if labs else [])]
    command = " ".join('"$SLURM_ARRAY_TASK_ID"' if arg == "${SLURM_ARRAY_TASK_ID}" else shlex.quote(arg) for arg in task)
    collect = [*grader_command(), "batch", str(roster), "--out", str(out), "--collect",
               *(["--labs", *labs] if labs else [])]
    lines = [
        "#!/bin/bash",
        f"# Grades the {count} students of {roster}, one Slurm array task (and one GPU) each,",
        "# with a hidden seed per student. Submit with `sbatch` from any folder; once every",
        "# task has ended, assemble the gradebook:",
        f"#   {shlex.join(collect)}",
        "# Tasks that failed can simply be submitted again (--array=<index>).",
        "#SBATCH --job-name=labkit-grade",
        f"#SBATCH --array=0-{count - 1}",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --cpus-per-task=8",
        f"#SBATCH --time={minutes // 60:02d}:{minutes % 60:02d}:00",
        f"#SBATCH --output={out}/logs/slurm-%A_%a.out",
        *[f"#SBATCH {option}" for option in sbatch],
        "set -euo pipefail",
        "command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH",
        f"cd {shlex.quote(str(KIT_ROOT))}",
        command,
    ]
    return "\n".join(lines) + "\n"


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
                          help="students graded at once (default: one per GPU); jobs share GPUs round-robin")
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
    parser.add_argument("--task", type=int, metavar="INDEX", help=argparse.SUPPRESS)  # one roster row (Slurm)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader batch`; returns the exit status."""
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
        labs = _labs(args.labs, course)
    except SystemExit as exc:
        print(exc.code, file=sys.stderr)
        return EXIT_USAGE
    layout = Layout(out)

    if args.slurm:
        text = slurm_script(args.roster.resolve(), out, len(entries), pristine, labs, args.timeout, args.sbatch,
                            args.grader_arg + (["--allow-no-gpu"] if args.allow_no_gpu else []))
        args.slurm.parent.mkdir(parents=True, exist_ok=True)
        args.slurm.write_text(text)
        args.slurm.chmod(0o755)
        (out / "logs").mkdir(parents=True, exist_ok=True)  # Slurm does not create the folder of --output
        print(f"wrote {args.slurm}: a job array of {len(entries)} tasks, one GPU each")
        print(f"submit:  sbatch {args.slurm}")
        print(f"then:    python3 -m grader batch {args.roster} --out {args.out} --collect"
              + (f" --labs {' '.join(labs)}" if labs else ""))
        return EXIT_OK
    if args.collect:
        rows = write_gradebook(entries, layout, labs, course)
        return _summary(rows, layout)
    if args.task is not None and not 0 <= args.task < len(entries):
        print(f"grader batch: error: --task {args.task} is outside the roster's rows 0-{len(entries) - 1}",
              file=sys.stderr)
        return EXIT_USAGE
    # Grading from here on: a machine without a GPU is told so now, not after the builds.
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
    args.grader_arg = with_instructor_feedback(args.grader_arg)
    if args.task is not None:
        entry = entries[args.task]
        status = grade_one(entry, layout, pristine=pristine, labs=labs, timeout=args.timeout, gpu=None,
                           build_jobs=None, keep_work=args.keep_work, stop=threading.Event(),
                           grader_args=args.grader_arg)
        print(progress_line(1, 1, entry, status, layout, labs))
        return EXIT_OK if _graded(entry, layout, labs) else EXIT_FAILED
    return run_batch(entries, layout, args, labs, pristine)


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


def grader_cores(labs: int) -> int:
    """Cores one grading job keeps busy: a judge and its worker per lab tested at once (the
    grader tests several labs side by side), and one for the grader and the bench."""
    return 1 + 2 * max(1, min(labs, 4))


def split_cores(jobs: int, labs: int = 1) -> tuple[set[int] | None, set[int] | None]:
    """(cores of the graders, cores of the compiles ahead of them), or (None, None) on a
    machine too small to split: the graders' host threads time their GPU's clock stamps
    and fences, and a compile sharing their core could delay them."""
    try:
        available = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    reserved = grader_cores(labs) * jobs
    if len(available) < reserved + 4:
        return None, None
    return set(available[:reserved]), set(available[reserved:])


def build_slots(jobs: int, labs: int, build_cores: set[int] | None) -> int:
    """How many students' files compile at once, ahead of the graders: two per grading job
    and one more, so that the GPUs stay fed even where a student's compile takes twice as
    long as their grading, each with a core per lab (its labs compile side by side), never
    more than the compiles' cores hold (at least one)."""
    cores = len(build_cores) if build_cores else max(1, (os.cpu_count() or 2) - grader_cores(labs) * jobs)
    return max(1, min(2 * jobs + 1, cores // max(1, labs)))


def ahead_limit(jobs: int, builders: int) -> int:
    """How many students may be compiling or compiled and not yet taken by a grader: every
    compile slot busy and two students ready for each grading job, so that a compile that
    takes long, or a few students that grade fast, do not leave a GPU waiting."""
    return builders + 2 * jobs


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
    ok = done.returncode in (0, 1) and (layout.kit_build / "CMakeCache.txt").is_file()
    if not ok:
        print(f"  the kit's build failed: see {log}", flush=True)
    return ok


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """`spans` as sorted, disjoint intervals."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _length(spans: list[tuple[float, float]], since: float = float("-inf"), until: float = float("inf")) -> float:
    """Seconds the disjoint `spans` cover between `since` and `until`."""
    return sum(max(0.0, min(end, until) - max(start, since)) for start, end in spans)


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Where the disjoint, sorted intervals `a` and `b` overlap."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


class GpuUse:
    """When each GPU had a grader on it, and when a grading job of it waited for a compile.

    The busy time of a GPU is the union of its graders' spans (from the process's start to
    its end), whatever they did meanwhile. The rest of the grading time it was idle, either
    waiting for a compile (a job of that GPU had its next student but that student's files
    were still compiling: the compiles did not keep up) or at the end (no student was left
    for it while other GPUs graded their last ones; also the few milliseconds between two
    students)."""

    def __init__(self, gpus: list[str | None]) -> None:
        self.spans: dict[str | None, list[tuple[float, float]]] = {one: [] for one in gpus}
        self.waits: dict[str | None, list[tuple[float, float]]] = {one: [] for one in gpus}
        self._lock = threading.Lock()

    def add(self, one: str | None, start: float, end: float) -> None:
        with self._lock:
            self.spans.setdefault(one, []).append((start, end))

    def add_wait(self, one: str | None, start: float, end: float) -> None:
        """A grading job of GPU `one` waited from `start` to `end` for its next student's compile."""
        with self._lock:
            self.waits.setdefault(one, []).append((start, end))

    def busy(self, one: str | None) -> float:
        """Seconds at least one grader held GPU `one`."""
        return _length(_merged(self.spans.get(one, [])))

    def idle(self, one: str | None, since: float, until: float) -> dict[str, float]:
        """GPU `one`'s idle seconds between `since` and `until`: `waited_s` for a compile
        (`first_wait_s` of them before its first student), and `tail_s` otherwise."""
        busy = _merged(self.spans.get(one, []))
        waits = _merged(self.waits.get(one, []))
        waited = _length(waits, since, until) - _length(_overlap(waits, busy), since, until)
        first = min((start for start, _ in busy), default=until)
        first_wait = _length(waits, since, min(first, until))
        tail = (until - since) - _length(busy, since, until) - waited
        return {"waited_s": max(0.0, waited), "first_wait_s": max(0.0, first_wait), "tail_s": max(0.0, tail)}

    def summary(self, since: float, until: float) -> list[dict[str, Any]]:
        """Per GPU: its busy seconds between `since` and `until`, that span, the share, the
        students, and its idle seconds waiting for a compile and at the end."""
        span = max(until - since, 1e-9)
        out = []
        for one, spans in self.spans.items():
            busy = self.busy(one)
            idle = self.idle(one, since, until)
            out.append({"gpu": one, "busy_s": round(busy, 1), "of_s": round(span, 1),
                        "share": round(min(busy / span, 1.0), 3), "students": len(spans),
                        **{key: round(value, 1) for key, value in idle.items()}})
        return out


def gpu_lines(summary: list[dict[str, Any]]) -> list[str]:
    """`GPU 0: busy 812 s of 843 s (96%), 11 students; waited 20 s for compiles (3 s before
    its first student), 11 s idle at the end` per GPU."""
    lines = []
    for one in summary:
        name = f"GPU {one['gpu']}" if one["gpu"] is not None else "no GPU"
        students = f"{one['students']} student{'s' * (one['students'] != 1)}"
        line = f"  {name}: busy {one['busy_s']:.0f} s of {one['of_s']:.0f} s ({100 * one['share']:.0f}%), {students}"
        if "waited_s" in one:
            line += (f"; waited {one['waited_s']:.0f} s for compiles ({one['first_wait_s']:.0f} s before its first "
                     f"student), {one['tail_s']:.0f} s idle at the end")
        lines.append(line)
    return lines


def compile_line(compiles: dict[str, Any]) -> str:
    """`compiles: 4.2 s per student (longest 7 s), 5 students at a time on 22 cores; 1 s
    waiting for the shared kit build's check` (batch's summary)."""
    cores = f" on {compiles['cores']} cores" if compiles.get("cores") else ""
    builders = compiles["builders"]
    return (f"  compiles: {compiles['per_student_s']:.1f} s per student (longest {compiles['max_s']:.0f} s), "
            f"{builders} student{'s' * (builders != 1)} at a time{cores}; {compiles['kit_check_wait_s']:.0f} s "
            "waiting for the shared kit build's check")


def run_batch(entries: list[Entry], layout: Layout, args: argparse.Namespace, labs: list[str], pristine: Path) -> int:
    gpus = gpu_ids(args.gpus)
    jobs = args.jobs or max(1, len(gpus))
    lab_count = len(labs or _kit_labs(pristine)) or 1
    grade_cores, build_cores = split_cores(jobs, lab_count)
    builders = build_slots(jobs, lab_count, build_cores)
    where = (f"GPU{'s' * (len(gpus) != 1)} {','.join(gpus)}" if gpus
             else "no GPU (--allow-no-gpu: every lab that builds is NO_GPU)")
    cores = (f"; cores: {len(grade_cores)} for the graders, {len(build_cores)} for the compiles" if grade_cores
             else "")
    print(f"grading {len(entries)} students, {jobs} at a time on {where}, the compiles of {builders} "
          f"student{'s' * (builders != 1)} at a time ahead of them{cores}; output in {layout.out}", flush=True)

    todo, done, count = [], 0, len(entries)
    for entry in entries:
        if args.resume and entry.present and complete_report(layout.report(entry.student), labs or None):
            done += 1
            print(progress_line(done, count, entry, read_json(layout.status(entry.student)) or {}, layout, labs,
                                resumed=True), flush=True)
        else:
            todo.append(entry)
    stop = threading.Event()
    wall0 = time.monotonic()
    prepare_kit(layout, pristine, labs, args.timeout, args.grader_arg)
    kit_s = time.monotonic() - wall0
    print(f"  the kit's part took {kit_s:.0f} s", flush=True)

    # The compiles run ahead of the graders, `builders` students at a time, on their own
    # cores; each runs Ninja in the shared kit build under kit_lock, then compiles beside the
    # others. A compiled student goes to `ready`; each grading job takes the next one there
    # (in the order the compiles end), so no GPU waits for one compile while another
    # student is ready. `ahead` bounds the students compiling or compiled and not taken yet.
    ready: queue.Queue[tuple[Entry, dict[str, Any], bool]] = queue.Queue()
    ahead = threading.Semaphore(ahead_limit(jobs, builders))
    kit_lock = threading.Lock()
    compiles: list[tuple[float, float]] = []  # (seconds, waited for the kit's check); list.append is atomic

    def build(entry: Entry) -> None:
        compiled: dict[str, Any] = {"skipped": True}
        held = False
        try:
            if not entry.present:
                return  # nothing to compile: its grading says it is missing
            while not (held := ahead.acquire(timeout=0.5)):
                if stop.is_set():
                    return
            if stop.is_set():
                return
            asked = time.monotonic()
            compiled = grade_one(entry, layout, pristine=pristine, labs=labs, timeout=args.timeout, gpu=None,
                                 build_jobs=None, keep_work=True, stop=stop, grader_args=args.grader_arg,
                                 phase="build", cores=build_cores, kit_lock=kit_lock)
            if "started" in compiled:
                compiles.append((compiled.get("seconds", 0.0), compiled["started"] - asked))
        finally:
            ready.put((entry, compiled, held))  # always one per student: each job waits for the one it claimed

    builder = concurrent.futures.ThreadPoolExecutor(max_workers=builders)
    for entry in todo:
        builder.submit(build, entry)
    use = GpuUse(list(dict.fromkeys(gpus)) if gpus else [None])
    unclaimed = [len(todo)]  # students no job has claimed yet
    claim_lock = threading.Lock()
    results: queue.Queue[tuple[Entry, dict[str, Any]]] = queue.Queue()

    def job(one: str | None) -> None:
        """Grades on GPU `one` (CUDA_VISIBLE_DEVICES) the next compiled student, until none is left."""
        while not stop.is_set():
            with claim_lock:
                if unclaimed[0] == 0:
                    return  # from here on this job has nothing to grade: its GPU is idle at the end
                unclaimed[0] -= 1
            waiting = time.monotonic()
            entry, compiled, held = ready.get()  # every claim gets one: each build puts one
            use.add_wait(one, waiting, time.monotonic())
            if held:
                ahead.release()
            if stop.is_set():
                results.put((entry, {"student": entry.student, "skipped": True}))
                continue
            # Its files are compiled (or failed to: the grading says so).
            status = grade_one(entry, layout, pristine=pristine, labs=labs, timeout=args.timeout, gpu=one,
                               build_jobs=None, keep_work=args.keep_work, stop=stop, grader_args=args.grader_arg,
                               phase="grade", cores=grade_cores)
            if "started" in status and "ended" in status:
                use.add(one, status["started"], status["ended"])
            results.put((entry, status))

    interrupted = False

    def report(entry: Entry, status: dict[str, Any]) -> None:
        nonlocal done
        if not status.get("skipped"):
            done += 1
            print(progress_line(done, count, entry, status, layout, labs), flush=True)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            running = [pool.submit(job, gpus[k % len(gpus)] if gpus else None) for k in range(jobs)]
            while True:
                try:
                    if all(future.done() for future in running) and results.empty():
                        break
                    report(*results.get(timeout=1.0))
                except queue.Empty:
                    continue
                except KeyboardInterrupt:
                    if not interrupted:
                        print("\ninterrupted: stopping the running graders (their partial reports are kept)...",
                              flush=True)
                    interrupted = True
                    stop.set()
            for future in running:
                future.result()  # a job's own failure (a bug) shows here
    finally:
        # Every student was taken (or the run stops): no compile is left to wait for. After a
        # job's failure this ends the compiles still running or waiting for their turn.
        stop.set()
        builder.shutdown(wait=True, cancel_futures=True)
    end = time.monotonic()
    wall = end - wall0
    per_gpu = use.summary(wall0 + kit_s, end)
    compiled_s = [seconds for seconds, _ in compiles]
    compile_info = {"students": len(compiled_s), "builders": builders, "ahead": ahead_limit(jobs, builders),
                    "cores": len(build_cores) if build_cores else None,
                    "per_student_s": round(sum(compiled_s) / len(compiled_s), 1) if compiled_s else 0.0,
                    "max_s": round(max(compiled_s, default=0.0), 1),
                    "kit_check_wait_s": round(sum(wait for _, wait in compiles), 1)}
    timing = {"students": len(todo), "labs": labs or _kit_labs(pristine), "jobs": jobs, "gpus": gpus,
              "builders": builders, "cores": {"graders": len(grade_cores) if grade_cores else None,
                                              "compiles": len(build_cores) if build_cores else None},
              "wall_s": round(wall, 1), "kit_s": round(kit_s, 1), "grading_s": round(wall - kit_s, 1),
              "compile_s": round(sum(compiled_s), 1), "compiles": compile_info, "per_gpu": per_gpu,
              "waited_s": round(sum(one["waited_s"] for one in per_gpu), 1),
              "tail_s": round(sum(one["tail_s"] for one in per_gpu), 1), "interrupted": interrupted}
    _write_json(layout.timing, timing)
    if todo:
        grading = timing["grading_s"]
        print(f"{len(todo)} students in {wall:.0f} s: the kit's part {kit_s:.0f} s, then {grading:.0f} s grading "
              f"({grading / len(todo):.1f} s per student)", flush=True)
        if compiled_s:
            print(compile_line(compile_info), flush=True)
        if gpus:
            for line in gpu_lines(per_gpu):
                print(line, flush=True)
            print("  (busy: a grader process held that GPU, from its start to its end: tests, sanitizer, bench and "
                  "the CPU work between them; waited: the GPU was free but its next student's files were still "
                  "compiling, the compiles did not keep up; idle at the end: no student was left for it while the "
                  "other GPUs graded their last ones)", flush=True)
    rows = write_gradebook(entries, layout, labs, _kit_labs(pristine))
    code = _summary(rows, layout)
    return EXIT_INTERRUPTED if interrupted else code


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


def _graded(entry: Entry, layout: Layout, labs: list[str]) -> bool:
    return not entry.present or complete_report(layout.report(entry.student), labs or None) is not None


def _summary(rows: list[dict[str, Any]], layout: Layout) -> int:
    missing = sum(1 for row in rows if str(row["status"]).startswith(MISSING))
    failed = [row for row in rows if row["max"] == "" and not str(row["status"]).startswith(MISSING)]
    incomplete = [row for row in rows if str(row["status"]).startswith("incomplete")]
    graded = len(rows) - missing - len(failed)
    print(f"gradebook: {layout.gradebook} ({graded} graded, {missing} missing submissions, "
          f"{len(failed)} without a report, {len(incomplete)} incomplete)")
    for row in failed + incomplete:
        print(f"  {row['student']}: {row['status']}")
    if failed or incomplete:
        print("  grade them again with --resume (complete reports are kept)")
    return EXIT_FAILED if failed or incomplete else EXIT_OK


def _labs(names: list[str] | None, known: list[str]) -> list[str]:
    """--labs in the spelling of `known` (the pristine kit's labs); SystemExit for one it lacks."""
    if not names:
        return []
    by_lower = {lab.lower(): lab for lab in known}
    unknown = [name for name in names if name.lower() not in by_lower]
    if unknown:
        raise SystemExit(f"grader batch: error: unknown lab {unknown[0]!r}: the labs are {', '.join(known)}")
    return [by_lower[name.lower()] for name in names]
