"""Tests of grader/tests/onefile.py, which makes each lab's reference into one student file:
on a fake kit, the order of the files, headers inlined once, the kit's and the system's
includes once at the top, clashing names of anonymous namespaces renamed, a missing
include said clearly, the same output twice; on this kit (with nvcc), every lab's one
file passes the static checks."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import tempfile
import textwrap
import unittest
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from grader import check, manifest, variants
from grader.tests import onefile

KIT = Path(__file__).resolve().parents[2]


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


# A lab "toy" whose reference spans three files and two headers (one in a folder), one
# including the other.
TOY = {
    "labs/toy/toy.h": "#pragma once\nint toy(int x);\n",
    "common/include/lab/variants.h": "#pragma once\n",
    "solutions/toy/answers.md": "## q1\n42\n",
    "solutions/toy/detail/shared.cuh": """\
        // shared helpers
        #pragma once
        #include <cstdint>
        #include "../base.cuh"
        namespace toy_solution { int twice(int x); struct Config { int kThreads; }; }
        """,
    "solutions/toy/base.cuh": """\
        #pragma once
        #include "toy.h"
        namespace toy_solution { constexpr int kBase = 1; }
        """,
    "solutions/toy/toy.cu": """\
        // the interface
        #include <cstdint>
        #include "lab/variants.h"
        #include "detail/shared.cuh"
        #include "toy.h"
        namespace toy_solution {
        namespace {
        constexpr int kThreads = 256;  // kThreads: a comment keeps its word
        __global__ void __launch_bounds__(256) toy_kernel(int* p) { p[0] = kThreads; }
        }  // namespace
        }  // namespace toy_solution
        int toy(int x) { return toy_solution::twice(x) + toy_solution::kThreads; }
        """,
    "solutions/toy/b_twice.cu": """\
        #include <cstddef>
        #include "detail/shared.cuh"
        #if defined(TOY_DEBUG)
        #include <cstdio>
        #endif
        namespace toy_solution {
        namespace {
        constexpr int kThreads = 128;
        template <int N>
        int scaled(int x) { Config c{kThreads}; return x * N + c.kThreads + c.*(&Config::kThreads); }
        const char* kName = "kThreads";
        }  // namespace
        int twice(int x) { return scaled<2>(x) + kThreads + kBase + toy_solution::kThreads; }
        }  // namespace toy_solution
        """,
    "solutions/toy/a_other.cpp": "#include \"detail/shared.cuh\"\nint unused_helper() { return toy_solution::kBase; }\n",
}


class GeneratorTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.kit = Path(tmp.name) / "kit"
        write(self.kit, TOY)
        lab_json = json.loads((KIT / "labs" / "vectorAdd" / "lab.json").read_text())
        lab_json.update(name="toy", editable=["labs/toy/toy.cu"])
        (self.kit / "labs" / "toy" / "lab.json").write_text(json.dumps(lab_json))

    def test_one_file(self):
        text = onefile.one_file(self.kit, "toy")
        # <lab>.cu first, then the others by name; each file's part is marked.
        self.assertEqual(re.findall(r"^// ==== (\S+) ", text, re.M), ["toy.cu", "a_other.cpp", "b_twice.cu"])
        # System and kit includes once each, at the top, before any code; no #pragma once.
        includes = re.findall(r"^#include .*$", text[:text.index("// ====")], re.M)
        self.assertEqual(includes, ["#include <cstdint>", "#include <cstddef>", '#include "lab/variants.h"',
                                    '#include "toy.h"'])
        # ... but one inside an #if stays there.
        self.assertEqual(re.findall(r"^#include .*$", text[text.index("// ===="):], re.M), ["#include <cstdio>"])
        self.assertIn("#if defined(TOY_DEBUG)\n#include <cstdio>\n#endif\n", text)
        self.assertLess(text.index('#include "toy.h"'), text.index("// ===="))
        self.assertNotIn("#pragma once", text)
        # Each header of the solution inlined once, where it is first included (in toy.cu),
        # the header it includes before it.
        self.assertEqual(text.count("int twice(int x);"), 1)
        self.assertEqual(text.count("constexpr int kBase = 1;"), 1)
        self.assertLess(text.index("constexpr int kBase"), text.index("int twice(int x);"))
        self.assertLess(text.index("int twice(int x);"), text.index("// ==== a_other.cpp"))
        # b_twice.cu's kThreads clashes with toy.cu's: renamed in b_twice.cu, in code only
        # (not in a comment or a string, not as a member after `.` or `Config::`; after
        # `toy_solution::`, a namespace of the file, it is).
        toy_part = text[text.index("// ==== toy.cu"):text.index("// ==== a_other.cpp")]
        twice_part = text[text.index("// ==== b_twice.cu"):]
        self.assertIn("p[0] = kThreads;", toy_part)
        self.assertIn("// kThreads: a comment keeps its word", toy_part)
        self.assertIn("constexpr int kThreads_b_twice = 128;", twice_part)
        self.assertIn("Config c{kThreads_b_twice}; return x * N + c.kThreads + c.*(&Config::kThreads);", twice_part)
        self.assertIn("struct Config { int kThreads; };", text)  # the header's member keeps its name
        self.assertIn('const char* kName = "kThreads";', twice_part)
        self.assertIn("return scaled<2>(x) + kThreads_b_twice + kBase + toy_solution::kThreads_b_twice;", twice_part)

    def test_names_of_anonymous_namespaces(self):
        code = textwrap.dedent("""\
            namespace outer {
            int visible = 1;
            namespace {
            template <int N, class T = int>
            __global__ void __launch_bounds__(256, 2) kernel(const T* in, int n) { if (n) { in++; } }
            constexpr int kTile = 4 * 256;
            struct __align__(16) Tile { int a; };
            enum class Mode { kA, kB };
            using Word = unsigned;
            static_assert(kTile > 0, "tile");
            __device__ int* table[4];
            std::pair<int, int> split(int n);
            int value = compute(3);
            }  // namespace
            }  // namespace outer
            """)
        self.assertEqual(onefile.anonymous_names(code),
                         {"kernel", "kTile", "Tile", "Mode", "Word", "table", "split", "value"})

    def test_same_output_twice(self):
        first = onefile.one_file(self.kit, "toy")
        # The files' order on disk plays no part: write them again in another order.
        for path in sorted((p for p in (self.kit / "solutions" / "toy").rglob("*") if p.is_file()), reverse=True):
            text = path.read_text()
            path.unlink()
            path.write_text(text)
        self.assertEqual(onefile.one_file(self.kit, "toy"), first)

    def test_missing_include(self):
        (self.kit / "solutions" / "toy" / "base.cuh").write_text('#pragma once\n\n#include "gone.cuh"\n')
        with self.assertRaises(onefile.OneFileError) as caught:
            onefile.one_file(self.kit, "toy")
        self.assertEqual(str(caught.exception),
                         'solutions/toy/base.cuh:3: #include "gone.cuh" is neither a file of solutions/toy/ '
                         "nor a kit header (labs/toy/, common/include/)")

    def test_include_cycle(self):
        (self.kit / "solutions" / "toy" / "base.cuh").write_text('#pragma once\n#include "detail/shared.cuh"\n')
        with self.assertRaisesRegex(onefile.OneFileError, r"base\.cuh:2: detail/shared\.cuh includes itself"):
            onefile.one_file(self.kit, "toy")

    def test_no_solution(self):
        with self.assertRaisesRegex(onefile.OneFileError, r"no solution for lab other \(solutions/other is missing"):
            onefile.one_file(self.kit, "other")

    def test_write_and_cli(self):
        out = self.kit.parent / "sub"
        with contextlib.redirect_stdout(io.StringIO()):
            code = onefile.main(["--root", str(self.kit), "--out", str(out), "toy"])
        self.assertEqual(code, 0)
        self.assertEqual((out / "labs" / "toy" / "toy.cu").read_text(), onefile.one_file(self.kit, "toy"))
        self.assertEqual((out / "labs" / "toy" / "answers.md").read_text(), "## q1\n42\n")
        (self.kit / "solutions" / "toy" / "toy.cu").write_text('#include "nowhere.h"\n')
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = onefile.main(["--root", str(self.kit), "--out", str(out), "toy"])
        self.assertEqual(code, 1)
        self.assertIn('onefile: error: solutions/toy/toy.cu:1: #include "nowhere.h" is neither', err.getvalue())


NVCC = check.find_nvcc()
CAN_COMPILE = NVCC is not None and not check.tools_missing()


# Every lab's one file, checked as a student's (compiled with nvcc, its object read):
# clean, each lecture step registered and launching kernels of its own, the answers the
# solution's.
@unittest.skipUnless(CAN_COMPILE, "nvcc or binutils not found: the static checks compile the file")
@unittest.skipUnless((KIT / "solutions").is_dir(), "no solutions/ in this copy of the kit")
class KitLabsTest(unittest.TestCase):
    def test_every_lab_checks_clean(self):
        labs = manifest.labs(KIT)
        with tempfile.TemporaryDirectory(prefix="labkit-onefile-") as tmp:
            base = Path(tmp)
            for lab in labs:
                onefile.write(KIT, lab.name, base / "sub")

            def run(lab: manifest.Lab):
                return check.check_lab(KIT, lab, [base / "sub" / "labs" / lab.name / f"{lab.name}.cu"],
                                       work_dir=base / "work" / lab.name)

            with ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2))) as pool:
                results = dict(zip([lab.name for lab in labs], pool.map(run, labs)))
            for lab in labs:
                with self.subTest(lab.name):
                    result = results[lab.name]
                    self.assertTrue(result.ok, result.message)
                    self.assertEqual([f.message for f in result.findings], [])
                    # Every lecture step registered, each launching work of its own: all its points.
                    names = [v.name for v in lab.required_variants if v.kind == variants.STEP]
                    steps = variants.distinct(names, result.steps)
                    self.assertEqual(sorted(steps), sorted(names))
                    self.assertEqual({name: verdict.get("reuse") for name, verdict in steps.items()
                                      if "reuse" in verdict or "unchecked" in verdict or not verdict["kernels"]}, {})
                    answers = (base / "sub" / "labs" / lab.name / "answers.md")
                    if lab.questions:
                        self.assertEqual(answers.read_text(),
                                         (KIT / "solutions" / lab.name / "answers.md").read_text())


if __name__ == "__main__":
    unittest.main()
