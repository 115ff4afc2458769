"""The write-up of a lab: `labs/<lab>/WRITEUP.md`, graded by hand with the manifest's rubric.

A lab's manifest may ask for a write-up ("writeup" in labs/<lab>/lab.json): a rubric of
items, each with an id, the title of its heading in the write-up, its points and what
earns them, and the total of those points:

    "writeup": {"total": 10, "rubric": [
        {"id": "machine", "title": "Machine and scores", "points": 2, "earns": "..."}, ...]}

The student writes `labs/<lab>/WRITEUP.md` (a template with one `## <title>` heading per
item ships with the lab). The grader gives it no automatic points: it is graded by hand,
its points "pending" in the report until the instructor fills in the class's grading
sheet (grader/instructor/handgrades.py). What the grader checks is its form only, for the
student and the instructor: every rubric heading present, a machine line (the GPU and its
`sm_XX`, as the bench's first line gives it) and a score table (the bench's table, or a
Markdown table). It records the text (capped), its SHA-256, its word count and each
item's section, so that the report shows the rubric with the student's text beside it.

The file is read as bytes, at most MAX_FILE_BYTES, decoded as UTF-8 with replacement:
it is never executed, and every rendering escapes it.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILE_NAME = "WRITEUP.md"
MAX_FILE_BYTES = 128 * 1024  # a write-up longer than this is read only up to here
MAX_TEXT_CHARS = 20_000  # of the whole text, in the report
MAX_SECTION_CHARS = 6_000  # of one rubric item's section, in the report
MAX_HASHED_BYTES = 64 * 1024 * 1024  # the SHA-256 covers the whole file up to here

# Statuses of a write-up. PENDING: handed in, to be graded by hand; EMPTY: the template's
# headings and nothing else; MISSING: no file.
PENDING, EMPTY, MISSING = "pending", "empty", "missing"

_ID = re.compile(r"[A-Za-z0-9_-]+")
_ITEM_KEYS = {"id", "title", "points", "earns"}
_KEYS = {"total", "rubric"}
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)  # an unclosed comment hides the rest, as in Markdown
_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*)$")  # the text's closing #s are stripped after
_MACHINE = re.compile(r"\bsm_?\d{2,3}[a-z]?\b", re.IGNORECASE)
_BENCH_TABLE = re.compile(r"^\s*name\s+role\s+median\s+ms\b", re.IGNORECASE)
_MD_SEPARATOR = re.compile(r"^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)+\|?\s*$")


@dataclass(frozen=True)
class Item:
    """One item of a write-up's rubric."""

    id: str
    title: str  # the heading of its section in the write-up
    points: float
    earns: str  # what earns the points

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "points": self.points, "earns": self.earns}


@dataclass(frozen=True)
class Rubric:
    """A lab's write-up rubric (the manifest's "writeup")."""

    items: tuple[Item, ...]
    total: float

    def item(self, item_id: str) -> Item | None:
        return next((item for item in self.items if item.id == item_id), None)


def parse_rubric(raw: Any, where: str) -> Rubric | None:
    """The manifest's "writeup" object, validated (ValueError names the key); None when absent."""
    if raw is None:
        return None
    at = f'{where}: "writeup"'
    if not isinstance(raw, dict):
        raise ValueError(f'{at} must be an object: {{"total": <points>, "rubric": [<items>]}}')
    unknown = sorted(set(raw) - _KEYS)
    if unknown:
        raise ValueError(f'{at} has the unknown key "{unknown[0]}" (it takes "total" and "rubric")')
    rubric = raw.get("rubric")
    if not isinstance(rubric, list) or not rubric:
        raise ValueError(f'{at}."rubric" must be a non-empty list of items '
                         '({"id", "title", "points", "earns"})')
    items: list[Item] = []
    for index, entry in enumerate(rubric):
        items.append(_item(entry, f'{at}."rubric"[{index}]', items))
    total = raw.get("total")
    if not _is_number(total) or total <= 0:
        raise ValueError(f'{at}."total" must be a number above 0: the sum of the items\' points')
    summed = sum(item.points for item in items)
    if abs(summed - total) > 1e-9:
        raise ValueError(f'{at}."total" is {total:g} but the items\' points add up to {summed:g}: '
                         'make them agree')
    return Rubric(tuple(items), float(total))


def _item(entry: Any, at: str, before: list[Item]) -> Item:
    if not isinstance(entry, dict):
        raise ValueError(f"{at} must be an object with \"id\", \"title\", \"points\" and \"earns\"")
    unknown = sorted(set(entry) - _ITEM_KEYS)
    if unknown:
        raise ValueError(f'{at} has the unknown key "{unknown[0]}" (an item takes id, title, points and earns)')
    item_id = entry.get("id")
    if not isinstance(item_id, str) or not _ID.fullmatch(item_id):
        raise ValueError(f'{at}: "id" must be letters, digits, "-" or "_" (it names a column of the grading sheet)')
    if item_id.lower() in {"student", "lab", "max", "comment"}:
        raise ValueError(f'{at}: the id {item_id!r} is a column of the grading sheet already: choose another')
    if any(item.id.lower() == item_id.lower() for item in before):
        raise ValueError(f"{at}: the id {item_id!r} is used twice")
    title = entry.get("title")
    if not isinstance(title, str) or not normalise(title):
        raise ValueError(f'{at}: "title" must be a non-empty string (the heading of the item\'s section)')
    if any(normalise(item.title) == normalise(title) for item in before):
        raise ValueError(f"{at}: the title {title!r} is used twice: each item needs a heading of its own")
    points = entry.get("points")
    if not _is_number(points) or points <= 0:
        raise ValueError(f'{at}: "points" must be a number above 0')
    earns = entry.get("earns")
    if not isinstance(earns, str) or not earns.strip():
        raise ValueError(f'{at}: "earns" must say what earns the points (a non-empty string)')
    return Item(item_id, title.strip(), float(points), earns.strip())


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def normalise(heading: str) -> str:
    """A heading as compared with a rubric title: lower case, without numbering ("2."),
    punctuation, emphasis or extra spaces."""
    text = re.sub(r"^\s*\d+[.)]?\s*", "", heading.lower())
    return " ".join(re.sub(r"[^\w\s]", " ", text).split())


# --- the student's file -------------------------------------------------------------------------

@dataclass
class WriteupResult:
    """What the grader records of a lab's write-up."""

    file: str
    rubric: Rubric
    status: str = MISSING
    note: str = ""
    text: str = ""  # the write-up as read (capped at MAX_TEXT_CHARS)
    bytes: int = 0
    sha256: str = ""
    truncated: bool = False  # longer than MAX_FILE_BYTES: only its beginning was read
    words: int = 0  # of the student's own text: HTML comments and headings left out
    headings: dict[str, bool] = field(default_factory=dict)  # rubric id -> its heading is present
    sections: dict[str, str] = field(default_factory=dict)  # rubric id -> the text under its heading
    machine_line: str = ""  # the first line naming an sm_XX ('' when none)
    score_table: bool = False

    @property
    def problems(self) -> list[str]:
        """What the form lacks, one sentence each (nothing for a missing file: the note says it)."""
        if self.status == MISSING:
            return []
        missing = [item.title for item in self.rubric.items if not self.headings.get(item.id)]
        found = [f"no heading `## {title}`" for title in missing]
        if not self.machine_line:
            found.append("no machine line (paste the first line your bench prints: the GPU and its sm_XX)")
        if not self.score_table:
            found.append("no score table (paste the table your bench prints, or a Markdown table)")
        return found

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "status": self.status, "points": 0.0, "pending": self.rubric.total,
                "max": self.rubric.total, "note": self.note,
                "rubric": [item.as_dict() for item in self.rubric.items],
                "bytes": self.bytes, "sha256": self.sha256, "truncated": self.truncated, "words": self.words,
                "headings": self.headings, "sections": self.sections,
                "form": {"ok": not self.problems, "problems": self.problems, "machine_line": self.machine_line,
                         "score_table": self.score_table,
                         "headings_missing": [i.id for i in self.rubric.items if not self.headings.get(i.id)]},
                "text": self.text}


def grade(rubric: Rubric, path: Path, shown_as: str) -> WriteupResult:
    """The write-up at `path` read and its form checked; it earns no points here."""
    result = WriteupResult(file=shown_as, rubric=rubric, headings={item.id: False for item in rubric.items})
    data, result.sha256, result.bytes, why = _read(path)
    if data is None:
        result.note = why
        return result
    result.truncated = result.bytes > MAX_FILE_BYTES
    text = data[:MAX_FILE_BYTES].decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    result.text = text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + "\n[...]"
    _read_form(result, _COMMENT.sub("", text))
    result.status = PENDING if result.words else EMPTY
    notes = [f"{path.name} is larger than {MAX_FILE_BYTES // 1024} KiB: only its beginning was read"
             if result.truncated else "",
             f"{shown_as} holds the template's headings only: write your report under them" if not result.words else "",
             f"{shown_as}: " + "; ".join(result.problems) if result.words and result.problems else ""]
    result.note = "; ".join(note for note in notes if note)
    return result


def _read(path: Path) -> tuple[bytes | None, str, int, str]:
    """(the first MAX_FILE_BYTES + 1 bytes, the SHA-256 of the whole file, its size, why it
    could not be read)."""
    try:
        with path.open("rb") as stream:
            digest, data, size = hashlib.sha256(), b"", 0
            while size < MAX_HASHED_BYTES:
                chunk = stream.read(1 << 20)
                if not chunk:
                    break
                if len(data) <= MAX_FILE_BYTES:
                    data += chunk[:MAX_FILE_BYTES + 1 - len(data)]
                digest.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        return None, "", 0, (f"{path.name} not found: write your report in it (the template's headings are the "
                             "rubric's items) to have it graded")
    except OSError as exc:
        return None, "", 0, f"cannot read {path.name}: {exc.strerror or exc}"
    return data, digest.hexdigest(), size, ""


def _read_form(result: WriteupResult, text: str) -> None:
    """Headings, sections, words, the machine line and the score table of `text` (comments removed)."""
    by_title = {normalise(item.title): item for item in result.rubric.items}
    lines = text.splitlines()
    current: tuple[str, int] | None = None  # (rubric id, heading level) of the section being read
    body: dict[str, list[str]] = {}
    words = 0
    for index, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading:
            level, item = len(heading.group(1)), by_title.get(normalise(heading.group(2).rstrip(" \t#")))
            if item is not None and not result.headings[item.id]:
                result.headings[item.id] = True
                current = (item.id, level)
                body[item.id] = []
                continue
            if current is not None and level <= current[1]:
                current = None
            if item is not None or current is None:
                continue
        words += len(re.findall(r"\w+", line))
        if current is not None:
            body[current[0]].append(line)
        if not result.machine_line and _MACHINE.search(line):
            result.machine_line = _clip(line.strip(), 300)
        if not result.score_table and _is_table(lines, index):
            result.score_table = True
    result.words = words
    result.sections = {item_id: _clip("\n".join(part).strip(), MAX_SECTION_CHARS) for item_id, part in body.items()}


def _is_table(lines: list[str], index: int) -> bool:
    """Whether a score table starts at `lines[index]`: the bench's (its header `name role
    median ms`, then a row) or a Markdown table (a header row, its |---| line, a row)."""
    after = [line for line in lines[index + 1:index + 3]]
    if _BENCH_TABLE.match(lines[index]):
        return bool(after and after[0].strip())
    return (lines[index].count("|") >= 2 and len(after) == 2 and bool(_MD_SEPARATOR.match(after[0]))
            and after[1].count("|") >= 2)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"
