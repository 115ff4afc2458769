"""Tests of grader.config: defaults, overrides, and every kind of config error."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path
from types import SimpleNamespace

from grader import config
from grader.config import ConfigError

EXAMPLE = Path(__file__).resolve().parent.parent / "grader.example.toml"


class ConfigTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, text: str) -> Path:
        path = Path(self.tmp.name) / "grader.toml"
        path.write_text(text)
        return path

    def assertConfigError(self, text: str, *fragments: str) -> None:
        path = self.write(text)
        with self.assertRaises(ConfigError) as caught:
            config.load(path)
        message = str(caught.exception)
        self.assertIn(str(path), message)  # every error names the file
        for fragment in fragments:
            self.assertIn(fragment, message)


class DefaultsTest(ConfigTestCase):
    # With no file the built-in defaults apply.
    def test_no_file_gives_defaults(self):
        cfg = config.load(None)
        self.assertIsNone(cfg.path)
        self.assertEqual(cfg.grader["test_timeout_s"], 300)
        self.assertEqual(cfg.grader["seed"], "random")
        lab = cfg.lab("matmul")
        self.assertEqual((lab.correctness_points, lab.performance_points), (70, 30))
        self.assertEqual(lab.full_credit_ratio, 1.2)
        self.assertEqual(lab.reference_variant, "tiled16")  # the manifest's: the lecture's tiled kernel
        self.assertTrue(lab.enabled)
        self.assertEqual(lab.weight("Any.Test"), 1.0)

    # An empty file changes nothing.
    def test_empty_file_gives_defaults(self):
        cfg = config.load(self.write(""))
        self.assertEqual(cfg.lab("scan"), config.load(None).lab("scan"))

    # The shipped example documents every key and must itself be valid.
    def test_example_file_is_valid(self):
        cfg = config.load(EXAMPLE)
        self.assertTrue(cfg.lab("electrostatics").enabled)
        self.assertEqual(set(config.DEFAULTS["grader"]), set(cfg.grader))
        text = EXAMPLE.read_text()
        for key in [*config.DEFAULTS["grader"], *config.DEFAULTS["defaults"], "enabled"]:
            self.assertIn(key, text)


class BenchFloorsTest(ConfigTestCase):
    # The benches' sampling floors: "auto" or seconds in range; "auto" passes nothing on.
    def test_values(self):
        from grader.stages import timing
        cfg = config.load(self.write("[grader]\nbench_warm_up_s = 0.05\nbench_min_time_s = 0.15\n"))
        self.assertEqual(timing.bench_floors(SimpleNamespace(config=cfg)), {"--warm-up": 0.05, "--min-time": 0.15})
        self.assertEqual(timing.bench_floors(SimpleNamespace(config=config.load(None))), {})
        for bad in ('bench_warm_up_s = 11', 'bench_warm_up_s = -1', 'bench_min_time_s = 0', 'bench_min_time_s = "fast"',
                    'bench_min_time_s = true'):
            with self.assertRaises(config.ConfigError, msg=bad):
                config.load(self.write(f"[grader]\n{bad}\n"))


class OverrideTest(ConfigTestCase):
    # File values override defaults; per-lab values override [defaults].
    def test_overrides(self):
        cfg = config.load(self.write("""
            [grader]
            test_timeout_s = 60
            seed = 1234
            [defaults]
            performance_points = 40
            correctness_points = 60.5
            [labs.matmul]
            reference_variant = "tiled"
            full_credit_ratio = 1.5
            [labs.sort]
            enabled = false
        """))
        self.assertEqual(cfg.grader["test_timeout_s"], 60)
        self.assertEqual(cfg.grader["build_timeout_s"], 1800)  # untouched default
        self.assertEqual(cfg.grader["seed"], 1234)
        matmul = cfg.lab("matmul")
        self.assertEqual(matmul.reference_variant, "tiled")
        self.assertEqual(matmul.full_credit_ratio, 1.5)
        self.assertEqual(matmul.performance_points, 40)
        self.assertEqual(matmul.correctness_points, 60.5)
        self.assertEqual(cfg.lab("scan").full_credit_ratio, 1.2)
        self.assertFalse(cfg.lab("sort").enabled)
        self.assertEqual(cfg.as_dict()["labs"]["matmul"]["reference_variant"], "tiled")

    # Weights match by glob; a lab's own patterns are tried before the defaults'.
    def test_test_weights(self):
        cfg = config.load(self.write("""
            [defaults.test_weights]
            "*Large*" = 2
            "Cpu*" = 0
            [labs.scan.test_weights]
            "Scan.Large*" = 5
            "Cpu*" = 0.5
        """))
        scan, sort = cfg.lab("scan"), cfg.lab("sort")
        self.assertEqual(scan.weight("Scan.LargeInput"), 5)
        self.assertEqual(scan.weight("Other.LargeInput"), 2)
        self.assertEqual(scan.weight("CpuReference.Example"), 0.5)
        self.assertEqual(sort.weight("CpuReference.Example"), 0)
        self.assertEqual(sort.weight("Sizes/SortTest.Keys/3"), 1)


class ConfigErrorTest(ConfigTestCase):
    def test_invalid_toml(self):
        self.assertConfigError("[grader\n", "invalid TOML")

    def test_unreadable_file(self):
        with self.assertRaises(ConfigError) as caught:
            config.load(Path(self.tmp.name) / "missing.toml")
        self.assertIn("cannot read", str(caught.exception))

    def test_unknown_top_level_key(self):
        self.assertConfigError("[grading]\n", "'grading'", "known keys are grader, defaults, labs")

    def test_unknown_key_in_grader(self):
        self.assertConfigError("[grader]\ntest_timeout = 5\n", "[grader]", "'test_timeout'", "test_timeout_s")

    def test_unknown_key_in_defaults(self):
        self.assertConfigError("[defaults]\npoints = 5\n", "[defaults]", "'points'")

    def test_unknown_lab(self):
        self.assertConfigError("[labs.fft]\nenabled = true\n", "unknown lab", "fft", "vectorAdd")

    def test_unknown_key_in_lab(self):
        self.assertConfigError("[labs.scan]\nweight = 2\n", "[labs.scan]", "'weight'")

    def test_wrong_type(self):
        self.assertConfigError('[grader]\ntest_timeout_s = "slow"\n', "[grader] test_timeout_s", "seconds > 0", "'slow'")

    def test_boolean_is_not_a_number(self):
        self.assertConfigError("[defaults]\nperformance_points = true\n", "performance_points", ">= 0")

    def test_negative_points(self):
        self.assertConfigError("[labs.sort]\ncorrectness_points = -5\n", "[labs.sort] correctness_points",
                               "points >= 0", "-5")

    def test_device_connections(self):
        for key in ("test_device_connections", "bench_device_connections"):
            for bad in ("-1", "33", "true", '"1"', "1.5"):
                with self.subTest(key=key, value=bad):
                    self.assertConfigError(f"[grader]\n{key} = {bad}\n", key, "from 0 (the driver's default) to 32")
            self.assertEqual(config.load(None).grader[key], 1)
        loaded = config.load(self.write("[grader]\ntest_device_connections = 0\n"))
        self.assertEqual(loaded.grader["test_device_connections"], 0)

    def test_zero_timeout(self):
        self.assertConfigError("[grader]\nbench_timeout_s = 0\n", "bench_timeout_s")

    def test_bad_ratio(self):
        self.assertConfigError("[defaults]\nfull_credit_ratio = 0\n", "full_credit_ratio", "ratio > 0")

    def test_bad_seed(self):
        self.assertConfigError('[grader]\nseed = "fixed"\n', "seed", '"random" or an integer')
        self.assertConfigError("[grader]\nseed = -1\n", "seed")

    def test_bad_variant(self):
        self.assertConfigError('[defaults]\nreference_variant = ""\n', "reference_variant")

    def test_bad_weights(self):
        self.assertConfigError('[defaults.test_weights]\n"*" = -1\n', "test_weights", "weight >= 0")
        self.assertConfigError('[defaults]\ntest_weights = 3\n', "test_weights")

    def test_enabled_not_bool(self):
        self.assertConfigError("[labs.sort]\nenabled = 1\n", "enabled", "true or false")

    def test_section_not_a_table(self):
        self.assertConfigError("grader = 5\n", "[grader] must be a table")
        self.assertConfigError("[labs]\nscan = 5\n", "[labs.scan] must be a table")


if __name__ == "__main__":
    unittest.main()


class CpuSuitesWeighNothing(unittest.TestCase):
    """The provided CPU version's tests must not give a skeleton points."""

    def test_cpu_suites_have_weight_zero_by_default(self):
        settings = config.from_dict({}, None).lab("vectorAdd")
        self.assertEqual(settings.weight("VectorAddCpu.AddsElementwise"), 0.0)
        self.assertEqual(settings.weight("Sizes/VectorAddGpu.MatchesCpu/n_1"), 1.0)
        self.assertEqual(settings.weight("VectorAddGpuEdge.SpecialValues"), 1.0)

    def test_file_patterns_come_first_and_builtin_ones_stay(self):
        cfg = config.from_dict({"defaults": {"test_weights": {"*Special*": 3}}}, None)
        settings = cfg.lab("vectorAdd")
        self.assertEqual(settings.weight("VectorAddGpuEdge.SpecialValues"), 3.0)
        self.assertEqual(settings.weight("VectorAddCpu.AddsElementwise"), 0.0)
        cfg = config.from_dict({"defaults": {"test_weights": {"*Cpu.*": 1}}}, None)
        self.assertEqual(cfg.lab("vectorAdd").weight("VectorAddCpu.AddsElementwise"), 1.0)
