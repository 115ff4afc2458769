"""Tests of grader.build: error extraction, and configure/build through a fake cmake."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader import build, proc
from grader.tests.helpers import write_script

NVCC_OUTPUT = """\
[1/4] Building CUDA object labs/scan/CMakeFiles/scan.dir/scan.cu.o
FAILED: labs/scan/CMakeFiles/scan.dir/scan.cu.o
/usr/local/cuda/bin/nvcc -forward-unknown-to-host-compiler -Werror all-warnings -c /kit/labs/scan/scan.cu
/kit/labs/scan/scan.cu(42): error: identifier "tmp" is undefined
      out[i] = tmp;
               ^
/kit/labs/scan/scan.cu(57): error: expected a ";"
2 errors detected in the compilation of "/kit/labs/scan/scan.cu".
ninja: build stopped: subcommand failed.
"""

# A fake cmake: configure writes CMakeCache.txt and logs its arguments; --build fails
# for targets named in FAIL_TARGETS with a compiler error, else succeeds.
FAKE_CMAKE = """
    import json, os, sys
    args = sys.argv[1:]
    open(os.environ["FAKE_CMAKE_LOG"], "a").write(json.dumps(args) + "\\n")
    if args[0] == "--build":
        bad = [t for t in args[3:] if t in os.environ.get("FAIL_TARGETS", "").split()]
        if bad:
            print("/kit/labs/x/x.cu:3:5: error: 'y' was not declared in this scope")
            sys.exit(1)
        sys.exit(0)
    build = args[args.index("-B") + 1]
    os.makedirs(build, exist_ok=True)
    open(os.path.join(build, "CMakeCache.txt"), "w").write("# fake\\n")
"""


class FirstErrorsTest(unittest.TestCase):
    def test_nvcc(self):
        errors = build.first_errors(NVCC_OUTPUT)
        self.assertEqual(errors.splitlines(), [
            '/kit/labs/scan/scan.cu(42): error: identifier "tmp" is undefined',
            '/kit/labs/scan/scan.cu(57): error: expected a ";"'])

    def test_gcc(self):
        out = "In file included from a.cu:1:\nb.h:3:5: error: 'x' was not declared\n   3 | x;\n"
        self.assertEqual(build.first_errors(out), "b.h:3:5: error: 'x' was not declared")

    def test_linker(self):
        out = "/usr/bin/ld: scan.o: in function `f':\nscan.cu:(.text+0x1): undefined reference to `g'\n" \
              "collect2: error: ld returned 1 exit status\n"
        self.assertIn("undefined reference to `g'", build.first_errors(out))

    def test_cmake_error_keeps_explanation(self):
        out = ("-- The CXX compiler identification is GNU\nCMake Error at CMakeLists.txt:5 (project):\n"
               "  No CMAKE_CUDA_COMPILER could be found.\n\n-- Configuring incomplete, errors occurred!\n")
        errors = build.first_errors(out)
        self.assertTrue(errors.startswith("CMake Error at CMakeLists.txt:5"))
        self.assertIn("No CMAKE_CUDA_COMPILER", errors)

    def test_fallback_and_limit(self):
        self.assertEqual(build.first_errors("a\nb\nc\n", limit=2), "b\nc")
        many = "\n".join(f"f.cu({i}): error: e{i}" for i in range(40))
        self.assertEqual(len(build.first_errors(many).splitlines()), build.MAX_ERROR_LINES)


class FakeCmakeTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)
        write_script(self.dir / "tools" / "cmake", FAKE_CMAKE)
        self.log = self.dir / "cmake.log"
        env = {"PATH": f"{self.dir / 'tools'}{os.pathsep}{os.environ['PATH']}", "FAKE_CMAKE_LOG": str(self.log)}
        patcher = mock.patch.dict(os.environ, env)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.build_dir = self.dir / "build"

    def calls(self) -> list[list[str]]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    # Configure runs once, again only when its arguments change.
    def test_configure_once_per_arguments(self):
        args = build.configure_args(self.dir, self.build_dir, solutions=False, cuda_arch=None)
        self.assertIn("-DCMAKE_BUILD_TYPE=Release", args)
        self.assertNotIn("-DLABKIT_BUILD_SOLUTIONS=ON", args)
        self.assertTrue(build.configure(args, self.build_dir, 20).ok)
        self.assertTrue(build.configure(args, self.build_dir, 20).ok)
        self.assertEqual(len(self.calls()), 1)
        changed = build.configure_args(self.dir, self.build_dir, solutions=True, cuda_arch="90")
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=90", changed)
        self.assertIn("-DLABKIT_BUILD_SOLUTIONS=ON", changed)
        self.assertTrue(build.configure(changed, self.build_dir, 20).ok)
        self.assertEqual(len(self.calls()), 2)

    def test_build_error(self):
        os.environ["FAIL_TARGETS"] = "scan_test"
        result = build.build_targets(self.build_dir, ["scan_test", "scan_bench"], 20, root=Path("/kit"))
        self.assertFalse(result.ok)
        self.assertEqual(result.message, "compilation failed:\nlabs/x/x.cu:3:5: error: 'y' was not declared in this scope")
        self.assertTrue(result.command.startswith("cmake --build "), result.command)
        self.assertTrue(result.command.endswith("--target scan_test scan_bench"), result.command)

    def test_cmake_missing(self):
        with mock.patch("grader.build.shutil.which", return_value=None):
            result = build.configure(["cmake", "-S", ".", "-B", "b"], self.build_dir, 20)
        self.assertFalse(result.ok)
        self.assertIn("cmake not found", result.message)
        self.assertIn("install CMake", result.message)


if __name__ == "__main__":
    unittest.main()


class ForeignMessagesTest(unittest.TestCase):
    """A failed compile's messages reach the report only when they are about the student's files."""

    def test_only_own_files(self):
        from grader import config, grade
        from grader.stages import building
        options = grade.Options(root=Path("/kit"), build_dir=Path("/b"), impl="student", seed=1,
                                config=config.from_dict({}, None), student_root=Path("/s"))
        own = ["labs/vectorAdd/vectorAdd.cu"]
        ok = ("labs/vectorAdd/vectorAdd.cu:2:10: fatal error: vectorAd.cuh: No such file or directory\n"
              "/s/submission/labs/vectorAdd/vectorAdd.cu(3): error: identifier \"x\" is undefined\n"
              "compilation terminated.")
        self.assertTrue(building.only_own_files(ok, options, own))
        for other in ("/etc/passwd(1): error: this declaration has no storage class",
                      "In file included from /home/someone/secret.h:1,",
                      "../../secret.txt:1:1: error: expected unqualified-id"):
            with self.subTest(other=other):
                self.assertFalse(building.only_own_files(ok + "\n" + other, options, own))



class StudentCommandsTest(unittest.TestCase):
    """build.student_commands reads the student library's commands from Ninja."""

    def test_a_compiler_launcher_is_left_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            kit = base / "kit"
            (kit / "labs" / "x").mkdir(parents=True)
            (kit / "labs" / "x" / "x.cu").write_text("")
            fake = base / "bin" / "ninja"
            fake.parent.mkdir()
            compile_line = (f"/usr/bin/ccache /usr/local/cuda/bin/nvcc -Ifoo -c {kit}/labs/x/x.cu "
                            "-o labs/x.cu.o")
            link_line = ": && /usr/bin/c++ -shared -o lib/libx_student.so labs/x.cu.o && :"
            fake.write_text(f"#!/bin/sh\necho '{compile_line}'\necho '{link_line}'\n")
            fake.chmod(0o755)
            with mock.patch.dict(os.environ, {"PATH": f"{fake.parent}:{os.environ['PATH']}"}):
                commands = build.student_commands(base / "build", "x", kit)
            self.assertEqual(commands.compile[0], "/usr/local/cuda/bin/nvcc")
            self.assertEqual(commands.object, "labs/x.cu.o")
            self.assertEqual(commands.link, [["/usr/bin/c++", "-shared", "-o", "lib/libx_student.so", "labs/x.cu.o"]])


@unittest.skipUnless(proc.Jail.abi() >= 1 and shutil.which("nvcc") or Path("/usr/local/cuda/bin/nvcc").is_file(),
                     "needs Landlock and nvcc")
class CompileJailTest(unittest.TestCase):
    """A student's compile inside build.compile_jail: the kit's headers yes, other files no."""

    def test_an_outside_file_cannot_be_read_while_compiling(self):
        if proc.Jail.abi() < 1:
            self.skipTest("this kernel has no Landlock")
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        kit = Path(__file__).resolve().parents[2]
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            secret = base / "elsewhere" / "secret.h"
            secret.parent.mkdir()
            secret.write_text("int secret = 1;\n")
            source = base / "sub" / "labs" / "vectorAdd" / "vectorAdd.cu"
            source.parent.mkdir(parents=True)
            commands = build.StudentCommands(
                compile=[nvcc, f"-I{kit / 'labs' / 'vectorAdd'}", f"-I{kit / 'common' / 'include'}", "-x", "cu",
                         "-c", "SOURCE", "-o", "OBJECT"],
                link=[], source="SOURCE", object="OBJECT", library="LIBRARY")
            for text, ok in (('#include "vectorAdd.h"\n#include "lab/buffer.h"\nint x;\n', True),
                             (f'#include "vectorAdd.h"\n#include "{secret}"\n', False)):
                source.write_text(text)
                with self.subTest(ok=ok):
                    (base / "build").mkdir(exist_ok=True)  # the kit's build folder: readable, the rest not
                    built = build.build_student(base / "build", commands, source, base / "out", "vectorAdd",
                                                timeout=300, jail=True)
                    self.assertEqual(built.ok, ok, built.message)
                    if not ok:
                        self.assertIn("Permission denied", built.message)
                    unjailed = build.build_student(base / "build", commands, source, base / "out2", "vectorAdd",
                                                   timeout=300)
                    self.assertTrue(unjailed.ok, unjailed.message)  # the file itself is fine

    def test_a_host_compiler_outside_the_system_folders_runs(self):
        # CMake may hand nvcc a host compiler of its own (-ccbin=/opt/gcc/bin/g++) and link with
        # it: the jail lets the folder above its bin/ be read and run, and no more of the machine.
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        host = shutil.which("g++")
        if host is None:
            self.skipTest("no g++")
        kit = Path(__file__).resolve().parents[2]
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            wrapper = base / "gcc" / "bin" / "g++"
            wrapper.parent.mkdir(parents=True)
            (base / "gcc" / "libexec").mkdir()  # an installed compiler's layout
            wrapper.write_text(f'#!/bin/sh\nexec {host} "$@"\n')
            wrapper.chmod(0o755)
            source = base / "sub" / "labs" / "vectorAdd" / "vectorAdd.cu"
            source.parent.mkdir(parents=True)
            source.write_text('#include "vectorAdd.h"\nint x;\n')
            (base / "build").mkdir()
            commands = build.StudentCommands(
                compile=[nvcc, f"-ccbin={wrapper}", f"-I{kit / 'labs' / 'vectorAdd'}", "-Xcompiler=-fPIC", "-x", "cu",
                         "-c", "SOURCE", "-o", "OBJECT"],
                # CMake 3.27+ has the linker write a dependency file into the build folder.
                link=[[str(wrapper), "-shared", "-Wl,--dependency-file=labs/x.dir/link.d", "-o", "LIBRARY",
                       "OBJECT"]], source="SOURCE", object="OBJECT", library="LIBRARY")
            (base / "build" / "labs" / "x.dir").mkdir(parents=True)
            built = build.build_student(base / "build", commands, source, base / "out", "vectorAdd", timeout=300,
                                        jail=True)
            self.assertTrue(built.ok, built.message)
            self.assertTrue((base / "out" / "link.d").is_file())  # in the output folder, not the kit's build
            self.assertFalse((base / "build" / "labs" / "x.dir" / "link.d").exists())
            self.assertIn(str(base / "gcc"), build.compile_jail(base / "build", commands, source, base / "out").readable)

            # A wrapper script in a folder that is no compiler's installation (~/bin, say):
            # the script itself may run, and nothing else there may be read.
            other = base / "home" / "bin" / "g++"
            other.parent.mkdir(parents=True)
            other.write_text(wrapper.read_text())
            other.chmod(0o755)
            secret = base / "home" / "bin" / "grades.csv"
            secret.write_text("alice,100\n")
            commands.compile[1] = f"-ccbin={other}"
            commands.link[0][0] = str(other)
            jail = build.compile_jail(base / "build", commands, source, base / "out2")
            self.assertIn(str(other), jail.readable)
            self.assertNotIn(str(base / "home"), jail.readable)
            self.assertNotIn(str(other.parent), jail.readable)
            built = build.build_student(base / "build", commands, source, base / "out2", "vectorAdd", timeout=300,
                                        jail=True)
            self.assertTrue(built.ok, built.message)
            source.write_text(f'#include "vectorAdd.h"\n#include "{secret}"\n')
            built = build.build_student(base / "build", commands, source, base / "out3", "vectorAdd", timeout=300,
                                        jail=True)
            self.assertFalse(built.ok)
            self.assertIn("Permission denied", built.message)

    def test_the_verdict_is_kept_for_a_class_and_tried_again_for_new_rules(self):
        from grader import config, grade
        from grader.stages import building
        nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        kit = Path(__file__).resolve().parents[2]
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            (base / "build").mkdir()
            commands = build.StudentCommands(
                compile=[nvcc, f"-I{kit / 'labs' / 'vectorAdd'}", f"-I{kit / 'common' / 'include'}", "-x", "cu",
                         "-c", "SOURCE", "-o", "OBJECT"],
                link=[], source="SOURCE", object="OBJECT", library="LIBRARY")
            built = grade.KitBuild()
            built.commands["vectorAdd"] = commands

            def verdict(student: str) -> tuple[tuple[bool, str], int]:
                options = grade.Options(root=kit, build_dir=base / "build", impl="student", seed=1,
                                        config=config.from_dict({}, None), student_root=base / student)
                with mock.patch.object(build, "build_student", wraps=build.build_student) as tried:
                    got = building.compile_jail(options, built, "vectorAdd", proc.Limits())
                return got, tried.call_count

            self.assertEqual(verdict("alice"), ((True, ""), 1))  # tried once, with the kit's own file
            self.assertEqual(verdict("bob"), ((True, ""), 0))  # another student of the class: kept
            commands.compile.insert(1, f"-I{base}")  # the jail would open another folder
            self.assertEqual(verdict("carol"), ((True, ""), 1))

    def test_the_self_tests_note_names_the_cause(self):
        out = "labs/x.cu(3): warning: fine\n/opt/gcc/bin/g++: Permission denied\ncollect2: error: ld returned 1 exit status"
        self.assertEqual(build.first_cause("linking failed:\n" + out), "/opt/gcc/bin/g++: Permission denied")
        self.assertEqual(build.first_cause("compilation failed:\nsomething odd"), "something odd")
        self.assertEqual(build.first_cause(""), "no message")

    def test_what_the_jail_lets_read(self):
        # A fake machine in a temporary folder, so that what this host has installed (an
        # /opt/gcc of its own, say) cannot change the answer: a toolkit, a bare g++ in a
        # bin/ folder, a linker inside a real-looking installation (libexec/ beside bin/).
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(os.path.realpath(tmp))
            nvcc, gxx, linker = root / "opt/cuda/bin/nvcc", root / "opt/gcc/bin/g++", root / "opt/ld/bin/c++"
            for program in (nvcc, gxx, linker):
                write_script(program, "")
            (root / "opt/ld/libexec").mkdir()
            kit = root / "kit"
            commands = build.StudentCommands(compile=[str(nvcc), f"-ccbin={gxx}", f"-I{kit}/labs/x",
                                                      f"-isystem={kit}/inc", "-isystem", f"{kit}/sys", "-c", "s", "-o", "o"],
                                             link=[[str(linker), "-o", "l", "o"]], source="s", object="o", library="l")
            jail = build.compile_jail(Path("/b"), commands, Path("/w/labs/x/x.cu"), Path("/o"))
            for path in ("/usr", "/b", "/w/labs/x", root / "opt/cuda", gxx, linker, root / "opt/ld",
                         kit / "labs/x", kit / "inc", kit / "sys"):
                self.assertIn(str(path), jail.readable)
            # Not the kit's other folders, not /opt as a whole, not the folder above a bare
            # g++ (no compiler installation there), not a home folder.
            for path in (kit, root / "opt", root / "opt/gcc", root / "opt/gcc/bin", Path.home()):
                self.assertNotIn(str(path), jail.readable)
            self.assertEqual(jail.writable, ["/o", "/dev/null"])
