"""Tests of the HTML report (grader/formats/html_page.py), `report --html` and the grader's report.html.

The page is parsed with html.parser into a small tree whose builder also checks that
every element it opens is closed, in order; the checks are on that tree: a section per
lab, a chart per workload with a bar per figure, the commands, the totals, and that no
text of a report (which may come from a student's program) becomes markup.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
import re
import tempfile
import unittest
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from grader import formats
from grader.tests.helpers import FIXTURES
from grader.tests.test_cli import CliTestCase

REPORTS = FIXTURES / "reports"
SCENARIOS = ("pass", "partial", "build-error", "timeout", "missing", "legacy-partial")
HOSTILE = '</pre><script>alert(1)</script>"onload=alert(2) x=\'<b>'
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


def load(name: str) -> dict:
    return json.loads((REPORTS / f"{name}.json").read_text())


# --- a tiny DOM -----------------------------------------------------------------------------

@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node | str] = field(default_factory=list)  # elements and decoded text, in order

    def all(self, tag: str | None = None, css_class: str | None = None) -> list[Node]:
        """Every element below (not this one) with `tag` and the class `css_class`."""
        found = []
        for child in self.elements:
            if (tag is None or child.tag == tag) and (css_class is None or css_class in child.classes):
                found.append(child)
            found.extend(child.all(tag, css_class))
        return found

    @property
    def elements(self) -> list[Node]:
        return [child for child in self.children if isinstance(child, Node)]

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def content(self) -> str:
        """All text below, decoded."""
        return "".join(child if isinstance(child, str) else child.content() for child in self.children)


class Tree(HTMLParser):
    """Builds the tree of a page and lists every nesting problem of the tags it holds."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.stack = [self.root]
        self.problems: list[str] = []
        self.feed(page)
        self.close()
        self.problems += [f"<{node.tag}> never closed" for node in self.stack[1:]]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.stack[-1].children.append(Node(tag, {name: value or "" for name, value in attrs}))

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            self.problems.append(f"</{tag}>: a void element has no end tag")
        elif len(self.stack) > 1 and self.stack[-1].tag == tag:
            self.stack.pop()
        else:
            self.problems.append(f"</{tag}> closes <{self.stack[-1].tag}>")

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(page: str) -> Node:
    tree = Tree(page)
    if tree.problems:
        raise AssertionError("badly nested page: " + "; ".join(tree.problems[:5]))
    return tree.root


class PageTestCase(unittest.TestCase):
    def page(self, data) -> Node:
        """The page of `data`, checked: well nested, one <html> with <head> and <body>, no script."""
        text = formats.html(data)
        self.assertTrue(text.startswith("<!DOCTYPE html>"))
        root = parse(text)
        self.assertEqual([node.tag for node in root.elements], ["html"])
        self.assertEqual([node.tag for node in root.elements[0].elements], ["head", "body"])
        self.assertEqual(root.all("script"), [])
        # Self-contained: nothing is fetched (no link, img, src=, href= other than anchors).
        for node in root.all():
            self.assertNotIn(node.tag, ("link", "img", "iframe", "object", "embed"))
            self.assertNotIn("src", node.attrs)
            self.assertTrue(node.attrs.get("href", "#").startswith("#"), node.attrs)
            self.assertFalse([name for name in node.attrs if name.startswith("on")], node.attrs)
        return root

    @staticmethod
    def sections(root: Node) -> list[Node]:
        return root.all("section", "lab")

    @staticmethod
    def charts(section: Node) -> list[Node]:
        return section.all("svg")

    @staticmethod
    def bars(chart: Node) -> list[Node]:
        return [rect for rect in chart.all("rect") if "bar" in rect.classes]


# --- structure ------------------------------------------------------------------------------

class StructureTest(PageTestCase):
    # Every fixture: a section per lab, in order, with the id the score table links to.
    def test_a_section_per_lab(self):
        for name in SCENARIOS:
            with self.subTest(name):
                data = load(name)
                root = self.page(data)
                ids = [section.attrs["id"] for section in self.sections(root)]
                self.assertEqual(ids, [f"lab-{lab['lab']}" for lab in data["labs"]])
                links = [a.attrs["href"] for a in root.all("table", "scores")[0].all("a")]
                self.assertEqual(links, [f"#{id_}" for id_ in ids])

    # The header and the score table give the totals; each lab its own.
    def test_totals(self):
        data = load("partial")
        root = self.page(data)
        self.assertIn("135.00 / 200 points", root.all("h1")[0].content())
        self.assertIn("67.5%", root.all("h1")[0].content())
        facts = root.all("p", "facts")[0].content()
        self.assertIn("seed 77", facts)
        self.assertIn("grader ", facts)
        self.assertIn(data["finished"], facts)
        table = root.all("table", "scores")[0]
        self.assertIn("135.00 / 200", table.all("tr", "total")[0].content())
        rows = [row for row in table.all("tr") if row.all("a")]
        self.assertEqual([row.all("td")[1].content() for row in rows], ["PASS", "PARTIAL"])
        self.assertEqual([row.all("td")[5].content() for row in rows], ["100.00 / 100", "35.00 / 100"])
        for section, lab in zip(self.sections(root), data["labs"]):
            breakdown = section.all("table", "breakdown")[0].content()
            self.assertIn(f"{lab['correctness']['points']:.2f} / {lab['correctness']['max']:g}", breakdown)
            self.assertIn(f"{lab['total']:.2f} / {lab['max']:g}", breakdown)

    # The run's notes are in the header; a lab's notes in its section.
    def test_notes(self):
        data = load("pass")
        data["notes"] = ["note: changes to grader/score.py were ignored"]
        data["labs"][0]["notes"] = ["compute-sanitizer not found: the sanitizer stage was skipped"]
        root = self.page(data)
        self.assertIn("changes to grader/score.py were ignored", root.all("header")[0].content())
        self.assertIn("compute-sanitizer not found", self.sections(root)[0].content())

    # Deductions: the table and the breakdown say how much and why.
    def test_deductions(self):
        data = load("pass")
        lab = data["labs"][0]
        lab["sanitizer"] = {"ran": True, "deduction": 25.0, "findings": [
            {"message": "memcheck: Invalid __global__ write of size 4 bytes", "file": "labs/vectorAdd/vectorAdd.cu",
             "line": 27}]}
        lab["reproduce"]["sanitizer"] = "compute-sanitizer --tool memcheck build/bin/vectorAdd_judge_test"
        lab["rules"] = [{"message": "uses cub::DeviceReduce"}]
        lab["rule_deduction"], lab["deduction"], lab["total"] = 10.0, 35.0, 65.0
        root = self.page(data)
        row = [row for row in root.all("table", "scores")[0].all("tr") if row.all("a")][0]
        self.assertEqual(row.all("td")[4].content(), "rules\u00a0−10, sanitizer\u00a0−25")
        breakdown = self.sections(root)[0].all("table", "breakdown")[0].content()
        self.assertIn("rules broken, -10 points", breakdown)
        self.assertIn("uses cub::DeviceReduce", breakdown)
        self.assertIn("Invalid __global__ write of size 4 bytes (labs/vectorAdd/vectorAdd.cu:27)", breakdown)
        self.assertIn("compute-sanitizer --tool memcheck", breakdown)


    # Graded questions: a column in the score table, a row in the breakdown with each
    # question and the student's answer as text, and the points left to grade by hand.
    def test_graded_questions(self):
        data = load("pass")
        lab = data["labs"][0]
        lab["answers"] = {"points": 1.0, "max": 2.0, "pending": 3.0, "file": "labs/vectorAdd/answers.md", "questions": [
            {"id": "idle", "title": "Idle threads", "kind": "number", "check": "key", "status": "correct",
             "points": 1.0, "max": 1.0, "answer": "255", "why": ""},
            {"id": "gbps", "title": "Your GB/s", "kind": "number", "check": "bench", "status": "wrong",
             "points": 0.0, "max": 1.0, "answer": "9000", "why": "your bench measured 2675"},
            {"id": "why", "title": "Why", "kind": "text", "check": "manual", "status": "manual",
             "points": 0.0, "max": 3.0, "answer": HOSTILE + "\nwrapped by\nthe editor\n\nsecond paragraph", "why": ""}]}
        root = self.page(data)
        table = root.all("table", "scores")[0]
        self.assertIn("answers", [th.content() for th in table.all("th")])
        row = [row for row in table.all("tr") if row.all("a")][0]
        self.assertEqual(row.all("td")[4].content(), "1.00 / 2")
        self.assertIn("3 more points of written answers", root.all("section")[0].content())
        breakdown = self.sections(root)[0].all("table", "breakdown")[0]
        self.assertEqual(len(breakdown.all("ul", "questions")[0].all("li")), 3)
        self.assertIn("your bench measured 2675", breakdown.content())
        # A written answer reads as its paragraphs: the editor's line breaks flow together.
        answer = breakdown.all("div", "answer")[-1]  # the written one; numbers come first
        self.assertEqual([p.content() for p in answer.all("p")], [HOSTILE + " wrapped by the editor", "second paragraph"])
        # Each kind of pending point is said in the lab's breakdown: written answers, figures
        # from another GPU, answers checked against the key at the deadline.
        lab["answers"]["pending"] = 6.0
        lab["answers"]["questions"] += [
            {"id": "gbps2", "title": "On a laptop", "kind": "number", "check": "bench", "status": "other_gpu",
             "points": 0.0, "max": 1.0, "answer": "900 GB/s measured on Some GPU", "why": "not in the table"},
            {"id": "launches", "title": "Launches", "kind": "number", "check": "key", "status": "at_deadline",
             "points": 0.0, "max": 2.0, "answer": "4", "why": "checked at the deadline"}]
        breakdown = self.sections(self.page(data))[0].all("table", "breakdown")[0]
        for text in ("3 points of written answers to be graded by hand",
                     "1 points of figures measured on another GPU left to your instructor",
                     "2 points checked against the instructor's key at the deadline"):
            self.assertIn(text, breakdown.content())
        # Without questions, no answers column.
        plain = self.page(load("pass")).all("table", "scores")[0]
        self.assertNotIn("answers", [th.content() for th in plain.all("th")])


# --- failures -------------------------------------------------------------------------------

class FailuresTest(PageTestCase):
    def commands(self, section: Node) -> list[str]:
        return [pre.content() for pre in section.all("pre", "command")]

    # Each failed test: its name, message and the command that reproduces it.
    def test_failed_tests(self):
        data = load("partial")
        section = self.sections(self.page(data))[1]
        failed = [t for t in data["labs"][1]["correctness"]["tests"] if t["status"] == "failed"]
        self.assertEqual([h4.content() for h4 in section.all("h4")], [t["name"] for t in failed])
        for test in failed:
            self.assertIn(test["reproduce"], self.commands(section))
            self.assertIn(test["message"], [pre.content() for pre in section.all("pre")])
        self.assertTrue(all(pre.all("code") for pre in section.all("pre", "command")))

    # A test without its own command gets the lab's.
    def test_lab_command_when_a_test_has_none(self):
        data = load("partial")
        for test in data["labs"][1]["correctness"]["tests"]:
            test["reproduce"] = ""
        section = self.sections(self.page(data))[1]
        self.assertEqual(self.commands(section)[:2], [data["labs"][1]["reproduce"]["failure"]] * 2)

    # A lab that stopped before its tests: the message, the output where it helps, the command.
    def test_stopped_labs(self):
        for name, lab_index in (("build-error", 1), ("timeout", 0), ("missing", 1)):
            with self.subTest(name):
                lab = load(name)["labs"][lab_index]
                section = self.sections(self.page(load(name)))[lab_index]
                self.assertIn(lab["message"].splitlines()[-1], section.content())
                failure = lab["reproduce"].get("failure")
                if failure:
                    self.assertIn(failure, self.commands(section))
        timeout = self.sections(self.page(load("timeout")))[0]
        self.assertIn("[ RUN      ] ReductionGpu.Deadlock", timeout.content())


# --- charts ---------------------------------------------------------------------------------

# What the student's row of pass.json's charts says: the figures, as the page writes numbers.
STUDENT_LABELS = {("vectorAdd", "vector_add n=67108864"): ("2675 GB/s", "79.8% of peak", "0.301 ms"),
                  ("vectorAdd", "vector_add with copies n=67108864"): ("19.6 GB/s", "0.6% of peak", "41 ms"),
                  ("reduction", "vector_add n=67108864"): ("1501 GB/s", "44.8% of peak", "0.536 ms"),
                  ("reduction", "vector_add with copies n=67108864"): ("19.6 GB/s", "0.6% of peak", "41 ms")}


def figure(result: dict, by_throughput: bool) -> float | None:
    value = result.get("throughput" if by_throughput else "median_ms")
    return value if isinstance(value, (int, float)) and value > 0 else None


class ChartTest(PageTestCase):
    # One chart per workload, graded first; a bar per result with a figure, the student's
    # highlighted; the q1–q3 whisker; the peak line; a title saying what the chart shows.
    def test_charts_of_the_bench(self):
        data = load("pass")
        root = self.page(data)
        for lab, section in zip(data["labs"], self.sections(root)):
            workloads = sorted(lab["bench"]["workloads"], key=lambda w: not w["graded"])
            charts = self.charts(section)
            self.assertEqual(len(charts), len(workloads), lab["lab"])
            captions = [figcaption.content() for figcaption in section.all("figcaption")]
            for workload, chart, caption in zip(workloads, charts, captions):
                self.assertTrue(caption.startswith(workload["name"]), caption)
                self.assertEqual(caption.startswith(workload["name"] + " graded"), workload["graded"])
                bars = self.bars(chart)
                self.assertEqual(len(bars), len([r for r in workload["results"] if figure(r, True)]))
                self.assertEqual(sum("student" in bar.classes for bar in bars), 1)
                # A whisker where the quartiles hold the median (pass.json's reduction copies
                # vectorAdd's quartiles but not its median).
                self.assertEqual(len(chart.all("path", "whisker")),
                                 len([r for r in workload["results"] if r["q1_ms"] <= r["median_ms"] <= r["q3_ms"]]))
                self.assertEqual(len(chart.all("line", "peak")), 1)
                title = chart.all("title")[0].content()
                self.assertEqual(chart.attrs["aria-label"], title)
                self.assertIn(workload["name"], title)
                self.assertIn(f"throughput", title)
                self.assertIn(f"peak {workload['peak']:.0f} GB/s", chart.content())
                for label in STUDENT_LABELS[lab["lab"], workload["name"]]:
                    self.assertIn(label, chart.all("g", "student")[0].content())

    # Bars are proportional to the figures, and the peak line sits at the peak's place.
    def test_geometry(self):
        data = load("pass")
        workload = data["labs"][0]["bench"]["workloads"][0]
        chart = self.charts(self.sections(self.page(data))[0])[0]
        widths = {bar.classes[1]: float(bar.attrs["width"]) for bar in self.bars(chart)}
        results = {r["role"]: r["throughput"] for r in workload["results"]}
        for role in ("reference", "variant"):
            self.assertAlmostEqual(widths[role] / widths["student"], results[role] / results["student"], places=2)
        x0 = float(self.bars(chart)[0].attrs["x"])
        peak = chart.all("line", "peak")[0]
        self.assertAlmostEqual((float(peak.attrs["x1"]) - x0) / widths["student"],
                               workload["peak"] / results["student"], places=2)
        self.assertEqual(peak.attrs["x1"], peak.attrs["x2"])

    # Without throughputs the bars are the median times, and a peak (a throughput) is not drawn.
    def test_time_chart(self):
        data = load("pass")
        workload = data["labs"][0]["bench"]["workloads"][0]
        for result in workload["results"]:
            result["throughput"] = result["pct_peak"] = None
        workload["results"][2]["median_ms"] = None  # no figure: no bar, a note
        chart = self.charts(self.sections(self.page(data))[0])[0]
        self.assertEqual(len(self.bars(chart)), 2)
        self.assertEqual(chart.all("line", "peak"), [])
        self.assertIn("0.301 ms", chart.content())
        self.assertIn("no figure", chart.content())
        self.assertIn("median time", chart.attrs["aria-label"])

    # No q1/q3: no whisker; no peak: no line.
    def test_without_quartiles_or_peak(self):
        data = load("pass")
        workload = data["labs"][0]["bench"]["workloads"][0]
        workload["peak"] = None
        for result in workload["results"]:
            del result["q1_ms"]
        chart = self.charts(self.sections(self.page(data))[0])[0]
        self.assertEqual(len(self.bars(chart)), 3)
        self.assertEqual(chart.all("path", "whisker"), [])
        self.assertEqual(chart.all("line", "peak"), [])

    # The library and the roofline are drawn too, after the student and the reference.
    def test_every_role(self):
        data = load("pass")
        results = data["labs"][0]["bench"]["workloads"][0]["results"]
        template = results[1]
        results.insert(0, {**template, "name": "cudaMemcpy D2D", "role": "roofline", "throughput": 2900.0})
        results.append({**template, "name": "cub::DeviceTransform", "role": "library", "throughput": 2800.0})
        chart = self.charts(self.sections(self.page(data))[0])[0]
        self.assertEqual([bar.classes[1] for bar in self.bars(chart)],
                         ["student", "reference", "library", "roofline", "variant"])
        self.assertIn("cub::DeviceTransform", chart.content())

    # A lab without a bench says why instead of a chart.
    def test_no_bench(self):
        data = load("partial")
        section = self.sections(self.page(data))[1]
        self.assertEqual(self.charts(section), [])
        self.assertIn("No timing: performance is graded once every test passes.", section.content())


# --- untrusted text -------------------------------------------------------------------------

class InjectionTest(PageTestCase):
    # Every string of a report is text: none opens an element, closes one or adds an attribute.
    def test_hostile_strings(self):
        data = load("partial")
        data["notes"] = [HOSTILE]
        data["seed"] = HOSTILE
        data["grader_version"] = HOSTILE
        for lab in data["labs"]:
            lab["lab"] = lab["lab"] + HOSTILE
            lab["message"] = HOSTILE + "\n" + HOSTILE
            lab["notes"] = [HOSTILE]
            lab["rules"] = [{"message": HOSTILE}]
            lab["reproduce"] = {key: HOSTILE for key in ("test", "failure", "bench", "sanitizer")}
            lab["output"] = HOSTILE
            lab["traceback"] = HOSTILE
            for test in lab["correctness"]["tests"]:
                test["name"], test["message"], test["reproduce"] = HOSTILE, HOSTILE, HOSTILE
        bench = data["labs"][0]["bench"]
        bench["device"]["name"] = HOSTILE
        bench["errors"] = [HOSTILE]
        for workload in bench["workloads"]:
            workload["name"] = workload["unit"] = HOSTILE
            for result in workload["results"]:
                result["name"] = result["role"] = HOSTILE
        data["labs"][1]["status"] = HOSTILE
        text = formats.html(data)
        root = self.page(data)
        self.assertNotIn("<script>", text)
        self.assertNotIn("<b>", text)
        self.assertIn("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;onload=", text)
        # The reader still sees the text as it was.
        self.assertIn(HOSTILE, root.all("header")[0].content())
        section = self.sections(root)[1]
        self.assertIn(HOSTILE, [h4.content() for h4 in section.all("h4")])
        self.assertIn(HOSTILE, [pre.content() for pre in section.all("pre", "command")])
        chart = self.charts(self.sections(root)[0])[0]
        self.assertIn(HOSTILE, chart.attrs["aria-label"])
        self.assertEqual(self.sections(root)[0].attrs["id"], "lab-vectorAdd" + HOSTILE)
        # An unknown role is drawn, but never becomes a class of its own.
        self.assertTrue(all(bar.classes == ["bar", "other"] for bar in self.bars(chart)))

    # Control characters (colour codes of a compiler) do not reach the page.
    def test_control_characters(self):
        data = load("build-error")
        data["labs"][1]["message"] = "\x1b[01;31merror\x1b[0m: \x00bad\x07"
        text = formats.html(data)
        self.assertNotRegex(text, "[\x00-\x08\x0b\x0c\x0e-\x1f]")
        self.assertIn("[01;31merror[0m: bad", text)

    # Lone surrogates of a JSON report still give a page that can be written as UTF-8.
    def test_lone_surrogates(self):
        data = json.loads('{"schema": "labkit-report", "version": 1, "labs": [{"lab": "x\\ud800", "status": "PASS"}]}')
        formats.html(data).encode("utf-8")


# --- junk -----------------------------------------------------------------------------------

JUNK = [None, 0, -1, 1e308, float("nan"), float("inf"), -float("inf"), True, "", "x", [], {}, [None, 1, "x"],
        {"x": None}, HOSTILE]


def mutate(value, rng: random.Random, rate: float):
    """`value` with some of its members replaced by junk, at any depth."""
    if isinstance(value, dict):
        return {key: (rng.choice(JUNK) if rng.random() < rate
                      else mutate(item, rng, rate))
                for key, item in value.items()}
    if isinstance(value, list):
        return [rng.choice(JUNK) if rng.random() < rate else mutate(item, rng, rate) for item in value]
    return value


class RobustnessTest(PageTestCase):
    # Anything that is not a report still gives a page that says so.
    def test_not_reports(self):
        for data in (None, {}, [], "x", 3, {"labs": None}, {"labs": {}}, {"labs": [1, "x", {}, None, []]},
                     {"schema": "labkit-report", "version": 1, "labs": [], "total": "lots", "max": float("nan")}):
            with self.subTest(data=data):
                root = self.page(data)
                self.assertTrue(root.all("h1"))
                if not isinstance(data, dict) or not [lab for lab in data.get("labs") or [] if isinstance(lab, dict)]:
                    self.assertIn("No lab was graded", root.content())

    # An empty lab: a section with defaults and notes, no traceback.
    def test_empty_lab(self):
        root = self.page({"labs": [{}]})
        self.assertEqual([s.attrs["id"] for s in self.sections(root)], ["lab-?"])
        self.assertIn("No timing", root.content())

    # A bench with missing or odd parts: each workload still gets its chart or a note.
    def test_odd_benches(self):
        odd_results = [None, 1, {}, {"role": None}, {"role": "student", "throughput": "fast", "median_ms": float("nan")},
                       {"role": "reference", "throughput": -3.0, "median_ms": 0.0, "q1_ms": 5, "q3_ms": 1},
                       {"role": "library", "throughput": 0.0, "pct_peak": float("inf")},
                       {"role": "roofline", "throughput": 1e308, "median_ms": 1e-300, "q1_ms": 1e-301, "q3_ms": 1e308},
                       {"role": "variant", "throughput": True, "median_ms": [1]}]
        benches = [{}, {"workloads": None}, {"workloads": "x"}, {"workloads": [None, 1, "x"]},
                   {"workloads": [{}]}, {"workloads": [{"results": None, "pair": "x", "peak": -1}]},
                   {"workloads": [{"name": None, "graded": "yes", "unit": None, "peak": 0, "results": odd_results,
                                   "pair": {"ratio_median": float("nan"), "ratio_rel_se": -1, "noisy": "x"}}]},
                   {"workloads": [{"peak": 1e308, "results": [{"role": "student", "throughput": 1e-300}]}],
                    "errors": [None, {"message": None}, {"x": 1}, "the reference failed to load"],
                    "device": "x"}]
        for bench in benches:
            with self.subTest(bench=bench):
                data = load("pass")
                data["labs"][0]["bench"] = bench
                section = self.sections(self.page(data))[0]
                workloads = [w for w in bench.get("workloads") or [] if isinstance(w, dict)] \
                    if isinstance(bench.get("workloads"), list) else []
                self.assertEqual(len(self.charts(section)), len(workloads))
                if not workloads:
                    self.assertIn("The bench reported no workloads", section.content())
                if bench.get("errors"):
                    self.assertEqual([li.content() for li in section.all("li")], ["the reference failed to load"])
                for chart in self.charts(section):
                    for node in chart.all():
                        for name in ("x", "y", "width", "x1", "x2"):
                            if name in node.attrs:
                                self.assertRegex(node.attrs[name], r"^-?\d+(\.\d+)?$", (node.tag, node.attrs))

    # A role that is a list or an object is not a role: the reader must not index by it.
    def test_role_that_is_not_text(self):
        data = load("pass")
        data["labs"][0]["bench"]["workloads"][0]["results"][0]["role"] = ["student"]
        self.page(data)

    # Random junk anywhere in every fixture: always a well-nested page.
    def test_random_junk(self):
        rng = random.Random(20261123)
        for name in SCENARIOS:
            original = load(name)
            for _ in range(40):
                with self.subTest(name=name):
                    self.page(mutate(copy.deepcopy(original), rng, rate=0.15))


# --- the command line -----------------------------------------------------------------------

class CommandTest(PageTestCase):
    def run_report(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = formats.main(list(args))
        return code, out.getvalue(), err.getvalue()

    # `report REPORT --html FILE` writes the page; '-' prints it; alone it is the only output.
    def test_report_html(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "pages" / "report.html"
            code, stdout, _ = self.run_report(str(REPORTS / "pass.json"), "--html", str(out))
            self.assertEqual(code, 0)
            self.assertEqual(stdout, "")  # no Markdown on stdout: --html is an output option
            self.assertEqual(out.read_text(encoding="utf-8"), formats.html(load("pass")))
        code, stdout, _ = self.run_report(str(REPORTS / "partial.json"), "--html", "-")
        self.assertEqual(code, 0)
        self.assertEqual([s.attrs["id"] for s in self.sections(parse(stdout))], ["lab-vectorAdd", "lab-reduction"])

    # A missing report: a page that says nothing was graded, exit status 1.
    def test_missing_report(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            code, _, err = self.run_report(str(Path(tmp) / "none.json"), "--html", str(out))
            self.assertEqual(code, formats.EXIT_DEGRADED)
            self.assertIn("no report at", err)
            self.assertIn("No lab was graded", parse(out.read_text(encoding="utf-8")).content())


class GraderWritesHtmlTest(CliTestCase):
    # The grader writes report.html beside its JSON and says where.
    def test_report_html_beside_the_json(self):
        self.fake_labs(self.bin)
        code, out, err = self.main("--no-build", "--seed", "77")
        self.assertEqual(code, 1, out + err)
        page = self.build / "report.html"
        self.assertIn(f"report: {self.build / 'report.json'}, {page}", out)
        self.assertEqual(page.read_text(encoding="utf-8"), formats.html(self.report()))
        root = parse(page.read_text(encoding="utf-8"))
        self.assertEqual([s.attrs["id"] for s in root.all("section", "lab")],
                         ["lab-vectorAdd", "lab-reduction", "lab-scan"])
        workloads = self.report()["labs"][0]["bench"]["workloads"]
        self.assertEqual(len(root.all("section", "lab")[0].all("svg")), len(workloads))

    # A page that cannot be written is a warning: the run and its JSON report are unharmed.
    def test_unwritable_html(self):
        self.fake_labs(self.bin)
        json_path = self.tmp / "out" / "grades.json"
        (self.tmp / "out" / "grades.html").mkdir(parents=True)
        code, out, err = self.main("--no-build", "--json", str(json_path), "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("warning: cannot write the HTML report", err)
        self.assertRegex(out, rf"report: {re.escape(str(json_path))}\n")
        self.assertEqual(self.report(json_path)["labs"][0]["status"], "PASS")


if __name__ == "__main__":
    unittest.main()


# The page in a real browser at a 1,280 px window: a class's ten labs with every column
# (variants, answers, deductions) and long notes must fit without a horizontal scroll.
# Needs a headless Chromium (Debian: `apt-get install chromium`); skipped without one.
class BrowserWidthTest(unittest.TestCase):
    def test_ten_labs_fit_1280_pixels(self):
        import shutil
        import subprocess
        browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
        if browser is None:
            self.skipTest("no headless Chromium on this machine (apt-get install chromium)")
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "report.html"
            page.write_text(formats.html(load("ten-labs")))
            # The page in a frame exactly 1,280 px wide; the frame's document width goes to the title.
            (Path(tmp) / "measure.html").write_text(
                '<!doctype html><html><body style="margin:0"><iframe id="f" src="report.html" '
                'style="width:1280px;height:900px;border:0"></iframe><script>'
                "document.getElementById('f').onload = function () {"
                " document.title = 'width=' + this.contentDocument.documentElement.scrollWidth; };"
                "</script></body></html>")
            done = subprocess.run([browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                                   "--allow-file-access-from-files", "--window-size=1280,900",
                                   "--virtual-time-budget=5000", "--dump-dom", (Path(tmp) / "measure.html").as_uri()],
                                  capture_output=True, text=True, timeout=120)
        found = re.search(r"<title>width=(\d+)</title>", done.stdout)
        self.assertIsNotNone(found, done.stdout[-500:] + done.stderr[-500:])
        self.assertLessEqual(int(found.group(1)), 1280)
