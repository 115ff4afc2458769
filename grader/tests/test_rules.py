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


class Builtin(unittest.TestCase):
    """The built-in forbidden rules on student files, reported with file and line."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.root = Path(self.tmp.name)
        self.file = self.root / "labs" / "reduction" / "reduction.cu"
        self.file.parent.mkdir(parents=True)

    def findings(self, text: str, allow: tuple[str, ...] = ()) -> list[tuple[str, int]]:
        self.file.write_text(text)
        builtin = {k: v for k, v in rules.BUILTIN_RULES.items() if k not in allow}
        return [(f.rule, f.line) for f in rules.check(self.root, [self.file], [], [], builtin)]

    def test_each_rule(self):
        cases = {
            "cub": "#include <cub/cub.cuh>", "thrust": "auto s = thrust::reduce(p, p + n);",
            "cublas": "cublasSgemm(h);", "npp": "nppiFilterSobelHoriz_8u_C1R(a);",
            "own_streams": "cudaStreamCreate(&s);", "streams": "cudaLaunchHostFunc(s, f, p);",
            "device_reset": "cudaDeviceReset();",
            "device_limits": "cudaDeviceSetLimit(cudaLimitPrintfFifoSize, 1);", "exit": "std::exit(0);",
            "files": "FILE* f = fopen(name, mode);", "environment": "const char* v = getenv(name);",
            "processes": "system(cmd);", "dynamic_loading": "void* h = dlopen(path, 1);",
            "threads": "std::thread t(f);", "test_framework": "GTEST_FLAG_SET(filter, x);",
            "outside_includes": '#include "../../solutions/reduction/reduction.cu"',
            "registry": 'static lab::VariantRegistrar<decltype(reduce_sum)> r("reduce_sum", "x", &f, "");',
        }
        for rule, line in cases.items():
            self.assertEqual(self.findings(f"// a comment\n{line}\n"), [(rule, 2)], rule)

    def test_message_names_file_line_and_reason(self):
        self.file.write_text("int a;\nvoid f() { abort(); }\n")
        finding = rules.check(self.root, [self.file], [], [], rules.BUILTIN_RULES)[0]
        self.assertTrue(finding.message.startswith("labs/reduction/reduction.cu:2: `abort(` is not allowed"))
        self.assertIn("LAB_CUDA_CHECK", finding.message)
        self.assertEqual(finding.as_dict()["rule"], "exit")

    # Mentions in comments and strings, and look-alike names, are not findings; an
    # include keeps its path but not a comment after it.
    def test_no_false_findings(self):
        text = ('#include "lab/cuda_check.h"  // never call exit() here\n'
                '// cub::DeviceReduce would be faster\n'
                'const char* s = "fopen(";\n'
                'void on_exit_cleanup();\nint my_system_time(int);\n'
                '__global__ void k(float* out) { out[0] = 1.0f; }\n')
        self.assertEqual(self.findings(text), [])

    # The per-thread default stream synchronises with the legacy default stream the timer's
    # events are on: allowed, by name or by value. Streams of one's own (rule own_streams,
    # which a lab's manifest may lift), callbacks and graphs are still findings, with the line.
    def test_streams_rule_is_about_streams_the_timer_may_miss(self):
        allowed = ("k<<<1, 1, 0, cudaStreamPerThread>>>(p);\n"
                   "k<<<1, 1, 0, (cudaStream_t)2>>>(p);\n"
                   "cudaMemsetAsync(p, 0, 4, cudaStreamLegacy);\n")
        self.assertEqual(self.findings(allowed), [])
        forbidden = ("cudaStream_t s;\ncudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
                     "cudaLaunchHostFunc(0, f, 0);\ncudaGraph_t g;\n")
        self.assertEqual(sorted(self.findings(forbidden)),
                         [("own_streams", 2), ("own_streams", 2), ("streams", 3), ("streams", 4)])

    # Lecture steps are told apart by the records LAB_REGISTER_VARIANT leaves in the object:
    # the macro is how a file registers; registrars, records and sections of its own are not.
    def test_registry_rule_lets_only_the_macro_register(self):
        allowed = ('LAB_REGISTER_VARIANT(reduce_sum, "two_pass", two_pass, "two launches");\n'
                   "int section(int a) { return a; }\n"
                   "__attribute__((aligned(16))) float table[4];\n")
        self.assertEqual(self.findings(allowed), [])
        forbidden = ('__attribute__((used, section(".labkit_variants"))) static const char fake[] = "x";\n'
                     '[[gnu::section(".labkit_variants")]] static const char other[] = "y";\n'
                     "lab::VariantRecord<11, 9> r{};\n"
                     'lab::local_variants().add("reduce_sum", "x", f, "");\n')
        self.assertEqual(sorted(self.findings(forbidden)),
                         [("registry", 1), ("registry", 2), ("registry", 3), ("registry", 4)])

    def test_allow(self):
        self.assertEqual(self.findings("auto s = thrust::reduce(p, p + n);\n", allow=("thrust",)), [])


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

    def test_allow_names_are_checked(self):
        self.assertEqual(config.from_dict({"labs": {"sort": {"allow": ["thrust"]}}}, None).lab("sort").allow, ["thrust"])
        with self.assertRaises(config.ConfigError):
            config.from_dict({"labs": {"sort": {"allow": ["thrusst"]}}}, None)

    def test_bad_patterns_and_penalties_are_config_errors(self):
        with self.assertRaises(config.ConfigError):
            config.from_dict({"defaults": {"forbidden_patterns": ["("]}}, None)
        with self.assertRaises(config.ConfigError):
            config.from_dict({"labs": {"sobel": {"rule_penalty": 2}}}, None)


if __name__ == "__main__":
    unittest.main()
