"""Gradescope's results.json: tests per lab (correctness, performance, rules, sanitizer, the
lecture's steps, the graded questions) and a leaderboard.

    python3 -m grader report report.json --gradescope /autograder/results/results.json

results.json as specified in gradescope/autograder_samples docs/specs.md ("Output
format"): top-level "score" (overrides the sum of the tests), "execution_time",
"output", "tests" [{"name", "score", "max_score", "status": "passed"|"failed",
"output", "tags", "visibility"}], "leaderboard" [{"name", "value", "order": "asc"|"desc"}].
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from grader import status
from grader.formats.text import clip, performance_reason, pts, speed, step_figures
from grader.report import AT_DEADLINE, Lab, read

MAX_FAILED_SHOWN = 10  # failed tests detailed per lab in a correctness test's output


def gradescope(data: Any, visibility: str = "visible") -> dict[str, Any]:
    """Gradescope's results.json: a correctness and a performance test per lab, the
    speed relative to the reference on the leaderboard."""
    report = read(data)
    tests: list[dict[str, Any]] = []
    leaderboard: list[dict[str, Any]] = []
    for lab in report.labs:
        tests += _lab_tests(lab, visibility)
        entry = _leaderboard_entry(lab)
        if entry:
            leaderboard.append(entry)
    leaderboard.append({"name": "total points", "value": report.total, "order": "desc"})
    result: dict[str, Any] = {
        "score": report.total,
        "output": " · ".join(p for p in [f"{pts(report.total)} / {report.max:g} points",
                                         f"graded on {report.gpu_label}" if report.gpu_label else "",
                                         f"seed {report.seed}" if report.seed is not None else "",
                                         *report.notes] if p),
        "visibility": visibility,
        "tests": tests,
        "leaderboard": leaderboard,
    }
    elapsed = _elapsed(report.started, report.finished)
    if elapsed is not None:
        result["execution_time"] = elapsed
    return result


def _lab_tests(lab: Lab, visibility: str) -> list[dict[str, Any]]:
    """The tests of one lab: correctness, performance, rules, sanitizer, steps, questions."""
    def test(name: str, score: float, max_score: float, passed: bool, output: str, tag: str,
             shown: str = visibility) -> dict[str, Any]:
        return {"name": f"{lab.name}: {name}", "score": score, "max_score": max_score,
                "status": "passed" if passed else "failed", "output": output, "tags": [lab.name, tag],
                "visibility": shown}

    tests = [test("correctness", lab.correctness, lab.correctness_max,
                  lab.correctness >= lab.correctness_max and lab.status is status.PASS,
                  _correctness_output(lab), "correctness")]
    if lab.performance_max:
        tests.append(test("performance", lab.performance, lab.performance_max,
                          lab.performance >= lab.performance_max, performance_reason(lab), "performance"))
    if lab.rule_deduction:
        tests.append(test("rules", -lab.rule_deduction, 0, False, "\n".join(lab.rules), "rules"))
    if lab.sanitizer_deduction or lab.sanitizer:
        output = "\n".join(m for m, _, _ in lab.sanitizer) + (
            f"\nreproduce: {lab.reproduce['sanitizer']}" if lab.reproduce.get("sanitizer") else "")
        tests.append(test("compute-sanitizer", -lab.sanitizer_deduction, 0, not lab.sanitizer, output,
                          "compute-sanitizer"))
    for step in lab.steps:
        yours, rate, peak, lecture, faster = step_figures(step)
        timing = (f"\nyour time {yours} ({rate}, {peak} of peak); the reference's {step.name}: {lecture}; "
                  f"your speed vs it: {faster}") if step.ms is not None else ""
        tests.append(test(f"step {step.name} ({step.title})", step.points, step.max, step.points >= step.max,
                          f"{step.status}: {step.why}" + timing + (f"\nnote: {step.note}" if step.note else ""),
                          "variants"))
    for q in lab.questions:
        # Written answers go to the instructor for grading by hand (Gradescope shows
        # hidden tests to course staff only); checked ones score like tests, and a bench
        # figure from another GPU waits for the instructor with its points.
        output = (f"Answer:\n{clip(q.answer, 3000)}" if q.answer else "No answer.") + (f"\n\n{q.why}" if q.why else "")
        later = " (graded at the deadline)" if q.status == AT_DEADLINE else " (graded by hand)"
        tests.append(test(f"question {q.id}" + (later if q.pending else ""), 0.0 if q.pending else q.points,
                          0.0 if q.pending else q.max, q.status == "correct", output, "answers",
                          "hidden" if q.by_hand else visibility))
    return tests


def _correctness_output(lab: Lab) -> str:
    """The lab's status and message, then each failed graded test with how to reproduce it."""
    failed = [t for t in lab.failed_tests if t.weight > 0]
    lines = [f"{lab.status.name}: {lab.message.strip()}"] if lab.message else [lab.status.name]
    for test in failed[:MAX_FAILED_SHOWN]:
        lines.append(f"\n{test.name}\n{clip(test.message, 800)}" + (f"\nreproduce: {test.reproduce}" if test.reproduce else ""))
    if not failed and lab.failure_command and lab.status is not status.PASS:
        lines.append(f"\nreproduce: {lab.failure_command}")
    return clip("\n".join(lines), 6000)


def _leaderboard_entry(lab: Lab) -> dict[str, Any] | None:
    """The lab's speed on the leaderboard (None when it was not timed or did not pass).

    It ranks against the fastest reference when that was timed (the stretch goal), else
    against the graded one; it never changes a score."""
    stretch = next((w.stretch_ratio for w in lab.workloads if w.stretch_ratio), None)
    value = round(1.0 / stretch, 3) if stretch else speed(lab)
    if value is None or lab.status is not status.PASS:
        return None
    graded = ((lab.bench or {}).get("reference") or {}).get("variant", "default")
    against = "the fastest reference" if stretch or graded == "default" else "reference"
    return {"name": f"{lab.name} speedup vs {against}", "value": value, "order": "desc"}


def _elapsed(started: str, finished: str) -> int | None:
    try:
        return max(0, round((datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()))
    except (TypeError, ValueError):
        return None
