"""The compute-sanitizer stage: output parsing (sample outputs in fixtures/sanitizer/),
classification of a run, a fake compute-sanitizer, and the deduction end to end."""

from __future__ import annotations

import fnmatch
import os
import sys
import textwrap
import unittest
from pathlib import Path
from unittest import mock

from grader import config, gtest, sanitize
from grader.proc import ProcResult
from grader.tests.helpers import fake_bench, fake_gtest, fixture, write_script
from grader.tests.test_cli import CliTestCase
from grader.tests.test_timing import GATED_BENCH_HEAD

ROOT = Path("/kit/build/grader/overlay")


def sample(name: str) -> str:
    return fixture(f"sanitizer/{name}.txt").read_text()


def result(stdout: str, returncode: int = 0, timed_out: bool = False) -> ProcResult:
    return ProcResult("compute-sanitizer ...", returncode, timed_out, 1.0, stdout, "")


# A fake compute-sanitizer: checks the grader's flags, prints the sample for its tool
# (FAKE_SANITIZER_<TOOL> names it; none: a clean run) and exits as the real one would.
FAKE_SANITIZER = f"""
    import os, sys
    args = sys.argv[1:]
    tool = args[args.index("--tool") + 1]
    assert args[args.index("--error-exitcode") + 1] == "99", args
    assert "--report-api-errors" in args and any(a.startswith("--gtest_filter=") for a in args), args
    assert any(a.startswith("--seed=") for a in args) and any(a.endswith("_test") and os.path.exists(a)
                                                             for a in args), args
    connections = os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS", "unset")
    open(os.environ["FAKE_SANITIZER_LOG"], "a").write(f"connections={{connections}} " + " ".join(args) + "\\n")
    if os.environ.get("FAKE_SANITIZER_SPANS"):  # when each tool started and ended
        import time
        spans = open(os.environ["FAKE_SANITIZER_SPANS"], "a")
        spans.write(f"start {{tool}} {{time.monotonic()}}\\n")
        spans.flush()
        time.sleep(1.0)
        spans.write(f"end {{tool}} {{time.monotonic()}}\\n")
    name = os.environ.get("FAKE_SANITIZER_" + tool.upper())
    text = open(os.path.join({str(fixture("sanitizer"))!r}, name + ".txt")).read() if name else (
        "========= COMPUTE-SANITIZER\\n[==========] 2 tests from 1 test suite ran. (1 ms total)\\n"
        "========= ERROR SUMMARY: 0 errors\\n")
    if "--log-file" in args:
        # The tool's report goes to the log file; the program's own output stays on stdout.
        assert args[args.index("--target-processes") + 1] == "all", args
        # The judge's own process is not checked: only the worker, where the student's code runs.
        assert args[args.index("--target-processes-filter") + 1].endswith("_worker"), args
        open(args[args.index("--log-file") + 1], "w").write(
            "".join(line for line in text.splitlines(True) if line.startswith("=========")))
        text = "".join(line for line in text.splitlines(True) if not line.startswith("========="))
        text += "========= ERROR SUMMARY: 0 errors (printed by the program: never read)\\n"
    sys.stdout.write(text)
    sys.exit(99 if name and "clean" not in name else 0)
"""


class ParseTest(unittest.TestCase):
    # Out of bounds: the first error (a read), the kernel, the kit-relative line, the
    # thread, and the total count.
    def test_memcheck_out_of_bounds(self):
        finding = sanitize.parse("memcheck", sample("memcheck-oob"), root=ROOT)
        self.assertEqual(finding.kind, "Invalid __global__ read of size 4 bytes")
        self.assertEqual(finding.function, "vector_add_kernel")
        self.assertEqual((finding.file, finding.line), ("labs/vectorAdd/vectorAdd.cu", 21))
        self.assertEqual((finding.thread, finding.block), ("(97,0,0)", "(0,0,0)"))
        self.assertEqual(finding.errors, 318)
        self.assertEqual(finding.message, "memcheck: Invalid __global__ read of size 4 bytes in vector_add_kernel at "
                                          "labs/vectorAdd/vectorAdd.cu:21 (thread (97,0,0), block (0,0,0)); "
                                          "318 errors in all")

    # A race: both sides of the first one.
    def test_racecheck(self):
        finding = sanitize.parse("racecheck", sample("racecheck-race"), root=ROOT)
        self.assertEqual(finding.kind, "Race reported between Write access and Read access")
        self.assertEqual(finding.function, "block_sum_kernel")
        self.assertEqual((finding.file, finding.line), ("labs/reduction/reduction.cu", 27))
        self.assertEqual(finding.other, "labs/reduction/reduction.cu:31")
        self.assertEqual(finding.errors, 2)

    # A barrier in divergent code; the template's return type and arguments dropped.
    def test_synccheck(self):
        finding = sanitize.parse("synccheck", sample("synccheck-divergent"), root=ROOT)
        self.assertEqual(finding.kind, "Barrier error detected. Divergent thread(s) in block")
        self.assertEqual(finding.function, "block_sum_kernel<256>")
        self.assertEqual(finding.line, 33)
        self.assertEqual(finding.thread, "(128,0,0)")

    # cuda-memcheck's older layout: "at 0x... in file:line:function".
    def test_older_format(self):
        finding = sanitize.parse("memcheck", sample("memcheck-old-format"), root=Path("/kit"))
        self.assertEqual((finding.function, finding.file, finding.line),
                         ("vector_add_kernel", "labs/vectorAdd/vectorAdd.cu", 21))

    def test_file_name_only(self):
        # CUDA 13's compute-sanitizer prints "in vectorAdd.cu:9": the kit's file is found by name.
        text = ("========= Invalid __global__ read of size 4 bytes\n"
                "=========     at vector_add_kernel(const float *, const float *, float *, int)+0x70 in vectorAdd.cu:9\n"
                "=========     by thread (33,0,0) in block (0,0,0)\n"
                "========= ERROR SUMMARY: 190 errors\n")
        kit = Path(__file__).resolve().parents[2]
        finding = sanitize.parse("memcheck", text, root=kit)
        self.assertEqual((finding.file, finding.line), ("labs/vectorAdd/vectorAdd.cu", 9))
        self.assertEqual(sanitize.parse("memcheck", text.replace("vectorAdd.cu", "nowhere.cu"), root=kit).file,
                         "nowhere.cu")

    def test_clean_outputs(self):
        for name in ("memcheck-clean", "racecheck-clean", "memcheck-no-tests"):
            self.assertIsNone(sanitize.parse("memcheck", sample(name)), name)

    def test_short_function(self):
        self.assertEqual(sanitize.short_function("void (anonymous namespace)::k<(bool)0>(const float *, int)"),
                         "k<(bool)0>")
        self.assertEqual(sanitize.short_function("kernel_name"), "kernel_name")


class BuiltinFiltersTest(unittest.TestCase):
    """Each built-in sanitizer filter names tests that exist (checked against the test
    binaries of any build of this kit; skipped when there is none)."""

    def test_filters_match_tests(self):
        kit = Path(__file__).resolve().parents[2]
        checked = 0
        for lab, settings in ((lab, config.load(None).lab(lab)) for lab in config.kit_labs(kit)):
            test_filter = settings.sanitizer_filter
            binary = next((b for b in sorted(kit.glob(f"build/*/bin/{lab}_test")) if b.is_file()), None)
            names = gtest.list_tests(binary, seed=1, timeout=60) if binary else None
            if not names:
                continue
            checked += 1
            for pattern in test_filter.split(":"):
                self.assertTrue(any(fnmatch.fnmatchcase(n, pattern) for n in names),
                                f"{lab}: sanitizer filter {pattern!r} matches no test of {binary}")
        if not checked:
            self.skipTest("no built test binary under build/*/bin to check the filters against")


class ClassifyTest(unittest.TestCase):
    def test_errors(self):
        run = sanitize.classify("memcheck", result(sample("memcheck-oob"), 99), root=ROOT)
        self.assertEqual(run.status, "errors")
        self.assertEqual(run.finding.line, 21)

    # Exit 99 with nothing readable still counts as errors.
    def test_exit_code_without_a_readable_report(self):
        run = sanitize.classify("memcheck", result("garbled\n", 99))
        self.assertEqual((run.status, run.finding.kind), ("errors", "errors reported (see the output)"))

    def test_clean_and_failed_tests_are_clean(self):
        self.assertEqual(sanitize.classify("memcheck", result(sample("memcheck-clean"))).status, "clean")
        self.assertEqual(sanitize.classify("memcheck", result(sample("memcheck-clean"), 1)).status, "clean")

    def test_no_tests_matched(self):
        run = sanitize.classify("memcheck", result(sample("memcheck-no-tests")))
        self.assertEqual(run.status, "no_tests")
        self.assertIn("sanitizer_filter", run.note)

    def test_timeout_and_tool_failure(self):
        run = sanitize.classify("racecheck", result("", -9, timed_out=True), timeout=30)
        self.assertEqual(run.status, "timeout")
        self.assertIn("sanitizer_timeout_s", run.note)
        run = sanitize.classify("racecheck", result("========= Internal Sanitizer Error\n", 255))
        self.assertEqual(run.status, "failed")
        self.assertIn("no deduction", run.note)

    # Seen on an H100: synccheck's log says only "Error: couldn't find exit code." after
    # the judge ended its worker; the tests passed and nothing was found in the program.
    def test_the_tools_own_trouble_is_no_finding(self):
        log = sample("memcheck-clean") + "========= Error: couldn't find exit code.\n"
        self.assertIsNone(sanitize.parse("synccheck", log))
        for code in (0, 99):
            run = sanitize.classify("synccheck", result(log, code))
            self.assertEqual(run.status, "failed")
            self.assertIn("no deduction", run.note)
            self.assertIn("couldn't find exit code", run.note)
        # A real finding beside it still counts.
        run = sanitize.classify("memcheck", result(sample("memcheck-oob") + "========= Error: couldn't find exit code.\n", 99),
                                root=ROOT)
        self.assertEqual(run.status, "errors")


class FakeSanitizerTestCase(CliTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.tools = self.tmp / "cuda" / "bin"
        write_script(self.tools / "compute-sanitizer", FAKE_SANITIZER)
        self.log = self.tmp / "sanitizer.log"
        os.environ.update(PATH=f"{self.tools}{os.pathsep}{os.environ['PATH']}", FAKE_SANITIZER_LOG=str(self.log))
        for tool in ("MEMCHECK", "RACECHECK", "SYNCCHECK"):
            os.environ.pop(f"FAKE_SANITIZER_{tool}", None)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines() if self.log.exists() else []


class RunTest(FakeSanitizerTestCase):
    def test_found_on_path_and_run_per_tool(self):
        binary = fake_gtest(self.bin / "vectorAdd_judge_test", "gtest-1.12-pass.json")
        os.environ["FAKE_SANITIZER_RACECHECK"] = "racecheck-race"
        found = sanitize.run(binary, tools=["memcheck", "racecheck", "synccheck"], test_filter="*Gpu*",
                             seed=5, timeout=30, root=ROOT)
        self.assertTrue(found.ran)
        self.assertEqual([r.status for r in found.runs], ["clean", "errors", "clean"])
        self.assertEqual([f.tool for f in found.findings], ["racecheck"])
        racecheck = next(call for call in self.calls() if "--tool racecheck" in call)
        self.assertIn("--gtest_filter=*Gpu*", racecheck)

    def test_tools_run_side_by_side(self):
        # Each tool is a process of its own: the three start before any of them ends.
        binary = fake_gtest(self.bin / "vectorAdd_judge_test", "gtest-1.12-pass.json")
        spans = self.tmp / "spans"
        os.environ["FAKE_SANITIZER_SPANS"] = str(spans)
        self.addCleanup(os.environ.pop, "FAKE_SANITIZER_SPANS", None)
        found = sanitize.run(binary, tools=["memcheck", "racecheck", "synccheck"], test_filter="*Gpu*",
                             seed=5, timeout=30, root=ROOT)
        self.assertEqual([r.tool for r in found.runs], ["memcheck", "racecheck", "synccheck"])  # in the config's order
        events = [line.split() for line in spans.read_text().splitlines()]
        last_start = max(float(t) for kind, _, t in events if kind == "start")
        first_end = min(float(t) for kind, _, t in events if kind == "end")
        self.assertLess(last_start, first_end)

    def test_not_found(self):
        with mock.patch.object(sanitize, "find_sanitizer", return_value=None):
            found = sanitize.run(Path(sys.executable), tools=["memcheck"], test_filter="*", seed=1, timeout=5)
        self.assertFalse(found.ran)
        self.assertIn("compute-sanitizer not found", found.note)


class GradeWithSanitizerTest(FakeSanitizerTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake_labs(self.bin)

    # Findings cost sanitizer_penalty of the earned points and are reported with their line.
    def test_deduction(self):
        os.environ["FAKE_SANITIZER_MEMCHECK"] = "memcheck-oob"
        code, out, err = self.main("--no-build", "--seed", "5", "vectorAdd", sanitizer=True)
        self.assertEqual(code, 0, out + err)  # still PASS: the points say the rest
        self.assertIn("vectorAdd: testing... 4/4 tests passed... sanitizer... 1 sanitizer finding(s)... timing", out)
        lab = self.report()["labs"][0]
        self.assertEqual(lab["status"], "PASS")
        self.assertEqual((lab["deduction"], lab["total"]), (25.0, 75.0))
        self.assertEqual(lab["sanitizer"]["deduction"], 25.0)
        self.assertEqual(lab["sanitizer"]["findings"][0]["function"], "vector_add_kernel")
        self.assertIn("compute-sanitizer found errors, -25 points", out)
        self.assertIn("vector_add_kernel at /kit/build/grader/overlay/labs/vectorAdd/vectorAdd.cu:21", out)
        self.assertIn("--tool memcheck", lab["reproduce"]["sanitizer"])
        self.assertEqual(len(self.calls()), 3)

    # A lab whose tests passed sets its bench up beside its sanitizer run, not after it; the
    # bench still times only once the sanitizer is done.
    def test_bench_sets_up_beside_the_sanitizer(self):
        spans = self.tmp / "spans"
        for name in ("SPANS", "FAKE_SANITIZER_SPANS"):
            os.environ[name] = str(spans)
            self.addCleanup(os.environ.pop, name, None)
        bench = fake_bench(self.bin / "vectorAdd_judge_bench", "bench-ok.json", argv_log=self.bench_log)
        head, body = bench.read_text().split("\n", 1)
        bench.write_text(head + "\n" + textwrap.dedent(GATED_BENCH_HEAD) + body)
        config_file = self.tmp / "prestart.toml"
        config_file.write_text("[grader]\nprestart_benches = 1\n")
        code, out, err = self.main("--no-build", "--config", str(config_file), "vectorAdd", sanitizer=True)
        self.assertEqual(code, 0, out + err)
        events: dict[tuple[str, str], float] = {}
        for line in spans.read_text().splitlines():
            what, who, when = line.split()
            events[(what, who)] = float(when)
        tools_ended = [when for (what, who), when in events.items() if what == "end" and who != "vectorAdd"]
        self.assertEqual(len(tools_ended), 3, events)
        self.assertLess(events[("setup", "vectorAdd")], min(tools_ended), "the bench set up only after the sanitizer")
        self.assertGreater(events[("go", "vectorAdd")], max(tools_ended), "the bench timed while the sanitizer ran")
        lab = self.report()["labs"][0]
        self.assertEqual(lab["performance"]["points"], 30)
        # The report's spans say the same: the sanitizer after the tests, the bench's set-up
        # starting within the sanitizer's span, its timing after it.
        spans = lab["spans"]
        (tests,), (tools,), (set_up,), (timed,) = (spans[k] for k in ("tests", "sanitizer", "bench_set_up", "bench"))
        self.assertLessEqual(tests[1], tools[0])
        self.assertLess(tools[0], set_up[0] + 0.05)
        self.assertLess(set_up[0], tools[1])
        self.assertLessEqual(tools[1], timed[0])
        self.assertAlmostEqual(lab["seconds"]["sanitizer"], tools[1] - tools[0], delta=0.011)

    # A clean run costs nothing; the filter comes from the config.
    def test_clean_with_config(self):
        config = self.tmp / "c.toml"
        config.write_text('[labs.vectorAdd]\nsanitizer_filter = "*Mine*"\nsanitizer_tools = ["memcheck"]\n')
        code, out, _ = self.main("--no-build", "--config", str(config), "vectorAdd", sanitizer=True)
        self.assertEqual(code, 0)
        self.assertEqual(self.report()["labs"][0]["total"], 100.0)
        self.assertEqual(len(self.calls()), 1)
        self.assertIn("--gtest_filter=*Mine*", self.calls()[0])

    # The tools and the tests run with the config's test_device_connections (1 unless set)
    # as CUDA_DEVICE_MAX_CONNECTIONS, the bench with bench_device_connections (1 too), and
    # their reproduce commands say so; 0 leaves the driver's default.
    def test_device_connections(self):
        os.environ.pop("CUDA_DEVICE_MAX_CONNECTIONS", None)
        self.main("--no-build", "--seed", "5", "vectorAdd", sanitizer=True)
        lab = self.report()["labs"][0]
        self.assertEqual([call.split()[0] for call in self.calls()], ["connections=1"] * 3)
        for stage in ("test", "sanitizer", "bench"):
            self.assertTrue(lab["reproduce"][stage].startswith("CUDA_DEVICE_MAX_CONNECTIONS=1 "), lab["reproduce"])
        self.assertNotIn("CUDA_DEVICE_MAX_CONNECTIONS", os.environ)  # set for those processes only
        self.log.unlink()
        config = self.tmp / "c.toml"
        config.write_text("[grader]\ntest_device_connections = 0\nbench_device_connections = 4\n")
        self.main("--no-build", "--seed", "5", "--config", str(config), "vectorAdd", sanitizer=True)
        lab = self.report()["labs"][0]
        self.assertEqual([call.split()[0] for call in self.calls()], ["connections=unset"] * 3)
        self.assertFalse(lab["reproduce"]["test"].startswith("CUDA_"), lab["reproduce"])
        self.assertTrue(lab["reproduce"]["bench"].startswith("CUDA_DEVICE_MAX_CONNECTIONS=4 "), lab["reproduce"])

    # By default the stage waits for all tests to pass; "always" runs it on a PARTIAL lab.
    def test_when_tests_fail(self):
        self.main("--no-build", "reduction", sanitizer=True)
        self.assertEqual(self.calls(), [])
        self.assertIn("once every test passes", self.report()["labs"][0]["sanitizer"]["note"])
        config = self.tmp / "c.toml"
        config.write_text('[defaults]\nsanitizer_when = "always"\n')
        os.environ["FAKE_SANITIZER_RACECHECK"] = "racecheck-race"
        self.main("--no-build", "--config", str(config), "reduction", sanitizer=True)
        lab = self.report()["labs"][0]
        self.assertEqual(len(self.calls()), 3)
        self.assertEqual(lab["sanitizer"]["deduction"], round(46.67 * 0.25, 2))
        self.assertEqual(lab["total"], round(46.67 - 11.67, 2))

    # --no-sanitizer, and sanitizer = false, skip the stage.
    def test_disabled(self):
        self.main("--no-build", "vectorAdd")  # CliTestCase passes --no-sanitizer
        self.assertEqual(self.calls(), [])
        self.assertIn("--no-sanitizer", self.report()["labs"][0]["sanitizer"]["note"])
        config = self.tmp / "c.toml"
        config.write_text("[defaults]\nsanitizer = false\n")
        self.main("--no-build", "--config", str(config), "vectorAdd", sanitizer=True)
        self.assertEqual(self.calls(), [])

    # No compute-sanitizer anywhere: skipped with a note, once in the console.
    def test_missing_tool(self):
        with mock.patch("grader.sanitize.find_sanitizer", return_value=None):
            code, out, _ = self.main("--no-build", "vectorAdd", sanitizer=True)
        self.assertEqual(code, 0)
        self.assertIn("sanitizer skipped (compute-sanitizer not found)", out)
        self.assertEqual(out.count("compute-sanitizer not found (looked on PATH"), 1)
        self.assertEqual(self.report()["labs"][0]["total"], 100.0)


if __name__ == "__main__":
    unittest.main()
