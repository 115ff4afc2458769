"""Tests of the class page, class.html (grader/instructor/dashboard.py), written by batch.

A class is made of the recorded ten-lab report (fixtures/reports/ten-labs.json): each
student's copy gets its own points, speed ratios, step outcomes, build errors, rule
findings and missing labs; some students have no report, a cut-short one, one of another
schema, or no submission at all. The class goes through the gradebook (write_gradebook
reads each report once) to the page, as in batch.
"""

from __future__ import annotations

import copy
import json
import random
import re
import shutil
import subprocess
import tempfile
import time
import unittest
from pathlib import Path

from grader.instructor import batch, dashboard
from grader.instructor import dashboard_charts as charts
from grader.instructor.gradebook import Entry, Layout, write_gradebook
from grader.tests.helpers import FIXTURES
from grader.tests.test_batch import BatchTestCase

BASE_TEXT = (FIXTURES / "reports" / "ten-labs.json").read_text()
XSS_NAME = "<script>alert(1)</script>"
SVG_MESSAGE = "compilation failed:\nlabs/scan/scan.cu(3): error: </svg><script>alert(2)</script>"


def base() -> dict:
    return json.loads(BASE_TEXT)


def lab_of(data: dict, name: str) -> dict:
    return next(lab for lab in data["labs"] if lab["lab"] == name)


def set_points(lab: dict, total: float) -> None:
    lab["total"] = total


def fail_steps(lab: dict, names: list[str], status: str = "failed") -> None:
    for row in lab["variants"]["rows"]:
        if row["name"] in names:
            row["points"], row["status"] = 0.0, status


def build_error(lab: dict, message: str) -> None:
    lab.update(status="BUILD_ERROR", message=message, total=0.0)
    lab["performance"]["ratio"] = None
    lab["sanitizer"] = None
    fail_steps(lab, [row["name"] for row in lab["variants"]["rows"]], "not tested")


def slim(data: dict) -> dict:
    """The report without what the page does not read (bench JSON, test lists): smaller files."""
    for lab in data["labs"]:
        lab["bench"], lab["correctness"]["tests"], lab["answers"]["questions"] = None, [], []
    return data


# The twelve students of the small class and what each one's report says.
def small_class() -> dict[str, dict | str | None]:
    """{student: report dict, or a text for the report file (cut short), or None (no report)}."""
    reports: dict[str, dict | str | None] = {}
    reports["ada"] = base()  # the reference solutions: every step earned
    bob = base()
    build_error(lab_of(bob, "scan"), SVG_MESSAGE)
    build_error(lab_of(bob, "sort"), "static checks: the object file could not be read")
    reports["bob"] = bob
    cyd = base()
    red = lab_of(cyd, "reduction")
    red["performance"]["ratio"] = 2.5
    red["rules"] = [{"kind": "forbidden", "rule": "streams", "pattern": "cudaStreamCreate", "file": "x", "line": 3,
                     "message": "labs/reduction/reduction.cu:3: `cudaStreamCreate` is not allowed in this lab"}]
    set_points(red, 30.0)
    fail_steps(red, ["warp_finish", "last_block_sum"])
    reports["cyd"] = cyd
    dee = base()
    lab_of(dee, "sort").update(status="MISSING", message="labs/sort/sort.cu not found", total=0.0)
    lab_of(dee, "vectorAdd")["performance"]["ratio"] = 0.5
    lab_of(dee, "sobel")["rules"] = [{"kind": "required", "rule": "", "pattern": "__shared__", "file": "x",
                                      "line": None, "message": "labs/sobel/sobel.cu: `__shared__` is required"}]
    reports["dee"] = dee
    eve = base()
    for lab in eve["labs"]:
        lab.update(status="MISSING", message="not handed in", total=0.0)
        lab["performance"]["ratio"] = None
        fail_steps(lab, [row["name"] for row in lab["variants"]["rows"]], "not registered")
    reports["eve"] = eve
    reports["fay"] = None  # no folder: a missing submission
    reports["gus"] = None  # the grader failed: no report
    reports["hal"] = BASE_TEXT[:5000]  # cut short: not JSON
    reports["ivy"] = {"schema": "something-else", "labs": [{"lab": "vectorAdd", "status": "PASS", "total": 9}]}
    jon = base()
    jon["interrupted"], jon["labs"] = True, jon["labs"][:2]
    lab_of(jon, "vectorAdd")["performance"]["ratio"] = 1.9
    reports["jon"] = jon
    reports[XSS_NAME] = base()
    kim = base()
    lab_of(kim, "vectorAdd")["performance"]["ratio"] = 0.3  # the fastest vectorAdd
    fail_steps(lab_of(kim, "vectorAdd"), ["grid_stride"])
    kim["gpu"] = {"name": "NVIDIA H200", "compute_capability": "9.0"}
    kim["finished"] = "2026-11-28T09:30:00+00:00"
    reports["kim"] = kim
    for data in reports.values():  # the report's total and max, as the grader adds them up
        if isinstance(data, dict) and data.get("schema") == "labkit-report":
            data["total"] = round(sum(lab["total"] for lab in data["labs"]), 2)
            data["max"] = round(sum(lab["max"] for lab in data["labs"]), 2)
    return reports


def write_class(out: Path, reports: dict[str, dict | str | None]) -> list[dict]:
    """The class's folder as batch leaves it; the gradebook's rows (write_gradebook)."""
    layout = Layout(out)
    entries = []
    for i, (name, data) in enumerate(reports.items()):
        folder = out / "subs" / f"s{i}"
        if name != "fay":
            folder.mkdir(parents=True, exist_ok=True)
        if data is not None:
            layout.report(f"s{i}").parent.mkdir(parents=True, exist_ok=True)
            layout.report(f"s{i}").write_text(data if isinstance(data, str) else json.dumps(data))
        entries.append(Entry(i, i + 2, f"s{i}", folder))
    rows = write_gradebook(entries, layout, None)
    for row, name in zip(rows, reports):
        row["student"] = name  # names the roster would refuse as file names: the page must escape them
    return rows


class PageAsserts:
    def assertInPage(self, needle, haystack=None) -> None:
        """`needle` in `haystack` (the class's page by default), without printing a whole page when not."""
        haystack = self.page if haystack is None else haystack
        if needle not in haystack:
            self.fail(f"{needle!r} not found in {len(haystack)} characters; starts {str(haystack)[:300]!r}")


class SmallClassTest(PageAsserts, unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.tmp = Path(tempfile.mkdtemp())
        cls.rows = write_class(cls.tmp, small_class())
        cls.path = dashboard.write_page(cls.rows, Layout(cls.tmp))
        cls.page = cls.path.read_text()
        cls.students = dashboard.students_from_rows(cls.rows)
        cls.labs = dashboard.lab_order(cls.students, None, None)

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_written_beside_the_gradebook(self):
        self.assertEqual(self.path, self.tmp / "class.html")
        self.assertTrue((self.tmp / "gradebook.csv").is_file())
        self.assertInPage("gradebook <code>gradebook.csv</code>", self.page)
        self.assertFalse((self.tmp / "class.html.tmp").exists())

    def test_no_report_students(self):
        by_name = {s.name: s for s in self.students}
        for name in ("gus", "hal", "ivy"):
            self.assertIsNone(by_name[name].report, name)
            self.assertFalse(by_name[name].missing, name)
        self.assertInPage("another schema (something-else)", by_name["ivy"].why)
        self.assertTrue(by_name["fay"].missing)
        self.assertIsNotNone(by_name["jon"].report)  # interrupted: what it graded counts
        every, per_lab, no_report = dashboard.absent(self.students, self.labs)
        self.assertEqual(every, ["eve", "fay"])
        self.assertEqual(per_lab["sort"], ["dee", "eve"])
        self.assertEqual(per_lab["vectorAdd"], ["eve"])
        self.assertEqual([s.name for s in no_report], ["gus", "hal", "ivy"])
        section = self.page[self.page.index('id="absent"'):]
        self.assertInPage("In all: 2 students", section)
        self.assertInPage("No report: 3 students", section)

    def test_score_distributions(self):
        got = [(one.total, one.max) for s in self.students if (one := s.lab("reduction")) is not None]
        self.assertEqual(len(got), 8)  # ada bob cyd dee eve jon xss kim
        counts = charts.bin_counts([a / b for a, b in got])
        self.assertEqual(counts[-1], 6)  # full marks
        self.assertEqual(counts[0], 1)  # eve: 0
        self.assertEqual(counts[int(30 / 113.5 * 10)], 1)  # cyd: 30 points
        self.assertInPage("n = 8, median 114, mean 88.9 out of 114")  # (6 x 113.5 + 30 + 0) / 8
        # the histogram draws each non-empty bin with its count
        figure = self.page[self.page.index('<span class="name">reduction</span>'):]
        figure = figure[:figure.index("</figure>")]
        self.assertEqual(re.findall(r'text-anchor="middle">(\d+)</text>', figure.split('class="tick"')[0]),
                         ["1", "1", "6"])
        self.assertEqual(figure.count('class="bin"'), 3)

    def test_steps_grid(self):
        columns = dict(dashboard.step_columns(self.students, self.labs))
        self.assertEqual(columns["vectorAdd"], ["one_per_thread", "grid_stride", "vector_add_host",
                                                "vector_add_host_pinned"])
        kim = next(s for s in self.students if s.name == "kim")
        steps = {step.name: step for step in kim.lab("vectorAdd").steps}
        self.assertEqual(dashboard.cell(steps["grid_stride"])[1], "✗")
        self.assertEqual(dashboard.cell(steps["one_per_thread"])[1], "✓")
        self.assertEqual(dashboard.cell(None)[1], "·")
        grid = self.page[self.page.index('id="steps"'):self.page.index('id="speed"')]
        kim_row = next(line for line in grid.splitlines() if 'title="kim"' in line)
        self.assertInPage('title="vectorAdd grid_stride: failed">✗</td>', kim_row)
        gus_row = next(line for line in grid.splitlines() if 'title="gus"' in line)
        self.assertEqual(gus_row.count("✓") + gus_row.count("✗"), 0)  # no report: every cell absent
        self.assertEqual(gus_row.count(">·</td>"), sum(len(names) for names in columns.values()))
        cyd_row = next(line for line in grid.splitlines() if 'title="cyd"' in line)
        self.assertInPage('title="reduction warp_finish: failed">✗', cyd_row)
        # the count row: grid_stride earned by ada dee jon xss (kim failed it; bob's vectorAdd is fine too)
        earned = sum(1 for s in self.students if (one := s.lab("vectorAdd")) and
                     any(st.name == "grid_stride" and st.points >= st.max for st in one.steps))
        self.assertEqual(earned, 6)  # ada bob cyd dee jon xss
        for symbol in ("✓", "½", "✗", "·"):
            self.assertInPage(f'<span class="sym">{symbol}</span>', grid)  # the legend: readable without colour

    def test_speed(self):
        timed = dashboard.ratios(self.students, "vectorAdd")
        self.assertEqual(timed[0], (0.3, "kim"))
        self.assertEqual(timed[-1], (1.9, "jon"))
        fastest, slowest = dashboard.extremes(timed)
        self.assertEqual([name for _, name in fastest], ["kim", "dee", "ada"])
        self.assertEqual([name for _, name in slowest][0], "jon")
        self.assertFalse({name for _, name in fastest} & {name for _, name in slowest})
        speed = self.page[self.page.index('id="speed"'):self.page.index('id="problems"')]
        self.assertInPage("1.2×: full performance points at or left of this line", speed)
        self.assertInPage('class="full"', speed)  # the line itself
        self.assertInPage("below 1 is faster than the reference", speed)
        self.assertInPage("<td>kim (0.3×), dee (0.5×), ada (0.887×)</td>", speed)
        self.assertRegex(speed, r"<td>reduction</td><td class=\"num\">7</td><td>[^<]*</td><td>cyd \(2\.5×\)")
        # the 1.2x line sits where 1.2 falls on the axis
        low, high, _ = charts.log_axis([r for lab in self.labs for r, _ in dashboard.ratios(self.students, lab)], 1.2)
        self.assertLess(low, 0.3)
        self.assertGreater(high, 2.5)

    def test_the_full_line_label_stays_inside_the_chart(self):
        # Every student faster than the reference (the ratios of a generated class graded on an
        # H200): the 1.2x line is near the axis's right end, where a label drawn to its right was
        # cut off; it ends at the line.
        svg = charts.speed_chart([("vectorAdd", [0.779, 0.785]), ("reduction", [0.431, 0.435])], 1.2)
        label = re.search(r'<text class="full-label" x="([0-9.]+)"( text-anchor="end")? y=[^>]*>([^<]*)</text>', svg)
        self.assertIsNotNone(label, svg)
        x, anchored_end, text = float(label.group(1)), label.group(2), label.group(3)
        line_x = float(re.search(r'<line class="full" x1="([0-9.]+)"', svg).group(1))
        self.assertTrue(anchored_end, "the label must end at the line when it cannot fit right of it")
        self.assertAlmostEqual(x, line_x - 4, delta=0.1)
        self.assertGreaterEqual(x - charts.LABEL_CHAR_W * len(text), 0)
        # Room on the right (slow students widen the axis): the label starts right of the line.
        wide = charts.speed_chart([("vectorAdd", [0.5, 3.0, 9.0])], 1.2)
        start = re.search(r'<text class="full-label" x="([0-9.]+)" y=', wide)
        self.assertIsNotNone(start, wide)
        self.assertLessEqual(float(start.group(1)) + charts.LABEL_CHAR_W * len(text), charts.SPEED_W)

    def test_the_line_follows_the_courses_ratio(self):
        # The reports carry the configuration they were graded with: a course at 1.5x, with
        # reduction at 1.1x, gets its line at 1.5 and reduction named apart.
        students = copy.deepcopy(self.students)
        for student in students:
            if student.report is not None:
                student.report.config = {"defaults": {"full_credit_ratio": 1.5},
                                         "labs": {"reduction": {"full_credit_ratio": 1.1}}}
        self.assertEqual(dashboard.full_credit_ratio(students, "vectorAdd"), 1.5)
        self.assertEqual(dashboard.full_credit_ratio(students, "reduction"), 1.1)
        self.assertEqual(dashboard.full_credit_ratio([], "vectorAdd"), 1.2)  # no report says: the kit's default
        page = dashboard.render(students, self.labs, "gradebook.csv")
        speed = page[page.index('id="speed"'):page.index('id="problems"')]
        self.assertInPage("1.5×: full performance points at or left of this line", speed)
        self.assertInPage("other labs: reduction 1.1×", speed)
        self.assertNotIn("1.2×: full performance points", speed)

    def test_findings_by_kind(self):
        kinds = dashboard.problem_kinds(self.students, self.labs)
        self.assertEqual(kinds["build error"], {"compilation failed": [("bob", "scan")],
                                                "static checks": [("bob", "sort")]})
        self.assertEqual(kinds["rule"], {"streams": [("cyd", "reduction")], "required pattern": [("dee", "sobel")]})
        self.assertEqual(kinds["outcome"]["BUILD_ERROR: build failed"], [("bob", "scan"), ("bob", "sort")])
        missing = kinds["outcome"]["MISSING: lab files missing"]
        self.assertEqual(len(missing), 11)  # dee's sort, eve's ten
        self.assertEqual(dashboard.by_student(missing)[0], "dee (sort)")
        self.assertTrue(dashboard.by_student(missing)[1].startswith("eve (vectorAdd, reduction, scan,"))
        self.assertIn("memcheck: behaves differently", kinds["sanitizer"])
        problems = self.page[self.page.index('id="problems"'):self.page.index('id="absent"')]
        self.assertInPage('<td class="kind">streams</td><td class="num">1</td><td class="num">1</td>'
                          '<td class="names">cyd (reduction)</td>', problems)
        self.assertInPage('<td class="kind">BUILD_ERROR: build failed</td><td class="num">2</td><td class="num">1</td>'
                          '<td class="names">bob (scan, sort)</td>', problems)

    def test_header(self):
        self.assertInPage("graded on NVIDIA H100 80GB HBM3 (sm_90) (7 students); NVIDIA H200 (sm_90) (1 student)",
                      self.page)
        self.assertInPage("graded 2026-11-27 01:02 UTC to 2026-11-28 09:30 UTC", self.page)
        self.assertInPage("8 graded · 3 without a report · 2 handed in nothing")

    def test_escaping(self):
        self.assertNotIn("<script", self.page)
        self.assertNotIn("alert(1)</script>", self.page)
        self.assertInPage("&lt;script&gt;alert(1)&lt;/script&gt;", self.page)
        self.assertEqual(self.page.count("</svg>"), self.page.count("<svg "))  # the message's </svg> is text
        self.assertInPage("&lt;/svg&gt;", dashboard.render(
            [dashboard.Student("x", None, why=SVG_MESSAGE)], [], "gradebook.csv"))

    def test_self_contained(self):
        self.assertNotRegex(self.page, r"(?i)<script|<link|<img|<iframe|@import|url\(|javascript:|https?://")
        self.assertInPage("@media print", self.page)
        self.assertInPage("break-before: page", self.page)


class BrokenReportsTest(PageAsserts, unittest.TestCase):
    # Anything a row may hold: the page is still written.
    def test_odd_rows(self):
        odd = dashboard.students_from_rows([{"student": "a", "status": "x", "report": "not a report"}, {},
                                            {"student": "b", "status": "missing submission (no path)"}])
        self.assertEqual([s.report for s in odd], [None, None, None])
        self.assertTrue(odd[2].missing)
        page = dashboard.render(odd, ["vectorAdd"], "gradebook.csv")
        self.assertInPage("No report: 2 students", page)
        self.assertInPage("No report lists a lab's required variants", page)
        self.assertInPage("No report holds a timed submission", page)

    def test_fields_of_the_wrong_type(self):
        from grader.report import read
        data = base()
        data["gpu"], data["finished"] = "H100", 17
        data["labs"][0].update(variants={"rows": [{"name": 3, "points": "x"}, "y"]}, rules=["text", 5], sanitizer=[])
        data["labs"][1]["performance"]["ratio"] = float("nan")
        data["labs"][2]["performance"]["ratio"] = -1
        student = dashboard.Student("odd", read(data))
        page = dashboard.render([student], dashboard.lab_order([student], None, None), "g.csv")
        self.assertInPage("Lecture steps", page)
        self.assertNotIn("reduction</text><text", page.split('id="speed"')[1][:0])  # rendered at all
        self.assertEqual(dashboard.ratios([student], "reduction"), [])
        self.assertEqual(dashboard.ratios([student], "scan"), [])


def big_class(count: int) -> dict[str, dict]:
    """`count` generated students with varied points, ratios, steps and failures."""
    rng = random.Random(38)
    reports = {}
    for i in range(count):
        data = slim(base())
        for lab in data["labs"]:
            roll = rng.random()
            if roll < 0.05:
                build_error(lab, "compilation failed:\nerror")
            elif roll < 0.08:
                lab.update(status="MISSING", total=0.0)
            else:
                lab["total"] = round(lab["max"] * rng.random(), 2)
                if lab["performance"]["ratio"]:
                    lab["performance"]["ratio"] = round(rng.lognormvariate(0, 0.6), 3)
                fail_steps(lab, [row["name"] for row in lab["variants"]["rows"] if rng.random() < 0.3])
        data["total"] = round(sum(lab["total"] for lab in data["labs"]), 2)
        reports[f"student{i:03d}"] = data
    return reports


class ScaleTest(unittest.TestCase):
    def test_200_students(self):
        with tempfile.TemporaryDirectory() as tmp:
            rows = write_class(Path(tmp), big_class(200))
            start = time.monotonic()
            path = dashboard.write_page(rows, Layout(Path(tmp)))
            seconds = time.monotonic() - start
            size = path.stat().st_size
            page = path.read_text()
        self.assertEqual(page.count('<th class="who" title="student'), 200)  # a grid row each
        self.assertIn("n = 200, median", page)
        self.assertLess(seconds, 5.0)
        self.assertLess(size, 3 * 1024 * 1024)


class BatchHookTest(PageAsserts, BatchTestCase):
    # batch and batch --collect write class.html beside the gradebook and name it at the end.
    def test_batch_and_collect(self):
        self.submission("alice", "score 87.5")
        self.submission("bob", "crash")
        roster = self.roster([("alice", "subs/alice"), ("bob", "subs/bob"), ("carol", "subs/carol")])
        code, out, err = self.main(str(roster), "--out", str(self.out), "--gpus", "1")
        self.assertEqual(code, 1, out + err)
        page = self.out / "class.html"
        self.assertInPage(f"class page: {page}", out)
        text = page.read_text()
        self.assertInPage("Class of 3", text)
        self.assertInPage("<strong>bob</strong>: grader failed", text)  # no report
        self.assertRegex(text, r"In all: 1 student</h3>\s*<p>carol</p>")
        page.unlink()
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--collect")
        self.assertEqual(code, 1)
        self.assertInPage(f"class page: {page}", out)
        self.assertInPage("n = 1, median 87.5", page.read_text())

    def test_page_failure_keeps_the_gradebook(self):
        self.submission("alice", "score 100")
        roster = self.roster([("alice", "subs/alice")])
        self.mock(batch.class_outputs.dashboard, "render", side_effect=RuntimeError("boom"))
        code, out, err = self.main(str(roster), "--out", str(self.out), "--collect")
        self.assertEqual(code, 1)  # alice is not graded yet: the gradebook says so, as before
        self.assertInPage("class page: not written (boom)", out)
        self.assertTrue((self.out / "gradebook.csv").is_file())


class BrowserTest(unittest.TestCase):
    """The page in headless Chromium: a screenshot at 1,280 px that is not blank, and no
    horizontal scrolling (the measure of BrowserWidthTest in test_html_report)."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.browser = next((b for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
        if cls.browser is None:
            raise unittest.SkipTest("no headless Chromium on this machine (apt-get install chromium)")
        cls.tmp = Path(tempfile.mkdtemp())
        reports = small_class()
        reports.update(big_class(30))
        cls.page = dashboard.write_page(write_class(cls.tmp, reports), Layout(cls.tmp))

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_screenshot(self):
        shot = self.tmp / "class.png"
        subprocess.run([self.browser, "--headless=new", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                        f"--screenshot={shot}", "--window-size=1280,2000", self.page.as_uri()],
                       capture_output=True, timeout=120)
        self.assertTrue(shot.is_file(), "no screenshot")
        width, height, colours = png_facts(shot.read_bytes())
        self.assertEqual((width, height), (1280, 2000))
        self.assertGreater(colours, 20)  # text, charts and the grid's colours: not a blank page

    def test_fits_1280_pixels(self):
        (self.tmp / "measure.html").write_text(
            '<!doctype html><html><body style="margin:0"><iframe id="f" src="class.html" '
            'style="width:1280px;height:900px;border:0"></iframe><script>'
            "document.getElementById('f').onload = function () {"
            " document.title = 'width=' + this.contentDocument.documentElement.scrollWidth; };"
            "</script></body></html>")
        done = subprocess.run([self.browser, "--headless=new", "--no-sandbox", "--disable-gpu",
                               "--allow-file-access-from-files", "--window-size=1280,900",
                               "--virtual-time-budget=5000", "--dump-dom", (self.tmp / "measure.html").as_uri()],
                              capture_output=True, text=True, timeout=120)
        found = re.search(r"<title>width=(\d+)</title>", done.stdout)
        self.assertIsNotNone(found, done.stdout[-500:] + done.stderr[-500:])
        self.assertLessEqual(int(found.group(1)), 1280)


def png_facts(data: bytes) -> tuple[int, int, int]:
    """(width, height, distinct colours among sampled pixels) of an 8-bit RGB(A) PNG."""
    import struct
    import zlib
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height, depth, kind = struct.unpack(">IIBB", data[16:26])
    chunks, pos = [], 8
    while pos < len(data):
        length, tag = struct.unpack(">I4s", data[pos:pos + 8])
        if tag == b"IDAT":
            chunks.append(data[pos + 8:pos + 8 + length])
        pos += 12 + length
    raw = zlib.decompress(b"".join(chunks))
    channels = {2: 3, 6: 4}[kind]
    stride = width * channels + 1
    colours = set()
    previous = bytearray(stride - 1)
    for y in range(height):  # undo the filters row by row (Paeth etc.), sample every 7th pixel
        line = bytearray(raw[y * stride + 1:(y + 1) * stride])
        unfilter(raw[y * stride], line, previous, channels)
        if y % 7 == 0:
            colours.update(bytes(line[x:x + 3]) for x in range(0, len(line), channels * 7))
        previous = line
    return width, height, len(colours)


def unfilter(kind: int, line: bytearray, previous: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = previous[i]
        c = previous[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + a) & 255
        elif kind == 2:
            line[i] = (line[i] + b) & 255
        elif kind == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255


if __name__ == "__main__":
    unittest.main()
