"""Tests of grader/tests/class_scale.py, the class-timing script, with batch's fake grader
(test_batch.FAKE_GRADER) and a fake nvidia-smi listing two GPUs: one run per --gpus, the
runs kept apart, and the table's figures read from batch's timing.json."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import manifest
from grader.instructor import batch
from grader.tests import class_scale, onefile
from grader.tests.helpers import write_script
from grader.tests.test_batch import FAKE_GRADER, fake_smi


class ClassScaleTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        fake = write_script(self.tmp / "fake_grader.py", FAKE_GRADER)
        fake_smi(self.tmp / "tools", ["0", "1"])
        env = {batch.GRADER_ENV: f"{sys.executable} {fake}", "FAKE_CALLS": str(self.tmp / "calls"),
               "PATH": str(self.tmp / "tools"), "FAKE_GRADE_S": "0.2"}
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)
        for name in ("CUDA_VISIBLE_DEVICES", "LABKIT_PRISTINE"):
            os.environ.pop(name, None)

    def main(self, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = class_scale.main(list(args))
        return code, out.getvalue()

    # Each submission the fake grader sees asks for a score (the generated class has real
    # .cu files; the fake reads behaviour.txt).
    def make_class(self, out: Path, students: int, labs: list[str], mix: tuple[int, ...]) -> Path:
        roster = REAL_MAKE_CLASS(out, students, labs, mix)
        for folder in (out / "submissions").iterdir():
            (folder / "behaviour.txt").write_text("score 100")
        return roster

    def test_one_run_per_gpu_set(self):
        out = self.tmp / "class"
        with mock.patch.object(class_scale, "make_class", self.make_class):
            code, text = self.main("--students", "3", "--out", str(out), "--labs", "vectorAdd", "reduction",
                                   "--gpus", "0", "--gpus", "0,1")
        self.assertEqual(code, 0, text)
        parts = json.loads((out / "class_scale.json").read_text())
        self.assertEqual([(part["gpus"], part["students"], part["used_gpus"]) for part in parts],
                         [("0", 3, ["0"]), ("0,1", 3, ["0", "1"])])
        # Each run graded every student; its gradebook and reports are kept apart.
        for kept in ("run1-gpus-0", "run2-gpus-0_1"):
            self.assertEqual(len(list((out / kept / "reports").glob("*.json"))), 3, kept)
            self.assertTrue((out / kept / "gradebook.csv").is_file())
        calls = (self.tmp / "calls").read_text().split()
        self.assertEqual(sorted(calls), sorted(["student000", "student001", "student002"] * 2))
        # The table: one row per run, the busy time of each GPU it used.
        rows = text[text.index("students labs"):text.index("grader s/st")].splitlines()[:4]
        self.assertEqual(len(rows), 4, text)  # the header, two runs, the legend
        idle = r", waited \d+ s, idle at end \d+ s"
        self.assertRegex(rows[1], r"^\s+3\s+2\s+0\s+\d+\s+\d+\s+[\d.]+\s+1\.000x\s+[\d.]+\s+[\d.]+\s+\d+ \(\d+ first\)\s+\d+  "
                                  rf"0: \d+ s of \d+ s \(\d+%\), 3 st\.{idle}$")
        self.assertRegex(rows[2], r"^\s+3\s+2\s+0,1\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+x\s+[\d.]+\s+[\d.]+\s+\d+ \(\d+ first\)\s+\d+  "
                                  rf"0: .*, \d st\.{idle}; 1: .*, \d st\.{idle}$")
        self.assertTrue(rows[3].startswith("(busy s/st: "), rows[3])
        # Where each student's grading went, per GPU: the fake's report says tests 0.1 s and
        # timing 0.05 s; the grader process took at least its 0.2 s sleep.
        stages = text[text.index("grader s/st"):].splitlines()
        self.assertRegex(stages[1], r"^\s+0\s+0\s+3\s+[\d.]+\s+0\.00\s+0\.00\s+0\.10\s+0\.05\s+[\d.]+\s+-$")
        self.assertEqual(sorted(line.split()[1] for line in stages[2:4]), ["0", "1"])
        self.assertTrue(all(line.split()[0] == "0,1" for line in stages[2:4]), stages)
        legend = next(i for i, line in enumerate(stages) if line.startswith("(per student: "))
        # The same three students on both sets: the fake's stages and lab phases do not change
        # (then, where both GPUs graded some, a line per GPU).
        self.assertRegex(stages[legend + 1], r"^same students, GPUs 0,1 against GPUs 0 \(3 graded by both\): grader [+-][\d.]+ "
                                     r"s/st \([+-][\d.]+%\); files \+0\.00, build \+0\.00, tests \+0\.00, timing "
                                     r"\+0\.00, rest [+-][\d.]+$")
        self.assertRegex(stages[legend + 2], r"^  lab phases that changed most, s/st: (\w+ (tests|bench) \+0\.00, ){3}")
        self.assertEqual(set(parts[0]["per_student"]), {"student000", "student001", "student002"})
        self.assertEqual(parts[0]["per_student"]["student000"]["labs"]["reduction"], {"tests": 0.05, "bench": 0.025})
        self.assertEqual(sum(one["students"] for one in parts[1]["stages"].values()), 3)
        for one in parts[0]["stages"].values():
            self.assertGreaterEqual(one["grader_s"], 0.2 * one["students"])
        second = parts[1]
        self.assertEqual(sum(one["students"] for one in second["per_gpu"]), 3)
        self.assertEqual(second["compiles"]["students"], 3)
        for one in second["per_gpu"]:
            self.assertGreaterEqual(one["busy_s"], 0.2 * one["students"] - 0.05)
            self.assertAlmostEqual(one["busy_s"] + one["waited_s"] + one["tail_s"], one["of_s"], delta=0.3)

    # Two graders on one GPU (0:2): batch gets --jobs 2 on GPU 0; the row says so.
    def test_graders_per_gpu(self):
        out = self.tmp / "class"
        with mock.patch.object(class_scale, "make_class", self.make_class):
            code, text = self.main("--students", "3", "--out", str(out), "--labs", "vectorAdd", "--gpus", "0",
                                   "--gpus", "0:2")
        self.assertEqual(code, 0, text)
        self.assertIn("$ CUDA_VISIBLE_DEVICES=0 ", text)
        self.assertRegex(text, r"\$ CUDA_VISIBLE_DEVICES=0 .* --resume --jobs 2")
        parts = json.loads((out / "class_scale.json").read_text())
        self.assertEqual([(part["gpus"], part["students"], part["used_gpus"]) for part in parts],
                         [("0", 3, ["0"]), ("0:2", 3, ["0"])])
        self.assertTrue((out / "run2-gpus-0x2" / "gradebook.csv").is_file())
        rows = text[text.index("students labs"):].splitlines()
        self.assertRegex(rows[2], r"^\s+3\s+1\s+0:2\s")

    def test_parse_spec(self):
        self.assertEqual(class_scale.parse_spec("0,1"), ("0,1", 1))
        self.assertEqual(class_scale.parse_spec("0:2"), ("0", 2))
        self.assertEqual(class_scale.parse_spec("auto"), ("auto", 1))
        self.assertEqual(class_scale.parse_spec("0:"), ("0", 1))
        for bad in ("", ":2", "0:0", "a", "0,x", "0:-1"):
            with self.assertRaises(ValueError, msg=bad):
                class_scale.parse_spec(bad)

    # In parts: --limit grades some, --resume the rest; the table adds them up.
    def test_parts(self):
        out = self.tmp / "class"
        with mock.patch.object(class_scale, "make_class", self.make_class):
            code, text = self.main("--students", "3", "--out", str(out), "--labs", "vectorAdd", "--gpus", "0,1",
                                   "--limit", "2")
            self.assertEqual(code, 0, text)
            self.assertIn("(1 to go on --gpus 0,1: --resume)", text)
            code, text = self.main("--students", "3", "--out", str(out), "--labs", "vectorAdd", "--gpus", "0,1",
                                   "--resume")
        self.assertEqual(code, 0, text)
        self.assertRegex(text, r"\n\s+3\s+1\s+0,1 .*\(2 parts\)")
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(io.StringIO()):
            class_scale.main(["--out", str(out), "--gpus", "0", "--limit", "0"])

    # Two GPU sets in sittings: a set is finished (and its run kept) before the next starts,
    # and the table is the same as in one sitting: a row per set, every student in each.
    def test_parts_over_gpu_sets(self):
        out = self.tmp / "class"
        common = ["--students", "3", "--out", str(out), "--labs", "vectorAdd", "--gpus", "0", "--gpus", "0,1"]
        with mock.patch.object(class_scale, "make_class", self.make_class):
            code, text = self.main(*common, "--limit", "3")
            self.assertEqual(code, 0, text)
            self.assertIn("run 1 kept in", text)
            self.assertIn("(3 to go on --gpus 0,1: --resume)", text)
            self.assertEqual([p["gpus"] for p in json.loads((out / "class_scale.json").read_text())], ["0"])
            code, text = self.main(*common, "--resume", "--limit", "2")  # part of the second set
            self.assertEqual(code, 0, text)
            self.assertIn("--gpus 0: all 3 students are graded", text)
            self.assertIn("(1 to go on --gpus 0,1: --resume)", text)
            self.assertFalse((out / "run2-gpus-0_1").exists())  # not finished: nothing kept yet
            code, text = self.main(*common, "--resume")
        self.assertEqual(code, 0, text)
        self.assertIn("run 2 kept in", text)
        parts = json.loads((out / "class_scale.json").read_text())
        self.assertEqual([(p["gpus"], p["students"]) for p in parts], [("0", 3), ("0,1", 2), ("0,1", 1)])
        for kept in ("run1-gpus-0", "run2-gpus-0_1"):
            self.assertEqual(len(list((out / kept / "reports").glob("*.json"))), 3, kept)
        self.assertRegex(text, r"\n\s+3\s+1\s+0\s+\d+ .*1\.000x")
        self.assertRegex(text, r"\n\s+3\s+1\s+0,1 .*\(2 parts\)")
        calls = (self.tmp / "calls").read_text().split()
        self.assertEqual(sorted(calls), sorted(["student000", "student001", "student002"] * 2))


# The class: each lab's share of right files (the reference as one file, with its answers),
# skeletons and broken files as --mix says, spread so that students get mixes; every lab.
class MakeClassTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.out = Path(tmp.name)

    def test_kinds_for(self):
        self.assertEqual(class_scale.kinds_for(5, (60, 20, 20)), ["right", "skeleton", "right", "broken", "right"])
        for students, mix, counts in ((20, (60, 20, 20), (12, 4, 4)), (7, (60, 20, 20), (4, 2, 1)),
                                      (3, (0, 50, 50), (0, 2, 1)), (4, (100, 0, 0), (4, 0, 0)), (1, (34, 33, 33), (1, 0, 0))):
            kinds = class_scale.kinds_for(students, mix)
            self.assertEqual(tuple(kinds.count(kind) for kind in class_scale.KINDS), counts, (students, mix))

    def test_parse_mix(self):
        self.assertEqual(class_scale.parse_mix("50,30,20"), (50, 30, 20))
        for bad in ("60,20", "60,20,30", "a,b,c", "120,-10,-10"):
            with self.assertRaises(argparse.ArgumentTypeError):
                class_scale.parse_mix(bad)

    @unittest.skipUnless((class_scale.KIT / "solutions").is_dir(), "no solutions/ in this copy of the kit")
    def test_every_lab_mixed(self):
        labs = manifest.names(class_scale.KIT)
        with contextlib.redirect_stdout(io.StringIO()) as said:
            roster = class_scale.make_class(self.out, 10, labs, (60, 20, 20))
        rows = roster.read_text().splitlines()
        self.assertEqual(len(rows), 11)
        info = json.loads((self.out / "class.json").read_text())
        self.assertEqual(info["totals"], {"right": 60, "skeleton": 20, "broken": 20})
        self.assertIn("class: 10 students x 10 labs: 60 right, 20 skeleton, 20 broken (--mix 60,20,20", said.getvalue())
        right = {lab: onefile.one_file(class_scale.KIT, lab) for lab in labs}
        mixes = set()
        for lab in labs:
            kinds = [info["students"][f"student{k:03d}"][lab] for k in range(10)]
            self.assertEqual((kinds.count("right"), kinds.count("skeleton"), kinds.count("broken")), (6, 2, 2), lab)
            skeleton = (class_scale.KIT / "labs" / lab / f"{lab}.cu").read_text()
            for k, kind in enumerate(kinds):
                folder = self.out / "submissions" / f"student{k:03d}" / "labs" / lab
                text = (folder / f"{lab}.cu").read_text()
                expected = {"right": right[lab], "skeleton": skeleton,
                            "broken": class_scale.BROKEN.format(lab=lab)}[kind]
                self.assertEqual(text, expected, (lab, k, kind))
                answers = class_scale.KIT / ("solutions" if kind == "right" else "labs") / lab / "answers.md"
                self.assertEqual((folder / "answers.md").read_text(), answers.read_text(), (lab, k, kind))
        for k in range(10):  # as many students as labs: each student hands in the class's mix, in another order
            own = [info["students"][f"student{k:03d}"][lab] for lab in labs]
            self.assertEqual((own.count("right"), own.count("skeleton"), own.count("broken")), (6, 2, 2), k)
            mixes.add(tuple(own))
        self.assertGreater(len(mixes), 1)

    def test_bad_mix_on_the_command_line(self):
        err = io.StringIO()
        with self.assertRaises(SystemExit), contextlib.redirect_stderr(err):
            class_scale.main(["--out", str(self.out / "class"), "--mix", "70,20"])
        self.assertIn("give three whole percentages that add up to 100", err.getvalue())


# The table from parts' figures: the idle seconds added up over the parts and the GPUs, the
# compile seconds per student over every student compiled; "?" where a part (written by an
# older batch) does not tell them.
class TableTest(unittest.TestCase):
    @staticmethod
    def part(gpus: str, students: int, grading_s: float, per_gpu: list[dict], compiles: dict | None) -> dict:
        return {"gpus": gpus, "exit": 0, "wall_s": grading_s + 2, "students": students, "kit_s": 2.0,
                "grading_s": grading_s, "per_gpu": per_gpu, "compiles": compiles}

    def test_idle_columns(self):
        one = self.part("0", 12, 147.2, [{"gpu": "0", "busy_s": 144.3, "of_s": 147.2, "students": 12,
                                          "waited_s": 2.4, "first_wait_s": 2.4, "tail_s": 0.5}],
                        {"students": 12, "per_student_s": 3.5, "max_s": 5.0})
        first = self.part("0,1", 8, 50.0, [{"gpu": "0", "busy_s": 48.0, "of_s": 50.0, "students": 4, "waited_s": 1.5,
                                            "first_wait_s": 1.5, "tail_s": 0.5},
                                           {"gpu": "1", "busy_s": 40.0, "of_s": 50.0, "students": 4, "waited_s": 6.0,
                                            "first_wait_s": 2.0, "tail_s": 4.0}],
                          {"students": 8, "per_student_s": 4.0, "max_s": 6.0})
        second = self.part("0,1", 4, 30.0, [{"gpu": "0", "busy_s": 25.0, "of_s": 30.0, "students": 2, "waited_s": 1.0,
                                             "first_wait_s": 1.0, "tail_s": 4.0},
                                            {"gpu": "1", "busy_s": 28.0, "of_s": 30.0, "students": 2, "waited_s": 1.0,
                                             "first_wait_s": 1.0, "tail_s": 1.0}],
                           {"students": 4, "per_student_s": 7.0, "max_s": 9.0})
        both = class_scale.combine([first, second])
        self.assertEqual(both["per_gpu"]["1"], {"busy_s": 68.0, "of_s": 80.0, "students": 6, "waited_s": 7.0,
                                                "first_wait_s": 3.0, "tail_s": 5.0})
        self.assertEqual((both["compiled"], both["compile_s"], both["compile_max_s"]), (12, 60.0, 9.0))
        lines = class_scale.table([class_scale.combine([one]), both], 2).splitlines()
        self.assertIn("busy s/st compile s/st waited for compiles s idle at end s", lines[0])
        self.assertRegex(lines[1], r"^\s+12\s+2\s+0\s+149\s+2\s+12\.3\s+1\.000x\s+12\.0\s+3\.5\s+2 \(2 first\)\s+0  "
                                   r"0: 144 s of 147 s \(98%\), 12 st\., waited 2 s, idle at end 0 s$")
        # 12.3 / 6.7 s per student; (73 + 68) s busy / 12 students; 60 s / 12 compiles; 2.5 + 7 s waited, 1.5 + 3 s of it first; 4.5 + 5 s at the end.
        self.assertRegex(lines[2], r"^\s+12\s+2\s+0,1\s+84\s+4\s+6\.7\s+1\.840x\s+11\.8\s+5\.0\s+10 \(6 first\)\s+10  "
                                   r"0: 73 s of 80 s \(91%\), 6 st\., waited 2 s, idle at end 4 s; "
                                   r"1: 68 s of 80 s \(85%\), 6 st\., waited 7 s, idle at end 5 s   \(2 parts\)$")
        # A part from an older batch: no idle figures, no compiles (busy: 173.3 s / 15 students).
        old = self.part("0", 3, 30.0, [{"gpu": "0", "busy_s": 29.0, "of_s": 30.0, "students": 3}], None)
        mixed = class_scale.combine([old, one])
        self.assertIsNone(mixed["per_gpu"]["0"]["waited_s"])
        row = class_scale.table([mixed], 2).splitlines()[1]
        self.assertRegex(row, r"1\.000x\s+11\.6\s+3\.5\s+\?\s+\?  0: 173 s of 177 s \(98%\), 15 st\.   \(2 parts\)$")

    def test_speedup_short_of_a_threshold_is_not_rounded_up_to_it(self):
        # 478.3 s and 252.3 s for the same 32 students: 1.8958x, which two decimals print as 1.90x.
        one = self.part("0", 32, 478.3, [{"gpu": "0", "busy_s": 474.2, "of_s": 478.3, "students": 32}], None)
        two = self.part("0,1", 32, 252.3, [{"gpu": "0", "busy_s": 239.6, "of_s": 252.3, "students": 16},
                                           {"gpu": "1", "busy_s": 246.7, "of_s": 252.3, "students": 16}], None)
        lines = class_scale.table([class_scale.combine([one]), class_scale.combine([two])], 2).splitlines()
        self.assertRegex(lines[2], r"\s7\.9\s+1\.896x\s")
        self.assertNotIn("1.90x", lines[2])


    # The same students on two GPU sets: per student, what grew, from their own figures.
    # The processors' load: each student's mean over its report's samples, and per GPU the
    # mean over its students that have one.
    def test_cpu_busy(self):
        self.assertEqual(class_scale.mean_busy({"samples": [[0.5, 0.5], [1.0, 1.0], [1.5, 2.0], "x", [2.0, True]]}),
                         0.75)
        for load in (None, {}, {"samples": []}, {"samples": "busy"}):
            self.assertIsNone(class_scale.mean_busy(load))
        students = {f"s{k}": {"gpu": "0", "grader_s": 10.0, "stages": {"tests": 6.0, "timing": 3.0}, "labs": {},
                              "cpu_busy": busy} for k, busy in enumerate((0.5, 0.7, None))}
        per_gpu = class_scale.stage_seconds(students)
        self.assertEqual((per_gpu["0"]["students"], per_gpu["0"]["cpu_students"]), (3, 2))
        self.assertAlmostEqual(per_gpu["0"]["cpu_busy"], 1.2)
        table = class_scale.stage_table({"0": [{"stages": per_gpu}]}).splitlines()
        self.assertTrue(table[0].endswith("rest s/st cpu busy"), table[0])
        self.assertTrue(table[1].endswith("1.00      60%"), table[1])

    def test_growth_lines(self):
        def student(gpu, grader, tests, timing, reduction_tests, reduction_sanitizer, vector_tests):
            return {"gpu": gpu, "grader_s": grader, "stages": {"files": 0.0, "build": 0.0, "tests": tests, "timing": timing},
                    "labs": {"reduction": {"tests": reduction_tests, "sanitizer": reduction_sanitizer},
                             "vectorAdd": {"tests": vector_tests}}}

        one = [{"per_student": {"s1": student("0", 10.0, 8.0, 1.0, 5.0, 2.0, 1.0)}},
               {"per_student": {"s2": student("0", 20.0, 16.0, 2.0, 9.0, 4.0, 2.0),
                                "s3": student("0", 9.0, 7.0, 1.0, 4.0, 1.0, 1.0)}}]
        two = [{"per_student": {"s1": student("0", 10.6, 8.3, 1.0, 5.4, 2.0, 1.0),
                                "s2": student("1", 21.2, 16.9, 2.1, 9.6, 4.3, 2.0),
                                "s4": student("1", 50.0, 40.0, 5.0, 30.0, 9.0, 1.0)}}]
        lines = class_scale.growth_lines({"0": one, "0,1": two}, top=2)
        # s1 and s2 only (s3 was not graded on two GPUs, s4 not on one): grader (0.6 + 1.2) / 2,
        # of 15 s on one GPU; tests (0.3 + 0.9) / 2, timing 0.05, the rest 0.9 - 0.6 - 0.05.
        self.assertEqual(lines, [
            "same students, GPUs 0,1 against GPUs 0 (2 graded by both): grader +0.90 s/st (+6.0%); files +0.00, "
            "build +0.00, tests +0.60, timing +0.05, rest +0.25",
            "  lab phases that changed most, s/st: reduction tests +0.50, reduction sanitizer +0.15 (the labs are "
            "graded side by side: their phases overlap)",
            "  per GPU of GPUs 0,1: 0 +0.60 s/st (1 st.); 1 +1.20 s/st (1 st.)"])
        self.assertEqual(class_scale.growth_lines({"0": one}), [])
        self.assertEqual(class_scale.growth_lines({"0": one, "0,1": [{"stages": {}}]}),
                         ["same students, GPUs 0,1 against GPUs 0: none graded by both (no per-student figures)"])


REAL_MAKE_CLASS = class_scale.make_class

if __name__ == "__main__":
    unittest.main()
