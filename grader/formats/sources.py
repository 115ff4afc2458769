"""Places in the kit's source a report points at: compiler errors with their file and line,
the file and line a failed test names, paths made relative to the repository root.

Used by the formats that mark lines (GitHub annotations, Classroom's line numbers) and by
those that show a build error's message alone when it already holds the compiler's lines.
"""

from __future__ import annotations

import re

from grader.report import Lab

SOURCE_SUFFIXES = ("cu", "cuh", "h", "hpp", "cpp", "cc", "c")
TOP_DIRS = ("labs", "common", "solutions", "grader", "cmake")  # folders of the kit, to make paths repo-relative

# Compiler diagnostics: nvcc `file.cu(12): error: ...`, `file.cu(12): error #177-D: ...`,
# gcc/clang `file.cu:12:5: error: ...` (host code and -Werror warnings).
_SUFFIX = "|".join(SOURCE_SUFFIXES)
_NVCC_DIAG = re.compile(rf"(?P<path>[^\s\"'()]+\.(?:{_SUFFIX}))\((?P<line>\d+)\): (?:catastrophic )?error\b[^:]*: (?P<msg>.*)")
_GCC_DIAG = re.compile(rf"(?P<path>[^\s\"'():]+\.(?:{_SUFFIX})):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)")
# A location inside a test failure: `labs/x/x_test.cu:57` (GoogleTest) or `x.cu:41: CUDA error` (LAB_CUDA_CHECK).
_LOCATION = re.compile(rf"(?P<path>[^\s\"'():]+\.(?:{_SUFFIX}))(?::(?P<line>\d+)|\((?P<pline>\d+)\))")


def compile_errors(text: str, root: str = "") -> list[tuple[str | None, int, str]]:
    """(repo-relative path, line, message) of each compiler error in `text`, in order, once."""
    found = []
    for raw in text.splitlines():
        match = _NVCC_DIAG.search(raw) or _GCC_DIAG.search(raw)
        if match:
            item = (repo_path(match["path"], root), int(match["line"]), match["msg"].strip())
            if item not in found:
                found.append(item)
    return found


def repo_path(path: str, root: str = "", lab: str = "") -> str | None:
    """`path` relative to the repository root, or None when it is outside the kit.

    The grader may have built in another directory than the student's checkout (a
    runner's copy, a pristine overlay), so an absolute path is cut at its last kit
    folder (labs/, common/ ...). A bare file name (LAB_CUDA_CHECK prints only the
    base name) is placed in the lab's folder when the lab has such a file.
    """
    path = path.strip().removeprefix("./")
    if root and path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    parts = path.split("/")
    for i in range(len(parts) - 2, -1, -1):
        if parts[i] in TOP_DIRS and (i > 0 or not path.startswith("/")):
            return "/".join(parts[i:])
    if "/" not in path and lab and (path == f"{lab}.cu" or path.startswith(f"{lab}_") or path == f"{lab}.h"):
        return f"labs/{lab}/{path}"
    return None


def failure_location(lab: Lab, message: str, root: str = "") -> tuple[str, int | None] | None:
    """Where a failed test points: a line of the student's file when the message names
    one (a CUDA error), else the first kit file and line it names (the assertion)."""
    locations = []
    for match in _LOCATION.finditer(message):
        path = repo_path(match["path"], root, lab.name)
        if path:
            line = match["line"] or match["pline"]
            locations.append((path, int(line) if line else None))
    for path, line in locations:
        if path == lab.student_file:
            return path, line
    return locations[0] if locations else None
