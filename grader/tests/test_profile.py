"""`python3 -m grader profile`: ncu's CSV in both layouts, the kit's kernels left out, the
limiter and stalls, per-lab hints, and a clear message for every way it cannot run. ncu
itself is faked: these tests run without a GPU."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import build, cli, config, formats, gpu, grade, profile, report, score, status
from grader.tests.helpers import make_kit, write_script

DETAILS = '''==PROF== Connected to process 4242
== vector_add n=1048576  [graded]
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,200"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","88.5"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","launch__occupancy_limit_registers","block","8"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","launch__occupancy_limit_warps","block","8"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","launch__occupancy_limit_shared_mem","block","32"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","","12.5"
"0","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","","0"
"1","4242","bench","host","add_kernel(const float *, const float *, float *, int)","1","7","(256, 1, 1)","(4096, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","1,400"
"2","4242","bench","host","void lab::bench::count_differences_kernel(const unsigned int *, const unsigned int *, unsigned long, unsigned long long *)","1","7","(256, 1, 1)","(64, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","300"
'''

RAW = '''student   0.301 ms
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","","","","","","nsecond","%","%"
"0","77","bench","host","tile_kernel","1","7","2000","45.0","61.0"
"1","77","bench","host","tile_kernel","1","7","3000","47.0","63.0"
"2","77","bench","host","lab::flush_l2","1","7","100","n/a","n/a"
'''

# The fake ncu: answers from FAKE_NCU_MODE and logs its argv.
FAKE_NCU = """
    import json, os, sys
    open(os.environ["FAKE_NCU_LOG"], "a").write(json.dumps(sys.argv[1:]) + "\\n")
    mode = os.environ["FAKE_NCU_MODE"]
    metrics = sys.argv[sys.argv.index("--metrics") + 1]
    if mode == "denied":
        print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance Counters")
        sys.exit(1)
    if mode == "old" and "stalled" in metrics:
        print("==ERROR== Failed to profile: metric smsp__average_warps_issue_stalled_wait_per_issue_active.ratio not found")
        sys.exit(1)
    if mode == "nothing":
        print("==PROF== Disconnected")
        sys.exit(0)
    print(open(os.environ["FAKE_NCU_CSV"]).read())
"""


class Parsing(unittest.TestCase):
    wanted = {**profile.CORE_METRICS, **profile.STALL_METRICS}

    def test_details_layout(self):
        found = profile.kernels(profile.parse_csv(DETAILS, self.wanted))
        self.assertEqual([k.name for k in found], ["add_kernel(const float *, const float *, float *, int)"])
        kernel = found[0]
        self.assertEqual(kernel.launches, 2)
        self.assertEqual(kernel.metrics["duration_ns"], 1300.0)  # the median of 1,200 and 1,400
        self.assertEqual(kernel.metrics["dram_pct"], 88.5)
        self.assertEqual(kernel.limiter(), "registers, warps")
        self.assertEqual(kernel.top_stalls(), [("long_scoreboard", 12.5)])

    def test_raw_layout_with_units_row(self):
        found = profile.kernels(profile.parse_csv(RAW, self.wanted))
        self.assertEqual([(k.name, k.launches) for k in found], [("tile_kernel", 2)])
        self.assertEqual(found[0].metrics, {"duration_ns": 2500.0, "dram_pct": 46.0, "occupancy_pct": 62.0})

    def test_not_csv(self):
        self.assertEqual(profile.parse_csv("", self.wanted), {})
        self.assertEqual(profile.parse_csv('"a","b"\n"1","2"\n', self.wanted), {})

    def test_kit_kernels(self):
        self.assertTrue(profile.is_kit_kernel("void lab::bench::count_differences_kernel(int)"))
        self.assertTrue(profile.is_kit_kernel("lab::flush_l2"))
        self.assertFalse(profile.is_kit_kernel("void reduce_kernel<lab_sum>(const float *)"))

    def test_anonymous_namespace_spelled_as_cpp_does(self):
        for raw in ("<unnamed>::scan_kernel(int *)", "unnamed>::scan_kernel(int *)"):
            self.assertEqual(profile.tidy_name(raw), "(anonymous namespace)::scan_kernel(int *)")
        self.assertEqual(profile.tidy_name("void k<unnamed>(int)"), "void k<unnamed>(int)")
        text = RAW.replace('"tile_kernel"', '"unnamed>::tile_kernel"')
        self.assertEqual([k.name for k in profile.kernels(profile.parse_csv(text, self.wanted))],
                         ["(anonymous namespace)::tile_kernel"])

    def test_sectors_per_request(self):
        kernel = profile.Kernel("k", 1, {"global_ld_sectors": 400.0, "global_ld_requests": 100.0})
        self.assertEqual(kernel.sectors_per_request(), 4.0)
        self.assertIsNone(profile.Kernel("k", 1, {"global_ld_sectors": 4.0}).sectors_per_request())


class FakeNcu(unittest.TestCase):
    """A kit with vectorAdd, its bench, and a fake ncu answering from FAKE_NCU_MODE."""

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.root = make_kit(self.tmp / "kit", ["vectorAdd"])
        manifest = self.root / "labs" / "vectorAdd" / "lab.json"
        data = json.loads(manifest.read_text())
        data["profile"] = {"hints": {"dram": "the DRAM share is the grade here", "coalescing": "4 is ideal"}}
        manifest.write_text(json.dumps(data))
        self.bench = write_script(self.tmp / "build" / "bin" / "vectorAdd_bench", "print('bench')\n")
        self.ncu = write_script(self.tmp / "ncu" / "ncu", FAKE_NCU)
        (self.tmp / "ncu.csv").write_text(DETAILS)
        patcher = mock.patch.dict(os.environ, {"FAKE_NCU_LOG": str(self.tmp / "ncu.log"),
                                               "FAKE_NCU_CSV": str(self.tmp / "ncu.csv"), "FAKE_NCU_MODE": "ok"})
        patcher.start()
        self.addCleanup(patcher.stop)
        probe = mock.patch("grader.profile.gpu.probe", return_value=gpu.Probe(True, devices=["GPU 0: fake"]))
        probe.start()
        self.addCleanup(probe.stop)

    def run_profile(self, *extra: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = profile.main(["vectorAdd", "--root", str(self.root), "--build-dir", str(self.tmp / "build"),
                                 "--ncu", str(self.ncu), *extra])
        return code, out.getvalue(), err.getvalue()

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in (self.tmp / "ncu.log").read_text().splitlines()]


class Command(FakeNcu):
    def test_student_and_reference(self):
        code, out, err = self.run_profile("--size", "1048576", "--json", str(self.tmp / "p.json"))
        self.assertEqual(code, 0, err)
        self.assertIn("== student", out)
        self.assertIn("== reference", out)
        self.assertIn("DRAM throughput       88.5 % of peak   the DRAM share is the grade here", out)
        self.assertIn("limited by registers, warps", out)
        self.assertIn("long scoreboard 12.5 (waiting for global memory)", out)
        self.assertNotIn("count_differences", out)
        calls = self.calls()
        self.assertEqual([c[c.index("--graded-only") - 1] for c in calls], [str(self.bench)] * 2)
        self.assertEqual([c[-3] for c in calls], ["--filter=student", "--filter=reference"])
        self.assertIn("--clock-control", calls[0])
        self.assertEqual([c[c.index("--nvtx-include") + 1] for c in calls], ["student/", "reference/"])
        self.assertIn("--size=1048576", calls[0])
        self.assertIn(profile.MEMORY_METRICS["global_ld_sectors"], calls[0][calls[0].index("--metrics") + 1])
        saved = json.loads((self.tmp / "p.json").read_text())
        self.assertEqual(saved["student"][0]["metrics"]["dram_pct"], 88.5)

    def test_an_older_ncu_gets_the_core_metrics(self):
        os.environ["FAKE_NCU_MODE"] = "old"
        code, out, err = self.run_profile()
        self.assertEqual(code, 0, err)
        self.assertIn("only the core figures are shown", out)
        self.assertEqual(len(self.calls()), 4)  # all, then core, for each of the two

    def test_counters_not_permitted(self):
        os.environ["FAKE_NCU_MODE"] = "denied"
        code, _, err = self.run_profile()
        self.assertEqual(code, profile.EXIT_UNAVAILABLE)
        self.assertIn("NVreg_RestrictProfilingToAdminUsers=0", err)

    def test_no_kernel_found(self):
        os.environ["FAKE_NCU_MODE"] = "nothing"
        code, _, err = self.run_profile()
        self.assertEqual(code, profile.EXIT_NOTHING)
        self.assertIn("ncu profiled no kernel of the student's call", err)

    def test_no_gpu(self):
        with mock.patch("grader.profile.gpu.probe", return_value=gpu.Probe(False, "no NVIDIA driver found")):
            code, _, err = self.run_profile()
        self.assertEqual(code, profile.EXIT_UNAVAILABLE)
        self.assertIn("no usable GPU: no NVIDIA driver found", err)
        self.assertFalse((self.tmp / "ncu.log").exists())

    def test_missing_ncu_bench_or_lab(self):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = profile.main(["vectorAdd", "--root", str(self.root), "--build-dir", str(self.tmp / "build"),
                                 "--ncu", str(self.tmp / "none")])
        self.assertEqual(code, profile.EXIT_UNAVAILABLE)
        self.assertIn("ncu (Nsight Compute) not found", err.getvalue())
        self.bench.unlink()
        code, _, err_text = self.run_profile()
        self.assertEqual(code, profile.EXIT_UNAVAILABLE)
        self.assertIn("build it first (cmake --build --preset dev --target vectorAdd_bench)", err_text)
        with contextlib.redirect_stderr(io.StringIO()) as err:
            code = profile.main(["vectoradd2", "--root", str(self.root)])
        self.assertEqual(code, profile.EXIT_USAGE)
        self.assertIn("unknown lab", err.getvalue())

    def test_every_lab_has_hints_for_its_bottleneck(self):
        from grader import manifest
        kit = Path(__file__).resolve().parents[2]
        for lab in manifest.labs(kit):
            with self.subTest(lab=lab.name):
                hints = dict(lab.profile_hints)
                self.assertTrue({"dram", "sm"} & set(hints), hints)


if __name__ == "__main__":
    unittest.main()


class GraderFlag(FakeNcu):
    """`python3 -m grader --profile`: each lab whose tests all passed gets the table in its
    report (JSON, Markdown, HTML); the others, and a machine without ncu, get the reason."""

    def run_of(self, *labs: tuple[str, bool]) -> grade.GradingRun:
        cfg = config.load(None)
        results = [grade.LabResult(name, status.PASS if full else status.PARTIAL,
                                   score.Correctness(70.0 if full else 0.0, 70.0, full),
                                   score.Performance(0.0, 30.0)) for name, full in labs]
        options = grade.Options(root=self.root, build_dir=self.tmp / "build", impl="student", seed=3, config=cfg)
        return grade.GradingRun(options, started="s", labs=results)

    def profile_run(self, run: grade.GradingRun, ncu: Path | None) -> None:
        built = build.BuildResult(ok=True, command=["cmake"])
        with mock.patch("grader.profile.find_ncu", return_value=None if ncu is None else str(ncu)), \
                mock.patch("grader.cli.build.build_targets", return_value=built) as targets, \
                contextlib.redirect_stdout(io.StringIO()):
            cli._profile_labs(run, run.options)
        self.targets = targets

    def test_a_passing_lab_is_profiled_into_every_report(self):
        run = self.run_of(("vectorAdd", True))
        self.profile_run(run, self.ncu)
        self.assertEqual(self.targets.call_args.args[1], ["vectorAdd_bench"])  # the student's own bench
        profiled = run.labs[0].profile
        self.assertIn("== student", profiled["text"])
        self.assertIn("== reference", profiled["text"])
        self.assertEqual(profiled["kernels"]["student"][0]["metrics"]["dram_pct"], 88.5)
        self.assertIn("--seed=3", self.calls()[0])  # the grading run's seed
        data = report.to_json(run)
        markdown = formats.markdown(data)
        self.assertIn("### Profiles (Nsight Compute, feedback only)", markdown)
        self.assertIn("DRAM throughput       88.5 % of peak", markdown)
        self.assertIn("<summary>Nsight Compute profile of the graded call", formats.html(data))
        self.assertEqual(run.labs[0].total, 70.0)  # feedback, not points

    def test_a_failing_lab_and_a_missing_ncu_say_why(self):
        run = self.run_of(("vectorAdd", False))
        self.profile_run(run, self.ncu)
        self.assertIn("not every test passed", run.labs[0].profile["error"])
        self.assertFalse((self.tmp / "ncu.log").exists(), "ncu must not run for a failing lab")
        run = self.run_of(("vectorAdd", True))
        self.profile_run(run, None)
        self.assertIn("ncu (Nsight Compute) was not found", run.labs[0].profile["error"])
        self.assertIn("No profile: ncu (Nsight Compute) was not found", formats.markdown(report.to_json(run)))

    def test_counters_not_permitted_is_a_note_not_a_crash(self):
        os.environ["FAKE_NCU_MODE"] = "denied"
        run = self.run_of(("vectorAdd", True))
        self.profile_run(run, self.ncu)
        self.assertIn("ERR_NVGPUCTRPERM", run.labs[0].profile["error"])

    def test_not_with_another_students_code(self):
        for extra in (["--submission", str(self.tmp)], ["--student-dir", str(self.tmp)], ["--skip-bench"]):
            with self.subTest(extra=extra), contextlib.redirect_stderr(io.StringIO()) as err:
                self.assertEqual(cli.main(["--profile", "--allow-no-gpu", "--root", str(self.root), *extra]), 2)
                self.assertIn("--profile profiles your own code", err.getvalue())
