"""Tests of the course formats (grader/formats/) and `python3 -m grader report`.

The reports under fixtures/reports/ were written by the real grader on fake binaries
(make_reports.py there). Each format is checked against a validator written from the
format's documentation:
- GitHub Classroom: what classroom-resources/autograding-grading-reporter reads
  (src/main.js, src/notify-classroom.js): base64 JSON {version, status, max_score, tests}.
- Gradescope: results.json as in gradescope/autograder_samples docs/specs.md.
- JUnit XML: testsuites/testsuite/testcase with consistent counts.
- GitHub workflow commands: `::error file=...,line=...,title=...::message`.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import math
import re
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

from grader import config, formats, grade, report, score, status
from grader.instructor import batch
from grader.tests.helpers import FIXTURES

REPORTS = FIXTURES / "reports"
# legacy-partial: partial.json as the first grader wrote it (no sanitizer, notes, rule_deduction).
SCENARIOS = ("pass", "partial", "build-error", "timeout", "missing", "legacy-partial")


def load(name: str) -> dict:
    return json.loads((REPORTS / f"{name}.json").read_text())


def with_sanitizer(report: dict) -> dict:
    """vectorAdd with a memcheck finding at the student's line, costing 25 points."""
    lab = report["labs"][0]
    finding = {"tool": "memcheck", "kind": "Invalid __global__ write of size 4 bytes", "function": "add_kernel",
               "file": "labs/vectorAdd/vectorAdd.cu", "line": 27, "errors": 3,
               "message": "memcheck: Invalid __global__ write of size 4 bytes in add_kernel at labs/vectorAdd/vectorAdd.cu:27"}
    lab["sanitizer"] = {"ran": True, "findings": [finding], "deduction": 25.0}
    lab["reproduce"]["sanitizer"] = "compute-sanitizer --tool memcheck build/bin/vectorAdd_test"
    lab["deduction"], lab["rule_deduction"], lab["total"] = 25.0, 0.0, 75.0
    return report


# --- validators, from each format's documentation -------------------------------------

CLASSROOM_STATUSES = {"pass", "fail", "error"}
CLASSROOM_TEST_KEYS = {"name", "status", "score", "message", "line_no", "test_code", "execution_time", "filename"}


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def validate_classroom(result: dict) -> list[str]:
    """Problems with one runner's result as the Classroom reporter reads it."""
    problems = []
    if set(result) - {"version", "status", "max_score", "tests", "message"}:
        problems.append(f"unknown keys {set(result) - {'version', 'status', 'max_score', 'tests', 'message'}}")
    if result.get("version") != 1:
        problems.append("version must be 1")
    if result.get("status") not in CLASSROOM_STATUSES:
        problems.append(f"status {result.get('status')!r}")
    if not is_number(result.get("max_score")) or result["max_score"] < 0:
        problems.append("max_score must be a number >= 0")
    tests = result.get("tests")
    if not isinstance(tests, list) or not tests:  # the reporter divides by tests.length
        return problems + ["tests must be a non-empty list"]
    for test in tests:
        if not isinstance(test, dict):
            problems.append("a test is not an object")
            continue
        if set(test) - CLASSROOM_TEST_KEYS:
            problems.append(f"test keys {set(test) - CLASSROOM_TEST_KEYS}")
        if not isinstance(test.get("name"), str) or not test["name"]:
            problems.append("test name")
        if test.get("status") not in CLASSROOM_STATUSES:
            problems.append(f"test status {test.get('status')!r}")
        if not is_number(test.get("score")):
            problems.append(f"test score {test.get('score')!r}")
        if "message" in test and not isinstance(test["message"], str):
            problems.append("test message must be a string")
        if "line_no" in test and not (isinstance(test["line_no"], int) and test["line_no"] > 0):
            problems.append("line_no must be a positive integer")
        for key in ("test_code", "execution_time", "filename"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"{key} must be a string")
    return problems


def decode_classroom(text: str) -> dict:
    """What the reporter does: Buffer.from(value, 'base64') then JSON.parse."""
    return json.loads(base64.b64decode(text, validate=True).decode("utf-8"))


GRADESCOPE_TOP = {"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format",
                  "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
GRADESCOPE_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output", "output_format",
                   "tags", "visibility", "extra_data"}
GRADESCOPE_VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}


def validate_gradescope(results: dict) -> list[str]:
    problems = []
    json.dumps(results)  # must serialise
    if set(results) - GRADESCOPE_TOP:
        problems.append(f"unknown keys {set(results) - GRADESCOPE_TOP}")
    tests = results.get("tests")
    if "score" not in results and not (isinstance(tests, list) and all("score" in t for t in tests)):
        problems.append("a score is needed at the top or on every test")
    if "score" in results and not is_number(results["score"]):
        problems.append("score must be a number")
    if "execution_time" in results and not is_number(results["execution_time"]):
        problems.append("execution_time must be a number of seconds")
    for key in ("visibility", "stdout_visibility"):
        if key in results and results[key] not in GRADESCOPE_VISIBILITY:
            problems.append(f"{key} {results[key]!r}")
    if "output" in results and not isinstance(results["output"], str):
        problems.append("output must be a string")
    for test in tests if isinstance(tests, list) else []:
        if set(test) - GRADESCOPE_TEST:
            problems.append(f"test keys {set(test) - GRADESCOPE_TEST}")
        for key in ("score", "max_score"):
            if key in test and not is_number(test[key]):
                problems.append(f"test {key} must be a number")
        if "status" in test and test["status"] not in ("passed", "failed"):
            problems.append(f"test status {test['status']!r}")
        if "visibility" in test and test["visibility"] not in GRADESCOPE_VISIBILITY:
            problems.append(f"test visibility {test['visibility']!r}")
        if "tags" in test and not all(isinstance(tag, str) for tag in test["tags"]):
            problems.append("tags must be strings")
        for key in ("name", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"test {key} must be a string")
    for entry in results.get("leaderboard", []):
        if set(entry) - {"name", "value", "order"} or not isinstance(entry.get("name"), str):
            problems.append(f"leaderboard entry {entry}")
        if not (is_number(entry.get("value")) or isinstance(entry.get("value"), str)):
            problems.append(f"leaderboard value {entry.get('value')!r}")
        if "order" in entry and entry["order"] not in ("asc", "desc"):
            problems.append(f"leaderboard order {entry['order']!r}")
    return problems


# The attributes each element may have in the JUnit schema CI servers validate against
# (Jenkins xunit's junit-10.xsd).
JUNIT_ATTRIBUTES = {
    "testsuites": {"name", "time", "tests", "failures", "disabled", "errors"},
    "testsuite": {"name", "tests", "failures", "errors", "time", "disabled", "skipped", "skips", "timestamp",
                  "hostname", "id", "package", "assertions", "file", "skip", "log", "url"},
    "testcase": {"name", "assertions", "time", "timestamp", "classname", "status", "class", "file", "line",
                 "log", "group", "url"},
    "failure": {"type", "message"}, "error": {"type", "message"}, "skipped": {"type", "message"},
    "properties": set(), "property": {"name", "value"}, "system-out": set(), "system-err": set(),
}


def validate_junit(text: str) -> list[str]:
    problems = []
    root = ET.fromstring(text)
    if root.tag != "testsuites":
        return ["the root element must be testsuites"]
    for element in root.iter():
        allowed = JUNIT_ATTRIBUTES.get(element.tag)
        if allowed is None:
            problems.append(f"element <{element.tag}> is not in the schema")
        elif set(element.attrib) - allowed:
            problems.append(f"<{element.tag}> has attributes the schema lacks: {sorted(set(element.attrib) - allowed)}")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counted = {"tests": len(cases), "failures": sum(c.find("failure") is not None for c in cases),
                   "errors": sum(c.find("error") is not None for c in cases),
                   "skipped": sum(c.find("skipped") is not None for c in cases)}
        for key, value in counted.items():
            if suite.get(key) != str(value):
                problems.append(f"{suite.get('name')}: {key}={suite.get(key)}, counted {value}")
            totals[key] += value
        for case in cases:
            if not case.get("name") or not case.get("classname"):
                problems.append("a testcase needs name and classname")
    for key, value in totals.items():
        if key != "skipped" and root.get(key) != str(value):
            problems.append(f"testsuites {key}={root.get(key)}, counted {value}")
    return problems


_ANNOTATION = re.compile(r"^::error (file=[^,:]+,)?(line=\d+,)?title=[^,:]+::[^\n\r]+$")


# --- the tests ---------------------------------------------------------------------------------

class ClassroomTest(unittest.TestCase):
    # Every fixture gives a valid result per lab whose scores add up to the lab's points.
    def test_every_fixture_validates(self):
        for name in SCENARIOS:
            report = load(name)
            results = formats.classroom_results(report)
            self.assertEqual(list(results), [lab["lab"] for lab in report["labs"]])
            for lab in report["labs"]:
                result = decode_classroom(formats.encode(results[lab["lab"]]))
                with self.subTest(report=name, lab=lab["lab"]):
                    self.assertEqual(validate_classroom(result), [])
                    self.assertAlmostEqual(sum(t["score"] for t in result["tests"]), lab["total"], places=6)
                    self.assertEqual(result["max_score"], lab["max"])

    # Partial credit is fractional, per weighted test; CPU tests (weight 0) are left out;
    # a failed test names its line and the command that reproduces it.
    def test_partial(self):
        result = formats.classroom_results(load("partial"))["reduction"]
        self.assertEqual(result["status"], "fail")
        by_name = {t["name"]: t for t in result["tests"]}
        self.assertNotIn("ReductionCpu.WorkedExample", by_name)
        self.assertEqual(by_name["ReductionGpu.SumSmall"], {"name": "ReductionGpu.SumSmall", "status": "pass",
                                                             "score": 17.5, "message": ""})
        large = by_name["ReductionGpu.SumLarge"]
        self.assertEqual((large["status"], large["score"], large["line_no"]), ("fail", 0.0, 57))
        self.assertIn("--gtest_filter=ReductionGpu.SumLarge", large["test_code"])
        self.assertIn("expected 8388608.5, got 8388000", large["message"])
        self.assertEqual(by_name["reduction: performance"]["score"], 0.0)

    def test_statuses(self):
        self.assertEqual(formats.classroom_results(load("pass"))["reduction"]["status"], "pass")
        build = formats.classroom_results(load("build-error"))["scan"]
        self.assertEqual(build["status"], "error")
        self.assertIn('identifier "tile" is undefined', build["tests"][0]["message"])
        self.assertEqual(formats.classroom_results(load("timeout"))["reduction"]["status"], "fail")
        self.assertEqual(formats.classroom_results(load("missing"))["sort"]["status"], "error")

    # A lab the workflow lists but the report lacks still gets a result (the reporter
    # fails as a whole on a missing variable), and so does every lab without a report.
    def test_labs_the_report_lacks(self):
        results = formats.classroom_results(load("pass"), ["vectorAdd", "scan"], max_score=100)
        self.assertEqual(results["scan"]["status"], "error")
        self.assertEqual(validate_classroom(results["scan"]), [])
        self.assertEqual(results["scan"]["max_score"], 100)
        nothing = formats.classroom_results(None, ["vectorAdd"])
        self.assertIn("no report", nothing["vectorAdd"]["tests"][0]["message"])

    # A rule deduction is a negative test, so the points sent equal the lab's total.
    def test_rule_deduction(self):
        report = load("pass")
        lab = report["labs"][0]
        lab["rules"] = [{"message": "labs/vectorAdd/vectorAdd.cu:3: forbidden: cub::"}]
        lab["deduction"], lab["total"] = 75.0, 25.0
        result = formats.classroom_results(report)["vectorAdd"]
        self.assertEqual(validate_classroom(result), [])
        self.assertAlmostEqual(sum(t["score"] for t in result["tests"]), 25.0)
        self.assertEqual(result["tests"][-1]["score"], -75.0)

    # compute-sanitizer findings cost points of their own: a negative test as well.
    def test_sanitizer_deduction(self):
        report = with_sanitizer(load("pass"))
        result = formats.classroom_results(report)["vectorAdd"]
        self.assertEqual(validate_classroom(result), [])
        self.assertAlmostEqual(sum(t["score"] for t in result["tests"]), 75.0)
        self.assertEqual(result["tests"][-1]["name"], "vectorAdd: compute-sanitizer")
        self.assertEqual(result["tests"][-1]["score"], -25.0)
        gradescope = formats.gradescope(report)
        self.assertEqual(validate_gradescope(gradescope), [])
        self.assertIn("vectorAdd: compute-sanitizer", [t["name"] for t in gradescope["tests"]])

    # Rounded shares still add up exactly: three tests sharing 70 points.
    def test_rounding(self):
        report = load("pass")
        lab = report["labs"][0]
        lab["correctness"]["tests"] = [{"name": f"S.T{i}", "status": "passed", "weight": 1.0, "message": ""}
                                       for i in range(3)]
        result = formats.classroom_results(report)["vectorAdd"]
        self.assertEqual(round(sum(t["score"] for t in result["tests"]), 2), 100.0)

    def test_output_name(self):
        self.assertEqual(formats.classroom_output_name("vectorAdd"), "VECTORADD_RESULTS")


class GradescopeTest(unittest.TestCase):
    def test_every_fixture_validates(self):
        for name in SCENARIOS:
            with self.subTest(report=name):
                results = formats.gradescope(load(name))
                self.assertEqual(validate_gradescope(results), [])
                self.assertEqual(results["score"], load(name)["total"])

    # The leaderboard holds the speed relative to the fastest reference of each passed, timed
    # lab: the graded reference when it is the fastest ("default"), else the stretch goal.
    def test_leaderboard(self):
        board = {e["name"]: e for e in formats.gradescope(load("pass"))["leaderboard"]}
        name = "reduction speedup vs the fastest reference"
        self.assertEqual(board[name], {"name": name, "value": round(1 / 1.8, 3), "order": "desc"})
        self.assertEqual(board["total points"]["value"], 186.67)
        partial = {e["name"] for e in formats.gradescope(load("partial"))["leaderboard"]}
        self.assertNotIn(name, partial)

    # Graded against a slower reference, with the fastest timed beside it: the leaderboard
    # and the Markdown show the stretch goal; the score does not change.
    def test_stretch_goal(self):
        data = load("pass")
        lab = data["labs"][0]
        lab["bench"]["reference"]["variant"] = "radix_4bit"
        lab["bench"]["workloads"][0]["results"].append({"name": "ref:default", "role": "variant", "median_ms": 0.1505})
        board = {e["name"]: e["value"] for e in formats.gradescope(data)["leaderboard"]}
        self.assertEqual(board["vectorAdd speedup vs the fastest reference"], 0.5)  # 0.1505 / 0.301
        self.assertIn("Stretch goal (not graded): vectorAdd: your time is 2.00× the fastest reference's",
                      formats.markdown(data))
        self.assertEqual(formats.gradescope(data)["score"], data["total"])
        del lab["bench"]["workloads"][0]["results"][-1]
        board = {e["name"] for e in formats.gradescope(data)["leaderboard"]}
        self.assertIn("vectorAdd speedup vs reference", board)  # a slower reference and no stretch timed

    def test_failures_in_output(self):
        tests = {t["name"]: t for t in formats.gradescope(load("partial"))["tests"]}
        correctness = tests["reduction: correctness"]
        self.assertEqual((correctness["score"], correctness["max_score"], correctness["status"]), (35.0, 70, "failed"))
        self.assertIn("reproduce: ", correctness["output"])
        self.assertEqual(tests["vectorAdd: performance"]["status"], "passed")


class JunitTest(unittest.TestCase):
    def test_every_fixture_validates(self):
        for name in SCENARIOS:
            with self.subTest(report=name):
                self.assertEqual(validate_junit(formats.junit(load(name))), [])

    # A build error or a timeout is a failing testcase with the message and the command.
    def test_stopped_labs(self):
        build = ET.fromstring(formats.junit(load("build-error")))
        case = build.find("testsuite[@name='scan']/testcase[@name='build_error']")
        self.assertIn('identifier "tile" is undefined', case.find("failure").text)
        self.assertIn("reproduce: cmake --build", case.find("failure").text)
        timeout = ET.fromstring(formats.junit(load("timeout")))
        failure = timeout.find("testsuite[@name='reduction']/testcase[@name='timeout']/failure")
        self.assertEqual(failure.get("type"), "TIMEOUT")

    def test_test_failures(self):
        root = ET.fromstring(formats.junit(load("partial")))
        case = root.find("testsuite[@name='reduction']/testcase[@name='SumLarge']")
        self.assertEqual(case.get("classname"), "reduction.ReductionGpu")
        self.assertIn("--gtest_filter=ReductionGpu.SumLarge", case.find("failure").text)

    # A skipped test keeps its whole reason, in the element's text (the schema's <skipped>
    # has room for a message and text, the <testsuites> no count of its own).
    def test_skipped_reason(self):
        report = load("partial")
        test = report["labs"][0]["correctness"]["tests"][1]
        test.update(status="skipped", message="No CUDA GPU: cudaGetDeviceCount says 0 devices\nrun on a GPU machine")
        root = ET.fromstring(formats.junit(report))
        skipped = root.find("testsuite[@name='vectorAdd']/testcase[@name='MatchesCpu']/skipped")
        self.assertEqual(skipped.get("message"), "No CUDA GPU: cudaGetDeviceCount says 0 devices")
        self.assertIn("run on a GPU machine", skipped.text)
        self.assertIsNone(root.get("skipped"))
        self.assertEqual(root.find("testsuite[@name='vectorAdd']").get("skipped"), "1")

    def test_control_characters(self):
        report = load("partial")
        report["labs"][1]["correctness"]["tests"][2]["message"] = "\x1b[31mred\x1b[0m \x00 text"
        ET.fromstring(formats.junit(report))  # parses: the characters XML cannot hold are gone


class AnnotationTest(unittest.TestCase):
    # nvcc and gcc errors at the student's file and line, relative to the repository.
    def test_compile_errors(self):
        commands = formats.annotations(load("build-error"))
        self.assertEqual(commands[:3], [
            '::error file=labs/scan/scan.cu,line=48,title=scan%3A compile error::identifier "tile" is undefined',
            '::error file=labs/scan/scan.cu,line=61,title=scan%3A compile error::variable "offset" was declared '
            'but never referenced',
            "::error file=labs/scan/scan.cu,line=70,title=scan%3A compile error::unused variable 'n2' "
            "[-Werror=unused-variable]"])

    # A CUDA error thrown in the student's file points there; an assertion at its test line.
    def test_failed_tests(self):
        commands = formats.annotations(load("partial"))
        self.assertTrue(commands[0].startswith("::error file=labs/reduction/reduction_test.cu,line=57,"))
        self.assertTrue(commands[1].startswith("::error file=labs/reduction/reduction.cu,line=41,"))
        self.assertIn("%0AReproduce: ", commands[1])

    def test_every_fixture(self):
        for name in SCENARIOS:
            for command in formats.annotations(load(name)):
                with self.subTest(report=name):
                    self.assertRegex(command, _ANNOTATION)
        self.assertEqual(formats.annotations(load("pass")), [])
        timeout = formats.annotations(load("timeout"))
        self.assertTrue(timeout[0].startswith("::error file=labs/reduction/reduction.cu,title=reduction%3A TIMEOUT::"))

    def test_sanitizer(self):
        commands = formats.annotations(with_sanitizer(load("pass")))
        self.assertEqual(commands, ["::error file=labs/vectorAdd/vectorAdd.cu,line=27,title=vectorAdd%3A "
                                    "compute-sanitizer::memcheck: Invalid __global__ write of size 4 bytes in "
                                    "add_kernel at labs/vectorAdd/vectorAdd.cu:27"])
        text = formats.markdown(with_sanitizer(load("pass")))
        self.assertIn("compute-sanitizer found errors (-25 points):", text)
        self.assertIn("Reproduce: `compute-sanitizer --tool memcheck build/bin/vectorAdd_test`", text)

    def test_paths(self):
        self.assertEqual(formats.repo_path("/runner/_work/hw/hw/labs/scan/scan.cu"), "labs/scan/scan.cu")
        self.assertEqual(formats.repo_path("/kit/labs/scan/scan.cu", root="/kit"), "labs/scan/scan.cu")
        self.assertEqual(formats.repo_path("./common/src/data.cpp"), "common/src/data.cpp")
        self.assertEqual(formats.repo_path("scan.cu", lab="scan"), "labs/scan/scan.cu")
        self.assertEqual(formats.repo_path("scan_test.cu", lab="scan"), "labs/scan/scan_test.cu")
        self.assertIsNone(formats.repo_path("/usr/include/gtest/gtest.h"))
        self.assertIsNone(formats.repo_path("other.cu", lab="scan"))
        self.assertEqual(formats.compile_errors("x.cu(3): catastrophic error: cannot open source file \"y.h\"\n"
                                                "/k/labs/a/a.cu:9:1: fatal error: z.h: No such file"),
                         [(None, 3, 'cannot open source file "y.h"'), ("labs/a/a.cu", 9, "z.h: No such file")])


class MarkdownTest(unittest.TestCase):
    def test_table_and_failures(self):
        text = formats.markdown(load("partial"))
        self.assertIn("## CUDA labs: 135.00 / 200 points (67.5%)", text)
        self.assertIn("| reduction | ⚠️ PARTIAL | 35.00 / 70 | 0.00 / 30 | **35.00** / 100 | 2 of 5 tests failed", text)
        self.assertIn("Reproduce: `/tmp/grading/build/bin/reduction_test --seed=77 "
                      "--gtest_filter=ReductionGpu.SumLarge`", text)
        self.assertIn("seed 77", text)
        self.assertIn("| vectorAdd | vector_add n=67108864 | 0.301 | 0.298 | 1.01× |", text)

    def test_build_error_and_timeout(self):
        text = formats.markdown(load("build-error"))
        self.assertIn("Reproduce: `cmake --build /tmp/grading/build --target scan_test scan_bench`", text)
        self.assertIn("scan.cu(48): error", text)
        self.assertIn("Reproduce: `/tmp/grading/build/bin/reduction_test --seed=77 "
                      "--gtest_filter=ReductionGpu.Deadlock`", formats.markdown(load("timeout")))

    # Backticks and pipes in messages cannot break the table or the code blocks.
    def test_escaping(self):
        report = load("partial")
        report["labs"][1]["message"] = "a | b"
        report["labs"][1]["correctness"]["tests"][2]["message"] = "```\nboom"
        text = formats.markdown(report)
        self.assertIn("a \\| b", text)
        self.assertIn("  ````text\n  ```\n  boom\n  ````", text)


class DegradedReportTest(unittest.TestCase):
    # Whatever is missing or odd, every format still comes out, with a note.
    def test_odd_reports(self):
        odd = [None, {}, [], {"labs": "none"}, {"schema": "labkit-report", "version": 9, "labs": [{}]},
               {"labs": [{"lab": "vectorAdd", "status": "PARTIAL", "total": float("nan"),
                          "correctness": {"tests": [None, {"name": "A.B", "status": "failed", "weight": "x"}]},
                          "performance": "?", "rules": ["no cub"], "bench": {"workloads": [None, {"graded": True}]}}],
                "interrupted": True}]
        for data in odd:
            with self.subTest(report=data):
                self.assertIn("## CUDA labs", formats.markdown(data))
                self.assertEqual(validate_junit(formats.junit(data)), [])
                self.assertEqual(validate_gradescope(formats.gradescope(data)), [])
                for result in formats.classroom_results(data, ["vectorAdd"]).values():
                    self.assertEqual(validate_classroom(result), [])
                formats.annotations(data)
        self.assertIn("interrupted", formats.markdown(odd[-1]))
        self.assertIn("version 9", formats.markdown(odd[4]))


class ReportCommandTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)

    def main(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = formats.main(list(args))
        return code, out.getvalue(), err.getvalue()

    # What the Classroom workflow runs: outputs for the reporter, the summary, annotations.
    def test_workflow_outputs(self):
        github_output = self.tmp / "github_output"
        github_output.write_text("exit=1\n")
        summary = self.tmp / "summary.md"
        code, out, err = self.main(str(REPORTS / "build-error.json"), "--labs", "vectorAdd,scan,reduction",
                                   "--classroom-env", str(github_output), "--markdown", str(summary), "--annotations")
        self.assertEqual(code, 0, err)
        self.assertIn("::error file=labs/scan/scan.cu,line=48,", out)
        lines = github_output.read_text().splitlines()
        self.assertEqual(lines[0], "exit=1")  # appended, not replaced
        values = dict(line.split("=", 1) for line in lines[1:])
        self.assertEqual(list(values), ["VECTORADD_RESULTS", "SCAN_RESULTS", "REDUCTION_RESULTS"])
        for value in values.values():
            self.assertEqual(validate_classroom(decode_classroom(value)), [])
        self.assertEqual(decode_classroom(values["REDUCTION_RESULTS"])["status"], "error")
        self.assertIn("| scan | ❌ BUILD_ERROR", summary.read_text())

    def test_files(self):
        code, _, err = self.main(str(REPORTS / "partial.json"), "--junit", str(self.tmp / "j.xml"),
                                 "--gradescope", str(self.tmp / "results" / "results.json"),
                                 "--classroom-dir", str(self.tmp / "classroom"))
        self.assertEqual(code, 0, err)
        self.assertEqual(validate_junit((self.tmp / "j.xml").read_text()), [])
        self.assertEqual(validate_gradescope(json.loads((self.tmp / "results" / "results.json").read_text())), [])
        readable = json.loads((self.tmp / "classroom" / "reduction.json").read_text())
        self.assertEqual(decode_classroom((self.tmp / "classroom" / "reduction.b64").read_text().strip()), readable)

    def test_markdown_to_stdout_by_default(self):
        code, out, _ = self.main(str(REPORTS / "pass.json"))
        self.assertEqual(code, 0)
        self.assertTrue(out.startswith("## CUDA labs: 186.67 / 200"))

    # No report (the grader crashed): still a summary and a Classroom error per lab; exit 1.
    def test_missing_report(self):
        github_output = self.tmp / "out"
        code, out, err = self.main(str(self.tmp / "none.json"), "--labs", "vectorAdd", "--classroom-env",
                                   str(github_output), "--markdown", "-")
        self.assertEqual(code, 1)
        self.assertIn("Grading did not finish", out)
        self.assertIn("no report at", err)
        self.assertTrue(github_output.read_text().startswith("VECTORADD_RESULTS="))

    def test_truncated_report(self):
        broken = self.tmp / "broken.json"
        broken.write_text('{"schema": "labkit-report", "labs": [')
        code, out, err = self.main(str(broken), "--markdown", "-")
        self.assertEqual(code, 1)
        self.assertIn("not valid JSON", err)

    # A JSON that is not a grading report (a bench's, another tool's) is said to be one, and
    # treated as no report: never a Gradescope score of 0 with exit 0.
    def test_another_schema(self):
        other = self.tmp / "bench.json"
        other.write_text(json.dumps({"schema": "labkit-bench", "version": 1, "workloads": []}))
        results = self.tmp / "results.json"
        code, _, err = self.main(str(other), "--gradescope", str(results))
        self.assertEqual(code, 1)
        self.assertIn("is not a grading report (its schema is 'labkit-bench', not 'labkit-report')", err)
        for not_a_report in ("[1, 2]", '{"labs": []}'):
            other.write_text(not_a_report)
            code, _, err = self.main(str(other), "--markdown", "-")
            self.assertEqual(code, 1, not_a_report)
            self.assertIn("is not a grading report", err)

    def test_usage(self):
        code, _, err = self.main("--frobnicate")
        self.assertEqual(code, 2)
        self.assertIn("see --help", err)
        (self.tmp / "a-file").write_text("")
        code, _, err = self.main(str(REPORTS / "pass.json"), "--junit", str(self.tmp / "a-file" / "j.xml"))
        self.assertEqual(code, 2)
        self.assertIn("cannot write", err)



def untouched_sobel() -> dict:
    """An untouched sobel skeleton: every test fails, 0 points, and the required
    `__shared__` is not there, which costs nothing (75% of nothing)."""
    report = load("partial")
    lab = json.loads(json.dumps(report["labs"][1]))
    lab.update(lab="sobel", status="PARTIAL", message="0 of 4 tests passed", total=0.0, deduction=0.0,
               rule_deduction=0.0, rules=[{"kind": "required", "rule": "", "pattern": "__shared__",
                                           "file": "labs/sobel/sobel.cu", "line": None,
                                           "message": "labs/sobel/sobel.cu: this lab requires `__shared__` in your "
                                                      "code, and it is not there"}])
    lab["correctness"]["points"] = 0.0
    for test in lab["correctness"]["tests"]:
        if test["weight"]:
            test["status"], test["message"] = "failed", test["message"] or "not implemented"
    report["labs"] = [lab]
    report["total"], report["max"] = 0.0, lab["max"]
    return report


def every_rendering(data: dict) -> dict[str, str]:
    model = report.read(data)
    return {"console": report.table(model) + "\n" + report.details(model), "markdown": formats.markdown(data),
            "junit": formats.junit(data), "gradescope": json.dumps(formats.gradescope(data)),
            "classroom": json.dumps(formats.classroom_results(data)), "annotations": "\n".join(formats.annotations(data))}


class RuleWordingTest(unittest.TestCase):
    # A rule finding that costs nothing is "not met", never "broken" (nor "-0 points").
    def test_rule_that_costs_nothing(self):
        texts = every_rendering(untouched_sobel())
        for name, text in texts.items():
            with self.subTest(name):
                self.assertNotIn("broken", text.lower())
                self.assertNotIn("-0 points", text)
        self.assertIn("sobel: rules not met (no points lost now: the lab has earned none yet; they will cost points "
                      "once it does):\n    labs/sobel/sobel.cu: this lab requires `__shared__`", texts["console"])
        self.assertIn("Rules not met (no points lost now: the lab has earned none yet; they will cost points once it "
                      "does):\n- labs/sobel/sobel.cu", texts["markdown"])
        self.assertIn("title=sobel%3A rule not met::labs/sobel/sobel.cu", texts["annotations"])

    # A course whose rule_penalty is 0: the finding is named, and costs nothing.
    def test_rule_penalty_zero(self):
        data = load("pass")
        data["labs"][0]["rules"] = [{"message": "labs/vectorAdd/vectorAdd.cu:3: `cub::` is not allowed"}]
        texts = every_rendering(data)
        self.assertNotIn("broken", texts["console"] + texts["markdown"] + texts["annotations"])
        self.assertIn("rule not met: labs/vectorAdd/vectorAdd.cu:3:", texts["console"])
        self.assertIn("vectorAdd: rules not met (no points lost: this course's rule_penalty is 0):", texts["console"])

    # A rule that costs points is still broken, with what it costs.
    def test_rule_that_costs_points(self):
        data = load("pass")
        lab = data["labs"][0]
        lab["rules"] = [{"message": "labs/vectorAdd/vectorAdd.cu:3: `cub::` is not allowed"}]
        lab["deduction"] = lab["rule_deduction"] = 75.0
        lab["total"] = 25.0
        texts = every_rendering(data)
        self.assertIn("vectorAdd: rules broken, -75 points:", texts["console"])
        self.assertIn("rule broken: labs/vectorAdd/vectorAdd.cu:3", texts["console"])
        self.assertIn("Rules broken (-75 points):", texts["markdown"])
        self.assertIn("title=vectorAdd%3A rule broken::", texts["annotations"])

    # The console of a real run says the same: GradingRun -> JSON -> model -> console.
    def test_console_of_a_run(self):
        cfg = config.load(None)
        settings = cfg.lab("sobel")
        lab = grade.LabResult("sobel", status.PARTIAL, score.Correctness(0.0, settings.correctness_points, False),
                              score.Performance(0.0, settings.performance_points, reason=score.NOT_FULL),
                              message="0 of 4 tests passed",
                              rules=[{"message": "labs/sobel/sobel.cu: this lab requires `__shared__`"}])
        run = grade.GradingRun(grade.Options(root=Path("/kit"), build_dir=Path("/kit/build"), impl="student", seed=1,
                                             config=cfg), started="s", labs=[lab])
        text = report.console_table(run) + report.failure_details(run)
        self.assertNotIn("broken", text)
        self.assertIn("sobel: rules not met (no points lost now", text)


class OneModelTest(unittest.TestCase):
    # The console renders a recorded report as the grader printed it for its run.
    def test_console_from_fixtures(self):
        model = report.read(load("partial"))
        table = report.table(model)
        self.assertIn("reduction       PARTIAL          35.00/70      0.00/30   35.00/100  2 of 5 tests failed", table)
        self.assertIn("total                                                   135.00/200", table)
        details = report.details(model)
        self.assertIn("reduction: PARTIAL: 2 of 5 tests failed; GPU fault (illegal memory access) in "
                      "ReductionGpu.MaxNegative", details)
        self.assertIn("\n  ReductionGpu.SumLarge\n    labs/reduction/reduction_test.cu:57\n", details)
        self.assertIn("reproduce: /tmp/grading/build/bin/reduction_test --seed=77 --gtest_filter=ReductionGpu.SumLarge",
                      details)
        for name in SCENARIOS:
            model = report.read(load(name))
            # The header, the labs and the total between rules, and the GPU that graded it where the report names one.
            self.assertEqual(len(report.table(model).splitlines()), len(model.labs) + 4 + bool(model.gpu_label))

    # Status names come from status.py: no renderer spells one.
    def test_no_status_literals(self):
        names = "|".join(code.name for code in status.ALL)
        sources = [*sorted(Path(formats.__file__).parent.glob("*.py")), Path(report.__file__), Path(batch.__file__)]
        self.assertGreater(len(sources), 8)  # every module of grader/formats/
        for path in sources:
            with self.subTest(path.name):
                self.assertEqual(re.findall(rf"[\"']({names})[\"']", path.read_text()), [])

    def test_unknown_status(self):
        model = report.read({"schema": "labkit-report", "version": 1, "labs": [{"lab": "scan", "status": "FLAKY"}]})
        self.assertEqual((model.labs[0].status.name, model.labs[0].status.is_failure), ("FLAKY", True))
        self.assertIn("| scan | ❌ FLAKY |", formats.markdown({"labs": [{"lab": "scan", "status": "FLAKY"}]}))


if __name__ == "__main__":
    unittest.main()
