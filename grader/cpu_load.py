"""How busy the host's processors were while a grading run went on: a thread reads the
kernel's processor times (/proc/stat) twice a second, and each sample is the share of
all cores that were busy since the last one. A diagnostic, in no score: the report keeps
the samples ("cpu_busy") and `python3 -m grader.tests.gpu_check timeline` draws them under
the labs' stages, so that one sees whether the tests phase waits for the processors
(the labs' tests, the sanitizer's tools and the benches' set-up share them) or for the GPU.
A process that spins while it waits for the GPU counts as busy: the judges' workers spin
by default (LABKIT_GPU_WAIT in grader/CONTRACT.md), so a full row says the cores were
taken, not that all of it was useful work; a grade with LABKIT_GPU_WAIT=yield tells the
two apart. Where /proc/stat cannot be read (not Linux), there are no samples.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

INTERVAL_S = 0.5
STAT = Path("/proc/stat")


def parse_stat(text: str) -> tuple[int, int] | None:
    """(busy, total) processor time of all cores from /proc/stat's first line, in the
    kernel's ticks, or None when it is not such a line. Idle and waiting for I/O count as
    not busy; guest time is already inside user time, so the first eight fields add up."""
    first = text.split("\n", 1)[0].split()
    if len(first) < 5 or first[0] != "cpu":
        return None
    try:
        values = [int(v) for v in first[1:9]]
    except ValueError:
        return None
    total = sum(values)
    return total - values[3] - values[4], total


def read_stat() -> tuple[int, int] | None:
    try:
        return parse_stat(STAT.read_text())
    except OSError:
        return None


class Sampler:
    """Samples the processors' load from start() to stop(): [seconds since `origin`, share
    of the cores busy over the interval that ended then] every `interval` s."""

    def __init__(self, origin: float, interval: float = INTERVAL_S,
                 read: Callable[[], tuple[int, int] | None] = read_stat) -> None:
        self.origin, self.interval, self.read = origin, interval, read
        self.samples: list[list[float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Sampler:
        if self.read() is not None:  # nothing to sample where the times cannot be read
            self._thread = threading.Thread(target=self._run, name="grader-cpu-load", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        last = self.read()
        while not self._stop.wait(self.interval):
            now = self.read()
            if last is not None and now is not None and now[1] > last[1]:
                busy = (now[0] - last[0]) / (now[1] - last[1])
                self.samples.append([round(time.monotonic() - self.origin, 2), round(min(1.0, max(0.0, busy)), 3)])
            last = now

    def stop(self) -> dict[str, Any] | None:
        """Ends the sampling; the report's "cpu_busy" (None where nothing was sampled)."""
        self._stop.set()
        if self._thread is None:
            return None
        self._thread.join(timeout=2 * self.interval + 1)
        return {"cores": os.cpu_count(), "interval_s": self.interval, "samples": list(self.samples)}


def samples_of(load: Any) -> list[tuple[float, float]]:
    """The well-formed samples of a report's "cpu_busy" ([seconds, share] with the share
    between 0 and 1); none for anything else."""
    return well_formed_samples(load, shares=1)


def well_formed_samples(load: Any, shares: int) -> list[tuple[float, ...]]:
    """A sampler's report entry ({"samples": [[seconds, share, ...], ...]}) read back: the
    samples of `shares` shares each, seconds not negative and shares between 0 and 1; the
    others left out (also used for the GPU's samples, gpu_load.py)."""
    samples = load.get("samples") if isinstance(load, dict) else None
    if not isinstance(samples, list):
        return []
    return [tuple(float(v) for v in s) for s in samples if isinstance(s, list) and len(s) == 1 + shares
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in s)
            and s[0] >= 0 and all(0 <= v <= 1 for v in s[1:])]
