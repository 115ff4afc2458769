"""Points from test results and bench figures (DESIGN.md "Grader").

Correctness: the lab's correctness points shared over its tests by weight.
Performance: only once correctness is full; with the ratio r = t_student / t_reference
(over several graded workloads, e.g. an aligned and an odd shape, the geometric mean of
their ratios, each workload's figures kept for the report) and the threshold
T = full_credit_ratio, full points when r <= T, else (the "continuous" curve, the
default) points * T / r, which has no step at T, or (the "cs149" curve) points / r.
Where the ratio's 95% confidence interval reaches T, the student gets the better side:
full points.
Figures that cannot be trusted (wrong timed outputs, changed inputs, work hidden from
the GPU timer, a speed above the device's roofline) earn nothing and are flagged.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from grader.config import LabSettings
from grader.gtest import TestResult

NOT_FULL = "performance is graded once every test passes"
NO_REFERENCE = "no reference library: performance not scored"
# More than this fraction of a student's samples with stamps the judge's clock contradicts
# (and more than 3): the figures are not trusted.
SUSPECT_FRACTION = 0.25
# How far past its bound the judge's clock may run in the contradicted calls (the median
# of the ones the bench describes) before the stamps count as forged: a share of the bound.
# A hand-over between processes now and then costs a few percent more than the
# calibration allowed (the H100 and the H200 showed 4-6% in honest runs, in a run's
# first call after an idle moment); forged stamps hide a whole call, or a stream's work.
# Nothing is gained under it: a contradicted sample is timed by the judge's clock less
# the bound, never by its stamps.
BOUNDARY_MARGIN = 0.15
# The ratio's confidence interval is ratio * (1 +- DOUBT_Z * ratio_rel_se): 95%.
DOUBT_Z = 1.96
CURVES = ("continuous", "cs149")


@dataclass
class Correctness:
    points: float
    max: float
    full: bool  # every weighted test passed: the gate for performance points
    tests: list[dict[str, Any]] = field(default_factory=list)  # name, status, weight, message


@dataclass
class Performance:
    points: float
    max: float
    ratio: float | None = None  # t_student / t_reference (geometric mean if several workloads)
    t_student_ms: float | None = None  # summed over the graded workloads
    t_reference_ms: float | None = None
    reason: str = ""  # why no points (or fewer) were given; empty when scored
    workloads: list[dict[str, Any]] = field(default_factory=list)
    # Why the timed figures were not trusted: "check_failures", "inputs_changed",
    # "host_suspect", "boundary" (stamps the judge's clock contradicts), "roofline"
    # (faster than the device's peak allows), "no_student"; and "throttled" (the GPU slowed
    # down for heat twice: scored, but the report says to grade again), "shared_gpu" (timed
    # without the GPU's lock, gpu_lock.py: likewise).
    flags: list[str] = field(default_factory=list)


def score_correctness(tests: list[TestResult], settings: LabSettings) -> Correctness:
    """Weighted share of passed tests; a skipped test counts as not passed."""
    rows, total, passed = [], 0.0, 0.0
    for test in tests:
        weight = settings.weight(test.name)
        total += weight
        passed += weight if test.outcome == "passed" else 0.0
        row = {"name": test.name, "status": test.outcome, "weight": weight, "message": test.message}
        if test.gpu_fault:
            row["gpu_fault"] = test.gpu_fault
        rows.append(row)
    # Decided on the weights, not on rounded points: 69.996 shows as 70.00 but is not full.
    full = bool(tests) and all(r["status"] == "passed" for r in rows if r["weight"] > 0)
    share = passed / total if total else float(full)
    return Correctness(round(settings.correctness_points * share, 2), settings.correctness_points, full, rows)


def score_performance(bench: dict[str, Any] | None, settings: LabSettings, *,
                      correctness_full: bool, unavailable: str = "") -> Performance:
    """Performance points from validated bench JSON.

    `unavailable` is the reason to give when there is no bench JSON (skipped, crashed).
    """
    zero = Performance(0.0, settings.performance_points)
    if not correctness_full:
        zero.reason = NOT_FULL
        return zero
    if bench is None:
        zero.reason = unavailable or "the bench did not run"
        return zero
    graded = [w for w in bench.get("workloads", []) if w.get("graded")]
    if not graded:
        zero.reason = "the bench reported no graded workload"
        return zero
    rows = []
    for workload in graded:
        name = workload.get("name", "?")
        student = _result(workload, "student")
        flag, distrust = _distrust(name, student, settings.max_pct_peak)
        if distrust:
            zero.reason, zero.flags = distrust, [flag]
            return zero
        ratio = (workload.get("pair") or {}).get("ratio_median")
        if not _reference_loaded(bench) or not isinstance(ratio, (int, float)) or ratio <= 0:
            error = (bench.get("reference") or {}).get("error")
            zero.reason = NO_REFERENCE + (f" ({error})" if error else "")
            return zero
        rel_se = (workload.get("pair") or {}).get("ratio_rel_se")
        rel_se = float(rel_se) if isinstance(rel_se, (int, float)) and rel_se > 0 else 0.0
        points, doubt = curve_points(ratio, rel_se, settings)  # this workload alone, for the report
        rows.append({"name": name, "ratio": ratio, "points": round(points, 2), "benefit_of_doubt": doubt,
                     "rel_se": rel_se,
                     "t_student_ms": student.get("median_ms"),
                     "t_reference_ms": (_result(workload, "reference") or {}).get("median_ms"),
                     "noisy": bool((workload.get("pair") or {}).get("noisy"))})
        suspect = student.get("boundary_suspect") or 0
        if suspect > 0:  # samples timed by the judge's clock: the report says how many
            rows[-1]["judge_clock_samples"] = suspect
            rows[-1]["samples"] = student.get("samples")
            # Past the threshold, but only a little past the bound (marginal_misses): scored, with a note.
            rows[-1]["boundary_marginal"] = _too_many_suspect(student)
            rows[-1]["boundary_detail"] = _misses(student).removeprefix("; ")
    # The geometric mean of the ratios, and its relative standard error (that of the mean
    # of the logarithms): one slow shape costs what it costs, whatever its time in ms.
    ratio = math.exp(sum(math.log(r["ratio"]) for r in rows) / len(rows))
    rel_se = math.sqrt(sum(r["rel_se"] ** 2 for r in rows)) / len(rows)
    points, doubt = curve_points(ratio, rel_se, settings)
    if len(rows) > 1 and doubt:
        for r in rows:
            r["benefit_of_doubt"] = True
    for r in rows:
        del r["rel_se"]
    return Performance(
        points=round(points, 2),
        max=settings.performance_points,
        ratio=round(ratio, 4),
        t_student_ms=_sum(r["t_student_ms"] for r in rows),
        t_reference_ms=_sum(r["t_reference_ms"] for r in rows),
        workloads=rows)


def curve_points(ratio: float, rel_se: float, settings: LabSettings) -> tuple[float, bool]:
    """(points, whether the benefit of the doubt gave them) for one workload's ratio
    t_student / t_reference, known to a relative standard error `rel_se`."""
    full, threshold = settings.performance_points, settings.full_credit_ratio
    if ratio <= threshold:
        return full, False
    # The interval's lower end reaches the threshold: the timing cannot tell this
    # student from one at the threshold, so they get the better side.
    if settings.benefit_of_doubt and rel_se > 0 and ratio * (1 - DOUBT_Z * rel_se) <= threshold:
        return full, True
    if settings.performance_curve == "cs149":
        # min(): a course may set full_credit_ratio < 1, and being faster never earns more.
        return min(full, full / ratio), False
    return full * threshold / ratio, False


def _distrust(workload: str, student: dict[str, Any] | None, max_pct_peak: float = 100.0) -> tuple[str, str]:
    """(flag, why) when the student's timed figures cannot be used, else ('', '')."""
    if student is None:
        return "no_student", f"the bench reported no student result for {workload!r}"
    if (student.get("check_failures") or 0) > 0:
        first = student.get("first_failure")
        return "check_failures", (f"the student's timed outputs failed checks in {workload!r}"
                                  + (f" ({first})" if first else "") + ": fix correctness at the bench's sizes")
    if student.get("inputs_changed"):
        return "inputs_changed", f"the student's code changed its inputs while timed in {workload!r}"
    # Calls whose stamps the judge's clock contradicts happen to honest code too (a late
    # hand-over; on an H100, up to half the calls of a run): the bench makes such a call
    # again, up to 3 times, and counts a sample as suspect only when every call
    # disagreed. Such samples are timed by the judge's clock anyway. Forged stamps
    # contradict it on every call.
    suspect, samples = student.get("boundary_suspect") or 0, student.get("samples") or 0
    if _too_many_suspect(student) and not marginal_misses(student):
        return "boundary", (f"in {suspect} of {samples} samples of {workload!r} the judge's own clock contradicts "
                            "the clock stamps around your call (they claim less time than the GPU was busy: forged "
                            "stamps, or work left running on a stream the default stream does not wait for)"
                            f"{_misses(student)}: flagged and not scored")
    if (student.get("host_suspect") or 0) > 0:
        return "host_suspect", (f"host time far above GPU time in {student['host_suspect']} samples of "
                                f"{workload!r}: launch all work on the default stream and return only "
                                "when it is queued")
    pct = student.get("pct_peak")
    if isinstance(pct, (int, float)) and pct > max_pct_peak:
        return "roofline", (f"the student's time in {workload!r} is {pct:.0f}% of the device's peak, faster "
                            "than the hardware allows: flagged and not scored (is work skipped, or a result "
                            "reused from an earlier call?)")
    return "", ""


def _too_many_suspect(student: dict[str, Any]) -> bool:
    """More suspect samples than SUSPECT_FRACTION of them, and more than 3."""
    suspect, samples = student.get("boundary_suspect") or 0, student.get("samples") or 0
    return suspect > max(3, SUSPECT_FRACTION * samples)


def _miss_figures(student: dict[str, Any]) -> tuple[float, float] | None:
    """(median gap, bound) in ms of the contradicted calls the bench described, or None."""
    misses = student.get("boundary_misses")
    if not isinstance(misses, dict):
        return None
    gaps = [g for g in misses.get("gaps_ms") or [] if isinstance(g, (int, float)) and not isinstance(g, bool)]
    bound = misses.get("bound_ms")
    if not gaps or not isinstance(bound, (int, float)) or isinstance(bound, bool) or bound <= 0:
        return None
    return statistics.median(gaps), float(bound)


def marginal_misses(student: dict[str, Any]) -> bool:
    """Whether the contradicted calls ran past their bound by no more than BOUNDARY_MARGIN of
    it (a slow hand-over, not forged stamps); False when the bench described none."""
    figures = _miss_figures(student)
    return figures is not None and figures[0] <= figures[1] * (1 + BOUNDARY_MARGIN)


def _misses(student: dict[str, Any]) -> str:
    """How far the judge's clock ran past the stamps in the contradicted calls the bench
    described (boundary_misses), against the bound they were held to; "" without them."""
    figures = _miss_figures(student)
    if figures is None:
        return ""
    return (f"; in those calls the GPU was busy {1000 * figures[0]:.0f} us (median) beyond the stamps, "
            f"where {1000 * figures[1]:.0f} us is allowed")


def _result(workload: dict[str, Any], role: str) -> dict[str, Any] | None:
    return next((r for r in workload.get("results", []) if r.get("role") == role), None)


def _reference_loaded(bench: dict[str, Any]) -> bool:
    ref = bench.get("reference")
    return not isinstance(ref, dict) or ref.get("loaded") is not False


def _sum(values: Iterable[Any]) -> float | None:
    values = list(values)
    if any(not isinstance(v, (int, float)) for v in values):
        return None
    return round(sum(values), 6)
