"""End-to-end tests of `python3 -m grader` (cli.main) against fake kits and fake binaries."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from grader import build, cli, config, gpu, gpu_lock, gtest
from grader.tests.helpers import fake_bench, fake_gtest, fake_libraries, make_kit, write_script

SEGFAULT = """
    print("[ RUN      ] Scan.Large", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)
"""

# A fake cmake for the full pipeline: "building" a target copies a prepared fake
# binary into <build>/bin; the kit's targets of labs named in FAKE_KIT_FAILS fail.
FAKE_CMAKE = """
    import json, os, shutil, sys
    args = sys.argv[1:]
    open(os.environ["FAKE_CMAKE_LOG"], "a").write(json.dumps(args) + "\\n")
    if args[0] == "--build":
        build = args[1]
        targets = args[3:args.index("--")] if "--" in args else args[3:]
        failing = os.environ.get("FAKE_KIT_FAILS", "").split()
        if any(t.split("_")[0] in failing for t in targets):
            print("/kit/labs/scan/scan_test.cu(7): error: the kit itself is broken")
            sys.exit(1)
        os.makedirs(os.path.join(build, "bin"), exist_ok=True)
        for t in targets:
            src = os.path.join(os.environ["FAKE_PREBUILT"], t)
            if os.path.exists(src):
                shutil.copy2(src, os.path.join(build, "bin", t))
        sys.exit(0)
    if os.environ.get("FAKE_CONFIGURE_FAILS"):
        print("CMake Error at CMakeLists.txt:3 (project):\\n  No CMAKE_CUDA_COMPILER could be found.")
        sys.exit(1)
    build = args[args.index("-B") + 1]
    os.makedirs(build, exist_ok=True)
    open(os.path.join(build, "CMakeCache.txt"), "w").write("# fake\\n")
"""

# A fake ninja that knows the commands of lib<lab>_student.so (a compile, then a link),
# as `ninja -t commands` prints them, with a fake compiler.
FAKE_NINJA = """
    import os, sys
    args = sys.argv[1:]
    lab = args[-1][: -len("_student")]
    cc, root = os.environ["FAKE_CC"], os.environ["FAKE_ROOT"]
    print(f"{cc} -I{root}/labs/{lab} -c {root}/labs/{lab}/{lab}.cu -o labs/obj/{lab}.o")
    print(f": && {cc} -shared -o lib/lib{lab}_student.so labs/obj/{lab}.o && :")
"""

# The fake compiler: a source that says "tmp" has a compile error; otherwise it writes -o.
FAKE_CC = """
    import os, sys
    args = sys.argv[1:]
    out = args[args.index("-o") + 1]
    if "-c" in args:
        source = args[args.index("-c") + 1]
        if "tmp" in open(source).read():
            print(f'{source}(12): error: identifier "tmp" is undefined')
            sys.exit(1)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    open(out, "w").write("built")
"""


# nvidia-smi on a machine whose driver finds no GPU.
NO_GPU_SMI = """
    import sys
    print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
    sys.exit(9)
"""


# nvidia-smi on a machine with one 80 GB GPU (its name, memory, no telemetry).
LARGE_GPU_SMI = """
    import sys
    if "-L" in sys.argv:
        print("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)")
    elif any(a.startswith("--query-gpu=memory.total") for a in sys.argv):
        print("81559")
    elif any(a.startswith("--query-gpu=index") for a in sys.argv):
        print("0, NVIDIA H100 80GB HBM3, 9.0, 81559, GPU-0")
    else:
        sys.exit(2)
"""


class CliTestCase(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.root = make_kit(self.tmp / "kit", ["vectorAdd", "reduction", "scan"])
        self.build = self.tmp / "build"
        self.bin = self.build / "bin"
        self.bench_log = self.tmp / "bench-argv"
        # Keep the environment's reference directory out of these runs.
        patcher = mock.patch.dict(os.environ)
        patcher.start()
        for var in ("LABKIT_REFERENCE_DIR", "LABKIT_PRISTINE", "LABKIT_GRADER_SECRET", "CUDA_VISIBLE_DEVICES"):
            os.environ.pop(var, None)
        self.addCleanup(patcher.stop)
        # This machine's GPU, or its lack of one, must not change what these tests see (how
        # many labs are tested at once, whether benches set up early, the GPU a report names):
        # an nvidia-smi that finds no GPU comes first on PATH; a test that wants a GPU puts
        # its own fake before it.
        write_script(self.tmp / "no-gpu" / "nvidia-smi", NO_GPU_SMI)
        os.environ["PATH"] = f"{self.tmp / 'no-gpu'}{os.pathsep}{os.environ['PATH']}"
        # A fake GPU's lock (gpu_lock.py) in this test's own folder, not the machine's.
        folder = mock.patch.object(gpu_lock, "default_folder", return_value=self.tmp / "gpu-locks")
        folder.start()
        self.addCleanup(folder.stop)

    def fake_labs(self, where: Path) -> None:
        """The judge programs: vectorAdd passes and is timed; reduction fails two tests; scan
        segfaults. And stand-ins for the libraries they load."""
        fake_gtest(where / "vectorAdd_judge_test", "gtest-1.12-pass.json", "gtest-1.12-pass.stdout.txt")
        fake_bench(where / "vectorAdd_judge_bench", "bench-ok.json", argv_log=self.bench_log)
        fake_gtest(where / "reduction_judge_test", "gtest-1.12-fail.json", "gtest-1.12-fail.stdout.txt", exit_code=1)
        fake_bench(where / "reduction_judge_bench", "bench-ok.json", argv_log=self.bench_log)
        fake_gtest(where / "scan_judge_test", None, extra=SEGFAULT)
        fake_bench(where / "scan_judge_bench", "bench-ok.json", argv_log=self.bench_log)
        fake_libraries(self.build, ["vectorAdd", "reduction", "scan"])

    def judge(self, lab: str, seed: int) -> str:
        """The start of a reproduce command of lab's judge test program (with the environment
        the grader gives the tests: test_device_connections' default)."""
        return (f"CUDA_DEVICE_MAX_CONNECTIONS=1 {self.bin / (lab + '_judge_test')} --impl={self.build / 'lib' / ('lib' + lab + '_student.so')} "
                f"--call-timeout=60 --seed={seed}")

    def main(self, *args: str, sanitizer: bool = False, gpu_check: bool = False) -> tuple[int, str, str]:
        """cli.main on the fake kit; the sanitizer stage only when asked for (tests of it
        put a fake compute-sanitizer on PATH), the check for a GPU likewise."""
        out, err = io.StringIO(), io.StringIO()
        extra = [] if sanitizer else ["--no-sanitizer"]
        extra += [] if gpu_check else ["--allow-no-gpu"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["--root", str(self.root), "--build-dir", str(self.build), *extra, *args])
        return code, out.getvalue(), err.getvalue()

    def report(self, path: Path | None = None) -> dict:
        return json.loads((path or self.build / "report.json").read_text())

    def bench_calls(self) -> list[list[str]]:
        if not self.bench_log.exists():
            return []
        return [json.loads(line) for line in self.bench_log.read_text().splitlines()]

    def row(self, console: str, lab: str) -> list[str]:
        return next(line for line in console.splitlines() if line.startswith(lab + " ")).split()


class GradeNoBuildTest(CliTestCase):
    # Three labs: PASS with full points, PARTIAL, CRASH; table, details, exit code, report.
    def test_mixed_results(self):
        self.fake_labs(self.bin)
        code, out, err = self.main("--no-build", "--seed", "77")
        self.assertEqual(code, 1, out + err)
        self.assertIn("[1/3] vectorAdd: testing... 4/4 tests passed... timing... done", out)
        self.assertIn("[3/3] scan: testing... crashed... CRASH", out)
        self.assertEqual(self.row(out, "vectorAdd")[:5], ["vectorAdd", "PASS", "70.00/70", "30.00/30", "100.00/100"])
        self.assertEqual(self.row(out, "reduction")[:5], ["reduction", "PARTIAL", "46.67/70", "0.00/30", "46.67/100"])
        self.assertEqual(self.row(out, "scan")[:5], ["scan", "CRASH", "0.00/70", "0.00/30", "0.00/100"])
        self.assertIn("146.67/300", self.row(out, "total"))
        # Every failure comes with the command that reproduces it.
        self.assertIn(f"reproduce: {self.judge('reduction', 77)} --gtest_filter=CpuReference.FailsWithIndex", out)
        self.assertIn("first difference at index 1024", out)
        self.assertIn(f"reproduce: {self.judge('scan', 77)} --gtest_filter=Scan.Large", out)
        self.assertIn("SIGSEGV in test Scan.Large", out)

        # Only the lab whose tests all passed is timed, with the contract's flags.
        self.assertEqual(self.bench_calls(), [["--json", str(self.build / "results" / "vectorAdd.bench.json"),
                                               "--seed=77", f"--impl={self.build / 'lib' / 'libvectorAdd_student.so'}",
                                               "--reference", str(self.build / "lib" / "libvectorAdd_solution.so"),
                                               "--reference-variant", "default", "--graded-only"]])

        report = self.report()
        self.assertEqual((report["schema"], report["version"]), ("labkit-report", 1))
        self.assertEqual((report["seed"], report["impl"], report["interrupted"]), (77, "student", False))
        self.assertEqual((report["total"], report["max"]), (146.67, 300))
        self.assertEqual(report["config"]["defaults"]["full_credit_ratio"], 1.2)
        labs = {lab["lab"]: lab for lab in report["labs"]}
        self.assertEqual([lab["status"] for lab in report["labs"]], ["PASS", "PARTIAL", "CRASH"])
        vector_add = labs["vectorAdd"]
        self.assertEqual(vector_add["performance"]["ratio"], 1.01)
        self.assertEqual(vector_add["performance"]["t_student_ms"], 0.301)
        self.assertEqual(vector_add["bench"]["schema"], "labkit-bench")
        self.assertIn("bench", vector_add["reproduce"])
        reduction = labs["reduction"]
        self.assertEqual(reduction["performance"]["reason"], "performance is graded once every test passes")
        failed = [t for t in reduction["correctness"]["tests"] if t["status"] == "failed"]
        self.assertEqual(len(failed), 2)
        self.assertIn("--gtest_filter=", failed[0]["reproduce"])
        self.assertIn("Scan.Large", labs["scan"]["message"])
        self.assertTrue(labs["scan"]["reproduce"]["failure"].endswith("--gtest_filter=Scan.Large"))

    # On a GPU with room for a waiting bench (80 GB), the bench that passed its tests is set
    # up early and waits at its gate: the same contract flags, with --gate-fd before them.
    def test_bench_command_on_a_large_gpu(self):
        self.fake_labs(self.bin)
        write_script(self.tmp / "gpu" / "nvidia-smi", LARGE_GPU_SMI)
        os.environ["PATH"] = f"{self.tmp / 'gpu'}{os.pathsep}{os.environ['PATH']}"
        code, out, err = self.main("--no-build", "--seed", "77", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        [call] = self.bench_calls()
        self.assertEqual(call[:2], ["--json", str(self.build / "results" / "vectorAdd.bench.json")])
        self.assertRegex(call[2], r"^--gate-fd=\d+$")
        self.assertEqual(call[3:], ["--seed=77", f"--impl={self.build / 'lib' / 'libvectorAdd_student.so'}",
                                    "--reference", str(self.build / "lib" / "libvectorAdd_solution.so"),
                                    "--reference-variant", "default", "--graded-only"])

    # Failures only in tests that weigh 0 (a find-the-bug exercise not fixed yet) do not make
    # the lab PARTIAL: it is graded, timed and scored as passing, and says why.
    def test_failures_that_weigh_nothing_keep_the_lab_passing(self):
        self.fake_labs(self.bin)
        config = self.tmp / "course.toml"
        config.write_text('[labs.reduction.test_weights]\n"CpuReference.*" = 0\n"VectorAddGpu.*" = 0\n'
                          "[labs.vectorAdd]\nenabled = false\n[labs.scan]\nenabled = false\n")
        code, out, err = self.main("--no-build", "--config", str(config), "--seed", "3")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.row(out, "reduction")[:5], ["reduction", "PASS", "70.00/70", "30.00/30", "100.00/100"])
        self.assertEqual(len(self.bench_calls()), 1)
        lab = self.report()["labs"][0]
        self.assertIn("all graded tests passed", lab["message"])
        self.assertIn("weigh 0", lab["message"])
        self.assertEqual(sum(t["status"] == "failed" for t in lab["correctness"]["tests"]), 2)

    # All graded labs pass: exit 0. The config, --reference and --json are honoured;
    # a disabled lab is left out of the default list.
    def test_all_pass_with_config_and_reference(self):
        self.fake_labs(self.bin)
        reference = self.tmp / "ref"
        reference.mkdir()
        (reference / "libvectorAdd_solution.so").write_text("")
        config = self.tmp / "course.toml"
        config.write_text('[grader]\nseed = 5\n[labs.vectorAdd]\nreference_variant = "fast"\n'
                          "[labs.reduction]\nenabled = false\n[labs.scan]\nenabled = false\n")
        json_path = self.tmp / "out" / "grades.json"
        code, out, err = self.main("--no-build", "--config", str(config), "--reference", str(reference),
                                   "--json", str(json_path), "--quiet")
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("[1/1]", out)  # --quiet: no progress
        self.assertIn("1.01x the reference time", out)
        self.assertEqual(self.bench_calls()[0][2:], ["--seed=5", f"--impl={self.build / 'lib' / 'libvectorAdd_student.so'}",
                                                     "--reference", str(reference / "libvectorAdd_solution.so"),
                                                     "--reference-variant", "fast", "--graded-only"])
        report = self.report(json_path)
        self.assertEqual([lab["lab"] for lab in report["labs"]], ["vectorAdd"])
        self.assertEqual(report["config"]["path"], str(config))
        # Where the bench's timing went, from its JSON, beside the lab's own bench seconds.
        seconds = report["labs"][0]["seconds"]
        self.assertEqual((seconds["bench_calibration"], seconds["bench_workloads"]), (0.35, 1.2))
        self.assertIn("bench", seconds)

    # The config's sampling floors reach the judge's bench ("auto", the default, passes none).
    def test_bench_floors_from_the_config(self):
        self.fake_labs(self.bin)
        config = self.tmp / "floors.toml"
        config.write_text("[grader]\nbench_warm_up_s = 0.02\nbench_min_time_s = 0.1\n")
        code, out, err = self.main("--no-build", "--config", str(config), "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.bench_calls()[0][-2:], ["--warm-up=0.02", "--min-time=0.1"])
        self.assertIn("--warm-up=0.02 --min-time=0.1", self.report()["labs"][0]["reproduce"]["bench"])

    # --skip-bench: tests only, performance 0 with the reason, still PASS.
    def test_skip_bench(self):
        self.fake_labs(self.bin)
        code, out, _ = self.main("--no-build", "--skip-bench", "vectorAdd")
        self.assertEqual(code, 0)
        self.assertEqual(self.bench_calls(), [])
        self.assertEqual(self.report()["labs"][0]["performance"]["reason"], "bench skipped (--skip-bench)")

    # A lab named on the command line but absent from the kit (no labs/<lab>/lab.json) is
    # not one of its labs: a usage error that lists them.
    def test_missing_lab(self):
        self.fake_labs(self.bin)
        code, out, err = self.main("--no-build", "Sort", "vectoradd")
        self.assertEqual(code, 2)
        self.assertIn("unknown lab 'Sort'", err)
        self.assertIn("the labs are vectorAdd, reduction, scan", err)

    # --no-build with no binaries: a clear message, not a crash.
    def test_no_binaries(self):
        code, out, _ = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 1)
        self.assertIn("run the grader without --no-build", out)

    # A bug inside the grader costs one lab (ERROR, with traceback); the rest is graded
    # and the report is written.
    def test_grader_exception_in_one_lab(self):
        self.fake_labs(self.bin)
        real = gtest.run_tests

        def flaky(binary, **kwargs):
            if binary.name == "reduction_judge_test":
                raise RuntimeError("boom")
            return real(binary, **kwargs)

        with mock.patch("grader.gtest.run_tests", side_effect=flaky):
            code, out, _ = self.main("--no-build", "vectorAdd", "reduction")
        self.assertEqual(code, 1)
        labs = self.report()["labs"]
        self.assertEqual([lab["status"] for lab in labs], ["PASS", "ERROR"])
        self.assertIn("RuntimeError: boom", labs[1]["traceback"])
        self.assertIn("the grader failed on this lab (RuntimeError: boom)", out)

    # Ctrl-C: the report holds what was graded, and the exit status is 130.
    def test_interrupt(self):
        self.fake_labs(self.bin)
        real = gtest.run_tests

        def interrupt(binary, **kwargs):
            if binary.name == "reduction_judge_test":
                raise KeyboardInterrupt
            return real(binary, **kwargs)

        with mock.patch("grader.gtest.run_tests", side_effect=interrupt):
            code, out, _ = self.main("--no-build")
        self.assertEqual(code, 130)
        report = self.report()
        self.assertTrue(report["interrupted"])
        self.assertEqual([lab["lab"] for lab in report["labs"]], ["vectorAdd"])
        self.assertIn("interrupted", out)


QUESTIONS = [{"id": "launches", "title": "Launches", "kind": "number", "points": 2, "check": "key"},
             {"id": "gbps", "title": "Your GB/s", "kind": "number", "points": 1, "check": "bench"},
             {"id": "why", "title": "Why", "kind": "text", "points": 3, "check": "manual"}]
KEY = {"schema": "labkit-answer-key", "version": 1, "answers": {"launches": {"value": 4}, "why": {"rubric": "r"}}}


class GradeWithQuestionsTest(CliTestCase):
    """Graded questions end to end: the student's answers.md against the key and this run's bench."""

    def setUp(self) -> None:
        super().setUp()
        manifest = self.root / "labs" / "vectorAdd" / "lab.json"
        data = json.loads(manifest.read_text())
        manifest.write_text(json.dumps({**data, "questions": QUESTIONS}))
        self.keys = self.root / "solutions"
        (self.keys / "vectorAdd").mkdir(parents=True)
        (self.keys / "vectorAdd" / "answer_key.json").write_text(json.dumps(KEY))
        self.fake_labs(self.bin)

    def answer(self, text: str) -> None:
        (self.root / "labs" / "vectorAdd" / "answers.md").write_text(text)

    # Right answers: the checked points join the total; the written one waits for a person.
    def test_answers_count(self):
        self.answer("## launches\nAnswer: 4\n## gbps\nAnswer: 2600 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)\n"
                    "## why\nAnswer: because\n")
        code, out, err = self.main("--no-build", "--seed", "3", "--answer-feedback", "figures", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.row(out, "vectorAdd")[:6],
                         ["vectorAdd", "PASS", "70.00/70", "30.00/30", "3.00/3", "103.00/103"])
        self.assertIn("3 more points of written answers are graded by hand", out)
        lab = self.report()["labs"][0]
        self.assertEqual((lab["total"], lab["max"]), (103.0, 103.0))
        answers = lab["answers"]
        self.assertEqual((answers["points"], answers["max"], answers["pending"]), (3.0, 3.0, 3.0))
        self.assertEqual([q["status"] for q in answers["questions"]], ["correct", "correct", "manual"])
        self.assertEqual(answers["questions"][1]["figure"], 2675.0)  # the fake bench's student GB/s
        self.assertNotIn("value", json.dumps(answers))  # the key's values never reach the report

    # Wrong, missing and unreadable: no points, reasons in the details, the lab still PASS.
    def test_wrong_or_missing_answers(self):
        self.answer("## launches\nAnswer: 5\n## gbps\nAnswer: 100 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)\n")
        code, out, _ = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0)
        self.assertEqual(self.row(out, "vectorAdd")[4:6], ["0.00/3", "100.00/103"])
        self.assertIn("launches (Launches): wrong", out)
        # By default the feedback says that the answer is off, never the figure it was held to.
        self.assertIn("not within 15% of what your bench measured", out)
        self.assertNotIn("2675", out)
        code, out, _ = self.main("--no-build", "--answer-feedback", "figures", "vectorAdd")
        self.assertIn("your bench measured 2675", out)
        # A bare number names no GPU: it goes to the instructor, neither right nor wrong.
        self.answer("## launches\nAnswer: 4\n## gbps\nAnswer: 2675\n")
        code, out, _ = self.main("--no-build", "vectorAdd")
        gbps = self.report()["labs"][0]["answers"]["questions"][1]
        self.assertEqual((gbps["status"], gbps["points"]), ("other_gpu", 0.0))
        (self.root / "labs" / "vectorAdd" / "answers.md").unlink()
        code, out, _ = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0)
        self.assertIn("answers.md not found", out)

    # The key comes from --answer-keys when given; without a key the numbers are graded at the
    # deadline (as on the Classroom runner, which holds no key), not wrong.
    def test_answer_keys_folder(self):
        self.answer("## launches\nAnswer: 4\n")
        elsewhere = self.tmp / "keys"
        (self.keys / "vectorAdd").rename(self.tmp / "moved")
        code, out, _ = self.main("--no-build", "vectorAdd")
        self.assertEqual(self.report()["labs"][0]["answers"]["questions"][0]["status"], "at_deadline")
        self.assertIn("key at the deadline", out)
        (elsewhere).mkdir()
        (self.tmp / "moved").rename(elsewhere / "vectorAdd")
        code, out, _ = self.main("--no-build", "--answer-keys", str(elsewhere), "vectorAdd")
        self.assertEqual(self.report()["labs"][0]["answers"]["questions"][0]["status"], "correct")
        code, _, err = self.main("--no-build", "--answer-keys", str(self.tmp / "none"), "vectorAdd")
        self.assertEqual(code, 2)
        self.assertIn("are not a folder", err)

    # A key file that cannot be read is the instructor's to fix: its answers are unchecked
    # and the note says why, not "graded at the deadline" as where there is no key at all.
    def test_broken_key_is_not_a_missing_key(self):
        self.answer("## launches\nAnswer: 4\n")
        (self.keys / "vectorAdd" / "answer_key.json").write_text("{ not json")
        code, out, _ = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out)
        self.assertEqual(self.report()["labs"][0]["answers"]["questions"][0]["status"], "unchecked")
        self.assertIn("the answer key could not be used", out)
        self.assertNotIn("at the deadline", out)

    # A submission's answers file is taken with its code; without one the lab is still graded.
    def test_submission_answers(self):
        submission = self.tmp / "student"
        make_kit(submission, ["vectorAdd", "reduction", "scan"])
        manifest = "labs/vectorAdd/lab.json"
        (submission / manifest).write_text((self.root / manifest).read_text())
        (submission / "labs" / "vectorAdd" / "answers.md").write_text("## launches\nAnswer: 4\n")
        code, out, err = self.main("--no-build", "--submission", str(submission), "--pristine", str(self.root),
                                   "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.report()["labs"][0]["answers"]["points"], 2.0)
        self.assertNotIn("not student-editable", out)  # answers.md is the student's to change
        (submission / "labs" / "vectorAdd" / "answers.md").unlink()
        code, out, _ = self.main("--no-build", "--submission", str(submission), "--pristine", str(self.root),
                                 "vectorAdd")
        self.assertEqual((code, self.report()["labs"][0]["status"]), (0, "PASS"))


# A fake nvidia-smi: telemetry lines from FAKE_SMI_LINES (one per call, the last repeated).
FAKE_SMI = """
    import os, sys
    if "-L" in sys.argv:
        print("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)")
        sys.exit(0)
    if not any(a.startswith("--query-gpu=clocks") for a in sys.argv):
        print("81559")
        sys.exit(0)
    count_file = os.environ["FAKE_SMI_COUNT"]
    count = int(open(count_file).read()) if os.path.exists(count_file) else 0
    open(count_file, "w").write(str(count + 1))
    lines = os.environ["FAKE_SMI_LINES"].split(";")
    print(lines[min(count, len(lines) - 1)])
"""
COOL = "1980, 2619, 40, 300.5, 0x0000000000000004"
HOT = "1410, 2619, 91, 690.0, 0x0000000000000060"


class TelemetryTest(CliTestCase):
    """Clocks, temperature and slowdowns around each bench; a throttled run is timed again."""

    def smi(self, *lines: str) -> None:
        gpu._last_reading = None  # a reading of an earlier test must not serve as this one's "before"
        folder = self.tmp / "smi"
        write_script(folder / "nvidia-smi", FAKE_SMI)
        os.environ["PATH"] = f"{folder}{os.pathsep}{os.environ['PATH']}"
        os.environ["FAKE_SMI_COUNT"] = str(self.tmp / "smi-count")
        os.environ["FAKE_SMI_LINES"] = ";".join(lines)
        self.fake_labs(self.bin)
        (self.root / "grader.toml").write_text("[grader]\ncooldown_s = 0\n")

    def test_telemetry_in_the_bench_json(self):
        self.smi(COOL)
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        lab = self.report()["labs"][0]
        telemetry = lab["bench"]["telemetry"]
        self.assertEqual(telemetry["before"]["sm_clock_mhz"], 1980.0)
        self.assertEqual(telemetry["after"]["clock_reasons"], ["sw_power_cap"])
        self.assertEqual((lab["bench_runs"], lab["performance"]["flags"]), (1, []))

    def test_throttled_once_is_timed_again(self):
        self.smi(COOL, HOT, COOL)  # hot just after the first run, cool after the second
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("GPU throttled, cooling down", out)
        lab = self.report()["labs"][0]
        self.assertEqual(lab["bench_runs"], 2)
        self.assertEqual(lab["performance"]["flags"], [])
        self.assertIn("timed again after a 0 s pause", " ".join(lab["notes"]))

    def test_before_is_the_last_after_when_recent(self):
        """A lab's "before" is the previous reading when at most gpu.TELEMETRY_REUSE_S old (the
        last lab's "after": one nvidia-smi call less per lab); older, it is read again."""
        self.smi(COOL, HOT, COOL)
        first = gpu.telemetry()
        self.assertEqual(first["sm_clock_mhz"], 1980.0)
        self.assertIs(gpu.telemetry(max_age_s=60), first)  # no call: the count stays at 1
        self.assertEqual(gpu.telemetry()["sm_clock_mhz"], 1410.0)  # a fresh reading by default
        with mock.patch.object(gpu.time, "monotonic", return_value=time.monotonic() + 61):
            self.assertEqual(gpu.telemetry(max_age_s=60)["sm_clock_mhz"], 1980.0)  # too old: read again
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "1"}):
            gpu._last_reading = (time.monotonic(), "0", first)
            self.assertIsNot(gpu.telemetry(max_age_s=60), first)  # another GPU's reading never serves
        self.assertEqual((self.tmp / "smi-count").read_text(), "4")

    def test_throttled_twice_is_flagged(self):
        self.smi(COOL, HOT)
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        lab = self.report()["labs"][0]
        self.assertEqual(lab["performance"]["flags"], ["throttled"])
        self.assertEqual(lab["performance"]["points"], 30)  # scored, not silently: the note says so
        self.assertIn("sw_thermal_slowdown, hw_thermal_slowdown", " ".join(lab["notes"]))
        self.assertIn("grade this lab again", out)


class ReadsFilesTest(CliTestCase):
    """What the static checks make of a file that reads files of the grading machine."""

    def finding(self, pattern: str) -> object:
        from grader import check, rules
        result = check.CheckResult()
        result.findings.append(rules.Finding("forbidden", pattern, "labs/vectorAdd/vectorAdd.cu", 3,
                                             "labs/vectorAdd/vectorAdd.cu:3: an assembler .incbin directive",
                                             rule="include"))
        return result

    # An .incbin (or .include, .macro ...): BUILD_ERROR, and no test runs.
    def test_assembler_directive_stops_the_lab(self):
        from grader import check
        self.fake_labs(self.bin)
        tested = []
        real = gtest.run_tests
        own = self.tmp / "own"  # a submission's own folder, as batch gives each student
        build.StudentBuild(True, library=self.build / "lib" / "libvectorAdd_student.so").save(
            own / "lib" / "vectorAdd")
        with mock.patch("grader.check.check_lab", return_value=self.finding(check.READS_FILES)), \
                mock.patch("grader.gtest.run_tests", side_effect=lambda b, **k: tested.append(b) or real(b, **k)):
            code, out, err = self.main("--prebuilt", "--student-dir", str(own), "vectorAdd")
        lab = self.report()["labs"][0]
        self.assertEqual(lab["status"], "BUILD_ERROR", out + err)
        self.assertIn(".incbin", lab["message"])
        self.assertEqual(tested, [])

    # A failed compile that read a file outside the lab: its messages are replaced by the name.
    def test_compiler_messages_about_an_outside_file_are_not_shown(self):
        from grader import grade
        from grader.stages import building
        options = grade.Options(root=self.root, build_dir=self.build, impl="student", seed=1,
                                config=config.from_dict({}, None))
        taken = mock.Mock(copied={"vectorAdd": ["labs/vectorAdd/vectorAdd.cu"]})
        for reads, shown in ((["/etc/passwd"], False), ([], True), (None, False)):
            student = build.StudentBuild(False, message="compilation failed:\n/etc/passwd(1): error: root:x:0:0",
                                         output="/etc/passwd(1): error\n  root:x:0:0:root")
            with self.subTest(reads=reads), mock.patch("grader.check.foreign_reads", return_value=reads):
                building.quiet_foreign_errors(options, "vectorAdd", taken, student)
                self.assertEqual("root:x" in student.message + student.output, shown)
                if reads:
                    self.assertIn("includes /etc/passwd, outside your lab and the kit", student.message)


class RobustnessTest(CliTestCase):
    # The report is written after every lab: a grader killed mid-run leaves the labs
    # graded so far (finished is empty).
    def test_report_after_each_lab(self):
        self.fake_labs(self.bin)
        real = gtest.run_tests

        def die(binary, **kwargs):
            if binary.name == "reduction_judge_test":
                raise SystemExit("killed")
            return real(binary, **kwargs)

        with mock.patch("grader.gtest.run_tests", side_effect=die), self.assertRaises(SystemExit):
            self.main("--no-build", "vectorAdd", "reduction")
        report = self.report()
        self.assertEqual([lab["lab"] for lab in report["labs"]], ["vectorAdd"])
        self.assertEqual(report["finished"], "")

    # SIGTERM (a CI timeout) stops the grading like Ctrl-C: exit 130, report written,
    # the hung test binary killed.
    def test_sigterm(self):
        fake_gtest(self.bin / "vectorAdd_judge_test", None, extra="time.sleep(60)")
        fake_libraries(self.build, ["vectorAdd"])
        log = self.tmp / "grader.log"
        with open(log, "w") as out:
            child = subprocess.Popen([sys.executable, "-m", "grader", "--root", str(self.root), "--build-dir",
                                      str(self.build), "--no-build", "--no-sanitizer", "vectorAdd"],
                                     stdout=out, stderr=subprocess.STDOUT, cwd=Path(__file__).resolve().parents[2])
            time.sleep(3)
            child.send_signal(signal.SIGTERM)
            code = child.wait(timeout=30)
        self.assertEqual(code, 130, log.read_text())
        self.assertTrue(self.report()["interrupted"])


class GradeWithBuildTest(CliTestCase):
    def use_fake_tools(self) -> Path:
        prebuilt = self.tmp / "prebuilt"
        self.fake_labs(prebuilt)
        write_script(self.tmp / "tools" / "cmake", FAKE_CMAKE)
        write_script(self.tmp / "tools" / "ninja", FAKE_NINJA)
        cc = write_script(self.tmp / "tools" / "fakecc", FAKE_CC)
        log = self.tmp / "cmake.log"
        os.environ.update(PATH=f"{self.tmp / 'tools'}{os.pathsep}{os.environ['PATH']}", FAKE_CMAKE_LOG=str(log),
                          FAKE_PREBUILT=str(prebuilt), FAKE_CC=str(cc), FAKE_ROOT=str(self.root.resolve()))
        return log

    # A failed configure fails every lab, and the console says it once.
    def test_configure_failure(self):
        self.use_fake_tools()
        os.environ["FAKE_CONFIGURE_FAILS"] = "1"
        code, out, _ = self.main("vectorAdd", "scan")
        self.assertEqual(code, 1)
        self.assertEqual([lab["status"] for lab in self.report()["labs"]], ["BUILD_ERROR", "BUILD_ERROR"])
        self.assertEqual(out.count("No CMAKE_CUDA_COMPILER could be found"), 1)
        self.assertIn("scan: BUILD_ERROR: the same failure as vectorAdd", out)

    # The full pipeline through fake tools: configure once, the kit's judge programs for
    # all labs in one build, then each lab's student file compiled alone into its own
    # library; a compile error there is BUILD_ERROR for that lab only, with the first
    # error line and the compile command.
    def test_build_pipeline(self):
        log = self.use_fake_tools()
        (self.root / "solutions" / "vectorAdd").mkdir(parents=True)
        (self.root / "labs" / "scan" / "scan.cu").write_text("int x = tmp;\n")
        code, out, err = self.main("vectorAdd", "scan", "--seed", "3", "--cuda-arch", "90")
        self.assertEqual(code, 1, out + err)
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        self.assertEqual(calls[0][:5], ["-S", str(self.root), "-B", str(self.build), calls[0][4]])
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=90", calls[0])
        self.assertEqual(calls[1][3:], ["vectorAdd_judge_test", "vectorAdd_judge_bench", "vectorAdd_worker",
                                        "vectorAdd_solution", "scan_judge_test", "scan_judge_bench", "scan_worker",
                                        "--", "-k", "0"])
        labs = self.report()["labs"]
        self.assertEqual([lab["status"] for lab in labs], ["PASS", "BUILD_ERROR"])
        self.assertIn('labs/scan/scan.cu(12): error: identifier "tmp" is undefined', labs[1]["message"])
        self.assertTrue((self.build / "student" / "vectorAdd" / "libvectorAdd_student.so").is_file())
        self.assertFalse((self.build / "student" / "scan" / "libscan_student.so").exists())
        self.assertIn("reproduce:", out)
        self.assertIn(str(self.build / "submission" / "labs" / "scan" / "scan.cu"), labs[1]["reproduce"]["build"])

        # A second run with the same arguments does not configure again.
        self.main("vectorAdd", "--seed", "3", "--cuda-arch", "90")
        calls = [json.loads(line) for line in log.read_text().splitlines()]
        self.assertEqual(sum(1 for call in calls if "-S" in call), 1)

    # The kit's own programs of one lab failing to build is that lab's BUILD_ERROR, said
    # to be no fault of the student's file; the other labs are graded.
    def test_kit_build_failure(self):
        self.use_fake_tools()
        os.environ["FAKE_KIT_FAILS"] = "scan"
        code, out, _ = self.main("vectorAdd", "scan", "--seed", "3")
        self.assertEqual(code, 1, out)
        labs = self.report()["labs"]
        self.assertEqual([lab["status"] for lab in labs], ["PASS", "BUILD_ERROR"])
        self.assertIn("the kit's own programs for this lab did not build (not your file", labs[1]["message"])

    # No GPU: said at once, before anything is built, with its own exit status.
    def test_no_gpu_said_before_building(self):
        log = self.use_fake_tools()
        with mock.patch("grader.cli.gpu.probe", return_value=gpu.Probe(False, "no NVIDIA driver found")):
            code, _, err = self.main("vectorAdd", gpu_check=True)
        self.assertEqual(code, cli.EXIT_NO_GPU)
        self.assertIn("no usable GPU: no NVIDIA driver found", err)
        self.assertFalse(log.exists())  # nothing configured or built


class UsageErrorTest(CliTestCase):
    def assertUsageError(self, args: list[str], fragment: str) -> None:
        code, out, err = self.main(*args)
        self.assertEqual(code, 2, out + err)
        self.assertIn(fragment, err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)  # one line, no traceback
        self.assertNotIn("Traceback", err)

    def test_unknown_lab(self):
        self.assertUsageError(["reduce"], "unknown lab 'reduce': did you mean reduction?")

    def test_invalid_config(self):
        config = self.tmp / "bad.toml"
        config.write_text("[defaults]\nperformance_points = -3\n")
        self.assertUsageError(["--config", str(config)], "performance_points: expected a number of points >= 0")

    def test_unreadable_config(self):
        self.assertUsageError(["--config", str(self.tmp / "none.toml")], "cannot read the config file")

    def test_missing_root(self):
        self.root = self.tmp / "nowhere"
        self.assertUsageError([], "is not a directory")

    def test_no_labs_present(self):
        self.root = self.tmp / "empty"
        self.root.mkdir()
        self.assertUsageError([], "no enabled lab found")

    def test_bad_flags(self):
        self.assertUsageError(["--seed", "-4"], "out of range")
        self.assertUsageError(["--impl", "teacher"], "invalid choice")
        self.assertUsageError(["--reference", str(self.tmp / "none")], "reference directory")


if __name__ == "__main__":
    unittest.main()
