"""Course formats of a grading report: Markdown, JUnit XML, GitHub Classroom, Gradescope,
GitHub annotations.

    python3 -m grader report build/grader/report.json --markdown - --junit junit.xml

Every format is a pure function of the JSON report (schema labkit-report, what
`report.to_json` writes), read into the one model of a report (`report.read`: Report,
Lab, Test) that the console and the gradebook render too; so a report can be turned into
any of them later, on any machine. A report with missing or odd fields (an older grader,
a run that was cut short) still gives every format: what is missing becomes a note,
never a traceback. Status names come from status.py.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import sys
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path
from typing import Any

from grader import commandline, status
from grader.config import COURSE_LABS
from grader.report import AT_DEADLINE, REPORT_SCHEMA, Lab, Step, deadline_points, pending_points, read

EXIT_OK, EXIT_DEGRADED, EXIT_USAGE = 0, 1, 2
MAX_MESSAGE_CHARS = 1500  # per test in Classroom and Gradescope: env variables and check runs have limits
MAX_ANNOTATIONS = 50  # GitHub shows at most 50 annotations of a kind per job
MAX_FAILED_SHOWN = 10  # failed tests detailed per lab in the Markdown summary
STATUS_ICONS = {status.PASS: "✅", status.PARTIAL: "⚠️"}
SOURCE_SUFFIXES = ("cu", "cuh", "h", "hpp", "cpp", "cc", "c")
TOP_DIRS = ("labs", "common", "solutions", "grader", "cmake")  # folders of the kit, to make paths repo-relative

# Compiler diagnostics: nvcc `file.cu(12): error: ...`, `file.cu(12): error #177-D: ...`,
# gcc/clang `file.cu:12:5: error: ...` (host code and -Werror warnings).
_SUFFIX = "|".join(SOURCE_SUFFIXES)
_NVCC_DIAG = re.compile(rf"(?P<path>[^\s\"'()]+\.(?:{_SUFFIX}))\((?P<line>\d+)\): (?:catastrophic )?error\b[^:]*: (?P<msg>.*)")
_GCC_DIAG = re.compile(rf"(?P<path>[^\s\"'():]+\.(?:{_SUFFIX})):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)")
# A location inside a test failure: `labs/x/x_test.cu:57` (GoogleTest) or `x.cu:41: CUDA error` (LAB_CUDA_CHECK).
_LOCATION = re.compile(rf"(?P<path>[^\s\"'():]+\.(?:{_SUFFIX}))(?::(?P<line>\d+)|\((?P<pline>\d+)\))")
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


# --- helpers ---------------------------------------------------------------------------

def _pts(value: float) -> str:
    return f"{value:.2f}"


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + f"\n[... {len(text) - limit} more characters]"


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0].strip()
    if first.endswith(":") and len(lines) > 1:  # "compilation failed:" says little alone
        first += " " + lines[1].strip()
    return first


def _speed(lab: Lab) -> float | None:
    """How many times faster than the reference (above 1: faster)."""
    return round(1.0 / lab.ratio, 3) if lab.ratio else None


# --- Markdown (for $GITHUB_STEP_SUMMARY) -----------------------------------------------

def markdown(data: Any) -> str:
    """The score table, every failure with the command that reproduces it, the bench figures."""
    report = read(data)
    out = []
    share = f" ({100 * report.total / report.max:.1f}%)" if report.max else ""
    out.append(f"## CUDA labs: {_pts(report.total)} / {report.max:g} points{share}\n")
    if report.labs:
        out.append("| lab | status | correctness | performance | total | note |")
        out.append("|:--|:--|--:|--:|--:|:--|")
        for lab in report.labs:
            out.append(f"| {lab.name} | {STATUS_ICONS.get(lab.status, '❌')} {lab.status.name} "
                       f"| {_pts(lab.correctness)} / {lab.correctness_max:g} "
                       f"| {_pts(lab.performance)} / {lab.performance_max:g} "
                       f"| **{_pts(lab.total)}** / {lab.max:g} | {_md_cell(_note(lab))} |")
        out.append(f"| **total** | | | | **{_pts(report.total)}** / {report.max:g} | |")
    else:
        out.append("No lab was graded: see the log of the grading step.")
    facts = [f"graded on {report.gpu_label}" if report.gpu_label else "",
             f"seed {report.seed}" if report.seed is not None else "",
             f"grader {report.grader_version}" if report.grader_version else "",
             "the reference solutions" if report.impl == "solution" else "",
             f"graded {report.finished}" if report.finished else ""]
    out.append("\n" + " · ".join(f for f in facts if f))
    lab_notes: dict[str, list[str]] = {}
    for lab in report.labs:
        for note in lab.notes:
            lab_notes.setdefault(note.removeprefix("note: "), []).append(lab.name)
    for note in report.notes + [f"{', '.join(labs)}: {note}" for note, labs in lab_notes.items()]:
        out.append(f"\n> **Note:** {note}")

    failures = [_md_failure(lab) for lab in report.labs if lab.status is not status.PASS or lab.rules or lab.sanitizer]
    if failures:
        out.append("\n### What to fix\n")
        out.extend(failures)
    steps = _md_steps(report.labs)
    if steps:
        out.append("\n### The lecture's steps (required variants)\n")
        out.append(steps)
    answers = _md_answers(report.labs)
    if answers:
        out.append("\n### Graded questions\n")
        out.append(answers)
    bench = _md_bench(report.labs)
    if bench:
        out.append("\n### Timing\n")
        out.append(bench)
    profiles = [lab for lab in report.labs if lab.profile_text or lab.profile_error]
    if profiles:
        out.append("\n### Profiles (Nsight Compute, feedback only)\n")
        for lab in profiles:
            out.append(f"#### {lab.name}\n")
            out.append(_fence(lab.profile_text.rstrip()) if lab.profile_text else f"No profile: {lab.profile_error}")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def _note(lab: Lab) -> str:
    if lab.status is not status.PASS:
        return _first_line(lab.message) or lab.status.name
    if lab.rules:
        return f"{lab.rule_title}: {lab.rules[0]}"
    if lab.sanitizer:
        return lab.sanitizer[0][0]
    if lab.performance_reason:
        return lab.performance_reason
    if lab.ratio:
        return f"{lab.ratio:.2f}× the reference time"
    return ""


def _md_cell(text: str, limit: int = 120) -> str:
    text = text if len(text) <= limit else text[:limit - 3] + "..."
    return text.replace("|", "\\|").replace("\n", " ")


def _fence(text: str) -> str:
    """`text` in a code block that no backtick run inside it can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text}\n{ticks}"


def _md_failure(lab: Lab) -> str:
    failed = lab.failed_tests
    # With failed tests the message is their count; otherwise it is shown whole below.
    parts = [f"#### {lab.name}: {lab.status.name}" + (f": {_first_line(lab.message)}" if failed and lab.message else "")]
    for test in failed[:MAX_FAILED_SHOWN]:
        parts.append(f"- **{test.name}**" + (" (no points: a test of the provided code)" if not test.weight else ""))
        if test.message:
            parts.append(_indent(_fence(_clip(test.message, 800)), 2))
        if test.reproduce:
            parts.append(f"  Reproduce: `{test.reproduce}`")
    if len(failed) > MAX_FAILED_SHOWN:
        parts.append(f"- ... and {len(failed) - MAX_FAILED_SHOWN} more failed tests (see the JSON report)")
    if not failed and lab.status is not status.PASS:
        detail = lab.message.strip()
        # A build error's message already holds the compiler's error lines; the output tail
        # helps only when it does not.
        if lab.output and (lab.status in (status.CRASH, status.ERROR)
                           or (lab.status is status.BUILD_ERROR and not compile_errors(lab.message))):
            detail += "\n\n" + lab.output.strip()
        if detail:
            parts.append(_fence(_clip(detail, 3000)))
        if lab.failure_command:
            parts.append(f"Reproduce: `{lab.failure_command}`")
    if lab.rules:
        verdict = lab.rules_verdict
        parts.append(f"Rules broken (-{lab.rule_deduction:g} points):" if lab.rules_cost
                     else f"{verdict[0].upper()}{verdict[1:]}:")
        parts.extend(f"- {rule}" for rule in lab.rules)
    if lab.sanitizer:
        parts.append(f"compute-sanitizer found errors (-{lab.sanitizer_deduction:g} points):")
        parts.extend(f"- {message}" for message, _, _ in lab.sanitizer)
        if lab.reproduce.get("sanitizer"):
            parts.append(f"Reproduce: `{lab.reproduce['sanitizer']}`")
    return "\n".join(parts) + "\n"


def _indent(text: str, spaces: int) -> str:
    return "\n".join(" " * spaces + line for line in text.splitlines())


def step_figures(step: Step) -> tuple[str, str, str, str, str]:
    """A required variant's timing as text: your time, throughput, % of peak, the
    reference's version's time, and your speed relative to it ('-' where not timed)."""
    def ms(value: float | None) -> str:
        return f"{value:.3f} ms" if value is not None else "-"
    rate = f"{step.throughput:.0f} {step.unit}".strip() if step.throughput is not None else "-"
    peak = f"{step.pct_peak:.0f}%" if step.pct_peak is not None else "-"
    speed = f"{step.speed_vs_reference:.2f}×" if step.speed_vs_reference is not None else "-"
    return ms(step.ms), rate, peak, ms(step.reference_ms), speed


def _md_steps(labs: list[Lab]) -> str:
    """One row per required variant: points and the student's progression table ('' when
    no lab requires any)."""
    rows = []
    for lab in labs:
        for step in lab.steps:
            yours, rate, peak, lecture, speed = step_figures(step)
            rows.append(f"| {lab.name} | {_md_cell(step.name + ': ' + step.title, 70)} | {step.status} "
                        f"| {step.points:g} / {step.max:g} | {yours} | {rate} | {peak} | {lecture} | {speed} |")
    if not rows:
        return ""
    return ("| lab | step | status | points | your time | throughput | % of peak | the reference's | "
            "your speed vs it |\n|:--|:--|:--|--:|--:|--:|--:|--:|--:|\n" + "\n".join(rows))


def _md_answers(labs: list[Lab]) -> str:
    """One row per graded question: its status, points and why ('' when no lab asked any)."""
    rows = []
    for lab in labs:
        for q in lab.questions:
            points = (f"at the deadline ({q.max:g})" if q.status == AT_DEADLINE else
                      f"by hand ({q.max:g})" if q.pending else f"{q.points:g} / {q.max:g}")
            rows.append(f"| {lab.name} | {_md_cell(q.id + ': ' + q.title, 70)} | {_md_cell(q.status_text)} | {points} "
                        f"| {_md_cell(q.why, 300)} |")
    if not rows:
        return ""
    written, other = pending_points(labs)
    tail = f"\n\n{written:g} points of written answers are graded by hand and are not in the total yet." if written else ""
    if other:
        tail += (f"\n\n{other:g} points of figures measured on another GPU are left to your instructor and are not "
                 "in the total yet.")
    if later := deadline_points(labs):
        tail += (f"\n\n{later:g} points of answers are checked against the instructor's key at the deadline and are "
                 "not in the total yet.")
    return "| lab | question | status | points | note |\n|:--|:--|:--|--:|:--|\n" + "\n".join(rows) + tail


def _md_bench(labs: list[Lab]) -> str:
    rows = []
    for lab in labs:
        for w in lab.workloads:
            rows.append(f"| {lab.name} | {_md_cell(w.name, 60)} | {_fmt(w.student_ms)} "
                        f"| {_fmt(w.reference_ms)} | {_fmt(w.ratio, '×')} "
                        f"| {_fmt(w.throughput, ' ' + w.unit if w.unit else '')} | {_fmt(w.pct_peak, '%')} "
                        f"| {_fmt(w.speedup_vs_cpu, '×')} |")
    if not rows:
        return ""
    head = ("| lab | workload | you (ms) | reference (ms) | your time / reference | throughput | % of peak | "
            "speedup over CPU |\n|:--|:--|--:|--:|--:|--:|--:|--:|")
    stretch = [f"{lab.name}: your time is {w.stretch_ratio:.2f}× the fastest reference's ({_fmt(w.stretch_ms)} ms)"
               for lab in labs for w in lab.workloads if w.stretch_ratio]
    tail = ("\n\nStretch goal (not graded): " + "; ".join(stretch) + ".") if stretch else ""
    return head + "\n" + "\n".join(rows) + tail


def _fmt(value: Any, suffix: str = "") -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "–"
    return f"{value:.3g}{suffix}" if abs(value) < 100 else f"{value:.0f}{suffix}"


# --- JUnit XML ---------------------------------------------------------------------------

def junit(data: Any) -> str:
    """One testsuite per lab, one testcase per GoogleTest test; a lab that did not get as
    far as its tests (build error, timeout, crash, missing) is one failing testcase."""
    report = read(data)
    suites = ET.Element("testsuites", name="cuda-labkit")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for lab in report.labs:
        suite = ET.SubElement(suites, "testsuite", name=lab.name)
        props = ET.SubElement(suite, "properties")
        for key, value in (("status", lab.status.name), ("points", f"{_pts(lab.total)}/{lab.max:g}"),
                           ("seed", "" if report.seed is None else str(report.seed)),
                           ("message", _first_line(lab.message))):
            ET.SubElement(props, "property", name=key, value=_xml(value))
        n = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        time_total = 0.0
        for test in lab.tests:
            suite_name, _, case_name = test.name.partition(".")
            case = ET.SubElement(suite, "testcase", classname=f"{lab.name}.{suite_name}",
                                 name=case_name or suite_name, time=f"{test.time_s or 0:.3f}")
            time_total += test.time_s or 0.0
            n["tests"] += 1
            if test.failed:
                n["failures"] += 1
                failure = ET.SubElement(case, "failure", message=_xml(_first_line(test.message) or "failed"),
                                        type="failed")
                failure.text = _xml(test.message + (f"\n\nreproduce: {test.reproduce}" if test.reproduce else ""))
            elif test.status == status.TEST_SKIPPED:
                n["skipped"] += 1
                skipped = ET.SubElement(case, "skipped", message=_xml(_first_line(test.message) or "skipped"))
                skipped.text = _xml(test.message) or None  # the whole reason, e.g. "No CUDA GPU: ..."
        if lab.status not in status.TESTS_RAN:
            # The lab stopped before (or while) its tests ran: one testcase says why.
            case = ET.SubElement(suite, "testcase", classname=lab.name, name=lab.status.name.lower())
            n["tests"] += 1
            kind = "error" if lab.status is status.ERROR else "failure"
            n["errors" if kind == "error" else "failures"] += 1
            element = ET.SubElement(case, kind, message=_xml(_first_line(lab.message) or lab.status.name),
                                    type=lab.status.name)
            body = lab.message + (f"\n\n{lab.output}" if lab.output else "")
            element.text = _xml(body + (f"\n\nreproduce: {lab.failure_command}" if lab.failure_command else ""))
        elif lab.performance_max:
            case = ET.SubElement(suite, "testcase", classname=lab.name, name="performance")
            n["tests"] += 1
            if lab.status is status.PARTIAL:
                n["skipped"] += 1
                ET.SubElement(case, "skipped", message=_xml(lab.performance_reason or "not timed"))
            elif lab.performance < lab.performance_max:
                n["failures"] += 1
                ET.SubElement(case, "failure", type="performance", message=_xml(
                    f"{_pts(lab.performance)}/{lab.performance_max:g} points: "
                    + (lab.performance_reason or (f"{lab.ratio:.2f}x the reference time" if lab.ratio else ""))))
        for key, value in n.items():
            suite.set(key, str(value))
            counts[key] += value
        suite.set("time", f"{time_total:.3f}")
    # <testsuites> takes no "skipped" count in the JUnit schema that CI servers validate
    # against (Jenkins xunit's junit-10.xsd): the suites carry theirs.
    for key, value in counts.items():
        if key != "skipped":
            suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _xml(text: str) -> str:
    """`text` without the control characters XML 1.0 cannot hold (colour codes, NULs)."""
    return _XML_INVALID.sub("", text)


# --- GitHub Classroom ----------------------------------------------------------------------
#
# What classroom-resources/autograding-grading-reporter reads (src/main.js,
# src/notify-classroom.js, src/console-results.js of github-education-resources/
# autograding-grading-reporter): for each id in its `runners` input, the environment
# variable `<ID upper-cased>_RESULTS` holding base64 of JSON
#   {"version": 1, "status": "pass"|"fail"|"error", "max_score": N,
#    "tests": [{"name", "status": "pass"|"fail"|"error", "score", "message",
#               "line_no"?, "test_code"?, "execution_time"?}]}.
# The points sent to Classroom are the sum of tests[].score over the runners whose
# max_score is not 0, out of the sum of max_score; a runner whose status is "fail" or
# "error" fails the reporter's step. A missing variable makes the reporter fail as a
# whole, so every lab listed in the workflow must get a result, even an error. The
# reporter adds the scores in JavaScript floats: a total such as 186.67 may show as
# 186.67000000000002 in its "Points" line (an error far below any rounding of a grade).

# Labs in these statuses are an "error" for the reporter (nothing of the student's ran); others "fail".
CLASSROOM_ERROR_STATUSES = frozenset({status.BUILD_ERROR, status.MISSING, status.ERROR, status.NO_GPU})


def classroom_results(data: Any, labs: list[str] | None = None, max_score: float = 100.0) -> dict[str, dict[str, Any]]:
    """Lab -> Classroom result JSON, for the report's labs and for every lab in `labs`
    (a lab the report lacks gets an error result worth `max_score`)."""
    report = read(data)
    results = {lab.name: classroom_result(lab, report.gpu_label) for lab in report.labs}
    why = ("the grader wrote no report: see the log of the grading step" if not report.labs
           else "the grader did not grade this lab (interrupted or not found): see the log of the grading step")
    for name in labs or []:
        if name not in results:
            results[name] = {"version": 1, "status": "error", "max_score": _whole(max_score),
                             "tests": [{"name": f"{name}: graded", "status": "error", "score": 0,
                                        "message": why}]}
    return results


def classroom_result(lab: Lab, gpu: str = "") -> dict[str, Any]:
    """One lab's result: a test per graded GoogleTest test (its share of the correctness
    points), one for performance and one for broken rules; the scores add up to the
    lab's total. `gpu` names the grading GPU (in the performance test's message)."""
    tests: list[dict[str, Any]] = []
    weight_total = sum(t.weight for t in lab.tests)
    for test in lab.tests:
        if test.weight <= 0:
            continue  # tests of the provided CPU code earn nothing: listing them would only dilute the table
        passed = test.status == status.TEST_PASSED
        share = lab.correctness_max * test.weight / weight_total if passed and weight_total else 0.0
        entry: dict[str, Any] = {"name": test.name, "status": "pass" if passed else "fail",
                                 "score": round(share, 2), "message": _clip(test.message)}
        line = _test_location(lab, test.message)
        if line and line[1]:
            entry["line_no"] = line[1]
        if test.reproduce:
            entry["test_code"] = test.reproduce
        if test.time_s is not None:
            entry["execution_time"] = f"{test.time_s:.3f}s"
        tests.append(entry)
    if not tests or lab.status not in status.TESTS_RAN:
        tests.append({"name": f"{lab.name}: {lab.status.name.lower().replace('_', ' ')}",
                      "status": "error" if lab.status in CLASSROOM_ERROR_STATUSES else "fail",
                      "score": 0, "message": _clip(lab.message or lab.status.name),
                      **({"test_code": lab.failure_command} if lab.failure_command else {})})
    if lab.performance_max:
        reason = lab.performance_reason or (f"{lab.ratio:.2f}x the reference time" if lab.ratio else "")
        tests.append({"name": f"{lab.name}: performance", "score": round(lab.performance, 2),
                      "status": "pass" if lab.performance >= lab.performance_max else "fail",
                      "message": f"{_pts(lab.performance)}/{lab.performance_max:g} points" + (f": {reason}" if reason else "")
                      + (f" (graded on {gpu})" if gpu else "")})
    for step in lab.steps:
        tests.append({"name": f"{lab.name}: step {step.name}", "status": "pass" if step.points >= step.max else "fail",
                      "score": round(step.points, 2), "message": _clip(f"{step.status}: {step.why}")})
    for q in lab.questions:
        # Written answers are graded by hand, and key answers at the deadline, outside the Classroom score.
        if not q.by_hand and q.status != AT_DEADLINE:
            tests.append({"name": f"{lab.name}: question {q.id}" + (" (left to your instructor)" if q.pending else ""),
                          "status": "pass" if q.status == "correct" else "fail",
                          "score": round(q.points, 2), "message": _clip(q.why or q.status_text)})
    if lab.rule_deduction:
        tests.append({"name": f"{lab.name}: rules", "status": "fail", "score": -round(lab.rule_deduction, 2),
                      "message": _clip("; ".join(lab.rules) or "a rule of the lab was broken")})
    if lab.sanitizer_deduction or lab.sanitizer:
        tests.append({"name": f"{lab.name}: compute-sanitizer", "status": "fail" if lab.sanitizer else "pass",
                      "score": -round(lab.sanitizer_deduction, 2),
                      "message": _clip("; ".join(m for m, _, _ in lab.sanitizer) or "memory or race errors")})
    _match_total(tests, lab)
    outcome = ("pass" if lab.status is status.PASS else "error" if lab.status in CLASSROOM_ERROR_STATUSES else "fail")
    return {"version": 1, "status": outcome, "max_score": _whole(lab.max), "tests": tests}


def _match_total(tests: list[dict[str, Any]], lab: Lab) -> None:
    """Make the scores add up to the lab's total exactly (per-test shares are rounded)."""
    diff = round(lab.total - sum(t["score"] for t in tests), 2)
    if not diff:
        return
    scored = [t for t in tests if t["score"] > 0]
    target = scored[-1] if scored and abs(diff) < 0.05 else None
    if target is None:  # the report's points do not follow from its tests: trust its total
        tests.append({"name": f"{lab.name}: adjustment", "status": "pass" if diff > 0 else "fail", "score": diff,
                      "message": "points of the grading report that its tests do not explain"})
    else:
        target["score"] = round(target["score"] + diff, 2)


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def encode(result: dict[str, Any]) -> str:
    """The base64 text the reporter decodes (one line, no wrapping)."""
    return base64.b64encode(json.dumps(result, separators=(",", ":")).encode()).decode("ascii")


def classroom_output_name(lab: str) -> str:
    """`VECTORADD_RESULTS`: the reporter reads `<runner id upper-cased>_RESULTS`."""
    return f"{lab.upper()}_RESULTS"


# --- Gradescope ----------------------------------------------------------------------------
#
# results.json as specified in gradescope/autograder_samples docs/specs.md ("Output
# format"): top-level "score" (overrides the sum of the tests), "execution_time",
# "output", "tests" [{"name", "score", "max_score", "status": "passed"|"failed",
# "output", "tags", "visibility"}], "leaderboard" [{"name", "value", "order": "asc"|"desc"}].

def gradescope(data: Any, visibility: str = "visible") -> dict[str, Any]:
    """Gradescope's results.json: a correctness and a performance test per lab, the
    speed relative to the reference on the leaderboard."""
    report = read(data)
    tests: list[dict[str, Any]] = []
    leaderboard: list[dict[str, Any]] = []
    for lab in report.labs:
        failed = [t for t in lab.failed_tests if t.weight > 0]
        lines = [f"{lab.status.name}: {lab.message.strip()}"] if lab.message else [lab.status.name]
        for test in failed[:MAX_FAILED_SHOWN]:
            lines.append(f"\n{test.name}\n{_clip(test.message, 800)}" + (f"\nreproduce: {test.reproduce}" if test.reproduce else ""))
        if not failed and lab.failure_command and lab.status is not status.PASS:
            lines.append(f"\nreproduce: {lab.failure_command}")
        tests.append({"name": f"{lab.name}: correctness", "score": lab.correctness, "max_score": lab.correctness_max,
                      "status": "passed" if lab.correctness >= lab.correctness_max and lab.status is status.PASS
                      else "failed",
                      "output": _clip("\n".join(lines), 6000), "tags": [lab.name, "correctness"], "visibility": visibility})
        if lab.performance_max:
            why = lab.performance_reason or (f"{lab.ratio:.2f}x the reference time" if lab.ratio else "")
            tests.append({"name": f"{lab.name}: performance", "score": lab.performance, "max_score": lab.performance_max,
                          "status": "passed" if lab.performance >= lab.performance_max else "failed",
                          "output": why, "tags": [lab.name, "performance"], "visibility": visibility})
        if lab.rule_deduction:
            tests.append({"name": f"{lab.name}: rules", "score": -lab.rule_deduction, "max_score": 0, "status": "failed",
                          "output": "\n".join(lab.rules), "tags": [lab.name, "rules"], "visibility": visibility})
        if lab.sanitizer_deduction or lab.sanitizer:
            tests.append({"name": f"{lab.name}: compute-sanitizer", "score": -lab.sanitizer_deduction, "max_score": 0,
                          "status": "failed" if lab.sanitizer else "passed",
                          "output": "\n".join(m for m, _, _ in lab.sanitizer) + (
                              f"\nreproduce: {lab.reproduce['sanitizer']}" if lab.reproduce.get("sanitizer") else ""),
                          "tags": [lab.name, "compute-sanitizer"], "visibility": visibility})
        for step in lab.steps:
            yours, rate, peak, lecture, speed = step_figures(step)
            timing = (f"\nyour time {yours} ({rate}, {peak} of peak); the reference's {step.name}: {lecture}; "
                      f"your speed vs it: {speed}") if step.ms is not None else ""
            tests.append({"name": f"{lab.name}: step {step.name} ({step.title})", "score": step.points,
                          "max_score": step.max, "status": "passed" if step.points >= step.max else "failed",
                          "output": f"{step.status}: {step.why}" + timing + (f"\nnote: {step.note}" if step.note else ""),
                          "tags": [lab.name, "variants"],
                          "visibility": visibility})
        for q in lab.questions:
            # Written answers go to the instructor for grading by hand (Gradescope shows
            # hidden tests to course staff only); checked ones score like tests, and a bench
            # figure from another GPU waits for the instructor with its points.
            output = (f"Answer:\n{_clip(q.answer, 3000)}" if q.answer else "No answer.") + (f"\n\n{q.why}" if q.why else "")
            later = " (graded at the deadline)" if q.status == AT_DEADLINE else " (graded by hand)"
            tests.append({"name": f"{lab.name}: question {q.id}" + (later if q.pending else ""),
                          "score": 0.0 if q.pending else q.points, "max_score": 0.0 if q.pending else q.max,
                          "status": "passed" if q.status == "correct" else "failed",
                          "output": output, "tags": [lab.name, "answers"],
                          "visibility": "hidden" if q.by_hand else visibility})
        # The leaderboard ranks against the fastest reference when it was timed (the stretch
        # goal), else against the graded one; it never changes a score.
        stretch = next((w.stretch_ratio for w in lab.workloads if w.stretch_ratio), None)
        speed = round(1.0 / stretch, 3) if stretch else _speed(lab)
        if speed is not None and lab.status is status.PASS:
            graded = ((lab.bench or {}).get("reference") or {}).get("variant", "default")
            against = "the fastest reference" if stretch or graded == "default" else "reference"
            leaderboard.append({"name": f"{lab.name} speedup vs {against}", "value": speed, "order": "desc"})
    leaderboard.append({"name": "total points", "value": report.total, "order": "desc"})
    result: dict[str, Any] = {
        "score": report.total,
        "output": " · ".join(p for p in [f"{_pts(report.total)} / {report.max:g} points",
                                         f"graded on {report.gpu_label}" if report.gpu_label else "",
                                         f"seed {report.seed}" if report.seed is not None else "",
                                         *report.notes] if p),
        "visibility": visibility,
        "tests": tests,
        "leaderboard": leaderboard,
    }
    elapsed = _elapsed(report.started, report.finished)
    if elapsed is not None:
        result["execution_time"] = elapsed
    return result


def _elapsed(started: str, finished: str) -> int | None:
    try:
        return max(0, round((datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()))
    except (TypeError, ValueError):
        return None


# --- GitHub annotations --------------------------------------------------------------------

def annotations(data: Any) -> list[str]:
    """`::error file=...,line=...,title=...::message` workflow commands: compile errors at
    the student's file and line, failed tests at the line they name, other failures at
    the student's file. Paths are relative to the repository root."""
    report = read(data)
    found: list[tuple[str | None, int | None, str, str]] = []
    for lab in report.labs:
        if lab.status is status.BUILD_ERROR:
            diags = compile_errors(lab.message + "\n" + lab.output, report.root)
            for path, line, message in diags:
                found.append((path, line, f"{lab.name}: compile error", message))
            if not diags:
                found.append((lab.student_file, None, f"{lab.name}: build failed", _clip(lab.message, 600)))
            continue
        for test in lab.failed_tests:
            path, line = _test_location(lab, test.message, report.root) or (lab.student_file, None)
            body = _clip(test.message, 600) + (f"\nReproduce: {test.reproduce}" if test.reproduce else "")
            found.append((path, line, f"{lab.name}: {test.name} failed", body))
        if (lab.status in (status.CRASH, status.TIMEOUT, status.NO_GPU, status.ERROR)
                or (lab.status is status.PARTIAL and not lab.tests)):
            body = _clip(lab.message, 600) + (f"\nReproduce: {lab.failure_command}" if lab.failure_command else "")
            found.append((lab.student_file, None, f"{lab.name}: {lab.status}", body))
        for rule in lab.rules:
            location = _test_location(lab, rule, report.root) or (lab.student_file, None)
            found.append((*location, f"{lab.name}: {lab.rule_title}", rule))
        for message, file, line in lab.sanitizer:
            path = repo_path(file, report.root, lab.name) if file else None
            found.append((path or lab.student_file, line if path else None, f"{lab.name}: compute-sanitizer", message))
    seen = set()
    commands = []
    for path, line, title, message in found:
        if (path, line, message) in seen:
            continue
        seen.add((path, line, message))
        props = ([f"file={_escape_property(path)}"] if path else []) + ([f"line={line}"] if line else [])
        props.append(f"title={_escape_property(title)}")
        commands.append(f"::error {','.join(props)}::{_escape_data(message)}")
    return commands[:MAX_ANNOTATIONS]


def compile_errors(text: str, root: str = "") -> list[tuple[str | None, int, str]]:
    """(repo-relative path, line, message) of each compiler error in `text`, in order, once."""
    found = []
    for raw in text.splitlines():
        match = _NVCC_DIAG.search(raw) or _GCC_DIAG.search(raw)
        if match:
            item = (repo_path(match["path"], root), int(match["line"]), match["msg"].strip())
            if item not in found:
                found.append(item)
    return found


def repo_path(path: str, root: str = "", lab: str = "") -> str | None:
    """`path` relative to the repository root, or None when it is outside the kit.

    The grader may have built in another directory than the student's checkout (a
    runner's copy, a pristine overlay), so an absolute path is cut at its last kit
    folder (labs/, common/ ...). A bare file name (LAB_CUDA_CHECK prints only the
    base name) is placed in the lab's folder when the lab has such a file.
    """
    path = path.strip().removeprefix("./")
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    parts = path.split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in TOP_DIRS and (i > 0 or not path.startswith("/")):
            return "/".join(parts[i:])
    if "/" not in path and lab and (path == f"{lab}.cu" or path.startswith(f"{lab}_") or path == f"{lab}.h"):
        return f"labs/{lab}/{path}"
    return None


def _test_location(lab: Lab, message: str, root: str = "") -> tuple[str, int | None] | None:
    """Where a failed test points: a line of the student's file when the message names
    one (a CUDA error), else the first kit file and line it names (the assertion)."""
    locations = []
    for match in _LOCATION.finditer(message):
        path = repo_path(match["path"], root, lab.name)
        if path:
            line = match["line"] or match["pline"]
            locations.append((path, int(line) if line else None))
    for path, line in locations:
        if path == lab.student_file:
            return path, line
    return locations[0] if locations else None


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


# --- python3 -m grader report ----------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="report",
        prog="python3 -m grader report",
        description="Turn a grader JSON report into the formats courses use. With no output "
                    "option, the Markdown summary goes to stdout.",
        epilog="Exit status: 0 written; 1 written, but the report was missing or unreadable "
               "(the outputs say so); 2 bad usage or an output that cannot be written.")
    parser.add_argument("report", type=Path, help="the JSON report (python3 -m grader --json FILE)")
    parser.add_argument("--markdown", metavar="FILE", help="Markdown summary ('-' for stdout; "
                        "in a workflow: \"$GITHUB_STEP_SUMMARY\")")
    parser.add_argument("--html", metavar="FILE", help="a self-contained HTML page with the scores, the failures "
                        "and a chart per bench workload ('-' for stdout; the grader writes report.html itself)")
    parser.add_argument("--junit", metavar="FILE", help="JUnit XML ('-' for stdout)")
    parser.add_argument("--classroom-env", metavar="FILE",
                        help="append <LAB>_RESULTS=<base64> per lab, the GitHub Classroom reporter's input "
                             "(in a workflow: \"$GITHUB_OUTPUT\")")
    parser.add_argument("--classroom-dir", metavar="DIR", type=Path,
                        help="write <lab>.json (readable) and <lab>.b64 (for the reporter) per lab")
    parser.add_argument("--labs", metavar="LAB[,LAB]", action="extend", type=lambda s: [x for x in s.split(",") if x],
                        help="labs that must get a Classroom result even if the report lacks them "
                             "(they get 0 points and an error); the labs the workflow lists")
    parser.add_argument("--max-score", type=float, default=100.0, metavar="N",
                        help="maximum points of a lab the report lacks (default 100)")
    parser.add_argument("--gradescope", metavar="FILE", help="Gradescope results.json ('-' for stdout)")
    parser.add_argument("--annotations", action="store_true",
                        help="print GitHub workflow commands (::error file=...,line=...) for compile "
                             "errors and failed tests")
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader report`; returns the exit status."""
    args = commandline.parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    data, problem = load(args.report)
    if problem:
        print(f"grader report: warning: {problem}", file=sys.stderr)
    if not any((args.markdown, args.html, args.junit, args.classroom_env, args.classroom_dir, args.gradescope,
                args.annotations)):
        args.markdown = "-"
    labs = [_lab_name(name) for name in args.labs or []]
    try:
        if args.annotations:
            for command in annotations(data):
                print(command)
        if args.markdown:
            text = markdown(data)
            if problem:
                text = f"> **Grading did not finish:** {problem}\n\n" + text
            _write(args.markdown, text)
        if args.html:
            from grader import html_report  # here, not at the top: html_report builds on this module
            _write(args.html, html_report.html(data))
        if args.junit:
            _write(args.junit, junit(data))
        if args.gradescope:
            _write(args.gradescope, json.dumps(gradescope(data), indent=2) + "\n")
        if args.classroom_env or args.classroom_dir:
            results = classroom_results(data, labs, args.max_score)
            if args.classroom_env:
                _write(args.classroom_env, "".join(f"{classroom_output_name(lab)}={encode(result)}\n"
                                                   for lab, result in results.items()), append=True)
            if args.classroom_dir:
                args.classroom_dir.mkdir(parents=True, exist_ok=True)
                for lab, result in results.items():
                    (args.classroom_dir / f"{lab}.json").write_text(json.dumps(result, indent=2) + "\n")
                    (args.classroom_dir / f"{lab}.b64").write_text(encode(result) + "\n")
    except OSError as exc:
        print(f"grader report: error: cannot write {exc.filename or 'an output'}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_DEGRADED if problem else EXIT_OK


def load(path: Path) -> tuple[Any, str]:
    """The parsed report and '' , or None and what is wrong with the file."""
    try:
        data = json.loads(path.read_text(errors="replace"))
    except FileNotFoundError:
        return None, f"no report at {path}: the grader did not write one (see the log of the grading step)"
    except OSError as exc:
        return None, f"cannot read the report {path}: {exc.strerror or exc}"
    except ValueError as exc:
        return None, f"the report {path} is not valid JSON ({exc}): the grader was probably cut off"
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != REPORT_SCHEMA:  # a bench JSON, a gtest JSON, another tool's file: nothing graded to report
        return None, (f"{path} is not a grading report (its schema is {schema!r}, not {REPORT_SCHEMA!r}): "
                      "give the report.json that `python3 -m grader` wrote")
    return data, ""


def _lab_name(name: str) -> str:
    by_lower = {lab.lower(): lab for lab in COURSE_LABS}
    return by_lower.get(name.lower(), name)


def _write(target: str, text: str, append: bool = False) -> None:
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    if path.parent != Path("."):
        path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as stream:
        stream.write(text)
