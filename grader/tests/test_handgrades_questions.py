"""Written answers ("check": "manual") on the grading sheet (instructor/handgrades.py): one row
per student, lab and question answered, with the answer's start and its points; read back
into the gradebook (pending points become earned), bad rows refused with their line."""

from __future__ import annotations

import csv
import io
import json
import unittest

from grader import manifest
from grader.instructor import class_outputs, handgrades
from grader.instructor.gradebook import write_gradebook
from grader.tests.test_writeup import KIT, SheetTestCase

QUESTIONS = {"reduction": {"divergence": 2.0, "why_tree": 1.0}}


def question(qid: str, answer: str, points: float, status: str = "manual") -> dict:
    return {"id": qid, "title": qid, "kind": "text", "check": "manual", "status": status, "points": 0.0,
            "max": points, "answer": answer, "why": ""}


class WrittenAnswers(SheetTestCase):
    def setUp(self) -> None:
        super().setUp()
        report = self.layout.report("alice")
        data = json.loads(report.read_text())
        for lab in data["labs"]:
            if lab["lab"] == "reduction":
                lab["answers"] = {"points": 0.0, "max": 0.0, "pending": 3.0, "file": "labs/reduction/answers.md",
                                  "questions": [question("divergence", "=HYPERLINK(\"x\") warps\nsplit", 2.0),
                                                question("why_tree", "", 1.0, status="unanswered")]}
        report.write_text(json.dumps(data))

    def question_rows(self) -> list[dict[str, str]]:
        return [row for row in self.sheet() if row.get("question")]

    def test_one_row_per_answered_question(self):
        path, waiting = handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        header = path.read_text().splitlines()[0]
        self.assertTrue(header.endswith(",comment,question,points,answer"), header)
        [row] = self.question_rows()  # the unanswered one earns nothing: no row
        self.assertEqual((row["student"], row["lab"], row["question"], row["max"], row["points"]),
                         ("alice", "reduction", "divergence", "2", ""))
        self.assertEqual(row["answer"], "'=HYPERLINK(\"x\") warps split")  # one line, never a formula
        self.assertEqual((row["machine"], row["tried"]), ("n/a", "n/a"))
        self.assertEqual(waiting, 3)  # two write-ups and one answer

    def test_long_answers_are_cut(self):
        self.assertEqual(len(handgrades.excerpt("word " * 1000)), handgrades.EXCERPT_CHARS)
        self.assertEqual(handgrades.excerpt("@cmd"), "'@cmd")
        self.assertEqual(handgrades.excerpt("a -1 b"), "a -1 b")

    def test_read_back_into_the_gradebook(self):
        handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        rows = self.sheet()
        for row in rows:
            if row.get("question") == "divergence":
                row["points"] = "1.5"
        path = self.write(rows)
        # Written again: the mark stays.
        handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        self.assertEqual(self.question_rows()[0]["points"], "1.5")
        grades = handgrades.read_sheet(path, self.entries, self.rubrics, QUESTIONS)
        self.assertEqual(grades["alice", "reduction"].questions, {"divergence": 1.5})
        book = {r["student"]: r for r in write_gradebook(self.entries, self.layout, None, None,
                                                         hand=lambda r: handgrades.apply(r, grades))}
        alice = book["alice"]
        # 270 automatic + 1.5 earned; the maximum gains the three write-ups (3 x 10) and both questions (2 + 1).
        self.assertEqual((alice["total"], alice["max"], alice["hand_graded"]), (271.5, 333.0, 1.5))
        self.assertEqual(alice["labs"]["reduction"], 91.5)
        self.assertNotIn("written answers to grade", alice["status"])
        self.assertIn("write-up to grade: reduction, scan", alice["status"])

    def test_an_answer_not_graded_yet_waits(self):
        handgrades.write_sheet(self.entries, self.layout, self.rubrics)
        grades = handgrades.read_sheet(handgrades.sheet_path(self.layout), self.entries, self.rubrics, QUESTIONS)
        self.assertEqual(grades["alice", "reduction"].ungraded, ["divergence"])
        book = {r["student"]: r for r in write_gradebook(self.entries, self.layout, None, None,
                                                         hand=lambda r: handgrades.apply(r, grades))}
        self.assertIn("written answers to grade: reduction", book["alice"]["status"])
        self.assertEqual(book["alice"]["total"], 270.0)

    def test_bad_rows_name_their_line(self):
        header = ["student", "lab", "max", "machine", "decomposition", "synchronisation", "tried", "measurements",
                  "comment", "question", "points", "answer"]
        rows = [
            {"student": "alice", "lab": "reduction", "question": "divergence", "points": "3"},  # 2: above 2
            {"student": "alice", "lab": "reduction", "question": "why_tree", "points": "half"},  # 3: no number
            {"student": "alice", "lab": "reduction", "question": "divergense", "points": "1"},  # 4: no such question
            {"student": "alice", "lab": "reduction", "question": "divergence", "points": "1"},  # 5: a second row
            {"student": "alice", "lab": "scan", "question": "divergence", "points": "1"},  # 6: scan has none here
            {"student": "bob", "lab": "reduction", "question": "why_tree", "points": "-1"},  # 7: below 0
            {"student": "bob", "lab": "reduction", "question": "divergence", "machine": "2"},  # 8: an item's cell
        ]
        path = self.write(rows, header)
        with self.assertRaises(handgrades.HandGradeError) as caught:
            handgrades.read_sheet(path, self.entries, self.rubrics, QUESTIONS)
        expected = [
            f"{path}:2: column K (11) (points): 3 is above question divergence's maximum, 2",
            f"{path}:3: column K (11) (points): 'half' is not a number",
            f"{path}:4: reduction has no question 'divergense' graded by hand (did you mean divergence?)",
            f"{path}:5: alice, reduction and divergence have a row already (line 2)",
            f"{path}:6: unknown lab 'scan'",
            f"{path}:7: column K (11) (points): -1 is below 0",
            f"{path}:8: column D (4) (machine): the row of question divergence grades no write-up item",
        ]
        errors = caught.exception.errors
        self.assertEqual(len(errors), len(expected), errors)
        for error, start in zip(errors, expected):
            self.assertTrue(error.startswith(start), f"{error!r} does not start with {start!r}")

    def test_batch_reads_the_kits_questions(self):
        asked = class_outputs.manual_questions(KIT)
        lab = manifest.by_name(KIT)["reduction"]
        self.assertEqual(asked["reduction"], {q.id: q.points for q in lab.questions if q.check == "manual"})
        top = asked["reduction"]["atomic_runs_differ"]
        sheet = handgrades.sheet_path(self.layout)
        rows = [{"student": "alice", "lab": "reduction", "question": "atomic_runs_differ", "points": f"{top + 1:g}"}]
        self.write(rows, ["student", "lab", "max", "comment", "question", "points", "answer"])
        code, out, err = self.batch("--collect", "--hand-grades", str(sheet))
        self.assertEqual(code, 2, out + err)
        self.assertIn(f"{sheet}:2: column F (6) (points): {top + 1:g} is above question atomic_runs_differ's "
                      f"maximum, {top:g}", err)
        rows[0]["points"] = f"{top:g}"
        self.write(rows, ["student", "lab", "max", "comment", "question", "points", "answer"])
        code, out, err = self.batch("--collect", "--hand-grades", str(sheet))
        self.assertNotIn("cannot be used", err)
        book = {r["student"]: r for r in csv.DictReader(io.StringIO(self.layout.gradebook.read_text()))}
        self.assertEqual(book["alice"]["hand_graded"], "0.0")  # alice's report holds no answer to that question
        self.assertIn("alice reduction atomic_runs_differ: points in the sheet, but the student's report holds no "
                      "answer to that question: not added", out)


if __name__ == "__main__":
    unittest.main()
