"""What every report says about a bench answer and the GPU that graded it: with the default
feedback ("verdict") the grading run's figure appears in nothing the grader prints or
writes for the question (console, JSON, HTML, Markdown, Classroom, Gradescope); with
"figures" it does; the grading GPU is named in each; reports from before the GPU was
recorded still read. Also the config key and the command-line flag that choose it."""

from __future__ import annotations

import copy
import json
import re
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import answers, cli, config, formats, gpu, grade, manifest, report, score, status
from grader.stages import scoring
from grader.tests.helpers import FIXTURES

KIT = Path(__file__).resolve().parents[2]
H100 = {"index": "0", "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "memory_mb": 81559,
        "uuid": "GPU-0"}
LABEL = "NVIDIA H100 80GB HBM3 (sm_90)"
FIGURE = 2937.41  # the student's GB/s in the grading run: 87.62% of the H100's peak
HIDDEN = ("2937", "2.937", "87.6", "0.876")  # the figure or its share, however a report could write it


def bench_json() -> dict:
    """The judge bench's JSON of the grading run: vectorAdd's graded workload on an H100."""
    return {"schema": "labkit-bench", "version": 1, "status": "ok", "lab": "vectorAdd", "seed": 1,
            "device": {"name": H100["name"], "compute_capability": "9.0", "sms": 132, "sm_clock_mhz": 1980,
                       "l2_bytes": 52428800, "peak_dram_gbps": 3352.3, "peak_fp32_gflops": 66908.2,
                       "peak_rsqrt_gops": 4181.76},
            "workloads": [{"name": "vector_add n=67108864", "function": "vector_add", "graded": True, "unit": "GB/s",
                           "amount": 805306368, "peak": 3352.3, "peak_of": "dram",
                           "pair": {"ratio_median": 1.0, "ratio_rel_se": 0.002, "samples": 40, "noisy": False},
                           "results": [{"name": "student", "role": "student", "median_ms": 0.27416,
                                        "throughput": FIGURE, "pct_peak": 87.62},
                                       {"name": "reference", "role": "reference", "median_ms": 0.27416,
                                        "throughput": FIGURE, "pct_peak": 87.62}]}],
            "answers": [], "errors": []}


def graded_run(answer: str, feedback: str | None = None) -> tuple[dict, grade.GradingRun]:
    """vectorAdd graded with `answer` to its bench question (your_gbps): the report's JSON and the run."""
    cfg = config.load(None)
    if feedback is not None:
        cfg.grader["answer_feedback"] = feedback
    lab = manifest.by_name(KIT)["vectorAdd"]
    with tempfile.TemporaryDirectory() as tmp:
        options = grade.Options(root=KIT, build_dir=Path(tmp), impl="student", seed=1, config=cfg)
        (options.work_dir / "labs" / "vectorAdd").mkdir(parents=True)
        (options.work_dir / lab.answers_file).write_text(f"## your_gbps\nAnswer: {answer}\n")
        settings = cfg.lab("vectorAdd")
        result = grade.LabResult("vectorAdd", status.PASS, score.Correctness(70.0, settings.correctness_points, True),
                                 score.Performance(30.0, settings.performance_points, ratio=1.0),
                                 bench=bench_json())
        scoring.grade_answers(options, result, lab)
        run = grade.GradingRun(options, started="2025-01-01T00:00:00+00:00", finished="2025-01-01T00:01:00+00:00",
                               labs=[result], gpu=dict(H100))
        return report.to_json(run), run


def question_outputs(data: dict) -> dict[str, str]:
    """What each report says about the question your_gbps (and only it)."""
    model = report.read(data)
    console = report.table(model) + "\n" + report.details(model)
    markdown = formats.markdown(data)
    page = formats.html(data)
    classroom = formats.classroom_results(data)["vectorAdd"]
    gradescope = formats.gradescope(data)
    return {
        "json": json.dumps(data["labs"][0]["answers"]),
        "console": "\n".join(line for line in console.splitlines() if "your_gbps" in line),
        "markdown": "\n".join(line for line in markdown.splitlines() if "your_gbps" in line),
        "html": next(item for item in re.findall(r"<li>.*?</li>", page, re.S) if "your_gbps" in item),
        "classroom": json.dumps([t for t in classroom["tests"] if "your_gbps" in t["name"]]),
        "gradescope": json.dumps([t for t in gradescope["tests"] if "your_gbps" in t["name"]]),
    }


class FeedbackTest(unittest.TestCase):
    # Right, wrong, from a known GPU, from an unknown one: the verdict and what to do, never the figure.
    def test_verdict_shows_no_grading_figure(self):
        for answer, verdict in (("2900 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)", answers.CORRECT),
                                ("1000 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)", answers.WRONG),
                                ("1000 GB/s measured on NVIDIA A100 80GB PCIe (sm_80)", answers.WRONG),
                                ("280 GB/s measured on NVIDIA GeForce GTX 1080 (sm_61)", answers.OTHER_GPU),
                                ("1000", answers.OTHER_GPU)):
            with self.subTest(answer):
                data, _ = graded_run(answer)
                row = data["labs"][0]["answers"]["questions"][3]
                self.assertEqual((row["id"], row["status"]), ("your_gbps", verdict))
                outputs = question_outputs(data)
                for name, text in outputs.items():
                    # (The console details only what did not earn its points.)
                    self.assertTrue(text or (name == "console" and verdict == answers.CORRECT), name)
                    self.assertEqual([t for t in HIDDEN if t in text], [], f"{name}: {text}")
                if verdict == answers.WRONG:
                    self.assertIn("paste the line", outputs["console"])
                # The instructor's batch (--answer-feedback figures) shows the figure compared.
                figures = question_outputs(graded_run(answer, answers.FIGURES)[0])
                for name in ("json", "console", "markdown", "html", "classroom", "gradescope"):
                    if figures[name] or name != "console":
                        self.assertIn("2937", figures[name], name)

    # A figure from another GPU waits for the instructor: not wrong, its point pending, the line shown.
    def test_another_gpu_is_pending(self):
        data, _ = graded_run("280 GB/s measured on NVIDIA GeForce GTX 1080 (sm_61)")
        answered = data["labs"][0]["answers"]
        # The key questions unanswered, the written ones and this figure's point pending.
        lab = manifest.by_name(KIT)["vectorAdd"]
        keyed = sum(q.points for q in lab.questions if q.check == "key" or (q.check == "bench" and q.id != "your_gbps"))
        written = sum(q.points for q in lab.questions if q.check == "manual")
        self.assertGreater(keyed, 0)
        self.assertEqual((answered["points"], answered["max"], answered["pending"]), (0.0, keyed, written + 1.0))
        model = report.read(data)
        self.assertIn("1 more points of figures measured on another GPU are left to your instructor",
                      report.table(model))
        self.assertIn("your_gbps (Your vector_add's GB/s at n = 2^26): measured on another GPU: for the instructor: ",
                      report.details(model))
        self.assertIn("280 GB/s measured on NVIDIA GeForce GTX 1080 (sm_61)", report.details(model))
        self.assertIn("| measured on another GPU: for the instructor | by hand (1) |", formats.markdown(data))
        self.assertIn("1 points of figures measured on another GPU are left to your instructor",
                      formats.markdown(data))
        classroom = formats.classroom_results(data)["vectorAdd"]
        self.assertEqual(sum(t["score"] for t in classroom["tests"]), data["labs"][0]["total"])
        self.assertIn("vectorAdd: question your_gbps (left to your instructor)", [t["name"] for t in classroom["tests"]])


class GradingGpuTest(unittest.TestCase):
    # The GPU that graded the run, in the JSON and in every rendering a student reads.
    def test_named_everywhere(self):
        data, _ = graded_run("2900 GB/s measured on NVIDIA H100 80GB HBM3 (sm_90)")
        self.assertEqual(data["gpu"], H100)
        model = report.read(data)
        self.assertEqual(report.table(model).splitlines()[-1], f"graded on {LABEL}")
        self.assertIn(f"graded on {LABEL} · seed 1", formats.markdown(data))
        facts = re.search(r'<p class="facts">(.*?)</p>', formats.html(data)).group(1)
        self.assertIn(f"graded on {LABEL}", facts)
        classroom = formats.classroom_results(data)["vectorAdd"]
        self.assertIn(f"(graded on {LABEL})", next(t["message"] for t in classroom["tests"]
                                                   if t["name"] == "vectorAdd: performance"))
        self.assertIn(f"graded on {LABEL}", formats.gradescope(data)["output"])

    # A report from before the GPU was recorded still reads: the bench's device names it, or nothing does.
    def test_older_reports(self):
        old = json.loads((FIXTURES / "reports" / "pass.json").read_text())
        self.assertNotIn("gpu", old)
        self.assertEqual(report.read(old).gpu_label, "NVIDIA H100 80GB HBM3")
        bare = copy.deepcopy(old)
        for lab in bare["labs"]:
            lab["bench"] = None
        for data in (old, bare):
            model = report.read(data)
            text = report.table(model) + formats.markdown(data) + formats.html(data)
            self.assertEqual("graded on" in text, data is old)
            formats.classroom_results(data)
            formats.gradescope(data)
        data, _ = graded_run("1000")
        data["gpu"] = "an H100"  # odd: not an object
        self.assertEqual(report.read(data).gpu_label, LABEL)  # the bench's device instead

    # The grading run records the first visible GPU, or none.
    def test_run_records_the_first_gpu(self):
        devices = [gpu.Device("0", "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-0"),
                   gpu.Device("1", "NVIDIA H200", "9.0", 143771, "GPU-1")]
        for found, expected in ((devices, H100), ([], None)):
            with tempfile.TemporaryDirectory() as tmp, \
                    mock.patch.object(grade.gpu, "devices", return_value=found), \
                    mock.patch.object(grade.gpu, "memory_mb", return_value=0), \
                    mock.patch.object(grade, "test_labs", return_value={}):
                options = grade.Options(root=KIT, build_dir=Path(tmp) / "build", impl="student", seed=1,
                                        config=config.load(None), no_build=True, student_root=Path(tmp) / "own")
                run = grade.grade(options, [], report.Progress(None, quiet=True))
                self.assertEqual(run.gpu, expected)
                self.assertEqual(report.to_json(run)["gpu"], expected)


class ChoiceTest(unittest.TestCase):
    def test_config_key(self):
        self.assertEqual(config.load(None).grader["answer_feedback"], answers.VERDICT)
        self.assertEqual(config.from_dict({"grader": {"answer_feedback": "figures"}}, None).grader["answer_feedback"],
                         answers.FIGURES)
        with self.assertRaisesRegex(config.ConfigError, 'answer_feedback: expected "verdict" or "figures"'):
            config.from_dict({"grader": {"answer_feedback": "numbers"}}, None)

    def test_command_line_flag(self):
        with tempfile.TemporaryDirectory() as tmp:
            def resolved(*flags: str) -> str:
                args = cli.build_parser().parse_args(["--root", str(KIT), "--build-dir", tmp, "--seed", "1",
                                                      *flags, "vectorAdd"])
                return cli.resolve(args)[0].config.grader["answer_feedback"]

            self.assertEqual(resolved(), answers.VERDICT)
            self.assertEqual(resolved("--answer-feedback", "figures"), answers.FIGURES)
            toml = Path(tmp) / "grader.toml"
            toml.write_text('[grader]\nanswer_feedback = "figures"\n')
            self.assertEqual(resolved("--config", str(toml)), answers.FIGURES)
            self.assertEqual(resolved("--config", str(toml), "--answer-feedback", "verdict"), answers.VERDICT)
            with self.assertRaisesRegex(cli.UsageError, "invalid choice"):
                resolved("--answer-feedback", "numbers")


if __name__ == "__main__":
    unittest.main()
