"""Answers checked against Nsight Compute's figures ("check": "profile") and a peak DRAM
bandwidth the student computes (bench figure "peak_dram"), answers.py; and where the
grading run's profile comes from (stages/scoring.take_profile): never a file, never a
program that holds student code. No GPU and no ncu: profiles are given or mocked."""

from __future__ import annotations

import json
import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from grader import answers, gpu, layout, manifest, profile
from grader.answers import Question
from grader.stages import scoring

KIT = Path(__file__).resolve().parents[2]
H100 = "NVIDIA H100 80GB HBM3"
H200 = "NVIDIA H200"
SHARED = Question("shared", "shared efficiency of ref:tiled", "number", 1.0, "profile", tolerance=0.1,
                  cross_gpu_tolerance=0.2, metric="shared_efficiency_pct", candidate="ref:tiled")
SECTORS = Question("sectors", "sectors per request", "number", 1.0, "profile", metric="sectors_per_request",
                   candidate="ref:per_element")
PEAK = Question("peak", "your GPU's peak", "number", 1.0, "bench", figure="peak_dram", tolerance=0.05)


def measured(metrics: dict, candidate: str = "ref:tiled", gpu_name: str = H100) -> dict:
    return {candidate: [{"name": "transpose_tiled_kernel<32, 32, 0, int>", "metrics": metrics}], "_gpu": gpu_name}


def grade(text: str, question: Question, *, profile_figures=None, bench=None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.md"
        path.write_text(f"## {question.id}\n{text}\n", encoding="utf-8")
        result = answers.grade((question,), path, "labs/transpose/answers.md", {}, bench, lab="transpose",
                               profile=profile_figures)
    row = result.questions[0]
    row["_totals"] = (result.points, result.max, result.pending)
    return row


class ProfileAnswers(unittest.TestCase):
    def test_the_grading_gpu_within_its_tolerance(self):
        row = grade(f"Answer: 6.2 measured on {H100} (sm_90)", SHARED, profile_figures=measured({"shared_efficiency_pct": 6.06}))
        self.assertEqual((row["status"], row["_totals"]), (answers.CORRECT, (1.0, 1.0, 0.0)), row["why"])
        row = grade(f"Answer: 7.0 measured on {H100} (sm_90)", SHARED, profile_figures=measured({"shared_efficiency_pct": 6.06}))
        self.assertEqual((row["status"], row["_totals"]), (answers.WRONG, (0.0, 1.0, 0.0)))
        self.assertIn("python3 -m grader profile transpose", row["why"])
        self.assertNotIn("6.06", row["why"])  # the verdict never gives the figure away

    def test_another_gpu_or_none_within_the_cross_gpu_tolerance(self):
        figures = measured({"shared_efficiency_pct": 6.06})
        self.assertEqual(grade(f"Answer: 7.0 measured on {H200}", SHARED, profile_figures=figures)["status"],
                         answers.CORRECT)  # 15% off: within 20%, not 10%
        self.assertEqual(grade("Answer: 7.0", SHARED, profile_figures=figures)["status"], answers.CORRECT)
        self.assertEqual(grade("Answer: 9", SHARED, profile_figures=figures)["status"], answers.WRONG)

    def test_the_grading_gpus_lines_decide(self):
        # A course graded on H100s and H200s: the solution holds a line for each, and the DRAM
        # shares of one kernel differ by more than the cross-GPU tolerance; each GPU's line
        # decides on that GPU, the other is neither held against it nor of any help.
        figures = measured({"shared_efficiency_pct": 6.06})
        both = f"Answer: 6.06 measured on {H100}\n100 measured on {H200}"
        self.assertEqual(grade(both, SHARED, profile_figures=figures)["status"], answers.CORRECT)
        hedged = f"Answer: 100 measured on {H100}\n6.06 measured on {H200}"
        self.assertEqual(grade(hedged, SHARED, profile_figures=figures)["status"], answers.WRONG)
        twice = f"Answer: 6.06 measured on {H100}\n9 measured on {H100}"  # every line of the grading GPU must fit
        self.assertEqual(grade(twice, SHARED, profile_figures=figures)["status"], answers.WRONG)

    def test_without_a_line_of_the_grading_gpu_every_line_must_fit(self):
        figures = measured({"shared_efficiency_pct": 6.06})
        text = f"Answer: 6.06 measured on {H200}\n100 measured on NVIDIA A100-SXM4-80GB"
        self.assertEqual(grade(text, SHARED, profile_figures=figures)["status"], answers.WRONG)
        text = f"Answer: 6.1 measured on {H200}\n6.0"
        self.assertEqual(grade(text, SHARED, profile_figures=figures)["status"], answers.CORRECT)

    def test_no_profile_of_this_run_is_unchecked_and_pending(self):
        row = grade(f"Answer: 6.06 measured on {H100}", SHARED)
        self.assertEqual((row["status"], row["points"], row["_totals"]), (answers.UNCHECKED, 0.0, (0.0, 0.0, 1.0)))
        self.assertIn("python3 -m grader profile transpose", row["why"])
        # Unanswered stays unanswered: the student is told now, not at the deadline.
        row = grade("Answer:", SHARED)
        self.assertEqual((row["status"], row["_totals"]), (answers.UNANSWERED, (0.0, 1.0, 0.0)))

    def test_a_profile_without_the_metric_or_candidate_is_unchecked(self):
        for figures in (measured({"dram_pct": 80.0}), measured({"shared_efficiency_pct": 6.0}, "ref:tiled_padded"),
                        {"ref:tiled": "not a list"}, {"ref:tiled": [{"metrics": None}]}):
            with self.subTest(figures=figures):
                row = grade("Answer: 6.06", SHARED, profile_figures=figures)
                self.assertEqual((row["status"], row["_totals"]), (answers.UNCHECKED, (0.0, 0.0, 1.0)))

    def test_sectors_per_request_from_the_counts(self):
        figures = measured({"global_ld_sectors": 4096.0, "global_ld_requests": 1024.0}, "ref:per_element")
        self.assertEqual(answers.profile_figure(figures, "ref:per_element", "sectors_per_request"), 4.0)
        self.assertEqual(grade("Answer: 4", SECTORS, profile_figures=figures)["status"], answers.CORRECT)
        self.assertIsNone(answers.profile_figure(measured({"global_ld_sectors": 1.0, "global_ld_requests": 0.0},
                                                          "ref:per_element"), "ref:per_element", "sectors_per_request"))

    def test_the_manifest_names_a_metric_and_a_candidate(self):
        bad = [{"id": "a", "check": "profile", "candidate": "ref:tiled"},
               {"id": "a", "check": "profile", "metric": "no_such_metric", "candidate": "ref:tiled"},
               {"id": "a", "check": "profile", "metric": "dram_pct"},
               {"id": "a", "check": "profile", "metric": "dram_pct", "candidate": "ref tiled; rm -rf"},
               {"id": "a", "check": "key", "metric": "dram_pct"}]
        for item in bad:
            with self.subTest(item=item), self.assertRaises(ValueError):
                answers.parse_questions([item], "lab.json")
        [question] = answers.parse_questions([{"id": "a", "check": "profile", "metric": "dram_pct",
                                               "candidate": "ref:tiled_padded"}], "lab.json")
        self.assertEqual((question.metric, question.candidate), ("dram_pct", "ref:tiled_padded"))


def bench_on(name: str | None, copy: float | None = 2600.0) -> dict:
    results = [{"role": "student", "throughput": 2500.0}]
    if copy is not None:
        results.append({"role": "roofline", "name": "cudaMemcpy D2D", "throughput": copy})
    return {"device": {"name": name, "compute_capability": "9.0"} if name else {},
            "workloads": [{"name": "w", "graded": True, "unit": "GB/s", "peak": 3352.3, "results": results}]}


class PeakAnswers(unittest.TestCase):
    def test_within_the_band_of_the_grading_gpus_peak(self):
        for text in (f"Answer: 3352 GB/s for {H100}", "Answer: 3352", f"Answer: 3300 GB/s computed for {H100}",
                     f"Answer: 4814 GB/s for {H200}\n3352 GB/s for {H100}"):
            with self.subTest(text=text):
                row = grade(text, PEAK, bench=bench_on(H100))
                self.assertEqual(row["status"], answers.CORRECT, row["why"])

    def test_the_lectures_slip_is_below_the_copy(self):
        row = grade(f"Answer: 1676 GB/s for {H100}", PEAK, bench=bench_on(H100))
        self.assertEqual(row["status"], answers.WRONG)
        self.assertIn("double data rate", row["why"])
        # Above the copy but not the GPU's peak.
        row = grade(f"Answer: 3000 GB/s for {H100}", PEAK, bench=bench_on(H100))
        self.assertEqual(row["status"], answers.WRONG)
        self.assertIn("within 5%", row["why"])
        self.assertNotIn("3352", row["why"])  # the verdict does not give the peak away

    def test_every_line_for_the_grading_gpu_must_fit(self):
        row = grade(f"Answer: 3352 GB/s for {H100}\n4000 GB/s for {H100}", PEAK, bench=bench_on(H100))
        self.assertEqual(row["status"], answers.WRONG)

    def test_a_gpu_the_table_lacks_or_no_line_for_the_grading_gpu_is_pending(self):
        row = grade("Answer: 1000 GB/s for Some Future GPU 9000", PEAK, bench=bench_on("Some Future GPU 9000", 600.0))
        self.assertEqual((row["status"], row["_totals"]), (answers.OTHER_GPU, (0.0, 0.0, 1.0)))
        row = grade(f"Answer: 4814 GB/s for {H200}", PEAK, bench=bench_on(H100))
        self.assertEqual((row["status"], row["_totals"]), (answers.OTHER_GPU, (0.0, 0.0, 1.0)))

    def test_no_bench_is_unchecked(self):
        self.assertEqual(grade("Answer: 3352", PEAK, bench=None)["status"], answers.UNCHECKED)
        self.assertEqual(grade("Answer: 3352", PEAK, bench=bench_on(None))["status"], answers.UNCHECKED)

    def test_without_a_copy_row_the_band_alone_decides(self):
        self.assertEqual(grade("Answer: 3352", PEAK, bench=bench_on(H100, copy=None))["status"], answers.CORRECT)


def options(build_dir: Path, *, submission: Path | None, solution: bool = False, build_kit: bool = False,
            profile_cache: Path | None = None):
    return SimpleNamespace(submission=submission, build_dir=build_dir, root=KIT, seed=7, profile_cache=profile_cache,
                           plan=SimpleNamespace(solution=solution, build_kit=build_kit))


class WhereTheProfileComesFrom(unittest.TestCase):
    """The grading run's profile: taken by the grader, of the kit's own program, in memory."""

    lab = manifest.by_name(KIT)["transpose"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.build = Path(self.tmp.name) / "build"
        (self.build / "bin").mkdir(parents=True)
        for impl in (layout.STUDENT, layout.SOLUTION):
            program = layout.direct_bench_path(self.build, "transpose", impl)
            program.write_text("#!/bin/sh\nexit 0\n")
            program.chmod(0o755)

    def forge(self) -> None:
        """What a student's code could leave in the build folder: figures that fit any answer."""
        forged = {c: [{"name": "k", "metrics": {m: 1.0 for m in answers.PROFILE_METRICS}}]
                  for c in ("ref:per_element", "ref:tiled", "ref:tiled_padded", "student", "reference")}
        for name in ("profile.json", "transpose-profile.json", "grader-profile/transpose.json"):
            path = self.build / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(forged))

    def test_profiles_the_solution_bench_never_the_students(self):
        self.forge()
        taken = {}

        def fake(bench, candidates, **kwargs):
            taken["bench"], taken["candidates"] = bench, candidates
            return {c: [profile.Kernel("k", 1, {"shared_efficiency_pct": 6.06})] for c in candidates}, []

        result = SimpleNamespace(lab="transpose", notes=[])
        with mock.patch.object(profile, "find_ncu", return_value="/usr/bin/ncu"), \
                mock.patch.object(profile, "profile_candidates", side_effect=fake), \
                mock.patch.object(gpu, "devices", return_value=[]):
            figures = scoring.take_profile(options(self.build, submission=Path(self.tmp.name)), result, self.lab)
        self.assertEqual(taken["bench"].name, "transpose_solution_bench")
        self.assertEqual(taken["candidates"], ["ref:per_element", "ref:tiled", "ref:tiled_padded"])
        self.assertEqual(figures["ref:tiled"][0]["metrics"], {"shared_efficiency_pct": 6.06})  # ncu's, not the file's

    def test_a_forged_file_is_never_read(self):
        """A student's code that writes figures into the build folder gains nothing: without a
        profile of the grader's own the answers stay pending, whatever the files say."""
        self.forge()
        result = SimpleNamespace(lab="transpose", notes=[])
        with mock.patch.object(profile, "find_ncu", return_value=None):
            figures = scoring.take_profile(options(self.build, submission=Path(self.tmp.name)), result, self.lab)
        self.assertIsNone(figures)
        self.assertIn("ncu", result.notes[0])
        shared = next(q for q in self.lab.questions if q.id == "profile_shared_eff_tiled")
        row = grade("Answer: 1.0", shared, profile_figures=figures)
        self.assertEqual((row["status"], row["_totals"]), (answers.UNCHECKED, (0.0, 0.0, 1.0)))

    def test_not_on_a_students_own_checkout(self):
        """Without --submission the kit (its solutions/ too) is the student's: nothing is profiled."""
        result = SimpleNamespace(lab="transpose", notes=[])
        with mock.patch.object(profile, "profile_candidates") as profiled:
            self.assertIsNone(scoring.take_profile(options(self.build, submission=None), result, self.lab))
        profiled.assert_not_called()
        self.assertIn("pending", result.notes[0])

    def test_a_profile_that_fails_leaves_the_points_pending(self):
        result = SimpleNamespace(lab="transpose", notes=[])
        with mock.patch.object(profile, "find_ncu", return_value="/usr/bin/ncu"), \
                mock.patch.object(profile, "profile_candidates", side_effect=profile.ProfileError("ERR_NVGPUCTRPERM")):
            self.assertIsNone(scoring.take_profile(options(self.build, submission=None, solution=True), result, self.lab))
        self.assertIn("ERR_NVGPUCTRPERM", result.notes[0])


class ProfileCacheTest(unittest.TestCase):
    """The instructor's batch (--profile-cache): the figures of one kit, GPU and ncu are
    taken once and kept; anything else that differs, or a file that is not whole, takes
    them again. Without the option no file is read."""

    lab = manifest.by_name(KIT)["transpose"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.build = Path(self.tmp.name) / "build"
        self.cache = Path(self.tmp.name) / "class" / "profile-cache"
        (self.build / "bin").mkdir(parents=True)
        self.bench = layout.direct_bench_path(self.build, "transpose", layout.SOLUTION)
        self.bench.write_text("#!/bin/sh\nexit 0\n")
        self.bench.chmod(0o755)
        self.ncu = Path(self.tmp.name) / "ncu"
        self.ncu.write_text("#!/bin/sh\n")
        self.ncu.chmod(0o755)
        self.taken = 0
        self.gpus = [gpu.Device("0", "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-aaaa")]

    def take(self, cache: Path | None, value: float = 6.06) -> dict | None:
        def fake(bench, candidates, **kwargs):
            self.taken += 1
            return {c: [profile.Kernel("k", 1, {"shared_efficiency_pct": value})] for c in candidates}, []

        opts = options(self.build, submission=Path(self.tmp.name), profile_cache=cache)
        result = SimpleNamespace(lab="transpose", notes=[])
        with mock.patch.object(profile, "find_ncu", return_value=str(self.ncu)), \
                mock.patch.object(profile, "profile_candidates", side_effect=fake), \
                mock.patch.object(gpu, "devices", return_value=self.gpus):
            return scoring.take_profile(opts, result, self.lab)

    def test_taken_once_then_kept(self):
        first = self.take(self.cache)
        self.assertEqual(self.taken, 1)
        self.assertEqual(len(list(self.cache.glob("transpose-*.json"))), 1)
        again = self.take(self.cache, value=99.0)  # a second profile would say 99
        self.assertEqual((self.taken, again), (1, first))
        self.assertEqual(again["_gpu"], "NVIDIA H100 80GB HBM3")

    def test_what_the_figures_depend_on_takes_them_again(self):
        self.take(self.cache)
        self.gpus = [gpu.Device("1", "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-bbbb")]  # another card
        self.take(self.cache)
        self.assertEqual(self.taken, 2)
        self.bench.write_text("#!/bin/sh\nexit 0 # rebuilt\n")  # another build of the kit
        self.take(self.cache)
        self.assertEqual(self.taken, 3)
        self.ncu.write_text("#!/bin/sh\n# a newer ncu\n")
        self.take(self.cache)
        self.assertEqual(self.taken, 4)
        self.take(self.cache)
        self.assertEqual(self.taken, 4)  # and that last one is kept

    def test_a_file_that_is_not_whole_is_a_miss(self):
        self.take(self.cache)
        (path,) = self.cache.glob("transpose-*.json")
        for broken in ("{", json.dumps({"schema": "labkit-profile-cache", "version": 1})):
            path.write_text(broken)
            self.take(self.cache)
        data = json.loads(path.read_text())
        data["figures"]["ref:tiled"] = [{"name": "k", "metrics": {"shared_efficiency_pct": "6.06"}}]  # not a number
        path.write_text(json.dumps(data))
        self.take(self.cache)
        data["figures"]["ref:tiled"] = [{"name": "k", "metrics": {"shared_efficiency_pct": 1.0}}]
        data["key"]["gpu"]["uuid"] = "GPU-other"  # a file of another key under this name
        path.write_text(json.dumps(data))
        self.take(self.cache)
        self.assertEqual(self.taken, 5)
        self.assertEqual(self.take(self.cache)["ref:tiled"][0]["metrics"], {"shared_efficiency_pct": 6.06})

    def test_without_the_option_no_file_is_read_or_written(self):
        """A grading run of its own (a Classroom runner, where students run steps) takes the
        figures afresh, even beside a whole and matching file."""
        self.take(self.cache)
        (path,) = self.cache.glob("transpose-*.json")
        data = json.loads(path.read_text())
        data["figures"]["ref:tiled"][0]["metrics"] = {"shared_efficiency_pct": 1.0}  # what a forger would leave
        path.write_text(json.dumps(data))
        moved = self.build / "profile-cache" / path.name
        moved.parent.mkdir(parents=True)
        moved.write_text(path.read_text())
        figures = self.take(None)
        self.assertEqual(self.taken, 2)
        self.assertEqual(figures["ref:tiled"][0]["metrics"], {"shared_efficiency_pct": 6.06})
        self.assertEqual(len(list(self.build.rglob("transpose-*.json"))), 1)  # nothing new written


class ProfileCommand(unittest.TestCase):
    lab = manifest.by_name(KIT)["transpose"]

    def test_the_questions_candidates_are_timed_and_profiled(self):
        self.assertEqual(profile.question_candidates(self.lab), ["ref:per_element", "ref:tiled", "ref:tiled_padded"])
        self.assertEqual(profile.variants_to_time(["student", "ref:tiled", "tiled", "ref:default"]), ("tiled",))
        seen = []

        def run(command, timeout):
            seen.append(command)
            return SimpleNamespace(stdout="", stderr="", returncode=0, timed_out=False)

        with mock.patch("grader.proc.run", side_effect=run), self.assertRaises(profile.ProfileError):
            profile.profile("ncu", Path("/x/transpose_bench"), "ref:tiled", size=None, seed=1, memory=True,
                            time_variants=("per_element", "tiled"))
        command = seen[0]
        self.assertEqual(command[command.index("--time-variants") + 1], "per_element,tiled")
        self.assertIn("ref:tiled/", command)
        self.assertIn(profile.EFFICIENCY_METRICS["shared_efficiency_pct"], command[command.index("--metrics") + 1])

    def test_the_lines_to_paste(self):
        results = {"ref:per_element": [profile.Kernel("k", 1, {"global_st_efficiency_pct": 12.5})],
                   "ref:tiled": [profile.Kernel("k", 1, {"shared_efficiency_pct": 6.0606})]}
        text = profile.answer_lines(self.lab, results, f"{H100} (sm_90)")
        self.assertIn(f"## profile_store_eff_per_element\n  Answer: 12.5 measured on {H100} (sm_90)", text)
        self.assertIn("Answer: 6.061 measured on", text)
        self.assertIn("## profile_dram_tiled_padded\n  Answer: (not measured", text)
        # What it prints is what the grader reads back.
        line = text.split("## profile_shared_eff_tiled\n  ", 1)[1].splitlines()[0]
        self.assertEqual(answers.parse_measured(line.removeprefix("Answer: "))[0].gpu, H100)


if __name__ == "__main__":
    unittest.main()
