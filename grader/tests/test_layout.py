"""grader/layout.py names the build's files as the C++ side makes them (cmake/LabKit.cmake,
CMakeLists.txt, grader/CONTRACT.md), and nothing else in grader/ spells those names."""

from __future__ import annotations

import re
import unittest
from pathlib import Path

from grader import layout

KIT = Path(__file__).resolve().parents[2]
PLACEHOLDER = "<lab>"


class MirrorTest(unittest.TestCase):
    def targets(self) -> list[str]:
        lab = PLACEHOLDER
        return [layout.judge_test(lab), layout.judge_bench(lab), layout.worker(lab),
                layout.direct_bench(lab, layout.STUDENT), layout.direct_bench(lab, layout.SOLUTION),
                layout.library_target(lab, layout.STUDENT), layout.library_target(lab, layout.SOLUTION)]

    # Every target the grader names is one add_lab() says it makes, and CONTRACT.md names.
    def test_targets_are_the_kits(self):
        cmake = (KIT / "cmake" / "LabKit.cmake").read_text()
        contract = (KIT / "grader" / "CONTRACT.md").read_text()
        for target in self.targets():
            with self.subTest(target=target):
                self.assertRegex(cmake, rf"#\s+{re.escape(target)}\s")
                self.assertIn(f"`{target}`", contract)
        self.assertEqual(layout.judge_targets("x", reference=True), ["x_judge_test", "x_judge_bench", "x_worker",
                                                                     "x_solution"])
        self.assertEqual(layout.judge_targets("x", reference=False), ["x_judge_test", "x_judge_bench", "x_worker"])

    # The libraries' file names and the output folders are CMake's.
    def test_files_and_folders_are_the_kits(self):
        top = (KIT / "CMakeLists.txt").read_text()
        self.assertIn(f"CMAKE_RUNTIME_OUTPUT_DIRECTORY ${{CMAKE_BINARY_DIR}}/{layout.BIN})", top)
        self.assertIn(f"CMAKE_LIBRARY_OUTPUT_DIRECTORY ${{CMAKE_BINARY_DIR}}/{layout.LIB})", top)
        contract = (KIT / "grader" / "CONTRACT.md").read_text()
        for name in (layout.solution_library(PLACEHOLDER), layout.student_library(PLACEHOLDER)):
            with self.subTest(name=name):
                self.assertIn(name, contract)
        self.assertRegex(layout.solution_library("vectorAdd"), layout.SOLUTION_LIBRARY)
        self.assertEqual(layout.SOLUTION_LIBRARY.match("libscan_solution.so")["lab"], "scan")
        self.assertIsNone(layout.SOLUTION_LIBRARY.match("libscan_student.so"))
        build = Path("/b")
        self.assertEqual(layout.judge_test_path(build, "scan"), Path("/b/bin/scan_judge_test"))
        self.assertEqual(layout.solution_library_path(build, "scan"), Path("/b/lib/libscan_solution.so"))
        self.assertEqual(layout.solution_library_path(Path("/refs"), "scan", built=False),
                         Path("/refs/libscan_solution.so"))
        self.assertEqual(layout.bench_json(Path("/r"), "scan", 1), Path("/r/scan.bench.json"))
        self.assertEqual(layout.bench_json(Path("/r"), "scan", 3), Path("/r/scan.bench.3.json"))


class OnlyHereTest(unittest.TestCase):
    # No other module of the grader spells a build artefact's name (comments, docstrings and
    # help texts may say lib<lab>_solution.so; code may not build one from a lab's name).
    def test_no_other_module_builds_the_names(self):
        spelled = re.compile(r'f"[^"\n]*\{lab\}_(?:judge_test|judge_bench|worker|solution|student|bench|test)\b'
                             r'|f"lib\{[a-z_\[\]0-9]+\}_(?:solution|student)\.so'
                             r'|build_dir\w* / "(?:bin|lib)"')
        found = []
        for path in sorted((KIT / "grader").rglob("*.py")):
            if "tests" in path.parts or path.name == "layout.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if spelled.search(line):
                    found.append(f"{path.relative_to(KIT)}:{number}: {line.strip()}")
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
