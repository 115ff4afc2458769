"""The Markdown summary (for $GITHUB_STEP_SUMMARY): the score table, every failure with the
command that reproduces it, the lecture's steps, the graded questions, the bench figures
and the profiles.

    python3 -m grader report build/grader/report.json --markdown -
"""

from __future__ import annotations

import re
from typing import Any

from grader import status
from grader.formats.sources import compile_errors
from grader.formats.text import clip, first_line, fmt, lab_note, pts, step_figures
from grader.report import AT_DEADLINE, Lab, deadline_points, pending_points, read, writeup_points

MAX_FAILED_SHOWN = 10  # failed tests detailed per lab in the Markdown summary
STATUS_ICONS = {status.PASS: "✅", status.PARTIAL: "⚠️"}


def markdown(data: Any) -> str:
    """The score table, every failure with the command that reproduces it, the bench figures."""
    report = read(data)
    out = []
    share = f" ({100 * report.total / report.max:.1f}%)" if report.max else ""
    out.append(f"## CUDA labs: {pts(report.total)} / {report.max:g} points{share}\n")
    if report.labs:
        out.append("| lab | status | correctness | performance | total | note |")
        out.append("|:--|:--|--:|--:|--:|:--|")
        for lab in report.labs:
            out.append(f"| {lab.name} | {STATUS_ICONS.get(lab.status, '❌')} {lab.status.name} "
                       f"| {pts(lab.correctness)} / {lab.correctness_max:g} "
                       f"| {pts(lab.performance)} / {lab.performance_max:g} "
                       f"| **{pts(lab.total)}** / {lab.max:g} | {_md_cell(lab_note(lab))} |")
        out.append(f"| **total** | | | | **{pts(report.total)}** / {report.max:g} | |")
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
    parts = [f"#### {lab.name}: {lab.status.name}" + (f": {first_line(lab.message)}" if failed and lab.message else "")]
    for test in failed[:MAX_FAILED_SHOWN]:
        parts.append(f"- **{test.name}**" + (" (no points: a test of the provided code)" if not test.weight else ""))
        if test.message:
            parts.append(_indent(_fence(clip(test.message, 800)), 2))
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
            parts.append(_fence(clip(detail, 3000)))
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
    if hand := writeup_points(labs):
        tail += f"\n\n{hand:g} points of write-ups (WRITEUP.md) are graded by hand with the rubric and are not in the total yet."
    return "| lab | question | status | points | note |\n|:--|:--|:--|--:|:--|\n" + "\n".join(rows) + tail


def _md_bench(labs: list[Lab]) -> str:
    rows = []
    for lab in labs:
        for w in lab.workloads:
            rows.append(f"| {lab.name} | {_md_cell(w.name, 60)} | {fmt(w.student_ms)} "
                        f"| {fmt(w.reference_ms)} | {fmt(w.ratio, '×')} "
                        f"| {fmt(w.throughput, ' ' + w.unit if w.unit else '')} | {fmt(w.pct_peak, '%')} "
                        f"| {fmt(w.speedup_vs_cpu, '×')} |")
    if not rows:
        return ""
    head = ("| lab | workload | you (ms) | reference (ms) | your time / reference | throughput | % of peak | "
            "speedup over CPU |\n|:--|:--|--:|--:|--:|--:|--:|--:|")
    stretch = [f"{lab.name}: your time is {w.stretch_ratio:.2f}× the fastest reference's ({fmt(w.stretch_ms)} ms)"
               for lab in labs for w in lab.workloads if w.stretch_ratio]
    tail = ("\n\nStretch goal (not graded): " + "; ".join(stretch) + ".") if stretch else ""
    return head + "\n" + "\n".join(rows) + tail


