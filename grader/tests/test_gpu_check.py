"""The verdict lines of `bash .ci/gpu-check` (grader.tests.gpu_check) on made-up reports."""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
import unittest
from pathlib import Path

from grader.tests import gpu_check


def lab(name: str, status: str = "PASS", correctness: float = 70, total: float = 110, top: float = 110,
        answers: list[dict] | None = None, steps: tuple[float, float] = (2, 2)) -> dict:
    questions = answers if answers is not None else [
        {"id": "idle_threads", "check": "key", "status": "correct", "points": 1, "max": 1},
        {"id": "your_gbps", "check": "bench", "status": "correct", "points": 1, "max": 1},
        {"id": "host_timer", "check": "manual", "status": "manual", "points": 0, "max": 2}]
    return {"lab": name, "status": status, "message": "", "correctness": {"points": correctness, "max": 70},
            "total": total, "max": top,
            "answers": {"points": sum(q["points"] for q in questions if q["check"] != "manual"),
                        "max": sum(q["max"] for q in questions if q["check"] != "manual"), "questions": questions},
            "variants": {"points": steps[0], "max": steps[1], "rows": []}}


def report(*labs: dict, gpu: dict | None = None) -> dict:
    return {"schema": "labkit-report", "labs": list(labs), "interrupted": False,
            "total": sum(x["total"] for x in labs), "max": sum(x["max"] for x in labs), "gpu": gpu}


H200 = {"name": "NVIDIA H200", "compute_capability": "9.0"}


class SolutionsTest(unittest.TestCase):
    def test_every_point(self):
        ok, line = gpu_check.check_solutions(report(lab("vectorAdd"), lab("scan"), gpu=H200), ["vectorAdd", "scan"])
        self.assertTrue(ok, line)
        self.assertEqual(line, "PASS 220/220 points, answers 4/4, 2 labs, on NVIDIA H200 (sm_90)")

    def test_misses(self):
        cases = {
            "a lab not graded": (report(lab("vectorAdd")), "scan: not graded"),
            "a lab short of its maximum": (report(lab("vectorAdd", total=109.5)), "vectorAdd: 109.5/110"),
            "a lab not passing": (report(lab("vectorAdd", status="PARTIAL")), "vectorAdd: PARTIAL"),
            "an answer left to the instructor": (
                report(lab("vectorAdd", answers=[{"id": "your_gbps", "check": "bench", "status": "other_gpu",
                                                  "points": 0, "max": 1, "why": "measured on another GPU"}])),
                "answer your_gbps other_gpu (measured on another GPU)"),
            "a lecture step missed": (report(lab("vectorAdd", steps=(1, 2))), "lecture steps 1/2"),
        }
        for why, (made, text) in cases.items():
            with self.subTest(why):
                ok, line = gpu_check.check_solutions(made, ["vectorAdd", "scan"] if "not graded" in why
                                                     else ["vectorAdd"])
                self.assertFalse(ok, line)
                self.assertTrue(line.startswith("FAIL "), line)
                self.assertIn(text, line)


class SkeletonsTest(unittest.TestCase):
    def test_clean_failures(self):
        ok, line = gpu_check.check_skeletons(
            report(lab("vectorAdd", "PARTIAL", correctness=0, total=0), lab("scan", "PARTIAL", correctness=0, total=0)),
            ["vectorAdd", "scan"])
        self.assertTrue(ok, line)
        self.assertIn("correctness 0 points over 2 labs, statuses PARTIAL 2", line)

    def test_misses(self):
        for status in gpu_check.SKELETON_FORBIDDEN:
            with self.subTest(status):
                ok, line = gpu_check.check_skeletons(report(lab("vectorAdd", status, correctness=0)), ["vectorAdd"])
                self.assertFalse(ok)
                self.assertIn(f"vectorAdd: {status}", line)
        ok, line = gpu_check.check_skeletons(report(lab("vectorAdd", "PARTIAL", correctness=35)), ["vectorAdd"])
        self.assertFalse(ok)
        self.assertIn("35 correctness points for a skeleton", line)


class TimeTest(unittest.TestCase):
    # Where a grade's time went: its stages, the longest lab parts (the bench's own account
    # kept apart), and the benches with what their JSON says of them.
    def test_line(self):
        vector_add = lab("vectorAdd")
        vector_add["seconds"] = {"tests": 4.0, "sanitizer": 2.0, "bench": 2.5, "bench_calibration": 0.25,
                                 "bench_workloads": 1.0}
        reduction = lab("reduction")
        reduction["seconds"] = {"tests": 10.0, "sanitizer": 3.0, "bench": 1.5, "bench_workloads": 0.75, "gpu_wait": True}
        skipped = lab("scan", status="PARTIAL")
        skipped["seconds"] = {"tests": 12.5}
        graded = report(vector_add, reduction, skipped)
        graded["seconds"] = {"files": 0.02, "build": 1.44, "tests": 16.0, "timing": 4.0}
        self.assertEqual(gpu_check.time_line(graded),
                         "time: files 0.0, build 1.4, tests 16.0, timing 4.0 s; longest: scan tests 12.5, "
                         "reduction tests 10.0, vectorAdd tests 4.0; benches (2 labs) 4.0 s: calibration 0.2, "
                         "workloads 1.8, the rest 2.0")
        self.assertEqual(gpu_check.time_line(report(lab("vectorAdd"))), "time: no stage seconds")


class TimelineTest(unittest.TestCase):
    # The run in text, 20 columns of 1 s: a lab's stages by their letters, the later stages
    # drawn over the earlier (the bench's set-up under its tests' and sanitizer's letters).
    def test_rows(self):
        vector_add = lab("vectorAdd")
        vector_add["seconds"] = {"tests": 4.0, "tests_in_binary": 1.5, "sanitizer": 2.0, "bench": 3.0}
        vector_add["spans"] = {"tests": [[0.0, 4.0]], "sanitizer": [[4.0, 6.0]], "bench_set_up": [[4.0, 7.0]],
                               "bench_gate": [[7.0, 12.0]], "bench": [[12.0, 15.0]]}
        scan = lab("scan")
        scan["seconds"] = {"tests": 10.0}
        scan["spans"] = {"tests": [[0.5, 10.5]], "profile": [[15.0, 16.2]], "unknown": [[1, 2]],
                         "bench": [[3, 2], [-1, 1], "soon", [True, 2.0]]}
        graded = report(vector_add, scan, lab("sort"))
        graded["seconds"] = {"files": 0.0, "build": 1.0, "tests": 11.0, "timing": 8.0, "gpu_wait": 99.0}
        # Samples each covering the half second before it: two per column, averaged.
        graded["cpu_busy"] = {"cores": 16, "interval_s": 0.5, "samples": [
            [0.5, 1.0], [1.0, 0.9], [1.5, 0.5], [2.0, 0.35], [19.5, 0.0], [20.0, 0.05], [3.0, 1.5], [True, 0.5],
            "busy"]}
        lines = gpu_check.timeline(graded, width=20)
        self.assertEqual(lines[0], "timeline of 20.0 s, a column 1.00 s: b bench set-up, . bench waiting for its "
                                   "turn, t tests, s sanitizer, T bench timing, p profile")
        self.assertEqual(lines[1:], ["vectorAdd      |ttttssb.....TTT     | tests 4.0 s (1.5 s in the binary)",
                                     "scan           |tttttttttt     p    | tests 10.0 s",
                                     "cpu busy       |94                 0| tenths of the host's 16 cores busy"])
        # The GPU's rows under it: a kernel's share and the memory's, per column likewise.
        graded["gpu_busy"] = {"gpu": "GPU-1", "interval_s": 0.5, "samples": [
            [0.5, 0.4, 0.0], [1.0, 0.6, 0.1], [12.5, 1.0, 0.95], [13.0, 0.9, 0.85], [14.0, 1.2, 0.5], [2.0, 0.5]]}
        lines = gpu_check.timeline(graded, width=20)
        self.assertEqual(lines[4:], [
            "gpu kernels    |5           9       | tenths of the time a kernel ran on the GPU",
            "gpu memory     |0           9       | tenths of the time the GPU's memory was read or written"])
        graded["cpu_busy"] = graded["gpu_busy"] = None
        self.assertEqual(len(gpu_check.timeline(graded, width=20)), 3)
        graded["gpu_busy"] = {"gpu": "GPU-1", "interval_s": 0.5, "samples": []}  # NVML opened, nothing sampled
        self.assertEqual(len(gpu_check.timeline(graded, width=20)), 3)

    def test_without_spans(self):
        self.assertEqual(gpu_check.timeline(report(lab("vectorAdd"))),
                         ["timeline: the report has no spans (a grader from before they were kept)"])

    # The test binary's own seconds are part of the tests', not a part of their own.
    def test_time_line_leaves_the_binary_out(self):
        vector_add = lab("vectorAdd")
        vector_add["seconds"] = {"tests": 4.0, "tests_in_binary": 3.5}
        self.assertEqual(gpu_check.time_line(report(vector_add)),
                         "time: no stage seconds; longest: vectorAdd tests 4.0")


class MainTest(unittest.TestCase):
    def run_main(self, *args: str) -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = gpu_check.main(list(args))
        return code, out.getvalue()

    def test_exit_statuses(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "report.json"
            path.write_text(json.dumps(report(lab("vectorAdd"))))
            self.assertEqual(self.run_main("solutions", str(path), "--labs", "vectorAdd")[0], 0)
            self.assertEqual(self.run_main("solutions", str(path), "--labs", "vectorAdd", "sort")[0], 1)
            path.write_text('{"schema": "labkit-bench"}')
            code, out = self.run_main("skeletons", str(path))
            self.assertEqual(code, 2)
            self.assertIn("cannot read the report", out)
            code, out = self.run_main("skeletons", str(Path(tmp) / "missing.json"))
            self.assertEqual(code, 2)
            path.write_text(json.dumps(report(lab("vectorAdd"))))
            self.assertEqual(self.run_main("time", str(path)), (0, "time: no stage seconds\n"))
            self.assertEqual(self.run_main("timeline", str(path))[0], 0)


if __name__ == "__main__":
    unittest.main()
