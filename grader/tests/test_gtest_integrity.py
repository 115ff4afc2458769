"""gtest.py against binaries that end early or fault: listed tests without a result count
as failed (exit(0) in the student's code), and GPU faults are marked per test."""

from __future__ import annotations

import contextlib
import io
import tempfile
import unittest
from pathlib import Path

from grader import gtest, manifest, status
from grader.proc import ProcResult
from grader.tests.helpers import fake_gtest, gtest_listing, write_script

PASSING = ["CpuReference.WorkedExample", "CpuReference.EmptyInput", "Sizes/SumTest.MatchesCpu/0",
           "Sizes/SumTest.MatchesCpu/1"]
# The binary has one more test than the recorded JSON reports.
LISTED = PASSING + ["Sizes/SumTest.MatchesCpu/2"]

EXIT_IN_TEST = """
    print("[ RUN      ] CpuReference.WorkedExample", flush=True)
    print("[       OK ] CpuReference.WorkedExample (0 ms)", flush=True)
    print("[ RUN      ] CpuReference.EmptyInput", flush=True)
    sys.exit(0)
"""


class ListTest(unittest.TestCase):
    def test_parse_listing(self):
        text = ("[labkit] seed = 1\n[labkit] No CUDA GPU (x): GPU tests will be skipped.\n"
                + gtest_listing(["A.One", "A.DISABLED_Two", "Sizes/B.Run/n_1", "Sizes/B.Run/n_33"])
                + "Typed/0.  # TypeParam = int\n  Works\nDISABLED_C.\n  Three\n")
        self.assertEqual(gtest.parse_test_list(text),
                         ["A.One", "Sizes/B.Run/n_1", "Sizes/B.Run/n_33", "Typed/0.Works"])

    # The kit's check (CTest <lab>.manifest) that a binary's --list-file, which the grader
    # reads, names the tests --gtest_list_tests lists: a binary that lists one test short,
    # or writes no list, fails it.
    def test_list_file_check(self):
        body = """
            import sys
            args = sys.argv[1:]
            if "--gtest_list_tests" in args:
                print("[labkit] seed = 1\\nA.\\n  OneCpu\\n  TwoCpu")
                sys.exit(0)
            path = next((a.split("=", 1)[1] for a in args if a.startswith("--list-file=")), None)
            if path and {names!r}:
                open(path, "w").write("\\n".join({names!r}) + "\\n")
        """
        with tempfile.TemporaryDirectory() as tmp:
            for names, fails in ((["A.OneCpu", "A.TwoCpu"], False), (["A.OneCpu"], True), ([], True)):
                with self.subTest(names=names):
                    binary = write_script(Path(tmp) / "t", body.format(names=names))
                    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as err:
                        self.assertEqual(manifest._check_list_file(str(binary)), fails)
                    self.assertEqual("never ran wrongly" in err.getvalue(), fails)

    def test_binary_that_cannot_list(self):
        with tempfile.TemporaryDirectory() as tmp:
            binary = fake_gtest(Path(tmp) / "t", "gtest-1.12-pass.json")  # rejects --gtest_list_tests
            self.assertIsNone(gtest.list_tests(binary, seed=1, timeout=20))


class EarlyExitTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)

    def run_binary(self, binary: Path) -> gtest.TestRun:
        return gtest.run_tests(binary, seed=3, timeout=20, json_path=self.dir / "out.json")

    # exit(0) inside a test: code 0 but no JSON. Not a success: CRASH, every listed test
    # failed, the running one named, and the message points at exit().
    def test_exit_zero_without_json(self):
        binary = fake_gtest(self.dir / "t", None, extra=EXIT_IN_TEST, listing=PASSING)
        run = self.run_binary(binary)
        self.assertIs(run.status, status.CRASH)
        self.assertIn("exited with code 0", run.message)
        self.assertIn("exit()", run.message)
        self.assertEqual(run.running_test, "CpuReference.EmptyInput")
        self.assertEqual([t.name for t in run.tests], PASSING)
        self.assertTrue(all(t.outcome == "failed" for t in run.tests))
        by_name = {t.name: t for t in run.tests}
        self.assertIn("in this test", by_name["CpuReference.EmptyInput"].message)
        # Stdout said WorkedExample passed, but stdout is the student's to print into.
        self.assertIn("no result", by_name["CpuReference.WorkedExample"].message)

    # A JSON with fewer tests than the binary lists: the missing ones fail with a message.
    def test_tests_missing_from_the_json(self):
        binary = fake_gtest(self.dir / "t", "gtest-1.12-pass.json", listing=LISTED)
        run = self.run_binary(binary)
        self.assertIs(run.status, status.PARTIAL)
        self.assertIn("1 of 5 tests never reported a result", run.message)
        missing = [t for t in run.tests if t.name == "Sizes/SumTest.MatchesCpu/2"]
        self.assertEqual(len(missing), 1)
        self.assertEqual((missing[0].outcome, missing[0].message), ("failed", gtest.NOT_RUN))

    # Every listed test reported: nothing changes.
    def test_complete_run(self):
        binary = fake_gtest(self.dir / "t", "gtest-1.12-pass.json", listing=PASSING)
        run = self.run_binary(binary)
        self.assertIs(run.status, status.PASS)
        self.assertEqual(len(run.tests), 4)

    # A hang: the listed tests are reported as failed, the running one as timed out.
    def test_timeout_rows(self):
        result = ProcResult("bin", -9, True, 2.0, "[ RUN      ] A.Hangs\n", "")
        run = gtest.classify(result, None, timeout=2, command="bin", listed=["A.Ok", "A.Hangs", "A.Later"])
        self.assertIs(run.status, status.TIMEOUT)
        rows = {t.name: t.message for t in run.tests}
        self.assertIn("timed out after 2 s in this test", rows["A.Hangs"])
        self.assertIn("timed out in test A.Hangs first", rows["A.Later"])


class GpuFaultTest(unittest.TestCase):
    def test_fault_texts(self):
        self.assertEqual(gtest.gpu_fault("x.cu:3: CUDA error cudaErrorIllegalAddress (an illegal memory "
                                         "access was encountered)"), "illegal memory access")
        self.assertEqual(gtest.gpu_fault("unspecified launch failure"), "unspecified launch failure")
        self.assertEqual(gtest.gpu_fault("misaligned address"), "misaligned address")
        self.assertIsNone(gtest.gpu_fault("Expected equality of these values"))

    # Failed tests with a fault are marked; the message names the first one.
    def test_marked_per_test(self):
        data = {"testsuites": [{"name": "S", "testsuite": [
            {"name": "Fine", "classname": "S", "result": "COMPLETED"},
            {"name": "Faults", "classname": "S", "result": "COMPLETED", "failures": [
                {"failure": "vectorAdd_test.cu:47: CUDA error cudaErrorIllegalAddress (an illegal memory "
                            "access was encountered) in `cudaDeviceSynchronize()`"}]},
            {"name": "After", "classname": "S", "result": "COMPLETED", "failures": [
                {"failure": "CUDA error cudaErrorIllegalAddress (an illegal memory access was encountered)"}]},
            {"name": "Wrong", "classname": "S", "result": "COMPLETED", "failures": [{"failure": "expected 1"}]},
        ]}]}
        run = gtest.classify(ProcResult("bin", 1, False, 1.0, "", ""), data, timeout=10, command="bin")
        self.assertIs(run.status, status.PARTIAL)
        faults = {t.name: t.gpu_fault for t in run.tests}
        self.assertEqual(faults, {"S.Fine": None, "S.Faults": "illegal memory access",
                                  "S.After": "illegal memory access", "S.Wrong": None})
        self.assertIn("GPU fault (illegal memory access) in S.Faults", run.message)


if __name__ == "__main__":
    unittest.main()
