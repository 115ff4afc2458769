"""Text pieces every format writes the same way: points, figures, clipped messages, a lab's
one-line note, a required variant's timing, text that XML can hold.

Pure functions of the report model (grader/report.py); no format imports another, they
all import this.
"""

from __future__ import annotations

import re
from typing import Any

from grader import status
from grader.report import Lab, Step

MAX_MESSAGE_CHARS = 1500  # per test in Classroom and Gradescope: env variables and check runs have limits

_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def pts(value: float) -> str:
    """Points with two decimals: 86.67."""
    return f"{value:.2f}"


def fmt(value: Any, suffix: str = "") -> str:
    """A bench figure in three significant digits (whole above 100), '–' when it is no number."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "–"
    return f"{value:.3g}{suffix}" if abs(value) < 100 else f"{value:.0f}{suffix}"


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text` stripped, cut at `limit` characters with a line that says how much was cut."""
    text = text.strip()
    return text if len(text) <= limit else text[:limit].rstrip() + f"\n[... {len(text) - limit} more characters]"


def first_line(text: str) -> str:
    """The first line of `text` that says something (joined with the next after a bare 'x:')."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return ""
    first = lines[0].strip()
    if first.endswith(":") and len(lines) > 1:  # "compilation failed:" says little alone
        first += " " + lines[1].strip()
    return first


def xml_text(text: str) -> str:
    """`text` without the control characters XML 1.0 cannot hold (colour codes, NULs)."""
    return _XML_INVALID.sub("", text)


def lab_note(lab: Lab) -> str:
    """What a score table says about a lab in one line: why it failed, the rule it broke,
    the sanitizer's first error, why it got no performance points, or its time ratio."""
    if lab.status is not status.PASS:
        return first_line(lab.message) or lab.status.name
    if lab.rules:
        return f"{lab.rule_title}: {lab.rules[0]}"
    if lab.sanitizer:
        return lab.sanitizer[0][0]
    if lab.performance_reason:
        return lab.performance_reason
    if lab.ratio:
        return f"{lab.ratio:.2f}× the reference time"
    return ""


def speed(lab: Lab) -> float | None:
    """How many times faster than the reference (above 1: faster)."""
    return round(1.0 / lab.ratio, 3) if lab.ratio else None


def performance_reason(lab: Lab) -> str:
    """Why the lab got the performance points it got ('' when nothing says)."""
    return lab.performance_reason or (f"{lab.ratio:.2f}x the reference time" if lab.ratio else "")


def step_figures(step: Step) -> tuple[str, str, str, str, str]:
    """A required variant's timing as text: your time, throughput, % of peak, the
    reference's version's time, and your speed relative to it ('-' where not timed)."""
    def ms(value: float | None) -> str:
        return f"{value:.3f} ms" if value is not None else "-"
    rate = f"{step.throughput:.0f} {step.unit}".strip() if step.throughput is not None else "-"
    peak = f"{step.pct_peak:.0f}%" if step.pct_peak is not None else "-"
    faster = f"{step.speed_vs_reference:.2f}×" if step.speed_vs_reference is not None else "-"
    return ms(step.ms), rate, peak, ms(step.reference_ms), faster
