"""The class page: `class.html` beside the gradebook, written by `python3 -m grader batch`
(and `batch --collect`) from the reports the gradebook has just read.

    DIR/class.html   how the class did: the scores of each lab (a histogram), a students x
                     lecture-steps grid, the speed ratio to the reference per lab (with the
                     full-points line), build errors and rule and sanitizer findings by kind,
                     who handed in nothing (per lab and in all), the fastest and slowest
                     submissions per lab, the grading GPU and the date

`write_page(rows, layout, labs, course)` takes the gradebook's rows (gradebook.row_for: each
holds the report it was made from, or None), so no report is read twice. The page needs
nothing else (inline CSS and SVG, no script, no network) and prints (each section on a page
of its own, no row cut in two, symbols beside colours). Every string of a report, and every
student name, is escaped: a student controls their files, and a report may hold their
program's output. A missing, unreadable, foreign or cut-short report makes that student
"no report", never a failure of the page.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from statistics import mean, median
from typing import Any

from grader import status
from grader.formats.html_page import STYLE as REPORT_STYLE
from grader.formats.html_page import _esc as esc
from grader.formats.text import first_line
from grader.instructor import dashboard_charts as charts
from grader.instructor.gradebook import MISSING, Layout
from grader.report import REPORT_SCHEMA, Lab, Report, Step

PAGE_NAME = "class.html"
FULL_CREDIT_RATIO = 1.2  # the kit's default full_credit_ratio (config.py), where no report names one: full performance points at or below
MAX_NAMES = 60  # students named in one cell of a table; the rest are counted
EXTREMES = 3  # fastest and slowest submissions named per lab
MAX_KIND_CHARS = 80
# A cell of the steps grid: (css class, symbol, meaning). The symbol reads without colour.
EARNED, PART, NOT_EARNED, ABSENT = (("y", "✓", "earned"), ("p", "½", "part of its points"),
                                    ("n", "✗", "not earned"), ("a", "·", "absent: no report, lab or step"))

STYLE = """
header { border-bottom: none; margin-bottom: 0; }
nav.toc { margin: 8px 0 0; font-size: 14px; }
nav.toc a { margin-right: 14px; }
section.part { border-top: 1px solid #d0d7de; padding-top: 16px; margin-top: 28px; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 14px 18px; }
.figures figure { margin: 0; }
.figures figcaption { font-size: 14px; }
.figures figcaption .name { font-weight: 600; }
.figures figcaption .sub { color: #59636e; }
table.list { width: 100%; font-size: 14px; }
table.list td.names { overflow-wrap: anywhere; width: 65%; }
table.list td.kind { min-width: 12em; }
table.list td.num, table.list th.num { width: 1%; }
table.grid { font-size: 12px; border-collapse: separate; border-spacing: 0; margin: 0; }
table.grid th, table.grid td { padding: 1px 2px; border-bottom: 1px solid #eaeef2; text-align: center; }
table.grid th.lab { border-left: 2px solid #8c959f; font-size: 12px; white-space: nowrap; }
table.grid th.step { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; font-weight: 500;
                     font-size: 11px; color: #1f2328; vertical-align: bottom; padding: 4px 1px; }
table.grid td.first, table.grid th.first { border-left: 2px solid #8c959f; }
table.grid .who { text-align: left; white-space: nowrap; position: sticky; left: 0; background: #fff;
                  max-width: 16em; overflow: hidden; text-overflow: ellipsis; padding-right: 8px; }
table.grid td { width: 20px; min-width: 20px; font-weight: 600; }
table.grid td.y { background: #dafbe1; color: #116329; }
table.grid td.p { background: #fff1c2; color: #7d4e00; }
table.grid td.n { background: #ffebe9; color: #a40e26; }
table.grid td.a { color: #8c959f; font-weight: normal; }
table.grid tr.count td { font-weight: normal; font-size: 11px; color: #59636e; }
.grid-wrap { max-height: none; overflow-x: auto; border: 1px solid #d0d7de; border-radius: 6px; }
.legend span.sym { display: inline-block; min-width: 1.4em; text-align: center; font-weight: 600; }
@page grid { size: landscape; }
@media print {
  body { max-width: none; padding: 0; font-size: 11px; }
  nav.toc { display: none; }
  section.part { break-before: page; border-top: none; margin-top: 0; }
  section.grid { page: grid; }
  .wide, .grid-wrap { overflow: visible; border: none; }
  table.grid { font-size: 9px; }
  table.grid td { width: 13px; min-width: 13px; padding: 0; }
  table.grid th.step { font-size: 8px; padding: 2px 0; }
  table.grid th.lab { font-size: 8px; white-space: normal; overflow-wrap: anywhere; }
  table.grid .who { position: static; max-width: 12em; }
  tr, figure, svg { break-inside: avoid; }
  thead { display: table-header-group; }
  a { color: inherit; text-decoration: none; }
}
"""


@dataclass
class Student:
    """One roster row as the page shows it."""

    name: str
    report: Report | None  # None: no usable report (why says what instead)
    why: str = ""
    missing: bool = False  # nothing handed in at all: no folder, or no path in the roster

    def lab(self, name: str) -> Lab | None:
        return self.report.lab(name) if self.report is not None else None


def students_from_rows(rows: list[dict[str, Any]]) -> list[Student]:
    """The page's students from the gradebook's rows, in roster order."""
    out = []
    for row in rows:
        text = str(row.get("status", ""))
        found = row.get("report")
        if isinstance(found, Report) and found.schema != REPORT_SCHEMA:
            text, found = f"no report: the file is of another schema ({found.schema or 'none'})", None
        elif not isinstance(found, Report):
            found = None
        out.append(Student(str(row.get("student", "?")), found, text, text.startswith(MISSING)))
    return out


def lab_order(students: list[Student], labs: list[str] | None, course: list[str] | None) -> list[str]:
    """The labs as the gradebook's columns: `labs` when given, else those graded in the order of
    `course`, then any other in alphabetical order."""
    graded = list(dict.fromkeys(lab.name for s in students if s.report for lab in s.report.labs if lab.name != "?"))
    columns = list(labs or [lab for lab in (course or graded) if lab in graded])
    return columns + sorted(lab for lab in graded if lab not in columns)


def write_page(rows: list[dict[str, Any]], layout: Layout, labs: list[str] | None = None,
               course: list[str] | None = None, now: datetime | None = None) -> Path:
    """Writes DIR/class.html (atomically) from the gradebook's rows; returns its path."""
    students = students_from_rows(rows)
    text = render(students, lab_order(students, labs, course), layout.gradebook.name, now=now)
    path = layout.out / PAGE_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(PAGE_NAME + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def render(students: list[Student], labs: list[str], gradebook: str, now: datetime | None = None) -> str:
    """The whole page."""
    title = f"Class of {len(students)}: how the labs went"
    parts = [_header(students, gradebook, title, now or datetime.now(timezone.utc)),
             _scores(students, labs), _grid(students, labs), _speed(students, labs), _problems(students, labs),
             _absent(students, labs)]
    page = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{esc(title)}</title>\n<style>{REPORT_STYLE}{charts.STYLE}{STYLE}</style>\n</head>\n<body>\n"
            + "\n".join(parts) + "\n</body>\n</html>\n")
    return page.encode("utf-8", "replace").decode("utf-8")  # lone surrogates of a report become "?"


# --- header ---------------------------------------------------------------------------------

def _header(students: list[Student], gradebook: str, title: str, now: datetime) -> str:
    graded = [s for s in students if s.report is not None]
    gpus = Counter(s.report.gpu_label or "a GPU the report does not name" for s in graded)
    where = "; ".join(f"{gpu} ({count} student{'s' * (count != 1)})" for gpu, count in gpus.most_common())
    finished = sorted(s.report.finished for s in graded if s.report.finished)
    when = (f"graded {_day(finished[0])}" + (f" to {_day(finished[-1])}" if _day(finished[-1]) != _day(finished[0])
                                               else "") if finished else "no report says when it was graded")
    every, _, no_report = absent(students, [])
    facts = [f"{len(graded)} graded", f"{len(no_report)} without a report",
             f"{len(every)} handed in nothing"]
    return "\n".join([
        f"<header>\n<h1>{esc(title)}</h1>",
        f'<p class="facts">{esc(" · ".join(facts))}</p>',
        f'<p class="facts">{esc(f"graded on {where}" if where else "no report names the GPU that graded it")}'
        f' · {esc(when)} · gradebook <code>{esc(gradebook)}</code> (beside this page) · page written '
        f'{esc(now.strftime("%Y-%m-%d %H:%M %Z").strip())}</p>',
        '<nav class="toc"><a href="#scores">Scores</a><a href="#steps">Lecture steps</a>'
        '<a href="#speed">Speed</a><a href="#problems">Build errors and findings</a>'
        '<a href="#absent">Nothing handed in</a></nav>',
        "</header>"])


def _day(stamp: str) -> str:
    """The date and minute of an ISO time stamp ('2026-11-27 01:02 UTC'), or the text as it is."""
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return stamp[:40]
    return when.strftime("%Y-%m-%d %H:%M") + (" UTC" if when.utcoffset() is not None and
                                               not when.utcoffset().total_seconds() else "")


# --- scores ---------------------------------------------------------------------------------

def _scores(students: list[Student], labs: list[str]) -> str:
    totals = [(s.report.total, s.report.max) for s in students if s.report is not None and s.report.max > 0]
    figures = [_score_figure("all labs (the total)", totals)]
    for lab in labs:
        found = [(one.total, one.max) for s in students if (one := s.lab(lab)) is not None and one.max > 0]
        figures.append(_score_figure(lab, found))
    return ('<section class="part" id="scores">\n<h2>Scores per lab</h2>\n'
            '<p class="note">Students per tenth of the lab\'s points, among those whose report graded the lab; '
            "the dashed line is the median.</p>\n"
            f'<div class="figures">\n{"".join(figures)}</div>\n</section>')


def _score_figure(name: str, found: list[tuple[float, float]]) -> str:
    top = Counter(high for _, high in found).most_common(1)[0][0] if found else 0.0
    points = [got for got, _ in found]
    facts = (f"n = {len(points)}, median {charts.fmt(median(points))}, mean {charts.fmt(mean(points))} "
             f"out of {charts.fmt(top)}" if points else "no student graded")
    chart = charts.histogram([got / high for got, high in found], top, f"scores of {name}") if found else ""
    return (f'<figure><figcaption><span class="name">{esc(name)}</span> <span class="sub">{esc(facts)}</span>'
            f"</figcaption>{chart}</figure>\n")


# --- the lecture steps ------------------------------------------------------------------------

def step_columns(students: list[Student], labs: list[str]) -> list[tuple[str, list[str]]]:
    """(lab, its step names in the order the reports list them) for each lab with steps."""
    columns = []
    for lab in labs:
        names = list(dict.fromkeys(step.name for s in students if (one := s.lab(lab)) for step in one.steps))
        if names:
            columns.append((lab, names))
    return columns


def cell(step: Step | None) -> tuple[str, str, str]:
    """What the grid shows for a student's step (ABSENT when there is none)."""
    if step is None:
        return ABSENT
    if step.max > 0 and step.points >= step.max or step.max <= 0 and step.status == "passed":
        return EARNED
    return PART if step.points > 0 else NOT_EARNED


def _grid(students: list[Student], labs: list[str]) -> str:
    columns = step_columns(students, labs)
    if not columns:
        return ('<section class="part grid" id="steps">\n<h2>Lecture steps</h2>\n'
                '<p class="note">No report lists a lab\'s required variants (lecture steps).</p>\n</section>')
    head = ['<tr><th class="who" rowspan="2">student</th>'] + [
        f'<th class="lab" colspan="{len(names)}">{esc(lab)}</th>' for lab, names in columns] + ["</tr>\n<tr>"]
    for _, names in columns:
        head += [f'<th class="step{" first" if k == 0 else ""}" title="{esc(name)}">{esc(charts._clip(name, 22))}</th>'
                 for k, name in enumerate(names)]
    earned = Counter()
    body = []
    for s in students:
        cells = []
        for lab, names in columns:
            one = s.lab(lab)
            steps = {step.name: step for step in (one.steps if one else [])}
            for k, name in enumerate(names):
                css, symbol, meaning = cell(steps.get(name))
                earned[(lab, name)] += css == "y"
                title = f"{lab} {name}: " + (steps[name].status if name in steps else meaning)
                cells.append(f'<td class="{css}{" first" if k == 0 else ""}" title="{esc(title)}">{symbol}</td>')
        body.append(f'<tr><th class="who" title="{esc(s.name)}">{esc(s.name)}</th>{"".join(cells)}</tr>')
    counts = "".join(f'<td class="{"first" if k == 0 else ""}">{earned[(lab, name)]}</td>'
                     for lab, names in columns for k, name in enumerate(names))
    legend = " ".join(f'<span class="sym">{sym}</span> {esc(text)}' for _, sym, text in (EARNED, PART, NOT_EARNED, ABSENT))
    return ('<section class="part grid" id="steps">\n<h2>Lecture steps</h2>\n'
            "<p class=\"note\">A row per student, a column per required variant of each lab (the lecture's steps, "
            "as the reports list them); the last row counts the students who earned each step. Hover a cell for "
            f"the grader's word on it.</p>\n<p class=\"legend\">{legend}</p>\n"
            f'<div class="grid-wrap"><table class="grid">\n<thead>{"".join(head)}</tr></thead>\n<tbody>\n'
            + "\n".join(body) + f'\n<tr class="count"><th class="who">earned by</th>{counts}</tr>\n'
            "</tbody>\n</table></div>\n</section>")


# --- speed ------------------------------------------------------------------------------------

def ratios(students: list[Student], lab: str) -> list[tuple[float, str]]:
    """(t_student / t_reference, student) of each student the bench timed in `lab`, fastest first."""
    found = [(one.ratio, s.name) for s in students
             if (one := s.lab(lab)) is not None and isinstance(one.ratio, (int, float)) and 0 < one.ratio < 1e6]
    return sorted(found, key=lambda item: item[0])  # equal ratios in roster order


def extremes(timed: list[tuple[float, str]], count: int = EXTREMES) -> tuple[list[tuple[float, str]], list[tuple[float, str]]]:
    """(fastest, slowest) of `timed` (sorted fastest first), at most `count` each and never the
    same submission in both: the slowest first."""
    fastest = timed[:min(count, (len(timed) + 1) // 2)]
    slowest = timed[len(fastest):][::-1][:count]
    return fastest, slowest


def full_credit_ratio(students: list[Student], lab: str) -> float:
    """The lab's full_credit_ratio in the configuration the reports were graded with (the
    lab's own value, else the course's default), the most common among the students;
    the kit's default when no report says."""
    seen: dict[float, int] = {}
    for student in students:
        config = student.report.config if student.report is not None else {}
        own = config.get("labs", {}).get(lab, {}) if isinstance(config.get("labs"), dict) else {}
        defaults = config.get("defaults") if isinstance(config.get("defaults"), dict) else {}
        for value in (own.get("full_credit_ratio") if isinstance(own, dict) else None,
                      defaults.get("full_credit_ratio")):
            if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1e3:
                seen[float(value)] = seen.get(float(value), 0) + 1
                break
    return max(seen, key=lambda value: seen[value]) if seen else FULL_CREDIT_RATIO


def _speed(students: list[Student], labs: list[str]) -> str:
    rows = [(lab, ratios(students, lab)) for lab in labs]
    rows = [(lab, timed) for lab, timed in rows if timed or any(s.lab(lab) for s in students)]
    if not any(timed for _, timed in rows):
        return ('<section class="part" id="speed">\n<h2>Speed</h2>\n'
                '<p class="note">No report holds a timed submission (no bench ran, or none passed its tests).</p>\n'
                "</section>")
    lines_at = {lab: full_credit_ratio(students, lab) for lab, _ in rows}
    full = max(set(lines_at.values()), key=list(lines_at.values()).count)
    others = ", ".join(f"{esc(lab)} {ratio:g}×" for lab, ratio in lines_at.items() if ratio != full)
    chart = charts.speed_chart([(lab, [r for r, _ in timed]) for lab, timed in rows], full)
    lines = []
    for lab, timed in rows:
        fastest, slowest = extremes(timed)
        lines.append(f"<tr><td>{esc(lab)}</td><td class=\"num\">{len(timed)}</td><td>{_named(fastest)}</td>"
                     f"<td>{_named(slowest)}</td></tr>")
    return ('<section class="part" id="speed">\n<h2>Speed: time to the reference\'s</h2>\n'
            f"<p>Each dot is a student: the ratio of their time to the reference's on the graded workloads "
            f"(below 1 is faster than the reference, above 1 slower). At or below {full:g}× (the course's "
            "<code>full_credit_ratio</code>" + (f"; other labs: {others}" if others else "") + ") the lab earns its "
            "full performance points; beyond it, fewer. "
            "The box spans the middle half of the class, the thick line is the median.</p>\n"
            f'<div class="wide">{chart}</div>\n'
            '<h3>Fastest and slowest submissions</h3>\n<div class="wide"><table class="list">\n<thead><tr><th>lab</th>'
            '<th class="num">timed</th><th>fastest (ratio)</th><th>slowest (ratio)</th></tr></thead>\n<tbody>\n'
            + "\n".join(lines) + "\n</tbody>\n</table></div>\n</section>")


def _named(found: list[tuple[float, str]]) -> str:
    return ", ".join(f"{esc(name)} ({charts.fmt(ratio)}×)" for ratio, name in found) or "–"


# --- build errors and findings ----------------------------------------------------------------

def problem_kinds(students: list[Student], labs: list[str]) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """{group: {kind: [(student, lab), ...]}} for the lab outcomes other than PASS, the build
    errors (by the first words of their message), the rule findings (by rule) and the
    compute-sanitizer findings (by tool and kind); each list in roster order."""
    groups: dict[str, dict[str, list[tuple[str, str]]]] = {"outcome": {}, "build error": {}, "rule": {}, "sanitizer": {}}
    for s in students:
        for lab in labs:
            one = s.lab(lab)
            if one is None:
                continue
            who = (s.name, lab)
            if one.status is not status.PASS:
                groups["outcome"].setdefault(f"{one.status.name}: {one.status.label}", []).append(who)
            if one.status is status.BUILD_ERROR:
                groups["build error"].setdefault(error_kind(one.message), []).append(who)
            kinds = one.rule_kinds if len(one.rule_kinds) == len(one.rules) else ["rule"] * len(one.rules)
            for kind in dict.fromkeys(kinds):
                groups["rule"].setdefault(kind, []).append(who)
            for kind in dict.fromkeys(sanitizer_kind(f.message) for f in one.sanitizer):
                groups["sanitizer"].setdefault(kind, []).append(who)
    return groups


def error_kind(message: str) -> str:
    """A build error's kind: its first line up to the first colon ('compilation failed',
    'static checks'), at most MAX_KIND_CHARS characters."""
    line = first_line(message) or "no message"
    kind = line.split(":", 1)[0].strip() or line
    return kind if len(kind) <= MAX_KIND_CHARS else kind[:MAX_KIND_CHARS - 1] + "…"


def sanitizer_kind(message: str) -> str:
    """'memcheck: behaves differently' of 'memcheck: behaves differently: call 25 ...'."""
    parts = [part.strip() for part in first_line(message).split(":")]
    kind = ": ".join(part for part in parts[:2] if part) or "compute-sanitizer error"
    return kind if len(kind) <= MAX_KIND_CHARS else kind[:MAX_KIND_CHARS - 1] + "…"


GROUP_TITLES = {"outcome": "Labs that did not pass, by outcome", "build error": "Build errors, by kind",
                "rule": "Rule findings, by rule", "sanitizer": "compute-sanitizer findings, by tool and kind"}


def _problems(students: list[Student], labs: list[str]) -> str:
    parts = ['<section class="part" id="problems">\n<h2>Build errors and findings</h2>']
    for group, kinds in problem_kinds(students, labs).items():
        parts.append(f"<h3>{esc(GROUP_TITLES[group])}</h3>")
        if not kinds:
            parts.append('<p class="note">None.</p>')
            continue
        rows = []
        for kind, found in sorted(kinds.items(), key=lambda item: (-len(item[1]), item[0])):
            who = by_student(found)
            rows.append(f'<tr><td class="kind">{esc(kind)}</td><td class="num">{len(found)}</td>'
                        f'<td class="num">{len(who)}</td><td class="names">{_names(who)}</td></tr>')
        parts.append('<div class="wide"><table class="list">\n<thead><tr><th>kind</th><th class="num">labs</th>'
                     '<th class="num">students</th><th>who (labs)</th></tr></thead>\n<tbody>\n' + "\n".join(rows)
                     + "\n</tbody>\n</table></div>")
    return "\n".join(parts) + "\n</section>"


def by_student(found: list[tuple[str, str]]) -> list[str]:
    """["alice (scan, sort)", ...] of [(student, lab), ...]: each student once, in the order found."""
    labs: dict[str, list[str]] = {}
    for name, lab in found:
        labs.setdefault(name, []).append(lab)
    return [f"{name} ({', '.join(names)})" for name, names in labs.items()]


def _names(names: list[str]) -> str:
    shown = ", ".join(esc(name) for name in names[:MAX_NAMES])
    return shown + (f" … and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else "")


# --- nothing handed in ------------------------------------------------------------------------

def absent(students: list[Student], labs: list[str]) -> tuple[list[str], dict[str, list[str]], list[Student]]:
    """(students who handed in nothing at all, {lab: students whose lab's files are missing},
    students without a usable report (their submission is there))."""
    per_lab = {lab: [s.name for s in students if (one := s.lab(lab)) is not None and one.status is status.MISSING]
               for lab in labs}
    every = [s.name for s in students if s.missing or s.report is not None and s.report.labs
             and all(one.status is status.MISSING for one in s.report.labs)]
    no_report = [s for s in students if s.report is None and not s.missing]
    return every, per_lab, no_report


def _absent(students: list[Student], labs: list[str]) -> str:
    every, per_lab, no_report = absent(students, labs)
    parts = ['<section class="part" id="absent">\n<h2>Nothing handed in</h2>',
             f"<h3>In all: {len(every)} student{'s' * (len(every) != 1)}</h3>",
             f"<p>{_names(every)}</p>" if every else '<p class="note">None: every student handed in something.</p>',
             "<h3>Per lab: the lab's files are not in the submission</h3>"]
    rows = [f'<tr><td>{esc(lab)}</td><td class="num">{len(names)}</td><td class="names">{_names(names) or "–"}</td></tr>'
            for lab, names in per_lab.items()]
    parts.append('<div class="wide"><table class="list">\n<thead><tr><th>lab</th><th class="num">students</th>'
                 "<th>who</th></tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table></div>")
    parts.append(f"<h3>No report: {len(no_report)} student{'s' * (len(no_report) != 1)}</h3>")
    if no_report:
        items = "".join(f"<li><strong>{esc(s.name)}</strong>: {esc(charts._clip(s.why or 'no report', 300))}</li>"
                        for s in no_report)
        parts.append(f"<p>Their submission is there but the grader left no report it could read: the gradebook's "
                     f"status says why.</p>\n<ul>{items}</ul>")
    else:
        parts.append('<p class="note">None.</p>')
    return "\n".join(parts) + "\n</section>"
