"""The fairness tool's arithmetic (grader/tests/fairness.py), with fake benches that
write the JSON a bench writes: medians over alternating runs, the control column, the
exit status."""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stdout
from pathlib import Path

from grader.tests import fairness

# A fake bench: its --json gets the next figure of its list (one per call, kept in a
# counter file beside it), as the student's speed relative to the reference.
FAKE = textwrap.dedent("""\
    #!{python}
    import json, sys
    from pathlib import Path
    here = Path(sys.argv[0])
    speeds = {speeds!r}
    counter = here.with_suffix(".count")
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    out = sys.argv[sys.argv.index("--json") + 1]
    speed = speeds[n % len(speeds)]
    Path(out).write_text(json.dumps({{"workloads": [{{"name": "w", "graded": True, "results": [
        {{"name": "reference", "role": "reference", "median_ms": 1.0}},
        {{"name": "student", "role": "student", "median_ms": 1.0 / speed, "speed_vs_reference": speed}}]}}],
        "judge": {{"boundary": {{"student": {{"median_ms": 0.3}}, "reference": {{"median_ms": 0.3}}}}}}}}))
""")


class FairnessTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = Path(self.tmp.name)
        (self.build / "bin").mkdir()

    def tearDown(self):
        self.tmp.cleanup()

    def fake(self, name: str, speeds: list[float]) -> None:
        path = self.build / "bin" / name
        path.write_text(FAKE.format(python=sys.executable, speeds=speeds))
        os.chmod(path, 0o755)

    def main(self, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        with redirect_stdout(out):
            code = fairness.main(["--build-dir", str(self.build), *args, "vectorAdd"])
        return code, out.getvalue()

    def test_one_run_compares_the_two_benches(self):
        self.fake("vectorAdd_solution_bench", [1.0])
        self.fake("vectorAdd_judge_bench", [0.97])
        code, out = self.main()
        self.assertEqual(code, 1, out)
        self.assertIn("-3.00%", out)
        self.assertIn("beyond tolerance", out)

    def test_runs_compare_medians(self):
        # One judge run 3% off, two on the mark: the median is on the mark.
        self.fake("vectorAdd_solution_bench", [1.0, 1.005, 0.995])
        self.fake("vectorAdd_judge_bench", [0.97, 1.0, 1.001])
        code, out = self.main("--runs", "3", "--control")
        self.assertEqual(code, 0, out)
        student = next(line for line in out.splitlines() if " student " in line)
        self.assertIn("   1.000    1.000   +0.00%", student)  # the medians: 1.0 direct, 1.0 judge
        self.assertIn("the benches' own spread): 0.50%", out)
        self.assertEqual((self.build / "bin" / "vectorAdd_judge_bench.count").read_text(), "3")

    def test_control_with_one_run_runs_the_direct_bench_twice(self):
        self.fake("vectorAdd_solution_bench", [1.0, 1.01])
        self.fake("vectorAdd_judge_bench", [1.0])
        code, out = self.main("--control")
        self.assertEqual(code, 0, out)
        self.assertEqual((self.build / "bin" / "vectorAdd_solution_bench.count").read_text(), "2")
        student = next(line for line in out.splitlines() if " student " in line)
        self.assertTrue(student.endswith("+1.00%"), student)  # the control: the second direct run against the first

    def test_a_failed_bench_fails(self):
        self.fake("vectorAdd_solution_bench", [1.0])
        (self.build / "bin" / "vectorAdd_judge_bench").write_text("#!/bin/sh\nexit 3\n")
        os.chmod(self.build / "bin" / "vectorAdd_judge_bench", 0o755)
        code, out = self.main()
        self.assertEqual(code, 1)
        self.assertIn("a bench failed", out)


if __name__ == "__main__":
    unittest.main()
