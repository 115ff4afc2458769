"""Tests of grader/tests/class_scale.py, the class-timing script, with batch's fake grader
(test_batch.FAKE_GRADER) and a fake nvidia-smi listing two GPUs: one run per --gpus, the
runs kept apart, and the table's figures read from batch's timing.json."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader.instructor import batch
from grader.tests import class_scale
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
    def make_class(self, out: Path, students: int, labs: list[str]) -> Path:
        roster = REAL_MAKE_CLASS(out, students, labs)
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
        rows = text[text.index("students labs"):].splitlines()
        self.assertEqual(len(rows), 3, text)
        self.assertRegex(rows[1], r"^\s+3\s+2\s+0\s+\d+\s+\d+\s+[\d.]+\s+1\.00x  0: \d+ s of \d+ s \(\d+%\), 3 st\.$")
        self.assertRegex(rows[2], r"^\s+3\s+2\s+0,1\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+x  0: .*, \d st\.; 1: .*, \d st\.$")
        second = parts[1]
        self.assertEqual(sum(one["students"] for one in second["per_gpu"]), 3)
        for one in second["per_gpu"]:
            self.assertGreaterEqual(one["busy_s"], 0.2 * one["students"] - 0.05)

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
            class_scale.main(["--out", str(out), "--gpus", "0", "--gpus", "1", "--limit", "1"])


REAL_MAKE_CLASS = class_scale.make_class

if __name__ == "__main__":
    unittest.main()
