"""Run a lab's GoogleTest binary and turn its JSON output into per-test results.

GoogleTest writes its JSON only when the run ends, so a crash or a hang leaves none:
the test that was running is then read from the `[ RUN      ]` lines of stdout
(CONTRACT.md). GoogleTest 1.12 writes no skip message into the JSON at all, 1.14 puts
it under "skipped"; both are read, with stdout as the fallback.

Points come from the JSON only (stdout is the student's to print into). The binary lists
the tests it will run as it starts them (`--list-file`; with `--gtest_list_tests` before
a sharded run, or when it wrote no list), so a test binary that ends early cannot pass
for one whose tests all ran: every listed test without a result counts as failed. A
failure whose message names a GPU fault (illegal address, launch failure, ...) is marked
as one.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import proc, status
from grader.status import ResultCode

NO_GPU_MARK = "no cuda gpu"  # compared lower-case: the tests' skip message says "No CUDA GPU"
MAX_MESSAGE_CHARS = 2000

_RUN = re.compile(r"^\[ RUN      \] (\S+)")
_END = re.compile(r"^\[\s*(OK|FAILED|SKIPPED)\s*\] ([^\s,]+)")
# Keys of a test object that are bookkeeping, not messages.
_PLAIN_KEYS = {"name", "file", "line", "status", "result", "timestamp", "time",
               "classname", "value_param", "type_param", "failures"}

# Text of a failure message -> the GPU fault it shows (lower-case match). After such a
# fault the CUDA context is unusable, so the tests after it fail too.
GPU_FAULTS: tuple[tuple[str, str], ...] = (
    ("cudaerrorillegaladdress", "illegal memory access"),
    ("an illegal memory access was encountered", "illegal memory access"),
    ("cudaerrorlaunchfailure", "unspecified launch failure"),
    ("unspecified launch failure", "unspecified launch failure"),
    ("cudaerrormisalignedaddress", "misaligned address"),
    ("misaligned address", "misaligned address"),
    ("cudaerrorillegalinstruction", "illegal instruction"),
    ("an illegal instruction was encountered", "illegal instruction"),
    ("cudaerrorhardwarestackerror", "hardware stack error"),
    ("cudaerrorinvalidpc", "invalid program counter"),
    ("cudaerrorinvalidaddressspace", "invalid address space"),
    ("cudaerrorassert", "device-side assert"),
    ("device-side assert triggered", "device-side assert"),
    ("cudaerrorlaunchtimeout", "kernel timed out"),
)
NOT_RUN = "the test binary exited before this test ran (exit(0) in the student code?)"
LIST_TIMEOUT_S = 60.0

_SIGNAL_HINTS = {
    "SIGSEGV": "a host-side invalid memory access, often a device pointer dereferenced on the host",
    "SIGBUS": "an invalid memory access on the host",
    "SIGABRT": "an abort: an uncaught exception or a failed assertion",
    "SIGFPE": "an arithmetic error on the host, such as an integer division by zero",
    "SIGKILL": "killed from outside, often by the out-of-memory killer",
}


@dataclass
class TestResult:
    """One test case: name `Suite.Name`, outcome passed/failed/skipped."""

    name: str
    outcome: str  # "passed" | "failed" | "skipped"
    message: str = ""
    time_s: float = 0.0
    gpu_fault: str | None = None  # e.g. "illegal memory access" when the failure shows one

    @property
    def no_gpu(self) -> bool:
        """Skipped because the machine has no CUDA GPU."""
        return self.outcome == "skipped" and NO_GPU_MARK in self.message.lower()


@dataclass
class TestRun:
    """Everything the grader learnt from one run of a test binary."""

    status: ResultCode  # PASS, PARTIAL, CRASH, TIMEOUT, NO_GPU or ERROR
    message: str
    tests: list[TestResult] = field(default_factory=list)
    running_test: str | None = None  # the test a crash or a hang happened in
    command: str = ""  # reproduces the whole run
    output: str = ""  # output tail, kept for crashes, hangs and errors
    # The seconds the binary reported for its tests (GoogleTest's "time", from the first
    # test's start to the last one's end; the slowest shard's), None when it wrote none:
    # the rest of the run's wall time went to the process's start and end.
    binary_s: float | None = None

    def reproduce(self, test: str) -> str:
        """A command that runs only `test`, with this run's seed."""
        return f"{self.command} {shlex.quote('--gtest_filter=' + test)}"


def run_tests(binary: Path, *, seed: int, timeout: float, json_path: Path, cwd: Path | None = None,
              extra_args: list[str] | None = None, shards: int = 1,
              env: Mapping[str, str] | None = None) -> TestRun:
    """List the tests of `binary`, run them with the grading seed and classify the outcome.
    `extra_args` go first (the judge's --impl=...); `env` holds environment overrides for
    every process, and the reproduce commands name them. With `shards` > 1 the listed tests are
    dealt round-robin to that many processes run side by side, each named in its own
    --gtest_filter (every test still runs whole, in a process of its own kind), and the
    outcomes are merged: the lab ends as the worst shard did (TIMEOUT, CRASH, ERROR),
    else by every test's result. Each shard writes <json_path stem>.<k>.json."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.unlink(missing_ok=True)  # a stale file must not pass for this run's
    extra = list(extra_args or [])
    env = dict(env or {})
    command = proc.command_string([binary, *extra, f"--seed={seed}"], env)
    env["LABKIT_SEED"] = str(seed)
    if shards > 1:
        listed = list_tests(binary, seed=seed, timeout=min(timeout, LIST_TIMEOUT_S), cwd=cwd, extra_args=extra,
                            env=env)
        groups = [g for g in ([listed[k::shards] for k in range(shards)] if listed else []) if g]
        if len(groups) > 1:
            return _run_shards(binary, groups, listed, seed=seed, timeout=timeout, json_path=json_path, cwd=cwd,
                               extra=extra, command=command, env=env)
    # One process: the binary writes the list of what it will run itself (--list-file),
    # which saves a second start of the judge and its worker only to list the tests.
    list_path = json_path.with_name(json_path.name + ".list")
    list_path.unlink(missing_ok=True)
    try:
        result = proc.run([binary, *extra, f"--gtest_output=json:{json_path}", f"--list-file={list_path}",
                           f"--seed={seed}"], timeout=timeout, env=env, cwd=cwd)
    except proc.LaunchError as exc:
        return TestRun(status.ERROR, f"{exc}: rebuild the lab, or check the file's permissions",
                       command=command)
    listed = _read_list(list_path)
    if listed is None:  # it ended before the list was written (or cannot write one): ask it
        listed = list_tests(binary, seed=seed, timeout=min(timeout, LIST_TIMEOUT_S), cwd=cwd, extra_args=extra,
                            env=env)
    return classify(result, _read_json(json_path), timeout=timeout, command=command, listed=listed)


def _read_list(path: Path) -> list[str] | None:
    """The names in a --list-file (one `Suite.Name` per line), or None when it was not written."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    return [line.strip() for line in text.splitlines() if line.strip()]


# The order in which a shard's ending decides the lab's: a hang first, then a crash.
_SHARD_PRECEDENCE = (status.TIMEOUT, status.CRASH, status.ERROR)


def _run_shards(binary: Path, groups: list[list[str]], listed: list[str], *, seed: int, timeout: float,
                json_path: Path, cwd: Path | None, extra: list[str], command: str,
                env: Mapping[str, str]) -> TestRun:
    """run_tests over `groups` of the `listed` tests, one process each, side by side; one
    TestRun with the tests in listed order."""
    def one(k: int) -> TestRun:
        path = json_path.with_name(f"{json_path.stem}.{k}.json")
        path.unlink(missing_ok=True)
        try:
            result = proc.run([binary, *extra, f"--gtest_output=json:{path}", f"--seed={seed}",
                               "--gtest_filter=" + ":".join(groups[k])],
                              timeout=timeout, env=env, cwd=cwd)
        except proc.LaunchError as exc:
            return TestRun(status.ERROR, f"{exc}: rebuild the lab, or check the file's permissions", command=command)
        return classify(result, _read_json(path), timeout=timeout, command=command, listed=groups[k])

    with concurrent.futures.ThreadPoolExecutor(max_workers=len(groups)) as pool:
        runs = list(pool.map(one, range(len(groups))))
    order = {name: i for i, name in enumerate(listed)}
    tests = sorted((t for run in runs for t in run.tests), key=lambda t: order.get(t.name, len(order)))
    for code in _SHARD_PRECEDENCE:
        worst = next((run for run in runs if run.status is code), None)
        if worst is not None:
            return TestRun(code, worst.message, tests=tests, running_test=worst.running_test, command=command,
                           output=worst.output)
    code, message = summarize_run(tests)
    known = [run.binary_s for run in runs if run.binary_s is not None]
    return TestRun(code, message, tests=tests, command=command,
                   output="\n".join(run.output for run in runs if run.output),
                   binary_s=max(known) if known else None)


def list_tests(binary: Path, *, seed: int, timeout: float, cwd: Path | None = None,
               extra_args: list[str] | None = None, env: Mapping[str, str] | None = None) -> list[str] | None:
    """The tests `binary` would run (`--gtest_list_tests`), or None when it cannot say."""
    try:
        result = proc.run([binary, *(extra_args or []), "--gtest_list_tests", f"--seed={seed}"], timeout=timeout,
                          env={**(env or {}), "LABKIT_SEED": str(seed)}, cwd=cwd)
    except proc.LaunchError:
        return None
    if result.timed_out or result.returncode != 0 or result.stdout_cut:
        return None
    return parse_test_list(result.stdout) or None


def parse_test_list(stdout: str) -> list[str]:
    """`Suite.Name` of every test in `--gtest_list_tests` output (disabled tests left out).

    Suites are lines `Suite.` (perhaps followed by `  # TypeParam = ...`), tests are the
    indented lines under them; other lines (the kit's `[labkit] ...`) are skipped."""
    names, suite = [], None
    for line in stdout.splitlines():
        text = line.split("#", 1)[0].rstrip()
        if not text.strip() or text.startswith("["):
            continue
        if not line[0].isspace():
            suite = text[:-1] if text.endswith(".") and " " not in text else None
        elif suite is not None:
            name = text.strip()
            if " " in name or not name:
                continue
            if not (suite.split("/")[-1].startswith("DISABLED_") or name.startswith("DISABLED_")):
                names.append(f"{suite}.{name}")
    return names


def classify(result: proc.ProcResult, data: dict[str, Any] | None, *, timeout: float, command: str,
             listed: list[str] | None = None) -> TestRun:
    """Turn a finished run (its parsed JSON, or None; the listed tests, or None) into a TestRun."""
    blocks = output_blocks(result.stdout)
    running = running_test(result.stdout)
    where = f" in test {running}" if running else ""
    if result.timed_out:
        return TestRun(
            status.TIMEOUT, running_test=running, command=command, output=result.output_tail(),
            tests=unreported(listed, [], running, f"timed out after {timeout:g} s in this test",
                             f"no result: the test binary timed out{where} first"),
            message=(f"timed out after {timeout:g} s{where}. Likely a deadlock (__syncthreads() "
                     "inside a divergent branch, a spin-wait on a flag no other block sets) or "
                     "an infinite loop (check loop bounds and index updates)"))
    if data is None:
        if result.signal:
            how = f"crashed with {result.signal_name}"
            hint = _SIGNAL_HINTS.get(result.signal_name or "")
        elif result.returncode == 0:
            # exit(0) from the student's code: a success code, but the tests did not all run.
            how = "exited with code 0 before writing its results"
            hint = "a call to exit() in your code? Report errors with LAB_CUDA_CHECK, never end the program"
        else:
            how = f"exited with code {result.returncode} without writing its results"
            hint = None
        return TestRun(status.CRASH, running_test=running, command=command, output=result.output_tail(),
                       tests=unreported(listed, [], running, f"the test binary {how} in this test",
                                        f"no result: the test binary {how}{where}"),
                       message=f"{how}{where}" + (f" ({hint})" if hint else "")
                       + ". Run the reproduce command to see the output")
    try:
        tests = parse_json(data, blocks)
    except (TypeError, AttributeError, ValueError) as exc:
        return TestRun(status.ERROR, f"unreadable GoogleTest JSON ({exc}): is this a GoogleTest binary?",
                       command=command, output=result.output_tail())
    missing = unreported(listed, tests, None, NOT_RUN, NOT_RUN)
    spent = binary_seconds(data)
    if result.signal:
        # Results were written, then the process died (e.g. in a destructor at exit).
        return TestRun(status.CRASH, tests=tests + missing, command=command, output=result.output_tail(),
                       message=f"crashed with {result.signal_name} after the tests finished (at exit)",
                       binary_s=spent)
    code, message = summarize_run(tests + missing)
    return TestRun(code, message, tests=tests + missing, command=command,
                   output=result.output_tail() if missing else "", binary_s=spent)


def binary_seconds(data: dict[str, Any]) -> float | None:
    """GoogleTest's own "time" of the whole run ("2.812s"), or None when absent or unreadable."""
    seconds = _seconds(data.get("time"), None)
    return round(seconds, 3) if seconds is not None and 0 <= seconds < 1e6 else None


def summarize_run(tests: list[TestResult]) -> tuple[ResultCode, str]:
    """summarize(), where listed tests that never reported (NOT_RUN) make the run PARTIAL
    and are named first, and the first GPU fault is noted."""
    code, message = summarize(tests)
    missing = sum(t.message == NOT_RUN for t in tests)
    if missing and code in (status.PASS, status.PARTIAL):
        code = status.PARTIAL
        message = (f"{missing} of {len(tests)} tests never reported a result: the test binary exited before "
                   "running them (exit(0) in the student code?); " + message)
    return code, gpu_fault_note(tests, message)


def unreported(listed: list[str] | None, results: list[TestResult], running: str | None,
               running_message: str, other_message: str) -> list[TestResult]:
    """Failed results for the listed tests that have none in `results`."""
    have = {t.name for t in results}
    return [TestResult(name, "failed", running_message if name == running else other_message)
            for name in (listed or []) if name not in have]


def gpu_fault(message: str) -> str | None:
    """The GPU fault a failure message shows ("illegal memory access", ...), or None."""
    text = message.lower()
    return next((fault for mark, fault in GPU_FAULTS if mark in text), None)


def gpu_fault_note(tests: list[TestResult], message: str) -> str:
    """`message`, plus where the first GPU fault happened, if one did."""
    first = next((t for t in tests if t.gpu_fault), None)
    if first is None:
        return message
    return (f"{message}; GPU fault ({first.gpu_fault}) in {first.name}: the CUDA context is lost after "
            "it, so later tests fail too. Fix this one first (compute-sanitizer names the line)")


def summarize(tests: list[TestResult]) -> tuple[ResultCode, str]:
    """Status and one-line message for a complete set of results."""
    if not tests:
        return status.ERROR, "the test binary ran no test: check the lab's test target"
    failed = sum(t.outcome == "failed" for t in tests)
    skipped = sum(t.outcome == "skipped" for t in tests)
    no_gpu = sum(t.no_gpu for t in tests)
    if no_gpu:
        return status.NO_GPU, (f"no CUDA GPU found ({no_gpu} GPU tests skipped): "
                               "run the grader on a machine with an NVIDIA GPU")
    if failed or skipped:
        parts = [f"{failed} of {len(tests)} tests failed"] if failed else []
        parts += [f"{skipped} skipped"] if skipped else []
        return status.PARTIAL, ", ".join(parts)
    return status.PASS, f"{len(tests)}/{len(tests)} tests passed"


def parse_json(data: dict[str, Any], blocks: dict[str, str] | None = None) -> list[TestResult]:
    """Per-test results from GoogleTest JSON (1.12 or 1.14).

    `blocks` (test name -> its stdout) supplies skip messages the JSON lacks.
    Disabled tests (SUPPRESSED) did not run and are left out.
    """
    results = []
    for suite in data.get("testsuites", []):
        for test in suite.get("testsuite", []):
            if test.get("result") == "SUPPRESSED" or test.get("status") == "NOTRUN":
                continue
            # A failure in SetUpTestSuite is reported as a test with no name.
            name = f"{test.get('classname') or suite.get('name', '?')}.{test.get('name') or '[suite set-up]'}"
            failures = test.get("failures")
            if failures:
                outcome = "failed"
                message = "\n".join(str(f.get("failure", f)) if isinstance(f, dict) else str(f)
                                    for f in failures)
            elif test.get("result") == "SKIPPED":
                outcome = "skipped"
                message = "\n".join(_strings(v for k, v in test.items() if k not in _PLAIN_KEYS))
                if not message.strip() and blocks:
                    message = blocks.get(name, "")
            else:
                outcome, message = "passed", ""
            fault = gpu_fault(message) if outcome == "failed" else None
            results.append(TestResult(name, outcome, trim(message), _seconds(test.get("time")), fault))
    return results


def running_test(stdout: str) -> str | None:
    """The last test that started (`[ RUN      ]`) and never reported an end."""
    open_tests: list[str] = []
    for line in stdout.splitlines():
        if m := _RUN.match(line):
            open_tests.append(m.group(1))
        elif (m := _END.match(line)) and m.group(2) in open_tests:
            open_tests.remove(m.group(2))
    return open_tests[-1] if open_tests else None


def output_blocks(stdout: str) -> dict[str, str]:
    """Test name -> what it printed between its RUN line and its end line."""
    blocks: dict[str, list[str]] = {}
    current = None
    for line in stdout.splitlines():
        if m := _RUN.match(line):
            current = m.group(1)
            blocks[current] = []
        elif _END.match(line):
            current = None
        elif current is not None:
            blocks[current].append(line)
    return {name: "\n".join(lines) for name, lines in blocks.items()}


def trim(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` stripped and cut to `limit` characters, saying how much was cut."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n[... {len(text) - limit} more characters]"


def _strings(values: Iterable[Any]) -> list[str]:
    """Every string inside `values`, however nested (for skip messages of any shape)."""
    found = []
    for value in values:
        if isinstance(value, str):
            found.append(value)
        elif isinstance(value, dict):
            found += _strings(value.values())
        elif isinstance(value, list):
            found += _strings(value)
    return found


def _seconds(value: Any, unreadable: float | None = 0.0) -> float | None:
    """GoogleTest's "1.25s" as 1.25; `unreadable` for anything else (a missing value too)."""
    try:
        return float(str(value).rstrip("s"))
    except ValueError:
        return unreadable


def _read_json(path: Path) -> dict[str, Any] | None:
    """Parsed JSON, or None when the file is missing, truncated or not an object."""
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
