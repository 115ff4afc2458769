"""When each lab's stages run: how many labs are tested side by side, in which order, in how
many shards, and which benches set up while tests still run (grade.py, "Correctness first").

The order and the shards come from the seconds each lab took in the last run of the build
folder (layout.LAB_SECONDS); a bench set up early waits at its gate until the GPU is free
for its timing alone (PendingBench).
"""

from __future__ import annotations

import concurrent.futures
import json
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader import bench, gpu, layout, proc, status
from grader.outcome import LabResult
from grader.plan import Options

# One bench run of a lab's implementation under test: (options, result, attempt, the
# lecture's steps to time, the gate it waits at) -> the run (stages/timing.run_bench).
BenchRunner = Callable[[Options, LabResult, int, list[str], proc.Gate | None], bench.BenchRun]


@dataclass
class PendingBench:
    """A lab's first bench run, started as soon as its tests passed, while other labs were
    still tested: it sets up (workers, inputs, expected results) and waits at its gate
    (proc.Gate) until the GPU is free for its timing alone."""

    gate: proc.Gate
    future: concurrent.futures.Future[bench.BenchRun]

    def finish(self) -> bench.BenchRun:
        """Opens the gate and returns the run, with the GPU's telemetry around the timing."""
        before = gpu.telemetry(max_age_s=gpu.TELEMETRY_REUSE_S)
        self.gate.open()
        timed = self.future.result()
        if timed.data is not None:
            timed.data["telemetry"] = {"before": before, "after": gpu.telemetry()}
        return timed

    def cancel(self) -> None:
        """No turn for it (the lab failed later, or the run stopped): the bench stops."""
        self.gate.close()


class Prestarter:
    """Starts the first bench run of each lab whose tests passed, up to `slots` of them
    (each holds GPU memory while it waits); the rest set up in their turn."""

    def __init__(self, options: Options, slots: int, runner: BenchRunner) -> None:
        self.options = options
        self.slots = slots
        self.runner = runner
        self.pending: dict[str, PendingBench] = {}
        self._lock = threading.Lock()
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, slots),
                                                           thread_name_prefix="grader-bench")

    def start(self, result: LabResult, required: list[str]) -> None:
        """Sets up `result`'s bench now, if it will be timed and a slot is free."""
        options, lab = self.options, result.lab
        if not options.plan.bench or result.status is not status.PASS or result.implementation is None:
            return
        if not proc.is_executable(layout.judge_bench_path(options.build_dir, lab)):
            return  # time_lab reports it
        with self._lock:
            if len(self.pending) >= self.slots:
                return
            gate = proc.Gate(max_wait_s=options.config.grader["test_timeout_s"] * 4
                             + options.config.grader["bench_timeout_s"] * 12)
            future = self._pool.submit(self.runner, options, result, 1, required, gate)
            self.pending[lab] = PendingBench(gate, future)

    def wait_ready(self, timeout: float) -> None:
        """Waits until every started bench is set up (or has ended), at most `timeout` s in
        all: a timing must not share the GPU with another bench's set-up."""
        deadline = time.monotonic() + timeout
        for waiting in list(self.pending.values()):
            if not waiting.future.done():
                waiting.gate.wait_ready(deadline - time.monotonic())

    def take(self, lab: str) -> PendingBench | None:
        return self.pending.pop(lab, None)

    def cancel_all(self) -> None:
        for waiting in self.pending.values():
            waiting.cancel()
        self.pending.clear()
        self._pool.shutdown(wait=False)


def parallel_labs(options: Options) -> int:
    """How many labs are tested at once: the config's `parallel_labs`, or from the GPU's
    memory (every lab tested holds a judge and a worker context, and test buffers, and
    each sanitizer tool two more) and the CPU cores (a judge and its worker each keep one
    busy while the GPU works)."""
    wanted = options.config.grader.get("parallel_labs", "auto")
    if isinstance(wanted, int):
        return max(1, wanted)
    memory_mb = gpu.memory_mb()
    by_memory = 8 if memory_mb >= 60_000 else 4 if memory_mb >= 40_000 else 2 if memory_mb >= 16_000 else 1
    return max(1, min(by_memory, (os.cpu_count() or 2) // 2))


def prestart_slots(options: Options, labs: int) -> int:
    """How many benches may set up while tests run and wait for their turn: the config's
    `prestart_benches`, or one per 5 GB of GPU memory above 20 GB (a waiting bench holds
    three CUDA contexts and its graded inputs, up to about 4 GB)."""
    wanted = options.config.grader.get("prestart_benches", "auto")
    if isinstance(wanted, int):
        return max(0, min(wanted, labs))
    return max(0, min(labs, (gpu.memory_mb() - 20_000) // 5_000))


def side_by_side(options: Options, labs: list[str], one: Callable[[str], Any]) -> dict[str, concurrent.futures.Future]:
    """`one(lab)` for every lab, `parallel_labs` at a time, the longest first (test_order);
    the futures by lab, in the order of `labs`."""
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=min(len(labs), parallel_labs(options)) or 1)
    futures = {lab: pool.submit(one, lab) for lab in test_order(options, labs)}
    pool.shutdown(wait=False)
    return {lab: futures[lab] for lab in labs}


# Seconds each lab's tests and sanitizer took in the last run of this build folder: the
# longest are tested first, so that the last lab to finish is not a long one started late.
LAB_SECONDS_FILE = layout.LAB_SECONDS


def _lab_seconds(options: Options) -> dict[str, dict[str, float]]:
    """lab -> {"tests": s, "sanitizer": s} of the last run in this build folder (what can be read)."""
    try:
        known = json.loads((options.build_dir / LAB_SECONDS_FILE).read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for lab, value in known.items() if isinstance(known, dict) else ():
        if isinstance(value, dict):
            value = {k: float(v) for k, v in value.items()
                     if k in ("tests", "sanitizer") and isinstance(v, (int, float)) and not isinstance(v, bool)}
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = {"tests": float(value)}  # an older file: one figure for both
        else:
            continue
        if "tests" in value:
            out[lab] = value
    return out


def test_order(options: Options, labs: list[str]) -> list[str]:
    """`labs`, longest first by the last run's seconds (labs not seen yet first, in course order)."""
    known = _lab_seconds(options)

    def seconds(lab: str) -> float:
        return sum(known[lab].values()) if lab in known else float("inf")

    return sorted(labs, key=seconds, reverse=True)


SHARD_SECONDS = 20.0
MAX_SHARDS = 3


def test_shards(options: Options, lab: str) -> int:
    """How many processes run a lab's tests side by side: the config's `test_shards`, or with
    "auto" one per `SHARD_SECONDS` the lab's tests took last time (at most `MAX_SHARDS`), so
    that one long lab does not keep the others waiting at the end of the test phase."""
    wanted = options.config.grader.get("test_shards", 1)
    if isinstance(wanted, int):
        return max(1, wanted)
    last = _lab_seconds(options).get(lab, {}).get("tests", 0.0)
    return max(1, min(MAX_SHARDS, math.ceil(last / SHARD_SECONDS)))


def save_lab_seconds(options: Options, results: list[LabResult]) -> None:
    """Keeps this run's seconds per lab (tests and sanitizer) for test_order and test_shards;
    a lab that did not run its tests keeps its earlier figures."""
    path = options.build_dir / LAB_SECONDS_FILE
    known: dict[str, Any] = dict(_lab_seconds(options))
    for result in results:
        if "tests" in result.seconds:
            # Sharded tests took less wall time than the same tests in one process would:
            # keep the one-process estimate, so that the next run shards them again.
            shards = result.test_shards
            known[result.lab] = {"tests": round(result.seconds["tests"] * shards, 2),
                                 "sanitizer": round(result.seconds.get("sanitizer", 0.0), 2)}
    try:
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(known, indent=1, sort_keys=True) + "\n")
        temporary.replace(path)  # whole or not at all: grading jobs may share the build folder
    except OSError:
        pass  # only the order of the next run depends on it
