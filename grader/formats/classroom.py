"""GitHub Classroom: one result per lab for the autograding reporter, `<LAB>_RESULTS`.

    python3 -m grader report report.json --labs vectorAdd,scan --classroom-env "$GITHUB_OUTPUT"

The Classroom workflow (grader/templates/classroom.yml, written for the exported labs by
`python3 -m grader export`) passes these to classroom-resources/autograding-grading-reporter.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from grader import status
from grader.formats.sources import failure_location
from grader.formats.text import clip, performance_reason, pts
from grader.report import AT_DEADLINE, Lab, read

# What classroom-resources/autograding-grading-reporter reads (src/main.js,
# src/notify-classroom.js, src/console-results.js of github-education-resources/
# autograding-grading-reporter): for each id in its `runners` input, the environment
# variable `<ID upper-cased>_RESULTS` holding base64 of JSON
#   {"version": 1, "status": "pass"|"fail"|"error", "max_score": N,
#    "tests": [{"name", "status": "pass"|"fail"|"error", "score", "message",
#               "line_no"?, "test_code"?, "execution_time"?}]}.
# The points sent to Classroom are the sum of tests[].score over the runners whose
# max_score is not 0, out of the sum of max_score; a runner whose status is "fail" or
# "error" fails the reporter's step. A missing variable makes the reporter fail as a
# whole, so every lab listed in the workflow must get a result, even an error. The
# reporter adds the scores in JavaScript floats: a total such as 186.67 may show as
# 186.67000000000002 in its "Points" line (an error far below any rounding of a grade).

# Labs in these statuses are an "error" for the reporter (nothing of the student's ran); others "fail".
CLASSROOM_ERROR_STATUSES = frozenset({status.BUILD_ERROR, status.MISSING, status.ERROR, status.NO_GPU})


def classroom_results(data: Any, labs: list[str] | None = None, max_score: float = 100.0) -> dict[str, dict[str, Any]]:
    """Lab -> Classroom result JSON, for the report's labs and for every lab in `labs`
    (a lab the report lacks gets an error result worth `max_score`)."""
    report = read(data)
    results = {lab.name: classroom_result(lab, report.gpu_label) for lab in report.labs}
    why = ("the grader wrote no report: see the log of the grading step" if not report.labs
           else "the grader did not grade this lab (interrupted or not found): see the log of the grading step")
    for name in labs or []:
        if name not in results:
            results[name] = {"version": 1, "status": "error", "max_score": _whole(max_score),
                             "tests": [{"name": f"{name}: graded", "status": "error", "score": 0,
                                        "message": why}]}
    return results


def classroom_result(lab: Lab, gpu: str = "") -> dict[str, Any]:
    """One lab's result: a test per graded GoogleTest test (its share of the correctness
    points), one for performance and one for broken rules; the scores add up to the
    lab's total. `gpu` names the grading GPU (in the performance test's message)."""
    tests: list[dict[str, Any]] = []
    weight_total = sum(t.weight for t in lab.tests)
    for test in lab.tests:
        if test.weight <= 0:
            continue  # tests of the provided CPU code earn nothing: listing them would only dilute the table
        passed = test.status == status.TEST_PASSED
        share = lab.correctness_max * test.weight / weight_total if passed and weight_total else 0.0
        entry: dict[str, Any] = {"name": test.name, "status": "pass" if passed else "fail",
                                 "score": round(share, 2), "message": clip(test.message)}
        line = failure_location(lab, test.message)
        if line and line[1]:
            entry["line_no"] = line[1]
        if test.reproduce:
            entry["test_code"] = test.reproduce
        if test.time_s is not None:
            entry["execution_time"] = f"{test.time_s:.3f}s"
        tests.append(entry)
    if not tests or lab.status not in status.TESTS_RAN:
        tests.append({"name": f"{lab.name}: {lab.status.name.lower().replace('_', ' ')}",
                      "status": "error" if lab.status in CLASSROOM_ERROR_STATUSES else "fail",
                      "score": 0, "message": clip(lab.message or lab.status.name),
                      **({"test_code": lab.failure_command} if lab.failure_command else {})})
    if lab.performance_max:
        reason = performance_reason(lab)
        tests.append({"name": f"{lab.name}: performance", "score": round(lab.performance, 2),
                      "status": "pass" if lab.performance >= lab.performance_max else "fail",
                      "message": f"{pts(lab.performance)}/{lab.performance_max:g} points" + (f": {reason}" if reason else "")
                      + (f" (graded on {gpu})" if gpu else "")})
    for step in lab.steps:
        tests.append({"name": f"{lab.name}: step {step.name}", "status": "pass" if step.points >= step.max else "fail",
                      "score": round(step.points, 2), "message": clip(f"{step.status}: {step.why}")})
    for q in lab.questions:
        # Written answers are graded by hand, and key answers at the deadline, outside the Classroom score.
        if not q.by_hand and q.status != AT_DEADLINE:
            tests.append({"name": f"{lab.name}: question {q.id}" + (" (left to your instructor)" if q.pending else ""),
                          "status": "pass" if q.status == "correct" else "fail",
                          "score": round(q.points, 2), "message": clip(q.why or q.status_text)})
    if lab.rule_deduction:
        tests.append({"name": f"{lab.name}: rules", "status": "fail", "score": -round(lab.rule_deduction, 2),
                      "message": clip("; ".join(lab.rules) or "a rule of the lab was broken")})
    if lab.sanitizer_deduction or lab.sanitizer:
        tests.append({"name": f"{lab.name}: compute-sanitizer", "status": "fail" if lab.sanitizer else "pass",
                      "score": -round(lab.sanitizer_deduction, 2),
                      "message": clip("; ".join(m for m, _, _ in lab.sanitizer) or "memory or race errors")})
    _match_total(tests, lab)
    outcome = ("pass" if lab.status is status.PASS else "error" if lab.status in CLASSROOM_ERROR_STATUSES else "fail")
    return {"version": 1, "status": outcome, "max_score": _whole(lab.max), "tests": tests}


def _match_total(tests: list[dict[str, Any]], lab: Lab) -> None:
    """Make the scores add up to the lab's total exactly (per-test shares are rounded)."""
    diff = round(lab.total - sum(t["score"] for t in tests), 2)
    if not diff:
        return
    scored = [t for t in tests if t["score"] > 0]
    target = scored[-1] if scored and abs(diff) < 0.05 else None
    if target is None:  # the report's points do not follow from its tests: trust its total
        tests.append({"name": f"{lab.name}: adjustment", "status": "pass" if diff > 0 else "fail", "score": diff,
                      "message": "points of the grading report that its tests do not explain"})
    else:
        target["score"] = round(target["score"] + diff, 2)


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def encode(result: dict[str, Any]) -> str:
    """The base64 text the reporter decodes (one line, no wrapping)."""
    return base64.b64encode(json.dumps(result, separators=(",", ":")).encode()).decode("ascii")


def classroom_output_name(lab: str) -> str:
    """`VECTORADD_RESULTS`: the reporter reads `<runner id upper-cased>_RESULTS`."""
    return f"{lab.upper()}_RESULTS"
