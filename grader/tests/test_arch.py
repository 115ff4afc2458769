"""Tests of grader/arch.py: which GPUs a build can run on, and the check that `python3 -m
grader` and `python3 -m grader profile` make before anything is built or graded.

The coverage rules are a table; the grader's check runs against fake GPUs (a fake
nvidia-smi on PATH, or gpu.Device values), never the host's.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import arch, build, cli, gpu, profile
from grader.tests.helpers import make_kit, write_script

KIT = Path(__file__).resolve().parents[2]

# A fake nvidia-smi: `-L` and the device query answer from FAKE_GPUS ("8.0 NVIDIA A100;9.0 NVIDIA H100"),
# one GPU per entry; every other query fails.
FAKE_SMI = """
    import os, sys
    gpus = [g.split(" ", 1) for g in os.environ.get("FAKE_GPUS", "").split(";") if g]
    if "-L" in sys.argv:
        for i, (cap, name) in enumerate(gpus):
            print(f"GPU {i}: {name} (UUID: GPU-{i}000)")
        sys.exit(0 if gpus else 9)
    if any(a.startswith("--query-gpu=index,name,compute_cap") for a in sys.argv):
        for i, (cap, name) in enumerate(gpus):
            print(f"{i}, {name}, {cap}, 81559, GPU-{i}000")
        sys.exit(0)
    sys.exit(9)
"""


def device(cap: str, name: str = "GPU", index: str = "0") -> gpu.Device:
    return gpu.Device(index, name, cap, 81559)


class CoverageTest(unittest.TestCase):
    # (CMAKE_CUDA_ARCHITECTURES, the GPU's architecture, how it runs there)
    TABLE = [
        ("75", "75", arch.SASS),
        ("75", "90", arch.PTX),  # the default fallback: PTX for every newer GPU
        ("75", "120", arch.PTX),
        ("75-real", "90", ""),  # machine code of another major version
        ("75-real", "86", ""),
        ("80-real", "86", arch.SASS),  # sm_80 runs on sm_86 ...
        ("86-real", "80", ""),  # ... not the reverse
        ("86", "80", ""),  # nor compute_86 PTX on an older GPU
        ("80", "90", arch.PTX),
        ("89-real", "86", ""),
        ("86-real", "87", arch.SASS),
        ("80-real;90-real", "89", arch.SASS),
        ("75-real;80-real;86-real;89-real;90-real", "120", ""),
        ("75-real;80-real;86-real;89-real;90-real", "100", ""),
        ("90-virtual", "120", arch.PTX),
        ("90-virtual", "89", ""),
        ("90a-real", "90", arch.SASS),  # arch-specific: its own GPU only
        ("90a", "100", ""),
        ("90a-virtual", "90", arch.PTX),
        ("90a-virtual", "100", ""),
        ("100f-real", "103", arch.SASS),  # family-specific: the family
        ("103f-real", "100", ""),
        ("100f-virtual", "103", arch.PTX),
        ("100f", "120", ""),
        ("all", "120", arch.SASS),
        ("all-major", "86", arch.SASS),
        ("80", "", ""),  # a GPU whose capability is unknown is not judged here
    ]

    def test_table(self):
        for value, gpu_arch, expected in self.TABLE:
            with self.subTest(value=value, gpu=gpu_arch):
                self.assertEqual(arch.coverage(arch.cmake_codes(value), gpu_arch), expected)

    def test_cmake_codes(self):
        self.assertEqual(arch.cmake_codes("75"), ("sm_75", "compute_75"))
        self.assertEqual(arch.cmake_codes("80-real;90"), ("sm_80", "sm_90", "compute_90"))
        self.assertEqual(arch.cmake_codes("90a-virtual"), ("compute_90a",))
        for unknown in ("native", "", ";", "sm_90", "compute_90", "90-bogus", "9.0", "80;native"):
            with self.subTest(unknown):
                self.assertIsNone(arch.cmake_codes(unknown))

    def test_runs_on(self):
        self.assertTrue(arch.runs_on(["sm_80"], "86"))
        self.assertFalse(arch.runs_on(["sm_86"], "80"))
        self.assertFalse(arch.runs_on(["compute_75"], "90"))  # PTX is not machine code
        self.assertFalse(arch.runs_on(["sm_90"], ""))
        self.assertFalse(arch.runs_on(["bogus"], "90"))

    # The grader's --cuda-arch: what CMake takes, a comma list made a CMake list.
    def test_parse_cuda_arch(self):
        self.assertEqual(arch.parse_cuda_arch("90"), "90")
        self.assertEqual(arch.parse_cuda_arch("80,90"), "80;90")
        self.assertEqual(arch.parse_cuda_arch(" 86 ; 90-real,86"), "86;90-real")
        self.assertEqual(arch.parse_cuda_arch("all-major"), "all-major")
        for bad in ("sm_90", "compute_80", "", "9.0", "90;x", "90-realx"):
            with self.subTest(bad), self.assertRaisesRegex(ValueError, "is not a CUDA architecture"):
                arch.parse_cuda_arch(bad)

    def test_describe(self):
        self.assertEqual(arch.describe(("sm_90",)), "machine code for sm_90 only (no PTX)")
        self.assertEqual(arch.describe(("sm_75", "compute_75")), "machine code for sm_75 and PTX for compute_75")
        self.assertEqual(arch.describe(("compute_90",)), "PTX for compute_90 only")


class CheckTest(unittest.TestCase):
    BUILD = arch.Holding("the build (CMAKE_CUDA_ARCHITECTURES=90-real)", ("sm_90",), "pass --cuda-arch {archs}")

    def test_covered(self):
        verdict = arch.check([self.BUILD], [device("9.0", "NVIDIA H100 80GB HBM3")])
        self.assertEqual((verdict.ok, verdict.errors, verdict.notes), (True, [], []))

    # The GPU by its label, what the build has, and the flag with every GPU's architecture.
    def test_uncovered(self):
        verdict = arch.check([self.BUILD], [device("9.0", "NVIDIA H100"), device("8.0", "NVIDIA A100", "1")])
        self.assertFalse(verdict.ok)
        self.assertEqual(verdict.errors, [
            "GPU 1, NVIDIA A100 (sm_80), cannot run the build (CMAKE_CUDA_ARCHITECTURES=90-real): it has machine "
            "code for sm_90 only (no PTX). Fix: pass --cuda-arch 80,90."])

    def test_too_old(self):
        verdict = arch.check([self.BUILD], [device("7.0", "Tesla V100-SXM2-16GB")])
        self.assertEqual(len(verdict.errors), 1)
        self.assertIn("GPU 0, Tesla V100-SXM2-16GB (sm_70), is too old for the labs: they need compute capability "
                      "7.5 or newer", verdict.errors[0])
        self.assertNotIn("CUDA_VISIBLE_DEVICES", verdict.errors[0])
        verdict = arch.check([], [device("6.0", "Tesla P100"), device("9.0", "NVIDIA H100", "1")])
        self.assertIn("hide this one with CUDA_VISIBLE_DEVICES", verdict.errors[0])

    def test_ptx_is_a_note(self):
        holding = arch.Holding("the build", ("sm_75", "compute_75"), "pass --cuda-arch {archs}")
        verdict = arch.check([holding], [device("9.0", "NVIDIA H100")])
        self.assertTrue(verdict.ok)
        self.assertEqual(len(verdict.notes), 1)
        self.assertIn("runs the build from PTX", verdict.notes[0])
        self.assertIn("--cuda-arch 90", verdict.notes[0])

    def test_unknown_capability_and_no_gpu(self):
        self.assertTrue(arch.check([self.BUILD], [device("", "old driver")]).ok)
        self.assertTrue(arch.check([self.BUILD], []).ok)

    # A package's fix keeps the architectures it already has, so other runners still work.
    def test_fix_keeps(self):
        holding = arch.Holding("the package", ("sm_75", "sm_90"), "--cuda-arch {archs} / {cmake}", keep=("75", "90"))
        verdict = arch.check([holding], [device("8.6", "NVIDIA A10")])
        self.assertIn("Fix: --cuda-arch 75,86,90 / 75;86;90.", verdict.errors[0])


class BuildHoldingTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.build = self.tmp / "build"
        self.build.mkdir()
        self.root = self.tmp / "kit"
        (self.root / "cmake").mkdir(parents=True)
        (self.root / "cmake" / "LabKitCudaArch.cmake").write_text(
            "set(LABKIT_FALLBACK_CUDA_ARCHITECTURES 75 CACHE STRING \"doc\")\n")

    def cache(self, value: str) -> None:
        (self.build / "CMakeCache.txt").write_text(f"# c\nCMAKE_CUDA_ARCHITECTURES:STRING={value}\nX:BOOL=ON\n")

    def holding(self, mode: str, **kwargs) -> arch.Holding | None:
        kwargs.setdefault("environ", {})
        return arch.build_holding(self.build, mode=mode, root=self.root, **kwargs)

    def test_cache_value(self):
        self.assertIsNone(build.cache_value(self.build, "CMAKE_CUDA_ARCHITECTURES"))
        self.cache("80-real;90")
        self.assertEqual(build.cache_value(self.build, "CMAKE_CUDA_ARCHITECTURES"), "80-real;90")
        self.assertEqual(build.cache_value(self.build, "X"), "ON")
        self.assertIsNone(build.cache_value(self.build, "CMAKE_CUDA"))

    # Building: --cuda-arch is what will be built (the cache is reconfigured), else the
    # cache, else the kit's first choice: CUDAARCHS, the GPUs, the fallback list.
    def test_build_mode(self):
        self.cache("90-real")
        given = self.holding(arch.BUILD, cuda_arch="80;86")
        self.assertEqual((given.codes, given.what), (("sm_80", "compute_80", "sm_86", "compute_86"),
                                                     "the build for --cuda-arch 80,86"))
        self.assertEqual(given.fix, "pass --cuda-arch {archs} instead")
        cached = self.holding(arch.BUILD)
        self.assertEqual(cached.codes, ("sm_90",))
        self.assertIn(f"the build folder {self.build} (CMAKE_CUDA_ARCHITECTURES=90-real)", cached.what)
        self.assertIn("pass --cuda-arch {archs}: the grader then configures its build folder", cached.fix)
        self.assertIn(f'cmake -B {self.build} -DCMAKE_CUDA_ARCHITECTURES="{{cmake}}"', cached.fix)
        (self.build / "CMakeCache.txt").unlink()
        env = self.holding(arch.BUILD, environ={"CUDAARCHS": "86-real"})
        self.assertEqual((env.codes, env.fix), (("sm_86",), "set CUDAARCHS to {cmake}, or pass --cuda-arch {archs}"))
        gpus = self.holding(arch.BUILD, devices=[device("9.0"), device("8.6"), device("6.0"), device("9.0")])
        self.assertEqual(gpus.what, "the kit's build for the GPUs (CMAKE_CUDA_ARCHITECTURES=86;90)")
        fallback = self.holding(arch.BUILD)
        self.assertEqual(fallback.what, "the kit's build for LABKIT_FALLBACK_CUDA_ARCHITECTURES "
                                        "(CMAKE_CUDA_ARCHITECTURES=75)")

    # Not building: the cache alone; no cache, or one that cannot be told in advance, is not judged.
    def test_other_modes(self):
        for mode in (arch.NO_BUILD, arch.PREBUILT, arch.PROFILE):
            self.assertIsNone(self.holding(mode, cuda_arch="90"))
        self.cache("native")
        self.assertIsNone(self.holding(arch.NO_BUILD))
        self.cache("90-real")
        self.assertIn("or grade without --no-build and with --cuda-arch {archs}", self.holding(arch.NO_BUILD).fix)
        self.assertEqual(self.holding(arch.PREBUILT).fix, "build the kit's part again with --cuda-arch {archs} "
                                                          "(grader batch: --grader-arg=--cuda-arch={archs})")
        self.assertEqual(self.holding(arch.PROFILE, cuda_arch="80").codes, ("sm_90",))  # --cuda-arch builds nothing there

    def test_fallback_architectures(self):
        self.assertEqual(arch.fallback_architectures(self.root), ["75"])
        self.assertEqual(arch.fallback_architectures(KIT), ["75"])  # the kit's own default, cheap for CI
        (self.root / "cmake" / "LabKitCudaArch.cmake").write_text(
            'set(LABKIT_FALLBACK_CUDA_ARCHITECTURES "75;90-real" CACHE STRING "doc")\n')
        self.assertEqual(arch.fallback_architectures(self.root), ["75", "90-real"])
        (self.root / "cmake" / "LabKitCudaArch.cmake").write_text('set(LABKIT_FALLBACK_CUDA_ARCHITECTURES x CACHE')
        self.assertEqual(arch.fallback_architectures(self.root), ["75"])
        self.assertEqual(arch.fallback_architectures(self.tmp / "nowhere"), ["75"])

    # A package's manifest lists each library's machine code: one holding per distinct set,
    # for the graded labs only; no manifest: the cache of the build the folder sits in.
    def test_reference_holdings(self):
        ref = self.tmp / "ref"
        ref.mkdir()
        self.assertEqual(arch.reference_holdings(None, ["scan"]), [])
        self.assertEqual(arch.reference_holdings(ref, ["scan"]), [])
        (self.tmp / "CMakeCache.txt").write_text("CMAKE_CUDA_ARCHITECTURES:STRING=80\n")
        plain = arch.reference_holdings(ref, ["scan"])
        self.assertEqual(plain[0].codes, ("sm_80", "compute_80"))
        self.assertIn(f"the reference libraries in {ref} (built with CMAKE_CUDA_ARCHITECTURES=80)", plain[0].what)
        libraries = {"libscan_solution.so": {"sass": ["sm_90"]}, "libsort_solution.so": {"sass": ["sm_80", "sm_90"]},
                     "libvectorAdd_solution.so": {"sass": ["sm_90"]}, "libhistogram_solution.so": {"sass": "sm_90"}}
        (ref / "manifest.json").write_text(json.dumps({"schema": "labkit-reference", "libraries": libraries}))
        one = arch.reference_holdings(ref, ["scan", "vectorAdd", "histogram", "matmul"])
        self.assertEqual([(h.what, h.codes, h.keep) for h in one], [(f"the reference package {ref}", ("sm_90",),
                                                                      ("90",))])
        two = arch.reference_holdings(ref, ["scan", "sort"])
        self.assertEqual([h.what for h in two], [f"the reference package {ref} (libscan_solution.so)",
                                                 f"the reference package {ref} (libsort_solution.so)"])
        (ref / "manifest.json").write_text("[1, 2]")
        self.assertEqual(arch.reference_holdings(ref, ["scan"])[0].codes, ("sm_80", "compute_80"))  # not a manifest


class ConfigureTest(unittest.TestCase):
    """build.configure: the grader's --cuda-arch is what is built, even after someone changed
    the build folder's cache by hand."""

    CMAKE = """
        import json, os, sys
        args = sys.argv[1:]
        open(os.environ["FAKE_CMAKE_LOG"], "a").write(json.dumps(args) + "\\n")
        build = args[args.index("-B") + 1]
        archs = [a.split("=", 1)[1] for a in args if a.startswith("-DCMAKE_CUDA_ARCHITECTURES=")] or ["75"]
        os.makedirs(build, exist_ok=True)
        open(os.path.join(build, "CMakeCache.txt"), "w").write(f"CMAKE_CUDA_ARCHITECTURES:STRING={archs[0]}\\n")
    """

    def test_reconfigures_for_another_architecture(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            write_script(tmp / "tools" / "cmake", self.CMAKE)
            log = tmp / "log"
            with mock.patch.dict(os.environ, {"PATH": f"{tmp / 'tools'}{os.pathsep}{os.environ['PATH']}",
                                              "FAKE_CMAKE_LOG": str(log)}):
                def configure(cuda_arch: str | None) -> int:
                    args = build.configure_args(tmp, tmp / "b", solutions=False, cuda_arch=cuda_arch)
                    self.assertTrue(build.configure(args, tmp / "b", 60).ok)
                    return len(log.read_text().splitlines())

                self.assertEqual(configure("90"), 1)
                self.assertEqual(configure("90"), 1)  # unchanged: not again
                self.assertEqual(configure("80;90"), 2)  # another --cuda-arch: reconfigured
                self.assertEqual(build.cache_value(tmp / "b", "CMAKE_CUDA_ARCHITECTURES"), "80;90")
                (tmp / "b" / "CMakeCache.txt").write_text("CMAKE_CUDA_ARCHITECTURES:STRING=75\n")  # by hand
                self.assertEqual(configure("80;90"), 3)
                self.assertEqual(build.cache_value(tmp / "b", "CMAKE_CUDA_ARCHITECTURES"), "80;90")
                self.assertEqual(configure("80;90"), 3)


class GraderCheckTest(unittest.TestCase):
    """`python3 -m grader` on fake GPUs: refused with exit status 3 before anything is built
    or run, with the GPU, what the build has and the flag that fixes it."""

    class Stop(Exception):
        """Raised by the stand-in for grade.grade: the check let the run through."""

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.root = make_kit(self.tmp / "kit", ["vectorAdd", "scan"])
        self.build = self.tmp / "build"
        self.build.mkdir()
        write_script(self.tmp / "smi" / "nvidia-smi", FAKE_SMI)
        # A cmake that must not run: it leaves a mark.
        write_script(self.tmp / "smi" / "cmake", "import sys; open(sys.argv[0] + '.ran', 'w'); sys.exit(1)\n")
        patcher = mock.patch.dict(os.environ, {"PATH": f"{self.tmp / 'smi'}{os.pathsep}{os.environ['PATH']}",
                                               "FAKE_GPUS": "8.0 NVIDIA A100-SXM4-80GB"})
        patcher.start()
        self.addCleanup(patcher.stop)
        for var in ("LABKIT_REFERENCE_DIR", "LABKIT_PRISTINE", "LABKIT_GRADER_SECRET", "CUDA_VISIBLE_DEVICES",
                    "CUDAARCHS"):
            os.environ.pop(var, None)
        self.graded: list = []

    def cache(self, value: str, folder: Path | None = None) -> None:
        folder = folder or self.build
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "CMakeCache.txt").write_text(f"CMAKE_CUDA_ARCHITECTURES:STRING={value}\n")

    def main(self, *args: str, build_dir: bool = True) -> tuple[int | None, str, str]:
        """cli.main; None when the check let it through to the grading (which is not run)."""
        def grade(options, labs, *rest):
            self.graded.append(options)
            raise self.Stop()

        out, err = io.StringIO(), io.StringIO()
        extra = ["--build-dir", str(self.build)] if build_dir else []
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                mock.patch("grader.cli.grade.grade", side_effect=grade):
            try:
                code = cli.main(["--root", str(self.root), *extra, "--no-sanitizer", *args])
            except self.Stop:
                code = None
        return code, out.getvalue(), err.getvalue()

    def assertRefused(self, result: tuple[int | None, str, str], *fragments: str) -> None:
        code, out, err = result
        self.assertEqual(code, cli.EXIT_NO_GPU, out + err)
        self.assertIn("grader: error: GPU 0, NVIDIA A100-SXM4-80GB (sm_80), cannot run", err)
        for fragment in fragments:
            self.assertIn(fragment, err)
        self.assertIn("Nothing was built or graded.", err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(self.graded, [])
        self.assertFalse((self.tmp / "smi" / "cmake.ran").exists())

    # The default flow: the existing build folder's architectures; --cuda-arch replaces them.
    def test_build(self):
        self.cache("90-real")
        self.assertRefused(self.main(), f"cannot run the build folder {self.build} (CMAKE_CUDA_ARCHITECTURES=90-real)"
                                        ": it has machine code for sm_90 only (no PTX). Fix: pass --cuda-arch 80:")
        self.assertRefused(self.main("--cuda-arch", "90-real,75-real"), "the build for --cuda-arch 90-real,75-real",
                           "Fix: pass --cuda-arch 80 instead.")
        code, _, err = self.main("--cuda-arch", "80,90")
        self.assertIsNone(code, err)
        self.assertEqual(self.graded[0].cuda_arch, "80;90")  # as CMake takes a list

    # PTX that the driver compiles for this GPU: graded, with a note.
    def test_ptx_note(self):
        self.cache("75")
        code, out, err = self.main()
        self.assertIsNone(code, err)
        self.assertIn("note: GPU 0, NVIDIA A100-SXM4-80GB (sm_80), runs the build folder", out)
        self.assertEqual(self.main("--quiet")[1], "")

    # No build folder yet: the kit's own choice (CUDAARCHS here); --no-build: nothing to tell.
    def test_no_build_folder(self):
        os.environ["CUDAARCHS"] = "90-real"
        self.assertRefused(self.main(), "the kit's build for CUDAARCHS", "set CUDAARCHS to 80, or pass --cuda-arch 80.")
        self.graded.clear()
        self.assertIsNone(self.main("--no-build")[0])
        del os.environ["CUDAARCHS"]
        self.assertIsNone(self.main()[0])  # the kit builds for the GPUs it finds

    def test_no_build_and_prebuilt(self):
        self.cache("89-real")
        self.assertRefused(self.main("--no-build"), "or grade without --no-build and with --cuda-arch 80")
        (self.tmp / "student" / "lib").mkdir(parents=True)
        self.assertRefused(self.main("--prebuilt", "--student-dir", str(self.tmp / "student"), "--cuda-arch", "80"),
                           "build the kit's part again with --cuda-arch 80 (grader batch: "
                           "--grader-arg=--cuda-arch=80)")

    # A reference package without machine code for the GPU is refused even when the build
    # is fine; --skip-bench times nothing, so it does not load the references.
    def test_reference_package(self):
        self.cache("80")
        ref = self.tmp / "ref"
        ref.mkdir()
        (ref / "manifest.json").write_text(json.dumps({"libraries": {
            "libvectorAdd_solution.so": {"sass": ["sm_75", "sm_90"]}, "libscan_solution.so": {"sass": ["sm_75", "sm_90"]}}}))
        self.assertRefused(self.main("--reference", str(ref)),
                           f"cannot run the reference package {ref}: it has machine code for sm_75, sm_90 only",
                           "python3 -m grader package --out FILE --cuda-arch 75,80,90")
        self.assertIsNone(self.main("--reference", str(ref), "--skip-bench")[0])
        self.graded.clear()
        os.environ["LABKIT_REFERENCE_DIR"] = str(ref)
        self.assertRefused(self.main("scan"), f"the reference package {ref}")

    # CUDA_VISIBLE_DEVICES narrows the GPUs to those this run uses.
    def test_visible_devices(self):
        os.environ["FAKE_GPUS"] = "9.0 NVIDIA H100 80GB HBM3;8.0 NVIDIA A100-SXM4-80GB"
        self.cache("90-real")
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        self.assertIsNone(self.main()[0])
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        code, _, err = self.main()
        self.assertEqual(code, cli.EXIT_NO_GPU)
        self.assertIn("GPU 1, NVIDIA A100-SXM4-80GB (sm_80), cannot run", err)

    def test_too_old(self):
        os.environ["FAKE_GPUS"] = "7.0 Tesla V100-SXM2-16GB"
        code, _, err = self.main()
        self.assertEqual(code, cli.EXIT_NO_GPU)
        self.assertIn("GPU 0, Tesla V100-SXM2-16GB (sm_70), is too old for the labs: they need compute capability "
                      "7.5 or newer", err)

    # --build-only runs nothing on a GPU; --allow-no-gpu grades anyway.
    def test_not_checked(self):
        self.cache("90-real")
        (self.tmp / "student").mkdir()
        self.assertIsNone(self.main("--build-only", "--student-dir", str(self.tmp / "student"))[0])
        self.assertIsNone(self.main("--allow-no-gpu")[0])

    def test_bad_cuda_arch(self):
        code, _, err = self.main("--cuda-arch", "sm_90")
        self.assertEqual(code, cli.EXIT_USAGE)
        self.assertIn("--cuda-arch 'sm_90' is not a CUDA architecture", err)
        self.assertEqual(len(err.strip().splitlines()), 1)

    # A submission cannot change what is checked: the pristine kit's build folder is read,
    # never a build folder or a manifest in the student's repository.
    def test_submission_cannot_widen(self):
        student = self.tmp / "student-repo"
        make_kit(student, ["vectorAdd"])
        for where in (student / "build" / "grader", student / "build" / "dev"):
            self.cache("all", where)
        (student / "manifest.json").write_text(json.dumps({"libraries": {}}))
        self.cache("90-real", self.root / "build" / "grader")
        self.assertRefused(self.main("--submission", str(student), "--pristine", str(self.root), "vectorAdd",
                                     build_dir=False),
                           f"the build folder {self.root / 'build' / 'grader'} (CMAKE_CUDA_ARCHITECTURES=90-real)")


class ProfileCheckTest(unittest.TestCase):
    """`python3 -m grader profile` does not start ncu on a GPU its build cannot run on."""

    def test_refused(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            root = make_kit(tmp / "kit", ["vectorAdd"])
            write_script(tmp / "build" / "bin" / "vectorAdd_bench", "print('bench')\n")
            (tmp / "build" / "CMakeCache.txt").write_text("CMAKE_CUDA_ARCHITECTURES:STRING=90-real\n")
            write_script(tmp / "smi" / "nvidia-smi", FAKE_SMI)
            ncu = write_script(tmp / "ncu", "import sys; open(sys.argv[0] + '.ran', 'w')\n")
            env = {"PATH": f"{tmp / 'smi'}{os.pathsep}{os.environ['PATH']}", "FAKE_GPUS": "8.6 NVIDIA A10"}
            out, err = io.StringIO(), io.StringIO()
            with mock.patch.dict(os.environ, env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                os.environ.pop("CUDA_VISIBLE_DEVICES", None)
                code = profile.main(["vectorAdd", "--root", str(root), "--build-dir", str(tmp / "build"),
                                     "--ncu", str(ncu)])
            self.assertEqual(code, profile.EXIT_UNAVAILABLE)
            self.assertIn("grader profile: error: GPU 0, NVIDIA A10 (sm_86), cannot run the build folder", err.getvalue())
            self.assertIn(f'cmake -B {tmp / "build"} -DCMAKE_CUDA_ARCHITECTURES="86" && cmake --build', err.getvalue())
            self.assertFalse((tmp / "ncu.ran").exists())


if __name__ == "__main__":
    unittest.main()
