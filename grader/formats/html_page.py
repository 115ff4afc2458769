"""The HTML report: one page for students and instructors, `report.html`.

    python3 -m grader report build/grader/report.json --html report.html

`html(data)` is a pure function of the JSON report (schema labkit-report), read into the
one model of a report (`report.read`) like every format of grader/formats/: a header with
the total, the score table, then a section per lab with its score breakdown, its failures
with the commands that reproduce them, and a bar chart (inline SVG) per bench workload.
The page needs nothing else (inline CSS, no JavaScript, no network), so it opens from
disk and can be mailed or attached to a CI run. Every string of a report may come from
a student's program and is escaped; a missing or odd field becomes a short note, never
a traceback.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from html import escape
from typing import Any

from grader import status
from grader.formats.sources import compile_errors
from grader.formats.text import clip, fmt, lab_note, pts, step_figures, xml_text
from grader.report import STRETCH_NAME, Lab, Report, Writeup, deadline_points, pending_lines, pending_points, read

MAX_FAILED_SHOWN = 50  # failed tests detailed per lab; a page holds more than a CI summary, the JSON has all
MAX_NAME_CHARS = 34  # of a result's name in a chart's label column (the full name is its tooltip)
STATUS_CLASSES = {status.PASS: "ok", status.PARTIAL: "warn"}  # any other status: "bad"

# The rows of a chart, in this order; a role the bench may add later comes last, as "other".
ROLES = ("student", "reference", "library", "roofline", "variant")
ROLE_LABELS = {"student": "you"}  # the others are named by their role

# Chart geometry (SVG user units, about pixels): role and name | bars | figures.
CHART_WIDTH = 920
LABEL_WIDTH = 230
FIGURE_WIDTH = 190
PLOT_X = LABEL_WIDTH + 10
PLOT_WIDTH = CHART_WIDTH - PLOT_X - FIGURE_WIDTH - 20
ROW_HEIGHT = 36
BAR_HEIGHT = 18
CHART_TOP = 26  # room for the peak's label
CHART_BOTTOM = 28  # room for the axis' tick labels

STYLE = """
:root { color-scheme: light; }
body { margin: 0 auto; max-width: 1140px; padding: 24px 28px 48px; background: #fff; color: #1f2328;
       font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 21px; margin: 0 0 8px; display: flex; flex-wrap: wrap; gap: 10px; align-items: baseline; }
h3 { font-size: 16px; margin: 20px 0 6px; }
h4 { font-size: 15px; margin: 14px 0 4px; font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
     overflow-wrap: anywhere; }
a { color: #0969da; }
header { border-bottom: 1px solid #d0d7de; padding-bottom: 12px; margin-bottom: 20px; }
.facts { color: #59636e; margin: 0; }
.share { color: #59636e; font-weight: normal; }
.notes { margin: 8px 0; padding: 8px 12px 8px 28px; background: #fff8c5; border: 1px solid #d4a72c66;
         border-radius: 6px; }
.note { color: #59636e; font-style: italic; }
table { border-collapse: collapse; margin: 6px 0 12px; }
th, td { padding: 5px 10px; border-bottom: 1px solid #d0d7de; text-align: left; vertical-align: top; }
thead th { border-bottom: 2px solid #d0d7de; font-size: 13px; color: #59636e; }
td.num, th.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
tr.total td, tr.total th { font-weight: 600; border-top: 2px solid #d0d7de; }
table.scores, table.breakdown { width: 100%; }
table.scores { font-size: 14px; }
table.scores th, table.scores td { padding: 5px 6px; }
.wide { overflow-x: auto; }
table.scores td.why { color: #59636e; font-size: 14px; }
table.scores td.deductions { white-space: normal; }
table.breakdown th { font-weight: 600; white-space: nowrap; width: 1%; }
table.breakdown td.num { width: 1%; }
table.breakdown td { overflow-wrap: anywhere; }
table.breakdown ul { margin: 4px 0 0; padding-left: 20px; }
table.steps { margin: 2px 0 6px; font-size: 14px; }
table.rubric { margin: 4px 0 8px; font-size: 14px; width: 100%; table-layout: fixed; }
table.rubric td:first-child { width: 25%; color: #59636e; }
table.steps th, table.steps td { padding: 3px 8px 3px 0; border-bottom: 1px solid #eaeef2; }
table.breakdown table.steps td.num { width: auto; }
.status { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 13px; font-weight: 600;
          white-space: nowrap; }
.status.ok { background: #dafbe1; color: #116329; }
.status.warn { background: #fff1c2; color: #7d4e00; }
.status.bad { background: #ffebe9; color: #a40e26; }
.points { color: #59636e; font-weight: normal; font-size: 17px; }
section.lab { border-top: 1px solid #d0d7de; padding-top: 18px; margin-top: 28px; }
pre { margin: 4px 0 10px; padding: 8px 10px; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px;
      white-space: pre-wrap; overflow-wrap: anywhere; font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo,
      Consolas, monospace; }
pre.command { background: #eef4ff; border-color: #b6cdf0; }
div.answer { margin: 4px 0 10px; padding: 2px 10px; background: #f6f8fa; border: 1px solid #d0d7de; border-radius: 6px; }
div.answer p { margin: 6px 0; }
div.answer pre { border: none; padding: 0; }
.label { margin: 6px 0 0; font-size: 13px; color: #59636e; }
details { margin: 6px 0; }
figure { margin: 14px 0 22px; }
figcaption { margin-bottom: 4px; }
figcaption .name { font-weight: 600; overflow-wrap: anywhere; }
figcaption .about { color: #59636e; font-size: 14px; }
.graded { display: inline-block; padding: 0 6px; margin-left: 6px; border-radius: 8px; font-size: 12px;
          background: #ddf4ff; color: #0550ae; font-weight: 600; }
svg.chart { display: block; max-width: 100%; height: auto; }
svg.chart text { font: 12px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #1f2328; }
svg.chart text.role { font-weight: 600; }
svg.chart text.sub, svg.chart text.tick { fill: #59636e; font-size: 11px; }
svg.chart text.none { fill: #59636e; font-style: italic; }
svg.chart .band.student { fill: #fff4e6; }
svg.chart .grid { stroke: #e4e8ec; stroke-width: 1; }
svg.chart .axis { stroke: #8c959f; stroke-width: 1; }
svg.chart .bar { stroke: none; }
svg.chart .bar.student { fill: #e8590c; stroke: #a33b05; stroke-width: 1; }
svg.chart .bar.reference { fill: #6e9fd1; }
svg.chart .bar.library { fill: #7dbb91; }
svg.chart .bar.roofline { fill: #b8bec5; }
svg.chart .bar.variant { fill: #b7a6dc; }
svg.chart .bar.other { fill: #c9c9c9; }
svg.chart .whisker { stroke: #1f2328; stroke-width: 1.5; fill: none; }
svg.chart .peak { stroke: #cf222e; stroke-width: 2; stroke-dasharray: 6 4; }
svg.chart text.peak-label { fill: #cf222e; font-weight: 600; }
"""


def html(data: Any) -> str:
    """The page of the JSON report `data`: header, score table, a section per lab."""
    report = read(data)
    title = f"CUDA labs: {pts(report.total)} / {report.max:g} points"
    parts = [_header(report, title)]
    if report.labs:
        parts.append(_score_table(report))
        parts.extend(_lab_section(lab) for lab in report.labs)
    else:
        parts.append('<p class="note">No lab was graded: see the log of the grading step.</p>')
    page = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{_esc(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(parts) + "\n</body>\n</html>\n")
    # A report may hold lone surrogates (JSON "\\udc80" escapes): make the page encodable as UTF-8.
    return page.encode("utf-8", "replace").decode("utf-8")


# --- header and score table -----------------------------------------------------------------

def _header(report: Report, title: str) -> str:
    share = f' <span class="share">({100 * report.total / report.max:.1f}%)</span>' if report.max > 0 else ""
    facts = [f"seed {report.seed}" if report.seed is not None else "",
             f"grader {report.grader_version}" if report.grader_version else "",
             "the reference solutions" if report.impl == "solution" else "",
             _device(report),
             f"graded {report.finished}" if report.finished else "",
             "interrupted: not every lab was graded" if report.interrupted else ""]
    out = [f"<header>\n<h1>{_esc(title)}{share}</h1>",
           f'<p class="facts">{" · ".join(_esc(fact) for fact in facts if fact)}</p>']
    if report.notes:
        out.append(_list(report.notes, "notes"))
    return "\n".join(out) + "\n</header>"


def _device(report: Report) -> str:
    """The GPU that graded the run, as the report names it (an older report: the first bench's)."""
    return f"graded on {report.gpu_label}" if report.gpu_label else ""


def _score_table(report: Report) -> str:
    asked = any(lab.questions for lab in report.labs)  # an answers column only when questions were graded
    stepped = any(lab.steps for lab in report.labs)  # a variants column when a lab requires some
    rows = []
    for lab in report.labs:
        answers = f'<td class="num">{_points(lab.answers, lab.answers_max)}</td>' if asked else ""
        steps = (f'<td class="num">{_points(lab.variants, lab.variants_max) if lab.steps else "–"}</td>'
                 if stepped else "")
        rows.append(f'<tr><td><a href="#{_esc(_anchor(lab))}">{_esc(lab.name)}</a></td><td>{_status(lab)}</td>'
                    f'<td class="num">{_points(lab.correctness, lab.correctness_max)}</td>'
                    f'<td class="num">{_points(lab.performance, lab.performance_max)}</td>{steps}{answers}'
                    f'<td class="num deductions">{_esc(_deductions(lab))}</td>'
                    f'<td class="num"><strong>{_points(lab.total, lab.max)}</strong></td>'
                    f'<td class="why">{_esc(_short(lab_note(lab)))}</td></tr>')
    tail = "".join(f'<p class="note">{_esc(line)}</p>\n'
                   for line in pending_lines(report.labs, " and are not in the total yet."))
    return ('<section id="scores">\n<h2>Scores</h2>\n<div class="wide"><table class="scores">\n<thead><tr><th>lab</th><th>status</th>'
            '<th class="num">correctness</th><th class="num">performance</th>'
            + ('<th class="num">variants</th>' if stepped else "")
            + ('<th class="num">answers</th>' if asked else "") + '<th class="num">deductions</th>'
            '<th class="num">total</th><th>note</th></tr></thead>\n<tbody>\n' + "\n".join(rows)
            + '\n<tr class="total"><th>total</th><td></td><td></td><td></td><td></td>' + ("<td></td>" if asked else "")
            + ("<td></td>" if stepped else "")
            + f'<td class="num">{_points(report.total, report.max)}</td><td></td></tr>\n</tbody>\n</table></div>\n'
            + tail + '</section>')


def _deductions(lab: Lab) -> str:
    """'rules −25, sanitizer −10', or '–' when nothing was deducted (a part breaks no line)."""
    parts = [f"rules\u00a0−{lab.rule_deduction:g}" if lab.rule_deduction > 0 else "",
             f"sanitizer\u00a0−{lab.sanitizer_deduction:g}" if lab.sanitizer_deduction > 0 else ""]
    return ", ".join(part for part in parts if part) or "–"


# --- a lab ----------------------------------------------------------------------------------

def _lab_section(lab: Lab) -> str:
    out = [f'<section class="lab" id="{_esc(_anchor(lab))}">',
           f'<h2><span>{_esc(lab.name)}</span> {_status(lab)} '
           f'<span class="points">{_points(lab.total, lab.max)} points</span></h2>']
    if lab.status.is_failure and lab.message:
        out.append(_text_block(lab.message))
    out.append(_breakdown(lab))
    failures = _failures(lab)
    if failures:
        out.append("<h3>Failures</h3>\n" + failures)
    if lab.notes:
        out.append("<h3>Notes</h3>\n" + _list(lab.notes, "notes"))
    out.append(_timing(lab))
    if lab.profile_text:
        out.append("<details><summary>Nsight Compute profile of the graded call (feedback only)</summary>"
                   f"<pre>{_esc(lab.profile_text)}</pre></details>")
    elif lab.profile_error:
        out.append(f'<p class="note">No profile: {_esc(lab.profile_error)}</p>')
    return "\n".join(out) + "\n</section>"


def _breakdown(lab: Lab) -> str:
    """Where the lab's points come from: tests, timing, deductions."""
    rows = [_row("correctness", _points(lab.correctness, lab.correctness_max), _esc(_tests_summary(lab))),
            _row("performance", _points(lab.performance, lab.performance_max), _esc(_performance_summary(lab)))]
    if lab.steps:
        rows.append(_row("the lecture's steps", _points(lab.variants, lab.variants_max), _steps(lab)))
    if lab.questions:
        rows.append(_row("graded questions", _points(lab.answers, lab.answers_max), _answers(lab)))
    if lab.writeup is not None:
        rows.append(_row("write-up", f"{lab.writeup.max:g} points", _writeup(lab.writeup)))
    if lab.rules or lab.rule_deduction > 0:
        verdict = lab.rules_verdict or "points deducted for the lab's rules"
        rows.append(_row("rules", f"−{lab.rule_deduction:g}", _esc(verdict) + _list(lab.rules)))
    if lab.sanitizer or lab.sanitizer_deduction > 0:
        findings = [finding.message + (f" ({finding.file}" + (f":{finding.line})" if finding.line else ")")
                                       if finding.file else "")
                    for finding in lab.sanitizer]
        command = lab.reproduce.get("sanitizer", "")
        rows.append(_row("compute-sanitizer", f"−{lab.sanitizer_deduction:g}",
                         "errors found" + _list(findings)
                         + (f'<p class="label">Reproduce:</p>{_command(command)}' if command else "")))
    rows.append(f'<tr class="total"><th>total</th><td class="num">{_points(lab.total, lab.max)}</td><td></td></tr>')
    return '<h3>Score</h3>\n<table class="breakdown">\n' + "\n".join(rows) + "\n</table>"


def _steps(lab: Lab) -> str:
    """The required variants: each one's points and why, and the student's progression
    table beside the reference's version of each step (where the bench timed them)."""
    rows = []
    for step in lab.steps:
        yours, rate, peak, lecture, speed = step_figures(step)
        state = "ok" if step.points >= step.max else "bad"
        rows.append(f'<tr><td title="{_esc(step.title)}"><code>{_esc(step.name)}</code></td>'
                    f'<td><span class="status {state}">{_esc(step.status)}</span></td>'
                    f'<td class="num">{step.points:g} / {step.max:g}</td><td class="num">{_esc(yours)}</td>'
                    f'<td class="num">{_esc(rate)}</td><td class="num">{_esc(peak)}</td>'
                    f'<td class="num">{_esc(lecture)}</td><td class="num">{_esc(speed)}</td></tr>')
    whys = [f"{step.name}: {step.why}" for step in lab.steps if step.points < step.max and step.why]
    whys += [f"{step.name}: {step.note}" for step in lab.steps if step.note]
    return ('<table class="steps"><thead><tr><th>step</th><th>status</th><th class="num">points</th>'
            '<th class="num">your time</th><th class="num">throughput</th><th class="num">% of peak</th>'
            '<th class="num">the reference\'s</th><th class="num">your speed vs it</th></tr></thead><tbody>'
            + "".join(rows) + "</tbody></table>" + (_list(whys) if whys else ""))


def _answer_text(text: str) -> str:
    """A student's answer as written in Markdown: lines of one paragraph flow together (the
    file's line breaks are the editor's, not the student's), blank lines part paragraphs,
    and a fenced block (```) keeps its lines."""
    blocks, fence = [], False
    for part in re.split(r"\n[ \t]*\n", text.strip()):
        if fence or part.lstrip().startswith("```"):
            blocks.append(f'<pre class="answer">{_esc(part)}</pre>')
            if part.count("```") % 2 == 1:  # a fence opened here (blank lines inside) or closed
                fence = not fence
        else:
            blocks.append(f"<p>{_esc(' '.join(line.strip() for line in part.splitlines()))}</p>")
    return '<div class="answer">' + "".join(blocks) + "</div>"


def _answers(lab: Lab) -> str:
    """Each graded question of the lab: its status and points, why, and the answer given."""
    items = []
    for q in lab.questions:
        points = f"{q.max:g} points" if q.pending else f"{q.points:g} / {q.max:g}"
        shown = "to be graded by hand" if q.by_hand and q.status == "manual" else q.status_text
        answer = _answer_text(q.answer) if q.answer else ""
        why = f" — {_esc(q.why)}" if q.why else ""
        items.append(f'<li><code>{_esc(q.id)}</code> {_esc(q.title)}: <strong>{_esc(shown)}</strong>, '
                     f"{_esc(points)}{why}{answer}</li>")
    where = f"in <code>{_esc(lab.answers_file)}</code>" if lab.answers_file else ""
    written, other = pending_points([lab])
    later = deadline_points([lab])
    pending = (f"; {written:g} points of written answers to be graded by hand" if written else "") + (
        f"; {other:g} points of figures measured on another GPU left to your instructor" if other else "") + (
        f"; {later:g} points checked against the instructor's key at the deadline" if later else "")
    return f"your answers {where}{_esc(pending)}<ul class=\"questions\">" + "".join(items) + "</ul>"


WRITEUP_STATUS = {"pending": "to be graded by hand with the rubric",
                  "empty": "not written yet: the template's headings only",
                  "missing": "not handed in"}


def _writeup(writeup: Writeup) -> str:
    """The write-up: its status and form, then the rubric with the student's text beside
    each item (collapsed), and the whole text as written (collapsed)."""
    state = WRITEUP_STATUS.get(writeup.status, writeup.status)
    where = f"<code>{_esc(writeup.file)}</code>: " if writeup.file else ""
    facts = [f"{writeup.words} words" if writeup.status != "missing" else "",
             f"SHA-256 {writeup.sha256[:12]}" if writeup.sha256 else "",
             "only its beginning was read (too long)" if writeup.truncated else ""]
    out = [f"{where}<strong>{_esc(state)}</strong>, not in the total yet"
           + "".join(f" · {_esc(fact)}" for fact in facts if fact)]
    if writeup.status == "pending":
        out.append(_list(writeup.problems) if writeup.problems else
                   "<p>Form: every heading of the rubric, a machine line and a score table are there.</p>")
        if writeup.machine_line:
            out.append(f'<p class="label">Machine line:</p><pre>{_esc(writeup.machine_line)}</pre>')
    elif writeup.note:
        out.append(f'<p class="note">{_esc(writeup.note)}</p>')
    rows = []
    for item in writeup.rubric:
        text = writeup.sections.get(item.id, "")
        shown = (f"<pre>{_esc(text)}</pre>" if text.strip() else
                 '<p class="note">' + ("(nothing under this heading)" if writeup.headings.get(item.id)
                                       else f"no heading “{_esc(item.title)}”") + "</p>")
        rows.append(f'<tr><td><strong>{_esc(item.title)}</strong> <code>{_esc(item.id)}</code><br>'
                    f'{item.points:g} points: {_esc(item.earns)}</td><td>{shown}</td></tr>')
    out.append(f"<details{' open' if writeup.status == 'pending' else ''}><summary>The rubric "
               f"({writeup.max:g} points) and the student's text beside it</summary>"
               '<table class="rubric"><thead><tr><th>rubric item</th><th>the write-up</th></tr></thead><tbody>'
               + "".join(rows) + "</tbody></table></details>")
    if writeup.text.strip():
        out.append(f"<details><summary>The whole write-up as written</summary><pre>{_esc(writeup.text)}</pre>"
                   "</details>")
    return "\n".join(out)


def _row(title: str, points: str, why_html: str) -> str:
    return f'<tr><th>{_esc(title)}</th><td class="num">{_esc(points)}</td><td>{why_html}</td></tr>'


def _tests_summary(lab: Lab) -> str:
    if not lab.tests:
        return "no test results" + (f": {lab.status.label}" if lab.status.is_failure else "")
    graded = [test for test in lab.tests if test.weight > 0]
    passed = sum(test.status == status.TEST_PASSED for test in graded)
    text = f"{passed} of {len(graded)} graded tests passed"
    skipped = sum(test.status == status.TEST_SKIPPED for test in graded)
    if skipped:
        text += f", {skipped} skipped"
    provided = len(lab.tests) - len(graded)
    if provided:
        text += f" (and {provided} {'test' if provided == 1 else 'tests'} of the provided code, worth no points)"
    return text


def _performance_summary(lab: Lab) -> str:
    if lab.performance_reason:
        return lab.performance_reason
    ratio = _positive(lab.ratio)
    if ratio is None:
        return "no timing" if not lab.performance_max else "no ratio to the reference in the report"
    speed = 1 / ratio
    compared = ("as fast as the reference" if abs(speed - 1) < 0.005 else
                f"{_ratio(speed)}× the reference's speed")
    return f"your time is {_ratio(ratio)}× the reference's ({compared})"


def _failures(lab: Lab) -> str:
    """Failed tests with their messages and commands, or why the lab stopped."""
    out = []
    # After a crash or a hang every test without a result is "failed": the message and
    # the command of the test that was running say more (as on the console).
    failed = [] if lab.status in status.ENDED_EARLY else lab.failed_tests
    for test in failed[:MAX_FAILED_SHOWN]:
        out.append(f"<h4>{_esc(test.name)}</h4>")
        if not test.weight:
            out.append('<p class="note">no points: a test of the provided code</p>')
        if test.message:
            out.append(f"<pre>{_esc(clip(test.message, 3000))}</pre>")
        command = test.reproduce or lab.failure_command
        if command:
            out.append(f'<p class="label">Reproduce:</p>{_command(command)}')
    if len(failed) > MAX_FAILED_SHOWN:
        out.append(f'<p class="note">… and {len(failed) - MAX_FAILED_SHOWN} more failed tests: '
                   "see the JSON report</p>")
    if not failed and lab.status.is_failure:
        # A build error's message holds the compiler's error lines already; the output
        # tail helps only when it does not (as in the Markdown summary).
        if lab.output and (lab.status in (status.CRASH, status.ERROR, status.TIMEOUT)
                           or (lab.status is status.BUILD_ERROR and not compile_errors(lab.message))):
            out.append(f"<details open><summary>Output</summary><pre>{_esc(clip(lab.output, 6000))}</pre>"
                       "</details>")
        if lab.failure_command:
            out.append(f'<p class="label">Reproduce:</p>{_command(lab.failure_command)}')
    if lab.traceback:
        out.append(f"<details><summary>The grader's traceback</summary><pre>{_esc(lab.traceback)}</pre></details>")
    return "\n".join(out)


# --- timing ---------------------------------------------------------------------------------

def _timing(lab: Lab) -> str:
    """A chart per workload of the bench (graded ones first), or why there is none."""
    out = ["<h3>Timing</h3>"]
    if lab.bench is None:
        why = lab.performance_reason or "the report holds no bench figures for this lab"
        out.append(f'<p class="note">No timing: {_esc(why.rstrip("."))}.</p>')
        return "\n".join(out)
    workloads = _dicts(lab.bench.get("workloads"))
    raw_errors = lab.bench.get("errors")
    errors = [_text(error.get("message") if isinstance(error, dict) else error)
              for error in (raw_errors if isinstance(raw_errors, list) else [])]
    errors = [error for error in errors if error]
    if errors:
        out.append("<p>The bench reported:</p>" + _list(errors))
    if not workloads:
        out.append('<p class="note">The bench reported no workloads.</p>')
    for workload in sorted(workloads, key=lambda w: w.get("graded") is not True):
        out.append(_workload(lab, workload))
    command = lab.reproduce.get("bench", "")
    if command:
        out.append(f'<p class="label">Run the bench yourself:</p>{_command(command)}')
    return "\n".join(out)


@dataclass
class _Bar:
    """One row of a chart: a result of the bench and the figure drawn for it."""

    role: str  # one of ROLES, or "other"
    name: str
    value: float | None  # throughput, or the median time; None: nothing to draw
    low: float | None  # the q1–q3 range in the same measure (None: not known)
    high: float | None
    median_ms: float | None
    pct_peak: float | None


def _workload(lab: Lab, workload: dict[str, Any]) -> str:
    name = _text(workload.get("name")) or "unnamed workload"
    unit = _text(workload.get("unit"))
    results = _dicts(workload.get("results"))
    # Throughput when the bench gives one (longer is faster), else the time (shorter is faster).
    by_throughput = any(_positive(r.get("throughput")) is not None for r in results)
    bars = sorted((_bar(r, by_throughput) for r in results),
                  key=lambda bar: ROLES.index(bar.role) if bar.role in ROLES else len(ROLES))
    peak = _positive(workload.get("peak")) if by_throughput else None
    measure = f"throughput in {unit}" if by_throughput and unit else "throughput" if by_throughput \
        else "median time in ms"
    about = [f"{measure} ({'longer' if by_throughput else 'shorter'} is faster)"]
    if peak is not None:
        about.append(f"device peak {_fmt_unit(peak, unit)}")
    about.extend(_pair_facts(workload, results))
    graded = ' <span class="graded">graded</span>' if workload.get("graded") is True else ""
    caption = (f'<figcaption><span class="name">{_esc(name)}</span>{graded}<br>'
               f'<span class="about">{_esc(" · ".join(about))}</span></figcaption>')
    return f'<figure class="workload">\n{caption}\n{_chart(lab, name, bars, by_throughput, unit, peak)}\n</figure>'


def _bar(result: dict[str, Any], by_throughput: bool) -> _Bar:
    role = _text(result.get("role"))
    median, q1, q3 = (_positive(result.get(key)) for key in ("median_ms", "q1_ms", "q3_ms"))
    quartiles = median is not None and q1 is not None and q3 is not None and q1 <= median <= q3
    if by_throughput:
        value = _positive(result.get("throughput"))
        # Throughput goes as 1 / time: the slow quartile (q3) is the low end of the range.
        low, high = ((_finite(value * median / q3), _finite(value * median / q1)) if value is not None and quartiles
                     else (None, None))
    else:
        value, low, high = median, (q1 if quartiles else None), (q3 if quartiles else None)
    return _Bar(role=role if role in ROLES else "other", name=_text(result.get("name")) or role or "?",
                value=value, low=low, high=high, median_ms=median, pct_peak=_finite(result.get("pct_peak")))


def _role_label(bar: _Bar) -> str:
    """'you' for the student, 'stretch goal' for the reference's fastest version when it is
    not the graded one, else the role."""
    if bar.name == STRETCH_NAME:
        return "stretch goal"
    return ROLE_LABELS.get(bar.role, bar.role)


def _who(bar: _Bar) -> str:
    """'you', 'reference (default)', 'library (cub::DeviceReduce::Sum)'."""
    role = _role_label(bar)
    return role if bar.name == bar.role else f"{role} ({bar.name})"


def _pair_facts(workload: dict[str, Any], results: list[dict[str, Any]]) -> list[str]:
    """The graded comparison (your time over the reference's, and how sure), and the CPU."""
    facts = []
    pair = workload.get("pair") if isinstance(workload.get("pair"), dict) else {}
    ratio = _positive(pair.get("ratio_median"))
    if ratio is not None:
        spread = _finite(pair.get("ratio_rel_se"))
        facts.append(f"your time / the reference's: {_ratio(ratio)}×"
                     + (f" (± {100 * spread:.2g}%)" if spread is not None and spread >= 0 else "")
                     + (" — noisy" if pair.get("noisy") is True else ""))
    student = next((result for result in results if result.get("role") == "student"), {})
    speedup = _positive(student.get("speedup_vs_cpu"))
    if speedup is not None:
        facts.append(f"you are {_fmt_number(speedup)}× as fast as the CPU")
    return facts


def _chart(lab: Lab, workload: str, bars: list[_Bar], by_throughput: bool, unit: str, peak: float | None) -> str:
    """Horizontal bars, one per result with a figure; q1–q3 whiskers; the peak as a line."""
    figures = [figure for bar in bars for figure in (bar.value, bar.high) if figure is not None]
    end, ticks = _axis(max(figures + ([peak] if peak is not None else []), default=0.0))
    height = CHART_TOP + max(len(bars), 1) * ROW_HEIGHT + CHART_BOTTOM

    def x(value: float) -> float:
        return PLOT_X + PLOT_WIDTH * min(max(value / end, 0.0), 1.0)

    shown_unit = unit if by_throughput else "ms"
    summary = [f"{_who(bar)}: " + (_fmt_unit(bar.value, shown_unit) if bar.value is not None else "no figure")
               for bar in bars]
    label = (f"{lab.name}, {workload}: {'throughput' if by_throughput else 'median time'} per implementation. "
             + ("; ".join(summary) or "no results") + "."
             + (f" Device peak {_fmt_unit(peak, unit)}." if peak is not None else ""))
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" role="img" width="{CHART_WIDTH}" '
           f'height="{height}" viewBox="0 0 {CHART_WIDTH} {height}" aria-label="{_esc(label)}">',
           f"<title>{_esc(label)}</title>"]
    bottom = height - CHART_BOTTOM
    for tick in ticks:
        out.append(f'<line class="grid" x1="{x(tick):.1f}" y1="{CHART_TOP - 4}" x2="{x(tick):.1f}" y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{x(tick):.1f}" y="{bottom + 16}" text-anchor="middle">'
                   f"{_esc(_fmt_number(tick))}</text>")
    out.append(f'<line class="axis" x1="{PLOT_X}" y1="{CHART_TOP - 4}" x2="{PLOT_X}" y2="{bottom}"/>')
    if not bars:
        out.append(f'<text class="none" x="{PLOT_X + 8}" y="{CHART_TOP + ROW_HEIGHT / 2 + 4:.1f}">'
                   "the bench gave no results for this workload</text>")
    for row, bar in enumerate(bars):
        out.append(_chart_row(bar, CHART_TOP + row * ROW_HEIGHT, x, shown_unit))
    if peak is not None:
        out.append(f'<line class="peak" x1="{x(peak):.1f}" y1="{CHART_TOP - 6}" x2="{x(peak):.1f}" y2="{bottom}"/>')
        out.append(f'<text class="peak-label" x="{x(peak):.1f}" y="{CHART_TOP - 10}" text-anchor="middle">'
                   f"peak {_esc(_fmt_unit(peak, unit))}</text>")
    out.append("</svg>")
    return "\n".join(out)


def _chart_row(bar: _Bar, top: float, x: Callable[[float], float], unit: str) -> str:
    middle = top + ROW_HEIGHT / 2
    role = _role_label(bar)
    name = bar.name if len(bar.name) <= MAX_NAME_CHARS else bar.name[:MAX_NAME_CHARS - 1] + "…"
    out = [f'<g class="row {bar.role}"><title>{_esc(_who(bar))}</title>']
    if bar.role == "student":
        out.append(f'<rect class="band student" x="0" y="{top + 1:.1f}" width="{CHART_WIDTH}" '
                   f'height="{ROW_HEIGHT - 2}"/>')
    # The role, and the result's name under it when it says more.
    if bar.name != bar.role:
        out.append(f'<text class="role" x="{LABEL_WIDTH}" y="{middle - 3:.1f}" text-anchor="end">{_esc(role)}</text>')
        out.append(f'<text class="sub" x="{LABEL_WIDTH}" y="{middle + 11:.1f}" text-anchor="end">{_esc(name)}</text>')
    else:
        out.append(f'<text class="role" x="{LABEL_WIDTH}" y="{middle + 4:.1f}" text-anchor="end">{_esc(role)}</text>')
    figures_x = PLOT_X + PLOT_WIDTH + 14
    if bar.value is None:
        out.append(f'<text class="none" x="{PLOT_X + 8}" y="{middle + 4:.1f}">no figure</text>')
    else:
        out.append(f'<rect class="bar {bar.role}" x="{PLOT_X}" y="{middle - BAR_HEIGHT / 2:.1f}" '
                   f'width="{max(x(bar.value) - PLOT_X, 1.0):.1f}" height="{BAR_HEIGHT}"/>')
        if bar.low is not None and bar.high is not None:
            low, high = x(bar.low), x(bar.high)
            out.append(f'<path class="whisker" d="M{low:.1f} {middle:.1f}H{high:.1f}'
                       f'M{low:.1f} {middle - 5:.1f}V{middle + 5:.1f}M{high:.1f} {middle - 5:.1f}V{middle + 5:.1f}"/>')
        detail = [f"{_percent(bar.pct_peak)} of peak" if bar.pct_peak is not None else "",
                  _fmt_unit(bar.median_ms, "ms") if unit != "ms" and bar.median_ms is not None else ""]
        out.append(f'<text class="value" x="{figures_x}" y="{middle - 3:.1f}">'
                   f"{_esc(_fmt_unit(bar.value, unit))}</text>")
        out.append(f'<text class="sub" x="{figures_x}" y="{middle + 11:.1f}">'
                   f'{_esc(" · ".join(d for d in detail if d))}</text>')
    return "\n".join(out) + "\n</g>"


def _axis(top: float) -> tuple[float, list[float]]:
    """The end of the value axis (a round number at or above `top`) and its ticks."""
    raw = top / 5
    if not (math.isfinite(top) and raw > 0):
        return 1.0, [0.0]
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    count = math.ceil(top / step - 1e-9)
    end = count * step
    if not (math.isfinite(end) and end > 0):
        return top, [0.0, top]
    return end, [i * step for i in range(count + 1)]


# --- small pieces ---------------------------------------------------------------------------

def _esc(value: Any) -> str:
    """`value` as text that cannot open or close markup, also inside an attribute."""
    return escape(xml_text(_text(value)), quote=True)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The objects of a list of the bench's JSON (nothing when it is not a list)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _finite(value: Any) -> float | None:
    """A number of the report, or None for anything else (None, text, NaN, infinity)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _positive(value: Any) -> float | None:
    """A figure that can be drawn: a finite number above 0."""
    number = _finite(value)
    return number if number is not None and number > 0 else None


def _fmt_number(value: float) -> str:
    """2675, 0.301, 89.6: as the Markdown summary writes figures, short also when huge."""
    return fmt(value) if abs(value) < 1e7 else f"{value:.3g}"


def _ratio(value: float) -> str:
    """1.00, 0.999, 1.80: three digits, kept when they are zeros."""
    return f"{value:#.3g}" if abs(value) < 100 else _fmt_number(value)


def _percent(value: float) -> str:
    return f"{value:.1f}%" if abs(value) < 1000 else f"{_fmt_number(value)}%"


def _fmt_unit(value: float, unit: str) -> str:
    return _fmt_number(value) + (f" {unit}" if unit else "")


def _points(points: float, top: float) -> str:
    return f"{pts(points)} / {top:g}"


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _anchor(lab: Lab) -> str:
    return f"lab-{lab.name}"


def _status(lab: Lab) -> str:
    return f'<span class="status {STATUS_CLASSES.get(lab.status, "bad")}">{_esc(lab.status.name)}</span>'


def _list(items: list[str], css_class: str = "") -> str:
    attribute = f' class="{css_class}"' if css_class else ""
    return f"<ul{attribute}>" + "".join(f"<li>{_esc(item)}</li>" for item in items) + "</ul>"


def _text_block(text: str) -> str:
    """A message: a paragraph when it is one line, else preformatted (compiler output)."""
    text = text.strip()
    if "\n" in text:
        return f"<pre>{_esc(clip(text, 6000))}</pre>"
    return f"<p>{_esc(text)}</p>"


def _command(command: str) -> str:
    return f'<pre class="command"><code>{_esc(command)}</code></pre>'
