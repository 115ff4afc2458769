"""How busy a class's GPUs were while batch graded (DIR/timing.json and batch's summary):
each GPU's busy time, and its idle time waiting for compiles or at the end."""

from __future__ import annotations

import threading
from typing import Any


def _merged(spans: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """`spans` as sorted, disjoint intervals."""
    out: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if end <= start:
            continue
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _length(spans: list[tuple[float, float]], since: float = float("-inf"), until: float = float("inf")) -> float:
    """Seconds the disjoint `spans` cover between `since` and `until`."""
    return sum(max(0.0, min(end, until) - max(start, since)) for start, end in spans)


def _overlap(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Where the disjoint, sorted intervals `a` and `b` overlap."""
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        start, end = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if start < end:
            out.append((start, end))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


class GpuUse:
    """When each GPU had a grader on it, and when a grading job of it waited for a compile.

    The busy time of a GPU is the union of its graders' spans (from the process's start to
    its end), whatever they did meanwhile. The rest of the grading time it was idle, either
    waiting for a compile (a job of that GPU had its next student but that student's files
    were still compiling: the compiles did not keep up) or at the end (no student was left
    for it while other GPUs graded their last ones; also the few milliseconds between two
    students)."""

    def __init__(self, gpus: list[str | None]) -> None:
        self.spans: dict[str | None, list[tuple[float, float]]] = {one: [] for one in gpus}
        self.waits: dict[str | None, list[tuple[float, float]]] = {one: [] for one in gpus}
        self._lock = threading.Lock()

    def add(self, one: str | None, start: float, end: float) -> None:
        with self._lock:
            self.spans.setdefault(one, []).append((start, end))

    def add_wait(self, one: str | None, start: float, end: float) -> None:
        """A grading job of GPU `one` waited from `start` to `end` for its next student's compile."""
        with self._lock:
            self.waits.setdefault(one, []).append((start, end))

    def busy(self, one: str | None) -> float:
        """Seconds at least one grader held GPU `one`."""
        return _length(_merged(self.spans.get(one, [])))

    def idle(self, one: str | None, since: float, until: float) -> dict[str, float]:
        """GPU `one`'s idle seconds between `since` and `until`: `waited_s` for a compile
        (`first_wait_s` of them before its first student), and `tail_s` otherwise."""
        busy = _merged(self.spans.get(one, []))
        waits = _merged(self.waits.get(one, []))
        waited = _length(waits, since, until) - _length(_overlap(waits, busy), since, until)
        first = min((start for start, _ in busy), default=until)
        first_wait = _length(waits, since, min(first, until))
        tail = (until - since) - _length(busy, since, until) - waited
        return {"waited_s": max(0.0, waited), "first_wait_s": max(0.0, first_wait), "tail_s": max(0.0, tail)}

    def summary(self, since: float, until: float) -> list[dict[str, Any]]:
        """Per GPU: its busy seconds between `since` and `until`, that span, the share, the
        students, and its idle seconds waiting for a compile and at the end."""
        span = max(until - since, 1e-9)
        out = []
        for one, spans in self.spans.items():
            busy = self.busy(one)
            idle = self.idle(one, since, until)
            out.append({"gpu": one, "busy_s": round(busy, 1), "of_s": round(span, 1),
                        "share": round(min(busy / span, 1.0), 3), "students": len(spans),
                        **{key: round(value, 1) for key, value in idle.items()}})
        return out


def gpu_lines(summary: list[dict[str, Any]]) -> list[str]:
    """`GPU 0: busy 812 s of 843 s (96%), 11 students; waited 20 s for compiles (3 s before
    its first student), 11 s idle at the end` per GPU."""
    lines = []
    for one in summary:
        name = f"GPU {one['gpu']}" if one["gpu"] is not None else "no GPU"
        students = f"{one['students']} student{'s' * (one['students'] != 1)}"
        line = f"  {name}: busy {one['busy_s']:.0f} s of {one['of_s']:.0f} s ({100 * one['share']:.0f}%), {students}"
        if "waited_s" in one:
            line += (f"; waited {one['waited_s']:.0f} s for compiles ({one['first_wait_s']:.0f} s before its first "
                     f"student), {one['tail_s']:.0f} s idle at the end")
        lines.append(line)
    return lines


def compile_line(compiles: dict[str, Any]) -> str:
    """`compiles: 4.2 s per student (longest 7 s), 5 students at a time on 22 cores; 1 s
    waiting for the shared kit build's check` (batch's summary)."""
    cores = f" on {compiles['cores']} cores" if compiles.get("cores") else ""
    builders = compiles["builders"]
    return (f"  compiles: {compiles['per_student_s']:.1f} s per student (longest {compiles['max_s']:.0f} s), "
            f"{builders} student{'s' * (builders != 1)} at a time{cores}; {compiles['kit_check_wait_s']:.0f} s "
            "waiting for the shared kit build's check")
