"""Tests of grader.bench: JSON validation and the exit statuses of CONTRACT.md."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path

from grader import bench, status
from grader.proc import ProcResult
from grader.tests.helpers import fake_bench, load_fixture


def proc_result(returncode=0, timed_out=False) -> ProcResult:
    return ProcResult(command="bench", returncode=returncode, timed_out=timed_out, duration_s=1.0,
                      stdout="", stderr="")


def classify(returncode: int, fixture: str | None, timed_out: bool = False) -> bench.BenchRun:
    data = load_fixture(fixture) if fixture else None
    return bench.classify(proc_result(returncode, timed_out), data, timeout=5, command="bench --seed=1")


class ValidateTest(unittest.TestCase):
    def test_ok(self):
        bench.validate(load_fixture("bench-ok.json"))
        bench.validate(load_fixture("bench-no-reference.json"))

    def test_wrong_schema(self):
        with self.assertRaises(bench.BenchFormatError) as caught:
            bench.validate(load_fixture("bench-wrong-schema.json"))
        self.assertIn("version 2", str(caught.exception))
        self.assertIn("'labkit-bench' version 1", str(caught.exception))

    def test_bad_shapes(self):
        for data in ([], {"schema": "other", "version": 1}, {"schema": "labkit-bench", "version": 1},
                     {"schema": "labkit-bench", "version": 1, "workloads": [{"name": "w"}]},
                     {"schema": "labkit-bench", "version": 1, "workloads": [{"results": [], "pair": 3}]}):
            with self.subTest(data=data), self.assertRaises(bench.BenchFormatError):
                bench.validate(data)


class ClassifyTest(unittest.TestCase):
    def test_ok(self):
        run = classify(0, "bench-ok.json")
        self.assertIsNone(run.status)
        self.assertEqual(run.data["lab"], "vectorAdd")

    # Exit 1 with failed checks is scored (to zero performance), not a lab failure.
    def test_check_failure(self):
        run = classify(1, "bench-check-failure.json")
        self.assertIsNone(run.status)
        self.assertEqual(run.data["workloads"][0]["results"][0]["check_failures"], 3)

    def test_no_reference(self):
        self.assertIsNone(classify(0, "bench-no-reference.json").status)

    def test_no_gpu(self):
        self.assertIs(classify(3, "bench-no-gpu.json").status, status.NO_GPU)
        self.assertIs(classify(3, None).status, status.NO_GPU)
        self.assertIs(classify(0, "bench-no-gpu.json").status, status.NO_GPU)

    def test_wrong_schema(self):
        run = classify(0, "bench-wrong-schema.json")
        self.assertIs(run.status, status.ERROR)
        self.assertIn("update the grader and the kit together", run.message)

    def test_bad_arguments(self):
        run = classify(2, None)
        self.assertIs(run.status, status.ERROR)
        self.assertIn("CONTRACT.md", run.message)

    def test_crash_and_timeout(self):
        self.assertIs(classify(-11, None).status, status.CRASH)
        self.assertIs(classify(0, None).status, status.CRASH)
        self.assertIs(classify(-9, None, timed_out=True).status, status.TIMEOUT)


class RunBenchTest(unittest.TestCase):
    # The flags of CONTRACT.md reach the binary, and the reproduce command drops the temp JSON.
    def test_arguments(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "argv"
            binary = fake_bench(tmp / "vectorAdd_bench", "bench-ok.json", argv_log=log)
            run = bench.run_bench(binary, seed=99, timeout=20, json_path=tmp / "b.json",
                                  reference=Path("/ref/libvectorAdd_solution.so"), variant="tiled")
            self.assertIsNone(run.status, run.message)
            args = json.loads(log.read_text())
            self.assertEqual(args, ["--json", str(tmp / "b.json"), "--seed=99", "--reference",
                                    "/ref/libvectorAdd_solution.so", "--reference-variant", "tiled", "--graded-only"])
            self.assertNotIn("--json", run.command)
            self.assertIn("--seed=99 --reference /ref/libvectorAdd_solution.so", run.command)

    # The config's sampling floors reach the binary and its reproduce command.
    def test_floors(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "argv"
            binary = fake_bench(tmp / "vectorAdd_bench", "bench-ok.json", argv_log=log)
            run = bench.run_bench(binary, seed=99, timeout=20, json_path=tmp / "b.json", reference=None,
                                  variant="default", floors={"--warm-up": 0.05, "--min-time": 0.15})
            self.assertIsNone(run.status, run.message)
            self.assertEqual(json.loads(log.read_text())[-2:], ["--warm-up=0.05", "--min-time=0.15"])
            self.assertIn("--warm-up=0.05 --min-time=0.15", run.command)

    # A judge bench is told the library under test, and a report of anything else than
    # what was asked (seed, reference variant, library) is not used.
    def test_workload_fixed_by_the_grader(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "argv"
            binary = fake_bench(tmp / "vectorAdd_judge_bench", "bench-ok.json", argv_log=log)
            impl = tmp / "libvectorAdd_student.so"
            run = bench.run_bench(binary, seed=99, timeout=20, json_path=tmp / "b.json", reference=None,
                                  variant="default", impl=impl)
            self.assertIsNone(run.status, run.message)
            self.assertIn(f"--impl={impl}", json.loads(log.read_text()))
            data = load_fixture("bench-ok.json")
            data.update(seed=99, judge={"impl": str(impl)})
            self.assertEqual(bench.measured_elsewhere(data, seed=99, variant="default", impl=impl), "")
            self.assertIn("seed 5", bench.measured_elsewhere({**data, "seed": 5}, seed=99, variant="default",
                                                             impl=impl))
            self.assertIn("not timed by the judge", bench.measured_elsewhere({**data, "judge": None}, seed=99,
                                                                             variant="default", impl=impl))
            self.assertIn("library", bench.measured_elsewhere({**data, "judge": {"impl": "/other.so"}}, seed=99,
                                                              variant="default", impl=impl))
            self.assertIn("reference variant", bench.measured_elsewhere(data, seed=99, variant="tiled", impl=impl))
            self.assertIn("size", bench.measured_elsewhere({**data, "options": {"size": 1000}}, seed=99,
                                                           variant="default", impl=impl))


if __name__ == "__main__":
    unittest.main()
