"""What a batch run leaves the instructor once its students are graded (or collected): the
gradebook (gradebook.py), the grading sheet of the write-ups (handgrades.py), the class page
(dashboard.py), and the summary lines that name them (grader/instructor/batch.py calls it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from grader import manifest
from grader.instructor import dashboard, handgrades
from grader.instructor.gradebook import MISSING, Entry, Layout, write_gradebook

EXIT_OK, EXIT_FAILED = 0, 1


def finish(entries: list[Entry], layout: Layout, labs: list[str], course: list[str], rubrics: dict[str, Any],
           args: argparse.Namespace) -> int:
    """Writes the gradebook (with the hand-graded points of --hand-grades), the grading sheet
    and the class page, prints what they hold; the exit status (1: students without a
    complete report)."""
    rows = write_gradebook(entries, layout, labs, course, hand=_hand(args))
    _sheet(entries, layout, rubrics)
    return _summary(rows, layout, class_page(rows, layout, labs, course))


def rubrics(pristine: Path) -> dict[str, Any]:
    """The write-up rubric of each lab of the pristine kit that asks for one, in course order."""
    try:
        return {lab.name: lab.writeup for lab in manifest.labs(pristine) if lab.writeup}
    except Exception:  # a broken lab.json: the grader reports it
        return {}


def manual_questions(pristine: Path) -> dict[str, dict[str, float]]:
    """The questions each lab of the pristine kit grades by hand ("check": "manual"): id -> points."""
    try:
        return {lab.name: {q.id: q.points for q in lab.questions if q.check == "manual"}
                for lab in manifest.labs(pristine) if any(q.check == "manual" for q in lab.questions)}
    except Exception:  # a broken lab.json: the grader reports it
        return {}


def _hand(args: argparse.Namespace):
    """What adds a read grading sheet's points to the gradebook's rows (None without --hand-grades)."""
    grades = getattr(args, "hand", None)
    if grades is None:
        return None

    def add(rows: list[dict[str, Any]]) -> None:
        for line in handgrades.apply(rows, grades):
            print(f"  note: {line}")
    return add


def _sheet(entries: list[Entry], layout: Layout, rubrics: dict[str, Any]) -> None:
    """DIR/grading-sheet.csv, the write-ups and written answers to grade by hand (none when no
    lab asks for a write-up)."""
    if not rubrics:
        return
    try:
        path, waiting = handgrades.write_sheet(entries, layout, rubrics)
    except OSError as exc:
        print(f"grader batch: could not write the grading sheet: {exc}", file=sys.stderr)
        return
    if not waiting:
        print(f"grading sheet: {path} (no write-up or written answer waits to be graded by hand)")
        return
    print(f"grading sheet: {path} ({waiting} row{'s' * (waiting != 1)} of write-ups or written answers to grade "
          f"by hand; fill it in, then: --collect --hand-grades {path})")


def class_page(rows: list[dict[str, Any]], layout: Layout, labs: list[str], course: list[str]) -> str:
    """Writes DIR/class.html from the gradebook's rows (dashboard.py); its path, or why it was not written."""
    try:
        return str(dashboard.write_page(rows, layout, labs, course))
    except Exception as exc:  # the page is a view of the gradebook: its failure must not hide the gradebook's summary
        return f"not written ({exc})"


def _summary(rows: list[dict[str, Any]], layout: Layout, page: str = "") -> int:
    missing = sum(1 for row in rows if str(row["status"]).startswith(MISSING))
    failed = [row for row in rows if row["max"] == "" and not str(row["status"]).startswith(MISSING)]
    incomplete = [row for row in rows if str(row["status"]).startswith("incomplete")]
    graded = len(rows) - missing - len(failed)
    print(f"gradebook: {layout.gradebook} ({graded} graded, {missing} missing submissions, "
          f"{len(failed)} without a report, {len(incomplete)} incomplete)")
    if page:
        print(f"class page: {page}")
    for row in failed + incomplete:
        print(f"  {row['student']}: {row['status']}")
    if failed or incomplete:
        print("  grade them again with --resume (complete reports are kept)")
    return EXIT_FAILED if failed or incomplete else EXIT_OK
