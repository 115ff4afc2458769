"""The class's roster and gradebook (grader batch): who is graded, where each student's
files, report, log and status go (Layout), and the gradebook's rows read back from them."""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.report import REPORT_SCHEMA, Report, read

MISSING = "missing submission"
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]*$")  # becomes a file name
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


# --- where a class's files go ---------------------------------------------------------------

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
    def profile_cache(self) -> Path:
        """The profiler questions' figures, taken once per GPU for the class (grader/profile_cache.py)."""
        return self.out / "profile-cache"

    @property
    def gradebook(self) -> Path:
        return self.out / "gradebook.csv"

    @property
    def timing(self) -> Path:
        """The last run's wall time, kit build and busy time per GPU (read by class_scale)."""
        return self.out / "timing.json"


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


def _graded(entry: Entry, layout: Layout, labs: list[str]) -> bool:
    return not entry.present or complete_report(layout.report(entry.student), labs or None) is not None


# --- the gradebook --------------------------------------------------------------------------

def row_for(entry: Entry, layout: Layout, labs: list[str] | None) -> dict[str, Any]:
    """One gradebook row: points from the report, or what happened instead. `report` holds the
    report as read (None without one), for the class page (dashboard.py) to read it no second time."""
    row: dict[str, Any] = {"student": entry.student, "total": "", "max": "", "labs": {}, "status": "", "seed": "",
                           "report": None}
    if not entry.present:
        where = f"no folder {entry.path}" if entry.path else "no path in the roster"
        row.update(total=0, status=f"{MISSING} ({where})")
        return row
    graded = read_report(layout.report(entry.student))
    ended = read_json(layout.status(entry.student)) or {}
    if graded is not None:
        row.update(total=graded.total, max=graded.max, seed="" if graded.seed is None else graded.seed, report=graded)
        failing = []
        for lab in graded.labs:
            if lab.name == "?":  # a lab the report does not name has no column
                continue
            row["labs"][lab.name] = lab.total
            if lab.writeup is not None:  # graded by hand: (its rubric's total, handed in or not)
                row.setdefault("writeups", {})[lab.name] = (lab.writeup.max, lab.writeup.status)
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
                    course: list[str] | None = None,
                    hand: Callable[[list[dict[str, Any]]], Any] | None = None) -> list[dict[str, Any]]:
    """DIR/gradebook.csv for every roster row; returns the rows. A column per lab of `labs`,
    else per lab graded, in the order of `course` (the pristine kit's labs; without it, the
    order the reports list them), then those `course` lacks. `hand` (handgrades.apply with a
    filled grading sheet) adds the hand-graded points to the rows, and a `hand_graded` column."""
    rows = [row_for(entry, layout, labs) for entry in entries]
    if hand is not None:
        hand(rows)
    graded = list(dict.fromkeys(lab for row in rows for lab in row["labs"] if lab))
    columns = labs or [lab for lab in (course or graded) if lab in graded]
    extra = sorted({lab for lab in graded if lab not in columns})
    columns = [*columns, *extra]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    by_hand = ["hand_graded"] if hand is not None else []
    writer.writerow(["student", "total", "max", *columns, *by_hand, "status", "seed"])
    for row in rows:
        writer.writerow([row["student"], row["total"], row["max"], *(row["labs"].get(lab, "") for lab in columns),
                         *([row.get("hand_graded", "")] if by_hand else []), row["status"], row["seed"]])
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
