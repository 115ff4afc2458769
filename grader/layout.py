"""Where everything of a build lies: the Python mirror of cmake/LabKit.cmake and
CONTRACT.md ("Build").

Every name of a build artefact the grader uses is spelled here and nowhere else in
grader/: the CMake targets of a lab, the programs in <build>/bin/ and the libraries in
<build>/lib/ they make, and the grader's own folders and files beside them (a
submission's libraries, raw results, checks, caches). Change a name here together with
cmake/LabKit.cmake and CONTRACT.md.
"""

from __future__ import annotations

import re
from pathlib import Path

# Outputs of a CMake build of the kit (CONTRACT.md "Build").
CMAKE_CACHE = "CMakeCache.txt"  # what a build folder was configured with
BIN = "bin"  # executables
LIB = "lib"  # shared libraries

# The roles of a lab's implementation, as the targets and files name them.
STUDENT = "student"
SOLUTION = "solution"


# ---- CMake targets of a lab ----------------------------------------------------------

def judge_test(lab: str) -> str:
    """The judge's test program (tests linked with a proxy of <lab>.h: no implementation)."""
    return f"{lab}_judge_test"


def judge_bench(lab: str) -> str:
    """The judge's bench program."""
    return f"{lab}_judge_bench"


def worker(lab: str) -> str:
    """The judge's worker program: the one process where the student's code runs."""
    return f"{lab}_worker"


def direct_bench(lab: str, impl: str) -> str:
    """The bench with an implementation linked in: `<lab>_bench` (the student's file) or
    `<lab>_solution_bench` (the reference)."""
    return f"{lab}_bench" if impl == STUDENT else f"{lab}_solution_bench"


def library_target(lab: str, impl: str) -> str:
    """The target of a lab's implementation as a shared library: `<lab>_student`, `<lab>_solution`."""
    return f"{lab}_{impl}"


def library_name(lab: str, impl: str) -> str:
    """The file that target writes: lib<lab>_student.so, lib<lab>_solution.so."""
    return f"lib{library_target(lab, impl)}.so"


def solution_library(lab: str) -> str:
    """The reference library's file name (lib<lab>_solution.so)."""
    return library_name(lab, SOLUTION)


def student_library(lab: str) -> str:
    """The student library's file name (lib<lab>_student.so)."""
    return library_name(lab, STUDENT)


# What a lab's reference library is called, as a pattern; "lab" names the lab.
SOLUTION_LIBRARY = re.compile(r"^lib(?P<lab>[A-Za-z]+)_solution\.so$")
# How the messages name a lab's libraries in general.
SOLUTION_LIBRARIES = "lib<lab>_solution.so"


def judge_targets(lab: str, *, reference: bool) -> list[str]:
    """The kit's targets one lab's grading needs (none of them holds student code)."""
    targets = [judge_test(lab), judge_bench(lab), worker(lab)]
    if reference:
        targets.append(library_target(lab, SOLUTION))
    return targets


# ---- paths in a build folder ---------------------------------------------------------

def program(build_dir: Path, name: str) -> Path:
    """An executable of the build (<build>/bin/<name>)."""
    return build_dir / BIN / name


def library(build_dir: Path, name: str) -> Path:
    """A shared library of the build (<build>/lib/<name>)."""
    return build_dir / LIB / name


def judge_test_path(build_dir: Path, lab: str) -> Path:
    return program(build_dir, judge_test(lab))


def judge_bench_path(build_dir: Path, lab: str) -> Path:
    return program(build_dir, judge_bench(lab))


def direct_bench_path(build_dir: Path, lab: str, impl: str) -> Path:
    return program(build_dir, direct_bench(lab, impl))


def solution_library_path(folder: Path, lab: str, *, built: bool = True) -> Path:
    """lib<lab>_solution.so in a build folder's lib/ (`built`) or in a folder of references."""
    return library(folder, solution_library(lab)) if built else folder / solution_library(lab)


def kit_student_library(build_dir: Path, lab: str) -> Path:
    """The kit's own build of a lab's student file (<build>/lib/lib<lab>_student.so)."""
    return library(build_dir, student_library(lab))


def ninja_student_library(lab: str) -> str:
    """The student library as Ninja's commands name it (relative to the build folder)."""
    return f"{LIB}/{student_library(lab)}"


# ---- the grader's own files ------------------------------------------------------------

CONFIGURE_STAMP = "grader-configure.json"  # the configure arguments a build folder was made with
LAB_SECONDS = "lab_seconds.json"  # seconds each lab's tests took last time (test order, shards)
COMPILE_JAIL = "compile_jail.json"  # the compile jail's verdict for a build folder
BUILD_RECORD = "build.json"  # a submission's build of one lab (for --prebuilt)
JAIL_TRIAL = "jail-test"  # where the compile jail is tried on the kit's own file
RESULTS = "results"  # the raw gtest and bench JSON of a run
SUBMISSION = "submission"  # the submission's editable files, copied
CHECKS = "checks"  # the static checks' work folders
STUDENT_LIBS = "student"  # the student libraries of a run in the build folder


def results_dir(own_dir: Path) -> Path:
    return own_dir / RESULTS


def work_dir(own_dir: Path) -> Path:
    return own_dir / SUBMISSION


def student_dir(build_dir: Path, student_root: Path | None) -> Path:
    """Where a run's student libraries go (<dir>/<lab>/lib<lab>_student.so): the lib/ of the
    submission's own folder, else <build>/student."""
    return student_root / LIB if student_root else build_dir / STUDENT_LIBS


def submission_library(student_dir: Path, lab: str) -> Path:
    """A submission's own build of a lab's student file."""
    return student_dir / lab / student_library(lab)


def checks_dir(own_dir: Path, lab: str) -> Path:
    return own_dir / CHECKS / lab


def gtest_json(results: Path, lab: str) -> Path:
    return results / f"{lab}.gtest.json"


def bench_json(results: Path, lab: str, attempt: int) -> Path:
    """The bench JSON of a lab's `attempt`-th bench run (the first without a number)."""
    return results / (f"{lab}.bench.json" if attempt == 1 else f"{lab}.bench.{attempt}.json")


def sanitizer_logs(results: Path, lab: str, exercise: str = "sanitizer") -> Path:
    """The sanitizer's logs of a lab's stage (or of one find-the-bug exercise's run)."""
    return results / f"{lab}.{exercise}"


# ---- the kit's sources -----------------------------------------------------------------

def student_source(root: Path, lab: str) -> Path:
    """A lab's student file (labs/<lab>/<lab>.cu), in the kit or a copy of a submission."""
    return root / "labs" / lab / f"{lab}.cu"


def lab_manifest(root: Path, lab: str) -> Path:
    return root / "labs" / lab / "lab.json"


def solution_dir(root: Path, lab: str) -> Path:
    return root / "solutions" / lab
