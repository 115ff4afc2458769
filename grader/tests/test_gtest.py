"""Tests of grader.gtest: recorded GoogleTest 1.12/1.14 JSON, and fake test binaries that
pass, hang, crash, flood stdout or find no GPU."""

from __future__ import annotations

import json
import os
import tempfile
import time
import unittest
from unittest import mock
from pathlib import Path

from grader import gtest, status
from grader.proc import ProcResult
from grader.tests.helpers import fake_gtest, fixture, load_fixture, wait_gone, write_script


def proc_result(returncode=0, stdout="", timed_out=False) -> ProcResult:
    return ProcResult(command="bin", returncode=returncode, timed_out=timed_out, duration_s=0.1,
                      stdout=stdout, stderr="")


def recorded(name: str) -> tuple[dict, str]:
    """A recorded JSON fixture and its stdout."""
    return load_fixture(f"{name}.json"), fixture(f"{name}.stdout.txt").read_text()


class ParseJsonTest(unittest.TestCase):
    # GoogleTest 1.12: passed, failed (two assertions), skipped, parameterised, disabled.
    def test_gtest_1_12(self):
        data, stdout = recorded("gtest-1.12-mixed")
        tests = gtest.parse_json(data, gtest.output_blocks(stdout))
        by_name = {t.name: t for t in tests}
        self.assertEqual(len(tests), 8)  # the disabled test is not graded
        self.assertNotIn("CpuReference.DISABLED_NotReady", by_name)
        self.assertEqual(by_name["CpuReference.WorkedExample"].outcome, "passed")
        self.assertEqual(by_name["Sizes/SumTest.MatchesCpu/1"].outcome, "passed")
        failed = by_name["CpuReference.FailsWithIndex"]
        self.assertEqual(failed.outcome, "failed")
        self.assertIn("first difference at index 1024", failed.message)
        twice = by_name["VectorAddGpu.FailsTwice"].message
        self.assertIn("Expected equality", twice)
        self.assertIn("index 3", twice)  # both failures are kept
        skipped = by_name["VectorAddGpu.MatchesCpu"]
        self.assertEqual(skipped.outcome, "skipped")
        self.assertTrue(skipped.no_gpu)  # message found in stdout: 1.12 writes none in JSON

    # Without stdout a 1.12 skip has no message, so it cannot be told apart.
    def test_gtest_1_12_skip_message_needs_stdout(self):
        tests = gtest.parse_json(load_fixture("gtest-1.12-nogpu.json"))
        self.assertFalse(any(t.no_gpu for t in tests))

    # GoogleTest 1.14: skip messages under "skipped", and failed-then-skipped counts as failed.
    def test_gtest_1_14(self):
        tests = gtest.parse_json(load_fixture("gtest-1.14-mixed.json"))
        by_name = {t.name: t for t in tests}
        self.assertEqual(len(tests), 9)
        self.assertTrue(by_name["VectorAddGpu.MatchesCpu"].no_gpu)
        self.assertEqual(by_name["VectorAddGpu.FailsThenSkips"].outcome, "failed")
        self.assertAlmostEqual(by_name["CpuReference.WorkedExample"].time_s, 0.007)

    # JSON with fields missing is read leniently.
    def test_partial_json(self):
        data = {"testsuites": [{"name": "S", "testsuite": [
            {"name": "A"}, {"name": "B", "failures": [{"failure": "x.cu:3\nbad"}]},
            {"name": "", "classname": "S", "result": "COMPLETED", "failures": [{"failure": "SetUpTestSuite"}]},
        ]}]}
        tests = gtest.parse_json(data)
        self.assertEqual([(t.name, t.outcome) for t in tests],
                         [("S.A", "passed"), ("S.B", "failed"), ("S.[suite set-up]", "failed")])

    def test_long_message_is_trimmed(self):
        text = gtest.trim("x" * 5000)
        self.assertLess(len(text), gtest.MAX_MESSAGE_CHARS + 100)
        self.assertIn("3000 more characters", text)


class StdoutTest(unittest.TestCase):
    def test_running_test(self):
        stdout = ("[ RUN      ] A.Done\n[       OK ] A.Done (0 ms)\n"
                  "[ RUN      ] Sizes/B.Param/3\n[  FAILED  ] Sizes/B.Param/3, where GetParam() = 3 (1 ms)\n"
                  "[ RUN      ] C.Hangs\nworking...\n")
        self.assertEqual(gtest.running_test(stdout), "C.Hangs")
        self.assertIsNone(gtest.running_test(fixture("gtest-1.12-mixed.stdout.txt").read_text()))


class ClassifyTest(unittest.TestCase):
    def classify(self, result: ProcResult, data=None) -> gtest.TestRun:
        return gtest.classify(result, data, timeout=2, command="bin --seed=1")

    def test_pass(self):
        data, stdout = recorded("gtest-1.12-pass")
        run = self.classify(proc_result(0, stdout), data)
        self.assertIs(run.status, status.PASS)
        self.assertEqual(run.message, "4/4 tests passed")
        self.assertEqual(run.binary_s, 0.0)  # the recording's own "time": "0s"

    # GoogleTest's own time of the run, which the grader sets beside the process's wall time
    # (the rest is the process's start and end); a missing or odd one is not a number.
    def test_binary_seconds(self):
        data, stdout = recorded("gtest-1.12-fail")
        for written, read in (("2.812s", 2.812), ("14s", 14.0), ("", None), ("soon", None), ("-1s", None),
                              ("nan", None), (None, None)):
            with self.subTest(written=written):
                if written is None:
                    data.pop("time", None)
                else:
                    data["time"] = written
                self.assertEqual(self.classify(proc_result(1, stdout), data).binary_s, read)
        self.assertIsNone(self.classify(proc_result(-11, "[ RUN      ] Scan.Big\n")).binary_s)

    def test_failures_are_partial(self):
        data, stdout = recorded("gtest-1.12-fail")
        run = self.classify(proc_result(1, stdout), data)
        self.assertIs(run.status, status.PARTIAL)
        self.assertEqual(run.message, "2 of 6 tests failed")
        self.assertEqual(run.reproduce("A.b"), "bin --seed=1 --gtest_filter=A.b")

    def test_no_gpu(self):
        data, stdout = recorded("gtest-1.12-nogpu")
        run = self.classify(proc_result(0, stdout), data)
        self.assertIs(run.status, status.NO_GPU)
        self.assertIn("run the grader on a machine with an NVIDIA GPU", run.message)

    def test_timeout_names_test_and_cause(self):
        run = self.classify(proc_result(-9, "[ RUN      ] Reduce.Large\n", timed_out=True))
        self.assertIs(run.status, status.TIMEOUT)
        self.assertEqual(run.running_test, "Reduce.Large")
        self.assertIn("Reduce.Large", run.message)
        self.assertIn("__syncthreads()", run.message)

    def test_crash_without_json(self):
        run = self.classify(proc_result(-11, "[ RUN      ] Scan.Big\n"))
        self.assertIs(run.status, status.CRASH)
        self.assertIn("SIGSEGV", run.message)
        self.assertIn("Scan.Big", run.message)

    def test_exit_without_json(self):
        run = self.classify(proc_result(1, "[ RUN      ] Scan.Big\n"))
        self.assertIs(run.status, status.CRASH)
        self.assertIn("exited with code 1", run.message)

    def test_crash_after_results(self):
        data, stdout = recorded("gtest-1.12-pass")
        run = self.classify(proc_result(-6, stdout), data)
        self.assertIs(run.status, status.CRASH)
        self.assertIn("after the tests finished", run.message)
        self.assertEqual(len(run.tests), 4)

    def test_no_tests(self):
        run = self.classify(proc_result(0, ""), {"testsuites": []})
        self.assertIs(run.status, status.ERROR)


class FakeBinaryTest(unittest.TestCase):
    """run_tests against small Python scripts standing in for test binaries."""

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)

    def run_tests(self, binary: Path, timeout: float = 20) -> gtest.TestRun:
        return gtest.run_tests(binary, seed=4242, timeout=timeout, json_path=self.dir / "out.json")

    # Valid JSON, and the seed arrives as --seed and LABKIT_SEED (the fake exits 2 otherwise).
    def test_valid_json(self):
        run = self.run_tests(fake_gtest(self.dir / "t", "gtest-1.12-pass.json", "gtest-1.12-pass.stdout.txt"))
        self.assertIs(run.status, status.PASS, run.message)
        self.assertTrue(run.command.endswith("t --seed=4242"), run.command)

    # A stale JSON file from an earlier run must not be read as this run's.
    def test_stale_json_is_removed(self):
        (self.dir / "out.json").write_text(fixture("gtest-1.12-pass.json").read_text())
        run = self.run_tests(fake_gtest(self.dir / "t", None, exit_code=1))
        self.assertIs(run.status, status.CRASH)

    # A hang becomes TIMEOUT within the timeout, naming the test, and leaves no process behind.
    def test_hang(self):
        pid_file = self.dir / "pids"
        binary = fake_gtest(self.dir / "t", "gtest-1.12-pass.json", extra=f"""
            print("[ RUN      ] Reduce.Deadlock", flush=True)
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
            time.sleep(600)
        """)
        start = time.monotonic()
        run = self.run_tests(binary, timeout=2)
        self.assertLess(time.monotonic() - start, 10)
        self.assertIs(run.status, status.TIMEOUT)
        self.assertEqual(run.running_test, "Reduce.Deadlock")
        for pid in map(int, pid_file.read_text().split()):
            self.assertTrue(wait_gone(pid), f"process {pid} survived the timeout")

    # SIGSEGV after a RUN line: CRASH naming that test and the signal.
    def test_segfault(self):
        binary = fake_gtest(self.dir / "t", None, extra="""
            print("[ RUN      ] Suite.Name", flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        """)
        run = self.run_tests(binary)
        self.assertIs(run.status, status.CRASH)
        self.assertEqual(run.running_test, "Suite.Name")
        self.assertIn("SIGSEGV", run.message)
        self.assertIn("Suite.Name", run.message)
        self.assertEqual(run.reproduce(run.running_test).split()[-1], "--gtest_filter=Suite.Name")

    # A flood of output is capped, and the results are still read.
    def test_megabytes_of_output(self):
        binary = fake_gtest(self.dir / "t", "gtest-1.12-pass.json", extra="""
            sys.stdout.write(("x" * 1023 + "\\n") * 6000)
        """)
        run = self.run_tests(binary)
        self.assertIs(run.status, status.PASS, run.message)

    # GPU tests skipped with "No CUDA GPU" (message only in stdout, as with 1.12).
    def test_no_gpu(self):
        binary = fake_gtest(self.dir / "t", "gtest-1.12-nogpu.json", "gtest-1.12-nogpu.stdout.txt")
        run = self.run_tests(binary)
        self.assertIs(run.status, status.NO_GPU, run.message)

    # A truncated JSON file (crash while writing) is a crash, not a grader error.
    def test_truncated_json(self):
        text = fixture("gtest-1.12-pass.json").read_text()
        binary = fake_gtest(self.dir / "t", None, extra=f"""
            open(out[0], "w").write({text[:200]!r})
            os.kill(os.getpid(), signal.SIGABRT)
        """)
        run = self.run_tests(binary)
        self.assertIs(run.status, status.CRASH)
        self.assertIn("SIGABRT", run.message)

    def test_missing_binary(self):
        run = self.run_tests(self.dir / "nope")
        self.assertIs(run.status, status.ERROR)
        self.assertIn("cannot run", run.message)


# A fake test binary that honours --gtest_filter (a ':'-list of exact names) and
# --gtest_list_tests: a test whose name has "Fail" fails, "Crash" crashes the process,
# "Hang" never ends. Each run appends its filter to the log, and every process (listing
# too) its CUDA_DEVICE_MAX_CONNECTIONS to the log's ".env" file.
FILTERING_GTEST = """
import json, os, signal, sys, time
NAMES = {names!r}
args = sys.argv[1:]
open({log!r} + ".env", "a").write(os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "unset") + "\\n")
if "--gtest_list_tests" in args:
    suite = None
    for name in NAMES:
        head, test = name.split(".", 1)
        if head != suite:
            print(head + ".")
            suite = head
        print("  " + test)
    sys.exit(0)
wanted = next((a.split("=", 1)[1].split(":") for a in args if a.startswith("--gtest_filter=")), NAMES)
open({log!r}, "a").write(":".join(wanted) + "\\n")
out = next(a.split(":", 1)[1] for a in args if a.startswith("--gtest_output=json:"))
suites = {{}}
for name in [n for n in NAMES if n in wanted]:
    print("[ RUN      ] " + name, flush=True)
    if "Crash" in name:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "Hang" in name:
        time.sleep(600)
    head, test = name.split(".", 1)
    entry = {{"name": test, "status": "RUN", "result": "COMPLETED", "time": "0.01s", "classname": head}}
    if "Fail" in name:
        entry["failures"] = [{{"failure": "expected 1, got 2", "type": ""}}]
    suites.setdefault(head, []).append(entry)
    print(("[  FAILED  ] " if "Fail" in name else "[       OK ] ") + name, flush=True)
# The run's own time as GoogleTest writes it: half a second and a quarter per test.
took = 0.5 + 0.25 * len([n for n in NAMES if n in wanted])
json.dump({{"time": str(took) + "s", "testsuites": [{{"name": h, "testsuite": t}} for h, t in suites.items()]}},
          open(out, "w"))
"""


class ShardTest(unittest.TestCase):
    """run_tests with shards: the listed tests dealt to processes side by side, merged."""

    NAMES = ["A.one", "A.two", "A.three", "B.four", "B.five", "C.six", "C.seven"]

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)
        self.log = self.dir / "filters"

    def run_sharded(self, names: list[str], shards: int, timeout: float = 20,
                    env: dict[str, str] | None = None) -> gtest.TestRun:
        binary = write_script(self.dir / "t", FILTERING_GTEST.format(names=names, log=str(self.log)))
        return gtest.run_tests(binary, seed=7, timeout=timeout, json_path=self.dir / "lab.gtest.json", shards=shards,
                               env=env)

    # The grader's overrides (CUDA_DEVICE_MAX_CONNECTIONS) reach every process of the run,
    # the listing too, and the reproduce command names them, so that it runs the same way.
    def test_environment_reaches_every_process(self):
        for shards in (1, 3):
            with self.subTest(shards=shards):
                (self.dir / "filters.env").unlink(missing_ok=True)
                run = self.run_sharded(self.NAMES, shards, env={"CUDA_DEVICE_MAX_CONNECTIONS": "1"})
                self.assertIs(run.status, status.PASS, run.message)
                self.assertEqual((self.dir / "filters.env").read_text().split(), ["1"] * (1 + shards))
                self.assertTrue(run.command.startswith("CUDA_DEVICE_MAX_CONNECTIONS=1 "), run.command)
                self.assertTrue(run.reproduce("A.one").startswith("CUDA_DEVICE_MAX_CONNECTIONS=1 "))
        (self.dir / "filters.env").unlink()
        with mock.patch.dict(os.environ):
            os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
            run = self.run_sharded(self.NAMES, 1)
        self.assertEqual((self.dir / "filters.env").read_text().split(), ["unset"] * 2)
        self.assertFalse(run.command.startswith("CUDA_"), run.command)

    # The binaries' own time of a sharded run is its slowest shard's (3 tests: 1.25 s).
    def test_binary_seconds_of_the_slowest_shard(self):
        self.assertEqual(self.run_sharded(self.NAMES, 3).binary_s, 1.25)
        self.assertEqual(self.run_sharded(self.NAMES, 1).binary_s, 2.25)

    def test_every_test_runs_once_in_list_order(self):
        run = self.run_sharded(self.NAMES, 3)
        self.assertIs(run.status, status.PASS, run.message)
        self.assertEqual([t.name for t in run.tests], self.NAMES)
        filters = sorted(self.log.read_text().split())
        self.assertEqual(filters, sorted(["A.one:B.four:C.seven", "A.two:B.five", "A.three:C.six"]))
        self.assertEqual(sorted(p.name for p in self.dir.glob("lab.gtest.*.json")),
                         ["lab.gtest.0.json", "lab.gtest.1.json", "lab.gtest.2.json"])
        self.assertTrue(run.command.endswith("t --seed=7"), run.command)  # reproduces the whole run

    def test_a_failure_in_one_shard(self):
        names = self.NAMES[:3] + ["B.Fails"] + self.NAMES[4:]
        run = self.run_sharded(names, 2)
        self.assertIs(run.status, status.PARTIAL)
        self.assertEqual(run.message, "1 of 7 tests failed")
        self.assertEqual([t.outcome for t in run.tests].count("passed"), 6)

    # A crash ends its shard only: the other shards' results stay, the crash decides the lab.
    def test_a_crash_in_one_shard(self):
        names = ["A.one", "A.Crashes", "A.three", "B.four"]
        run = self.run_sharded(names, 2)
        self.assertIs(run.status, status.CRASH)
        self.assertEqual(run.running_test, "A.Crashes")
        outcomes = {t.name: t.outcome for t in run.tests}
        self.assertEqual(outcomes, {"A.one": "passed", "A.Crashes": "failed", "A.three": "passed",
                                    "B.four": "failed"})  # B.four shared the crashed process

    def test_a_hang_in_one_shard(self):
        start = time.monotonic()
        run = self.run_sharded(["A.one", "A.Hangs", "A.three"], 3, timeout=2)
        self.assertLess(time.monotonic() - start, 15)
        self.assertIs(run.status, status.TIMEOUT)
        self.assertEqual(run.running_test, "A.Hangs")
        self.assertEqual({t.name: t.outcome for t in run.tests}["A.three"], "passed")

    # In one process the binary lists what it runs itself (--list-file): no second process
    # only to list, and a test it never reached (it exited first) still fails.
    def test_one_process_lists_its_tests_itself(self):
        marker = '"unset") + "\\n")\n'  # after the line that logs every process
        script = FILTERING_GTEST.replace(marker, marker + (
            "listing = next((a.split('=', 1)[1] for a in args if a.startswith('--list-file=')), None)\n"
            "if listing and '--gtest_list_tests' not in args:\n"
            "    open(listing, 'w').write('\\n'.join(NAMES) + '\\n')\n"
            "if 'A.three' in NAMES and '--gtest_list_tests' not in args:\n"
            "    print('[ RUN      ] A.one', flush=True)\n"
            "    sys.exit(0)\n"), 1)
        binary = write_script(self.dir / "t", script.format(names=self.NAMES, log=str(self.log)))
        run = gtest.run_tests(binary, seed=7, timeout=20, json_path=self.dir / "lab.gtest.json")
        self.assertEqual((self.dir / "filters.env").read_text().split(), ["unset"])  # one process only
        self.assertIs(run.status, status.CRASH, run.message)  # exit 0 without its JSON
        self.assertEqual([t.name for t in run.tests], self.NAMES)
        self.assertTrue(all(t.outcome == "failed" for t in run.tests))
        self.assertEqual((self.dir / "lab.gtest.json.list").read_text().split(), self.NAMES)

    def test_more_shards_than_tests(self):
        run = self.run_sharded(["A.one", "A.two"], 8)
        self.assertIs(run.status, status.PASS, run.message)
        self.assertEqual(len(self.log.read_text().split()), 2)


if __name__ == "__main__":
    unittest.main()
