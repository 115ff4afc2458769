"""Run a lab's GoogleTest binary and turn its JSON output into per-test results.

GoogleTest writes its JSON only when the run ends, so a crash or a hang leaves none:
the test that was running is then read from the `[ RUN      ]` lines of stdout
(CONTRACT.md). GoogleTest 1.12 writes no skip message into the JSON at all, 1.14 puts
it under "skipped"; both are read, with stdout as the fallback.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable
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

    def reproduce(self, test: str) -> str:
        """A command that runs only `test`, with this run's seed."""
        return f"{self.command} {shlex.quote('--gtest_filter=' + test)}"


def run_tests(binary: Path, *, seed: int, timeout: float, json_path: Path, cwd: Path | None = None) -> TestRun:
    """Run `binary` with the grading seed and classify the outcome."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.unlink(missing_ok=True)  # a stale file must not pass for this run's
    command = proc.command_string([binary, f"--seed={seed}"])
    try:
        result = proc.run([binary, f"--gtest_output=json:{json_path}", f"--seed={seed}"],
                          timeout=timeout, env={"LABKIT_SEED": str(seed)}, cwd=cwd)
    except proc.LaunchError as exc:
        return TestRun(status.ERROR, f"{exc}: rebuild the lab, or check the file's permissions",
                       command=command)
    return classify(result, _read_json(json_path), timeout=timeout, command=command)


def classify(result: proc.ProcResult, data: dict[str, Any] | None, *, timeout: float, command: str) -> TestRun:
    """Turn a finished run (and its parsed JSON, or None) into a TestRun."""
    blocks = output_blocks(result.stdout)
    running = running_test(result.stdout)
    where = f" in test {running}" if running else ""
    if result.timed_out:
        return TestRun(
            status.TIMEOUT, running_test=running, command=command, output=result.output_tail(),
            message=(f"timed out after {timeout:g} s{where}. Likely a deadlock (__syncthreads() "
                     "inside a divergent branch, a spin-wait on a flag no other block sets) or "
                     "an infinite loop (check loop bounds and index updates)"))
    if data is None:
        how = (f"crashed with {result.signal_name}" if result.signal
               else f"exited with code {result.returncode} without writing its results")
        hint = _SIGNAL_HINTS.get(result.signal_name or "")
        return TestRun(status.CRASH, running_test=running, command=command, output=result.output_tail(),
                       message=f"{how}{where}" + (f" ({hint})" if hint else "")
                       + ". Run the reproduce command to see the output")
    try:
        tests = parse_json(data, blocks)
    except (TypeError, AttributeError, ValueError) as exc:
        return TestRun(status.ERROR, f"unreadable GoogleTest JSON ({exc}): is this a GoogleTest binary?",
                       command=command, output=result.output_tail())
    if result.signal:
        # Results were written, then the process died (e.g. in a destructor at exit).
        return TestRun(status.CRASH, tests=tests, command=command, output=result.output_tail(),
                       message=f"crashed with {result.signal_name} after the tests finished (at exit)")
    return TestRun(*summarize(tests), tests=tests, command=command)


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
            results.append(TestResult(name, outcome, trim(message), _seconds(test.get("time"))))
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


def _seconds(value: Any) -> float:
    try:
        return float(str(value).rstrip("s"))
    except ValueError:
        return 0.0


def _read_json(path: Path) -> dict[str, Any] | None:
    """Parsed JSON, or None when the file is missing, truncated or not an object."""
    try:
        data = json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
