"""Static rules on the implementation's source: patterns a lab requires or forbids.

A course can demand a technique (the Sobel homework gives global-memory-only
solutions little credit: sobel requires `__shared__`) or ban a shortcut. Built in,
every student file is checked against BUILTIN_RULES: libraries that do the lab's work
(CUB, Thrust, cuBLAS, NPP), tricks that defeat the timing (host callbacks and graphs,
device resets and limits; streams of one's own outside the labs that teach them) and
escapes from the test process (exit, files, the environment, other processes). A lab's
manifest lifts one by name ("rules": {"allow": [...]}, part of the lab's design), and so
does a course's config (`allow` in grader.toml). Comments and string literals
are blanked before matching, so a rule is met by code, not by a comment that mentions
it; `#include` lines are kept whole. A broken rule costs `rule_penalty` (a fraction)
of the points the lab earned otherwise.
"""

from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path

# An #include directive (kept: its path is code), then comments and string/char literals (blanked).
_CODE_NOISE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:<[^>\n]*>|"[^"\n]*")'
                         r'|//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'',
                         re.DOTALL | re.MULTILINE)


def _include(*names: str) -> str:
    """An `#include <name...>` or `#include "name..."` of any of `names` (prefixes)."""
    return r'#[ \t]*include[ \t]*[<"](?:' + "|".join(names) + ")"


# name -> (regular expression, why it is forbidden). Checked in student files only.
BUILTIN_RULES: dict[str, tuple[str, str]] = {
    "cub": (r"\bcub::|" + _include("cub/"), "CUB does the lab's work: write the kernels yourself"),
    "thrust": (r"\bthrust::|" + _include("thrust/"), "Thrust does the lab's work: write the kernels yourself"),
    "cublas": (r"\b(?:cublas|CUBLAS_)\w*|" + _include("cublas"),
               "cuBLAS does the lab's work: write the kernels yourself"),
    "npp": (r"\b(?:npp[a-z]?[A-Z]\w*|Npp\w+|NPP_\w+)|" + _include("npp"),
            "NPP does the lab's work: write the kernels yourself"),
    # Streams of one's own: the timers wait for every stream the implementation created and
    # has not destroyed (common/src/stream_fence.cpp), so a lab whose exercise needs them
    # lifts this rule in its manifest ("rules": {"allow": ["own_streams"]}); elsewhere the
    # default stream is the one to use. The per-thread default stream (cudaStreamPerThread,
    # (cudaStream_t)2) is not a stream of one's own: it synchronises with the legacy default
    # stream the timers' events are on (grader/CONTRACT.md, "Streams").
    "own_streams": (r"\bcudaStreamCreate\w*|\bcudaStreamNonBlocking\b|\bcudaStreamDestroy\b"
                    r"|\bcudaStreamWaitEvent\b",
                    "streams of your own belong to the labs whose exercises ask for them: launch everything on "
                    "the default stream"),
    # Work no timer can wait for, in every lab: host callbacks (host code that runs when the
    # GPU reaches it, and can queue more work after the call returned), graphs and stream
    # capture (work launched as one unit, outside the streams the timers follow).
    "streams": (r"\bcudaLaunchHostFunc\b|\bcudaStreamAddCallback\b|\bcudaGraph\w*|\bcudaStream\w*Capture\w*",
                "host callbacks, graphs and stream capture run work the timer cannot wait for: launch your kernels "
                "directly"),
    "device_reset": (r"\bcudaDeviceReset\b", "resetting the device destroys the tests' and the bench's memory"),
    "device_limits": (r"\bcudaDeviceSetLimit\b|\bcudaSetDevice(?:Flags)?\b|\bcudaDeviceSetCacheConfig\b"
                      r"|\bcudaDeviceSetSharedMemConfig\b|\bcudaCtx\w+|\bcuCtx\w+",
                      "device-wide settings belong to the test and bench programs, not to the implementation"),
    "exit": (r"\b(?:std::)?(?:exit|_exit|_Exit|quick_exit|abort)\s*\(|\bstd::terminate\b",
             "ending the process hides the results: report errors with LAB_CUDA_CHECK instead"),
    "files": (r"\b(?:fopen|freopen|fdopen|open|openat|creat|mmap|remove|unlink|rename)\s*\("
              r"|\b(?:std::)?[io]?fstream\b|\bstd::filesystem\b|" + _include("fstream", "filesystem", "fcntl"),
              "the implementation reads and writes device memory only: no files"),
    "environment": (r"\b(?:getenv|secure_getenv|setenv|putenv|unsetenv|clearenv)\s*\(|\benviron\b",
                    "the implementation may not read or change the environment"),
    "processes": (r"\b(?:system|popen|fork|vfork|execl|execlp|execle|execv|execvp|execvpe|kill|raise)\s*\("
                  r"|\bposix_spawn\w*", "the implementation may not start processes, nor send or handle signals"),
    "dynamic_loading": (r"\b(?:dlopen|dlmopen|dlsym|dlvsym)\s*\(",
                        "loading libraries at run time (such as the reference) is not allowed"),
    # The grader reads which kernels each lecture step launches from the records that
    # LAB_REGISTER_VARIANT leaves in the object (grader/check/steps.py): a registration made by
    # hand, or a record or section of the file's own, could name another function.
    "registry": (r"\b(?:VariantRegistrar|VariantRecord|GradedVariantRegistrar|SlowVariantsRegistrar"
                 r"|BenchQuestionsRegistrar)\b|\blocal_variants\s*\(|\bgnu::section\b|\b__section__\b"
                 r"|\b__attribute__\s*\(\([^;{]*\bsection\b",
                 "register your versions with LAB_REGISTER_VARIANT only: no registrars, variant records or "
                 "sections of your own"),
    "threads": (r"\bstd::(?:thread|jthread|async)\b|\bpthread_create\b",
                "the graded work runs on the GPU, launched from the calling thread"),
    "test_framework": (r"\bGTEST_\w+|\bRUN_ALL_TESTS\b|\btesting::|\bFLAGS_gtest_\w+|" + _include("gtest/", "gmock/"),
                       "the tests are provided: the implementation may not use or change GoogleTest"),
    "outside_includes": (r'#[ \t]*include[ \t]*[<"](?:/|[^>"\n]*\.\.|[^>"\n]*solutions/)',
                         "include only the kit's headers and the standard library (no paths outside your folder)"),
}


# The rules of the static checks of the compiled object (grader/check/), by name.
CHECK_RULES: tuple[str, ...] = ("include", "symbol", "defines", "cub", "constructor", "syscall")


@dataclass
class Finding:
    """One broken rule, where the student can see it."""

    kind: str  # "required" or "forbidden"
    pattern: str
    file: str  # relative to the kit root
    line: int | None  # None for a required pattern that is nowhere
    message: str
    rule: str = ""  # the built-in rule's name; "" for a pattern from the config

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "rule": self.rule, "pattern": self.pattern, "file": self.file,
                "line": self.line, "message": self.message}


def blank_comments(text: str) -> str:
    """`text` with comments and string/char literals replaced by spaces (newlines kept).

    `#include` lines are kept as they are: the path they name is what a rule checks."""
    def blank(match: re.Match[str]) -> str:
        if match.group(0).lstrip().startswith("#"):
            return match.group(0)
        return re.sub(r"[^\n]", " ", match.group(0))

    return _CODE_NOISE.sub(blank, text)


def editable_paths(root: Path, lab: str, patterns: list[str]) -> list[Path]:
    """The files under `root` that `patterns` (with {lab}) name: literal paths whether or
    not they exist, glob patterns expanded to the regular files they match."""
    paths: list[Path] = []
    for pattern in patterns:
        rel = pattern.replace("{lab}", lab)
        if glob.has_magic(rel):
            paths += sorted(p for p in root.glob(rel) if p.is_file() and not p.is_symlink())
        else:
            paths.append(root / rel)
    return list(dict.fromkeys(paths))  # no duplicates, order kept


def sources(root: Path, lab: str, impl: str, editable: list[str] | None = None) -> list[Path]:
    """The files a rule is checked in: the student's files, or the solution's sources."""
    if impl == "solution":
        folder = root / "solutions" / lab
        return sorted(p for p in folder.glob("*") if p.suffix in (".cu", ".cuh", ".cpp", ".h"))
    return editable_paths(root, lab, editable or ["labs/{lab}/{lab}.cu"])


def check(root: Path, files: list[Path], required: list[str], forbidden: list[str],
          builtin: dict[str, tuple[str, str]] | None = None) -> list[Finding]:
    """Every broken rule in `files`: `required`/`forbidden` are regular expressions from
    the config; `builtin` maps rule names to (expression, why), e.g. BUILTIN_RULES."""
    findings: list[Finding] = []
    code = {}
    for path in files:
        try:
            code[path] = blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue  # a missing file is the build's problem, reported there
    names = ", ".join(_rel(root, p) for p in files)
    for pattern in required:
        if not any(re.search(pattern, text) for text in code.values()):
            findings.append(Finding("required", pattern, names, None,
                                    f"{names}: this lab requires `{pattern}` in your code, and it is not there"))
    rules = [("", pattern, "") for pattern in forbidden]
    rules += [(name, pattern, why) for name, (pattern, why) in (builtin or {}).items()]
    for name, pattern, why in rules:
        for path, text in code.items():
            for match in re.finditer(pattern, text):
                line = text.count("\n", 0, match.start()) + 1
                where = f"{_rel(root, path)}:{line}"
                found = match.group(0).strip()
                message = f"{where}: `{found}` is not allowed in this lab" + (f" ({why})" if why else "")
                findings.append(Finding("forbidden", pattern, _rel(root, path), line, message, rule=name))
    return findings


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
