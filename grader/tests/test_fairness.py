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
        {{"name": "reference", "role": "reference", "median_ms": 1.0, "q1_ms": 0.99, "q3_ms": 1.02}},
        {{"name": "student", "role": "student", "median_ms": 1.0 / speed, "speed_vs_reference": speed,
          "q1_ms": 0.98 / speed, "q3_ms": 1.05 / speed}}]}}],
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

    def test_a_difference_within_the_direct_benchs_own_spread_passes(self):
        # The direct bench cannot reproduce its own figure within 5%; the judge's 3% is
        # within that spread, not the judge's doing.
        self.fake("vectorAdd_solution_bench", [1.0, 1.05, 1.0])
        self.fake("vectorAdd_judge_bench", [0.97, 0.97, 0.97])
        code, out = self.main("--runs", "3", "--control")
        self.assertEqual(code, 0, out)
        self.assertIn("(beyond tolerance, within the direct bench's own spread)", out)
        self.assertIn("beyond both the tolerance and its row's own spread: graded workloads 0.00%", out)

    def test_a_difference_beyond_the_spread_fails(self):
        self.fake("vectorAdd_solution_bench", [1.0, 1.01, 1.0])
        self.fake("vectorAdd_judge_bench", [0.96, 0.96, 0.96])
        code, out = self.main("--runs", "3", "--control")
        self.assertEqual(code, 1, out)
        self.assertIn("-4.00%", out)
        self.assertIn("<-- beyond tolerance", out)
        self.assertIn("beyond both the tolerance and its row's own spread: graded workloads 4.00%", out)
        # Run by run: every judge run below every direct run.
        self.assertIn("runs, from the direct median: direct +0.00% +1.00% +0.00%; judge -4.00% -4.00% -4.00% "
                      "(apart: the paths differ)", out)
        # The calls' quartiles on both paths (medians over the runs), the reference's beside them.
        self.assertIn("quartiles per call, q1/median/q3 in us: direct 980.0/1000.0/1050.0, judge "
                      "1020.8/1041.7/1093.8; the reference: direct 990.0/1000.0/1020.0, judge 990.0/1000.0/1020.0",
                      out)

    def test_runs_that_overlap_are_called_mixed(self):
        self.fake("vectorAdd_solution_bench", [1.0, 1.01, 0.97])
        self.fake("vectorAdd_judge_bench", [0.96, 0.975, 1.005])
        code, out = self.main("--runs", "3", "--control")
        self.assertIn("(mixed: the runs overlap, the processes' own spread)", out)

    def test_judge_args_reach_the_judge_bench_alone(self):
        seen = self.build / "argv"
        for name in ("vectorAdd_solution_bench", "vectorAdd_judge_bench"):
            self.fake(name, [1.0])
            path = self.build / "bin" / name
            path.write_text(path.read_text() + f"open({str(seen)!r}, 'a').write(here.name + ' ' + ' '.join(sys.argv[1:]) + '\\n')\n")
        code, out = self.main("--judge-arg=--cold-copies", "--bench-arg=--shift-allocations=6")
        self.assertEqual(code, 0, out)
        lines = dict(line.split(" ", 1) for line in seen.read_text().splitlines())
        self.assertIn("--cold-copies", lines["vectorAdd_judge_bench"].split())
        self.assertNotIn("--cold-copies", lines["vectorAdd_solution_bench"].split())
        for bench in ("vectorAdd_judge_bench", "vectorAdd_solution_bench"):  # --bench-arg: both paths
            self.assertIn("--shift-allocations=6", lines[bench].split())

    def test_a_failed_bench_fails(self):
        self.fake("vectorAdd_solution_bench", [1.0])
        (self.build / "bin" / "vectorAdd_judge_bench").write_text("#!/bin/sh\nexit 3\n")
        os.chmod(self.build / "bin" / "vectorAdd_judge_bench", 0o755)
        code, out = self.main()
        self.assertEqual(code, 1)
        self.assertIn("a bench failed", out)


class FakeBenchTest(unittest.TestCase):
    """Graded and ungraded workloads, absolute times and the control column, with fake benches."""

    def fake_bench(self, folder: Path, name: str, short_speed: float, big_ms: float = 5.0) -> None:
        # A bench that writes one graded workload (same speed both ways, the reference's
        # time per call as the caller picks) and one short, ungraded workload whose speed
        # the caller picks.
        data = {"workloads": [
            {"name": "big", "graded": True, "results": [
                {"role": "reference", "name": "reference", "median_ms": big_ms},
                {"role": "variant", "name": "v", "speed_vs_reference": 2.0, "median_ms": big_ms / 2}]},
            {"name": "small", "graded": False, "results": [
                {"role": "reference", "name": "reference", "median_ms": 0.02},
                {"role": "variant", "name": "v", "speed_vs_reference": short_speed}]}],
            "judge": {"boundary": {"student": {"median_ms": 0.3}, "reference": {"median_ms": 0.3}}}}
        script = folder / "bin" / name
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text("#!/usr/bin/env python3\nimport json, sys\n"
                          f"open(sys.argv[sys.argv.index('--json') + 1], 'w').write({json.dumps(json.dumps(data))})\n")
        script.chmod(0o755)

    def test_graded_workloads_decide_unless_all_are_asked_for(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp)
            self.fake_bench(build, "sort_solution_bench", 1.0)
            self.fake_bench(build, "sort_judge_bench", 1.2, big_ms=5.004)  # the short call differs by 20%
            out = io.StringIO()
            with redirect_stdout(out):
                graded_only = fairness.main(["--build-dir", tmp, "sort"])
                every = fairness.main(["--build-dir", tmp, "--all-workloads", "sort"])
        self.assertEqual((graded_only, every), (0, 1))
        text = out.getvalue()
        self.assertIn("largest difference on the graded workloads: 0.00%, on all workloads: 20.00%", text)
        self.assertRegex(text, r"small\s+0\.020 v .*\+20\.00% .*  <-- beyond tolerance")
        self.assertRegex(text, r"big\s+yes\s+5\.000 v ")
        # The absolute times of both paths, the reference's too: 4 us apart per call.
        self.assertRegex(text, r"big\s+yes\s+5\.000 v\s+2\.000\s+2\.000\s+\+0\.00%\s+2\.5000\s+2\.5020\s+\+2\.00")
        self.assertRegex(text, r"big\s+yes\s+5\.000 \(the reference\)\s+1\.000\s+1\.000\s+\+0\.00%\s+5\.0000\s+5\.0040\s+\+4\.00")

    def test_control_runs_the_direct_bench_twice(self):
        with tempfile.TemporaryDirectory() as tmp:
            build = Path(tmp)
            self.fake_bench(build, "sort_judge_bench", 1.0)
            # A direct bench whose short workload is 5% faster on its second run.
            script = build / "bin" / "sort_solution_bench"
            script.write_text(
                "#!/usr/bin/env python3\nimport json, os, sys\n"
                f"count = os.path.join({json.dumps(tmp)}, 'runs')\n"
                "runs = int(open(count).read()) if os.path.exists(count) else 0\n"
                "open(count, 'w').write(str(runs + 1))\n"
                "speed = 1.05 if runs else 1.0\n"
                "data = {'workloads': [{'name': 'small', 'graded': True, 'results': ["
                "{'role': 'reference', 'name': 'reference', 'median_ms': 0.02},"
                "{'role': 'variant', 'name': 'v', 'speed_vs_reference': speed}]}]}\n"
                "open(sys.argv[sys.argv.index('--json') + 1], 'w').write(json.dumps(data))\n")
            script.chmod(0o755)
            out = io.StringIO()
            with redirect_stdout(out):
                fairness.main(["--build-dir", tmp, "--control", "sort"])
            self.assertEqual((build / "runs").read_text(), "2")
        text = out.getvalue()
        self.assertIn("direct 2", text.splitlines()[0])
        self.assertRegex(text, r"small\s+yes\s+0\.020 v .*\+5\.00%")
        self.assertIn("largest difference of a direct run from the first (the benches' own spread): 5.00%", text)


if __name__ == "__main__":
    unittest.main()
