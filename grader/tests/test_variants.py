"""The lecture's steps (grader/variants.py): parsed from the manifest, earned from the
variant tests of a run, timed beside the reference's steps, shown in every report."""

from __future__ import annotations

import json
import re
import unittest

from grader import config, formats, manifest, report, sanitize, variants
from grader.tests.helpers import KIT

FIXTURES = KIT / "grader" / "tests" / "fixtures"

STEPS = variants.parse([{"name": "interleaved", "title": "divergent tree", "points": 1},
                        {"name": "first_add", "title": "two per thread", "points": 2},
                        {"name": "warp.finish", "points": 1}], "lab.json")


def test_row(name: str, status: str = "passed") -> dict:
    return {"name": name, "status": status, "weight": 1.0, "message": ""}


class ParseTest(unittest.TestCase):
    def test_names_titles_points(self):
        self.assertEqual([(v.name, v.title, v.points) for v in STEPS],
                         [("interleaved", "divergent tree", 1.0), ("first_add", "two per thread", 2.0),
                          ("warp.finish", "warp.finish", 1.0)])
        self.assertEqual(variants.parse(None, "x"), ())

    def test_bad_entries(self):
        for raw, text in ((["interleaved"], '"name"'), ([{"name": "default"}], '"default"'),
                          ([{"name": "a"}, {"name": "a"}], "twice"), ([{"name": "a", "points": -1}], ">= 0"),
                          ([{"name": "a", "points": True}], ">= 0"), ({"name": "a"}, "must be a list")):
            with self.subTest(raw=raw), self.assertRaisesRegex(ValueError, text):
                variants.parse(raw, "lab.json")

    def test_the_kits_reduction_requires_the_lectures_four_steps(self):
        lab = manifest.by_name(KIT)["reduction"]
        self.assertEqual([v.name for v in lab.required_variants if v.kind == variants.STEP],
                         ["interleaved", "contiguous", "first_add", "warp_finish"])

    def test_kind_is_step_fix_or_part(self):
        parsed = variants.parse([{"name": "a"}, {"name": "fix_a", "kind": "fix"}, {"name": "b", "kind": "part"}],
                                "lab.json")
        self.assertEqual([v.kind for v in parsed], [variants.STEP, variants.FIX, variants.PART])
        with self.assertRaisesRegex(ValueError, '"kind"'):
            variants.parse([{"name": "a", "kind": "bonus"}], "lab.json")

    def test_find_the_bug_exercises_are_given_buggy_and_tested(self):
        # Each "fix" entry is an interface function: the skeleton defines it (the lecture's
        # code, bug included), the reference defines it fixed, and the kit's tests check it
        # in a suite Fix*Gpu instantiated as Registered with the function's name, which the
        # built-in test weights leave out of the correctness share.
        fixes = {lab.name: [v for v in lab.required_variants if v.kind == variants.FIX]
                 for lab in manifest.by_name(KIT).values()}
        self.assertEqual(sorted(lab for lab, found in fixes.items() if found),
                         ["histogram", "matmul", "reduction", "scan", "transpose"])
        self._check_given_and_tested(variants.FIX, "Fix")

    def test_further_parts_are_given_as_stubs_and_tested(self):
        # A "part" entry is a new task of the lab: an interface function the skeleton gives
        # as a stub, tested in a suite Part*Gpu that the built-in weights leave out as well.
        self._check_given_and_tested(variants.PART, "Part")

    def _check_given_and_tested(self, kind: str, prefix: str) -> None:
        found_of = {lab.name: [v for v in lab.required_variants if v.kind == kind]
                    for lab in manifest.by_name(KIT).values()}
        settings = config.load(None)
        for lab_name, found in found_of.items():
            lab = manifest.by_name(KIT)[lab_name]
            for fix in found:
                with self.subTest(lab=lab_name, fix=fix.name):
                    self.assertIn(fix.name, lab.functions)
                    definition = re.compile(r"^[\w:]+\s+" + re.escape(fix.name) + r"\(", re.M)
                    skeleton = "".join((KIT / path).read_text() for path in lab.editable if path.endswith(".cu"))
                    self.assertRegex(skeleton, definition, "the skeleton must give the function's code")
                    solution = "".join(p.read_text() for p in sorted((KIT / "solutions" / lab_name).glob("*.cu")))
                    self.assertRegex(solution, definition)
                    tests = re.sub(r"\s+", " ", (KIT / "labs" / lab_name / f"{lab_name}_test.cu").read_text())
                    suite = re.search(r"INSTANTIATE_TEST_SUITE_P\(Registered, (" + prefix + r"\w+Gpu), ::testing::Values\("
                                      r'std::string\("' + re.escape(fix.name) + r'"\)\)', tests)
                    self.assertIsNotNone(suite, f"no Registered {prefix}*Gpu suite for it")
                    name = f"Registered/{suite.group(1)}.AnyTest/{fix.name}"
                    self.assertEqual(settings.lab(lab_name).weight(name), 0.0)
                    self.assertEqual([t["name"] for t in variants.tests_of(fix.name, [{"name": name}])], [name])

    def test_every_lab_requires_steps_the_solution_has_and_the_skeleton_lacks(self):
        for lab in manifest.by_name(KIT).values():
            with self.subTest(lab=lab.name):
                self.assertTrue(lab.required_variants, "every lab names the lecture's steps")
                solution = "".join(p.read_text() for p in sorted((KIT / "solutions" / lab.name).glob("*.cu")))
                skeleton = "".join((KIT / path).read_text() for path in lab.editable if path.endswith(".cu"))
                for step in (v for v in lab.required_variants if v.kind == variants.STEP):
                    registered = re.compile(r'LAB_REGISTER_VARIANT\(\s*\w+\s*,\s*"' + re.escape(step.name) + '"')
                    self.assertRegex(solution, registered, f"the reference does not register {step.name}")
                    code = "\n".join(line for line in skeleton.splitlines() if not line.lstrip().startswith("//"))
                    self.assertIsNone(registered.search(code), f"the skeleton registers {step.name}")
                tests = (KIT / "labs" / lab.name / f"{lab.name}_test.cu").read_text()
                # The grader finds a step's verdict by these names (variants.tests_of).
                self.assertIn("INSTANTIATE_TEST_SUITE_P(Registered,", re.sub(r"\s+", " ", tests).replace("( ", "("))
                self.assertIn("lab::variant_test_name", tests)

    def test_the_labs_table_lists_each_labs_steps(self):
        text = (KIT / "labs" / "README.md").read_text(encoding="utf-8")
        rows = {cells[2].strip().split("]")[0].lstrip("["): cells[4].strip()
                for cells in (line.split("|") for line in text.splitlines())
                if len(cells) > 5 and cells[1].strip().isdigit()}
        for lab in manifest.by_name(KIT).values():
            with self.subTest(lab=lab.name):
                self.assertEqual(rows.get(lab.name), ", ".join(f"`{v.name}`" for v in lab.required_variants
                                                               if v.kind == variants.STEP))


class GradeTest(unittest.TestCase):
    FIX = variants.parse([{"name": "fix_hsh_scan", "kind": "fix", "sanitizer": ["racecheck"]},
                          {"name": "fix_block_sum", "kind": "fix"}], "lab.json")
    HSH = "Registered/FixHshScanGpu.ScansEveryLengthUpToOneBlock/fix_hsh_scan"

    @staticmethod
    def _racecheck(found: bool) -> sanitize.SanitizerResult:
        finding = sanitize.Finding("racecheck", "race", function="lecture_hsh_scan_kernel", file="labs/scan/scan.cu",
                                   line=119)
        run = sanitize.ToolRun("racecheck", "errors" if found else "clean", "compute-sanitizer ...",
                               finding=finding if found else None)
        return sanitize.SanitizerResult(True, filter="Registered/*/fix_hsh_scan", runs=[run])

    def test_a_fix_whose_tests_pass_can_still_fail_its_sanitizer(self):
        # The given Hillis-Steele scan passes its tests on an H100, race and all: only
        # racecheck shows the bug, so a finding fails the exercise.
        tests = [test_row(self.HSH), test_row("Registered/FixBlockSumGpu.SumsEveryLengthUpToOneBlock/fix_block_sum")]
        racy = variants.grade(self.FIX, tests, checked={"fix_hsh_scan": self._racecheck(True)})
        rows = {row["name"]: row for row in racy.rows}
        self.assertEqual((rows["fix_hsh_scan"]["status"], rows["fix_hsh_scan"]["points"]), (variants.FAILED, 0.0))
        self.assertIn("racecheck", rows["fix_hsh_scan"]["why"])
        self.assertIn("scan.cu:119", rows["fix_hsh_scan"]["why"])
        self.assertEqual(rows["fix_block_sum"]["status"], variants.PASSED)  # no tools named: its tests decide
        clean = variants.grade(self.FIX, tests, checked={"fix_hsh_scan": self._racecheck(False)})
        self.assertEqual(clean.points, 2.0)
        self.assertIn("found nothing", clean.rows[0]["why"])
        unchecked = variants.grade(self.FIX, tests, checked={"fix_hsh_scan": None})
        self.assertEqual(unchecked.rows[0]["status"], variants.PASSED)
        self.assertIn("not checked with racecheck", unchecked.rows[0]["why"])

    def test_a_removed_fix_function_says_to_keep_it(self):
        result = variants.grade(self.FIX, [test_row(self.HSH, "failed")])
        rows = {row["name"]: row for row in result.rows}
        self.assertEqual(rows["fix_hsh_scan"]["status"], variants.FAILED)
        self.assertEqual(rows["fix_block_sum"]["status"], variants.MISSING)
        self.assertIn("keep the function fix_block_sum", rows["fix_block_sum"]["why"])
        self.assertEqual(variants.test_filter(self.FIX[0]), "Registered/*/fix_hsh_scan")

    def test_a_removed_part_says_to_keep_it(self):
        parts = variants.parse([{"name": "spmv_csr", "kind": "part"}], "lab.json")
        row = variants.grade(parts, [test_row("Sizes/ScanGpu.MatchesCpu/n_33")]).rows[0]
        self.assertEqual(row["status"], variants.MISSING)
        self.assertIn("keep the function spmv_csr", row["why"])
        self.assertIn("write its body", row["why"])
        self.assertEqual(variants.grade(parts, [test_row("Registered/PartSpmvGpu.X/spmv_csr")]).points, 1.0)

    def test_sanitizer_tools_only_on_fixes_and_parts(self):
        self.assertEqual(variants.parse([{"name": "a", "kind": "part", "sanitizer": ["memcheck"]}], "x")[0].sanitizer,
                         ("memcheck",))
        for raw in ([{"name": "a", "sanitizer": ["racecheck"]}], [{"name": "a", "kind": "fix", "sanitizer": ["gdb"]}],
                    [{"name": "a", "kind": "fix", "sanitizer": "racecheck"}]):
            with self.subTest(raw=raw), self.assertRaisesRegex(ValueError, '"sanitizer"'):
                variants.parse(raw, "lab.json")

    def test_registered_and_passing_earns_its_points(self):
        tests = [test_row("Registered/ReduceSumVariantsGpu.CorrectAtEverySize/interleaved"),
                 test_row("Registered/ReduceMaxVariantsGpu.CorrectAtEverySize/interleaved"),
                 test_row("Registered/ReduceSumVariantsGpu.CorrectAtEverySize/first_add", "failed"),
                 test_row("Registered/ReduceSumVariantsGpu.CorrectAtEverySize/first_add_2"),  # another variant
                 test_row("Sizes/ReduceSumGpu.MatchesCpu/interleaved"),  # not a variant test
                 test_row("Registered/ReduceSumVariantsGpu.CorrectAtEverySize/warp_finish")]  # "warp.finish"
        result = variants.grade(STEPS, tests)
        self.assertEqual((result.points, result.max), (2.0, 4.0))
        rows = {row["name"]: row for row in result.rows}
        self.assertEqual((rows["interleaved"]["status"], rows["interleaved"]["tests"]), (variants.PASSED, 2))
        self.assertEqual((rows["first_add"]["status"], rows["first_add"]["points"]), (variants.FAILED, 0.0))
        self.assertIn("1 of 1 tests failed", rows["first_add"]["why"])
        self.assertEqual(rows["warp.finish"]["status"], variants.PASSED)

    def test_not_registered_and_not_tested(self):
        missing = variants.grade(STEPS, [test_row("Sizes/ReduceSumGpu.MatchesCpu/n_1")])
        self.assertEqual({row["status"] for row in missing.rows}, {variants.MISSING})
        self.assertIn('LAB_REGISTER_VARIANT(<function>, "interleaved"', missing.rows[0]["why"])
        untested = variants.grade(STEPS, None)
        self.assertEqual(({row["status"] for row in untested.rows}, untested.points), ({variants.NOT_TESTED}, 0.0))
        # No GPU: the registered variants' tests are never made (the CPU tests still pass). A
        # step whose record the static checks read is "not tested", not "not registered"; a
        # step without a record stays "not registered"; neither earns a point.
        steps = {"ok": True, "variants": [{"function": "reduce_sum", "name": "interleaved", "kernels": ["k"]}]}
        no_gpu = variants.grade(STEPS, [test_row("Cpu.Reference"), test_row("Sizes/ReduceSumGpu.MatchesCpu/n_1",
                                                                            "skipped")], steps=steps)
        rows = {row["name"]: row for row in no_gpu.rows}
        self.assertEqual((rows["interleaved"]["status"], no_gpu.points), (variants.NOT_TESTED, 0.0))
        self.assertIn("registered in your file", rows["interleaved"]["why"])
        self.assertEqual(rows["first_add"]["status"], variants.MISSING)

    # Skipped tests (a machine without a GPU skips every GPU test) prove nothing: no points.
    def test_skipped_tests_earn_nothing(self):
        tests = [test_row("Registered/ReduceSumVariantsGpu.CorrectAtEverySize/interleaved", "skipped"),
                 test_row("Registered/ReduceSumVariantsGpu.CorrectAtEverySize/first_add"),
                 test_row("Registered/ReduceMaxVariantsGpu.CorrectAtEverySize/first_add", "skipped")]
        result = variants.grade(STEPS, tests)
        rows = {row["name"]: row for row in result.rows}
        self.assertEqual(result.points, 0.0)
        self.assertEqual((rows["interleaved"]["status"], rows["first_add"]["status"]),
                         (variants.NOT_TESTED, variants.NOT_TESTED))
        self.assertIn("1 of 2 tests did not run (skipped: Registered/ReduceMaxVariantsGpu", rows["first_add"]["why"])

    def test_progression_from_the_graded_workload(self):
        bench = {"workloads": [
            {"name": "small", "graded": False, "results": [{"name": "interleaved", "median_ms": 9.0}]},
            {"name": "big", "graded": True, "unit": "GB/s", "results": [
                {"name": "interleaved", "role": "variant", "median_ms": 0.5, "throughput": 500.0, "pct_peak": 15.0},
                {"name": "ref:interleaved", "role": "variant", "median_ms": 0.4},
                {"name": "ref:first_add", "role": "variant", "median_ms": 0.2}]}]}
        rows = {row["name"]: row for row in variants.grade(STEPS, [], bench).rows}
        self.assertEqual({k: rows["interleaved"][k] for k in ("ms", "throughput", "pct_peak", "reference_ms",
                                                              "speed_vs_reference", "unit")},
                         {"ms": 0.5, "throughput": 500.0, "pct_peak": 15.0, "reference_ms": 0.4,
                          "speed_vs_reference": 0.8, "unit": "GB/s"})
        self.assertEqual((rows["first_add"].get("ms"), rows["first_add"]["reference_ms"]), (None, 0.2))
        self.assertNotIn("ms", rows["warp.finish"])
        self.assertNotIn("note", rows["interleaved"])

    def test_a_step_outside_the_band_of_the_lectures_step_earns_nothing(self):
        def row_at(ms: float, ref_ms: float = 0.3) -> dict:
            bench = {"workloads": [{"graded": True, "unit": "GB/s", "results": [
                {"name": "interleaved", "median_ms": ms}, {"name": "ref:interleaved", "median_ms": ref_ms}]}]}
            return variants.grade(STEPS, [test_row("Registered/S.T/interleaved")], bench).rows[0]
        fast = row_at(0.1)  # 3x as fast: a later step under the name
        self.assertEqual((fast["points"], fast["status"], fast["speed_vs_reference"], fast["flag"]),
                         (0.0, variants.OFF_BAND, 3.0, "band"))
        self.assertIn("3.00× the speed of the reference's interleaved (faster than the band", fast["why"])
        self.assertIn("a later one under its name", fast["why"])
        slow = row_at(1.2)  # 4x as slow
        self.assertEqual((slow["points"], slow["status"]), (0.0, variants.OFF_BAND))
        self.assertIn("an earlier one", slow["why"])
        # The band's edges, and the reference against itself, keep the point.
        for ms in (0.3, 0.3 / variants.BAND_FAST, 0.3 * variants.BAND_SLOW, 0.29, 0.31):
            with self.subTest(ms=ms):
                self.assertEqual((row_at(ms)["points"], row_at(ms)["status"]), (1.0, variants.PASSED))
        parsed = report.read({"labs": [{"lab": "reduction", "status": "PASS", "variants": {
            "points": 0, "max": 1, "rows": [fast]}}]})
        self.assertIn("interleaved (divergent tree): not this step's speed: 3.00×", report.details(parsed))

    def test_a_failing_step_stays_failed_whatever_its_speed(self):
        bench = {"workloads": [{"graded": True, "results": [
            {"name": "interleaved", "median_ms": 0.1}, {"name": "ref:interleaved", "median_ms": 0.3}]}]}
        row = variants.grade(STEPS, [test_row("Registered/S.T/interleaved", "failed")], bench).rows[0]
        self.assertEqual(row["status"], variants.FAILED)
        self.assertNotIn("flag", row)


class ReportTest(unittest.TestCase):
    """A report with steps: the console table's column, the details, Markdown, HTML, Gradescope."""

    def data(self) -> dict:
        data = json.loads((FIXTURES / "reports" / "pass.json").read_text())
        lab = data["labs"][0]
        result = variants.grade(STEPS, [test_row("Registered/S.T/interleaved")],
                                {"workloads": [{"graded": True, "unit": "GB/s", "results": [
                                    {"name": "interleaved", "median_ms": 0.5, "throughput": 500.0, "pct_peak": 15.0},
                                    {"name": "ref:interleaved", "median_ms": 0.4}]}]})
        lab["variants"] = result.as_dict()
        lab["total"] = lab.get("total", 0) + result.points
        lab["max"] = lab.get("max", 0) + result.max
        return data

    def test_every_format_shows_the_steps(self):
        data = self.data()
        parsed = report.read(data)
        self.assertEqual((parsed.labs[0].variants, parsed.labs[0].variants_max), (1.0, 4.0))
        table = report.table(parsed)
        self.assertIn("variants", table.splitlines()[0])
        self.assertIn("1.00/4", table.replace(" ", ""))
        details = report.details(parsed)
        self.assertIn("the lecture's steps (required variants), 1/4 points", details)
        self.assertIn("first_add (two per thread): not registered", details)
        markdown = formats.markdown(data)
        self.assertIn("| interleaved: divergent tree | passed | 1 / 1 | 0.500 ms | 500 GB/s | 15% | 0.400 ms | 0.80× |",
                      markdown.replace(data["labs"][0]["lab"] + " | ", "", 1))
        page = formats.html(data)
        self.assertIn('<table class="steps">', page)
        self.assertIn("<th class=\"num\">variants</th>", page)
        steps = [t for t in formats.gradescope(data)["tests"] if "variants" in t["tags"]]
        self.assertEqual([(t["score"], t["max_score"], t["status"]) for t in steps],
                         [(1.0, 1.0, "passed"), (0.0, 2.0, "failed"), (0.0, 1.0, "failed")])
        self.assertIn("your speed vs it: 0.80×", steps[0]["output"])
        classroom = formats.classroom_result(parsed.labs[0])
        self.assertEqual(round(sum(t["score"] for t in classroom["tests"]), 2), parsed.labs[0].total)


if __name__ == "__main__":
    unittest.main()
