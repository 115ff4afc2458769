"""Graded questions: a lab's `answers.md`, checked against its manifest and answer key.

The questions a lab grades are listed in its manifest (labs/<lab>/lab.json, "questions"):
an id, a title, a kind ("number" or "text"), the points, and how a number is checked:

- "key": against the instructor's answer key, exactly or within a tolerance
  (solutions/<lab>/answer_key.json, never shipped to students);
- "bench": against a figure of the student's own bench in the same grading run (e.g.
  "your kernel's GB/s at n = 2^26"), within a relative tolerance;
- text answers are collected into the report for grading by hand: their points are
  listed as pending and are not part of the automatic total.

The student writes the answers in labs/<lab>/answers.md, one `## <id>` heading per
question with an `Answer:` line below it. Everything about grading comes from the
pristine kit (manifest, key); the student's file gives only the answer texts, read as
plain text with a size limit, so it cannot change what is asked or what it is worth.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEY_SCHEMA = "labkit-answer-key"
KEY_VERSION = 1
MAX_FILE_BYTES = 256 * 1024  # an answers file larger than this is read only up to here
MAX_ANSWER_CHARS = 4000  # of one answer, in the report
DEFAULT_BENCH_TOLERANCE = 0.15  # your own bench run by hand and the grading run differ a little
BENCH_FIGURES = {"throughput": "throughput", "median_ms": "time (ms)", "pct_peak": "% of peak"}

# Statuses of one question.
CORRECT, WRONG, UNANSWERED, MANUAL, UNCHECKED = "correct", "wrong", "unanswered", "manual", "unchecked"

_HEADING = re.compile(r"^##\s+([A-Za-z0-9_-]+)\b")
_ANSWER = re.compile(r"^\s*(?:\*\*|__)?answer(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s?(.*)$", re.IGNORECASE)
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_POWER = re.compile(r"(?<![\w.])(\d+)\s*\^\s*(\d+)(?![\w.])")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}(?!\d))")
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
PLACEHOLDERS = {"", "todo", "tbd", "...", "-", "_", "?"}


class AnswerKeyError(Exception):
    """An answer key cannot be used; the message names the file and the entry."""


@dataclass(frozen=True)
class Question:
    """One graded question of a lab's manifest."""

    id: str
    title: str
    kind: str  # "number" | "text"
    points: float
    check: str  # "key" | "bench" | "manual"
    figure: str = "throughput"  # for "bench": which figure of the student's graded workload
    tolerance: float = DEFAULT_BENCH_TOLERANCE  # for "bench": relative


def parse_questions(raw: Any, where: str) -> tuple[Question, ...]:
    """The manifest's "questions" list, validated (ValueError names the entry)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f'{where}: "questions" must be a list of objects')
    found: list[Question] = []
    for index, item in enumerate(raw):
        at = f'{where}: "questions"[{index}]'
        if not isinstance(item, dict):
            raise ValueError(f"{at} must be an object")
        qid = item.get("id")
        if not isinstance(qid, str) or not re.fullmatch(r"[A-Za-z0-9_-]+", qid):
            raise ValueError(f'{at}: "id" must be letters, digits, "-" or "_"')
        if any(q.id == qid for q in found):
            raise ValueError(f"{at}: the id {qid!r} is used twice")
        kind = item.get("kind", "number")
        if kind not in ("number", "text"):
            raise ValueError(f'{at}: "kind" must be "number" or "text"')
        points = item.get("points", 1)
        if not isinstance(points, (int, float)) or isinstance(points, bool) or points < 0:
            raise ValueError(f'{at}: "points" must be a number >= 0')
        check = item.get("check", "key" if kind == "number" else "manual")
        if kind == "text" and check != "manual":
            raise ValueError(f'{at}: a text question is graded by hand ("check": "manual")')
        if check not in ("key", "bench", "manual"):
            raise ValueError(f'{at}: "check" must be "key", "bench" or "manual"')
        figure = item.get("figure", "throughput")
        if figure not in BENCH_FIGURES:
            raise ValueError(f'{at}: "figure" must be one of {", ".join(BENCH_FIGURES)}')
        tolerance = item.get("tolerance", DEFAULT_BENCH_TOLERANCE)
        if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not 0 <= tolerance < 1:
            raise ValueError(f'{at}: "tolerance" must be a fraction from 0 to 1, e.g. 0.15')
        title = item.get("title", qid)
        found.append(Question(qid, title if isinstance(title, str) and title else qid, kind, float(points),
                              check, figure, float(tolerance)))
    return tuple(found)


# --- the student's file ------------------------------------------------------------------

def read_answers(path: Path) -> tuple[dict[str, str], str]:
    """The answer text by question id, and a note on what was odd about the file ('' if nothing)."""
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return {}, f"{path.name} not found: answer the questions in it to earn their points"
    except OSError as exc:
        return {}, f"cannot read {path.name}: {exc.strerror or exc}"
    note = ""
    if len(data) > MAX_FILE_BYTES:
        data = data[:MAX_FILE_BYTES]
        note = f"{path.name} is larger than {MAX_FILE_BYTES // 1024} KiB: only its beginning was read"
    return parse_answers(data.decode("utf-8", errors="replace")), note


def parse_answers(text: str) -> dict[str, str]:
    """Answers by id: for each `## <id>` heading, the text after its first `Answer:` line,
    up to the next `## ` heading (HTML comments, the template's hints, removed)."""
    answers: dict[str, str] = {}
    current: str | None = None
    lines: list[str] | None = None
    for line in _COMMENT.sub("", text).splitlines():
        if line.startswith("## "):
            if current is not None and lines is not None:
                answers.setdefault(current, "\n".join(lines).strip())
            heading = _HEADING.match(line)
            current, lines = (heading.group(1) if heading else None), None
            continue
        if current is None:
            continue
        if lines is None:
            start = _ANSWER.match(line)
            if start:
                lines = [start.group(1)]
        else:
            lines.append(line)
    if current is not None and lines is not None:
        answers.setdefault(current, "\n".join(lines).strip())
    return answers


def parse_number(text: str) -> float | None:
    """The first number in `text`: `2047`, `-0.25`, `1.5e3`, `1,024`, `2^26` (None if none)."""
    def power(match: re.Match[str]) -> str:
        base, exponent = int(match.group(1)), int(match.group(2))
        return str(base ** exponent) if exponent <= 64 and base <= 1 << 20 else match.group(0)

    cleaned = _THOUSANDS.sub("", _POWER.sub(power, text.replace("`", "").replace("*", "")))
    match = _NUMBER.search(cleaned)
    if not match:
        return None
    value = float(match.group(0))
    return value if math.isfinite(value) else None


def is_placeholder(answer: str) -> bool:
    return answer.strip().strip("`*_ ").lower() in PLACEHOLDERS


# --- the instructor's key ----------------------------------------------------------------

def read_key(path: Path) -> dict[str, dict[str, Any]]:
    """The key's entries by question id ({} when there is no key file)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise AnswerKeyError(f"{path}: cannot read the answer key: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != KEY_SCHEMA or data.get("version") != KEY_VERSION:
        raise AnswerKeyError(f'{path}: not an answer key (it needs "schema": "{KEY_SCHEMA}", "version": {KEY_VERSION})')
    entries = data.get("answers")
    if not isinstance(entries, dict) or not all(isinstance(v, dict) for v in entries.values()):
        raise AnswerKeyError(f'{path}: "answers" must map question ids to objects')
    for qid, entry in entries.items():
        for name in ("value", "abs_tolerance", "rel_tolerance"):
            value = entry.get(name)
            if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool)
                                      or not math.isfinite(value) or (name != "value" and value < 0)):
                raise AnswerKeyError(f'{path}: "{qid}".{name} must be a number' + (" >= 0" if name != "value" else ""))
    return entries


def key_matches(answer: float, entry: dict[str, Any]) -> bool:
    """Whether `answer` equals the key's value, within its tolerances."""
    value = float(entry["value"])
    allowed = max(float(entry.get("abs_tolerance") or 0.0), float(entry.get("rel_tolerance") or 0.0) * abs(value),
                  1e-9 * max(1.0, abs(value)))
    return abs(answer - value) <= allowed


# --- grading -----------------------------------------------------------------------------

@dataclass
class AnswersResult:
    """The graded questions of one lab."""

    points: float = 0.0
    max: float = 0.0  # of the automatically checked questions
    pending: float = 0.0  # points of the questions graded by hand
    file: str = ""
    note: str = ""
    questions: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"points": self.points, "max": self.max, "pending": self.pending, "file": self.file,
                "note": self.note, "questions": self.questions}


def grade(questions: tuple[Question, ...], answers_path: Path, shown_as: str, key: dict[str, dict[str, Any]],
          bench: dict[str, Any] | None, points_of: dict[str, float] | None = None) -> AnswersResult:
    """Check every question; `bench` is the student's bench JSON of this run (None when it did not run)."""
    result = AnswersResult(file=shown_as)
    if not questions:
        return result
    answers, result.note = read_answers(answers_path)
    for question in questions:
        worth = float((points_of or {}).get(question.id, question.points))
        answer = answers.get(question.id)
        row: dict[str, Any] = {"id": question.id, "title": question.title, "kind": question.kind,
                               "check": question.check, "max": worth, "points": 0.0,
                               "answer": _clip(answer or "")}
        if question.check == "manual":
            result.pending += worth
            row.update(status=MANUAL if answer and not is_placeholder(answer) else UNANSWERED, why="")
        else:
            result.max += worth
            status, why, figure = _check(question, answer, key.get(question.id), bench)
            row.update(status=status, why=why, points=worth if status == CORRECT else 0.0)
            if figure is not None:
                row["figure"] = figure
        result.points += row["points"]
        result.questions.append(row)
    result.points, result.max, result.pending = round(result.points, 2), round(result.max, 2), round(result.pending, 2)
    return result


def _check(question: Question, answer: str | None, entry: dict[str, Any] | None,
           bench: dict[str, Any] | None) -> tuple[str, str, float | None]:
    """(status, why, the bench figure compared with) of one automatically checked question."""
    if answer is None:
        return UNANSWERED, f"no `## {question.id}` heading with an `Answer:` line found", None
    if is_placeholder(answer):
        return UNANSWERED, "not answered yet", None
    number = parse_number(answer)
    if number is None:
        return WRONG, "no number found in the answer: write the number first (e.g. `Answer: 2047`)", None
    if question.check == "bench":
        figure = bench_figure(bench, question.figure)
        if figure is None:
            return UNCHECKED, "no figure of your bench in this grading run to compare with (did the bench run?)", None
        if figure and abs(number - figure) <= question.tolerance * abs(figure):
            return CORRECT, f"within {question.tolerance:.0%} of your bench's {figure:.4g}", figure
        return WRONG, (f"your bench measured {figure:.4g} ({BENCH_FIGURES[question.figure]}) in this grading run; "
                       f"an answer within {question.tolerance:.0%} of it counts"), figure
    if entry is None or not isinstance(entry.get("value"), (int, float)):
        return UNCHECKED, "the instructor's answer key has no value for this question", None
    if key_matches(number, entry):
        return CORRECT, "", None
    return WRONG, "not the expected value: recount, or measure again, and show your working in the handout's terms", None


def bench_figure(bench: dict[str, Any] | None, figure: str) -> float | None:
    """The student's `figure` in the bench's first graded workload (None if missing)."""
    if not isinstance(bench, dict):
        return None
    for workload in bench.get("workloads") or []:
        if isinstance(workload, dict) and workload.get("graded"):
            for row in workload.get("results") or []:
                if isinstance(row, dict) and row.get("role") == "student":
                    value = row.get(figure)
                    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                    return float(value) if ok else None
            return None
    return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ANSWER_CHARS else text[:MAX_ANSWER_CHARS] + " [...]"
