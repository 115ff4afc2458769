"""The class's grading sheet: the write-ups, graded by hand with each lab's rubric.

`grader batch` (and `batch --collect`) writes DIR/grading-sheet.csv beside the gradebook:
one row per student and lab whose report holds a write-up handed in, with the columns

    student, lab, max, <one per rubric item, in course order>, comment

`max` is the lab's rubric total (for reading; it is not read back). An item's cell is left
empty for the instructor to fill in with the points it earns (0 to the item's points in
the lab's manifest); an item the lab's rubric lacks reads `n/a`. Written again, the sheet
keeps every value and comment already filled in, also of rows it would no longer write.

    python3 -m grader batch ROSTER --out DIR --collect --hand-grades DIR/grading-sheet.csv

reads a filled sheet back (read_sheet): the gradebook adds each student's hand-graded
points to the lab's column and the total, and every graded lab's rubric total to the
maximum. An empty cell is not graded yet (it adds nothing, and the gradebook's status
says which write-ups wait). Anything the sheet cannot mean (a student the roster lacks, a
lab without a write-up, an item the lab's rubric lacks, a number above the item's points,
a cell that is no number) is an error naming the line and the column, and nothing is
added: the instructor fixes the sheet and collects again.

The written answers (questions with "check": "manual", answers.py) are graded in the same
sheet: one row per student, lab and question answered, after the write-ups' columns

    ..., comment, question, points, answer

`question` is its id, `max` its points (from the student's report), `answer` the start of
the student's text (for reading; a cell a spreadsheet would take for a formula starts with
an apostrophe), and `points` is the cell to fill in (0 to the question's points in the
lab's manifest). A write-up's row leaves these empty; a question's row has `n/a` under the
rubric items. Read back, a question's points move from pending to earned: they are added
to the lab's column and the total, and the answered questions' points to the maximum. A
question the lab's manifest does not grade by hand, a mark above its points or one that is
no number is an error naming the line.
"""

from __future__ import annotations

import csv
import difflib
import io
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.instructor.gradebook import Entry, Layout, read_report
from grader.writeup import PENDING, Rubric

SHEET_NAME = "grading-sheet.csv"
FIXED = ("student", "lab", "max")  # then the rubric items, then COMMENT
COMMENT = "comment"
QUESTION_COLUMNS = ("question", "points", "answer")  # after COMMENT, when the sheet has written answers
QUESTION, POINTS, ANSWER = QUESTION_COLUMNS
EXCERPT_CHARS = 500  # of a written answer, in the sheet
NOT_APPLICABLE = "n/a"
MAX_ERRORS = 20  # listed; the rest are counted


class HandGradeError(Exception):
    """A grading sheet that cannot be used: `errors` says where and what, one line each."""

    def __init__(self, errors: list[str]) -> None:
        shown = errors[:MAX_ERRORS]
        more = f"\n  ... and {len(errors) - MAX_ERRORS} more" if len(errors) > MAX_ERRORS else ""
        super().__init__("\n  ".join(shown) + more)
        self.errors = errors


@dataclass
class Grade:
    """One student's hand grades of one lab's write-up."""

    points: float = 0.0
    items: dict[str, float] = field(default_factory=dict)  # item id -> points given
    missing: list[str] = field(default_factory=list)  # items of the rubric not graded yet
    comment: str = ""
    questions: dict[str, float] = field(default_factory=dict)  # written answers graded: question id -> points
    ungraded: list[str] = field(default_factory=list)  # written answers with a row but no points yet


def sheet_path(layout: Layout) -> Path:
    return layout.out / SHEET_NAME


def item_columns(rubrics: dict[str, Rubric]) -> list[str]:
    """Every rubric item id, in course order (the order of `rubrics`), each once."""
    return list(dict.fromkeys(item.id for rubric in rubrics.values() for item in rubric.items))


# --- writing the sheet --------------------------------------------------------------------------

def write_sheet(entries: list[Entry], layout: Layout, rubrics: dict[str, Rubric]) -> tuple[Path, int]:
    """DIR/grading-sheet.csv for the write-ups handed in (their reports say so); the values
    already filled in are kept. Returns its path and how many rows wait for grades."""
    path = sheet_path(layout)
    items = item_columns(rubrics)
    kept = _filled_rows(path)
    rows: list[dict[str, str]] = []
    for entry in entries:
        report = read_report(layout.report(entry.student)) if entry.present else None
        for lab in report.labs if report else []:
            rubric = rubrics.get(lab.name)
            if rubric is not None and lab.writeup is not None and lab.writeup.status == PENDING:
                mine = {item.id for item in rubric.items}
                row = {"student": entry.student, "lab": lab.name, "max": f"{rubric.total:g}", COMMENT: ""}
                row.update({item: "" if item in mine else NOT_APPLICABLE for item in items})
                old = kept.pop((entry.student, lab.name, ""), {})
                row.update({key: value for key, value in old.items() if value and (key in mine or key == COMMENT)})
                rows.append(row)
            for question in lab.questions:
                if not question.by_hand or question.status != "manual":  # unanswered: nothing to grade
                    continue
                row = {"student": entry.student, "lab": lab.name, "max": f"{question.max:g}", COMMENT: "",
                       QUESTION: question.id, POINTS: "", ANSWER: excerpt(question.answer)}
                row.update({item: NOT_APPLICABLE for item in items})
                old = kept.pop((entry.student, lab.name, question.id), {})
                row.update({key: value for key, value in old.items() if value and key in (POINTS, COMMENT)})
                rows.append(row)
    rows += kept.values()  # filled rows this run no longer lists: never dropped
    waiting = sum(1 for row in rows if (row.get(POINTS, "") == "" if row.get(QUESTION)
                                        else any(row.get(item, "") == "" for item in items)))
    asked = any(row.get(QUESTION) for row in rows)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, [*FIXED, *items, COMMENT, *(QUESTION_COLUMNS if asked else ())], restval="",
                            extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(buffer.getvalue(), encoding="utf-8")
    os.replace(tmp, path)
    return path, waiting


def excerpt(answer: str) -> str:
    """The start of a written answer, on one line, for the sheet: never a formula to a
    spreadsheet (a cell starting with =, +, - or @ gets an apostrophe before it)."""
    text = " ".join(answer.split())
    text = text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS - 3] + "..."
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _filled_rows(path: Path) -> dict[tuple[str, str, str], dict[str, str]]:
    """The rows of an existing sheet with anything filled in, by (student, lab, question: ''
    for a write-up); read leniently (what cannot be read is left alone: read_sheet says what
    is wrong with it)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return {}
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for row in csv.DictReader(io.StringIO(text)):
        clean = {str(k).strip(): (v or "").strip() for k, v in row.items() if k is not None and isinstance(v, str)}
        key = (clean.get("student", ""), clean.get("lab", ""), clean.get(QUESTION, ""))
        filled = any(v and v.lower() != NOT_APPLICABLE for k, v in clean.items()
                     if k not in (*FIXED, QUESTION, ANSWER))
        if all(key[:2]) and filled:
            found.setdefault(key, clean)
    return found


# --- reading it back ------------------------------------------------------------------------------

def read_sheet(path: Path, entries: list[Entry], rubrics: dict[str, Rubric],
               questions: dict[str, dict[str, float]] | None = None) -> dict[tuple[str, str], Grade]:
    """The hand grades of a filled sheet by (student, lab); HandGradeError lists every problem.
    `questions`: each lab's questions graded by hand, id -> points (the manifests')."""
    questions = questions or {}
    try:
        text = path.read_text(encoding="utf-8-sig")  # a spreadsheet may write a byte-order mark
    except FileNotFoundError:
        raise HandGradeError([f"{path}: not found (batch writes the sheet to fill in as DIR/{SHEET_NAME})"]) from None
    except OSError as exc:
        raise HandGradeError([f"{path}: cannot read it: {exc.strerror or exc}"]) from None
    except UnicodeDecodeError:
        raise HandGradeError([f"{path}: not UTF-8 text: save it as CSV (UTF-8)"]) from None
    lines = list(csv.reader(io.StringIO(text)))
    header = [cell.strip() for cell in lines[0]] if lines else []
    errors = _check_header(path, header, rubrics)
    if errors:
        raise HandGradeError(errors)
    students = {entry.student.lower(): entry.student for entry in entries}
    grades: dict[tuple[str, str], Grade] = {}
    seen: dict[tuple[str, str, str], int] = {}
    for number, cells in enumerate(lines[1:], start=2):
        if not any(cell.strip() for cell in cells) or cells[0].lstrip().startswith("#"):
            continue
        row = {name: (cells[i].strip() if i < len(cells) else "") for i, name in enumerate(header) if name}
        where = f"{path}:{number}"
        asked = row.get(QUESTION, "")
        student, lab = _who(row, where, students, questions if asked else rubrics, errors,
                            "the labs with written answers" if asked else "the labs with a write-up")
        if student is None or lab is None:
            continue
        if (student, lab, asked) in seen:
            what = f"{student}, {lab} and {asked}" if asked else f"{student} and {lab}"
            errors.append(f"{where}: {what} have a row already (line {seen[student, lab, asked]}): "
                          f"keep one row per student and lab{' and question' if asked else ''}")
            continue
        seen[student, lab, asked] = number
        if asked:
            _question(row, header, where, grades.setdefault((student, lab), Grade()), questions[lab], lab, errors)
            continue
        grade = _grade(row, header, where, rubrics[lab], lab, errors)
        if (student, lab) in grades:  # its written answers' rows came first
            grade.questions, grade.ungraded = grades[student, lab].questions, grades[student, lab].ungraded
        grades[student, lab] = grade
    if errors:
        raise HandGradeError(errors)
    return grades


def _check_header(path: Path, header: list[str], rubrics: dict[str, Rubric]) -> list[str]:
    known = item_columns(rubrics)
    if "student" not in header or "lab" not in header:
        found = ",".join(header) or "an empty file"
        return [f"{path}:1: the first line must be the sheet's header, `{','.join([*FIXED, *known, COMMENT])}` "
                f"(found: {found})"]
    errors = []
    for index, name in enumerate(header):
        if name and name not in (*FIXED, COMMENT, *QUESTION_COLUMNS, *known):
            errors.append(f"{path}:1: column {_column(index)} ({name}): no rubric has an item {name!r}"
                          f"{_suggest(name, known)}; the items are {', '.join(known) or '(none)'}")
        elif name and header.index(name) != index:
            errors.append(f"{path}:1: column {_column(index)} ({name}): the column appears twice")
    return errors


def _who(row: dict[str, str], where: str, students: dict[str, str], rubrics: dict[str, Any],
         errors: list[str], which: str = "the labs with a write-up") -> tuple[str | None, str | None]:
    """The row's student (as the roster spells it) and lab, or None after noting why not."""
    student = students.get(row.get("student", "").lower())
    if student is None:
        name = row.get("student", "")
        errors.append(f"{where}: unknown student {name!r}: not in the roster" if name else f"{where}: no student name")
    labs = {lab.lower(): lab for lab in rubrics}
    lab = labs.get(row.get("lab", "").lower())
    if lab is None:
        name = row.get("lab", "")
        errors.append(f"{where}: unknown lab {name!r}{_suggest(name, list(rubrics))}: {which} are "
                      f"{', '.join(rubrics) or '(none)'}")
    return student, lab


def _grade(row: dict[str, str], header: list[str], where: str, rubric: Rubric, lab: str,
           errors: list[str]) -> Grade:
    grade = Grade(comment=row.get(COMMENT, ""))
    for index, name in enumerate(header):
        if name in (*FIXED, COMMENT, *QUESTION_COLUMNS, ""):
            continue
        value, item = row.get(name, ""), rubric.item(name)
        at = f"{where}: column {_column(index)} ({name})"
        if item is None:
            if value and value.lower() != NOT_APPLICABLE:
                errors.append(f"{at}: {lab}'s rubric has no item {name!r}: leave the cell empty or {NOT_APPLICABLE}")
            continue
        if value == "" or value.lower() == NOT_APPLICABLE:
            grade.missing.append(item.id)
            continue
        points = _number(value)
        if points is None:
            errors.append(f"{at}: {value!r} is not a number: give the points earned, 0 to {item.points:g}")
        elif points < 0:
            errors.append(f"{at}: {value} is below 0: give the points earned, 0 to {item.points:g}")
        elif points > item.points + 1e-9:
            errors.append(f"{at}: {value} is above the item's maximum, {item.points:g}")
        else:
            grade.items[item.id] = points
    grade.missing += [item.id for item in rubric.items if item.id not in header]  # no column for it at all
    grade.points = round(sum(grade.items.values()), 2)
    return grade


def _question(row: dict[str, str], header: list[str], where: str, grade: Grade, asked: dict[str, float], lab: str,
              errors: list[str]) -> None:
    """One written answer's row: its points into `grade.questions` (or its id into `ungraded`)."""
    qid = row[QUESTION]
    if qid not in asked:
        errors.append(f"{where}: {lab} has no question {qid!r} graded by hand{_suggest(qid, list(asked))}: "
                      f"its written answers are {', '.join(asked) or '(none)'}")
        return
    for index, name in enumerate(header):  # a written answer's row grades no rubric item
        value = row.get(name, "")
        if name not in (*FIXED, COMMENT, *QUESTION_COLUMNS, "") and value and value.lower() != NOT_APPLICABLE:
            errors.append(f"{where}: column {_column(index)} ({name}): the row of question {qid} grades no "
                          f"write-up item: leave the cell empty or {NOT_APPLICABLE}, and give the points under "
                          f"{POINTS}")
    value, top = row.get(POINTS, ""), asked[qid]
    at = f"{where}: column {_column(header.index(POINTS))} ({POINTS})" if POINTS in header else where
    if POINTS not in header:
        errors.append(f"{where}: the sheet has no column {POINTS!r} for the points of question {qid}")
    elif value == "":
        grade.ungraded.append(qid)
    elif (points := _number(value)) is None:
        errors.append(f"{at}: {value!r} is not a number: give the points question {qid} earns, 0 to {top:g}")
    elif points < 0:
        errors.append(f"{at}: {value} is below 0: give the points question {qid} earns, 0 to {top:g}")
    elif points > top + 1e-9:
        errors.append(f"{at}: {value} is above question {qid}'s maximum, {top:g}")
    else:
        grade.questions[qid] = points


def _number(text: str) -> float | None:
    try:
        value = float(text.replace(",", ".") if text.count(",") == 1 and "." not in text else text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _column(index: int) -> str:
    """A spreadsheet's name of the column: 1 -> A ... 27 -> AA, with its number."""
    name, number = "", index + 1
    while number:
        number, rest = divmod(number - 1, 26)
        name = chr(ord("A") + rest) + name
    return f"{name} ({index + 1})"


def _suggest(name: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name.lower(), [k.lower() for k in known], n=1)
    if not close:
        return ""
    return f" (did you mean {next(k for k in known if k.lower() == close[0])}?)"


# --- into the gradebook ---------------------------------------------------------------------------

def apply(rows: list[dict[str, Any]], grades: dict[tuple[str, str], Grade]) -> list[str]:
    """Add the hand grades to the gradebook's rows (gradebook.row_for): each lab's points and
    the total, each graded lab's rubric total to the maximum; `hand_graded` holds the points
    added, and the status names the write-ups still to grade. Returns a line for each grade
    that no report's write-up takes (the student's report lacks that lab's write-up)."""
    used: set[tuple[str, str]] = set()
    strays: list[str] = []
    for row in rows:
        writeups: dict[str, tuple[float, str]] = row.get("writeups") or {}
        written = _written_answers(row)
        row["hand_graded"] = 0.0 if writeups or written else ""
        waiting = []
        answers_waiting = []
        for lab, asked in written.items():
            grade = grades.get((row["student"], lab))
            used.add((row["student"], lab))
            earned = round(sum(grade.questions.get(qid, 0.0) for qid in asked), 2) if grade else 0.0
            strays += [f"{row['student']} {lab} {qid}: points in the sheet, but the student's report holds no "
                       "answer to that question: not added" for qid in (grade.questions if grade else {})
                       if qid not in asked]
            if isinstance(row["max"], (int, float)):  # every written answer's points, answered or not
                row["max"] = round(row["max"] + sum(top for top, _ in asked.values()), 2)
            if earned:
                row["labs"][lab] = round(row["labs"].get(lab, 0.0) + earned, 2)
                row["total"] = round(row["total"] + earned, 2)
                row["hand_graded"] = round(row["hand_graded"] + earned, 2)
            if any(answered and (grade is None or qid not in grade.questions) for qid, (_, answered) in asked.items()):
                answers_waiting.append(lab)
        for lab, (top, state) in writeups.items():
            grade = grades.get((row["student"], lab))
            used.add((row["student"], lab))
            row["max"] = round(row["max"] + top, 2) if isinstance(row["max"], (int, float)) else row["max"]
            if grade is not None and grade.items:
                row["labs"][lab] = round(row["labs"].get(lab, 0.0) + grade.points, 2)
                row["total"] = round(row["total"] + grade.points, 2)
                row["hand_graded"] = round(row["hand_graded"] + grade.points, 2)
            if state == PENDING and (grade is None or grade.missing):
                waiting.append(lab)
        if waiting:
            row["status"] = f"{row['status']}; write-up to grade: {', '.join(waiting)}"
        if answers_waiting:
            row["status"] = f"{row['status']}; written answers to grade: {', '.join(answers_waiting)}"
    return strays + [f"{student} {lab}: hand grades in the sheet, but no report of this run holds that write-up "
                     "or those answers: not added" for (student, lab), grade in grades.items()
                     if (grade.items or grade.questions) and (student, lab) not in used]


def _written_answers(row: dict[str, Any]) -> dict[str, dict[str, tuple[float, bool]]]:
    """The row's questions graded by hand, by lab: question id -> (its points, answered), from
    the student's report (an unanswered one earns nothing and waits for no grade)."""
    report = row.get("report")
    found: dict[str, dict[str, tuple[float, bool]]] = {}
    for lab in getattr(report, "labs", None) or []:
        asked = {q.id: (q.max, q.status == "manual") for q in lab.questions if q.by_hand}
        if asked:
            found[lab.name] = asked
    return found
