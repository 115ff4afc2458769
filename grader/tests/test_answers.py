"""Graded questions (grader/answers.py): the answers file's parser, the checks, and the
kit's own questions: every lab's template, reference answers, answer key and handout
agree with its manifest and with what the grader does."""

from __future__ import annotations

import json
import re
import tempfile
import unittest
from pathlib import Path

from grader import answers, config, manifest, variants
from grader.answers import Question

KIT = Path(__file__).resolve().parents[2]
LABS = manifest.labs(KIT)
ASKING = [lab for lab in LABS if lab.questions]

NUMBER = Question("count", "a count", "number", 2.0, "key")
BENCH = Question("gbps", "your GB/s", "number", 1.0, "bench", figure="throughput", tolerance=0.15)
TEXT = Question("why", "why", "text", 3.0, "manual")
KEY = {"count": {"value": 47}}
# What a reference answer to a bench question says until someone measures it on a GPU.
TO_MEASURE = "<run the bench"


H100 = "NVIDIA H100 80GB HBM3"
H100_DEVICE = {"name": H100, "compute_capability": "9.0", "peak_dram_gbps": 3352.3, "peak_fp32_gflops": 66908.2,
               "peak_rsqrt_gops": 4181.76}


def bench_with(figure: float | None, *, figure_name: str = "throughput", peak: float | None = 3352.3,
               device: dict | None = None, peak_of: str | None = None, unit: str = "GB/s",
               workload: str = "") -> dict:
    """A bench JSON whose first graded workload's student row has `figure` (throughput,
    pct_peak or median_ms), on an H100 unless `device` says otherwise. With `workload`, the
    figure is in an ungraded workload of that name instead, the graded one's three times it."""
    graded = {"name": "graded", "graded": True, "unit": unit, "peak": peak, "results": [
        {"role": "reference", "throughput": 2000.0},
        {"role": "student", figure_name: figure * 3 if workload and figure else figure}]}
    if peak_of is not None:
        graded["peak_of"] = peak_of
    named = [{"name": workload, "graded": False, "unit": unit, "peak": None, "results": [
        {"role": "reference", figure_name: 1.0}, {"role": "student", figure_name: figure}]}] if workload else []
    return {"device": dict(device or H100_DEVICE),
            "workloads": [{"name": "ungraded", "graded": False, "results": [{"role": "student", "throughput": 1.0}]},
                          graded, *named]}


def on(gpu: str, text: str = "2400 GB/s") -> str:
    """A bench answer's line, as the bench prints it."""
    return f"{text} measured on {gpu}"


def grade_text(text: str, questions=(NUMBER, BENCH, TEXT), key=KEY, bench=None, points=None,
               feedback: str = answers.VERDICT, profile: dict | None = None) -> answers.AnswersResult:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.md"
        path.write_text(text, encoding="utf-8")
        return answers.grade(tuple(questions), path, "labs/x/answers.md", key,
                             bench if bench is not None else bench_with(2500.0), points, feedback=feedback, lab="x",
                             profile=profile)


def by_id(result: answers.AnswersResult) -> dict[str, dict]:
    return {q["id"]: q for q in result.questions}


class Parsing(unittest.TestCase):
    def test_answers_by_heading(self):
        text = ("# title\nintro\nAnswer: not in a question\n"
                "## count\nHow many?\n\nAnswer: 47 warp-steps\n\n"
                "## why · a title after the id\n<!-- a hint: Answer: no -->\n**Answer:** because\nof the order.\n"
                "## gbps\nAnswer:\n")
        found = answers.parse_answers(text)
        self.assertEqual(found, {"count": "47 warp-steps", "why": "because\nof the order.", "gbps": ""})

    def test_first_answer_line_wins_and_duplicates_keep_the_first(self):
        found = answers.parse_answers("## count\nAnswer: 1\nAnswer: 2\n## count\nAnswer: 3\n")
        self.assertEqual(found["count"], "1\nAnswer: 2")
        self.assertEqual(answers.parse_number(found["count"]), 1.0)

    def test_numbers(self):
        cases = {"47": 47, "  -0.25 ms": -0.25, "1.5e3": 1500, "1,024 threads": 1024, "2^26": 2**26,
                 "`2047`": 2047, "**12**": 12, "about 3 TB/s": 3, ".5": 0.5, "2 ^ 10": 1024}
        for text, value in cases.items():
            self.assertEqual(answers.parse_number(text), value, text)
        for text in ("", "none", "inf", "many"):
            self.assertIsNone(answers.parse_number(text), text)
        self.assertEqual(answers.parse_number("9^9999"), 9)  # no huge powers: the first number is read

    def test_placeholders(self):
        for text in ("", "TODO", " todo ", "...", "`?`"):
            self.assertTrue(answers.is_placeholder(text), text)
        self.assertFalse(answers.is_placeholder("0"))


class Grading(unittest.TestCase):
    def test_correct_wrong_and_by_hand(self):
        result = grade_text(f"## count\nAnswer: 47\n## gbps\nAnswer: {on(H100 + ' (sm_90)')}\n"
                            "## why\nAnswer: the order changes\n", feedback=answers.FIGURES)
        rows = by_id(result)
        self.assertEqual((rows["count"]["status"], rows["count"]["points"]), (answers.CORRECT, 2.0))
        self.assertEqual((rows["gbps"]["status"], rows["gbps"]["figure"]), (answers.CORRECT, 2500.0))
        self.assertEqual((rows["why"]["status"], rows["why"]["points"]), (answers.MANUAL, 0.0))
        self.assertEqual((result.points, result.max, result.pending), (3.0, 3.0, 3.0))
        self.assertEqual(rows["why"]["answer"], "the order changes")

    def test_wrong_answers_earn_nothing_and_say_why(self):
        text = f"## count\nAnswer: 48\n## gbps\nAnswer: {on(H100, '3000')}\n## why\nAnswer:\n"
        rows = by_id(grade_text(text, feedback=answers.FIGURES))
        self.assertEqual(rows["count"]["status"], answers.WRONG)
        self.assertEqual(rows["gbps"]["status"], answers.WRONG)
        self.assertIn("2500", rows["gbps"]["why"])  # the student's own figure, not the key
        self.assertEqual(rows["why"]["status"], answers.UNANSWERED)
        # By default the grading run's figure stays out of the row: only the verdict and what to do.
        result = grade_text(text)
        rows = by_id(result)
        self.assertEqual(rows["gbps"]["status"], answers.WRONG)
        self.assertNotIn("2500", json.dumps(rows["gbps"]))
        self.assertNotIn("figure", rows["gbps"])
        self.assertIn(f"run `x_bench` on {H100} (sm_90) and paste the line it prints", rows["gbps"]["why"])
        self.assertEqual(result.points, 0.0)

    def test_key_tolerances(self):
        entry = {"value": 100.0, "rel_tolerance": 0.05}
        self.assertTrue(answers.key_matches(104.9, entry))
        self.assertFalse(answers.key_matches(105.1, entry))
        self.assertTrue(answers.key_matches(102, {"value": 100, "abs_tolerance": 2}))
        self.assertTrue(answers.key_matches(0.1 + 0.2, {"value": 0.3}))  # rounding is not a wrong answer
        # A tiny key is matched relative to itself: the smallest subnormal float is not any
        # tiny number, nor the smallest normal one.
        subnormal = {"value": 1.401298464324817e-45}
        self.assertTrue(answers.key_matches(answers.parse_number("1.401298464324817e-45"), subnormal))
        self.assertFalse(answers.key_matches(7e-46, subnormal))
        self.assertFalse(answers.key_matches(1.1754943508222875e-38, subnormal))
        self.assertTrue(answers.key_matches(0.0, {"value": 0}))
        self.assertFalse(answers.key_matches(1e-6, {"value": 0}))

    def test_missing_file_heading_or_number(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = answers.grade((NUMBER,), Path(tmp) / "answers.md", "x", KEY, None)
        self.assertIn("not found", result.note)
        self.assertEqual(result.questions[0]["status"], answers.UNANSWERED)
        result = grade_text("## count\nAnswer: forty-seven\n")
        self.assertEqual(by_id(result)["count"]["status"], answers.WRONG)
        self.assertIn("no number", by_id(result)["count"]["why"])
        self.assertEqual(by_id(grade_text("## count\nno answer line\n"))["count"]["status"], answers.UNANSWERED)

    def test_no_bench_or_no_key_is_unchecked_not_wrong(self):
        result = grade_text(f"## count\nAnswer: 47\n## gbps\nAnswer: {on(H100, '2500')}\n", key={}, bench={})
        rows = by_id(result)
        self.assertEqual(rows["count"]["status"], answers.AT_DEADLINE)  # no key at all: see KeyAtTheDeadline
        self.assertEqual(rows["gbps"]["status"], answers.UNCHECKED)
        # A key without this question's value is the instructor's to fix: unchecked, in the total.
        result = grade_text("## count\nAnswer: 47\n", key={"other": {"value": 1}})
        self.assertEqual(by_id(result)["count"]["status"], answers.UNCHECKED)
        self.assertIn("has no value", by_id(result)["count"]["why"])
        self.assertEqual((result.max, result.pending), (3.0, 3.0))
        for odd in (None, "fast", float("nan")):
            self.assertEqual(by_id(grade_text(f"## gbps\nAnswer: {on(H100, '2500')}\n",
                                              bench=bench_with(odd)))["gbps"]["status"], answers.UNCHECKED, odd)

    # The student controls the file, not what it is worth: headings, points or a key in it change nothing.
    def test_the_file_cannot_change_the_questions(self):
        text = ('## count\nAnswer: 47\n## count\nAnswer: 47\n## extra\nAnswer: 1\n'
                '{"questions": [{"id": "count", "points": 100}]}\n## why\nAnswer: ' + "x" * 10000 + "\n")
        result = grade_text(text)
        self.assertEqual((result.points, result.max), (2.0, 3.0))
        self.assertEqual([q["id"] for q in result.questions], ["count", "gbps", "why"])
        self.assertLessEqual(len(by_id(result)["why"]["answer"]), answers.MAX_ANSWER_CHARS + 10)

    def test_huge_or_binary_file(self):
        result = grade_text("## count\nAnswer: 47\n" + "\x00\xff" * (answers.MAX_FILE_BYTES // 2))
        self.assertEqual(by_id(result)["count"]["status"], answers.CORRECT)
        self.assertIn("only its beginning", result.note)

    def test_points_from_the_config(self):
        result = grade_text("## count\nAnswer: 47\n", points={"count": 5, "why": 0})
        self.assertEqual((result.points, result.max, result.pending), (5.0, 6.0, 0.0))


A100 = "NVIDIA A100 80GB PCIe (sm_80)"  # DRAM peak 2 x 1512 MHz x 640 bytes = 1935.36 GB/s
FIGURE = 2937.41  # the grading run's GB/s on the H100: 87.62% of its 3352.3 GB/s
SHARE_TEXTS = ("2937", "2.937", "87.6", "0.876")  # how that figure or its share could show


def bench_row(text: str, bench: dict | None = None, question: Question = BENCH,
              feedback: str = answers.VERDICT) -> tuple[dict, answers.AnswersResult]:
    """The row of `question` answered with `text`, and the whole result."""
    result = grade_text(f"## {question.id}\nAnswer: {text}\n", questions=(question,),
                        bench=bench if bench is not None else bench_with(FIGURE), feedback=feedback)
    return by_id(result)[question.id], result


# The Classroom runner holds no answer key (a student's workflow step could print it): an
# answer checked against the key is graded at the deadline, its points pending, neither
# right nor wrong; the instructor's run with the keys grades it as before.
class KeyAtTheDeadline(unittest.TestCase):
    TEXT = "## count\nAnswer: 47\n## gbps\nAnswer: {}\n## why\nAnswer: because\n".format(on(H100, "2500"))

    def test_no_key_leaves_the_points_pending(self):
        result = grade_text(self.TEXT, key={})
        rows = by_id(result)
        self.assertEqual(rows["count"]["status"], answers.AT_DEADLINE)
        self.assertEqual(rows["count"]["points"], 0.0)
        self.assertIn("at the deadline", rows["count"]["why"])
        self.assertIn("not on this grading machine", rows["count"]["why"])
        self.assertEqual(rows["gbps"]["status"], answers.CORRECT)  # the bench needs no key
        self.assertEqual(rows["why"]["status"], answers.MANUAL)
        # count's 2 points and the written answer's 3 are pending; the bench's 1 is checked.
        self.assertEqual((result.points, result.max, result.pending), (1.0, 1.0, 5.0))
        self.assertIn("1 answer checked against the instructor's key at the deadline", result.note)

    def test_a_wrong_or_missing_answer_is_not_hidden_until_the_deadline(self):
        rows = by_id(grade_text("## count\nAnswer: forty-seven\n", key={}))
        self.assertEqual(rows["count"]["status"], answers.WRONG)  # no number: say so now
        rows = by_id(grade_text("## count\nAnswer: TODO\n", key={}))
        self.assertEqual(rows["count"]["status"], answers.UNANSWERED)
        self.assertEqual(grade_text("## count\nAnswer: TODO\n", key={}).note, "")

    def test_with_the_key_as_before(self):
        for given, status in (("47", answers.CORRECT), ("46", answers.WRONG)):
            result = grade_text(self.TEXT.replace("47", given), key=KEY)
            self.assertEqual(by_id(result)["count"]["status"], status)
            self.assertEqual((result.max, result.pending), (3.0, 3.0))
            self.assertNotIn("deadline", result.note)

    # What the student writes cannot make the grader think there is no key.
    def test_the_answers_file_cannot_postpone_a_checked_answer(self):
        text = '## count\nAnswer: 46\n<!-- {"schema": "labkit-answer-key", "answers": {}} -->\n'
        self.assertEqual(by_id(grade_text(text, key=KEY))["count"]["status"], answers.WRONG)

    # The lab passes; the reports list the answer as pending, outside the Classroom score.
    def test_reports_show_it_pending_and_the_lab_passes(self):
        from grader import formats, report
        result = grade_text(self.TEXT, key={})
        data = {"schema": report.REPORT_SCHEMA, "version": report.REPORT_VERSION, "labs": [
            {"lab": "x", "status": "PASS", "correctness": {"points": 10.0, "max": 10.0, "tests": [
                {"name": "T.a", "status": "passed", "weight": 1.0}]}, "answers": result.as_dict()}]}
        lab = report.read(data).labs[0]
        later = lab.questions[0]
        self.assertTrue(later.pending)
        self.assertEqual(later.status_text, "graded at the deadline")
        self.assertEqual((lab.total, lab.max), (11.0, 11.0))  # the key answer's 2 points wait
        self.assertEqual(report.pending_points([lab]), (3.0, 0.0))  # the written answer's only
        self.assertEqual(report.deadline_points([lab]), 2.0)
        self.assertIn("2 more points of answers are checked against the instructor's key at the deadline",
                      " ".join(report.pending_lines([lab])))
        summary = formats.markdown(data)
        self.assertIn("at the deadline (2)", summary)
        self.assertIn("2 points of answers are checked against the instructor's key at the deadline", summary)
        classroom = formats.classroom_results(data)["x"]
        self.assertEqual((classroom["status"], classroom["max_score"]), ("pass", 11))
        self.assertEqual(sum(t["score"] for t in classroom["tests"]), 11.0)
        self.assertFalse(any("question count" in t["name"] for t in classroom["tests"]))
        self.assertTrue(any("question gbps" in t["name"] for t in classroom["tests"]))
        scope = {t["name"]: t for t in formats.gradescope(data)["tests"]}
        self.assertEqual(scope["x: question count (graded at the deadline)"]["max_score"], 0.0)


class BenchLines(unittest.TestCase):
    """A bench answer's lines: the figure and the GPU each names."""

    def test_the_line_the_bench_prints(self):
        found = answers.parse_measured(f"Answer: 3002 GB/s measured on {H100} (sm_90)")
        self.assertEqual(found, [answers.Measured(3002.0, H100, "90", f"Answer: 3002 GB/s measured on {H100} (sm_90)")])
        self.assertEqual(found[0].label(), f"{H100} (sm_90)")

    def test_several_lines_markup_and_notes(self):
        text = ("**2,900 GB/s** measured on `NVIDIA  H100 80GB HBM3` (SM_90).\n"
                "- Answer: 1.7e3 GB/s measured on NVIDIA A100 80GB PCIe\n"
                "I measured on my own card first; 12 runs.\n"
                "45.5% of peak Measured On NVIDIA GeForce RTX 4090 Laptop GPU (sm_89)\n")
        found = answers.parse_measured(text)
        self.assertEqual([(m.value, m.gpu, m.arch) for m in found],
                         [(2900.0, "NVIDIA H100 80GB HBM3", "90"), (1700.0, "NVIDIA A100 80GB PCIe", ""),
                          (None, "my own card first; 12 runs", ""),
                          (45.5, "NVIDIA GeForce RTX 4090 Laptop GPU", "89")])

    def test_a_number_alone_names_no_gpu(self):
        self.assertEqual(answers.parse_measured("3002 GB/s\nwith n = 2^26"), [answers.Measured(3002.0, text="3002 GB/s")])
        self.assertEqual(answers.parse_measured("about twice the CPU\n3002"), [])


class BenchAcrossGpus(unittest.TestCase):
    """A bench answer graded on the GPU it names: the grading GPU's model as on one GPU,
    a GPU whose peaks the grader knows as a share of its peak, anything else left to the
    instructor; and no line a student may write gains points it should not."""

    def assert_row(self, text: str, status: str, bench: dict | None = None, question: Question = BENCH) -> dict:
        row, result = bench_row(text, bench, question)
        self.assertEqual(row["status"], status, row["why"])
        self.assertEqual(row["points"], question.points if status == answers.CORRECT else 0.0)
        if status == answers.OTHER_GPU:  # pending like a written answer, outside the automatic maximum
            self.assertEqual((result.max, result.pending), (0.0, question.points))
        else:
            self.assertEqual((result.max, result.pending), (question.points, 0.0))
        return row

    def test_the_grading_gpu_within_its_tolerance(self):
        self.assert_row(on(f"{H100} (sm_90)", "2700 GB/s"), answers.CORRECT)  # 8% below
        self.assert_row(on(f"{H100} (sm_90)", "2400 GB/s"), answers.WRONG)  # 18% below
        # Its name however written: case, spaces, without "NVIDIA", without (sm_90).
        for name in ("nvidia  h100 80gb hbm3", "H100 80GB HBM3", H100):
            self.assert_row(on(name, "2800"), answers.CORRECT)
            self.assert_row(on(name, "1000"), answers.WRONG)

    def test_another_known_gpu_as_a_share_of_its_peak(self):
        # 1700 GB/s is 87.8% of the A100's 1935 GB/s: the grading run's share is 87.6%.
        self.assert_row(on(A100, "1700 GB/s"), answers.CORRECT)
        self.assert_row(on(A100, "1200 GB/s"), answers.WRONG)  # 62%: more than 25% below
        # The grading GPU's figure pasted as another GPU's is 152% of that GPU's peak.
        self.assert_row(on(A100, "2937 GB/s"), answers.WRONG)
        self.assert_row(on("Tesla T4 (sm_75)", "2937 GB/s"), answers.WRONG)

    def test_what_cannot_be_compared_is_left_to_the_instructor(self):
        row = self.assert_row(on("NVIDIA GeForce GTX 1080 (sm_61)", "280 GB/s"), answers.OTHER_GPU)
        self.assertIn("not in the grader's table", row["why"])
        self.assertIn("280 GB/s measured on NVIDIA GeForce GTX 1080 (sm_61)", row["why"])  # the student's line
        row = self.assert_row("2937 GB/s", answers.OTHER_GPU)  # the very figure, but no GPU named
        self.assertIn("names no GPU", row["why"])
        sort = bench_with(30.1, peak=None, unit="Gkeys/s")  # a workload without a peak
        row = self.assert_row(on(A100, "20 Gkeys/s"), answers.OTHER_GPU, sort)
        self.assertIn("no peak", row["why"])
        self.assert_row(on(H100, "31 Gkeys/s"), answers.CORRECT, sort)
        self.assert_row(on(H100, "20 Gkeys/s"), answers.WRONG, sort)

    def test_a_share_of_peak_travels_to_any_gpu(self):
        pct = Question("pct", "your % of peak", "number", 1.0, "bench", figure="pct_peak")
        bench = bench_with(87.6, figure_name="pct_peak")
        self.assert_row(on("NVIDIA GeForce GTX 1080 (sm_61)", "80% of peak"), answers.CORRECT, bench, pct)
        self.assert_row(on("NVIDIA GeForce GTX 1080 (sm_61)", "50% of peak"), answers.WRONG, bench, pct)
        self.assert_row(on("a GPU that does not exist", "50% of peak"), answers.WRONG, bench, pct)
        self.assert_row(on(H100, "77% of peak"), answers.CORRECT, bench, pct)  # 12% below: the grading GPU's 15%
        self.assert_row(on(H100, "70% of peak"), answers.WRONG, bench, pct)  # 20% below
        self.assert_row("87.6", answers.OTHER_GPU, bench, pct)

    def test_the_workloads_peak_follows_its_kind(self):
        # Sobel: a pixel is 2 DRAM bytes, the peak half the DRAM's; found without "peak_of" too.
        for peak_of in (None, "dram"):
            sobel = bench_with(1116.0, peak=3352.3 / 2, unit="Gpixel/s", peak_of=peak_of)
            self.assert_row(on(A100, "650 Gpixel/s"), answers.CORRECT, sobel)  # 67.2% against 66.6%
            self.assert_row(on(A100, "1116 Gpixel/s"), answers.WRONG, sobel)
        # Matmul: the FP32 peak (an RTX 4090's is 82575 GFLOP/s); a laptop's FP32 peak is not known.
        matmul = bench_with(40086.0, peak=66908.2, unit="GFLOP/s")
        self.assert_row(on("NVIDIA GeForce RTX 4090 (sm_89)", "49500 GFLOP/s"), answers.CORRECT, matmul)
        self.assert_row(on("NVIDIA GeForce RTX 4090 (sm_89)", "30000 GFLOP/s"), answers.WRONG, matmul)
        self.assert_row(on("NVIDIA GeForce RTX 4090 Laptop GPU (sm_89)", "30000 GFLOP/s"), answers.OTHER_GPU, matmul)
        # Boards that share a name and differ in their DRAM peak (the RTX 3060 with 12 or 8 GB).
        self.assert_row(on("NVIDIA GeForce RTX 3060 (sm_86)", "300 GB/s"), answers.OTHER_GPU)
        self.assert_row(on("NVIDIA GeForce RTX 3060 (sm_86)", "9000 GFLOP/s"), answers.CORRECT, matmul)
        # A time: the same work takes longer where the peak is lower.
        ms = Question("ms", "your time", "number", 1.0, "bench", figure="median_ms")
        timed = bench_with(0.268, figure_name="median_ms")
        self.assert_row(on(A100, "0.47 ms"), answers.CORRECT, timed, ms)
        self.assert_row(on(A100, "0.268 ms"), answers.WRONG, timed, ms)

    # Whatever a student writes, a line that can be checked decides, and every such line must fit.
    def test_no_line_gains_points(self):
        # A wrong number for the grading GPU stays wrong, with a right line for another GPU beside it.
        self.assert_row(on(H100, "1000 GB/s") + "\n" + on(A100, "1700 GB/s"), answers.WRONG)
        self.assert_row(on(H100, "2900 GB/s") + "\n" + on(A100, "1000 GB/s"), answers.CORRECT)
        # Several lines for the grading GPU, or for known GPUs: all must fit (no guessing by numbers).
        self.assert_row(on(H100, "2900 GB/s") + "\n" + on(H100, "1000 GB/s"), answers.WRONG)
        self.assert_row(on(A100, "1700 GB/s") + "\n" + on("Tesla T4", "100 GB/s"), answers.WRONG)
        # A GPU the grader does not know cannot rescue a line it can check.
        self.assert_row(on(A100, "1000 GB/s") + "\n" + on("NVIDIA GeForce GTX 1080", "280 GB/s"), answers.WRONG)
        # A garbled name of the grading GPU (a letter O for a zero, a Cyrillic Н, a character
        # dropped) is still the grading GPU: checked as such, not left to the instructor.
        for name in ("NVIDIA H1OO 80GB HBM3", "NVIDIA \u041d100 80GB HBM3", "NVIDIA H100 80GB HBM", "NVlDIA H100 80GB HBM3"):
            self.assert_row(on(name, "1000 GB/s"), answers.WRONG)
            self.assert_row(on(name, "2900 GB/s"), answers.CORRECT)
        # A garbled name of a known GPU names no GPU the grader knows: no points, the instructor sees it.
        row, result = bench_row(on("NVIDIA A1OO 80GB PCle", "2937 GB/s"))
        self.assertEqual((row["status"], result.points), (answers.OTHER_GPU, 0.0))
        # A line that says where it was measured but gives no number is a note; alone it is no answer.
        self.assert_row(f"measured on {H100}", answers.WRONG)
        # Thousands of lines cost the report nothing: a few are shown.
        many = "\n".join(on(f"GPU number {i}", "280 GB/s") for i in range(5000))
        row = self.assert_row(many, answers.OTHER_GPU)
        self.assertLess(len(row["why"]), 1500)
        self.assertIn("and 4997 more", row["why"])

    # The default feedback never shows the grading run's figure, nor its share of the peak.
    def test_verdict_keeps_the_grading_figure_out(self):
        for text in (on(H100, "2900 GB/s"), on(H100, "1000 GB/s"), on(A100, "1700 GB/s"), on(A100, "1000 GB/s"),
                     on("NVIDIA GeForce GTX 1080", "280 GB/s"), "1000", on("H1OO 80GB HBM3", "1000 GB/s")):
            with self.subTest(text):
                row, _ = bench_row(text)
                shown = json.dumps(row)
                self.assertFalse([t for t in SHARE_TEXTS if t in shown], shown)
                self.assertNotIn("figure", row)
                row, _ = bench_row(text, feedback=answers.FIGURES)  # the instructor's choice: the figures shown
                self.assertIn("2937", row["why"])
                self.assertEqual(row["figure"], FIGURE)

    def test_the_grading_gpu_is_named(self):
        row, _ = bench_row(on(H100, "1000 GB/s"))
        self.assertIn(f"on {H100} (sm_90)", row["why"])
        old = bench_with(FIGURE)
        del old["device"]["compute_capability"]  # a bench from before it was recorded
        row, _ = bench_row(on(H100, "1000 GB/s"), old)
        self.assertIn(f"on {H100}:", row["why"])


FUSION = "kernel fusion n=65536 iterations=100"
FUSED_MS = Question("fused_kernel_ms", "your fused_kernel's time", "number", 1.0, "bench", figure="median_ms",
                    tolerance=0.2, workload=FUSION)


def fusion_bench(fused_ms: float | None = 0.05, three_ms: float = 0.9, graded_ms: float = 0.4, *,
                 student: dict | None = None) -> dict:
    """A grading run's bench JSON: the graded vector_add workload, then the ungraded fusion
    workload that a question names (the student's fused_kernel and three_kernels rows)."""
    fused = {"role": "student", "name": "fused (yours)", "median_ms": fused_ms, "check_failures": 0,
             **(student or {})}
    return {"device": dict(H100_DEVICE), "workloads": [
        {"name": "vector_add n=67108864", "graded": True, "unit": "GB/s", "peak": 3352.3,
         "results": [{"role": "student", "median_ms": graded_ms, "throughput": 2000.0}]},
        {"name": FUSION, "graded": False, "unit": "Gsteps/s", "peak": None,
         "results": [fused, {"role": "variant", "name": "three kernels (yours)", "median_ms": three_ms},
                     {"role": "reference", "name": "fused (reference)", "median_ms": 0.03}]}]}


class BenchWorkload(unittest.TestCase):
    """A bench question that names its workload reads its figure there, in the grading run's
    bench JSON; a JSON without it leaves the answer unchecked, never a crash."""

    def row(self, text: str, bench: dict | None, question: Question = FUSED_MS) -> tuple[dict, answers.AnswersResult]:
        return bench_row(text, bench, question, feedback=answers.FIGURES)

    def test_the_figure_comes_from_the_named_workload(self):
        line = on(f"{H100} (sm_90)", "0.05 ms")
        row, result = self.row(line, fusion_bench(0.055))
        self.assertEqual((row["status"], row["figure"], result.points), (answers.CORRECT, 0.055, 1.0), row["why"])
        self.assertEqual(answers.bench_figure(fusion_bench(0.055), "median_ms", FUSION), 0.055)
        # The graded workload's time is another figure: the fused time does not match it.
        row, _ = self.row(line, fusion_bench(0.055, graded_ms=0.05))
        self.assertEqual(row["status"], answers.CORRECT)
        row, _ = self.row(line, fusion_bench(0.4, graded_ms=0.05))
        self.assertEqual((row["status"], row["figure"]), (answers.WRONG, 0.4))

    def test_a_figure_of_another_workload_or_row_is_wrong(self):
        bench = fusion_bench(0.05, three_ms=0.9, graded_ms=0.4)
        for other in ("0.9 ms", "0.4 ms", "0.03 ms"):  # three_kernels, vector_add, the reference's fused_kernel
            with self.subTest(answer=other):
                row, _ = self.row(on(H100, other), bench)
                self.assertEqual(row["status"], answers.WRONG, row["why"])

    def test_a_question_without_a_workload_reads_the_first_graded_one(self):
        question = Question("ms", "your time", "number", 1.0, "bench", figure="median_ms")
        bench = fusion_bench(0.05, graded_ms=0.4)
        bench["workloads"].reverse()  # the named workload first: still not the graded one
        self.assertEqual(self.row(on(H100, "0.4 ms"), bench, question)[0]["status"], answers.CORRECT)
        self.assertEqual(self.row(on(H100, "0.05 ms"), bench, question)[0]["status"], answers.WRONG)

    def test_a_bench_without_the_workload_leaves_it_unchecked(self):
        bench = fusion_bench()
        del bench["workloads"][1]  # a bench built before the question, or one that skipped it
        row, result = self.row(on(H100, "0.05 ms"), bench)
        self.assertEqual((row["status"], row["points"], result.points), (answers.UNCHECKED, 0.0, 0.0))
        self.assertIn(f'did not time the workload "{FUSION}"', row["why"])
        # No bench at all: the usual message.
        row, _ = self.row(on(H100, "0.05 ms"), {"device": dict(H100_DEVICE)})
        self.assertEqual(row["status"], answers.UNCHECKED)
        self.assertIn(FUSION, row["why"])

    def test_odd_bench_json_is_no_crash(self):
        odd: list = [{}, {"workloads": None}, {"workloads": "x"}, {"workloads": [None, 3, "x"]},
                     {"workloads": [{"name": FUSION, "results": None}]},
                     {"workloads": [{"name": FUSION, "results": [None, {"role": "student"}]}]},
                     {"workloads": [{"name": FUSION, "results": [{"role": "student", "median_ms": "fast"}]}]},
                     {"workloads": [{"name": FUSION, "results": [{"role": "student", "median_ms": float("nan")}]}]},
                     {"device": "x", "workloads": [{"name": FUSION, "results": [{"role": "student", "median_ms": 0.05,
                                                                                 "check_failures": "many"}]}]}]
        for bench in odd:
            with self.subTest(bench=bench):
                row, _ = self.row(on(H100, "0.05 ms"), bench)
                self.assertIn(row["status"], (answers.UNCHECKED, answers.WRONG, answers.OTHER_GPU), row["why"])
                self.assertEqual(row["points"], 0.0)

    def test_wrong_output_gives_no_figure_to_answer_with(self):
        # A fused_kernel that does nothing is fast: its time is no answer, even pasted by hand.
        for student in ({"check_failures": 3}, {"inputs_changed": True}):
            with self.subTest(student=student):
                row, _ = self.row(on(f"{H100} (sm_90)", "0.002 ms"), fusion_bench(0.002, student=student))
                self.assertEqual(row["status"], answers.WRONG)
                self.assertIn(f'output was wrong in "{FUSION}"', row["why"])
        # The same for a question of the graded workload.
        bench = bench_with(FIGURE)
        bench["workloads"][1]["results"][1]["check_failures"] = 1
        row, _ = bench_row(on(H100, f"{FIGURE} GB/s"), bench)
        self.assertEqual(row["status"], answers.WRONG)
        self.assertIn("output was wrong in this grading run", row["why"])

    def test_the_manifest_names_a_workload(self):
        question, = answers.parse_questions([{"id": "f", "check": "bench", "figure": "median_ms",
                                              "workload": FUSION}], "lab.json")
        self.assertEqual(question.workload, FUSION)
        plain, = answers.parse_questions([{"id": "g", "check": "bench"}], "lab.json")
        self.assertEqual(plain.workload, "")
        bad = [{"id": "x", "workload": FUSION},  # a key question
               {"id": "x", "check": "bench", "figure": "peak_dram", "workload": FUSION},
               {"id": "x", "check": "bench", "workload": 'a"b'}, {"id": "x", "check": "bench", "workload": "a;b"},
               {"id": "x", "check": "bench", "workload": "a|b"}, {"id": "x", "check": "bench", "workload": 3},
               {"id": "x", "check": "bench", "workload": "kernel fusion: n=1"}]
        for entry in bad:
            with self.assertRaises(ValueError, msg=entry):
                answers.parse_questions([entry], "lab.json")


class Manifests(unittest.TestCase):
    def test_bad_questions_are_refused(self):
        bad = [{"id": "a b"}, {"id": "x", "kind": "essay"}, {"id": "x", "points": -1},
               {"id": "x", "kind": "text", "check": "key"}, {"id": "x", "check": "bench", "figure": "speed"},
               {"id": "x", "tolerance": 2}, {"id": "x", "check": "bench", "cross_gpu_tolerance": 1.5},
               {"id": "x", "check": "bench", "cross_gpu_tolerance": True}, "x"]
        for entry in bad:
            with self.assertRaises(ValueError, msg=entry):
                answers.parse_questions([entry], "lab.json")
        with self.assertRaisesRegex(ValueError, "twice"):
            answers.parse_questions([{"id": "x"}, {"id": "x"}], "lab.json")

    def test_cross_gpu_tolerance(self):
        default, own = answers.parse_questions([{"id": "a", "check": "bench"},
                                                {"id": "b", "check": "bench", "cross_gpu_tolerance": 0.4}], "lab.json")
        self.assertEqual((default.cross_gpu_tolerance, own.cross_gpu_tolerance), (0.25, 0.4))

    def test_bad_key_is_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "answer_key.json"
            self.assertEqual(answers.read_key(path), {})
            for text in ("{", '{"schema": "other"}', '{"schema": "labkit-answer-key", "version": 1, "answers": []}',
                         '{"schema": "labkit-answer-key", "version": 1, "answers": {"a": {"value": "47"}}}'):
                path.write_text(text)
                with self.assertRaises(answers.AnswerKeyError, msg=text):
                    answers.read_key(path)


def _grading_rows(text: str) -> dict[str, str]:
    """The handout's '## Grading' table: part -> points cell."""
    section = text.split("\n## Grading\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0] and not set(cells[0]) <= set(":-"):
            rows[cells[0]] = cells[1]
    return rows


class KitQuestions(unittest.TestCase):
    """The kit's labs: template, reference answers, key and handout agree with the manifest."""

    def test_every_lab_asks_questions(self):
        self.assertEqual([lab.name for lab in LABS if not lab.questions], [])

    def test_template_is_unanswered_and_lists_every_question(self):
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                path = KIT / lab.answers_file
                found = answers.parse_answers(path.read_text(encoding="utf-8"))
                self.assertEqual(sorted(found), sorted(q.id for q in lab.questions))
                self.assertTrue(all(answers.is_placeholder(a) for a in found.values()), found)

    def test_reference_answers_match_the_key(self):
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                folder = KIT / "solutions" / lab.name
                if not folder.is_dir():
                    self.skipTest("no solutions/ in this copy of the kit")
                key = answers.read_key(folder / "answer_key.json")
                given = answers.parse_answers((folder / "answers.md").read_text(encoding="utf-8"))
                to_measure = []  # bench answers nobody has measured on a GPU yet
                for q in lab.questions:
                    self.assertFalse(answers.is_placeholder(given.get(q.id, "")), f"{q.id} unanswered")
                    if q.check == "key":
                        self.assertIn(q.id, key, f"{q.id} has no value in the key")
                        self.assertTrue(answers.key_matches(answers.parse_number(given[q.id]), key[q.id]), q.id)
                    elif q.check == "bench" and q.figure == answers.PEAK_DRAM:
                        self._reference_peak_answer(q, given[q.id])
                    elif q.check == "bench" and given[q.id].strip().startswith(TO_MEASURE):
                        to_measure.append(q.id)
                    elif q.check == "bench":
                        self._reference_bench_answer(q, given[q.id])
                    elif q.check == "profile":
                        self._reference_profile_answer(q, given[q.id])
                    else:
                        self.assertIn("rubric", key.get(q.id, {}), f"{q.id}: the key has no rubric")
                self.assertEqual(sorted(set(key) - {q.id for q in lab.questions}), [], "key entries of no question")
                if to_measure:  # the lead pastes the lines the reference's bench prints
                    self.skipTest(f"{', '.join(to_measure)}: the reference answer is still `{TO_MEASURE} ...>`: "
                                  "paste the lines the reference's bench prints on the H100 and the H200")

    def _reference_bench_answer(self, question: Question, answer: str) -> None:
        """The reference's lines for the H100 and the H200 as the bench prints them there, each
        graded full marks on its GPU when that GPU measures it; the other GPU's line does not
        change that."""
        lines = answers.parse_measured(answer)
        for name in (H100, "NVIDIA H200"):
            mine = [line for line in lines if line.gpu == name and line.arch == "90"]
            self.assertEqual(len(mine), 1, f"{question.id}: no line `... measured on {name} (sm_90)`")
            value = mine[0].value
            if question.figure == "pct_peak":  # as the bench writes a share of the peak
                self.assertIn(f"{value:g}% of peak measured on", mine[0].text)
            bench = bench_with(value, figure_name=question.figure, device={**H100_DEVICE, "name": name},
                               workload=question.workload)
            row = by_id(grade_text(f"## {question.id}\nAnswer: {answer}\n", questions=(question,), bench=bench))
            self.assertEqual(row[question.id]["status"], answers.CORRECT, f"{name}: {row[question.id]['why']}")
            # The same GPU measuring half as much again: the line no longer fits.
            slower = bench_with(value * 1.5, figure_name=question.figure, device={**H100_DEVICE, "name": name},
                                workload=question.workload)
            row = by_id(grade_text(f"## {question.id}\nAnswer: {answer}\n", questions=(question,), bench=slower))
            self.assertEqual(row[question.id]["status"], answers.WRONG, name)

    def _reference_peak_answer(self, question: Question, answer: str) -> None:
        """A computed peak: full marks on the H100 and the H200 when their copies run below it."""
        for name in (H100, "NVIDIA H200"):
            bench = bench_with(2500.0, device={**H100_DEVICE, "name": name})
            bench["workloads"][1]["results"].append({"role": "roofline", "throughput": 2600.0})
            row = by_id(grade_text(f"## {question.id}\nAnswer: {answer}\n", questions=(question,), bench=bench))
            self.assertEqual(row[question.id]["status"], answers.CORRECT, f"{name}: {row[question.id]['why']}")

    def _reference_profile_answer(self, question: Question, answer: str) -> None:
        """A profiler figure: full marks on the H100 and the H200, each against a profile that
        measured its own line's figure on that GPU, pending without a profile."""
        lines = answers.parse_measured(answer)
        for name in (H100, "NVIDIA H200"):
            # A figure that is the same on every GPU (a store efficiency) names none.
            mine = [line for line in lines if line.gpu == name and line.arch == "90"] if lines[0].gpu else lines
            self.assertEqual(len(mine), 1, f"{question.id}: no line `... measured on {name} (sm_90)`")
            value = mine[0].value
            profile = {question.candidate: [{"name": "k", "metrics": {question.metric: value}}], "_gpu": name}
            row = by_id(grade_text(f"## {question.id}\nAnswer: {answer}\n", questions=(question,), bench={},
                                   profile=profile))
            self.assertEqual(row[question.id]["status"], answers.CORRECT, f"{name}: {row[question.id]['why']}")
            # The same GPU's profile measuring half as much again: the line no longer fits.
            profile = {question.candidate: [{"name": "k", "metrics": {question.metric: value * 1.5}}], "_gpu": name}
            row = by_id(grade_text(f"## {question.id}\nAnswer: {answer}\n", questions=(question,), bench={},
                                   profile=profile))
            self.assertEqual(row[question.id]["status"], answers.WRONG, name)
        result = grade_text(f"## {question.id}\nAnswer: {answer}\n", questions=(question,), bench={})
        self.assertEqual((result.questions[0]["status"], result.pending, result.max),
                         (answers.UNCHECKED, question.points, 0.0))

    def test_bench_questions_ask_for_the_line_the_bench_prints(self):
        for lab in ASKING:
            for q in (q for q in lab.questions if q.check == "bench" and q.figure != answers.PEAK_DRAM):
                with self.subTest(lab=lab.name, question=q.id):
                    text = (KIT / lab.answers_file).read_text(encoding="utf-8")
                    section = " ".join(text.split(f"\n## {q.id}\n", 1)[1].split("\n## ", 1)[0].split())
                    self.assertIn("the line your bench prints", section)
                    self.assertIn("`Answer: <figure> measured on <GPU>`", section)
                    # No figure of anyone's GPU to copy: the student's own run gives it.
                    self.assertNotRegex(section, r"\d(?:\.\d+)? ?(?:GB/s|GFLOP/s|Gpixel/s|Gkeys/s)|\d% of peak|measured on [A-Z]")

    def test_keys_stay_out_of_the_students_folders(self):
        self.assertEqual(sorted(p.relative_to(KIT).as_posix() for p in (KIT / "labs").glob("**/answer_key.json")), [])

    def test_handout_grading_matches_the_grader(self):
        settings = config.load(None)
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                text = (KIT / "handouts" / f"{lab.name}.md").read_text(encoding="utf-8")
                rows = _grading_rows(text)
                lab_settings = settings.lab(lab.name)
                checked = sum(q.points for q in lab.questions if q.check != "manual")
                by_hand = sum(q.points for q in lab.questions if q.check == "manual")
                self.assertEqual(rows.get("correctness"), f"{lab_settings.correctness_points:g}")
                self.assertEqual(rows.get("performance"), f"{lab_settings.performance_points:g}")
                self.assertEqual(rows.get("graded questions"), f"{checked:g}")
                self.assertEqual(rows.get("written answers"), f"{by_hand:g}")
                steps = [v for v in lab.required_variants if v.kind == variants.STEP]
                fixes = [v for v in lab.required_variants if v.kind == variants.FIX]
                parts = [v for v in lab.required_variants if v.kind == variants.PART]
                self.assertEqual(rows.get("lecture steps"), f"{sum(v.points for v in steps):g}" if steps else None)
                self.assertEqual(rows.get("find the bug"), f"{sum(v.points for v in fixes):g}" if fixes else None)
                self.assertEqual(rows.get("further parts"), f"{sum(v.points for v in parts):g}" if parts else None)
                for variant in lab.required_variants:
                    self.assertIn(f"`{variant.name}`", text, f"the handout does not name the step {variant.name}")
                performance = next(line for line in text.splitlines() if line.startswith("| performance |"))
                # Every lab grades several shapes: the geometric mean r of t_yours / t_reference.
                self.assertIn("geometric mean r", performance)
                self.assertIn(f"points × {lab_settings.full_credit_ratio:g} / r", performance)
                self.assertIn(f"`{lab_settings.reference_variant}`", performance)
                self.assertIn("confidence interval", performance)
                for q in lab.questions:
                    self.assertTrue(f"`{q.id}`" in text, f"the handout does not name the graded question {q.id}")

    def test_handouts_follow_one_outline(self):
        # Objectives and deliverables first, then the task and its steps, grading,
        # questions, and the hints last (issue: handouts in the form courses use).
        outline = ["## Objectives and deliverables", "## Your task", "### The lecture's steps", "## Grading",
                   "## Questions", "## Hints and common mistakes"]
        for lab in manifest.by_name(KIT).values():
            with self.subTest(lab=lab.name):
                headings = (KIT / "handouts" / f"{lab.name}.md").read_text(encoding="utf-8").splitlines()
                positions = [headings.index(h) if h in headings else -1 for h in outline]
                self.assertNotIn(-1, positions, f"missing: {[h for h, p in zip(outline, positions) if p < 0]}")
                self.assertEqual(positions, sorted(positions), "the handout's sections are out of order")

    def test_instructors_rubric_table_matches_the_manifests(self):
        text = (KIT / "handouts" / "instructors.md").read_text(encoding="utf-8")
        settings = config.load(None)
        for lab in ASKING:
            with self.subTest(lab=lab.name):
                auto = [q for q in lab.questions if q.check != "manual"]
                hand = [q for q in lab.questions if q.check == "manual"]
                row = (f"| {lab.name} | `{settings.lab(lab.name).reference_variant}` "
                       f"| {sum(q.points for q in auto):g}: {', '.join(f'`{q.id}`' for q in auto)} "
                       f"| {sum(q.points for q in hand):g}: {', '.join(f'`{q.id}`' for q in hand)} |")
                self.assertIn(row, text.splitlines())

    def test_instructors_example_config_loads(self):
        text = (KIT / "handouts" / "instructors.md").read_text(encoding="utf-8")
        block = text.split("## 7.", 1)[1].split("    [defaults]", 1)[1].split("\nThe required steps are", 1)[0]
        toml = "[defaults]\n" + "\n".join(line[4:] for line in block.splitlines())
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "grader.toml"
            path.write_text(toml)
            loaded = config.load(path)
        self.assertEqual(loaded.lab("sort").question_points, {"counts_8bit": 3, "unstable_scatter": 0})
        self.assertFalse(loaded.lab("electrostatics").answers)
        self.assertEqual(loaded.lab("scan").performance_curve, "cs149")


class ReferenceVariants(unittest.TestCase):
    """Each lab is graded against a variant its reference registers for the graded
    function (the manifest's first), and not a slow one the bench skips at full size."""

    def test_graded_variant_is_registered(self):
        for lab in LABS:
            with self.subTest(lab=lab.name):
                folder = KIT / "solutions" / lab.name
                if not folder.is_dir():
                    self.skipTest("no solutions/ in this copy of the kit")
                if lab.reference_variant == "default":
                    continue  # every library registers its interface functions as "default"
                code = "\n".join(p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.cu*")))
                registered = re.findall(r"LAB_REGISTER_VARIANT\(\s*" + re.escape(lab.functions[0])
                                        + r'\s*,\s*"([^"]+)"', code)
                self.assertIn(lab.reference_variant, registered)
                self.assertFalse(any(re.fullmatch(re.escape(pattern).replace(r"\*", ".*"), lab.reference_variant)
                                     for pattern in lab.slow_variants), lab.slow_variants)


if __name__ == "__main__":
    unittest.main()
