"""The fairness probe (grader/tests/fairness_probe.py) with fake benches: which set-up
gets which command line and environment, the table's differences, the reading of each
set-up's share of the gap, and the workers' reports and logs."""

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
from unittest import mock

from grader.tests import fairness_probe as probe

# A fake bench of compact: fixed times per call, plus `judge_extra` (us, per candidate)
# in a judge bench unless its argv holds `closer` (e.g. --no-sandbox), plus `cold_extra`
# in a judge bench given --cold-copies, or, in a direct bench, `direct_extra` when
# CUDA_DEVICE_MAX_CONNECTIONS is 1. It appends its argv and
# environment to calls.jsonl beside it, and a judge writes a worker log into its TMPDIR
# that says one system call was refused.
FAKE = textwrap.dedent("""\
    #!{python}
    import json, os, sys
    from pathlib import Path
    here = Path(sys.argv[0])
    judge = here.name.endswith("_judge_bench")
    base = {{"student": 0.090, "single_pass": 0.109, "two_pass": 0.150, "reference": 0.300,
             "CUB DeviceSelect::If": 0.120}}
    extra = {{}}
    if judge and {closer!r} not in sys.argv:
        extra = dict({judge_extra!r})
    if judge and "--cold-copies" in sys.argv:
        for name, us in {cold_extra!r}.items():
            extra[name] = extra.get(name, 0) + us
    if not judge and os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") == "1":
        extra = {direct_extra!r}
    with open(here.parent / "calls.jsonl", "a") as log:
        log.write(json.dumps({{"argv": sys.argv[1:], "connections": os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS"),
                               "tmpdir": os.environ.get("TMPDIR")}}) + "\\n")
    results = [{{"name": name, "role": "variant", "median_ms": ms + extra.get(name, 0) / 1000,
                 "boundary_retaken": 1 if judge else 0, "boundary_suspect": 0,
                 "boundary_excess_ms": 0.001 if judge else None}} for name, ms in base.items()]
    doc = {{"status": "ok", "workloads": [{{"name": "compact n=30000001, 50% kept", "graded": True,
                                          "results": results}}], "judge": None}}
    if judge:
        doc["judge"] = {{"workers": "student worker (x.so), started 1 time(s):\\n"
                                   "seccomp as the judge sees it: filter mode\\n"
                                   "speculation (Speculation_Store_Bypass): thread force mitigated\\n"
                                   "landlock ABI 4: on\\n"}}
        folder = Path(os.environ["TMPDIR"]) / "labkit-worker-abc123"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "student.log").write_text("worker for compact\\n[labkit sandbox] refused system call 324\\n")
    Path(sys.argv[sys.argv.index("--json") + 1]).write_text(json.dumps(doc))
""")


class ProbeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.build = Path(self.tmp.name) / "build"
        (self.build / "bin").mkdir(parents=True)
        self.keep = Path(self.tmp.name) / "keep"

    def tearDown(self):
        self.tmp.cleanup()

    def fake(self, judge_extra: dict[str, float], closer: str = "--no-sandbox",
             direct_extra: dict[str, float] | None = None, cold_extra: dict[str, float] | None = None) -> None:
        for name in ("compact_solution_bench", "compact_judge_bench"):
            path = self.build / "bin" / name
            path.write_text(FAKE.format(python=sys.executable, judge_extra=judge_extra, closer=closer,
                                        direct_extra=direct_extra or {}, cold_extra=cold_extra or {}))
            os.chmod(path, 0o755)

    def main(self, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
        out = io.StringIO()
        with mock.patch.dict(os.environ, env or {}), redirect_stdout(out):
            code = probe.main(["--build-dir", str(self.build), "--keep", str(self.keep), *args])
        return code, out.getvalue()

    def calls(self) -> list[dict]:
        return [json.loads(line) for line in (self.build / "bin" / "calls.jsonl").read_text().splitlines()]

    def test_each_setup_gets_its_command_line_and_environment(self):
        self.fake({})
        # An inherited queue setting must not leak into the set-ups that want the driver's default.
        code, out = self.main("--plan", "D,D1,J,J0,Jc,Jn", env={"CUDA_DEVICE_MAX_CONNECTIONS": "4"})
        self.assertEqual(code, 0, out)
        self.assertIn("CUDA_DEVICE_MAX_CONNECTIONS=4 in this environment is ignored", out)
        d, d1, j, j0, jc, jn = self.calls()
        self.assertEqual([c["connections"] for c in (d, d1, j, j0, jc, jn)],
                         [None, "1", "1", None, "1", "1"])
        self.assertEqual(d["tmpdir"], os.environ.get("TMPDIR"))  # a direct bench's is left alone
        for call in (j, j0, jc, jn):
            self.assertTrue(call["tmpdir"].startswith(str(self.keep)), call)
            self.assertTrue(any(a.startswith("--impl=") for a in call["argv"]), call)
        for call in (d, d1):
            self.assertFalse(any(a.startswith("--impl=") for a in call["argv"]), call)
        self.assertIn("--cold-copies", jc["argv"])
        self.assertIn("--no-sandbox", jn["argv"])
        for call in (d, j, j0):  # as graded: the judge warms the copy path by itself
            self.assertNotIn("--cold-copies", call["argv"])
            self.assertNotIn("--no-sandbox", call["argv"])
        for call in (d, j):
            self.assertIn("--size=30000001", call["argv"])
            self.assertIn("--time-variants=single_pass,two_pass", call["argv"])
            self.assertIn("--graded-only", call["argv"])
        self.assertTrue((self.keep / "5.Jc.json").is_file())

    def test_a_switch_that_closes_the_gap_is_read_as_the_cause(self):
        self.fake({"single_pass": 6.0, "student": 2.5})
        code, out = self.main("--plan", "D,J,Jn,J0,D1")
        self.assertEqual(code, 0, out)
        single = next(line for line in out.splitlines() if " single_pass " in line)
        # D's time, then J, Jn, J0, D1 minus D (us).
        self.assertIn("0.1090    +6.00    +0.00    +6.00    +0.00", single)
        two = next(line for line in out.splitlines() if " two_pass " in line)
        self.assertIn("+0.00    +0.00    +0.00    +0.00", two)
        self.assertIn("Jn (judge bench, workers without their sandbox): 0% of the gap left; closes the gap", out)
        self.assertIn("J0 (judge bench, the driver's default queues): 100% of the gap left; "
                      "changes nothing that matters", out)
        self.assertIn("D1 (direct bench, CUDA_DEVICE_MAX_CONNECTIONS=1): 0% of the gap reproduced", out)

    def test_the_cold_setup_shows_what_the_warm_up_buys(self):
        # Without the warm-up single_pass is 6 us slower; the judge as graded leaves 1.5 of them.
        self.fake({"single_pass": 1.5}, cold_extra={"single_pass": 4.5})
        code, out = self.main("--plan", "D,J,Jc")
        self.assertEqual(code, 0, out)
        single = next(line for line in out.splitlines() if " single_pass " in line)
        self.assertIn("0.1090    +1.50    +6.00", single)
        self.assertIn("Jc (judge bench, no copy warm-up before each call): the judge as graded leaves 25% of this "
                      "gap; the fix works", out)
        # A fix that does nothing: the judge as graded is as slow as without it.
        self.fake({"single_pass": 6.0})
        code, out = self.main("--plan", "D,J,Jc")
        self.assertIn("leaves 100% of this gap; the fix changes nothing that matters", out)

    def test_a_direct_setup_that_reproduces_the_gap_is_read_as_the_cause(self):
        self.fake({"single_pass": 6.0}, direct_extra={"single_pass": 6.0})
        code, out = self.main("--plan", "D,J,D1")
        self.assertEqual(code, 0, out)
        self.assertIn("D1 (direct bench, CUDA_DEVICE_MAX_CONNECTIONS=1): 100% of the gap reproduced; reproduces "
                      "the gap in the direct bench", out)

    def test_the_workers_reports_and_logs_are_summed_up(self):
        self.fake({"single_pass": 6.0})
        code, out = self.main("--plan", "D,J,J")
        self.assertEqual(code, 0, out)
        self.assertIn("J worker: speculation (Speculation_Store_Bypass): thread force mitigated", out)
        self.assertIn("J worker: seccomp as the judge sees it: filter mode", out)
        self.assertNotIn("landlock", out)
        self.assertIn("J workers' logs: system call 324 refused 2x", out)
        # Two judge runs: the retaken samples add up, the excess is their median.
        single = next(line for line in out.splitlines() if " single_pass " in line)
        self.assertTrue(single.rstrip().endswith("2/0  /  +1.00"), single)

    def test_a_failed_run_is_left_out(self):
        self.fake({"single_pass": 6.0})
        path = self.build / "bin" / "compact_judge_bench"
        path.write_text("#!/bin/sh\nexit 3\n")
        code, out = self.main("--plan", "D,J")
        self.assertEqual(code, 1)
        self.assertIn("J: the bench failed; this run is left out", out)
        self.assertIn("nothing to compare", out)

    def test_plans_need_the_baselines_and_known_setups(self):
        self.assertEqual(probe.parse_plan(" D, J ,Jc"), ["D", "J", "Jc"])
        self.assertEqual(probe.parse_plan(probe.DEFAULT_PLAN), ["D", "J", "Jc"] * 2)
        with self.assertRaisesRegex(ValueError, "unknown set-up Jw"):  # the warm-up is J's own now
            probe.parse_plan("D,J,Jw")
        with self.assertRaisesRegex(ValueError, "needs D and J"):
            probe.parse_plan("D,Jc")

    def test_gap_shares(self):
        key, quiet = ("w", "a"), ("w", "b")
        times = {"D": {key: 0.100, quiet: 0.200}, "J": {key: 0.106, quiet: 0.2005},
                 "Jn": {key: 0.1015, quiet: 0.2}, "D1": {key: 0.100, quiet: 0.2},
                 "Jc": {key: 0.112, quiet: 0.2015}}
        shares = probe.gap_shares(times)
        # Only the row with a gap of 2 us or more counts: Jn leaves 1.5 of J's 6 us.
        self.assertAlmostEqual(shares["Jn"], 0.25)
        self.assertAlmostEqual(shares["D1"], 0.0)
        # Jc, the other way round: J leaves 6 of Jc's 12 us (the quiet row's 1.5 us is no gap).
        self.assertAlmostEqual(shares["Jc"], 0.5)
        self.assertIsNone(probe.gap_shares({"D": {key: 0.1}, "J": {key: 0.1}, "Jn": {key: 0.1}})["Jn"])
        self.assertIsNone(probe.gap_shares({"D": {key: 0.1}, "J": {key: 0.1}, "Jc": {key: 0.1}})["Jc"])
        self.assertIn("no row shows the gap", probe.reading("Jn", None))
        self.assertIn("closes part of it", probe.reading("Jn", 0.5))
        self.assertIn("the fix closes part of it", probe.reading("Jc", 0.5))


if __name__ == "__main__":
    unittest.main()
