"""Graded questions (grader/answers.py): the answers file's parser, the checks, and the
kit's own questions: every lab's template, reference answers, answer key and handout
agree with its manifest and with what the grader does."""

from __future__ import annotations

import json
import re
import tempfile
import unittest
from pathlib import Path

from grader import answers, config, manifest, variants
from grader.answers import Question

KIT = Path(__file__).resolve().parents[2]
LABS = manifest.labs(KIT)
ASKING = [lab for lab in LABS if lab.questions]

NUMBER = Question("count", "a count", "number", 2.0, "key")
BENCH = Question("gbps", "your GB/s", "number", 1.0, "bench", figure="throughput", tolerance=0.15)
TEXT = Question("why", "why", "text", 3.0, "manual")
KEY = {"count": {"value": 47}}


def bench_with(figure: float | None) -> dict:
    return {"workloads": [{"name": "ungraded", "graded": False, "results": [{"role": "student", "throughput": 1.0}]},
                          {"name": "graded", "graded": True, "results": [
                              {"role": "reference", "throughput": 2000.0},
                              {"role": "student", "throughput": figure}]}]}


def grade_text(text: str, questions=(NUMBER, BENCH, TEXT), key=KEY, bench=None, points=None) -> answers.AnswersResult:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.md"
        path.write_text(text, encoding="utf-8")
        return answers.grade(tuple(questions), path, "labs/x/answers.md", key,
                             bench if bench is not None else bench_with(2500.0), points)


def by_id(result: answers.AnswersResult) -> dict[str, dict]:
    return {q["id"]: q for q in result.questions}


class Parsing(unittest.TestCase):
    def test_answers_by_heading(self):
        text = ("# title\nintro\nAnswer: not in a question\n"
                "## count\nHow many?\n\nAnswer: 47 warp-steps\n\n"
                "## why · a title after the id\n<!-- a hint: Answer: no -->\n**Answer:** because\nof the order.\n"
                "## gbps\nAnswer:\n")
        found = answers.parse_answers(text)
        self.assertEqual(found, {"count": "47 warp-steps", "why": "because\nof the order.", "gbps": ""})

    def test_first_answer_line_wins_and_duplicates_keep_the_first(self):
        found = answers.parse_answers("## count\nAnswer: 1\nAnswer: 2\n## count\nAnswer: 3\n")
        self.assertEqual(found["count"], "1\nAnswer: 2")
        self.assertEqual(answers.parse_number(found["count"]), 1.0)

    def test_numbers(self):
        cases = {"47": 47, "  -0.25 ms": -0.25, "1.5e3": 1500, "1,024 threads": 1024, "2^26": 2**26,
                 "`2047`": 2047, "**12**": 12, "about 3 TB/s": 3, ".5": 0.5, "2 ^ 10": 1024}
        for text, value in cases.items():
            self.assertEqual(answers.parse_number(text), value, text)
        for text in ("", "none", "inf", "many"):
            self.assertIsNone(answers.parse_number(text), text)
        self.assertEqual(answers.parse_number("9^9999"), 9)  # no huge powers: the first number is read

    def test_placeholders(self):
        for text in ("", "TODO", " todo ", "...", "`?`"):
            self.assertTrue(answers.is_placeholder(text), text)
        self.assertFalse(answers.is_placeholder("0"))


class Grading(unittest.TestCase):
    def test_correct_wrong_and_by_hand(self):
        result = grade_text("## count\nAnswer: 47\n## gbps\nAnswer: 2400 GB/s\n## why\nAnswer: the order changes\n")
        rows = by_id(result)
        self.assertEqual((rows["count"]["status"], rows["count"]["points"]), (answers.CORRECT, 2.0))
        self.assertEqual((rows["gbps"]["status"], rows["gbps"]["figure"]), (answers.CORRECT, 2500.0))
        self.assertEqual((rows["why"]["status"], rows["why"]["points"]), (answers.MANUAL, 0.0))
        self.assertEqual((result.points, result.max, result.pending), (3.0, 3.0, 3.0))
        self.assertEqual(rows["why"]["answer"], "the order changes")

    def test_wrong_answers_earn_nothing_and_say_why(self):
        result = grade_text("## count\nAnswer: 48\n## gbps\nAnswer: 3000\n## why\nAnswer:\n")
        rows = by_id(result)
        self.assertEqual(rows["count"]["status"], answers.WRONG)
        self.assertEqual(rows["gbps"]["status"], answers.WRONG)
        self.assertIn("2500", rows["gbps"]["why"])  # the student's own figure, not the key
        self.assertEqual(rows["why"]["status"], answers.UNANSWERED)
        self.assertEqual(result.points, 0.0)

    def test_key_tolerances(self):
        entry = {"value": 100.0, "rel_tolerance": 0.05}
        self.assertTrue(answers.key_matches(104.9, entry))
        self.assertFalse(answers.key_matches(105.1, entry))
        self.assertTrue(answers.key_matches(102, {"value": 100, "abs_tolerance": 2}))
        self.assertTrue(answers.key_matches(0.1 + 0.2, {"value": 0.3}))  # rounding is not a wrong answer

    def test_missing_file_heading_or_number(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = answers.grade((NUMBER,), Path(tmp) / "answers.md", "x", KEY, None)
        self.assertIn("not found", result.note)
        self.assertEqual(result.questions[0]["status"], answers.UNANSWERED)
        result = grade_text("## count\nAnswer: forty-seven\n")
        self.assertEqual(by_id(result)["count"]["status"], answers.WRONG)
        self.assertIn("no number", by_id(result)["count"]["why"])
        self.assertEqual(by_id(grade_text("## count\nno answer line\n"))["count"]["status"], answers.UNANSWERED)

    def test_no_bench_or_no_key_is_unchecked_not_wrong(self):
        result = grade_text("## count\nAnswer: 47\n## gbps\nAnswer: 2500\n", key={}, bench={})
        rows = by_id(result)
        self.assertEqual(rows["count"]["status"], answers.UNCHECKED)
        self.assertEqual(rows["gbps"]["status"], answers.UNCHECKED)
        for odd in (None, "fast", float("nan")):
            self.assertEqual(by_id(grade_text("## gbps\nAnswer: 2500\n", bench=bench_with(odd)))["gbps"]["status"],
                             answers.UNCHECKED, odd)

    # The student controls the file, not what it is worth: headings, points or a key in it change nothing.
    def test_the_file_cannot_change_the_questions(self):
        text = ('## count\nAnswer: 47\n## count\nAnswer: 47\n## extra\nAnswer: 1\n'
                '{"questions": [{"id": "count", "points": 100}]}\n## why\nAnswer: ' + "x" * 10000 + "\n")
        result = grade_text(text)
        self.assertEqual((result.points, result.max), (2.0, 3.0))
        self.assertEqual([q["id"] for q in result.questions], ["count", "gbps", "why"])
        self.assertLessEqual(len(by_id(result)["why"]["answer"]), answers.MAX_ANSWER_CHARS + 10)

    def test_huge_or_binary_file(self):
        result = grade_text("## count\nAnswer: 47\n" + "\x00\xff" * (answers.MAX_FILE_BYTES // 2))
        self.assertEqual(by_id(result)["count"]["status"], answers.CORRECT)
        self.assertIn("only its beginning", result.note)

    def test_points_from_the_config(self):
        result = grade_text("## count\nAnswer: 47\n", points={"count": 5, "why": 0})
        self.assertEqual((result.points, result.max, result.pending), (5.0, 6.0, 0.0))


class Manifests(unittest.TestCase):
    def test_bad_questions_are_refused(self):
        bad = [{"id": "a b"}, {"id": "x", "kind": "essay"}, {"id": "x", "points": -1},
               {"id": "x", "kind": "text", "check": "key"}, {"id": "x", "check": "bench", "figure": "speed"},
               {"id": "x", "tolerance": 2}, "x"]
        for entry in bad:
            with self.assertRaises(ValueError, msg=entry):
                answers.parse_questions([entry], "lab.json")
        with self.assertRaisesRegex(ValueError, "twice"):
            answers.parse_questions([{"id": "x"}, {"id": "x"}], "lab.json")

    def test_bad_key_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "answer_key.json"
            self.assertEqual(answers.read_key(path), {})
            for text in ("{", '{"schema": "other"}', '{"schema": "labkit-answer-key", "version": 1, "answers": []}',
                         '{"schema": "labkit-answer-key", "version": 1, "answers": {"a": {"value": "47"}}}'):
                path.write_text(text)
                with self.assertRaises(answers.AnswerKeyError, msg=text):
                    answers.read_key(path)


def _grading_rows(text: str) -> dict[str, str]:
    """The handout's '## Grading' table: part -> points cell."""
    section = text.split("\n## Grading\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] and not set(cells[0]) <= set(":-"):
            rows[cells[0]] = cells[1]
    return rows


class KitQuestions(unittest.TestCase):
    """The kit's labs: template, reference answers, key and handout agree with the manifest."""

    def test_every_lab_asks_questions(self):
        self.assertEqual([lab.name for lab in LABS if not lab.questions], [])

    def test_template_is_unanswered_and_lists_every_question(self):
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                path = KIT / lab.answers_file
                found = answers.parse_answers(path.read_text(encoding="utf-8"))
                self.assertEqual(sorted(found), sorted(q.id for q in lab.questions))
                self.assertTrue(all(answers.is_placeholder(a) for a in found.values()), found)

    def test_reference_answers_match_the_key(self):
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                folder = KIT / "solutions" / lab.name
                if not folder.is_dir():
                    self.skipTest("no solutions/ in this copy of the kit")
                key = answers.read_key(folder / "answer_key.json")
                given = answers.parse_answers((folder / "answers.md").read_text(encoding="utf-8"))
                for q in lab.questions:
                    self.assertFalse(answers.is_placeholder(given.get(q.id, "")), f"{q.id} unanswered")
                    if q.check == "key":
                        self.assertIn(q.id, key, f"{q.id} has no value in the key")
                        self.assertTrue(answers.key_matches(answers.parse_number(given[q.id]), key[q.id]), q.id)
                    elif q.check == "bench":
                        self.assertIsNotNone(answers.parse_number(given[q.id]), q.id)
                    else:
                        self.assertIn("rubric", key.get(q.id, {}), f"{q.id}: the key has no rubric")
                self.assertEqual(sorted(set(key) - {q.id for q in lab.questions}), [], "key entries of no question")

    def test_keys_stay_out_of_the_students_folders(self):
        self.assertEqual(sorted(p.relative_to(KIT).as_posix() for p in (KIT / "labs").glob("**/answer_key.json")), [])

    def test_handout_grading_matches_the_grader(self):
        settings = config.load(None)
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                text = (KIT / "handouts" / f"{lab.name}.md").read_text(encoding="utf-8")
                rows = _grading_rows(text)
                lab_settings = settings.lab(lab.name)
                checked = sum(q.points for q in lab.questions if q.check != "manual")
                by_hand = sum(q.points for q in lab.questions if q.check == "manual")
                self.assertEqual(rows.get("correctness"), f"{lab_settings.correctness_points:g}")
                self.assertEqual(rows.get("performance"), f"{lab_settings.performance_points:g}")
                self.assertEqual(rows.get("graded questions"), f"{checked:g}")
                self.assertEqual(rows.get("written answers"), f"{by_hand:g}")
                steps = [v for v in lab.required_variants if v.kind == variants.STEP]
                fixes = [v for v in lab.required_variants if v.kind == variants.FIX]
                parts = [v for v in lab.required_variants if v.kind == variants.PART]
                self.assertEqual(rows.get("lecture steps"), f"{sum(v.points for v in steps):g}" if steps else None)
                self.assertEqual(rows.get("find the bug"), f"{sum(v.points for v in fixes):g}" if fixes else None)
                self.assertEqual(rows.get("further parts"), f"{sum(v.points for v in parts):g}" if parts else None)
                for variant in lab.required_variants:
                    self.assertIn(f"`{variant.name}`", text, f"the handout does not name the step {variant.name}")
                performance = next(line for line in text.splitlines() if line.startswith("| performance |"))
                # Every lab grades several shapes: the geometric mean r of t_yours / t_reference.
                self.assertIn("geometric mean r", performance)
                self.assertIn(f"points × {lab_settings.full_credit_ratio:g} / r", performance)
                self.assertIn(f"`{lab_settings.reference_variant}`", performance)
                self.assertIn("confidence interval", performance)
                for q in lab.questions:
                    self.assertTrue(f"`{q.id}`" in text, f"the handout does not name the graded question {q.id}")

    def test_handouts_follow_one_outline(self):
        # Objectives and deliverables first, then the task and its steps, grading,
        # questions, and the hints last (issue: handouts in the form courses use).
        outline = ["## Objectives and deliverables", "## Your task", "### The lecture's steps", "## Grading",
                   "## Questions", "## Hints and common mistakes"]
        for lab in manifest.by_name(KIT).values():
            with self.subTest(lab=lab.name):
                headings = (KIT / "handouts" / f"{lab.name}.md").read_text(encoding="utf-8").splitlines()
                positions = [headings.index(h) if h in headings else -1 for h in outline]
                self.assertNotIn(-1, positions, f"missing: {[h for h, p in zip(outline, positions) if p < 0]}")
                self.assertEqual(positions, sorted(positions), "the handout's sections are out of order")

    def test_instructors_rubric_table_matches_the_manifests(self):
        text = (KIT / "handouts" / "instructors.md").read_text(encoding="utf-8")
        settings = config.load(None)
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                auto = [q for q in lab.questions if q.check != "manual"]
                hand = [q for q in lab.questions if q.check == "manual"]
                row = (f"| {lab.name} | `{settings.lab(lab.name).reference_variant}` "
                       f"| {sum(q.points for q in auto):g}: {', '.join(f'`{q.id}`' for q in auto)} "
                       f"| {sum(q.points for q in hand):g}: {', '.join(f'`{q.id}`' for q in hand)} |")
                self.assertIn(row, text.splitlines())

    def test_instructors_example_config_loads(self):
        text = (KIT / "handouts" / "instructors.md").read_text(encoding="utf-8")
        block = text.split("## 7.", 1)[1].split("    [defaults]", 1)[1].split("\nThe required steps are", 1)[0]
        toml = "[defaults]\n" + "\n".join(line[4:] for line in block.splitlines())
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "grader.toml"
            path.write_text(toml)
            loaded = config.load(path)
        self.assertEqual(loaded.lab("sort").question_points, {"counts_8bit": 3, "unstable_scatter": 0})
        self.assertFalse(loaded.lab("electrostatics").answers)
        self.assertEqual(loaded.lab("scan").performance_curve, "cs149")


class ReferenceVariants(unittest.TestCase):
    """Each lab is graded against a variant its reference registers for the graded
    function (the manifest's first), and not a slow one the bench skips at full size."""

    def test_graded_variant_is_registered(self):
        for lab in LABS:
            with self.subTest(lab=lab.name):
                folder = KIT / "solutions" / lab.name
                if not folder.is_dir():
                    self.skipTest("no solutions/ in this copy of the kit")
                if lab.reference_variant == "default":
                    continue  # every library registers its interface functions as "default"
                code = "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.cu*")))
                registered = re.findall(r"LAB_REGISTER_VARIANT\(\s*" + re.escape(lab.functions[0])
                                        + r'\s*,\s*"([^"]+)"', code)
                self.assertIn(lab.reference_variant, registered)
                self.assertFalse(any(re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), lab.reference_variant)
                                     for pattern in lab.slow_variants), lab.slow_variants)


if __name__ == "__main__":
    unittest.main()
