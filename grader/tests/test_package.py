"""Tests of `python3 -m grader package` (grader/instructor/package.py).

- On small shared libraries made with the C compiler, holding a synthetic CUDA
  fatbinary: packaging a build folder, the manifest, --verify, and the inspection that
  refuses PTX, source paths and unstripped libraries.
- With nvcc: a library built as the kit builds (-lineinfo, PTX) is caught; one built
  through the package's compiler launcher and flags is clean (cuobjdump --list-ptx
  agrees, where it is installed: it needs no GPU).
- With nvcc and CMake: the package command builds a lab's reference in a throwaway
  clone of the kit; the packaged library holds machine code only, no PTX, no path of
  the kit (its bytes and `strings`), and the fallback architecture is warned about.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader.instructor import nvcc_shipping, package
from grader.tests.helpers import write_script

KIT = package.KIT_ROOT
CC = shutil.which("cc") or shutil.which("gcc")
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)


def fatbin(entries: list[tuple[int, int]], identifier: bytes = b"") -> bytes:
    """A CUDA fatbinary as nvcc lays it out: (kind, arch) entries, 1 = PTX, 2 = ELF."""
    body = b""
    for kind, arch in entries:
        payload = b"\x7fELF cubin" if kind == package.FATBIN_ELF else b".version 8.0\n.target sm_90\n"
        payload += b"\0" * (-len(payload) % 8)
        ident = identifier + b"\0" * (8 - len(identifier) % 8) if identifier else b""
        header = struct.pack("<HHIQIIII", kind, 0x101, 64 + len(ident), len(payload), 0, 0, 0x10008, arch)
        header += struct.pack("<IIQ", 64 if ident else 0, len(identifier), 0x11)
        body += header.ljust(64, b"\0") + ident + payload
    return struct.pack("<IHHQ", package.FATBIN_MAGIC, 1, 16, len(body)) + body


def c_library(path: Path, blob: bytes, extra: str = "", debug: bool = False) -> Path:
    """A shared library (C compiler) holding `blob` as data and naming libcudart.so.13."""
    source = path.with_suffix(".c")
    source.write_text('const char labkit_runtime[] __attribute__((used)) = "libcudart.so.13";\n'
                      "const unsigned char labkit_fatbin[] __attribute__((used, aligned(8))) = {"
                      + ",".join(str(b) for b in blob) + "};\n" + extra)
    subprocess.run([CC, "-shared", "-fPIC", *(["-g"] if debug else []), "-o", str(path), str(source)],
                   check=True, timeout=120)
    source.unlink()
    return path


# A fake cmake for `package --cuda-arch`: configure logs its arguments and writes a cache
# holding the architectures it was given; building `<lab>_solution` copies FAKE_LIBRARY
# into <build>/lib as that lab's reference.
FAKE_CMAKE = """
    import json, os, shutil, sys
    args = sys.argv[1:]
    open(os.environ["FAKE_CMAKE_LOG"], "a").write(json.dumps(args) + "\\n")
    if args[0] == "--build":
        os.makedirs(os.path.join(args[1], "lib"), exist_ok=True)
        for target in args[args.index("--target") + 1:]:
            lab = target[: -len("_solution")]
            shutil.copy(os.environ["FAKE_LIBRARY"], os.path.join(args[1], "lib", f"lib{lab}_solution.so"))
        sys.exit(0)
    build = args[args.index("-B") + 1]
    archs = [a.split("=", 1)[1] for a in args if a.startswith("-DCMAKE_CUDA_ARCHITECTURES=")][0]
    os.makedirs(build, exist_ok=True)
    open(os.path.join(build, "CMakeCache.txt"), "w").write(f"CMAKE_CUDA_ARCHITECTURES:STRING={archs}\\n")
"""
COURSE_GPUS = ["75", "80", "86", "89", "90"]  # T4, A100, A10, L4, H100


@unittest.skipUnless(CC, "needs a C compiler to make small shared libraries")
class PackageTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.build = self.tmp / "build"
        (self.build / "lib").mkdir(parents=True)
        for lab in ("vectorAdd", "scan"):
            c_library(self.build / "lib" / f"lib{lab}_solution.so", fatbin([(package.FATBIN_ELF, 90)]), debug=True)
        (self.build / "lib" / "liblabkit_common.a").write_bytes(b"not a reference")
        (self.build / "CMakeCache.txt").write_text(
            "# comment\nCMAKE_CUDA_ARCHITECTURES:STRING=90-real\nCMAKE_BUILD_TYPE:STRING=Release\n"
            f"CMAKE_PROJECT_VERSION:STATIC=0.1.0\nCMAKE_HOME_DIRECTORY:INTERNAL={self.tmp / 'kit'}\n")
        compiler = self.build / "CMakeFiles" / "3.28.3" / "CMakeCUDACompiler.cmake"
        compiler.parent.mkdir(parents=True)
        compiler.write_text('set(CMAKE_CUDA_COMPILER_VERSION "13.0.88")\n')
        self.out = self.tmp / "dist" / "reference.tar.gz"
        patcher = mock.patch.object(package, "gpu_architectures", return_value=[])  # whatever GPU runs the tests
        patcher.start()
        self.addCleanup(patcher.stop)

    def main(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = package.main(list(args))
        return code, out.getvalue(), err.getvalue()

    def make(self, *extra: str) -> dict:
        code, out, err = self.main("--build-dir", str(self.build), "--out", str(self.out), *extra)
        self.assertEqual(code, 0, out + err)
        with tarfile.open(self.out) as tar:
            return json.loads(tar.extractfile("manifest.json").read())

    # The archive holds the references and a manifest at its top level, nothing else;
    # the libraries are stripped copies (the build's own files are not touched).
    def test_package_and_manifest(self):
        manifest = self.make()
        with tarfile.open(self.out) as tar:
            self.assertEqual(sorted(tar.getnames()), ["libscan_solution.so", "libvectorAdd_solution.so", "manifest.json"])
            shipped = tar.extractfile("libscan_solution.so").read()
        self.assertEqual((manifest["schema"], manifest["version"]), ("labkit-reference", 1))
        self.assertEqual(manifest["cuda_architectures"], "90-real")
        self.assertEqual(manifest["nvcc_version"], "13.0.88")
        self.assertEqual(manifest["kit_version"], "0.1.0")
        self.assertFalse(manifest["fallback_architecture"])
        self.assertIn("created", manifest)
        self.assertIn("git_commit", manifest)
        lib = manifest["libraries"]["libscan_solution.so"]
        self.assertEqual((lib["lab"], lib["sass"], lib["ptx"], lib["stripped"]), ("scan", ["sm_90"], False, True))
        self.assertEqual(lib["sha256"], package.sha256(shipped))
        self.assertEqual(lib["cuda_runtime"], "libcudart.so.13")
        self.assertNotIn(".symtab", package.elf_sections(shipped))
        self.assertFalse(any(s.startswith(".debug") for s in package.elf_sections(shipped)))
        self.assertIn(".debug_info", package.elf_sections((self.build / "lib" / "libscan_solution.so").read_bytes()))

    def test_labs(self):
        manifest = self.make("--labs", "scan")
        self.assertEqual(list(manifest["libraries"]), ["libscan_solution.so"])
        code, _, err = self.main("--build-dir", str(self.build), "--out", str(self.out), "--labs", "sort")
        self.assertEqual(code, 2)
        self.assertIn("libsort_solution.so", err)

    # PTX, a path of the kit or of the build, or no machine code at all: nothing is written.
    def test_refuses_what_must_not_ship(self):
        lib = self.build / "lib" / "libscan_solution.so"
        cases = {
            "PTX in its fatbinary (compute_90)": fatbin([(package.FATBIN_ELF, 90), (package.FATBIN_PTX, 90)]),
            f"the path {self.tmp / 'kit'} appears": fatbin([(package.FATBIN_ELF, 90)], identifier=str(
                self.tmp / "kit" / "solutions" / "scan" / "scan.cu").encode()),
            "no machine code (SASS)": b"nothing",
        }
        for fragment, blob in cases.items():
            with self.subTest(fragment):
                c_library(lib, blob)
                code, _, err = self.main("--build-dir", str(self.build), "--out", str(self.out))
                self.assertEqual(code, 1)
                self.assertIn(f"problem: libscan_solution.so: {fragment}", err)
                self.assertIn("nothing written", err)
                self.assertFalse(self.out.exists())

    # --verify: the archive and an unpacked folder pass; a changed, missing or extra
    # library is named.
    def test_verify(self):
        self.make()
        code, out, _ = self.main("--verify", str(self.out))
        self.assertEqual(code, 0, out)
        self.assertIn("ok  libscan_solution.so (sm_90)", out)
        folder = self.tmp / "opt"
        with tarfile.open(self.out) as tar:
            tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        self.assertEqual(self.main("--verify", str(folder))[0], 0)
        with mock.patch.object(package, "gpu_architectures", return_value=["80"]):
            code, out, _ = self.main("--verify", str(folder))
        self.assertEqual(code, 1)
        self.assertIn("no machine code for this machine's GPU (sm_80; it has sm_90): package again with "
                      "--cuda-arch 80,90", out)

        (folder / "libscan_solution.so").write_bytes(b"tampered")
        (folder / "libvectorAdd_solution.so").unlink()
        (folder / "libsort_solution.so").write_bytes(b"extra")
        code, out, _ = self.main("--verify", str(folder))
        self.assertEqual(code, 1)
        self.assertIn("BAD libscan_solution.so: sha256 differs", out)
        self.assertIn("BAD libvectorAdd_solution.so: listed in the manifest but missing", out)
        self.assertIn("BAD libsort_solution.so: not in the manifest", out)

    # A course with several kinds of runners: one package, machine code for each GPU. The
    # configure command asks for each architecture as -real (no PTX), the manifest lists
    # them, and --verify passes on each of those GPUs (and an sm_87 one, which runs sm_86
    # code) but not on a newer one, which it names with the flag that fixes it.
    def test_several_architectures(self):
        kit = self.tmp / "kit"
        for folder in ("labs/vectorAdd", "solutions/vectorAdd"):
            (kit / folder).mkdir(parents=True)
        shutil.copy(KIT / "labs/vectorAdd/lab.json", kit / "labs/vectorAdd")  # a lab is a folder with its manifest
        tools = self.tmp / "tools"
        write_script(tools / "cmake", FAKE_CMAKE)
        log = self.tmp / "cmake.log"
        library = c_library(self.tmp / "built.so", fatbin([(package.FATBIN_ELF, int(a)) for a in COURSE_GPUS]))
        env = {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}", "FAKE_CMAKE_LOG": str(log),
               "FAKE_LIBRARY": str(library)}
        with mock.patch.dict(os.environ, env):
            code, out, err = self.main("--root", str(kit), "--out", str(self.out), "--cuda-arch", "75,80,86,89,90",
                                       "--labs", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        configure = json.loads(log.read_text().splitlines()[0])
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=75-real;80-real;86-real;89-real;90-real", configure)
        self.assertNotIn("warning", out)  # not the fallback
        self.assertIn("machine code for sm_75, sm_80, sm_86, sm_89, sm_90 only", out)
        with tarfile.open(self.out) as tar:
            manifest = json.loads(tar.extractfile("manifest.json").read())
        self.assertEqual(manifest["cuda_architectures"], "75-real;80-real;86-real;89-real;90-real")
        self.assertFalse(manifest["fallback_architecture"])
        self.assertEqual(manifest["libraries"]["libvectorAdd_solution.so"]["sass"], [f"sm_{a}" for a in COURSE_GPUS])
        for gpu_arch in [*COURSE_GPUS, "87"]:
            with self.subTest(gpu=gpu_arch), mock.patch.object(package, "gpu_architectures", return_value=[gpu_arch]):
                code, out, _ = self.main("--verify", str(self.out))
                self.assertEqual(code, 0, out)
                self.assertIn("ok  libvectorAdd_solution.so (sm_75, sm_80, sm_86, sm_89, sm_90)", out)
        with mock.patch.object(package, "gpu_architectures", return_value=["90", "120"]):
            code, out, _ = self.main("--verify", str(self.out))
        self.assertEqual(code, 1)
        self.assertIn("no machine code for this machine's GPU (sm_120; it has sm_75, sm_80, sm_86, sm_89, sm_90): "
                      "package again with --cuda-arch 75,80,86,89,90,120", out)

    def test_verify_not_a_package(self):
        (self.tmp / "empty").mkdir()
        code, out, _ = self.main("--verify", str(self.tmp / "empty"))
        self.assertEqual(code, 1)
        self.assertIn("no manifest.json", out)
        (self.tmp / "junk.tar.gz").write_bytes(b"junk")
        code, out, _ = self.main("--verify", str(self.tmp / "junk.tar.gz"))
        self.assertEqual(code, 1)
        self.assertIn("cannot read", out)

    def test_usage(self):
        empty = self.tmp / "empty-build"
        (empty / "lib").mkdir(parents=True)
        code, _, err = self.main("--build-dir", str(empty), "--out", str(self.out))
        self.assertEqual(code, 2)
        self.assertIn("build the references first", err)
        self.assertEqual(self.main("--build-dir", str(self.build))[0], 2)  # no --out
        self.assertEqual(self.main("--verify", str(self.tmp / "nowhere"))[0], 2)
        code, _, err = self.main()
        self.assertEqual(code, 2)
        self.assertIn("--out FILE is needed", err)
        code, _, err = self.main("--out", str(self.out), "--cuda-arch", "compute_90")
        self.assertEqual(code, 2)
        self.assertIn("is not a GPU architecture", err)
        code, _, err = self.main("--out", str(self.out), "--root", str(self.tmp))
        self.assertEqual(code, 2)
        self.assertIn("holds the reference solutions", err)
        code, _, err = self.main("--bogus")
        self.assertEqual(code, 2)
        self.assertIn("see --help", err)

    def test_cache_parsing(self):
        self.assertEqual(package.cmake_cache(self.build)["CMAKE_CUDA_ARCHITECTURES"], "90-real")
        self.assertEqual(package.cmake_cache(self.tmp / "nowhere"), {})


class ArchitectureTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(package.parse_architectures("90"), ["90"])
        self.assertEqual(package.parse_architectures("sm_80, 90-real;90a"), ["80", "90", "90a"])
        for bad in ("compute_90", "90-virtual", "native", "all", ""):
            with self.subTest(bad), self.assertRaises(ValueError):
                package.parse_architectures(bad)

    # No GPU and no --cuda-arch: the kit's fallback, with a warning that says what to pass.
    def test_choose(self):
        with mock.patch.object(package, "gpu_architectures", return_value=[]):
            archs, warning = package.choose_architectures(None, KIT)
        self.assertEqual(archs, package.fallback_architectures(KIT))
        self.assertIn("no GPU on this machine and no --cuda-arch", warning)
        self.assertIn("--cuda-arch 90", warning)
        with mock.patch.object(package, "gpu_architectures", return_value=["90"]):
            self.assertEqual(package.choose_architectures(None, KIT), (["90"], ""))
        self.assertEqual(package.choose_architectures("80", KIT), (["80"], ""))

    def test_parse_several(self):
        self.assertEqual(package.parse_architectures("75,80,86,89,90"), COURSE_GPUS)
        self.assertEqual(package.choose_architectures("75,80,86,89,90", KIT), (COURSE_GPUS, ""))

    # The fallback is the kit's list (LABKIT_FALLBACK_CUDA_ARCHITECTURES), as machine code:
    # a PTX-only entry is dropped; the warning names each and the GPUs it runs on.
    def test_fallback_list(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "cmake").mkdir()
            (root / "cmake" / "LabKitCudaArch.cmake").write_text(
                'set(LABKIT_FALLBACK_CUDA_ARCHITECTURES "75;80-real;90-virtual" CACHE STRING "doc")\n')
            self.assertEqual(package.fallback_architectures(root), ["75", "80"])
            with mock.patch.object(package, "gpu_architectures", return_value=[]):
                archs, warning = package.choose_architectures(None, root)
            self.assertEqual(archs, ["75", "80"])
            self.assertIn("fallback architectures sm_75, sm_80, whose machine code runs only on GPUs of compute "
                          "capability 7.x, 8.x", warning)
            (root / "cmake" / "LabKitCudaArch.cmake").unlink()
            self.assertEqual(package.fallback_architectures(root), ["75"])

    # package.runs_on is grader.arch.runs_on (grader/tests/test_arch.py has the full table).
    def test_runs_on(self):
        self.assertTrue(package.runs_on(["sm_80"], "86"))
        self.assertFalse(package.runs_on(["sm_86"], "80"))
        self.assertFalse(package.runs_on(["sm_75"], "90"))
        self.assertTrue(package.runs_on(["sm_90a"], "90"))

    def test_launcher_and_flags(self):
        self.assertEqual(nvcc_shipping.command(["nvcc", "-O3", "-lineinfo", "-G", "--device-debug",
                                                "--generate-line-info", "-c", "a.cu"]), ["nvcc", "-O3", "-c", "a.cu"])
        command = package.configure_command(Path("/kit"), Path("/tmp/b"), ["80", "90"], ["scan"])
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=80-real;90-real", command)
        self.assertIn("-DLABKIT_BUILD_TESTS=OFF", command)
        self.assertIn("-DLABKIT_LABS=scan", command)
        self.assertIn("-DCMAKE_CUDA_FLAGS=-Xcompiler=-ffile-prefix-map=/kit/=,-ffile-prefix-map=/tmp/b/=", command)
        self.assertTrue(any(arg.startswith("-DCMAKE_CUDA_COMPILER_LAUNCHER=") and arg.endswith("nvcc_shipping.py")
                            for arg in command))


def strings_of(path: Path) -> str:
    """binutils' `strings -a` of a file ('' without binutils: the byte search still runs)."""
    tool = shutil.which("strings")
    return subprocess.run([tool, "-a", str(path)], capture_output=True, text=True, timeout=60).stdout if tool else ""


@unittest.skipUnless(NVCC and CC, "needs nvcc")
class NvccTest(unittest.TestCase):
    """A kernel compiled as the kit compiles (-lineinfo, PTX) and as the package does."""

    KERNEL = ('#include <cstdio>\n__global__ void add(float* a) { a[threadIdx.x] += 1.0f; }\n'
              'void run(float* a) { add<<<1, 32>>>(a); std::printf("%s\\n", __FILE__); }\n')

    def compile(self, where: Path, *flags: str, launcher: bool = False) -> Path:
        source = where / "src" / "kernel.cu"
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(self.KERNEL)
        obj, lib = where / "kernel.o", where / "libkernel.so"
        prefix = [sys.executable, nvcc_shipping.__file__] if launcher else []
        subprocess.run([*prefix, NVCC, "-O3", "-Xcompiler=-fPIC", *flags, "-c", str(source), "-o", str(obj)],
                       check=True, timeout=300, capture_output=True)
        subprocess.run([NVCC, "-shared", "-o", str(lib), str(obj)], check=True, timeout=300, capture_output=True)
        return lib

    def test_kit_flags_leak_and_package_flags_do_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            leaky = self.compile(tmp / "kit", "-lineinfo", "--generate-code=arch=compute_75,code=[compute_75,sm_75]")
            problems, sass = package.inspect(leaky.read_bytes(), [str(tmp)], leaky)
            self.assertEqual(sass, ["sm_75"])
            self.assertTrue(any(p.startswith("PTX in its fatbinary (compute_75)") for p in problems), problems)
            self.assertTrue(any(p.startswith("PTX text") for p in problems), problems)
            self.assertTrue(any(f"the path {tmp}" in p for p in problems), problems)
            if shutil.which("strings"):
                self.assertIn(str(tmp), strings_of(leaky))
            listed = package.listed_ptx(leaky)
            if listed is not None:  # cuobjdump installed: it sees the PTX too
                self.assertTrue(listed)

            shipped = tmp / "ship" / "libkernel.so"
            clean = self.compile(tmp / "ship", "-lineinfo", "--generate-code=arch=compute_75,code=[sm_75]",
                                 f"-Xcompiler=-ffile-prefix-map={tmp}/=", launcher=True)
            self.assertEqual(package.strip(clean, shipped.with_name("stripped.so")), "")
            shipped = shipped.with_name("stripped.so")
            problems, sass = package.inspect(shipped.read_bytes(), [str(tmp)], shipped)
            self.assertEqual((problems, sass), ([], ["sm_75"]))
            self.assertNotIn(str(tmp), strings_of(shipped))
            self.assertNotIn(b"ld.global", shipped.read_bytes())
            listed = package.listed_ptx(shipped)
            self.assertIn(listed, (None, []))


def can_build_kit() -> str:
    missing = [tool for tool in ("git", "cmake", "strip") if not shutil.which(tool)]
    if shutil.which("git") and (not (KIT / ".git").exists() or subprocess.run(
            ["git", "-C", str(KIT), "rev-parse", "HEAD"], capture_output=True, timeout=60).returncode != 0):
        missing.append("a git checkout of the kit that git can read")
    if not NVCC:
        missing.append("nvcc")
    return ", ".join(missing)


@unittest.skipIf(can_build_kit(), f"needs {can_build_kit()} to build a reference")
class PackageBuildTest(unittest.TestCase):
    """`python3 -m grader package` end to end on a throwaway clone of the kit (one lab)."""

    def test_build_and_package(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            clone = tmp / "kit"
            subprocess.run(["git", "clone", "-q", "--shared", str(KIT), str(clone)], check=True, timeout=120)
            out = tmp / "labkit-reference.tar.gz"
            stdout, stderr = io.StringIO(), io.StringIO()
            env = {"PATH": f"{Path(NVCC).parent}{os.pathsep}{os.environ['PATH']}"}
            with mock.patch.dict(os.environ, env), mock.patch.object(package, "gpu_architectures", return_value=[]), \
                    contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = package.main(["--root", str(clone), "--out", str(out), "--labs", "vectorAdd"])
            self.assertEqual(code, 0, stdout.getvalue() + stderr.getvalue())
            arch = package.fallback_architectures(clone)[0]
            self.assertIn(f"warning: no GPU on this machine and no --cuda-arch: the references are built for the "
                          f"fallback architecture sm_{arch}", stdout.getvalue())
            with tarfile.open(out) as tar:
                manifest = json.loads(tar.extractfile("manifest.json").read())
                tar.extract("libvectorAdd_solution.so", tmp / "opt",
                            **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
            lib = tmp / "opt" / "libvectorAdd_solution.so"
            data = lib.read_bytes()
            entry = manifest["libraries"]["libvectorAdd_solution.so"]
            self.assertEqual((entry["sass"], manifest["cuda_architectures"], manifest["fallback_architecture"]),
                             ([f"sm_{arch}"], f"{arch}-real", True))
            # No PTX: no PTX entry in the fatbinary, no PTX text, none for cuobjdump.
            self.assertFalse([e for e in package.fatbin_entries(data) if e.kind == package.FATBIN_PTX])
            self.assertNotIn(b"ld.global", data)
            self.assertNotIn(b".target sm_", data)
            self.assertIn(package.listed_ptx(lib), (None, []))
            # No path of the kit (the clone, or the kit it came from) in its bytes or its strings.
            for path in (str(clone), str(KIT), str(Path(tempfile.gettempdir()) / "labkit-package-build-")):
                self.assertNotIn(path.encode(), data)
                self.assertNotIn(path, strings_of(lib))
            self.assertNotIn(".symtab", package.elf_sections(data))
            self.assertEqual(package.inspect(data, [str(clone), str(KIT)], lib)[0], [])


if __name__ == "__main__":
    unittest.main()
