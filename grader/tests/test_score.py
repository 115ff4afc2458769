"""Tests of grader.score: correctness by weight, performance against the reference."""

from __future__ import annotations

import copy
import json
import unittest

from grader import config, score
from grader.gtest import TestResult
from grader.tests.helpers import load_fixture

SETTINGS = config.load(None).lab("vectorAdd")


def bench_with_ratio(ratio: float, rel_se: float = 0.0) -> dict:
    """The fixture's bench with its graded ratio set; rel_se 0 (an exact ratio) unless given."""
    data = load_fixture("bench-ok.json")
    data["workloads"][0]["pair"]["ratio_median"] = ratio
    data["workloads"][0]["pair"]["ratio_rel_se"] = rel_se
    return data


def settings_with(**defaults) -> config.LabSettings:
    return config.from_dict({"defaults": defaults}, None).lab("vectorAdd")


def perf(data, settings=SETTINGS, full=True) -> score.Performance:
    return score.score_performance(data, settings, correctness_full=full)


class CorrectnessTest(unittest.TestCase):
    # Every test passed: full points, and full opens the door to performance points.
    def test_all_passed(self):
        tests = [TestResult("A.a", "passed"), TestResult("A.b", "passed")]
        result = score.score_correctness(tests, SETTINGS)
        self.assertEqual((result.points, result.max, result.full), (70, 70, True))
        self.assertEqual(result.tests[0], {"name": "A.a", "status": "passed", "weight": 1.0, "message": ""})

    # One of three failed: 2/3 of the points, rounded to 2 decimals.
    def test_partial_rounds(self):
        tests = [TestResult("A.a", "passed"), TestResult("A.b", "passed"), TestResult("A.c", "failed", "boom")]
        result = score.score_correctness(tests, SETTINGS)
        self.assertEqual(result.points, 46.67)
        self.assertFalse(result.full)

    # A skipped GPU test counts as not passed.
    def test_skipped_is_not_passed(self):
        tests = [TestResult("A.a", "passed"), TestResult("Gpu.b", "skipped", "No CUDA GPU: none")]
        result = score.score_correctness(tests, SETTINGS)
        self.assertEqual(result.points, 35)
        self.assertFalse(result.full)

    # Weights from the config shape the share; weight 0 leaves a test out.
    def test_weights(self):
        settings = config.from_dict({"defaults": {"test_weights": {"*Large*": 3, "Flaky.*": 0}}}, None).lab("scan")
        tests = [TestResult("Scan.Small", "passed"), TestResult("Scan.Large", "failed"),
                 TestResult("Flaky.One", "failed")]
        result = score.score_correctness(tests, settings)
        self.assertEqual(result.points, 17.5)  # 70 * 1 / 4
        self.assertEqual([t["weight"] for t in result.tests], [1.0, 3, 0])
        tests[1].outcome = "passed"
        result = score.score_correctness(tests, settings)
        self.assertEqual(result.points, 70)
        self.assertTrue(result.full)  # the weight-0 failure does not count

    # 1 failure among 20000 tests still shows 70.00 but is not full.
    def test_full_is_decided_by_tests_not_rounding(self):
        tests = [TestResult(f"A.t{i}", "passed") for i in range(19999)] + [TestResult("A.last", "failed")]
        result = score.score_correctness(tests, SETTINGS)
        self.assertEqual(result.points, 70.0)
        self.assertFalse(result.full)

    def test_no_tests(self):
        result = score.score_correctness([], SETTINGS)
        self.assertEqual((result.points, result.full), (0, False))


class PerformanceTest(unittest.TestCase):
    # As fast as the reference: full points, figures copied from the graded workload.
    def test_full(self):
        result = perf(load_fixture("bench-ok.json"))
        self.assertEqual((result.points, result.max, result.reason), (30, 30, ""))
        self.assertEqual(result.ratio, 1.01)
        self.assertEqual((result.t_student_ms, result.t_reference_ms), (0.301, 0.298))
        self.assertEqual(len(result.workloads), 1)  # the ungraded workload is ignored

    # Exactly 1.2x the reference time still earns full points; just above loses a hair, not
    # a sixth of the points: the default curve has no step at the threshold.
    def test_boundary_has_no_cliff(self):
        self.assertEqual(perf(bench_with_ratio(1.2)).points, 30)
        self.assertEqual(perf(bench_with_ratio(1.2001)).points, 30.0)  # 30 * 1.2 / 1.2001 = 29.9975
        self.assertAlmostEqual(score.curve_points(1.2001, 0.0, SETTINGS)[0], 29.9975, places=4)
        self.assertEqual(perf(bench_with_ratio(1.212)).points, 29.7)  # 1% past the threshold: 1% fewer points

    # Slower: points * 1.2 * t_ref / t_student, continuous and falling with the time.
    def test_slower(self):
        self.assertEqual(perf(bench_with_ratio(2.4)).points, 15)
        self.assertEqual(perf(bench_with_ratio(3.6)).points, 10)
        self.assertEqual(perf(bench_with_ratio(7.0)).points, 5.14)
        previous = 30.0
        for step in range(1, 400):
            points = score.curve_points(1.2 + step * 0.01, 0.0, SETTINGS)[0]
            self.assertLess(points, previous)
            self.assertLess(previous - points, 0.3)  # 0.01 more in the ratio never costs 1% of the points
            previous = points

    # The CS149 curve stays available: points * t_ref / t_student past the threshold, with its step.
    def test_cs149_curve(self):
        cs149 = settings_with(performance_curve="cs149")
        self.assertEqual(perf(bench_with_ratio(1.2), cs149).points, 30)
        self.assertEqual(perf(bench_with_ratio(1.2001), cs149).points, 25.0)  # 30 / 1.2001 = 24.998
        self.assertEqual(perf(bench_with_ratio(2.0), cs149).points, 15)
        self.assertEqual(perf(bench_with_ratio(3.0), cs149).points, 10)

    # A course may demand beating the reference; being faster never earns more than the maximum.
    def test_ratio_below_one_is_capped(self):
        for curve in score.CURVES:
            strict = settings_with(full_credit_ratio=0.9, performance_curve=curve)
            self.assertEqual(perf(bench_with_ratio(0.95), strict).points, 30 if curve == "cs149" else 28.42)
            self.assertEqual(perf(bench_with_ratio(1.8), strict).points, 16.67 if curve == "cs149" else 15)
            self.assertLessEqual(perf(bench_with_ratio(0.5), strict).points, 30)

    # The ratio's 95% interval reaches the threshold: full points, marked as such.
    def test_benefit_of_the_doubt(self):
        near = perf(bench_with_ratio(1.23, rel_se=0.02))  # interval down to 1.23 * (1 - 0.0392) = 1.18
        self.assertEqual(near.points, 30)
        self.assertTrue(near.workloads[0]["benefit_of_doubt"])
        far = perf(bench_with_ratio(1.30, rel_se=0.02))  # down to 1.249: clearly slower
        self.assertEqual(far.points, 27.69)
        self.assertFalse(far.workloads[0]["benefit_of_doubt"])
        exact = perf(bench_with_ratio(1.23, rel_se=0.0))
        self.assertEqual(exact.points, 29.27)
        self.assertFalse(exact.workloads[0]["benefit_of_doubt"])
        # Under the CS149 curve the doubt decides between 30 and 24.4 points.
        self.assertEqual(perf(bench_with_ratio(1.23, rel_se=0.02), settings_with(performance_curve="cs149")).points, 30)
        # A course can turn it off.
        off = settings_with(benefit_of_doubt=False)
        self.assertEqual(perf(bench_with_ratio(1.23, rel_se=0.02), off).points, 29.27)

    # A missing or odd standard error gives no benefit, and no crash.
    def test_benefit_needs_a_standard_error(self):
        data = bench_with_ratio(1.23)
        for odd in (None, "0.5", -0.3):
            data["workloads"][0]["pair"]["ratio_rel_se"] = odd
            self.assertEqual(perf(data).points, 29.27, odd)

    def test_curve_settings_are_checked(self):
        with self.assertRaisesRegex(config.ConfigError, "performance_curve.*continuous"):
            config.from_dict({"defaults": {"performance_curve": "steep"}}, None)
        with self.assertRaisesRegex(config.ConfigError, "benefit_of_doubt.*true or false"):
            config.from_dict({"labs": {"scan": {"benefit_of_doubt": 1}}}, None)

    # Several graded workloads (shapes): the curve of the geometric mean of their ratios;
    # each workload's own figures stay in the rows.
    def test_geometric_mean_over_graded_workloads(self):
        data = bench_with_ratio(1.0, rel_se=0.001)
        second = copy.deepcopy(data["workloads"][0])
        second["name"] = "vector_add n=1000000"
        second["pair"]["ratio_median"] = 3.6
        data["workloads"].append(second)
        result = perf(data)
        self.assertAlmostEqual(result.ratio, 3.6 ** 0.5, places=3)
        self.assertEqual(result.points, round(30 * 1.2 / 3.6 ** 0.5, 2))  # 18.97, not the mean 20
        self.assertEqual([w["points"] for w in result.workloads], [30, 10])
        self.assertEqual(result.t_student_ms, 0.602)
        # Both at the threshold's edge: the combined interval decides the benefit of the doubt.
        near = bench_with_ratio(1.22, rel_se=0.02)
        near["workloads"].append(copy.deepcopy(near["workloads"][0]))
        self.assertEqual(perf(near).points, 30)
        self.assertTrue(all(w["benefit_of_doubt"] for w in perf(near).workloads))

    # Performance is graded only once every test passes.
    def test_partial_correctness_gates_performance(self):
        result = perf(load_fixture("bench-ok.json"), full=False)
        self.assertEqual(result.points, 0)
        self.assertEqual(result.reason, score.NOT_FULL)

    def test_no_reference(self):
        result = perf(load_fixture("bench-no-reference.json"))
        self.assertEqual(result.points, 0)
        self.assertTrue(result.reason.startswith(score.NO_REFERENCE), result.reason)
        self.assertIn("cannot open", result.reason)

    def test_check_failures(self):
        result = perf(load_fixture("bench-check-failure.json"))
        self.assertEqual(result.points, 0)
        self.assertIn("failed checks", result.reason)
        self.assertIn("index 67108863", result.reason)

    def test_inputs_changed(self):
        data = load_fixture("bench-ok.json")
        data["workloads"][0]["results"][0]["inputs_changed"] = True
        result = perf(data)
        self.assertEqual(result.points, 0)
        self.assertIn("changed its inputs", result.reason)

    def test_host_suspect(self):
        data = load_fixture("bench-ok.json")
        data["workloads"][0]["results"][0]["host_suspect"] = 2
        result = perf(data)
        self.assertEqual(result.points, 0)
        self.assertIn("host time far above GPU time in 2 samples", result.reason)

    def test_no_graded_workload(self):
        data = load_fixture("bench-ok.json")
        for workload in data["workloads"]:
            workload["graded"] = False
        self.assertIn("no graded workload", perf(data).reason)

    def test_no_bench(self):
        result = score.score_performance(None, SETTINGS, correctness_full=True, unavailable="bench skipped")
        self.assertEqual((result.points, result.reason), (0, "bench skipped"))


class PointsSpreadTest(unittest.TestCase):
    """The fairness script's arithmetic (grader/tests/points_spread.py), without a GPU."""

    def test_ratios_and_spread(self):
        from grader.tests import points_spread
        data = {"workloads": [{"graded": False, "results": [{"role": "variant", "name": "x", "median_ms": 9}]},
                              {"graded": True, "results": [{"role": "reference", "name": "reference", "median_ms": 2.0},
                                                           {"role": "student", "name": "student", "median_ms": 1.0},
                                                           {"role": "variant", "name": "slow", "median_ms": 4.8},
                                                           {"role": "library", "name": "cub", "median_ms": 1.5}]}]}
        self.assertEqual(points_spread.variant_ratios(data), {"student": 0.5, "slow": 2.4})
        runs = [{"student": 0.5, "slow": 2.4}, {"student": 0.6, "slow": 3.6}, {"student": 0.55}]
        result = points_spread.spreads(runs, SETTINGS)
        self.assertEqual(result["student"], (30.0, 0.0))
        self.assertNotIn("slow", result)  # missing from a run: no spread to speak of
        self.assertAlmostEqual(points_spread.spreads(runs[:2], SETTINGS)["slow"][1], 5.0)  # 15 and 10 points


if __name__ == "__main__":
    unittest.main()
