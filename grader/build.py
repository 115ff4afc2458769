"""Configure the kit with CMake once, then build one lab at a time (CONTRACT.md "Build").

Building lab by lab means a compile error in one lab costs that lab only. When a
build fails, the first compiler error lines become the message, since those (not the
cascade after them) tell a student what to fix.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader import proc

STAMP_NAME = "grader-configure.json"
MAX_ERROR_LINES = 15

# "file.cu:12:5: error: ..." (gcc, clang), "file.cu(12): error: ..." (nvcc).
_LOCATED_ERROR = re.compile(r"\S+(:\d+|\(\d+\))\S*.*\berror\b", re.IGNORECASE)
_ANY_ERROR = re.compile(r"\berror\b|undefined reference", re.IGNORECASE)


@dataclass
class BuildResult:
    """Outcome of the configure step or of one lab's build."""

    ok: bool
    message: str = ""  # on failure: what went wrong and what to do
    command: str = ""  # the command that reproduces it
    output: str = ""  # combined output tail, for the report


def configure_args(root: Path, build_dir: Path, *, solutions: bool, cuda_arch: str | None) -> list[str]:
    """The CMake configure command line for this grading run."""
    args = ["cmake", "-S", str(root), "-B", str(build_dir)]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    args.append("-DCMAKE_BUILD_TYPE=Release")
    if cuda_arch:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={cuda_arch}")
    if solutions:
        args.append("-DLABKIT_BUILD_SOLUTIONS=ON")
    return args


def configure(args: list[str], build_dir: Path, timeout: float) -> BuildResult:
    """Run `args` unless the build dir was already configured with exactly them.

    The arguments are remembered in a stamp file: a changed `--cuda-arch` or `--impl`
    must reconfigure, an unchanged one must not pay for it again.
    """
    stamp = build_dir / STAMP_NAME
    if (build_dir / "CMakeCache.txt").is_file() and _read_stamp(stamp) == args:
        return BuildResult(ok=True)
    if not shutil.which("cmake"):
        return BuildResult(ok=False, command=proc.command_string(args), message=(
            "cmake not found on PATH: install CMake >= 3.25 (e.g. `sudo apt install cmake`"
            " or `pip install cmake`) and Ninja, then run the grader again"))
    build_dir.mkdir(parents=True, exist_ok=True)
    result = proc.run(args, timeout=timeout)
    if result.timed_out:
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message=f"CMake configure timed out after {timeout:g} s")
    if result.returncode != 0:
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message="CMake configure failed:\n" + first_errors(result.stdout + "\n" + result.stderr))
    stamp.write_text(json.dumps(args) + "\n")
    return BuildResult(ok=True, command=result.command)


def build_targets(build_dir: Path, targets: list[str], timeout: float, root: Path | None = None) -> BuildResult:
    """Build `targets` (one lab's); on failure the message holds the first errors."""
    args = ["cmake", "--build", str(build_dir), "--target", *targets]
    result = proc.run(args, timeout=timeout)
    if result.timed_out:
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message=f"the build timed out after {timeout:g} s")
    if result.returncode != 0:
        errors = first_errors(result.stdout + "\n" + result.stderr)
        if root is not None:  # paths relative to the kit read better in a table
            errors = errors.replace(f"{root}/", "")
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message="compilation failed:\n" + errors)
    return BuildResult(ok=True, command=result.command)


def first_errors(output: str, limit: int = MAX_ERROR_LINES) -> str:
    """The first error lines of compiler/CMake output (at most `limit`).

    A CMake error keeps its explanation lines; otherwise lines that name a file and
    line are preferred, then any line mentioning an error (linker errors have no line
    number), then the last lines of the output.
    """
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        # CMake puts the explanation on the indented lines after "CMake Error at".
        if line.startswith("CMake Error"):
            return "\n".join(lines[i:i + limit])
    for pattern in (_LOCATED_ERROR, _ANY_ERROR):
        found = [line for line in lines if pattern.search(line)]
        if found:
            return "\n".join(found[:limit])
    return "\n".join(lines[-limit:])


def _read_stamp(stamp: Path) -> list[str] | None:
    try:
        return json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
