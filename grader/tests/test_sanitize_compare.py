"""The sanitizer stage sees what is graded: launch logs, the comparison of each tool run
with the run of the same tests without the tools, and the judge arguments of the stage
(--exact-bounds, --launch-log), with fake programs in place of the judge and the tool."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path

from grader import sanitize
from grader.sanitize import Call, Launch, ToolRun
from grader.tests.helpers import write_script
from grader.tests.test_sanitize import FakeSanitizerTestCase


def launch(kernel: str, grid=(4, 1, 1), block=(256, 1, 1), shared: int = 0, args: str = "00000000000000aa") -> Launch:
    return Launch(kernel, tuple(grid), tuple(block), shared, args)


def call(*launches: Launch, function: str = "vector_add", variant: str = "default") -> Call:
    return Call(function, variant, "ok", len(launches), list(launches))


def log_line(number: int, c: Call) -> str:
    return json.dumps({"call": number, "function": c.function, "variant": c.variant, "outcome": c.outcome,
                       "total": c.total, "launches": [
                           {"kernel": l.kernel, "grid": list(l.grid), "block": list(l.block), "shared": l.shared,
                            "args": l.args} for l in c.launches]}) + "\n"


class TempDirTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="sanitize-compare-"))
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def write_log(self, name: str, calls: list[Call]) -> Path:
        path = self.tmp / f"{name}.launches.jsonl"
        path.write_text("".join(log_line(i, c) for i, c in enumerate(calls, 1)))
        return path


class ReadLaunchLogTest(TempDirTestCase):
    def test_reads_calls_in_order(self):
        path = self.write_log("plain", [call(launch("k1")), call(launch("k2"), launch("k3"), function="f")])
        calls = sanitize.read_launch_log(path)
        self.assertEqual([c.function for c in calls], ["vector_add", "f"])
        self.assertEqual([l.kernel for l in calls[1].launches], ["k2", "k3"])
        self.assertEqual(calls[0].launches[0].grid, (4, 1, 1))

    def test_missing_cut_or_huge_logs_are_not_read(self):
        self.assertIsNone(sanitize.read_launch_log(self.tmp / "none.jsonl"))
        self.assertIsNone(sanitize.read_launch_log(None))
        cut = self.write_log("cut", [call(launch("k1"))])
        cut.write_text(cut.read_text()[:-20])  # the judge was killed mid-line
        self.assertIsNone(sanitize.read_launch_log(cut))
        huge = self.tmp / "huge.jsonl"
        huge.write_bytes(b"\n" * (sanitize.MAX_LOG_BYTES + 1))
        self.assertIsNone(sanitize.read_launch_log(huge))


class CompareRunsTest(unittest.TestCase):
    def test_the_same_work_is_no_difference(self):
        runs = [call(launch("a"), launch("b")), call(launch("a"))]
        self.assertIsNone(sanitize.compare_runs(runs, [call(launch("b"), launch("a")), call(launch("a"))], "racecheck"))

    def test_another_kernel_costs_and_names_it(self):
        found = sanitize.compare_runs([call(launch("racy_sum"))], [call(launch("safe_sum"))], "racecheck")
        self.assertTrue(found.costs)
        self.assertEqual(found.kernel, "racy_sum")
        self.assertIn("call 1 (vector_add): racy_sum ran without racecheck but not under it", found.text)

    def test_an_extra_kernel_under_the_tool_costs(self):
        found = sanitize.compare_runs([call(launch("k"))], [call(launch("probe"), launch("k"))], "memcheck")
        self.assertTrue(found.costs)
        self.assertIn("probe ran under memcheck but not without it", found.text)

    def test_other_block_or_shared_memory_costs(self):
        found = sanitize.compare_runs([call(launch("k", block=(256, 1, 1)))], [call(launch("k", block=(128, 1, 1)))],
                                      "racecheck")
        self.assertTrue(found.costs)
        self.assertIn("block (256,1,1)", found.text)
        found = sanitize.compare_runs([call(launch("k", shared=0))], [call(launch("k", shared=1024))], "racecheck")
        self.assertTrue(found.costs)

    def test_other_argument_values_cost(self):
        # The same kernel and shape, told by an argument to take another path.
        found = sanitize.compare_runs([call(launch("k", args="01"))], [call(launch("k", args="02"))], "racecheck")
        self.assertTrue(found.costs)
        self.assertIn("other argument values", found.text)
        # Unknown digests (a CUDA error was pending) are not compared.
        self.assertIsNone(sanitize.compare_runs([call(launch("k", args=""))], [call(launch("k", args="02"))], "x"))

    def test_a_grid_alone_is_a_note(self):
        found = sanitize.compare_runs([call(launch("k", grid=(528, 1, 1), args="01"))],
                                      [call(launch("k", grid=(396, 1, 1), args="02"))], "racecheck")
        self.assertFalse(found.costs)
        self.assertIn("grid (528,1,1) without racecheck and (396,1,1) under it", found.text)
        # ...unless something else differs too.
        found = sanitize.compare_runs([call(launch("k", grid=(528, 1, 1))), call(launch("a"))],
                                      [call(launch("k", grid=(396, 1, 1))), call(launch("b"))], "racecheck")
        self.assertTrue(found.costs)

    def test_other_calls_or_counts_cost(self):
        self.assertTrue(sanitize.compare_runs([call(launch("k"))], [], "racecheck").costs)
        found = sanitize.compare_runs([call(launch("k"))], [call(launch("k"), function="reduce_sum")], "racecheck")
        self.assertTrue(found.costs)
        many, more = call(*[launch("k")] * 3), call(*[launch("k")] * 3)
        more.total = 30  # more launches than the reply could list
        self.assertTrue(sanitize.compare_runs([many], [more], "racecheck").costs)


class CompareWithPlainTest(TempDirTestCase):
    def result(self, plain: list[Call], tools: dict[str, list[Call] | None], **plain_fields) -> sanitize.SanitizerResult:
        runs = [ToolRun(tool, "clean", f"compute-sanitizer --tool {tool}",
                        launch_log=self.write_log(tool, calls) if calls is not None else self.tmp / "absent")
                for tool, calls in tools.items()]
        plain_run = ToolRun(sanitize.PLAIN, plain_fields.pop("status", "clean"), "judge",
                            launch_log=self.write_log("plain", plain), **plain_fields)
        return sanitize.SanitizerResult(True, runs=runs, plain=plain_run)

    def test_a_tool_run_that_ran_other_code_has_a_finding(self):
        found = self.result([call(launch("racy_sum"))], {"racecheck": [call(launch("safe_sum"))],
                                                        "memcheck": [call(launch("racy_sum"))]})
        sanitize.compare_with_plain(found)
        self.assertEqual([r.status for r in found.runs], ["differs", "clean"])
        [finding] = found.findings
        self.assertEqual((finding.tool, finding.kind, finding.function), ("racecheck", sanitize.DIFFERS, "racy_sum"))
        self.assertIn("racecheck: behaves differently: call 1 (vector_add): racy_sum ran without racecheck",
                      finding.message)
        self.assertEqual(found.as_dict()["findings"][0]["tool"], "racecheck")

    def test_grid_differences_are_notes(self):
        found = self.result([call(launch("k", grid=(8, 1, 1)))], {"racecheck": [call(launch("k", grid=(6, 1, 1)))]})
        sanitize.compare_with_plain(found)
        self.assertEqual(found.findings, [])
        self.assertIn("no deduction", found.notes[0])

    def test_tests_that_fail_only_under_a_tool_cost(self):
        found = self.result([call(launch("k"))], {"racecheck": [call(launch("k"))]})
        found.runs[0].failed_tests = ["Sizes/ReduceSumGpu.MatchesCpu/n_1025_integers"]
        sanitize.compare_with_plain(found)
        self.assertEqual(found.runs[0].status, "differs")
        self.assertIn("n_1025_integers failed under racecheck and passed without it", found.findings[0].message)

    def test_a_hang_under_a_tool_costs_nothing(self):
        # Programs run 10-100x slower under the tools: a call timeout there is no verdict.
        found = self.result([call(launch("k"))], {"racecheck": [call(launch("k"))]})
        found.runs[0].failed_tests, found.runs[0].hung = ["Sizes/X.Y/n_33"], True
        sanitize.compare_with_plain(found)
        self.assertEqual(found.findings, [])

    def test_no_comparison_without_records(self):
        found = self.result([call(launch("k"))], {"racecheck": None}, status="timeout")
        sanitize.compare_with_plain(found)
        self.assertEqual(found.findings, [])
        self.assertIn("without the tools timed out", found.notes[0])
        found = self.result([call(launch("k"))], {"racecheck": None})
        sanitize.compare_with_plain(found)
        self.assertEqual(found.findings, [])
        self.assertIn("racecheck: no launch record", found.notes[0])

    def test_runs_with_findings_are_not_compared_again(self):
        found = self.result([call(launch("k"))], {"memcheck": [call(launch("other"))]})
        found.runs[0].status = "errors"
        found.runs[0].finding = sanitize.Finding("memcheck", "Invalid __global__ read of size 4 bytes")
        sanitize.compare_with_plain(found)
        self.assertEqual([f.kind for f in found.findings], ["Invalid __global__ read of size 4 bytes"])


# A fake judge test program: writes one launch-log line per "call"; under a tool (the fake
# tool sets FAKE_UNDER_TOOL) a file that probes for the tools launches `safe_sum`.
FAKE_JUDGE = """
    import json, os, sys
    args = sys.argv[1:]
    log = [a.split("=", 1)[1] for a in args if a.startswith("--launch-log=")]
    assert "--exact-bounds" in args, args
    under = os.environ.get("FAKE_UNDER_TOOL")
    kernel = "safe_sum" if under and os.environ.get("FAKE_PROBE") else "racy_sum"
    if log:
        with open(log[0], "a") as out:
            out.write(json.dumps({"call": 1, "function": "reduce_sum", "variant": "default", "outcome": "ok",
                                  "total": 1, "launches": [{"kernel": kernel, "grid": [5, 1, 1],
                                  "block": [256, 1, 1], "shared": 0, "args": "0123"}]}) + "\\n")
    print("[==========] 1 test from 1 test suite ran. (1 ms total)")
    sys.exit(0)
"""

# A fake compute-sanitizer that runs the program it is given (the arguments after its own).
FAKE_TOOL = """
    import os, subprocess, sys
    args = sys.argv[1:]
    program = next(i for i, a in enumerate(args) if a.endswith("_judge_test"))
    log = args[args.index("--log-file") + 1]
    open(log, "w").write("========= ERROR SUMMARY: 0 errors\\n")
    done = subprocess.run(args[program:], env={**os.environ, "FAKE_UNDER_TOOL": "1"})
    sys.exit(done.returncode)
"""


class RunWithComparisonTest(TempDirTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.judge = write_script(self.tmp / "bin" / "reduction_judge_test", FAKE_JUDGE)
        self.tool = write_script(self.tmp / "cuda" / "compute-sanitizer", FAKE_TOOL)
        self.addCleanup(os.environ.pop, "FAKE_PROBE", None)

    def run_stage(self) -> sanitize.SanitizerResult:
        return sanitize.run(self.judge, tools=["memcheck", "racecheck"], test_filter="*n_1025*", seed=3, timeout=60,
                            sanitizer=self.tool, extra_args=["--impl=/x/lib.so", "--exact-bounds"],
                            log_dir=self.tmp / "results", only="reduction_worker", compare=True)

    def test_the_same_code_everywhere_is_clean(self):
        found = self.run_stage()
        self.assertEqual([r.status for r in found.runs], ["clean", "clean"])
        self.assertEqual(found.plain.status, "clean")
        self.assertEqual(found.findings, [])
        for name in ("plain", "memcheck", "racecheck"):
            self.assertTrue((self.tmp / "results" / f"{name}.launches.jsonl").is_file(), name)
        self.assertIn("--launch-log=", found.runs[1].command)

    def test_a_file_that_probes_for_the_tools_loses_the_points(self):
        os.environ["FAKE_PROBE"] = "1"
        found = self.run_stage()
        self.assertEqual([r.status for r in found.runs], ["differs", "differs"])
        self.assertEqual([f.function for f in found.findings], ["racy_sum", "racy_sum"])
        self.assertIn("racy_sum ran without racecheck but not under it", found.findings[1].message)

    def test_without_compare_nothing_else_runs(self):
        found = sanitize.run(self.judge, tools=["racecheck"], test_filter="*", seed=3, timeout=60,
                             sanitizer=self.tool, extra_args=["--exact-bounds"], log_dir=self.tmp / "results")
        self.assertIsNone(found.plain)
        self.assertNotIn("--launch-log", found.runs[0].command)


class GradeArgumentsTest(FakeSanitizerTestCase):
    """The grader's stage passes the judge --exact-bounds and a launch log per tool; the
    find-the-bug exercises' own tool runs get --exact-bounds too."""

    def test_stage_arguments(self):
        self.fake_labs(self.bin)
        code, out, err = self.main("--no-build", "--seed", "5", "vectorAdd", sanitizer=True)
        self.assertEqual(code, 0, out + err)
        calls = self.calls()
        self.assertEqual(len(calls), 3)
        for tool, line in zip(("memcheck", "racecheck", "synccheck"), sorted(calls, key=lambda c: c.split()[2:5])):
            self.assertIn("--exact-bounds", line)
            self.assertRegex(line, r"--launch-log=\S+vectorAdd\.sanitizer/\w+\.launches\.jsonl")
        lab = self.report()["labs"][0]
        self.assertIsNotNone(lab["sanitizer"]["plain"])  # the same tests ran without the tools
        self.assertEqual(lab["total"], 100.0)  # a fake judge writes no launch log: a note, no deduction
        self.assertTrue(any("left no launch record" in note for note in lab["notes"]), lab["notes"])


if __name__ == "__main__":
    unittest.main()
