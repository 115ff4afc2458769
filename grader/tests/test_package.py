"""Tests of `python3 -m grader package` (grader/package.py) on a fake build folder."""

from __future__ import annotations

import contextlib
import io
import json
import tarfile
import tempfile
import unittest
from pathlib import Path

from grader import package


class PackageTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.build = self.tmp / "build"
        (self.build / "lib").mkdir(parents=True)
        for lab in ("vectorAdd", "scan"):
            (self.build / "lib" / f"lib{lab}_solution.so").write_bytes(b"\x7fELF fake " + lab.encode()
                                                                       + b" needs libcudart.so.13\0")
        (self.build / "lib" / "liblabkit_common.a").write_bytes(b"not a reference")
        (self.build / "CMakeCache.txt").write_text(
            "# comment\nCMAKE_CUDA_ARCHITECTURES:STRING=90\nCMAKE_BUILD_TYPE:STRING=Release\n"
            "CMAKE_PROJECT_VERSION:STATIC=0.1.0\n")
        compiler = self.build / "CMakeFiles" / "3.28.3" / "CMakeCUDACompiler.cmake"
        compiler.parent.mkdir(parents=True)
        compiler.write_text('set(CMAKE_CUDA_COMPILER_VERSION "13.0.88")\n')
        self.out = self.tmp / "dist" / "reference.tar.gz"

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

    # The archive holds the references and a manifest at its top level, nothing else.
    def test_package_and_manifest(self):
        manifest = self.make()
        with tarfile.open(self.out) as tar:
            self.assertEqual(sorted(tar.getnames()), ["libscan_solution.so", "libvectorAdd_solution.so", "manifest.json"])
        self.assertEqual((manifest["schema"], manifest["version"]), ("labkit-reference", 1))
        self.assertEqual(manifest["cuda_architectures"], "90")
        self.assertEqual(manifest["nvcc_version"], "13.0.88")
        self.assertEqual(manifest["kit_version"], "0.1.0")
        self.assertIn("created", manifest)
        self.assertIn("git_commit", manifest)
        lib = manifest["libraries"]["libscan_solution.so"]
        self.assertEqual(lib["lab"], "scan")
        self.assertEqual(lib["sha256"], package.sha256((self.build / "lib" / "libscan_solution.so").read_bytes()))
        self.assertEqual(lib["cuda_runtime"], "libcudart.so.13")

    def test_labs(self):
        manifest = self.make("--labs", "scan")
        self.assertEqual(list(manifest["libraries"]), ["libscan_solution.so"])
        code, _, err = self.main("--build-dir", str(self.build), "--out", str(self.out), "--labs", "sort")
        self.assertEqual(code, 2)
        self.assertIn("libsort_solution.so", err)

    # --verify: the archive and an unpacked folder pass; a changed, missing or extra
    # library is named.
    def test_verify(self):
        self.make()
        code, out, _ = self.main("--verify", str(self.out))
        self.assertEqual(code, 0, out)
        self.assertIn("ok  libscan_solution.so", out)
        folder = self.tmp / "opt"
        with tarfile.open(self.out) as tar:
            tar.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        self.assertEqual(self.main("--verify", str(folder))[0], 0)

        (folder / "libscan_solution.so").write_bytes(b"tampered")
        (folder / "libvectorAdd_solution.so").unlink()
        (folder / "libsort_solution.so").write_bytes(b"extra")
        code, out, _ = self.main("--verify", str(folder))
        self.assertEqual(code, 1)
        self.assertIn("BAD libscan_solution.so: sha256 differs", out)
        self.assertIn("BAD libvectorAdd_solution.so: listed in the manifest but missing", out)
        self.assertIn("BAD libsort_solution.so: not in the manifest", out)

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
        self.assertIn("see --help", err)

    def test_cache_parsing(self):
        self.assertEqual(package.cmake_cache(self.build)["CMAKE_CUDA_ARCHITECTURES"], "90")
        self.assertEqual(package.cmake_cache(self.tmp / "nowhere"), {})


if __name__ == "__main__":
    unittest.main()
