"""The compute-sanitizer stage: memcheck, racecheck and synccheck on a small test filter.

A kernel can pass its tests and still write out of bounds (into padding the tests do
not see) or race on shared memory (and be right by luck). Each tool runs the lab's
test binary on a few small tests (`sanitizer_filter`; the tools slow a program down
10-100x), in its own subprocess with a timeout. The first error of each tool is
summarised with the kernel and the source line (the kit compiles with -lineinfo).

CUDA API errors are not reported (`--report-api-errors no`): the driver's own probes
raise some on purpose, and a failed call in the student's code already fails a test.

The tools must see the code that is graded. A file can tell a run under the tools from
a graded one (a timed probe kernel is ~1000x slower under them) and take another path
there. So the lab's stage also runs the same tests once without any tool (the "plain"
run), and every run, plain or not, passes --exact-bounds (the worker calls the code on
copies of exactly each argument's size, so memcheck sees an access one past an array)
and --launch-log (the judge writes each call's kernel launches, recorded by the kit's
code in the worker). A tool run whose calls launched other kernels, other block sizes or
other argument values than the plain run's, or whose tests failed where the plain run's
passed, has a finding of its own (`behaves differently`), which costs what any finding
costs. Launches that differ only in their grid are a note (a grid sized from the
occupancy API may differ under a tool).
"""

from __future__ import annotations

import concurrent.futures
import json
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
_FAILED_TEST = re.compile(r"^\[  FAILED  \] ([^\s,]+\.[^\s,]+)", re.MULTILINE)
HANG_MARK = "did not return within"  # a call that hung in the worker (common/judge/session.cu)
PLAIN = "plain"  # the run of the same tests without any tool
DIFFERS = "behaves differently"  # the kind of the finding when a tool run's code differs
MAX_LOG_BYTES = 8 << 20  # a launch log read (one line per call: the filter's tests make few)


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
    detail: str | None = None  # what differed, for a `behaves differently` finding

    @property
    def message(self) -> str:
        if self.detail:
            return f"{self.tool}: {self.kind}: {self.detail}"
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
                "other": self.other, "detail": self.detail, "message": self.message}


@dataclass
class ToolRun:
    """One tool's run: clean, errors (with the first one), or why it gave no answer."""

    tool: str
    status: str  # "clean" | "errors" | "differs" | "timeout" | "no_tests" | "failed"
    command: str
    finding: Finding | None = None
    note: str = ""
    output: str = ""  # output tail when the run went wrong
    duration_s: float = 0.0
    failed_tests: list[str] = field(default_factory=list)  # tests that failed in this run
    hung: bool = False  # a call did not return within the call timeout
    launch_log: Path | None = None  # the judge's record of the calls' kernel launches

    def status_text(self) -> str:
        """How the run ended, for a note."""
        return {"timeout": "timed out", "failed": "failed"}.get(self.status, f"ended {self.status}")

    def as_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "status": self.status, "command": self.command,
                "finding": self.finding.as_dict() if self.finding else None, "note": self.note,
                "output": self.output, "duration_s": round(self.duration_s, 2),
                "failed_tests": self.failed_tests}


@dataclass
class SanitizerResult:
    """The stage's outcome for one lab."""

    ran: bool
    note: str = ""  # why it did not run, or what to know about it
    filter: str = ""
    runs: list[ToolRun] = field(default_factory=list)
    deduction: float = 0.0
    plain: ToolRun | None = None  # the same tests without any tool (compare=True)
    notes: list[str] = field(default_factory=list)  # differences that cost nothing, for the instructor

    @property
    def findings(self) -> list[Finding]:
        return [run.finding for run in self.runs if run.status in ("errors", "differs") and run.finding]

    def as_dict(self) -> dict[str, Any]:
        return {"ran": self.ran, "note": self.note, "filter": self.filter,
                "runs": [run.as_dict() for run in self.runs],
                "plain": self.plain.as_dict() if self.plain else None, "notes": self.notes,
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
        only: str | None = None, env: Mapping[str, str] | None = None,
        compare: bool = False) -> SanitizerResult:
    """Run each tool on `binary` with `--gtest_filter=test_filter`; file paths in findings are
    made relative to `root`. `extra_args` go to the binary first (the judge's --impl=...).

    With `log_dir`, the tool follows the judge's worker processes (--target-processes all)
    and writes its report to a file there, which is what is read: the worker's own output,
    which the student's code can print into, never counts. With `only` (the worker
    program's name) it checks that process alone: the student's code runs nowhere else,
    and instrumenting the judge's own kernels (poisoning, checks, CUB) cost most of a
    run's time. `env` holds environment overrides (the reproduce commands name them).

    With `compare` (and `log_dir`) the same tests also run without any tool, every run
    writes its launch log (--launch-log), and each tool run is compared with the plain one
    (compare_runs): a tool run whose code behaved differently gets a finding."""
    sanitizer = sanitizer or find_sanitizer()
    if sanitizer is None:
        return not_found(test_filter)
    compare = compare and log_dir is not None

    def launch_log(name: str) -> Path | None:
        return log_dir / f"{name}.launches.jsonl" if compare and log_dir is not None else None

    def one(tool: str) -> ToolRun:
        return run_tool(sanitizer, tool, binary, test_filter=test_filter, seed=seed, timeout=timeout,
                        root=root, cwd=cwd, extra_args=extra_args,
                        log_file=log_dir / f"{tool}.log" if log_dir is not None else None, only=only, env=env,
                        launch_log=launch_log(tool))

    # The plain run first, alone: beside the tools its kernels would wait for theirs, and a
    # file that times a probe would take it for a run under the tools.
    plain = run_plain(binary, test_filter=test_filter, seed=seed, timeout=timeout, cwd=cwd, extra_args=extra_args,
                      env=env, launch_log=launch_log(PLAIN)) if compare else None
    # The tools side by side: each is a process of its own with its own contexts, and most
    # of a run is the tool's start-up, not the GPU's work.
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, len(tools))) as pool:
        runs = list(pool.map(one, tools))
    result = SanitizerResult(True, filter=test_filter, runs=runs, plain=plain)
    if result.plain is not None:
        compare_with_plain(result)
    return result


def not_found(test_filter: str = "") -> SanitizerResult:
    """The stage's result when there is no compute-sanitizer to run."""
    return SanitizerResult(False, filter=test_filter, note=(
        "compute-sanitizer not found (looked on PATH, next to nvcc and in /usr/local/cuda/bin): the "
        "sanitizer stage was skipped; install the full CUDA toolkit or put compute-sanitizer on PATH"))


def run_tool(sanitizer: Path, tool: str, binary: Path, *, test_filter: str, seed: int, timeout: float,
             root: Path | None = None, cwd: Path | None = None, extra_args: list[str] | None = None,
             log_file: Path | None = None, only: str | None = None,
             env: Mapping[str, str] | None = None, launch_log: Path | None = None) -> ToolRun:
    """One tool on the filtered tests, classified; with `log_file` it follows child processes,
    with `only` too it checks only the processes of that program name; with `launch_log` the
    judge writes the calls' kernel launches there."""
    args: list[str | Path] = [sanitizer, "--tool", tool, "--error-exitcode", str(ERROR_EXIT),
                              "--print-limit", str(PRINT_LIMIT), "--report-api-errors", "no"]
    if log_file is not None:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        log_file.unlink(missing_ok=True)
        args += ["--target-processes", "all", "--log-file", log_file]
        if only:
            args += ["--target-processes-filter", only]
    args += [binary, *(extra_args or []), *_launch_log_args(launch_log), f"--gtest_filter={test_filter}",
             f"--seed={seed}"]
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
    run = classify(tool, result, root=root, timeout=timeout, report=report)
    _note_tests(run, result, launch_log)
    return run


def run_plain(binary: Path, *, test_filter: str, seed: int, timeout: float, cwd: Path | None = None,
              extra_args: list[str] | None = None, env: Mapping[str, str] | None = None,
              launch_log: Path | None = None) -> ToolRun:
    """The filtered tests without any tool, as the tool runs call them (the same judge
    arguments, seed and launch log): what the tool runs are compared with."""
    args: list[str | Path] = [binary, *(extra_args or []), *_launch_log_args(launch_log),
                              f"--gtest_filter={test_filter}", f"--seed={seed}"]
    if launch_log is not None:  # its verdicts in GoogleTest's JSON too, for whoever looks
        args.append(f"--gtest_output=json:{launch_log.with_name(PLAIN + '.gtest.json')}")
    env = {**(env or {}), "LABKIT_SEED": str(seed)}
    try:
        result = proc.run(args, timeout=timeout, env=env, cwd=cwd)
    except proc.LaunchError as exc:
        return ToolRun(PLAIN, "failed", proc.command_string(args, env), note=str(exc))
    run = ToolRun(PLAIN, "clean", result.command, duration_s=result.duration_s)
    if result.timed_out or result.returncode not in (0, 1) or result.signal:
        run.status, run.output = ("timeout" if result.timed_out else "failed"), result.output_tail()
    _note_tests(run, result, launch_log)
    return run


def _launch_log_args(launch_log: Path | None) -> list[str]:
    """--launch-log=FILE for the judge (an old file removed first), or nothing."""
    if launch_log is None:
        return []
    launch_log.parent.mkdir(parents=True, exist_ok=True)
    launch_log.unlink(missing_ok=True)
    return [f"--launch-log={launch_log}"]


def _note_tests(run: ToolRun, result: proc.ProcResult, launch_log: Path | None) -> None:
    """The run's failed tests, whether a call hung, and its launch log."""
    run.failed_tests = sorted(set(_FAILED_TEST.findall(result.stdout)))
    run.hung = HANG_MARK in result.stdout or HANG_MARK in result.stderr
    run.launch_log = launch_log


@dataclass
class Launch:
    """One kernel launch of a call, as the judge's launch log has it."""

    kernel: str
    grid: tuple[int, ...]
    block: tuple[int, ...]
    shared: int
    args: str  # digest of the argument values without pointers; "" when not known


@dataclass
class Call:
    """One forwarded call and its launches (one line of a launch log)."""

    function: str
    variant: str
    outcome: str
    total: int
    launches: list[Launch]

    @property
    def name(self) -> str:
        return self.function if self.variant in ("", "default") else f"{self.function} (variant {self.variant})"


def read_launch_log(path: Path | None) -> list[Call] | None:
    """The calls of a launch log, in order; None when there is none or it cannot be read."""
    if path is None:
        return None
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_LOG_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_LOG_BYTES:
        return None
    calls = []
    for line in data.decode("ascii", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
            launches = [Launch(str(l["kernel"]), tuple(int(v) for v in l["grid"]), tuple(int(v) for v in l["block"]),
                               int(l["shared"]), str(l.get("args", ""))) for l in raw["launches"]]
            calls.append(Call(str(raw["function"]), str(raw["variant"]), str(raw["outcome"]), int(raw["total"]),
                              launches))
        except (ValueError, KeyError, TypeError):
            return None  # a line cut short (the judge was killed mid-write): no comparison
    return calls


@dataclass
class Difference:
    """How a tool run's calls differed from the plain run's."""

    costs: bool  # a finding (True) or a note (False: grids only)
    text: str
    kernel: str | None = None


def compare_runs(plain: list[Call], tool: list[Call], tool_name: str) -> Difference | None:
    """The first difference between the plain run's calls and a tool run's, or None.

    Kernels (by name), their block sizes, dynamic shared memory and argument values must
    be the same, call by call: the same tests on the same data launch the same work. Where
    only grids differ (a grid sized from the occupancy API may differ under a tool), the
    difference is a note."""
    if len(plain) != len(tool):
        return Difference(True, f"the tests made {len(plain)} calls without {tool_name} and {len(tool)} under it")
    grid_note: Difference | None = None
    for number, (p, t) in enumerate(zip(plain, tool), 1):
        where = f"call {number} ({p.name})"
        if (p.function, p.variant) != (t.function, t.variant):
            return Difference(True, f"call {number} was {p.name} without {tool_name} and {t.name} under it")
        names_p, names_t = sorted(l.kernel for l in p.launches), sorted(l.kernel for l in t.launches)
        if names_p != names_t or p.total != t.total:
            only_plain = [k for k in names_p if k not in names_t]
            only_tool = [k for k in names_t if k not in names_p]
            if only_plain:
                kernel = only_plain[0]
                text = f"{where}: {demangled(kernel)} ran without {tool_name} but not under it"
            elif only_tool:
                kernel = only_tool[0]
                text = f"{where}: {demangled(kernel)} ran under {tool_name} but not without it"
            else:
                kernel = (names_p or names_t or [None])[0]
                text = (f"{where}: {max(p.total, len(p.launches))} launches without {tool_name}, "
                        f"{max(t.total, len(t.launches))} under it")
            return Difference(True, text, kernel)
        for lp, lt in zip(_ordered(p.launches), _ordered(t.launches)):
            name = demangled(lp.kernel)
            if (lp.block, lp.shared) != (lt.block, lt.shared):
                return Difference(True, f"{where}: {name} ran with block {_dims(lp.block)} and {lp.shared} bytes of "
                                  f"dynamic shared memory without {tool_name}, block {_dims(lt.block)} and "
                                  f"{lt.shared} bytes under it", lp.kernel)
            if lp.grid != lt.grid:
                grid_note = grid_note or Difference(False, f"{where}: {name} ran with grid {_dims(lp.grid)} without "
                                                    f"{tool_name} and {_dims(lt.grid)} under it", lp.kernel)
            elif lp.args and lt.args and lp.args != lt.args:
                return Difference(True, f"{where}: {name} was given other argument values under {tool_name} than "
                                  "without it", lp.kernel)
    return grid_note


def compare_with_plain(result: SanitizerResult) -> None:
    """Gives each clean tool run that behaved differently from the plain run a finding
    (status "differs"); grid-only differences, and comparisons that could not be made,
    become notes."""
    plain = result.plain
    if plain is None:
        return
    plain_calls = read_launch_log(plain.launch_log) if plain.status == "clean" else None
    if plain_calls is None:
        why = plain.status_text() if plain.status != "clean" else "left no launch record"
        result.notes.append(f"the run of the sanitizer's tests without the tools {why}: the tool runs were not "
                            "compared with it")
        return
    for run in result.runs:
        if run.status != "clean":
            continue  # findings already, or no answer: nothing to compare
        newly_failed = [name for name in run.failed_tests if name not in plain.failed_tests]
        if newly_failed and not run.hung:
            run.status = "differs"
            run.finding = Finding(run.tool, DIFFERS, detail=(
                f"{newly_failed[0]} failed under {run.tool} and passed without it: the code must do the same "
                "work under the tools as in graded runs"))
            continue
        calls = read_launch_log(run.launch_log)
        if calls is None:
            result.notes.append(f"{run.tool}: no launch record could be read, so the run was not compared with "
                                "the run without the tools")
            continue
        difference = compare_runs(plain_calls, calls, run.tool)
        if difference is None:
            continue
        if difference.costs:
            run.status = "differs"
            run.finding = Finding(run.tool, DIFFERS, function=short_function(demangled(difference.kernel))
                                  if difference.kernel else None,
                                  detail=f"{difference.text}; the code must do the same work under the tools "
                                  "as in graded runs")
        else:
            result.notes.append(f"{run.tool}: {difference.text} (no deduction: a grid sized from the occupancy "
                                "API may differ under a tool)")


def _ordered(launches: list[Launch]) -> list[Launch]:
    """Launches in a fixed order (by kernel, then as launched), so that two runs pair up."""
    return sorted(launches, key=lambda l: l.kernel)


def _dims(values: tuple[int, ...]) -> str:
    return "(" + ",".join(str(v) for v in values) + ")"


_DEMANGLED: dict[str, str] = {}


def demangled(name: str | None) -> str:
    """A kernel's name as written in C++ (c++filt where it is installed), shortened."""
    if not name:
        return "?"
    if name not in _DEMANGLED:
        text = name
        tool = shutil.which("c++filt")
        if tool and name.startswith("_Z") and re.fullmatch(r"[A-Za-z0-9_$.]+", name):
            try:
                done = proc.run([tool, "--", name], timeout=10)
                if done.returncode == 0 and done.stdout.strip():
                    text = done.stdout.strip().splitlines()[0]
            except proc.LaunchError:
                pass
        _DEMANGLED[name] = short_function(text)
    return _DEMANGLED[name]


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
