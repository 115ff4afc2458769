"""Graded questions: a lab's `answers.md`, checked against its manifest and answer key.

The questions a lab grades are listed in its manifest (labs/<lab>/lab.json, "questions"):
an id, a title, a kind ("number" or "text"), the points, and how a number is checked:

- "key": against the instructor's answer key, exactly or within a tolerance
  (solutions/<lab>/answer_key.json, never shipped to students). Where the grading machine
  has no key (the Classroom runner, a student's own machine) such an answer is "at_deadline":
  checked when the instructor grades the class with the keys, its points pending until then;
- "bench": against a figure of the student's own bench in the same grading run (e.g.
  "your kernel's GB/s at n = 2^26"), within a relative tolerance. The figure is the
  student's row of the first graded workload, or of the workload the question names
  ("workload": its exact name, e.g. "kernel fusion n=65536 iterations=100"), which the
  grading run's bench times for it even though it is not scored. A run whose output was
  wrong in that workload gives no figure to answer with (the bench prints no line);
  a bench JSON without the workload leaves the answer unchecked;
- "bench" with the figure "peak_dram": the grading GPU's peak DRAM bandwidth as the student
  computes it (memory clock x bus width x 2 for double data rate / 8), checked for
  consistency with the grading run's own bench: at least the copy roofline it measured
  (a peak below a measured copy is a slip), and within the question's tolerance of the
  peak gpu_specs.py gives for that GPU (a GPU not in the table: left to the instructor);
- "profile": against a figure of Nsight Compute (profile.py) on one of the lab's kernels
  (the question's "candidate", e.g. "ref:tiled", and "metric", e.g. "dram_pct"), taken
  by the grader itself in this grading run, on the kit's own program (never one that holds
  the student's code: a profile file in the build folder is never read). The grading run
  profiles only where the course turns it on (`profile_answers`); without a profile of
  this run the answer is "unchecked", its points pending;
- text answers are collected into the report for grading by hand: their points are
  listed as pending and are not part of the automatic total.

A bench answer is the line the bench prints, which names the GPU it measured on
(`Answer: 3002 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)`); it may hold one such line
per GPU. The grading GPU is the one in the grading run's bench JSON. A line for the
grading GPU's model is checked within the question's tolerance of the grading run's
figure. A line for another GPU is compared where the figure travels: a % of peak is a
share of that GPU's own peak, and a throughput (or time) from a GPU whose peaks are known
(gpu_specs.py) is taken as a share of that GPU's peak; either is checked against the
grading run's own share within the question's cross-GPU tolerance. Anything else (a GPU
not in the table, a workload without a peak, no GPU named) is left to the instructor:
status "other_gpu", its points pending like a written answer's. Every line that can be
checked must fit, so a student gains nothing by adding lines or naming another GPU.

What a wrong answer's feedback says is the course's choice (`answer_feedback`): "verdict"
says whether the answer is within tolerance and what to do, never the grading run's
figure (a student could paste it back); "figures" shows the figures compared.

The student writes the answers in labs/<lab>/answers.md, one `## <id>` heading per
question with an `Answer:` line below it. Everything about grading comes from the
pristine kit (manifest, key); the student's file gives only the answer texts, read as
plain text with a size limit, so it cannot change what is asked or what it is worth.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import gpu_specs, layout
from grader.gpu_specs import device_label

KEY_SCHEMA = "labkit-answer-key"
KEY_VERSION = 1
MAX_FILE_BYTES = 256 * 1024  # an answers file larger than this is read only up to here
MAX_ANSWER_CHARS = 4000  # of one answer, in the report
DEFAULT_BENCH_TOLERANCE = 0.15  # your own bench run by hand and the grading run differ a little
# Two GPUs' shares of their peaks differ more than two runs on one GPU: caches, clocks and
# how near its peak each GPU's memory gets differ.
DEFAULT_CROSS_GPU_TOLERANCE = 0.25
BENCH_FIGURES = {"throughput": "throughput", "median_ms": "time (ms)", "pct_peak": "% of peak",
                 "peak_dram": "peak DRAM bandwidth (GB/s)"}
PEAK_DRAM = "peak_dram"  # a bench figure the student computes, checked against the bench's copy roofline
# A bench question's "workload": as cmake/LabKitManifest.cmake allows (it goes into a CMake list
# and a C++ string), "" for the first graded workload.
WORKLOAD_NAME = re.compile(r"[A-Za-z0-9 _=.,+()-]*")
DEFAULT_PEAK_BAND = 0.05  # "peak_dram": of gpu_specs.py's peak for the grading GPU
# What a "profile" question may ask for: a figure of profile.py's kernels (all of them
# comparable across GPUs: shares of a peak, or sectors per request).
PROFILE_METRICS = {
    "dram_pct": "DRAM throughput, % of peak",
    "global_ld_efficiency_pct": "global load efficiency, %",
    "global_st_efficiency_pct": "global store efficiency, %",
    "shared_efficiency_pct": "shared efficiency, %",
    "sectors_per_request": "32-byte sectors per global load request",
}
PROFILE_WHY = ("not checked in this grading run: it took no profile (run `python3 -m grader profile {lab}` "
               "to measure the figure on your GPU; it is checked when a grading run profiles, "
               "`profile_answers` in the course's grader.toml, or by your instructor): its points are pending")
# What a bench answer's feedback shows (the config's `answer_feedback`, --answer-feedback).
VERDICT, FIGURES = "verdict", "figures"
FEEDBACK = (VERDICT, FIGURES)

# Statuses of one question. OTHER_GPU: a bench figure measured on another GPU that the
# grader cannot compare: left to the instructor, its points pending.
CORRECT, WRONG, UNANSWERED, MANUAL, UNCHECKED = "correct", "wrong", "unanswered", "manual", "unchecked"
OTHER_GPU = "other_gpu"
# AT_DEADLINE: a number checked against the key, graded where there is no key at all: the
# instructor's run at the deadline checks it; its points are pending until then.
AT_DEADLINE = "at_deadline"
AT_DEADLINE_WHY = ("checked against the instructor's key at the deadline (the key is not on this grading machine, "
                   "e.g. the Classroom runner): its points are pending until then")

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
    check: str  # "key" | "bench" | "manual" | "profile"
    figure: str = "throughput"  # for "bench": which figure of the student's row in `workload`
    tolerance: float = DEFAULT_BENCH_TOLERANCE  # for "bench" and "profile": relative, on the grading GPU
    cross_gpu_tolerance: float = DEFAULT_CROSS_GPU_TOLERANCE  # for "bench": relative, of shares of peak
    metric: str = ""  # for "profile": a key of PROFILE_METRICS
    candidate: str = ""  # for "profile": the bench candidate profiled, e.g. "ref:tiled"
    workload: str = ""  # for "bench": the workload's exact name ("": the first graded workload)


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
        if check not in ("key", "bench", "manual", "profile"):
            raise ValueError(f'{at}: "check" must be "key", "bench", "manual" or "profile"')
        figure = item.get("figure", "throughput")
        if figure not in BENCH_FIGURES:
            raise ValueError(f'{at}: "figure" must be one of {", ".join(BENCH_FIGURES)}')
        metric, candidate = item.get("metric", ""), item.get("candidate", "")
        if check == "profile":
            if metric not in PROFILE_METRICS:
                raise ValueError(f'{at}: "metric" must be one of {", ".join(PROFILE_METRICS)}')
            if not isinstance(candidate, str) or not re.fullmatch(r"[A-Za-z0-9_:]+", candidate):
                raise ValueError(f'{at}: "candidate" must name a candidate of the bench, e.g. "ref:tiled"')
        elif metric or candidate:
            raise ValueError(f'{at}: "metric" and "candidate" belong to a "profile" question')
        workload = item.get("workload", "")
        if workload and (check != "bench" or figure == PEAK_DRAM):
            raise ValueError(f'{at}: "workload" belongs to a "bench" question with a measured figure')
        if not isinstance(workload, str) or not WORKLOAD_NAME.fullmatch(workload):
            raise ValueError(f'{at}: "workload" must be a workload\'s exact name, of letters, digits, spaces '
                             'and _=.,+()- (e.g. "kernel fusion n=65536 iterations=100")')
        default_tolerance = DEFAULT_PEAK_BAND if check == "bench" and figure == PEAK_DRAM else DEFAULT_BENCH_TOLERANCE
        tolerance = item.get("tolerance", default_tolerance)
        if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or not 0 <= tolerance < 1:
            raise ValueError(f'{at}: "tolerance" must be a fraction from 0 to 1, e.g. 0.15')
        cross = item.get("cross_gpu_tolerance", DEFAULT_CROSS_GPU_TOLERANCE)
        if not isinstance(cross, (int, float)) or isinstance(cross, bool) or not 0 <= cross < 1:
            raise ValueError(f'{at}: "cross_gpu_tolerance" must be a fraction from 0 to 1, e.g. 0.25')
        title = item.get("title", qid)
        found.append(Question(qid, title if isinstance(title, str) and title else qid, kind, float(points),
                              check, figure, float(tolerance), float(cross), metric, candidate, workload))
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
    # Beyond the key's tolerances, the rounding of a decimal written out: relative to the key,
    # so that a tiny key (a subnormal, 1.4e-45) is not matched by every tiny answer.
    allowed = max(float(entry.get("abs_tolerance") or 0.0), float(entry.get("rel_tolerance") or 0.0) * abs(value),
                  1e-9 * abs(value) if value else 1e-12)
    return abs(answer - value) <= allowed


# --- a bench answer's lines --------------------------------------------------------------

_MEASURED_ON = re.compile(r"\bmeasured\s+on\b", re.IGNORECASE)
_ARCH = re.compile(r"\(\s*sm_?(\d{2,3})\s*\)\s*$", re.IGNORECASE)
_LINE_START = re.compile(r"^\s*(?:[-*+>]\s+)?(?:(?:\*\*|__)?answer(?:\*\*|__)?\s*:\s*(?:\*\*|__)?)?", re.IGNORECASE)
_NAME_EDGES = " \t`*_.,;:\"'"
MAX_GPU_NAME = 100  # characters of a line's GPU name kept


@dataclass(frozen=True)
class Measured:
    """One line of a bench answer: the figure and the GPU it names ("" when it names none)."""

    value: float | None
    gpu: str = ""
    arch: str = ""  # "90" when the line gives (sm_90)
    text: str = ""  # the line as written

    def label(self) -> str:
        return self.gpu + (f" (sm_{self.arch})" if self.arch else "")


def parse_measured(answer: str, joiner: re.Pattern[str] = _MEASURED_ON) -> list[Measured]:
    """The figures of a bench answer: every line `<number> <unit> measured on <GPU> (sm_XY)`
    (an `Answer:` or list mark before it is allowed), and a number alone on the first line
    (which names no GPU). Other lines are the student's notes."""
    found: list[Measured] = []
    for index, raw in enumerate(line for line in answer.splitlines() if line.strip()):
        body = _LINE_START.sub("", raw, count=1)
        split = joiner.search(body)
        if split is None:
            if index == 0 and (value := parse_number(body)) is not None:
                found.append(Measured(value, text=raw.strip()))
            continue
        name = body[split.end():].strip(_NAME_EDGES)
        arch = _ARCH.search(name)
        if arch:
            name = name[:arch.start()].strip(_NAME_EDGES)
        # No GPU's name is long: a longer one is kept short, for the report.
        found.append(Measured(parse_number(body[:split.start()]), _short(" ".join(name.split()), MAX_GPU_NAME),
                              arch.group(1) if arch else "", raw.strip()))
    return found


# --- the grading run's GPU and workload ----------------------------------------------------

@dataclass(frozen=True)
class GradingFigure:
    """What a bench answer is compared with: the grading run's figure, its GPU and the peak
    of the graded workload (for shares of peak)."""

    value: float
    gpu: str  # the device's name in the bench JSON ("" if it gives none)
    label: str  # "NVIDIA H100 80GB HBM3 (sm_90)"
    peak: float | None  # the workload's peak on the grading GPU, in its unit
    peak_of: str  # "dram", "fp32", "rsqrt" or ""
    device_peak: float | None  # the grading GPU's peak of that kind


def _number(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _first_graded(bench: dict[str, Any] | None) -> dict[str, Any] | None:
    if not isinstance(bench, dict):
        return None
    for workload in bench.get("workloads") or []:
        if isinstance(workload, dict) and workload.get("graded"):
            return workload
    return None


def bench_workload(bench: dict[str, Any] | None, name: str = "") -> dict[str, Any] | None:
    """The workload named `name` (exactly), or the first graded one for "" (None if none)."""
    if not name:
        return _first_graded(bench)
    if not isinstance(bench, dict) or not isinstance(bench.get("workloads"), list):
        return None
    return next((w for w in bench["workloads"] if isinstance(w, dict) and w.get("name") == name), None)


def student_row(workload: dict[str, Any] | None) -> dict[str, Any] | None:
    """The student's row of a workload (None if it has none)."""
    for row in (workload or {}).get("results") or []:
        if isinstance(row, dict) and row.get("role") == "student":
            return row
    return None


def bench_figure(bench: dict[str, Any] | None, figure: str, workload: str = "") -> float | None:
    """The student's `figure` in the workload named `workload`, by default the bench's first
    graded workload (None if missing)."""
    for row in (bench_workload(bench, workload) or {}).get("results") or []:
        if isinstance(row, dict) and row.get("role") == "student":
            return _number(row.get(figure))
    return None


DEVICE_PEAKS = {"dram": "peak_dram_gbps", "fp32": "peak_fp32_gflops", "rsqrt": "peak_rsqrt_gops"}


def infer_peak_of(peak: float | None, device: dict[str, Any]) -> str:
    """Which of the device's peaks a workload's `peak` is (a small whole multiple or fraction
    of), as the bench finds it (common/src/bench_report.cpp) for benches that do not say."""
    if not peak or peak <= 0:
        return ""
    for kind, field_name in DEVICE_PEAKS.items():
        whole = _number(device.get(field_name))
        if whole is None or whole <= 0:
            continue
        # The JSON keeps 6 significant digits: the match is to their precision.
        if any(abs(peak - whole * scale) <= 2e-5 * peak for k in range(1, 5) for scale in (k, 1 / k)):
            return kind
    return ""


def grading_figure(bench: dict[str, Any] | None, figure: str, workload_name: str = "") -> GradingFigure | None:
    """The grading run's side of a bench question (None when its bench gave no such figure)."""
    value = bench_figure(bench, figure, workload_name)
    if value is None or not isinstance(bench, dict):
        return None
    device = bench.get("device") if isinstance(bench.get("device"), dict) else {}
    workload = bench_workload(bench, workload_name) or {}
    peak = _number(workload.get("peak"))
    peak = peak if peak and peak > 0 else None
    peak_of = workload.get("peak_of")
    if peak_of not in DEVICE_PEAKS:
        peak_of = infer_peak_of(peak, device)
    device_peak = _number(device.get(DEVICE_PEAKS[peak_of])) if peak_of else None
    name = device.get("name") if isinstance(device.get("name"), str) else ""
    return GradingFigure(value, name, device_label(device) or name or "the grading GPU", peak, peak_of,
                         device_peak if device_peak and device_peak > 0 else None)


# --- grading -----------------------------------------------------------------------------

@dataclass
class AnswersResult:
    """The graded questions of one lab."""

    points: float = 0.0
    max: float = 0.0  # of the automatically checked questions
    pending: float = 0.0  # points of the questions graded by hand, of bench figures left to the instructor,
    # and of key answers checked at the deadline
    file: str = ""
    note: str = ""
    questions: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"points": self.points, "max": self.max, "pending": self.pending, "file": self.file,
                "note": self.note, "questions": self.questions}


def grade(questions: tuple[Question, ...], answers_path: Path, shown_as: str, key: dict[str, dict[str, Any]],
          bench: dict[str, Any] | None, points_of: dict[str, float] | None = None,
          feedback: str = VERDICT, lab: str = "", key_exists: bool | None = None,
          profile: dict[str, Any] | None = None) -> AnswersResult:
    """Check every question; `bench` is the student's bench JSON of this run (None when it did
    not run). `feedback`: VERDICT keeps the grading run's figures out of what a wrong bench
    answer's row says, FIGURES shows them. `lab` names the bench a student runs. `profile`:
    the figures of the profile this grading run took itself (profile.profile_candidates),
    None when it took none: "profile" questions are then unchecked, their points pending."""
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
            status, why, figure = _check(question, answer, key.get(question.id), bench, feedback, lab, profile)
            no_key_here = not key if key_exists is None else not key_exists  # a broken key is not "no key"
            if status == UNCHECKED and question.check == "key" and no_key_here:
                status, why = AT_DEADLINE, AT_DEADLINE_WHY  # no key here at all, as on the Classroom runner
            if status in (OTHER_GPU, AT_DEADLINE) or is_pending_profile(question.check, status):
                result.pending += worth  # like a written answer: the instructor decides
            else:
                result.max += worth
            row.update(status=status, why=why, points=worth if status == CORRECT else 0.0)
            if figure is not None and feedback == FIGURES:
                row["figure"] = figure
        result.points += row["points"]
        result.questions.append(row)
    result.points, result.max, result.pending = round(result.points, 2), round(result.max, 2), round(result.pending, 2)
    later = sum(1 for row in result.questions if row["status"] == AT_DEADLINE)
    if later:
        result.note = "; ".join(filter(None, [result.note, (
            f"{later} answer{'s' if later > 1 else ''} checked against the instructor's key at the deadline: "
            "no answer key on this grading machine (the instructor's grading run gives --answer-keys DIR)")]))
    return result


def is_pending_profile(check: str, status: str) -> bool:
    """A "profile" answer this grading run could not check (it took no profile): pending."""
    return check == "profile" and status == UNCHECKED


def _check(question: Question, answer: str | None, entry: dict[str, Any] | None,
           bench: dict[str, Any] | None, feedback: str = VERDICT, lab: str = "",
           profile: dict[str, Any] | None = None) -> tuple[str, str, float | None]:
    """(status, why, the bench figure compared with) of one automatically checked question."""
    if answer is None:
        return UNANSWERED, f"no `## {question.id}` heading with an `Answer:` line found", None
    if is_placeholder(answer):
        return UNANSWERED, "not answered yet", None
    if question.check == "profile":
        return _check_profile(question, answer, profile, feedback == FIGURES, lab)
    if question.check == "bench" and question.figure == PEAK_DRAM:
        return _check_peak(question, answer, bench, feedback == FIGURES)
    if question.check == "bench":
        return _check_bench(question, answer, bench, feedback, lab)
    number = parse_number(answer)
    if number is None:
        return WRONG, "no number found in the answer: write the number first (e.g. `Answer: 2047`)", None
    if entry is None or not isinstance(entry.get("value"), (int, float)):
        return UNCHECKED, "the instructor's answer key has no value for this question", None
    if key_matches(number, entry):
        return CORRECT, "", None
    return WRONG, "not the expected value: recount, or measure again, and show your working in the handout's terms", None


# --- a profile answer --------------------------------------------------------------------

def profile_figure(profile: dict[str, Any] | None, candidate: str, metric: str) -> float | None:
    """`metric` of `candidate`'s kernel in a profile's figures ({candidate: [kernel, ...]},
    profile.py's JSON): of its longest kernel, the first listed (None if missing)."""
    kernels = (profile or {}).get(candidate)
    if not isinstance(kernels, list) or not kernels or not isinstance(kernels[0], dict):
        return None
    metrics = kernels[0].get("metrics")
    if not isinstance(metrics, dict):
        return None
    if metric == "sectors_per_request":
        sectors, requests = _number(metrics.get("global_ld_sectors")), _number(metrics.get("global_ld_requests"))
        return sectors / requests if sectors is not None and requests else None
    return _number(metrics.get(metric))


def _check_profile(question: Question, answer: str, profile: dict[str, Any] | None, figures: bool,
                   lab: str) -> tuple[str, str, float | None]:
    """A figure of Nsight Compute against the same figure of this grading run's own profile.
    Where lines name the grading GPU's model, they decide (each within `tolerance`): a share
    such as the DRAM throughput differs from one GPU to another (an H100's and an H200's of
    the same kernel are 25% and more apart), so a line measured on another GPU is not held
    against this one, and it cannot help either. Where none does, every line (another GPU,
    or none named) must be within `cross_gpu_tolerance`."""
    if profile is None:
        return UNCHECKED, PROFILE_WHY.format(lab=lab or "<lab>"), None
    target = profile_figure(profile, question.candidate, question.metric)
    if target is None:
        return UNCHECKED, (f"this grading run's profile has no {PROFILE_METRICS[question.metric]} of "
                           f"`{question.candidate}` (this ncu may not know the metric): your instructor checks it"), None
    lines = [line for line in parse_measured(answer) if line.value is not None]
    if not lines:
        return WRONG, ("no number found in the answer: write the figure first, e.g. "
                       "`Answer: 12.5 measured on <GPU>` (the line `grader profile` prints)"), None
    grading = str(profile.get("_gpu") or "")
    what = f"{PROFILE_METRICS[question.metric]} of `{question.candidate}`"
    own = [line for line in lines if _names_grading_gpu(line.gpu, grading)]
    tolerance = question.tolerance if own else question.cross_gpu_tolerance
    fits = all(_within(line.value, target, tolerance) for line in own or lines)
    on = f" on {grading}" if grading else ""
    if figures:
        return (CORRECT if fits else WRONG), (f"this grading run's profile{on} measured {target:.4g} ({what})"), target
    if fits:
        return CORRECT, f"within tolerance of the {what} this grading run's profile measured{on}", target
    redo = f"run `python3 -m grader profile {lab}` and paste the line it prints for this question" if lab else \
        "profile again and paste the line `grader profile` prints for this question"
    return WRONG, f"not within tolerance of the {what} this grading run's profile measured{on}: {redo}", target


# --- a peak the student computes ------------------------------------------------------------

_FOR_GPU = re.compile(r"\b(?:measured\s+on|computed\s+for|for|on)\b", re.IGNORECASE)


def _check_peak(question: Question, answer: str, bench: dict[str, Any] | None,
                figures: bool) -> tuple[str, str, float | None]:
    """The grading GPU's peak DRAM bandwidth, as the student computed it: at least the copy
    roofline the grading run's bench measured, and within `tolerance` of gpu_specs.py's peak
    for that GPU. The answer's lines may name GPUs (`3352 GB/s for NVIDIA H100 80GB HBM3`):
    those for the grading GPU's model decide; a bare number is taken as the grading GPU's."""
    device = bench.get("device") if isinstance(bench, dict) and isinstance(bench.get("device"), dict) else None
    name = device.get("name") if device and isinstance(device.get("name"), str) else ""
    if not name:
        return UNCHECKED, "no bench of this grading run names its GPU (did the bench run?)", None
    label = device_label(device) or name
    lines = [line for line in parse_measured(answer, _FOR_GPU) if line.value is not None]
    if not lines:
        return WRONG, ("no number found in the answer: write your GPU's peak in GB/s first "
                       f"(e.g. `Answer: 3352 GB/s for {name}`)"), None
    here = [line for line in lines if _names_grading_gpu(line.gpu, name)] or [line for line in lines if not line.gpu]
    if not here:
        return OTHER_GPU, (f"your answer names no line for the grading GPU, {label}: add one (its memory clock, bus "
                           "width and data rate are in the bench's first line and its specification)"), None
    copy = _roofline(bench)
    if copy is not None and any(line.value < copy for line in here):
        why = ("below the copy bandwidth your own bench measured on this GPU: a peak no copy can beat; "
               "did you leave out the factor 2 of double data rate?")
        return WRONG, why + (f" (the copy reached {copy:.0f} GB/s)" if figures else ""), copy
    peak = gpu_specs.peak(name, "dram")
    if peak is None:
        return OTHER_GPU, (f"{label} is not in the grader's table of GPUs: your instructor checks your peak "
                           "against its specification"), None
    tolerance = question.tolerance
    if all(_within(line.value, peak, tolerance) for line in here):
        return CORRECT, (f"within {tolerance:.0%} of {label}'s peak" + (f", {peak:.0f} GB/s" if figures else "")
                         + (", and above your bench's copy" if copy is not None else "")), peak
    return WRONG, (f"not within {tolerance:.0%} of {label}'s peak DRAM bandwidth"
                   + (f", {peak:.0f} GB/s" if figures else "")
                   + ": recompute it from the memory clock, the bus width and the data rate (the bench's first "
                     "line gives the clock and width CUDA reports)"), peak


def _roofline(bench: dict[str, Any] | None) -> float | None:
    """The copy roofline's GB/s in the bench's first graded workload (None if it has none)."""
    for row in (_first_graded(bench) or {}).get("results") or []:
        if isinstance(row, dict) and row.get("role") == "roofline":
            value = _number(row.get("throughput"))
            return value if value and value > 0 else None
    return None


def _names_grading_gpu(name: str, grading: str) -> bool:
    """Whether a line's GPU is the grading GPU's model: the same name to the table, or one
    that only looks different (a letter for a digit, a Cyrillic letter, one character
    more or less) and names no other GPU the table knows."""
    if not name or not grading:
        return False
    if gpu_specs.same_model(name, grading):
        return True
    if gpu_specs.known(name):
        return False
    mine, theirs = gpu_specs.skeleton(name), gpu_specs.skeleton(grading)
    return mine == theirs or (min(len(mine), len(theirs)) >= 8 and abs(len(mine) - len(theirs)) <= 2
                              and difflib.SequenceMatcher(None, mine, theirs).ratio() >= 0.9)


def _share(question: Question, line: Measured, grading: GradingFigure) -> tuple[float, float] | str:
    """(the line's share of its GPU's peak, the grading run's share of the grading GPU's), or
    why the line cannot be compared across GPUs."""
    assert line.value is not None
    if question.figure == "pct_peak":
        return line.value / 100, grading.value / 100  # shares of each GPU's own peak already
    if grading.peak is None:
        return "this workload has no peak to compare GPUs by"
    if not gpu_specs.known(line.gpu):
        return f"{line.gpu} is not in the grader's table of GPUs"
    theirs = gpu_specs.peak(line.gpu, grading.peak_of) if grading.peak_of else None
    if theirs is None or grading.device_peak is None:
        return f"the grader does not know {line.gpu}'s {grading.peak_of or 'matching'} peak"
    # The workload's peak on the named GPU: its peak on the grading GPU, scaled by the two
    # GPUs' device peaks of the same kind (a sobel pixel is 2 DRAM bytes on either).
    peak_there = grading.peak * theirs / grading.device_peak
    if question.figure == "median_ms":  # throughput goes as 1 / time
        return 1 / (line.value * peak_there), 1 / (grading.value * grading.peak)
    return line.value / peak_there, grading.value / grading.peak


def _check_bench(question: Question, answer: str, bench: dict[str, Any] | None, feedback: str,
                 lab: str) -> tuple[str, str, float | None]:
    if question.workload and isinstance(bench, dict) and bench_workload(bench, question.workload) is None:
        return UNCHECKED, (f"this grading run's bench did not time the workload \"{question.workload}\" that this "
                           "question reads (a bench built from an older kit?): your instructor checks it"), None
    row = student_row(bench_workload(bench, question.workload))
    if row is not None and (_number(row.get("check_failures")) or row.get("inputs_changed") is True):
        where = f" in \"{question.workload}\"" if question.workload else ""
        return WRONG, (f"your implementation's output was wrong{where} in this grading run's bench: a figure of "
                       "wrong work counts for nothing; make its tests pass, then measure again"), None
    grading = grading_figure(bench, question.figure, question.workload)
    if grading is None:
        return UNCHECKED, "no figure of your bench in this grading run to compare with (did the bench run?)", None
    # A line that says "measured on" but gives no number is a note, not a figure.
    lines = [line for line in parse_measured(answer) if line.value is not None]
    if not lines:
        return WRONG, ("no number found in the answer: paste the line your bench prints "
                       "(`Answer: <figure> measured on <GPU>`)"), None
    bench_name = f"`{layout.direct_bench(lab, layout.STUDENT)}`" if lab else "your bench"
    redo = f"run {bench_name} on {grading.label} and paste the line it prints for this question"
    # A line for the grading GPU's model: checked as on one GPU, and it alone decides.
    here = [line for line in lines if _names_grading_gpu(line.gpu, grading.gpu)]
    if here:
        return _on_grading_gpu(question, here, grading, feedback == FIGURES, redo)
    return _on_other_gpus(question, lines, grading, feedback == FIGURES, redo)


def _on_grading_gpu(question: Question, here: list[Measured], grading: GradingFigure, figures: bool,
                    redo: str) -> tuple[str, str, float | None]:
    """The answer's lines for the grading GPU's model against this run's figure."""
    what = BENCH_FIGURES[question.figure]
    tolerance = question.tolerance
    fits = all(_within(line.value, grading.value, tolerance) for line in here)
    several = " (every line for it)" if len(here) > 1 else ""
    if fits:
        why = (f"within {tolerance:.0%} of your bench's {grading.value:.4g} in this grading run on {grading.label}"
               if figures else f"within {tolerance:.0%} of what your bench measured in this grading run on "
                               f"{grading.label}{several}")
        return CORRECT, why, grading.value
    if figures:
        return WRONG, (f"your bench measured {grading.value:.4g} ({what}) in this grading run on "
                       f"{grading.label}; an answer within {tolerance:.0%} of it counts{several}"), grading.value
    return WRONG, (f"not within {tolerance:.0%} of what your bench measured in this grading run on "
                   f"{grading.label}{several}: {redo}"), grading.value


def _on_other_gpus(question: Question, lines: list[Measured], grading: GradingFigure, figures: bool,
                   redo: str) -> tuple[str, str, float | None]:
    """Lines for other GPUs: compared as shares of each GPU's peak where they can be."""
    what = BENCH_FIGURES[question.figure]
    compared: list[tuple[Measured, float, float]] = []
    left: list[tuple[Measured, str]] = []
    for line in lines:
        if not line.gpu:
            left.append((line, "your answer names no GPU: paste the whole line your bench prints, "
                               "`... measured on <GPU>`"))
            continue
        share = _share(question, line, grading)
        if isinstance(share, str):
            left.append((line, share))
        else:
            compared.append((line, *share))
    if compared:
        tolerance = question.cross_gpu_tolerance
        fits = all(_within(mine, theirs, tolerance) for _, mine, theirs in compared)
        gpus = _some(", ", [line.label() for line, _, _ in compared])
        if figures:
            shares = _some("; ", [f"{line.value:.4g} on {line.gpu} is {mine:.1%} of its peak"
                                  for line, mine, _ in compared])
            why = (f"{shares}; your bench's {grading.value:.4g} ({what}) in this grading run is "
                   f"{compared[0][2]:.1%} of {grading.label}'s peak; within {tolerance:.0%} of it counts")
            return (CORRECT if fits else WRONG), why, grading.value
        if fits:
            return CORRECT, (f"measured on {gpus}: within {tolerance:.0%} of this grading run on {grading.label}, "
                             "each as a share of its GPU's peak"), grading.value
        return WRONG, (f"measured on {gpus}: not within {tolerance:.0%} of this grading run on {grading.label}, "
                       f"each as a share of its GPU's peak: measure again, or {redo}"), grading.value
    reasons = _some("; ", [why for _, why in left])
    shown = _some(" / ", [f"`{_short(line.text)}`" for line, _ in left])
    measured = ""
    if figures:  # for the instructor, who compares by hand
        of_peak = _grading_share(question, grading)
        measured = (f" (this grading run measured {grading.value:.4g}, {what}, on {grading.label}"
                    + (f": {of_peak:.1%} of its peak" if of_peak else "") + ")")
    return OTHER_GPU, (f"{reasons}; your line: {shown}{measured}. "
                       f"To have it checked automatically, {redo}"), grading.value


def _grading_share(question: Question, grading: GradingFigure) -> float | None:
    """The grading run's figure as a share of the grading GPU's peak (None without a peak)."""
    if question.figure == "pct_peak":
        return grading.value / 100
    if grading.peak is None:
        return None
    return grading.value / grading.peak if question.figure == "throughput" else None


def _within(value: float | None, target: float, tolerance: float) -> bool:
    """Whether `value` is within `tolerance` (relative) of a `target` that is not 0."""
    return value is not None and target != 0 and abs(value - target) <= tolerance * abs(target)


def _some(separator: str, items: list[str], shown: int = 3) -> str:
    """The distinct `items` joined, the first `shown` of them (a file may hold thousands of lines)."""
    distinct = list(dict.fromkeys(items))
    more = f"{separator}and {len(distinct) - shown} more" if len(distinct) > shown else ""
    return separator.join(distinct[:shown]) + more


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _clip(text: str) -> str:
    return text if len(text) <= MAX_ANSWER_CHARS else text[:MAX_ANSWER_CHARS] + " [...]"
