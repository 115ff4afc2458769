"""The kit as a newcomer meets it: a fresh copy, the README's student steps run exactly
as written, and a new lab added as one folder.

Both tests build on one copy of the kit (made once for the class): the README's student
block (vectorAdd), then the throwaway lab of fixtures/newlab/ (labs/negate/ with its
manifest, and solutions/negate/), which CMake must build, CTest test and the grader grade
by name with no other file touched. They need CMake, Ninja and nvcc; without a GPU the
GPU steps skip (the programs say so) and the labs grade NO_GPU. Building the common
library and two labs takes a few minutes on two cores. LABKIT_FRESH_KIT=0 skips them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

KIT = Path(__file__).resolve().parents[2]
NEWLAB = Path(__file__).resolve().parent / "fixtures" / "newlab"
TIMEOUT_S = 1800
NO_GPU_EXIT = 3  # the grader and the bench say "no GPU" with this status


def tools_missing() -> str:
    for name in ("cmake", "ninja"):
        if not shutil.which(name):
            return f"{name} not found"
    if not shutil.which("nvcc") and not Path("/usr/local/cuda/bin/nvcc").exists():
        return "nvcc not found"
    return ""


def readme_student_commands() -> list[str]:
    """The commands of the README's code block under "## For students"."""
    text = (KIT / "README.md").read_text()
    section = text.split("## For students", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"\n((?:    .*\n)+)", section)
    assert block, "the README's student section has no indented command block"
    commands = []
    for line in block.group(1).splitlines():
        command = line.strip().split("  #", 1)[0].strip()
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


@unittest.skipIf(os.environ.get("LABKIT_FRESH_KIT", "1") == "0", "LABKIT_FRESH_KIT=0")
class FreshKitTest(unittest.TestCase):
    tmp: tempfile.TemporaryDirectory[str]
    kit: Path

    @classmethod
    def setUpClass(cls) -> None:
        missing = tools_missing()
        if missing:
            raise unittest.SkipTest(f"{missing}: building the kit needs CMake, Ninja and nvcc")
        cls.tmp = tempfile.TemporaryDirectory(prefix="labkit-fresh-")
        cls.kit = Path(cls.tmp.name) / "kit"
        shutil.copytree(KIT, cls.kit, ignore=shutil.ignore_patterns("build", ".git", "__pycache__", "probe"))

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def run_in_kit(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LABKIT_")}
        if not shutil.which("nvcc"):
            env["PATH"] = "/usr/local/cuda/bin:" + env["PATH"]
        return subprocess.run(args, cwd=self.kit, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)

    def test_1_readme_student_steps(self):
        gpu = shutil.which("nvidia-smi") is not None and subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, timeout=60).returncode == 0
        commands = readme_student_commands()
        self.assertTrue(commands[0].startswith("cmake --preset dev"), commands)
        for command in commands:
            args = shlex.split(command)
            if args[0] == "python3":
                args[0] = sys.executable
            done = self.run_in_kit(args)
            out = done.stdout[-3000:] + done.stderr[-3000:]
            self.assertNotIn("No tests were found", out, command)
            self.assertNotIn("Traceback", out, command)
            if args[0] == "cmake":
                self.assertEqual(done.returncode, 0, f"{command}\n{out}")
            elif command.startswith("./") and command.endswith("_test"):
                # The skeleton: its GPU tests fail on a GPU, skip without one.
                self.assertEqual(done.returncode, 1 if gpu else 0, f"{command}\n{out}")
            elif command.startswith("./") and command.endswith("_bench"):
                self.assertIn(done.returncode, (0, 1) if gpu else (NO_GPU_EXIT,), f"{command}\n{out}")
            elif "-m grader profile" in command:
                # Without a GPU it says so; with one, ncu profiles the skeleton (0) or finds
                # no kernel of it (1).
                self.assertIn(done.returncode, (0, 1) if gpu else (NO_GPU_EXIT,), f"{command}\n{out}")
                if not gpu:
                    self.assertIn("no usable GPU", out)
            elif "-m grader" in command:
                self.assertEqual(done.returncode, 1 if gpu else NO_GPU_EXIT, f"{command}\n{out}")
                if not gpu:
                    self.assertIn("no usable GPU", out)
            elif args[0] == "ctest":
                self.assertEqual(done.returncode, 8 if gpu else 0, f"{command}\n{out}")  # 8: tests failed
                self.assertIn("vectorAdd.student", out)

    def test_2_new_lab_is_one_folder(self):
        shutil.copytree(NEWLAB, self.kit, dirs_exist_ok=True)  # the new folders: nothing else changes
        build = self.kit / "build" / "dev"
        done = self.run_in_kit(["cmake", "--preset", "dev", "-DLABKIT_LABS=vectorAdd;negate"])
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        done = self.run_in_kit(["cmake", "--build", "--preset", "dev"])
        self.assertEqual(done.returncode, 0, done.stdout[-3000:] + done.stderr[-3000:])
        for program in ("negate_test", "negate_bench", "negate_judge_test", "negate_judge_bench", "negate_worker",
                        "negate_solution_test"):
            self.assertTrue((build / "bin" / program).is_file(), program)

        # Tested by CTest: the solution's tests, the judge's, and the manifest check.
        done = self.run_in_kit(["ctest", "--preset", "dev", "-R", "^negate\\."])
        out = done.stdout[-3000:] + done.stderr[-3000:]
        self.assertEqual(done.returncode, 0, out)
        for test in ("negate.manifest", "negate.judge.cpu", "negate.solution.gpu"):
            self.assertIn(test, out)

        # Known to the grader by name, last in course order; graded.
        done = self.run_in_kit([sys.executable, "-m", "grader.manifest", "--root", str(self.kit)])
        self.assertEqual(done.stdout.split()[-2:], ["negate", "negate"], done.stdout)
        report = self.kit / "report.json"
        done = self.run_in_kit([sys.executable, "-m", "grader", "--allow-no-gpu", "--no-sanitizer", "--skip-bench",
                                "--seed", "3", "--json", str(report), "negate"])
        self.assertIn(done.returncode, (0, 1), done.stdout[-3000:] + done.stderr[-3000:])
        labs = json.loads(report.read_text())["labs"]
        self.assertEqual([lab["lab"] for lab in labs], ["negate"])
        self.assertIn(labs[0]["status"], ("NO_GPU", "PARTIAL"), labs[0]["message"])
        self.assertEqual(labs[0]["correctness"]["points"], 0)


if __name__ == "__main__":
    unittest.main()
