"""Static rules: required and forbidden patterns in the implementation's code."""

from __future__ import annotations

import tempfile
import unittest
from pathlib import Path

from grader import config, rules


class BlankComments(unittest.TestCase):
    def test_comments_and_strings_are_blanked_lines_kept(self):
        text = 'a // __shared__\n/* __shared__\n */ b "__shared__" c\n__shared__ float t;'
        blanked = rules.blank_comments(text)
        self.assertEqual(blanked.count("\n"), text.count("\n"))
        self.assertEqual(blanked.count("__shared__"), 1)
        self.assertIn("__shared__ float t;", blanked)


class Check(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.root = Path(self.tmp.name)
        self.file = self.root / "labs" / "sobel" / "sobel.cu"
        self.file.parent.mkdir(parents=True)

    def tearDown(self):
        self.tmp.cleanup()

    def test_required_pattern_in_a_comment_does_not_count(self):
        self.file.write_text("// TODO(student): use __shared__ memory\n__global__ void k() {}\n")
        findings = rules.check(self.root, rules.sources(self.root, "sobel", "student"), [r"__shared__"], [])
        self.assertEqual(len(findings), 1)
        self.assertEqual(findings[0].kind, "required")
        self.assertIn("labs/sobel/sobel.cu", findings[0].message)

    def test_required_pattern_in_code_passes(self):
        self.file.write_text("__global__ void k() { __shared__ unsigned char tile[18][18]; }\n")
        self.assertEqual(rules.check(self.root, [self.file], [r"__shared__"], []), [])

    def test_forbidden_pattern_names_file_and_line(self):
        self.file.write_text("#include <cub/cub.cuh>\nint x;\nvoid f() { cub::DeviceReduce::Sum(); }\n")
        findings = rules.check(self.root, [self.file], [], [r"cub::\w+"])
        self.assertEqual([(f.file, f.line) for f in findings], [("labs/sobel/sobel.cu", 3)])
        self.assertIn("labs/sobel/sobel.cu:3", findings[0].message)


class Config(unittest.TestCase):
    def test_sobel_requires_shared_by_default(self):
        cfg = config.from_dict({}, None)
        self.assertEqual(cfg.lab("sobel").required_patterns, [r"__shared__"])
        self.assertEqual(cfg.lab("vectorAdd").required_patterns, [])
        self.assertEqual(cfg.lab("sobel").rule_penalty, 0.75)

    def test_a_lab_table_keeps_builtin_values_it_does_not_set(self):
        cfg = config.from_dict({"labs": {"sobel": {"rule_penalty": 0.5}}}, None)
        self.assertEqual(cfg.lab("sobel").required_patterns, [r"__shared__"])
        self.assertEqual(cfg.lab("sobel").rule_penalty, 0.5)

    def test_bad_patterns_and_penalties_are_config_errors(self):
        with self.assertRaises(config.ConfigError):
            config.from_dict({"defaults": {"forbidden_patterns": ["("]}}, None)
        with self.assertRaises(config.ConfigError):
            config.from_dict({"labs": {"sobel": {"rule_penalty": 2}}}, None)


if __name__ == "__main__":
    unittest.main()
