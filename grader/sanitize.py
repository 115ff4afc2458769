"""The compute-sanitizer stage: memcheck, racecheck and synccheck on a small test filter.

A kernel can pass its tests and still write out of bounds (into padding the tests do
not see) or race on shared memory (and be right by luck). Each tool runs the lab's
test binary on a few small tests (`sanitizer_filter`; the tools slow a program down
10-100x), in its own subprocess with a timeout. The first error of each tool is
summarised with the kernel and the source line (the kit compiles with -lineinfo).

CUDA API errors are not reported (`--report-api-errors no`): the driver's own probes
raise some on purpose, and a failed call in the student's code already fails a test.
"""

from __future__ import annotations

import concurrent.futures
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import proc

ERROR_EXIT = 99  # --error-exitcode: tells "the tool found errors" from a failed test (1)
PRINT_LIMIT = 20  # errors printed per tool run; the summary still counts them all
NAME = "compute-sanitizer"

_PREFIX = "========="
# Lines that open one error report (after the prefix); warnings are not errors.
_ERROR_HEAD = re.compile(
    r"^(?:Invalid |Misaligned |Uninitialized |Barrier error|Race reported|Potential \w+ hazard"
    r"|(?:ERROR|Error): |Warp |Out-of-range |Illegal |Hardware |Lane |Malloc/Free |Cuda Malloc"
    r"|Device-side |Divergent |Invalid arguments|Unspecified )")
# The tool's own trouble, not an error of the program: e.g. "Error: couldn't find exit
# code." when a process it followed (the judge's worker, ended by the judge) was killed.
_TOOL_TROUBLE = re.compile(r"^(?:ERROR|Error): (?:couldn't find exit code|Target application terminated before"
                           r"|No attachable process)", re.IGNORECASE)
# Where: "at kernel(args)+0x70 in /path/file.cu:12" (CUDA 12+), "at kernel():0x160 in file.cu:6",
# "at 0x000000c8 in /path/file.cu:75:kernel(args)" (older), "at 0x90 in kernel(args)" (no -lineinfo).
_LOCATIONS = (
    re.compile(r"\bat (?P<func>.+?)\+0x[0-9a-fA-F]+ in (?P<file>\S+?):(?P<line>\d+)\b"),
    re.compile(r"\bat (?P<func>.+?):0x[0-9a-fA-F]+ in (?P<file>\S+?):(?P<line>\d+)\b"),
    re.compile(r"\bat 0x[0-9a-fA-F]+ in (?P<file>[^\s:]+):(?P<line>\d+):(?P<func>.+)"),
    re.compile(r"\bat (?:0x[0-9a-fA-F]+ in )?(?P<func>[^\s].*?)(?:\+0x[0-9a-fA-F]+)?\s*(?:\[\d+ hazards?\])?$"),
)
_RACE_OTHER = re.compile(r"^and (\w+) access (at \S.*)$")
_THREAD = re.compile(r"by thread (\(\d+,\d+,\d+\)) in block (\(\d+,\d+,\d+\))")
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, \d+ warnings?\)")
_TESTS_RAN = re.compile(r"^\[==========\] (\d+) tests? from .* ran", re.MULTILINE)


@dataclass
class Finding:
    """The first error one tool reported."""

    tool: str
    kind: str  # e.g. "Invalid __global__ write of size 4 bytes"
    function: str | None = None  # the kernel (or device function) where it happened
    file: str | None = None  # relative to the kit when inside it
    line: int | None = None
    thread: str | None = None  # "(232,0,0)"
    block: str | None = None
    errors: int | None = None  # how many errors the tool counted in all
    other: str | None = None  # a race's other access: "file.cu:44"

    @property
    def message(self) -> str:
        text = f"{self.tool}: {self.kind}"
        if self.function:
            text += f" in {self.function}"
        if self.file:
            text += f" at {self.file}" + (f":{self.line}" if self.line else "")
        if self.other:
            text += f" and {self.other}"
        if self.thread:
            text += f" (thread {self.thread}, block {self.block})"
        if self.errors and self.errors > 1:
            text += f"; {self.errors} errors in all"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "kind": self.kind, "function": self.function, "file": self.file,
                "line": self.line, "thread": self.thread, "block": self.block, "errors": self.errors,
                "other": self.other, "message": self.message}


@dataclass
class ToolRun:
    """One tool's run: clean, errors (with the first one), or why it gave no answer."""

    tool: str
    status: str  # "clean" | "errors" | "timeout" | "no_tests" | "failed"
    command: str
    finding: Finding | None = None
    note: str = ""
    output: str = ""  # output tail when the run went wrong
    duration_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "status": self.status, "command": self.command,
                "finding": self.finding.as_dict() if self.finding else None, "note": self.note,
                "output": self.output, "duration_s": round(self.duration_s, 2)}


@dataclass
class SanitizerResult:
    """The stage's outcome for one lab."""

    ran: bool
    note: str = ""  # why it did not run, or what to know about it
    filter: str = ""
    runs: list[ToolRun] = field(default_factory=list)
    deduction: float = 0.0

    @property
    def findings(self) -> list[Finding]:
        return [run.finding for run in self.runs if run.status == "errors" and run.finding]

    def as_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "note": self.note, "filter": self.filter,
                "runs": [run.as_dict() for run in self.runs],
                "findings": [f.as_dict() for f in self.findings], "deduction": self.deduction}


def find_sanitizer() -> Path | None:
    """compute-sanitizer on PATH, next to nvcc, or in the usual CUDA install folders."""
    found = shutil.which(NAME)
    if found:
        return Path(found)
    folders = []
    nvcc = shutil.which("nvcc")
    if nvcc:
        folders.append(Path(nvcc).resolve().parent)
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"):
        if os.environ.get(var):
            folders.append(Path(os.environ[var]) / "bin")
    folders.append(Path("/usr/local/cuda/bin"))
    for folder in folders:
        for candidate in (folder / NAME, folder.parent / NAME / NAME):  # toolkits also keep it in compute-sanitizer/
            if proc.is_executable(candidate):
                return candidate
    return None


def run(binary: Path, *, tools: list[str], test_filter: str, seed: int, timeout: float,
        root: Path | None = None, cwd: Path | None = None, sanitizer: Path | None = None,
        extra_args: list[str] | None = None, log_dir: Path | None = None,
        only: str | None = None, env: Mapping[str, str] | None = None) -> SanitizerResult:
    """Run each tool on `binary` with `--gtest_filter=test_filter`; file paths in findings are
    made relative to `root`. `extra_args` go to the binary first (the judge's --impl=...).

    With `log_dir`, the tool follows the judge's worker processes (--target-processes all)
    and writes its report to a file there, which is what is read: the worker's own output,
    which the student's code can print into, never counts. With `only` (the worker
    program's name) it checks that process alone: the student's code runs nowhere else,
    and instrumenting the judge's own kernels (poisoning, checks, CUB) cost most of a
    run's time. `env` holds environment overrides (the reproduce commands name them)."""
    sanitizer = sanitizer or find_sanitizer()
    if sanitizer is None:
        return not_found(test_filter)

    def one(tool: str) -> ToolRun:
        return run_tool(sanitizer, tool, binary, test_filter=test_filter, seed=seed, timeout=timeout,
                        root=root, cwd=cwd, extra_args=extra_args,
                        log_file=log_dir / f"{tool}.log" if log_dir is not None else None, only=only, env=env)

    # The tools side by side: each is a process of its own with its own contexts, and most
    # of a run is the tool's start-up, not the GPU's work.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(tools))) as pool:
        runs = list(pool.map(one, tools))
    return SanitizerResult(True, filter=test_filter, runs=runs)


def not_found(test_filter: str = "") -> SanitizerResult:
    """The stage's result when there is no compute-sanitizer to run."""
    return SanitizerResult(False, filter=test_filter, note=(
        "compute-sanitizer not found (looked on PATH, next to nvcc and in /usr/local/cuda/bin): the "
        "sanitizer stage was skipped; install the full CUDA toolkit or put compute-sanitizer on PATH"))


def run_tool(sanitizer: Path, tool: str, binary: Path, *, test_filter: str, seed: int, timeout: float,
             root: Path | None = None, cwd: Path | None = None, extra_args: list[str] | None = None,
             log_file: Path | None = None, only: str | None = None,
             env: Mapping[str, str] | None = None) -> ToolRun:
    """One tool on the filtered tests, classified; with `log_file` it follows child processes,
    with `only` too it checks only the processes of that program name."""
    args: list[str | Path] = [sanitizer, "--tool", tool, "--error-exitcode", str(ERROR_EXIT),
                              "--print-limit", str(PRINT_LIMIT), "--report-api-errors", "no"]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.unlink(missing_ok=True)
        args += ["--target-processes", "all", "--log-file", log_file]
        if only:
            args += ["--target-processes-filter", only]
    args += [binary, *(extra_args or []), f"--gtest_filter={test_filter}", f"--seed={seed}"]
    env = {**(env or {}), "LABKIT_SEED": str(seed)}
    try:
        result = proc.run(args, timeout=timeout, env=env, cwd=cwd)
    except proc.LaunchError as exc:
        return ToolRun(tool, "failed", proc.command_string(args, env), note=f"{exc}: check the CUDA toolkit")
    report = None
    if log_file is not None:
        try:
            report = log_file.read_text(errors="replace")[-(4 * proc.CAP_BYTES):]
        except OSError:
            report = ""
    return classify(tool, result, root=root, timeout=timeout, report=report)


def classify(tool: str, result: proc.ProcResult, *, root: Path | None = None, timeout: float = 0.0,
             report: str | None = None) -> ToolRun:
    """Turn one finished tool run into a ToolRun; `report` is the tool's log file when it wrote
    one (then the programs' own output is not searched for errors)."""
    output = report if report is not None else result.stdout + "\n" + result.stderr
    run = ToolRun(tool, "clean", result.command, duration_s=result.duration_s)
    if result.timed_out:
        run.status, run.output = "timeout", result.output_tail()
        run.note = (f"{tool} timed out after {timeout:g} s (programs run 10-100x slower under it): no "
                    "deduction; raise sanitizer_timeout_s or pick smaller tests with sanitizer_filter")
        return run
    finding = parse(tool, output, root=root)
    trouble = [line for line in output.splitlines()
               if line.startswith(_PREFIX) and _TOOL_TROUBLE.match(line[len(_PREFIX):].strip())]
    if finding is None and trouble:
        run.status, run.output = "failed", result.output_tail()
        run.note = (f"{tool} reported trouble of its own ({trouble[0][len(_PREFIX):].strip()}) and no error in "
                    "the program: no deduction; see the output")
        return run
    if finding is not None or result.returncode == ERROR_EXIT:
        run.status = "errors"
        run.finding = finding or Finding(tool, "errors reported (see the output)", errors=_error_count(output))
        run.output = result.output_tail()
        return run
    ran = _TESTS_RAN.findall(result.stdout)
    if ran and all(int(n) == 0 for n in ran):
        run.status = "no_tests"
        run.note = "the sanitizer filter matched no test: set sanitizer_filter for this lab in the config"
        return run
    if result.returncode not in (0, 1) or result.signal:
        # 1 is a failed test under the tool (the tests stage reports those); anything else
        # is the tool itself failing (unsupported GPU, internal error, a crash).
        run.status, run.output = "failed", result.output_tail()
        how = f"signal {result.signal_name}" if result.signal else f"exit code {result.returncode}"
        run.note = f"{tool} ended with {how} and reported no error: no deduction; see the output"
    return run


def parse(tool: str, output: str, *, root: Path | None = None) -> Finding | None:
    """The first error in compute-sanitizer's output, or None when it reported none."""
    lines = [line[len(_PREFIX):] for line in output.splitlines() if line.startswith(_PREFIX)]
    for i, line in enumerate(lines):
        head = line[1:] if line.startswith(" ") else line
        if head.startswith(" ") or not _ERROR_HEAD.match(head) or _TOOL_TROUBLE.match(head):
            continue  # detail lines are indented further; the tool's own trouble is no finding
        finding = Finding(tool, _kind(head), errors=_error_count(output))
        block = [head] + [detail.strip() for detail in _details(lines[i + 1:])]
        for text in block:
            where = _where(text)
            if finding.function is None and where:
                _locate(finding, where, root)
            if finding.thread is None and (m := _THREAD.search(text)):
                finding.thread, finding.block = m.group(1), m.group(2)
            if (m := _RACE_OTHER.match(text)) and finding.other is None and "Race" in finding.kind:
                # "and Read access at LOC [N hazards]": the race's other side.
                finding.kind += f" and {m.group(1)} access"
                other = Finding(tool, "")
                _locate(other, m.group(2), root)
                finding.other = f"{other.file}:{other.line}" if other.file else None
        return finding
    return None


def short_function(text: str) -> str:
    """`void kernel<(bool)0>(const float *, int)` -> `kernel<(bool)0>`."""
    text = text.strip().replace("(anonymous namespace)::", "")
    depth, name = 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(0, depth - 1)
        elif ch == "(" and depth == 0:
            break
        name.append(ch)
    result = "".join(name).strip()
    return re.sub(r"^(?:(?:void|static|__global__|__device__)\s+)+", "", result) or text


def _kind(head: str) -> str:
    """The error's description without the location the header may carry."""
    kind = re.sub(r"^(?:ERROR|Error): ", "", head).strip()
    # "Race reported between Write access at LOC" -> "Race reported between Write access ..."
    kind = re.sub(r" at (?:0x[0-9a-fA-F]+ in )?\S.*$", "", kind) if "Race reported" in kind else kind
    return kind.rstrip(" :.")


def _where(text: str) -> str:
    """The "at ..." part of a report line that gives a location, or ''.

    Detail lines start with it; a race header carries it ("Race reported between Write
    access at ..."); older racecheck puts it after the thread ("Write Thread (0,0,0) at 0x...")."""
    if text.startswith("at "):
        return text
    m = re.search(r" access (at \S.*)$", text) or re.search(r"\) (at 0x[0-9a-fA-F]+ in \S.*)$", text)
    return m.group(1) if m else ""


def _details(lines: list[str]) -> list[str]:
    """The indented lines of one error report (up to the next report or a blank line)."""
    out = []
    for line in lines:
        if not line.strip() or not line.startswith("  "):
            break
        out.append(line)
    return out


def _locate(finding: Finding, text: str, root: Path | None) -> None:
    for pattern in _LOCATIONS:
        m = pattern.search(text)
        if not m:
            continue
        finding.function = short_function(m.group("func"))
        if "file" in m.groupdict() and m.group("file"):
            finding.file = _relative(m.group("file"), root)
            finding.line = int(m.group("line"))
        return


def _relative(path: str, root: Path | None) -> str:
    """`path` relative to the kit's root, so it names the student's file."""
    if root is not None:
        for base in {str(root), str(root.resolve())}:
            if path.startswith(base.rstrip("/") + "/"):
                return path[len(base.rstrip("/")) + 1:]
        if "/" not in path:
            # Recent compute-sanitizer versions print the file name only
            # ("in vectorAdd.cu:9"): find it among the labs' files when that is unambiguous.
            matches = sorted((root / "labs").glob(f"*/{path}")) if path and path[0] != "." else []
            if len(matches) == 1:
                return matches[0].relative_to(root).as_posix()
    return path


def _error_count(output: str) -> int | None:
    counts = [int(n) for n in _ERROR_SUMMARY.findall(output)] + [int(n) for n in _RACE_SUMMARY.findall(output)]
    return max(counts) if counts else None
