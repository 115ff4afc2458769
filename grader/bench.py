"""Run a lab's bench binary and read its JSON (CONTRACT.md "Bench binaries").

The bench times the student's implementation against the reference in one process;
this module only runs it and checks that its JSON is the version this grader reads.
Turning the figures into points is score.py's job.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import proc, status
from grader.status import ResultCode

SCHEMA = "labkit-bench"
VERSION = 1
EXIT_CHECK_FAILED = 1
EXIT_BAD_ARGS = 2
EXIT_NO_GPU = 3


class BenchFormatError(ValueError):
    """The bench JSON is not labkit-bench version 1."""


@dataclass
class BenchRun:
    """Outcome of one bench run. `status` is None when the figures can be scored."""

    status: ResultCode | None
    message: str
    data: dict[str, Any] | None = None  # the validated bench JSON
    command: str = ""  # reproduces the run
    output: str = ""  # output tail, kept when something went wrong


def run_bench(binary: Path, *, seed: int, timeout: float, json_path: Path,
              reference: Path | None, variant: str, cwd: Path | None = None, impl: Path | None = None,
              graded_only: bool = True, time_variants: list[str] | None = None,
              gate: proc.Gate | None = None, env: Mapping[str, str] | None = None,
              floors: Mapping[str, float] | None = None) -> BenchRun:
    """Run `binary` (a judge bench when `impl`, the library under test, is given); `reference`
    is the reference library to load, if one is known. With `graded_only` the bench times what
    the grade needs: the graded workloads' student and reference, the library and the roofline,
    and the `time_variants` (the lab's required variants, the student's and the reference's).
    With a `gate` the bench sets up, then waits for `gate.open()` before timing anything. `env`
    holds environment overrides (the reproduce command names them). `floors` holds sampling
    floors other than the bench's own ({"--warm-up": S, "--min-time": S})."""
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.unlink(missing_ok=True)  # a stale file must not pass for this run's
    options = [f"--seed={seed}"]
    if impl is not None:
        options.append(f"--impl={impl}")
    if reference is not None:
        options += ["--reference", str(reference)]
    options += ["--reference-variant", variant]
    if graded_only:
        options.append("--graded-only")
    if time_variants:  # the lab's required variants, beside the reference's of the same names
        options += ["--time-variants", ",".join(time_variants)]
    options += [f"{flag}={value:g}" for flag, value in (floors or {}).items()]
    command = proc.command_string([binary, *options], env)
    try:
        gated = [f"--gate-fd={gate.child_fd}"] if gate is not None else []
        result = proc.run([binary, "--json", str(json_path), *gated, *options], timeout=timeout,
                          env={**(env or {}), "LABKIT_SEED": str(seed)}, cwd=cwd, gate=gate)
    except proc.LaunchError as exc:
        return BenchRun(status.ERROR, f"{exc}: rebuild the lab, or check the file's permissions",
                        command=command)
    run = classify(result, _read_json(json_path), timeout=timeout, command=command)
    problem = measured_elsewhere(run.data, seed=seed, variant=variant, impl=impl) if run.status is None else ""
    if problem:
        return BenchRun(status.ERROR, f"the bench measured something else than asked ({problem}): the "
                        "report is not used", run.data, command=command, output=run.output)
    return run


def measured_elsewhere(data: dict[str, Any] | None, *, seed: int, variant: str, impl: Path | None) -> str:
    """Why a bench report is not the workload the grader fixed ('' when it is): its seed, its
    reference variant and, for a judge bench, the library it tested must be the ones asked for."""
    if not isinstance(data, dict):
        return ""
    if data.get("seed") != seed:
        return f"seed {data.get('seed')!r} instead of {seed}"
    reference = data.get("reference") if isinstance(data.get("reference"), dict) else {}
    if reference.get("variant", variant) != variant:
        return f"reference variant {reference.get('variant')!r} instead of {variant!r}"
    options = data.get("options") if isinstance(data.get("options"), dict) else {}
    if options.get("size", 0) not in (0, None):
        return f"size {options.get('size')!r} instead of the lab's graded size"
    if impl is not None:
        judge = data.get("judge")
        if not isinstance(judge, dict):
            return "it was not timed by the judge"
        if judge.get("impl") != str(impl):
            return f"library {judge.get('impl')!r} instead of {str(impl)!r}"
    return ""


def classify(result: proc.ProcResult, data: Any, *, timeout: float, command: str) -> BenchRun:
    """Turn a finished bench process and its parsed JSON (None if absent) into a BenchRun."""
    tail = result.output_tail()
    if result.timed_out:
        return BenchRun(status.TIMEOUT, f"the bench timed out after {timeout:g} s: a kernel that is "
                        "far too slow or never ends at the bench's sizes", command=command, output=tail)
    if result.signal:
        return BenchRun(status.CRASH, f"the bench crashed with {result.signal_name}: run the "
                        "reproduce command to see where", command=command, output=tail)
    if result.returncode == EXIT_BAD_ARGS:
        return BenchRun(status.ERROR, "the bench rejected the grader's arguments: the grader and "
                        "the kit disagree on grader/CONTRACT.md", command=command, output=tail)
    if result.returncode == EXIT_NO_GPU or (isinstance(data, dict) and data.get("status") == "no_gpu"):
        return BenchRun(status.NO_GPU, "no CUDA GPU found: run the grader on a machine with an "
                        "NVIDIA GPU", data if isinstance(data, dict) else None, command=command)
    if data is None:
        return BenchRun(status.CRASH, f"the bench exited with code {result.returncode} without "
                        "writing valid JSON", command=command, output=tail)
    try:
        validate(data)
    except BenchFormatError as exc:
        return BenchRun(status.ERROR, f"unusable bench JSON: {exc}", command=command, output=tail)
    if result.returncode not in (0, EXIT_CHECK_FAILED):
        return BenchRun(status.CRASH, f"the bench exited with code {result.returncode}",
                        data, command=command, output=tail)
    # Exit 1 (a timed output was wrong) is scored, not an error: score.py reads the
    # failed checks from the JSON and gives no performance points.
    return BenchRun(None, "", data, command=command, output=tail if result.returncode else "")


def validate(data: Any) -> None:
    """Raise BenchFormatError unless `data` is labkit-bench version 1 in the shape scored."""
    if not isinstance(data, dict):
        raise BenchFormatError("not a JSON object")
    schema, version = data.get("schema"), data.get("version")
    if schema != SCHEMA or version != VERSION:
        raise BenchFormatError(
            f"schema {schema!r} version {version!r}, but this grader reads {SCHEMA!r} version "
            f"{VERSION}: update the grader and the kit together")
    workloads = data.get("workloads")
    if not isinstance(workloads, list):
        raise BenchFormatError("'workloads' is not a list")
    for w in workloads:
        if not isinstance(w, dict) or not isinstance(w.get("results"), list):
            raise BenchFormatError(f"workload {w!r:.60} has no 'results' list")
        if not all(isinstance(r, dict) for r in w["results"]):
            raise BenchFormatError(f"workload {w.get('name')!r} has a result that is not an object")
        pair = w.get("pair")
        if pair is not None and not isinstance(pair, dict):
            raise BenchFormatError(f"workload {w.get('name')!r}: 'pair' is neither an object nor null")


def _read_json(path: Path) -> Any:
    """Parsed JSON, or None when the file is missing or not JSON (a crash mid-write)."""
    try:
        return json.loads(path.read_text(errors="replace"))
    except (OSError, ValueError):
        return None


def noise(data: dict[str, Any] | None) -> tuple[int, float]:
    """How noisy a bench run was: (graded pairs flagged noisy, largest relative standard
    error of their ratio). Smaller is better; a run without figures is the worst."""
    if not isinstance(data, dict):
        return (1 << 30, float("inf"))
    pairs = [w.get("pair") for w in data.get("workloads", []) if isinstance(w, dict) and w.get("graded")]
    pairs = [p for p in pairs if isinstance(p, dict)]
    noisy = sum(bool(p.get("noisy")) for p in pairs)
    errors = [p.get("ratio_rel_se") for p in pairs]
    worst = max((e for e in errors if isinstance(e, (int, float))), default=0.0)
    return noisy, float(worst)


def is_noisy(run: BenchRun) -> bool:
    """Whether a scorable run has a graded student/reference pair flagged noisy."""
    return run.status is None and noise(run.data)[0] > 0


def less_noisy(first: BenchRun, second: BenchRun) -> BenchRun:
    """The run to score of two runs of the same bench: a scorable one, then the quieter."""
    if second.status is not None:
        return first
    if first.status is not None:
        return second
    return second if noise(second.data) < noise(first.data) else first


# ---- the rerun policy: which of a lab's bench runs is scored ---------------------------

def slowdown(timed: BenchRun) -> list[str]:
    """The clock-event reasons that slowed the GPU down, seen just after the run ([] if none)."""
    after = ((timed.data or {}).get("telemetry") or {}).get("after") or {}
    return list(after.get("slowdown") or [])


@dataclass
class Reruns:
    """How a lab's bench runs again: `run()` makes one more run (each writes its own JSON),
    `contradicted(run)` says how the judge's clock contradicts the worker's clock stamps
    ("boundary"; "" where it does not); `notes` receives what the report says about the reruns."""

    run: Callable[[], BenchRun]
    contradicted: Callable[[BenchRun], str]
    stage: Callable[[str], None]
    notes: list[str]
    noisy_reruns: int  # the config's bench_reruns
    cooldown_s: float
    runs: int = 0

    def again(self) -> BenchRun:
        self.runs += 1
        return self.run()


def scored_run(policy: Reruns) -> BenchRun:
    """The run to score: the first, again while the student/reference ratio is noisy (the
    least noisy is kept), after a pause when the GPU slowed down, and once more when the
    clock stamps were contradicted."""
    policy.stage("timing")
    timed = policy.again()
    while policy.runs <= policy.noisy_reruns and is_noisy(timed):
        policy.stage("noisy, timing again")
        timed = less_noisy(timed, policy.again())
    if policy.runs > 1:
        policy.notes.append(f"the bench's student/reference ratio was noisy: it ran {policy.runs} times and the "
                            "least noisy run was scored" + (" (still noisy)" if is_noisy(timed) else ""))
    timed = _after_slowdown(policy, timed)
    if timed.status is None and policy.contradicted(timed):
        timed = _after_contradiction(policy, timed)
    return timed


def _after_slowdown(policy: Reruns, timed: BenchRun) -> BenchRun:
    """A GPU that slowed down for heat or a hardware fault is not the student's speed: time
    again after a pause, and flag the figures if it happens again."""
    slowed = slowdown(timed)
    if not slowed:
        return timed
    policy.stage("GPU throttled, cooling down")
    time.sleep(policy.cooldown_s)
    again = policy.again()
    if again.status is None and not slowdown(again):
        policy.notes.append(f"the GPU slowed down during timing ({', '.join(slowed)}): timed again after a "
                            f"{policy.cooldown_s:g} s pause, and that run was scored")
        return again
    policy.notes.append(f"the GPU slowed down during timing ({', '.join(slowdown(again) or slowed)}) twice, "
                        "also after a pause: the figures were scored but may be low; grade this lab again")
    return timed


def _after_contradiction(policy: Reruns, timed: BenchRun) -> BenchRun:
    """Honest code meets contradicted clock stamps when something else used the GPU
    meanwhile; forged stamps meet them every time. A run without contradictions is trustworthy."""
    first = policy.contradicted(timed)
    policy.stage("clock stamps contradicted, timing again")
    again = policy.again()
    if again.status is None and not policy.contradicted(again):
        policy.notes.append("the judge's clock contradicted the clock stamps around your call in too many "
                            "samples (another process on the GPU does this too): timed again, and the clean "
                            f"run was scored (the first run: {first})")
        return again
    policy.notes.append("the judge's clock contradicted the clock stamps around your call in two runs: "
                        "the performance points are withheld; if nothing of yours forges timings or leaves "
                        "work running on a stream of its own, ask for a regrade on an idle GPU")
    return timed

