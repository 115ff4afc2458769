"""Tests of the write-up graded by hand: the manifest's rubric (writeup.parse_rubric via
manifest.read), the student's WRITEUP.md read and its form checked (writeup.grade), its
place in the report (JSON, model, HTML: escaped), and the class's grading sheet written by
batch and read back into the gradebook (instructor/handgrades.py)."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import random
import shutil
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from grader import formats, manifest, overlay, report, writeup
from grader.instructor import batch, handgrades
from grader.instructor.gradebook import Entry, Layout, write_gradebook
from grader.outcome import LabResult
from grader.score import Correctness, Performance
from grader.stages import scoring
from grader.status import PASS
from grader.tests.helpers import FIXTURES
from grader.tests.test_cli import CliTestCase
from grader.tests.test_html_report import PageTestCase, mutate

KIT = Path(__file__).resolve().parents[2]
RUBRIC = {"total": 5, "rubric": [
    {"id": "machine", "title": "Machine and scores", "points": 2, "earns": "the bench's first line and table"},
    {"id": "decomposition", "title": "Decomposition", "points": 3, "earns": "what a thread and a block do"}]}
BENCH_LINES = ("reduction bench on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs at 1980 MHz, 50 MB L2, peak DRAM 3352 GB/s)\n"
               "name                   role      median ms    IQR ms samples       GB/s  % peak     x CPU   x ref\n"
               "student                student      0.0910    0.0010      40     2950.0   88.0%     400.0    1.01\n")
GOOD = f"""# reduction: write-up

## Machine and scores

```
{BENCH_LINES}```

## 2. decomposition:

Each thread adds eight elements, a block of 256 threads reduces 2048.

### Block size

256 threads, because the tree then has eight levels.
"""
HOSTILE = '</pre></details><script>alert(1)</script><img src=x onerror=alert(2)>"\'<b>'


def lab_json(folder: Path, **extra) -> Path:
    """A minimal manifest of lab `folder.name` with `extra` keys."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "lab.json"
    path.write_text(json.dumps({"schema": "labkit-lab", "version": 1, "name": folder.name, "order": 1,
                                "functions": ["f"], "editable": [f"labs/{folder.name}/{folder.name}.cu"], **extra}))
    return path


class ManifestTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.folder = Path(tmp.name) / "labs" / "demo"

    def read(self, rubric) -> manifest.Lab:
        return manifest.read(lab_json(self.folder, writeup=rubric))

    def test_valid_rubric(self):
        lab = self.read(RUBRIC)
        self.assertEqual([item.id for item in lab.writeup.items], ["machine", "decomposition"])
        self.assertEqual((lab.writeup.total, lab.writeup.item("decomposition").points), (5.0, 3.0))
        self.assertEqual(lab.writeup_file, "labs/demo/WRITEUP.md")
        self.assertEqual(lab.optional_files, ["labs/demo/WRITEUP.md"])  # no questions: no answers file
        none = manifest.read(lab_json(self.folder))
        self.assertIsNone(none.writeup)
        self.assertEqual((none.writeup_file, none.optional_files), ("", []))

    def test_errors_name_the_key(self):
        item = RUBRIC["rubric"][0]
        cases = [
            ([], '"writeup" must be an object'),
            ({**RUBRIC, "points": 5}, 'unknown key "points"'),
            ({"total": 5}, '"rubric" must be a non-empty list'),
            ({"total": 5, "rubric": []}, '"rubric" must be a non-empty list'),
            ({"total": 2, "rubric": ["machine"]}, '"rubric"[0] must be an object'),
            ({"total": 2, "rubric": [{**item, "point": 2}]}, 'unknown key "point"'),
            ({"total": 2, "rubric": [{**item, "id": "a b"}]}, '"id" must be letters'),
            ({"total": 2, "rubric": [{**item, "id": "comment"}]}, "is a column of the grading sheet"),
            ({"total": 4, "rubric": [item, {**item, "title": "Other"}]}, "the id 'machine' is used twice"),
            ({"total": 4, "rubric": [item, {**item, "id": "x", "title": "machine  AND scores:"}]},
             "is used twice: each item needs a heading"),
            ({"total": 2, "rubric": [{**item, "title": " "}]}, '"title" must be a non-empty string'),
            ({"total": 2, "rubric": [{**item, "points": 0}]}, '"points" must be a number above 0'),
            ({"total": 2, "rubric": [{**item, "points": True}]}, '"points" must be a number above 0'),
            ({"total": 2, "rubric": [{**item, "points": "2"}]}, '"points" must be a number above 0'),
            ({"total": 2, "rubric": [{**item, "earns": ""}]}, '"earns" must say what earns the points'),
            ({"total": 3, "rubric": [item]}, '"total" is 3 but the items\' points add up to 2'),
            ({"rubric": [item]}, '"total" must be a number above 0'),
        ]
        for raw, message in cases:
            with self.subTest(raw=raw):
                with self.assertRaises(manifest.ManifestError) as caught:
                    self.read(raw)
                self.assertIn(message, str(caught.exception))
                self.assertIn(str(self.folder / "lab.json"), str(caught.exception))
                self.assertIn('"writeup"', str(caught.exception))


class KitWriteupsTest(unittest.TestCase):
    """The kit's labs: each asks for a write-up, its template has every heading of the rubric,
    and the template as shipped earns nothing, written nothing."""

    def test_every_lab_has_a_rubric_and_a_template(self):
        labs = manifest.labs(KIT)
        self.assertEqual([lab.name for lab in labs if lab.writeup is None], [])
        for lab in labs:
            with self.subTest(lab=lab.name):
                path = KIT / lab.writeup_file
                result = writeup.grade(lab.writeup, path, lab.writeup_file)
                self.assertEqual(result.status, writeup.EMPTY)
                self.assertEqual(result.words, 0)
                self.assertTrue(all(result.headings.values()), result.headings)
                self.assertEqual((result.machine_line, result.score_table), ("", False))  # hints are comments
                self.assertEqual(result.as_dict()["points"], 0.0)
                # The student-facing handout says where the write-up goes.
                handout = (KIT / "handouts" / f"{lab.name}.md").read_text()
                self.assertTrue(f"`{lab.writeup_file}`" in handout, f"handouts/{lab.name}.md names no {lab.writeup_file}")


class ReadTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.path = Path(tmp.name) / "WRITEUP.md"
        self.rubric = writeup.parse_rubric(RUBRIC, "test")

    def grade(self, content: str | bytes) -> writeup.WriteupResult:
        if isinstance(content, str):
            content = content.encode()
        self.path.write_bytes(content)
        return writeup.grade(self.rubric, self.path, "labs/reduction/WRITEUP.md")

    def test_good_writeup(self):
        result = self.grade(GOOD)
        self.assertEqual(result.status, writeup.PENDING)
        self.assertEqual(result.problems, [])
        self.assertEqual(result.note, "")
        self.assertEqual(result.headings, {"machine": True, "decomposition": True})  # numbered, any case, a colon
        self.assertTrue(result.machine_line.startswith("reduction bench on NVIDIA H100"))
        self.assertTrue(result.score_table)
        self.assertIn("eight elements", result.sections["decomposition"])
        self.assertIn("### Block size", result.sections["decomposition"])  # a subheading stays in its section
        self.assertIn("student ", result.sections["machine"])
        self.assertEqual(result.sha256, hashlib.sha256(GOOD.encode()).hexdigest())
        self.assertEqual(result.text, GOOD)
        data = result.as_dict()
        self.assertEqual((data["points"], data["pending"], data["max"], data["status"]), (0.0, 5.0, 5.0, "pending"))
        self.assertTrue(data["form"]["ok"])
        self.assertGreater(data["words"], 30)

    def test_markdown_table_counts(self):
        result = self.grade("## Machine and scores\nH100 (sm_90)\n\n| version | ms |\n|---|--:|\n| tiled | 0.1 |\n"
                            "## Decomposition\nx\n")
        self.assertTrue(result.score_table)
        self.assertEqual(result.machine_line, "H100 (sm_90)")
        # Header and separator alone are no table; neither is a header without its separator.
        for text in ("| version | ms |\n|---|---|\n", "| version | ms |\n| tiled | 0.1 |\n| x | y |\n",
                     "name role median ms\n"):
            with self.subTest(text=text):
                self.assertFalse(self.grade(f"## Machine and scores\n{text}").score_table)

    def test_form_problems(self):
        result = self.grade("## Decomposition\nOne thread per element.\n")
        self.assertEqual(result.status, writeup.PENDING)
        self.assertEqual(len(result.problems), 3)
        self.assertIn("no heading `## Machine and scores`", result.problems[0])
        self.assertIn("no machine line", result.note)
        self.assertIn("no score table", result.note)
        self.assertEqual(result.as_dict()["form"]["headings_missing"], ["machine"])

    # What sits in a comment is the template's, not the student's: no words, no table, no
    # machine line (a student cannot hide a table there either: it would not count).
    def test_comments_are_not_read(self):
        result = self.grade(f"## Machine and scores\n<!--\n{BENCH_LINES}-->\n## Decomposition\n<!-- x y z\n")
        self.assertEqual((result.status, result.words, result.score_table, result.machine_line),
                         (writeup.EMPTY, 0, False, ""))
        self.assertIn("template's headings only", result.note)

    def test_missing_file(self):
        result = writeup.grade(self.rubric, self.path, "labs/reduction/WRITEUP.md")
        self.assertEqual(result.status, writeup.MISSING)
        self.assertIn("WRITEUP.md not found", result.note)
        self.assertEqual(result.problems, [])
        self.assertEqual(result.as_dict()["pending"], 5.0)

    def test_large_and_odd_bytes(self):
        big = GOOD.encode() + b"\xff\xfe\x00 words " * (writeup.MAX_FILE_BYTES // 8)
        result = self.grade(big)
        self.assertTrue(result.truncated)
        self.assertEqual(result.bytes, len(big))
        self.assertEqual(result.sha256, hashlib.sha256(big).hexdigest())  # of the whole file
        self.assertLessEqual(len(result.text), writeup.MAX_TEXT_CHARS + 10)
        self.assertIn("\ufffd", result.text)
        self.assertNotIn("\x00", result.text)
        self.assertIn("only its beginning was read", result.note)
        self.assertLessEqual(max(len(s) for s in result.sections.values()), writeup.MAX_SECTION_CHARS + 10)

    # The grader never executes the file: a write-up that looks like code is text.
    def test_code_is_text(self):
        result = self.grade("## Decomposition\n```python\nimport os; os.system('touch /tmp/pwned')\n```\n")
        self.assertEqual(result.sections["decomposition"],
                         "```python\nimport os; os.system('touch /tmp/pwned')\n```")


def lab_result(name: str = "reduction") -> LabResult:
    return LabResult(name, PASS, Correctness(70.0, 70.0, True), Performance(30.0, 30.0))


class ScoringTest(unittest.TestCase):
    """record_writeup: the student's file from the work folder, the solution's where it has one;
    no points, the automatic total and maximum unchanged."""

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.lab = manifest.read(lab_json(self.tmp / "kit" / "labs" / "reduction", writeup=RUBRIC))

    def options(self, solution: bool) -> SimpleNamespace:
        return SimpleNamespace(plan=SimpleNamespace(solution=solution), work_dir=self.tmp / "work",
                               root=self.tmp / "kit")

    def test_student(self):
        result = lab_result()
        before = (result.total, result.max)
        scoring.record_writeup(self.options(False), result, self.lab)
        self.assertEqual(result.writeup.status, writeup.MISSING)
        self.assertEqual(result.notes, [])  # the report's write-up row says it; no console note for it
        path = self.tmp / "work" / "labs" / "reduction" / "WRITEUP.md"
        path.parent.mkdir(parents=True)
        path.write_text("## Decomposition\nOne thread per element.\n")
        scoring.record_writeup(self.options(False), result, self.lab)
        self.assertEqual(result.writeup.status, writeup.PENDING)
        self.assertIn("no machine line", result.notes[0])
        self.assertEqual((result.total, result.max), before)  # graded by hand: not in the automatic total

    def test_solution(self):
        result = lab_result()
        scoring.record_writeup(self.options(True), result, self.lab)
        self.assertIsNone(result.writeup)  # a reference without a write-up shows none
        path = self.tmp / "kit" / "solutions" / "reduction" / "WRITEUP.md"
        path.parent.mkdir(parents=True)
        path.write_text(GOOD)
        scoring.record_writeup(self.options(True), result, self.lab)
        self.assertEqual((result.writeup.status, result.writeup.file),
                         (writeup.PENDING, "solutions/reduction/WRITEUP.md"))

    # A submission's write-up is taken with its code, and is no ignored change.
    def test_taken_from_a_submission(self):
        kit, student = self.tmp / "kit", self.tmp / "student"
        for root in (kit, student):
            (root / "labs" / "reduction").mkdir(parents=True, exist_ok=True)
            (root / "labs" / "reduction" / "reduction.cu").write_text("// code\n")
        (student / "labs" / "reduction" / "WRITEUP.md").write_text(GOOD)
        taken = overlay.prepare(kit, student, self.tmp / "work", ["reduction"],
                                lambda lab: ["labs/{lab}/{lab}.cu"], optional_of=lambda lab: self.lab.optional_files)
        self.assertIn("labs/reduction/WRITEUP.md", taken.copied["reduction"])
        self.assertEqual(taken.ignored_changes, [])
        self.assertEqual((self.tmp / "work" / "labs" / "reduction" / "WRITEUP.md").read_text(), GOOD)


def report_with_writeup(text: str = GOOD, status_of: str | None = None) -> dict:
    """The ten-labs fixture report with reduction's write-up recorded from `text`."""
    data = json.loads((FIXTURES / "reports" / "ten-labs.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "WRITEUP.md"
        path.write_text(text)
        found = writeup.grade(writeup.parse_rubric(RUBRIC, "test"), path, "labs/reduction/WRITEUP.md")
    lab = next(lab for lab in data["labs"] if lab["lab"] == "reduction")
    lab["writeup"] = found.as_dict()
    if status_of:
        lab["writeup"]["status"] = status_of
    return data


class ReportTest(PageTestCase):
    def test_model_and_pending_line(self):
        data = report_with_writeup()
        read = report.read(data)
        lab = read.lab("reduction")
        self.assertEqual((lab.writeup.status, lab.writeup.max), ("pending", 5.0))
        self.assertEqual([item.id for item in lab.writeup.rubric], ["machine", "decomposition"])
        self.assertIn("eight elements", lab.writeup.sections["decomposition"])
        self.assertIsNone(read.lab("vectorAdd").writeup)
        self.assertEqual(report.writeup_points(read.labs), 5.0)
        self.assertIn("5 more points of write-ups (WRITEUP.md) are graded by hand with the rubric (not in the total "
                      "above)", report.table(read))
        self.assertEqual(read.total, data["total"])  # nothing added to the total
        self.assertIn("5 points of write-ups (WRITEUP.md) are graded by hand with the rubric and are not in the total "
                      "yet.", formats.markdown(data))

    def test_page_shows_the_rubric_beside_the_text(self):
        root = self.page(report_with_writeup())
        section = next(s for s in self.sections(root) if s.attrs["id"] == "lab-reduction")
        table = section.all("table", "rubric")[0]
        rows = table.all("tr")[1:]
        self.assertEqual(len(rows), 2)
        self.assertIn("Decomposition", rows[1].content())
        self.assertIn("what a thread and a block do", rows[1].content())
        self.assertIn("eight elements", rows[1].all("td")[1].content())
        self.assertIn("to be graded by hand", section.content())
        self.assertIn("reduction bench on NVIDIA H100", section.content())
        self.assertTrue(section.all("details"))
        # The other labs ask for no write-up here: no row for it.
        other = next(s for s in self.sections(root) if s.attrs["id"] == "lab-vectorAdd")
        self.assertEqual(other.all("table", "rubric"), [])

    def test_missing_and_empty(self):
        for status, words in (("missing", "not handed in"), ("empty", "not written yet")):
            with self.subTest(status=status):
                data = report_with_writeup("## Machine and scores\n", status_of=status)
                section = next(s for s in self.sections(self.page(data)) if s.attrs["id"] == "lab-reduction")
                self.assertIn(words, section.content())

    # A hostile write-up (its sections, its whole text, its machine line) stays text.
    def test_hostile_writeup_is_escaped(self):
        text = (f"## Machine and scores\n{HOSTILE} sm_90\n\n| a | b |\n|---|---|\n| {HOSTILE} | x |\n"
                f"## Decomposition\n{HOSTILE}\n\n<details open><summary>x</summary>\n")
        data = report_with_writeup(text)
        data["labs"][1]["writeup"]["rubric"][0]["title"] = HOSTILE  # even a manifest's text
        page = formats.html(data)
        root = self.page(data)  # well nested, no script element, no on* attribute
        self.assertNotIn("<script>", page)
        self.assertNotIn("<img", page)
        self.assertNotIn("<b>", page)
        self.assertIn("&lt;/pre&gt;&lt;/details&gt;&lt;script&gt;alert(1)&lt;/script&gt;", page)
        section = next(s for s in self.sections(root) if s.attrs["id"] == "lab-reduction")
        self.assertIn(HOSTILE, section.content())  # the reader sees what was written
        self.assertEqual(len(section.all("table", "rubric")[0].all("tr")), 3)

    # Junk where the write-up should be still gives a page.
    def test_junk(self):
        rng = random.Random(36)
        base = report_with_writeup()
        for _ in range(150):
            data = json.loads(json.dumps(base))
            lab = data["labs"][1]
            lab["writeup"] = mutate(lab["writeup"], rng, 0.3)
            formats.html(data)
            report.table(report.read(data))
        for junk in (None, 3, "x", [], {"rubric": "x", "sections": [], "max": "lots"}):
            data = json.loads(json.dumps(base))
            data["labs"][1]["writeup"] = junk
            formats.html(data)


class CliWriteupTest(CliTestCase):
    """End to end: the grader records the kit's write-up; no points either way."""

    def test_recorded_not_counted(self):
        self.fake_labs(self.bin)
        path = self.root / "labs" / "vectorAdd" / "WRITEUP.md"
        code, out, _ = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out)
        self.assertEqual(self.report()["labs"][0]["writeup"]["status"], "missing")
        self.assertIn("10 more points of write-ups (WRITEUP.md) are graded by hand", out)
        path.write_text("## Machine and scores\nvectorAdd bench on NVIDIA H100 80GB HBM3 (sm_90)\n")
        code, out, _ = self.main("--no-build", "vectorAdd")
        lab = self.report()["labs"][0]
        self.assertEqual((lab["total"], lab["max"]), (100.0, 100.0))
        self.assertEqual((lab["writeup"]["status"], lab["writeup"]["points"], lab["writeup"]["pending"]),
                         ("pending", 0.0, 10.0))
        self.assertEqual(lab["writeup"]["form"]["headings_missing"],
                         ["decomposition", "synchronisation", "tried", "measurements"])
        self.assertIn("no heading `## Decomposition`", out)


# --- the grading sheet ------------------------------------------------------------------------------

class SheetTestCase(unittest.TestCase):
    """A class of three (alice handed in reduction's write-up, bob's is empty, carol has no
    report) graded against the real kit's rubrics."""

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.layout = Layout(self.tmp / "grades")
        self.rubrics = {lab.name: lab.writeup for lab in manifest.labs(KIT) if lab.writeup}
        self.entries = []
        for index, name in enumerate(("alice", "bob", "carol")):
            (self.tmp / "subs" / name).mkdir(parents=True)
            self.entries.append(Entry(index, index + 2, name, self.tmp / "subs" / name))
        self.save("alice", {"reduction": GOOD, "scan": GOOD})
        self.save("bob", {"reduction": "## Decomposition\n"})
        self.roster = self.tmp / "roster.csv"
        self.roster.write_text("student,path\n" + "".join(f"{n},subs/{n}\n" for n in ("alice", "bob", "carol")))

    def save(self, student: str, texts: dict[str, str]) -> None:
        """A report of vectorAdd, reduction and scan (100 points each, the labs' automatic
        maximum), with the write-ups `texts` of the real kit's rubrics."""
        labs = []
        for name in ("vectorAdd", "reduction", "scan"):
            lab = {"lab": name, "status": "PASS", "total": 90.0, "max": 100.0}
            path = self.tmp / "w.md"
            if name in texts:
                path.write_text(texts[name])
            else:
                path.unlink(missing_ok=True)
            lab["writeup"] = writeup.grade(self.rubrics[name], path, f"labs/{name}/WRITEUP.md").as_dict()
            labs.append(lab)
        data = {"schema": "labkit-report", "version": 1, "seed": 7, "finished": "2026-11-27T00:00:00+00:00",
                "labs": labs, "total": 270.0, "max": 300.0}
        self.layout.report(student).parent.mkdir(parents=True, exist_ok=True)
        self.layout.report(student).write_text(json.dumps(data))

    def sheet(self) -> list[dict[str, str]]:
        with handgrades.sheet_path(self.layout).open() as stream:
            return list(csv.DictReader(stream))

    def write(self, rows: list[dict[str, str]], header: list[str] | None = None) -> Path:
        path = handgrades.sheet_path(self.layout)
        with path.open("w", newline="") as stream:
            writer = csv.DictWriter(stream, header or list(rows[0]), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
        return path

    def batch(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = batch.main([str(self.roster), "--out", str(self.layout.out), "--pristine", str(KIT), *args])
        return code, out.getvalue(), err.getvalue()


class SheetTest(SheetTestCase):
    def test_written_for_the_writeups_handed_in(self):
        path, waiting = handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        lines = path.read_text().splitlines()
        self.assertEqual(lines[0], "student,lab,max,machine,decomposition,synchronisation,tried,measurements,comment")
        rows = self.sheet()
        self.assertEqual([(r["student"], r["lab"], r["max"]) for r in rows],
                         [("alice", "reduction", "10"), ("alice", "scan", "10")])  # bob's is empty, carol has none
        self.assertEqual(waiting, 2)
        self.assertEqual({r["decomposition"] for r in rows}, {""})

    # Filled in, then written again (another --collect): nothing filled in is lost.
    def test_written_again_keeps_what_was_filled_in(self):
        handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        rows = self.sheet()
        rows[0].update(machine="2", decomposition="2.5", comment="clear, \"good\" table")
        rows.append({**rows[0], "student": "dave", "lab": "sort"})  # a row the next sheet would not write
        self.write(rows)
        _, waiting = handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        again = {(r["student"], r["lab"]): r for r in self.sheet()}
        self.assertEqual((again["alice", "reduction"]["decomposition"], again["alice", "reduction"]["comment"]),
                         ("2.5", 'clear, "good" table'))
        self.assertIn(("dave", "sort"), again)
        self.assertEqual(waiting, 3)  # every row has an item left empty

    def test_round_trip_into_the_gradebook(self):
        handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        rows = self.sheet()
        rows[0].update(machine="2", decomposition="3", synchronisation="1.5", tried="1", measurements="0")
        rows[1].update(machine="1")  # scan: partly graded
        path = self.write(rows)
        grades = handgrades.read_sheet(path, self.entries, self.rubrics)
        self.assertEqual(grades["alice", "reduction"].points, 7.5)
        self.assertEqual(grades["alice", "scan"].missing, ["decomposition", "synchronisation", "tried", "measurements"])
        book = {r["student"]: r for r in write_gradebook(self.entries, self.layout, None, None,
                                                         hand=lambda r: handgrades.apply(r, grades))}
        alice = book["alice"]
        self.assertEqual((alice["total"], alice["max"], alice["hand_graded"]), (278.5, 330.0, 8.5))
        self.assertEqual((alice["labs"]["reduction"], alice["labs"]["scan"]), (97.5, 91.0))
        self.assertEqual(alice["status"], "ok; write-up to grade: scan")
        self.assertEqual((book["bob"]["total"], book["bob"]["max"], book["bob"]["status"]), (270.0, 330.0, "ok"))
        csv_rows = {r["student"]: r for r in csv.DictReader(io.StringIO(self.layout.gradebook.read_text()))}
        self.assertEqual((csv_rows["alice"]["hand_graded"], csv_rows["alice"]["total"]), ("8.5", "278.5"))
        self.assertEqual(csv_rows["carol"]["hand_graded"], "")
        # Without a sheet the gradebook is as before: no column, nothing added.
        plain = {r["student"]: r for r in write_gradebook(self.entries, self.layout, None, None)}
        self.assertEqual((plain["alice"]["total"], plain["alice"]["max"]), (270.0, 300.0))
        self.assertNotIn("hand_graded", self.layout.gradebook.read_text().splitlines()[0])

    def test_errors_name_line_and_column(self):
        header = ["student", "lab", "max", "machine", "decomposition", "synchronisation", "tried", "measurements",
                  "comment"]
        rows = [
            {"student": "alice", "lab": "reduction", "machine": "3"},  # line 2: above the maximum
            {"student": "alice", "lab": "scan", "decomposition": "two"},  # line 3: not a number
            {"student": "zed", "lab": "scan"},  # line 4: not in the roster
            {"student": "bob", "lab": "reductoin"},  # line 5: no such lab
            {"student": "bob", "lab": "scan", "tried": "-1"},  # line 6: below 0
            {"student": "alice", "lab": "reduction"},  # line 7: a second row
            {"student": "bob", "lab": "sort", "measurements": "nan"},  # line 8: not a number
        ]
        path = self.write(rows, header)
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(path, self.entries, self.rubrics)
        errors = caught.exception.errors
        expected = [
            f"{path}:2: column D (4) (machine): 3 is above the item's maximum, 2",
            f"{path}:3: column E (5) (decomposition): 'two' is not a number: give the points earned, 0 to 3",
            f"{path}:4: unknown student 'zed': not in the roster",
            f"{path}:5: unknown lab 'reductoin' (did you mean reduction?)",
            f"{path}:6: column G (7) (tried): -1 is below 0",
            f"{path}:7: alice and reduction have a row already (line 2)",
            f"{path}:8: column H (8) (measurements): 'nan' is not a number",
        ]
        self.assertEqual(len(errors), len(expected), errors)
        for error, start in zip(errors, expected):
            self.assertTrue(error.startswith(start), f"{error!r} does not start with {start!r}")

    def test_header_errors(self):
        path = self.write([{"student": "alice", "lab": "scan", "machin": "1"}])
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(path, self.entries, self.rubrics)
        self.assertIn(f"{path}:1: column C (3) (machin): no rubric has an item 'machin' (did you mean machine?)",
                      str(caught.exception))
        path.write_text("name,points\nalice,3\n")
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(path, self.entries, self.rubrics)
        self.assertIn(":1: the first line must be the sheet's header", str(caught.exception))
        path.write_bytes(b"student,lab\n\xff\n")
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(path, self.entries, self.rubrics)
        self.assertIn("not UTF-8", str(caught.exception))
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(self.tmp / "none.csv", self.entries, self.rubrics)
        self.assertIn("not found", str(caught.exception))

    # An item a lab's rubric lacks must stay empty (or n/a) in that lab's rows.
    def test_item_of_another_rubric(self):
        rubrics = {**self.rubrics, "scan": writeup.parse_rubric(RUBRIC, "test")}
        path = self.write([{"student": "alice", "lab": "scan", "machine": "2", "tried": "1"},
                           {"student": "alice", "lab": "reduction", "tried": "n/a"}])
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(path, self.entries, rubrics)
        self.assertEqual(len(caught.exception.errors), 1)
        self.assertIn(":2: column D (4) (tried): scan's rubric has no item 'tried'", caught.exception.errors[0])
        # The sheet written with such rubrics says n/a there.
        handgrades.write_sheet(self.entries, self.layout, rubrics)
        scan = next(r for r in self.sheet() if r["lab"] == "scan")
        self.assertEqual((scan["tried"], scan["machine"], scan["max"]), ("n/a", "2", "5"))  # what was filled in stays

    def test_spreadsheet_habits(self):
        path = self.write([{"student": "Alice", "lab": "Reduction", "machine": "1,5", "decomposition": " 3 "}])
        text = path.read_text()
        path.write_text("\ufeff" + text + "\n# a note\n,,,\n")  # a byte-order mark, a comment, an empty row
        grades = handgrades.read_sheet(path, self.entries, self.rubrics)
        self.assertEqual(grades["alice", "reduction"].items, {"machine": 1.5, "decomposition": 3.0})


class BatchSheetTest(SheetTestCase):
    """`batch --collect` writes the sheet; `--hand-grades` reads it back or refuses it."""

    def test_collect_writes_and_reads_back(self):
        code, out, err = self.batch("--collect")
        self.assertEqual(code, 1, out + err)  # carol has no report
        sheet = handgrades.sheet_path(self.layout)
        self.assertIn(f"grading sheet: {sheet} (2 rows of write-ups or written answers to grade by hand", out)
        self.assertEqual(len(self.sheet()), 2)
        rows = self.sheet()
        rows[0].update(machine="2", decomposition="3", synchronisation="2", tried="1", measurements="2")
        self.write(rows)
        code, out, err = self.batch("--collect", "--hand-grades", str(sheet))
        book = {r["student"]: r for r in csv.DictReader(io.StringIO(self.layout.gradebook.read_text()))}
        self.assertEqual((book["alice"]["total"], book["alice"]["max"], book["alice"]["hand_graded"]),
                         ("280.0", "330.0", "10.0"))
        self.assertEqual(book["alice"]["reduction"], "100.0")
        self.assertIn("write-up to grade: scan", book["alice"]["status"])
        self.assertEqual(self.sheet()[0]["machine"], "2")  # the collect kept what was filled in

    def test_a_bad_sheet_is_refused_before_anything(self):
        self.batch("--collect")
        before = self.layout.gradebook.read_text()
        rows = self.sheet()
        rows[0]["machine"] = "9"
        sheet = self.write(rows)
        code, out, err = self.batch("--collect", "--hand-grades", str(sheet))
        self.assertEqual(code, 2)
        self.assertIn("the grading sheet cannot be used", err)
        self.assertIn(f"{sheet}:2: column D (4) (machine): 9 is above the item's maximum, 2", err)
        self.assertEqual(self.layout.gradebook.read_text(), before)
        self.assertNotIn("Traceback", err)


if __name__ == "__main__":
    unittest.main()
