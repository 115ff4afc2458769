"""The charts of the class page (dashboard.py), as inline SVG: a histogram of scores per lab
and the speed ratios of every lab on one logarithmic axis.

Pure functions of numbers and already-escaped labels; every text they draw goes through
`esc`. Each mark carries a text label or a dash pattern, so a chart printed in black and
white still reads.
"""

from __future__ import annotations

import math
from statistics import median

from grader.formats.html_page import _esc as esc

BINS = 10  # of a score histogram: tenths of the lab's points
HIST_W, HIST_H = 330, 160
HIST_LEFT, HIST_RIGHT, HIST_TOP, HIST_BOTTOM = 30, 22, 30, 34

SPEED_W = 1060  # the speed chart: lab name | dots on a log axis | n and median
SPEED_LABEL = 150
SPEED_FIGURES = 190
SPEED_ROW = 34
SPEED_TOP = 40  # room for the labels of the 1x and 1.2x lines
SPEED_BOTTOM = 30
LABEL_CHAR_W = 6.5  # px per character of an 11 px label, a generous average

STYLE = """
svg.dash { display: block; max-width: 100%; height: auto; }
svg.dash text { font: 11px system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; fill: #1f2328; }
svg.dash text.tick, svg.dash text.sub { fill: #59636e; }
svg.dash text.lab { font-size: 12px; font-weight: 600; }
svg.dash .axis { stroke: #8c959f; stroke-width: 1; }
svg.dash .grid { stroke: #e4e8ec; stroke-width: 1; }
svg.dash .bin { fill: #6e9fd1; stroke: #1f4f82; stroke-width: 1; }
svg.dash .median { stroke: #1f2328; stroke-width: 2; stroke-dasharray: 5 3; }
svg.dash .dot { fill: #e8590c; fill-opacity: 0.55; stroke: #a33b05; stroke-width: 0.6; }
svg.dash .box { fill: none; stroke: #1f2328; stroke-width: 1.2; }
svg.dash .box-median { stroke: #1f2328; stroke-width: 2.5; }
svg.dash .same { stroke: #59636e; stroke-width: 1.5; }
svg.dash .full { stroke: #cf222e; stroke-width: 2; stroke-dasharray: 7 4; }
svg.dash text.full-label { fill: #cf222e; font-weight: 600; }
"""


def fmt(value: float) -> str:
    """A figure of the page: 86.7, 0.42, 12."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def quartiles(values: list[float]) -> tuple[float, float, float]:
    """(first quartile, median, third quartile) of a non-empty list (the midpoints' method)."""
    ordered = sorted(values)
    half = len(ordered) // 2
    low, high = ordered[:half] or ordered, ordered[(len(ordered) + 1) // 2:] or ordered
    return median(low), median(ordered), median(high)


def bin_counts(shares: list[float], bins: int = BINS) -> list[int]:
    """How many shares (points / max, clamped to [0, 1]) fall in each of `bins` equal bins; a
    full score falls in the last one."""
    counts = [0] * bins
    for share in shares:
        counts[min(bins - 1, max(0, int(min(max(share, 0.0), 1.0) * bins)))] += 1
    return counts


def histogram(shares: list[float], top: float, title: str) -> str:
    """The scores of one lab as a histogram: share of `top` on the x axis, students per bin."""
    counts = bin_counts(shares)
    plot_w, plot_h = HIST_W - HIST_LEFT - HIST_RIGHT, HIST_H - HIST_TOP - HIST_BOTTOM
    most = max(counts) or 1
    step = plot_w / BINS
    out = [f'<svg class="dash" viewBox="0 0 {HIST_W} {HIST_H}" width="{HIST_W}" height="{HIST_H}" role="img" '
           f'aria-label="{esc(title)}">']
    base = HIST_TOP + plot_h
    out.append(f'<line class="axis" x1="{HIST_LEFT}" y1="{base}" x2="{HIST_LEFT + plot_w}" y2="{base}"/>')
    for i, count in enumerate(counts):
        if count:
            height = plot_h * count / most
            x = HIST_LEFT + i * step
            out.append(f'<rect class="bin" x="{x + 1:.1f}" y="{base - height:.1f}" width="{step - 2:.1f}" '
                       f'height="{height:.1f}"/>')
            out.append(f'<text x="{x + step / 2:.1f}" y="{base - height - 3:.1f}" text-anchor="middle">{count}</text>')
    for share in (0, 0.5, 1):
        x = HIST_LEFT + share * plot_w
        out.append(f'<text class="tick" x="{x:.1f}" y="{base + 14}" text-anchor="middle">{fmt(share * top)}</text>')
    out.append(f'<text class="sub" x="{HIST_LEFT + plot_w / 2:.1f}" y="{HIST_H - 4}" text-anchor="middle">'
               f'points (out of {fmt(top)}); bars: students</text>')
    if shares:
        x = HIST_LEFT + min(max(median(shares), 0.0), 1.0) * plot_w
        out.append(f'<line class="median" x1="{x:.1f}" y1="{HIST_TOP - 16}" x2="{x:.1f}" y2="{base}"/>')
        anchor = "end" if x > HIST_LEFT + plot_w * 0.8 else "start"
        out.append(f'<text class="sub" x="{x + (-3 if anchor == "end" else 3):.1f}" y="{HIST_TOP - 18}" '
                   f'text-anchor="{anchor}">median</text>')
    out.append("</svg>")
    return "".join(out)


def log_axis(ratios: list[float], full: float) -> tuple[float, float, list[float]]:
    """(low, high, ticks) of a logarithmic axis that holds `ratios`, 1 and `full`."""
    low = min([*ratios, 1.0, full]) / 1.25
    high = max([*ratios, 1.0, full]) * 1.25
    low, high = max(low, 1e-3), min(high, 1e4)
    ticks = []
    for exponent in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            tick = mantissa * 10.0 ** exponent
            if low <= tick <= high:
                ticks.append(tick)
    return low, high, ticks


def speed_chart(rows: list[tuple[str, list[float]]], full: float) -> str:
    """The speed ratio (t_student / t_reference) of every lab, a row per lab: one dot per
    student, the box from the first to the third quartile with the median, the 1x line and
    the `full` line (full performance points at or left of it)."""
    ratios = [r for _, values in rows for r in values]
    low, high, ticks = log_axis(ratios, full)
    plot_x, plot_w = SPEED_LABEL, SPEED_W - SPEED_LABEL - SPEED_FIGURES
    height = SPEED_TOP + SPEED_ROW * len(rows) + SPEED_BOTTOM
    span = math.log(high) - math.log(low)

    def x(value: float) -> float:
        return plot_x + plot_w * (math.log(min(max(value, low), high)) - math.log(low)) / span

    bottom = SPEED_TOP + SPEED_ROW * len(rows)
    out = [f'<svg class="dash" viewBox="0 0 {SPEED_W} {height}" width="{SPEED_W}" height="{height}" role="img" '
           f'aria-label="speed ratio to the reference per lab">']
    for tick in ticks:
        out.append(f'<line class="grid" x1="{x(tick):.1f}" y1="{SPEED_TOP}" x2="{x(tick):.1f}" y2="{bottom}"/>')
        out.append(f'<text class="tick" x="{x(tick):.1f}" y="{bottom + 14}" text-anchor="middle">{fmt(tick)}×</text>')
    out.append(f'<text class="sub" x="{plot_x + plot_w / 2:.1f}" y="{bottom + 28}" text-anchor="middle">'
               "student time / reference time (log scale): left is faster</text>")
    for i, (lab, values) in enumerate(rows):
        out.append(_speed_row(lab, values, SPEED_TOP + SPEED_ROW * i, x, plot_x + plot_w))
    out.append(f'<line class="same" x1="{x(1.0):.1f}" y1="{SPEED_TOP - 4}" x2="{x(1.0):.1f}" y2="{bottom}"/>')
    out.append(f'<text class="sub" x="{x(1.0) - 4:.1f}" y="{SPEED_TOP - 8}" text-anchor="end">1× = as fast as the '
               "reference</text>")
    out.append(f'<line class="full" x1="{x(full):.1f}" y1="{SPEED_TOP - 22}" x2="{x(full):.1f}" y2="{bottom}"/>')
    label = f"{fmt(full)}×: full performance points at or left of this line"
    # Right of the line where it fits, else left of it (ending at the line), never cut off.
    if x(full) + 4 + LABEL_CHAR_W * len(label) <= SPEED_W:
        where = f'x="{x(full) + 4:.1f}"'
    else:
        where = f'x="{x(full) - 4:.1f}" text-anchor="end"'
    out.append(f'<text class="full-label" {where} y="{SPEED_TOP - 24}">{label}</text>')
    out.append("</svg>")
    return "".join(out)


def _speed_row(lab: str, values: list[float], top: float, x, right: float) -> str:
    middle = top + SPEED_ROW / 2
    out = [f'<line class="grid" x1="0" y1="{top + SPEED_ROW:.1f}" x2="{SPEED_W}" y2="{top + SPEED_ROW:.1f}"/>',
           f'<text class="lab" x="4" y="{middle + 4:.1f}">{esc(_clip(lab, 20))}</text>']
    if not values:
        out.append(f'<text class="sub" x="{right + 10:.1f}" y="{middle + 4:.1f}">no timed submission</text>')
        return "".join(out)
    q1, mid, q3 = quartiles(values)
    out.append(f'<rect class="box" x="{x(q1):.1f}" y="{middle - 9:.1f}" width="{max(x(q3) - x(q1), 1):.1f}" '
               'height="18"/>')
    out.append(f'<line class="box-median" x1="{x(mid):.1f}" y1="{middle - 11:.1f}" x2="{x(mid):.1f}" '
               f'y2="{middle + 11:.1f}"/>')
    for k, value in enumerate(values):
        jitter = ((k * 7919) % 13 - 6) * 1.3  # a fixed spread, so that equal ratios do not hide each other
        out.append(f'<circle class="dot" cx="{x(value):.1f}" cy="{middle + jitter:.1f}" r="3"/>')
    out.append(f'<text class="sub" x="{right + 10:.1f}" y="{middle + 4:.1f}">n = {len(values)}, median '
               f'{fmt(mid)}×</text>')
    return "".join(out)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
