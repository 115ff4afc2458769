"""Reports of a grading run: the JSON report, the one model every rendering reads, and
the console's rendering of it.

There is one report: the JSON document that `to_json` makes of a GradingRun (schema
labkit-report) and `write_json` writes. `read` turns such a document (from any grader
version, or cut short) into one structure, a `Report` with a `Lab` per graded lab and a
`Test` per test, and every rendering is a function of that structure:

    GradingRun -> to_json -> report.json -> read -> Report -> console table, failure details (here)
                                                           -> Markdown, JUnit, Classroom, Gradescope,
                                                              annotations, HTML (formats/)
                                                           -> the gradebook (instructor/batch.py)

The console goes the same way (`console_table(run)` reads the run's JSON), so it shows
exactly what the report file holds. `Progress` prints while grading, before there is a
report. Status names come from status.py only.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TextIO

from grader import __version__, status
from grader.gpu_specs import device_label
from grader.status import ResultCode

if TYPE_CHECKING:  # only for annotations: reading a report needs none of the grading
    from grader.grade import GradingRun, LabResult

REPORT_SCHEMA = "labkit-report"
REPORT_VERSION = 1
# The bench's name for the reference's fastest version, timed beside a slower graded one
# (a stretch goal: shown, never graded).
STRETCH_NAME = "ref:default"
MAX_TESTS_SHOWN = 5  # failed tests detailed per lab on the console; the JSON has all
MAX_MESSAGE_LINES = 6
MAX_RULES_SHOWN = 10


# --- while grading ------------------------------------------------------------------------

class Progress:
    """Prints `[2/3] reduction: building... testing... 18/18 tests passed... timing... done`."""

    def __init__(self, stream: TextIO, quiet: bool = False) -> None:
        self.stream, self.quiet = stream, quiet

    def _write(self, text: str) -> None:
        if not self.quiet:
            self.stream.write(text)
            self.stream.flush()  # show each stage as it starts, builds take minutes

    def note(self, text: str) -> None:
        self._write(text + "\n")

    def lab_started(self, index: int, count: int, lab: str) -> None:
        self._write(f"[{index}/{count}] {lab}: ")

    def stage(self, text: str) -> None:
        self._write(f"{text}... ")

    def lab_finished(self, result: LabResult) -> None:
        self._write((result.status.name if result.status.is_failure else "done") + "\n")


# --- the JSON report ------------------------------------------------------------------------

def to_json(run: GradingRun) -> dict[str, Any]:
    """The machine-readable report (schema labkit-report, version 1; later fields are
    additions that readers of version 1 may ignore)."""
    options = run.options
    total, top = grand_total(run)
    seed_source = options.seed_source or {"seed": options.seed, "how": "given", "identity": None}
    return {
        "schema": REPORT_SCHEMA,
        "version": REPORT_VERSION,
        "grader_version": __version__,
        "started": run.started,
        "finished": run.finished,
        "interrupted": run.interrupted,
        "root": str(options.root),
        "build_dir": str(options.build_dir),
        "impl": options.impl,
        "seed": options.seed,
        # How the seed was chosen ("command line", "config", "secret file", "random", ...):
        # never the secret itself. `--seed <seed>` reproduces the grade.
        "seed_source": {"how": seed_source.get("how"), "identity": seed_source.get("identity")},
        "submission": str(options.submission) if options.submission else None,
        "overlay": ({k: v for k, v in run.overlay.as_dict().items() if k != "ignored_changes"}
                    if run.overlay else None),
        "ignored_changes": run.overlay.ignored_changes if run.overlay else [],
        "notes": run.notes,
        # The GPU that graded the run (the first visible one: index, name, compute capability,
        # memory, UUID), or null: a bench answer measured on its model is checked as is.
        "gpu": run.gpu,
        # Wall seconds of the run's phases (outcome.PHASES): where the grading time went.
        "seconds": run.seconds,
        # How busy the host's processors were, sampled twice a second (grader/cpu_load.py).
        "cpu_busy": run.cpu_busy,
        # How busy the grading GPU was (kernels, memory), sampled twice a second (grader/gpu_load.py).
        "gpu_busy": run.gpu_busy,
        "config": options.config.as_dict(),
        "labs": [_lab_json(lab) for lab in run.labs],
        "total": total,
        "max": top,
    }


def write_json(run: GradingRun, path: Path) -> None:
    """Write the JSON report atomically, so a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(_dumps(to_json(run), indent=2) + "\n")
    os.replace(tmp, path)


def grand_total(run: GradingRun) -> tuple[float, float]:
    """Points and maximum over all graded labs."""
    return (round(sum(lab.total for lab in run.labs), 2), round(sum(lab.max for lab in run.labs), 2))


def _dumps(data: dict[str, Any], indent: int | None = None) -> str:
    return json.dumps(data, indent=indent, default=str)


def _lab_json(lab: LabResult) -> dict[str, Any]:
    perf = lab.performance
    return {
        "lab": lab.lab,
        "status": lab.status.name,
        "message": lab.message,
        "correctness": {"points": lab.correctness.points, "max": lab.correctness.max,
                        "full": lab.correctness.full, "tests": lab.correctness.tests},
        "performance": {"points": perf.points, "max": perf.max, "ratio": perf.ratio,
                        "t_student_ms": perf.t_student_ms, "t_reference_ms": perf.t_reference_ms,
                        "reason": perf.reason, "workloads": perf.workloads, "flags": perf.flags},
        "answers": lab.answers.as_dict(),
        # The write-up graded by hand (writeup.py): null when the lab asks for none.
        "writeup": lab.writeup.as_dict() if lab.writeup else None,
        "variants": lab.variants.as_dict(),
        "rules": lab.rules,
        "deduction": lab.deduction,  # in all: rule_deduction + sanitizer.deduction
        "rule_deduction": lab.rule_deduction,
        "sanitizer": lab.sanitizer.as_dict() if lab.sanitizer else None,
        "gpu_faults": [{"test": t["name"], "fault": t["gpu_fault"]}
                       for t in lab.correctness.tests if t.get("gpu_fault")],
        "notes": lab.notes,
        "bench_runs": lab.bench_runs,
        "seconds": lab.seconds,
        "spans": lab.spans,
        "profile": lab.profile,
        "total": lab.total,
        "max": lab.max,
        "bench": lab.bench,
        "reproduce": {**lab.reproduce, **({"failure": lab.command} if lab.command else {})},
        "output": lab.output,
        "traceback": lab.traceback,
    }


# --- the model: what every rendering reads ----------------------------------------------------

@dataclass
class Test:
    """One test of a lab, as the report lists it."""

    name: str
    status: str  # status.TEST_PASSED | TEST_FAILED | TEST_SKIPPED
    weight: float
    message: str = ""
    reproduce: str = ""
    time_s: float | None = None

    @property
    def failed(self) -> bool:
        return self.status == status.TEST_FAILED


class SanitizerFinding(NamedTuple):
    """The first error one compute-sanitizer tool reported."""

    message: str
    file: str | None
    line: int | None


@dataclass
class Workload:
    """One graded workload of the bench: the student's figures and the reference's
    (None where the bench gave no number)."""

    name: str
    unit: str
    ratio: float | None  # median of t_student / t_reference
    student_ms: float | None
    reference_ms: float | None
    throughput: float | None
    pct_peak: float | None
    speedup_vs_cpu: float | None
    stretch_ms: float | None = None  # the reference's fastest version when it is not the graded one

    @property
    def stretch_ratio(self) -> float | None:
        """t_student / t_fastest reference (None unless both were timed)."""
        if self.student_ms and self.stretch_ms and self.student_ms > 0 and self.stretch_ms > 0:
            return self.student_ms / self.stretch_ms
        return None


# A question's status as a report says it, where its name alone says too little.
OTHER_GPU = "other_gpu"  # answers.OTHER_GPU
AT_DEADLINE = "at_deadline"  # answers.AT_DEADLINE
STATUS_TEXT = {OTHER_GPU: "measured on another GPU: for the instructor", AT_DEADLINE: "graded at the deadline"}


@dataclass
class Answer:
    """One graded question of a lab and the student's answer (answers.py)."""

    id: str
    title: str
    kind: str  # "number" | "text"
    check: str  # "key" | "bench" | "manual"
    status: str  # answers.CORRECT, WRONG, UNANSWERED, MANUAL, UNCHECKED, OTHER_GPU, AT_DEADLINE
    points: float
    max: float
    answer: str = ""
    why: str = ""

    @property
    def by_hand(self) -> bool:
        return self.check == "manual"

    @property
    def pending(self) -> bool:
        """Its points wait for the instructor: a written answer, a bench figure measured on
        a GPU the grader cannot compare with the grading GPU, or a number checked against
        the key at the deadline (graded where there was no key)."""
        return self.by_hand or self.status in (OTHER_GPU, AT_DEADLINE) or self.waits_for_profile

    @property
    def waits_for_profile(self) -> bool:
        """A profiler figure this grading run took no profile to check (answers.py)."""
        return self.check == "profile" and self.status == "unchecked"

    @property
    def status_text(self) -> str:
        return STATUS_TEXT.get(self.status, self.status)


@dataclass
class Step:
    """One required variant of a lab (the lecture's progression, variants.py): its points
    and, when the bench timed it, its figures beside the reference's version of it."""

    name: str
    title: str
    status: str  # variants.PASSED, FAILED, MISSING, NOT_TESTED
    points: float
    max: float
    why: str = ""
    ms: float | None = None
    throughput: float | None = None
    unit: str = ""
    pct_peak: float | None = None
    reference_ms: float | None = None
    speed_vs_reference: float | None = None
    note: str = ""  # e.g. much faster than the reference's version of the step


@dataclass
class RubricItem:
    """One item of a write-up's rubric, as the report lists it."""

    id: str
    title: str
    points: float
    earns: str


@dataclass
class Writeup:
    """A lab's write-up (writeup.py): graded by hand, its points pending; the rubric, the
    student's text under each item's heading, and what its form lacks."""

    file: str
    status: str  # writeup.PENDING, EMPTY, MISSING
    max: float  # the rubric's total
    rubric: list[RubricItem] = field(default_factory=list)
    sections: dict[str, str] = field(default_factory=dict)  # rubric id -> the student's text under its heading
    headings: dict[str, bool] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # what the form lacks
    machine_line: str = ""
    score_table: bool = False
    words: int = 0
    sha256: str = ""
    truncated: bool = False
    text: str = ""
    note: str = ""


@dataclass
class Lab:
    """One graded lab."""

    name: str
    status: ResultCode
    message: str = ""
    total: float = 0.0
    max: float = 0.0
    correctness: float = 0.0
    correctness_max: float = 0.0
    performance: float = 0.0
    performance_max: float = 0.0
    ratio: float | None = None  # t_student / t_reference
    performance_reason: str = ""
    deduction: float = 0.0  # in all: rules and compute-sanitizer
    rule_deduction: float = 0.0
    rules: list[str] = field(default_factory=list)  # the messages of the rule findings
    # The kind of each finding of `rules` (same order): the built-in rule's name (`include`, `symbol`...),
    # or, for a pattern of the course's config, `forbidden pattern` / `required pattern`.
    rule_kinds: list[str] = field(default_factory=list)
    sanitizer_deduction: float = 0.0
    sanitizer: list[SanitizerFinding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # as the grader wrote them
    tests: list[Test] = field(default_factory=list)
    reproduce: dict[str, str] = field(default_factory=dict)  # stage (build, test, bench, sanitizer, failure) -> command
    output: str = ""  # output tail of the stage that failed
    traceback: str = ""  # the grader's own failure (ERROR)
    bench: dict[str, Any] | None = None  # the bench's JSON as it wrote it
    workloads: list[Workload] = field(default_factory=list)  # its graded workloads
    answers: float = 0.0  # points of the automatically checked questions
    answers_max: float = 0.0
    answers_pending: float = 0.0  # points of the questions graded by hand
    answers_file: str = ""
    questions: list[Answer] = field(default_factory=list)
    variants: float = 0.0  # points of the required variants (the lecture's steps)
    variants_max: float = 0.0
    steps: list[Step] = field(default_factory=list)
    writeup: Writeup | None = None  # None: the lab asks for no write-up
    profile_text: str = ""  # --profile: Nsight Compute's table of the graded call
    profile_error: str = ""  # --profile: why no profile was taken

    @property
    def student_file(self) -> str:
        return f"labs/{self.name}/{self.name}.cu"

    @property
    def failure(self) -> str:
        """The command that reproduces the lab's status ('' when it has none)."""
        return self.reproduce.get("failure", "")

    @property
    def failure_command(self) -> str:
        """The most specific command to start from: the failure's, else the build's or the tests'."""
        return self.failure or self.reproduce.get("build") or self.reproduce.get("test") or ""

    @property
    def failed_tests(self) -> list[Test]:
        return [test for test in self.tests if test.failed]

    @property
    def rules_cost(self) -> bool:
        """Whether the rule findings cost points. A finding costs a share of the points the
        lab earned otherwise: in a lab that earned none (an untouched skeleton) it costs
        nothing, and is then a rule not met rather than a rule broken."""
        return bool(self.rules) and self.rule_deduction > 0

    @property
    def rules_verdict(self) -> str:
        """The rule findings in a few words: 'rules broken, -75 points', or 'rules not
        met (...)' with why they cost nothing ('' when there are none)."""
        if not self.rules:
            return ""
        if self.rules_cost:
            return f"rules broken, -{self.rule_deduction:g} points"
        if self.correctness + self.performance <= 0:
            why = "no points lost now: the lab has earned none yet; they will cost points once it does"
        else:
            why = "no points lost: this course's rule_penalty is 0"
        return f"rules not met ({why})"

    @property
    def rule_title(self) -> str:
        """One rule finding, named: 'rule broken' or 'rule not met'."""
        return "rule broken" if self.rules_cost else "rule not met"


@dataclass
class Report:
    """A grading report, read (`read`) from its JSON."""

    labs: list[Lab]
    total: float
    max: float
    seed: Any = None
    grader_version: str = ""
    root: str = ""
    impl: str = "student"
    started: str = ""
    finished: str = ""
    interrupted: bool = False
    schema: str = ""
    # The run's notes and what was missing or odd in the report ("note: " prefixes
    # dropped), in the order a reader should see them.
    notes: list[str] = field(default_factory=list)
    run_notes: list[str] = field(default_factory=list)  # the run's notes as the grader wrote them
    has_labs: bool = False  # the document held a list of labs: a report, however incomplete
    gpu: dict[str, Any] | None = None  # the GPU that graded the run (None in reports from before it was recorded)
    config: dict[str, Any] = field(default_factory=dict)  # the run's effective configuration (config.as_dict())

    def lab(self, name: str) -> Lab | None:
        return next((lab for lab in self.labs if lab.name == name), None)

    @property
    def gpu_label(self) -> str:
        """The grading GPU, "NVIDIA H100 80GB HBM3 (sm_90)": the report's, else (an older
        report) the device the first bench ran on; '' when neither names one."""
        for device in [self.gpu] + [lab.bench.get("device") for lab in self.labs if lab.bench]:
            label = device_label(device)
            if label:
                return label
        return ""


def read(data: Any) -> Report:
    """The model of the JSON report `data`; missing or odd fields get defaults and a note."""
    notes: list[str] = []
    if data is None:  # no report at all: the caller says why
        return Report([], 0.0, 0.0)
    if not isinstance(data, dict):
        return Report([], 0.0, 0.0, notes=["the report is not a JSON object: nothing was graded"])
    if data.get("schema") != REPORT_SCHEMA:
        notes.append(f"unexpected report schema {data.get('schema')!r} (expected {REPORT_SCHEMA!r})")
    elif data.get("version") != REPORT_VERSION:
        notes.append(f"report version {data.get('version')!r}: this grader reads version {REPORT_VERSION}; "
                     "some fields may be missing")
    run_notes = [_str(note) for note in _list(data.get("notes")) if note]
    notes += [note.removeprefix("note: ") for note in run_notes]
    raw_labs = data.get("labs")
    has_labs = isinstance(raw_labs, list)
    if not has_labs:
        notes.append("the report has no list of labs")
        raw_labs = []
    labs = [_read_lab(raw, notes) for raw in raw_labs if isinstance(raw, dict)]
    total = _num(data.get("total"), round(sum(lab.total for lab in labs), 2))
    top = _num(data.get("max"), round(sum(lab.max for lab in labs), 2))
    interrupted = bool(data.get("interrupted"))
    if interrupted:
        notes.append("the grading run was interrupted: labs not listed were not graded")
    return Report(labs, total, top, seed=data.get("seed"), grader_version=_str(data.get("grader_version")),
                  root=_str(data.get("root")), impl=_str(data.get("impl")) or "student",
                  started=_str(data.get("started")), finished=_str(data.get("finished")),
                  interrupted=interrupted, schema=_str(data.get("schema")), notes=notes, run_notes=run_notes,
                  has_labs=has_labs, gpu=data.get("gpu") if isinstance(data.get("gpu"), dict) else None,
                  config=_dict(data.get("config")))


def from_run(run: GradingRun) -> Report:
    """The run as every reader of its report sees it: through the JSON the grader writes."""
    return read(json.loads(_dumps(to_json(run))))


def _read_lab(raw: dict[str, Any], notes: list[str]) -> Lab:
    name = _str(raw.get("lab")) or "?"
    code = _str(raw.get("status")) or status.ERROR.name
    if "status" not in raw:
        notes.append(f"{name}: the report gives no status")
    corr = _dict(raw.get("correctness"))
    perf = _dict(raw.get("performance"))
    tests = []
    for row in _list(corr.get("tests")):
        if not isinstance(row, dict):
            continue
        time_s = row.get("time_s", row.get("time"))
        tests.append(Test(name=_str(row.get("name")) or "?", status=_str(row.get("status")) or status.TEST_FAILED,
                          weight=_num(row.get("weight"), 1.0), message=_str(row.get("message")),
                          reproduce=_str(row.get("reproduce")),
                          time_s=time_s if isinstance(time_s, (int, float)) else None))
    bench = raw.get("bench") if isinstance(raw.get("bench"), dict) else None
    lab = Lab(name=name, status=status.lookup(code), message=_str(raw.get("message")),
              correctness=_num(corr.get("points"), 0.0), correctness_max=_num(corr.get("max"), 0.0),
              performance=_num(perf.get("points"), 0.0), performance_max=_num(perf.get("max"), 0.0),
              ratio=perf.get("ratio") if isinstance(perf.get("ratio"), (int, float)) else None,
              performance_reason=_str(perf.get("reason")), deduction=_num(raw.get("deduction"), 0.0),
              rules=[_str(r.get("message")) if isinstance(r, dict) else _str(r) for r in _list(raw.get("rules"))],
              tests=tests, reproduce={k: _str(v) for k, v in _dict(raw.get("reproduce")).items()},
              output=_str(raw.get("output")), traceback=_str(raw.get("traceback")), bench=bench,
              workloads=_read_workloads(bench))
    sanitizer = _dict(raw.get("sanitizer"))
    lab.sanitizer_deduction = _num(sanitizer.get("deduction"), 0.0)
    for finding in _list(sanitizer.get("findings")):
        finding = _dict(finding)
        line = finding.get("line")
        lab.sanitizer.append(SanitizerFinding(
            _str(finding.get("message")) or _str(finding.get("kind")) or "compute-sanitizer error",
            _str(finding.get("file")) or None, line if isinstance(line, int) else None))
    lab.rule_kinds = [_rule_kind(r) for r in _list(raw.get("rules"))]
    lab.rule_deduction = _num(raw.get("rule_deduction"), round(lab.deduction - lab.sanitizer_deduction, 2))
    lab.notes = [_str(note) for note in _list(raw.get("notes")) if note]
    _read_answers(lab, _dict(raw.get("answers")))
    _read_variants(lab, _dict(raw.get("variants")))
    lab.writeup = _read_writeup(raw.get("writeup"))
    profile = _dict(raw.get("profile"))
    lab.profile_text, lab.profile_error = _str(profile.get("text")), _str(profile.get("error"))
    lab.total = _num(raw.get("total"), round(lab.correctness + lab.performance + lab.answers + lab.variants
                                             - lab.deduction, 2))
    lab.max = _num(raw.get("max"), lab.correctness_max + lab.performance_max + lab.answers_max + lab.variants_max)
    return lab


def _rule_kind(raw: Any) -> str:
    """The kind of one rule finding of a report: its built-in rule, else its pattern's kind."""
    if not isinstance(raw, dict):
        return "rule"
    return _str(raw.get("rule")) or (f"{_str(raw.get('kind'))} pattern" if raw.get("kind") else "rule")


def _read_variants(lab: Lab, raw: dict[str, Any]) -> None:
    lab.variants, lab.variants_max = _num(raw.get("points"), 0.0), _num(raw.get("max"), 0.0)

    def number(value: Any) -> float | None:
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None

    for row in _list(raw.get("rows")):
        if isinstance(row, dict):
            lab.steps.append(Step(
                name=_str(row.get("name")) or "?", title=_str(row.get("title")), status=_str(row.get("status")),
                points=_num(row.get("points"), 0.0), max=_num(row.get("max"), 0.0), why=_str(row.get("why")),
                ms=number(row.get("ms")), throughput=number(row.get("throughput")), unit=_str(row.get("unit")),
                pct_peak=number(row.get("pct_peak")), reference_ms=number(row.get("reference_ms")),
                speed_vs_reference=number(row.get("speed_vs_reference")), note=_str(row.get("note"))))


def _read_writeup(raw: Any) -> Writeup | None:
    if not isinstance(raw, dict):
        return None
    form = _dict(raw.get("form"))
    items = [RubricItem(_str(row.get("id")) or "?", _str(row.get("title")), _num(row.get("points"), 0.0),
                        _str(row.get("earns")))
             for row in _list(raw.get("rubric")) if isinstance(row, dict)]
    return Writeup(file=_str(raw.get("file")), status=_str(raw.get("status")),
                   max=_num(raw.get("max"), round(sum(item.points for item in items), 2)), rubric=items,
                   sections={_str(k): _str(v) for k, v in _dict(raw.get("sections")).items()},
                   headings={_str(k): v is True for k, v in _dict(raw.get("headings")).items()},
                   problems=[_str(p) for p in _list(form.get("problems")) if p],
                   machine_line=_str(form.get("machine_line")), score_table=form.get("score_table") is True,
                   words=int(_num(raw.get("words"), 0)), sha256=_str(raw.get("sha256")),
                   truncated=raw.get("truncated") is True, text=_str(raw.get("text")), note=_str(raw.get("note")))


def _read_answers(lab: Lab, raw: dict[str, Any]) -> None:
    lab.answers, lab.answers_max = _num(raw.get("points"), 0.0), _num(raw.get("max"), 0.0)
    lab.answers_pending, lab.answers_file = _num(raw.get("pending"), 0.0), _str(raw.get("file"))
    for row in _list(raw.get("questions")):
        if isinstance(row, dict):
            lab.questions.append(Answer(
                id=_str(row.get("id")) or "?", title=_str(row.get("title")), kind=_str(row.get("kind")),
                check=_str(row.get("check")), status=_str(row.get("status")), points=_num(row.get("points"), 0.0),
                max=_num(row.get("max"), 0.0), answer=_str(row.get("answer")), why=_str(row.get("why"))))


def _read_workloads(bench: dict[str, Any] | None) -> list[Workload]:
    rows = []
    for workload in _list(_dict(bench).get("workloads")):
        if not isinstance(workload, dict) or not workload.get("graded"):
            continue
        rows_of = [r for r in _list(workload.get("results")) if isinstance(r, dict)]
        results = {_str(r.get("role")): r for r in rows_of}
        you, ref = results.get("student", {}), results.get("reference", {})
        stretch = next((r for r in rows_of if r.get("name") == STRETCH_NAME), {})
        rows.append(Workload(name=_str(workload.get("name")), unit=_str(workload.get("unit")),
                             ratio=_figure(_dict(workload.get("pair")).get("ratio_median")),
                             student_ms=_figure(you.get("median_ms")), reference_ms=_figure(ref.get("median_ms")),
                             throughput=_figure(you.get("throughput")), pct_peak=_figure(you.get("pct_peak")),
                             speedup_vs_cpu=_figure(you.get("speedup_vs_cpu")),
                             stretch_ms=_figure(stretch.get("median_ms"))))
    return rows


def _num(value: Any, default: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return default
    return value


def _figure(value: Any) -> float | None:
    """A measured number as the bench wrote it, or None for anything that is not a number."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# --- the console ------------------------------------------------------------------------------

def console_table(run: GradingRun) -> str:
    """The score table of a run: one row per lab and a total."""
    return table(from_run(run))


def failure_details(run: GradingRun) -> str:
    """Every failure of a run with its message and the command that reproduces it ('' if none)."""
    return details(from_run(run))


def table(report: Report) -> str:
    """The score table: one row per lab and a total (an answers column when questions were graded)."""
    asked = any(lab.questions for lab in report.labs)
    stepped = any(lab.steps for lab in report.labs)  # a variants column when a lab requires some
    head = (f"{'lab':<15} {'status':<12} {'correctness':>12} {'performance':>12} "
            + (f"{'variants':>9} " if stepped else "") + (f"{'answers':>9} " if asked else "")
            + f"{'total':>11}  note")
    rows = [head, "-" * len(head)]
    for lab in report.labs:
        steps = (f"{_points(lab.variants, lab.variants_max):>9} " if lab.steps else f"{'-':>9} ") if stepped else ""
        answers = f"{_points(lab.answers, lab.answers_max):>9} " if asked else ""
        rows.append(f"{lab.name:<15} {lab.status.name:<12} "
                    f"{_points(lab.correctness, lab.correctness_max):>12} "
                    f"{_points(lab.performance, lab.performance_max):>12} {steps}{answers}"
                    f"{_points(lab.total, lab.max):>11}  {_note(lab)}")
    rows.append("-" * len(head))
    rows.append(f"{'total':<15} {'':<12} {'':>12} {'':>12} " + (f"{'':>9} " if stepped else "")
                + (f"{'':>9} " if asked else "")
                + f"{_points(report.total, report.max):>11}"
                + ("  (interrupted: not every lab was graded)" if report.interrupted else ""))
    rows += pending_lines(report.labs)
    if report.gpu_label:
        rows.append(f"graded on {report.gpu_label}")
    return "\n".join(rows)


def pending_points(labs: list[Lab]) -> tuple[float, float]:
    """Points left to the instructor: (of written answers, of bench figures measured on
    another GPU that the grader cannot compare, or profiler figures no profile checked). Those of answers checked against the key
    at the deadline are in neither: deadline_points."""
    other = round(sum(q.max for lab in labs for q in lab.questions if q.status == OTHER_GPU or q.waits_for_profile), 2)
    return round(sum(lab.answers_pending for lab in labs) - other - deadline_points(labs), 2), other


def deadline_points(labs: list[Lab]) -> float:
    """Points of the answers checked against the instructor's key at the deadline (graded
    where there was no key, as on the Classroom runner)."""
    return round(sum(q.max for lab in labs for q in lab.questions if q.status == AT_DEADLINE), 2)


def pending_lines(labs: list[Lab], after: str = " (not in the total above)") -> list[str]:
    """What the total leaves out, one sentence each, each ending in `after` (none when
    nothing is pending)."""
    written, other = pending_points(labs)
    lines = [f"{written:g} more points of written answers are graded by hand{after}"] if written else []
    if other:
        lines.append(f"{other:g} more points of figures measured on another GPU are left to your instructor{after}")
    if later := deadline_points(labs):
        lines.append(f"{later:g} more points of answers are checked against the instructor's key at the deadline{after}")
    if hand := writeup_points(labs):
        lines.append(f"{hand:g} more points of write-ups (WRITEUP.md) are graded by hand with the rubric{after}")
    return lines


def writeup_points(labs: list[Lab]) -> float:
    """Points of the labs' write-ups, graded by hand (the rubrics' totals)."""
    return round(sum(lab.writeup.max for lab in labs if lab.writeup), 2)


def details(report: Report) -> str:
    """Every failure with its message and the command that reproduces it ('' if none)."""
    blocks = []
    seen: dict[tuple[str, str], str] = {}  # (message, command) -> first lab that had it
    for lab in report.labs:
        first = seen.setdefault((lab.message, lab.failure), lab.name)
        if lab.status.is_failure and first != lab.name and lab.failure:
            # One CMake configure failure fails every lab: say it once.
            blocks.append(f"{lab.name}: {lab.status.name}: the same failure as {first}")
        elif lab.status.is_failure:
            text = f"{lab.name}: {lab.status.name}: {_indent(lab.message, 4).lstrip()}"
            # After a crash or a hang every test without a result is "failed": the message
            # and the command of the test that was running say more.
            failed = [] if lab.status in status.ENDED_EARLY else lab.failed_tests
            for test in failed[:MAX_TESTS_SHOWN]:
                message = "\n".join(test.message.splitlines()[:MAX_MESSAGE_LINES])
                text += f"\n  {test.name}\n{_indent(message, 4)}\n    reproduce: {test.reproduce}"
            if len(failed) > MAX_TESTS_SHOWN:
                text += f"\n  ... and {len(failed) - MAX_TESTS_SHOWN} more failed tests: see the JSON report"
            if lab.failure and not failed:
                text += f"\n  reproduce: {lab.failure}"
            if lab.traceback:
                text += "\n  (the traceback is in the JSON report)"
            blocks.append(text)
        elif lab.bench is not None and lab.performance_reason:
            blocks.append(f"{lab.name}: no performance points: {lab.performance_reason}"
                          f"\n  reproduce: {lab.reproduce.get('bench', '')}")
        if lab.rules:
            lines = "\n".join(f"    {rule}" for rule in lab.rules[:MAX_RULES_SHOWN])
            if len(lab.rules) > MAX_RULES_SHOWN:
                lines += f"\n    ... and {len(lab.rules) - MAX_RULES_SHOWN} more: see the JSON report"
            blocks.append(f"{lab.name}: {lab.rules_verdict}:\n{lines}")
        if lab.sanitizer:
            lines = "\n".join(f"    {finding.message}" for finding in lab.sanitizer)
            blocks.append(f"{lab.name}: compute-sanitizer found errors, -{lab.sanitizer_deduction:g} points:\n{lines}"
                          f"\n  reproduce: {lab.reproduce.get('sanitizer', '')}")
        unearned = [step for step in lab.steps if step.points < step.max or step.note]
        if unearned:
            lines = "\n".join(f"    {step.name} ({step.title}): {step.status}" + (f": {step.why}" if step.why else "")
                              + (f"; note: {step.note}" if step.note else "") for step in unearned)
            blocks.append(f"{lab.name}: the lecture's steps (required variants), "
                          f"{lab.variants:g}/{lab.variants_max:g} points:\n{lines}")
        missed = [q for q in lab.questions if not q.by_hand and q.status != "correct"]
        if missed:
            lines = "\n".join(f"    {q.id} ({q.title}): {q.status_text}" + (f": {q.why}" if q.why else "")
                              for q in missed)
            blocks.append(f"{lab.name}: graded questions in {lab.answers_file or 'answers.md'}, "
                          f"{lab.answers:g}/{lab.answers_max:g} points:\n{lines}")
    # Notes, each once with the labs it concerns (a missing compute-sanitizer concerns all).
    notes: dict[str, list[str]] = {}
    for lab in report.labs:
        for note in lab.notes:
            notes.setdefault(note, []).append(lab.name)
    for note, labs in notes.items():
        blocks.append(f"{', '.join(labs)}: note: {note}")
    blocks += report.run_notes  # about the whole run, e.g. a submission's ignored changes
    return "\n\n".join(blocks)


def _note(lab: Lab) -> str:
    """A short note for the table: the failure, or how the speed was graded."""
    if lab.status.is_failure:
        text = lab.message
    elif lab.rules:
        text = f"{lab.rule_title}: {lab.rules[0]}"
    elif lab.sanitizer:
        text = lab.sanitizer[0].message
    elif lab.performance_reason:
        text = lab.performance_reason
    elif lab.ratio is not None:
        text = f"{lab.ratio:.2f}x the reference time"
    else:
        text = ""
    lines = text.strip().splitlines() or [""]
    text = lines[0]
    if text.endswith(":") and len(lines) > 1:  # "compilation failed:" says little alone
        text += " " + lines[1].strip()
    return text if len(text) <= 60 else text[:57] + "..."


def _points(points: float, top: float) -> str:
    return f"{points:.2f}/{top:g}"


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())
