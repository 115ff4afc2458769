"""Stage test: the judge runs the lab's tests, the implementation in its worker; the tests'
JSON becomes the correctness score (score.py)."""

from __future__ import annotations

from grader import gtest, layout, proc, score, status
from grader.outcome import LabResult, clocked, fail
from grader.schedule import test_shards
from grader.stages.context import LabContext, testing_environment

# A test whose message says this hung in the worker: the lab is TIMEOUT (common/judge/session.cu).
HANG_MARK = "did not return within"


def run(ctx: LabContext, result: LabResult) -> bool:
    """The tests; whether the sanitizer stage follows (every test passed, or the lab is
    PARTIAL or TIMEOUT). A lab that did not pass is not timed: its performance says why."""
    options, lab = ctx.options, ctx.lab
    test_bin = layout.judge_test_path(options.build_dir, lab)
    if not proc.is_executable(test_bin):
        fail(result, status.BUILD_ERROR, f"judge program {test_bin} not found: build the lab "
             "(run the grader without --no-build)")
        return False
    ctx.test_bin = test_bin
    ctx.judge_args = [f"--impl={ctx.implementation}", f"--call-timeout={options.config.grader['call_timeout_s']}"]
    ctx.stage("testing")
    result.test_shards = test_shards(options, lab)
    with clocked(result, "tests"):
        tests = gtest.run_tests(test_bin, seed=options.seed, timeout=options.config.grader["test_timeout_s"],
                                json_path=layout.gtest_json(options.results_dir, lab), cwd=options.root,
                                extra_args=ctx.judge_args, shards=result.test_shards,
                                env=testing_environment(options))
    if tests.binary_s is not None:  # the rest of "tests" is the processes' start and end
        result.seconds["tests_in_binary"] = round(tests.binary_s, 2)
    _score(ctx, result, tests)
    if result.status is status.PASS:
        ctx.stage(result.message)
        return True
    result.command = tests.reproduce(tests.running_test) if tests.running_test else tests.command
    ctx.stage(tests.message if result.status is status.PARTIAL else result.status.label)
    result.performance = score.score_performance(
        None, ctx.settings, correctness_full=result.correctness.full,
        unavailable=f"not timed: the tests ended in {result.status.name}")
    return result.status in (status.PARTIAL, status.TIMEOUT)


def _score(ctx: LabContext, result: LabResult, tests: gtest.TestRun) -> None:
    """The correctness score and the lab's status from the tests' outcome."""
    options = ctx.options
    result.reproduce["test"] = tests.command
    result.correctness = score.score_correctness(tests.tests, ctx.settings)
    for row in result.correctness.tests:
        row["message"] = row["message"].replace(f"{options.root}/", "").replace(f"{options.work_dir}/", "")
        if row["status"] == "failed":
            row["reproduce"] = tests.reproduce(row["name"])
    result.status, result.message, result.output = tests.status, tests.message, tests.output
    if tests.status is status.PARTIAL and result.correctness.full:
        # Only tests that weigh nothing failed: a find-the-bug exercise not fixed yet or a
        # further part not written. Their own rows show that; the lab is graded (and timed)
        # as passing.
        result.status = status.PASS
        result.message = (f"all graded tests passed ({tests.message}, all of them in tests that weigh 0: "
                          "find-the-bug exercises and further parts, which earn their own points)")
    hung = next((t for t in tests.tests if t.outcome == "failed" and HANG_MARK in t.message), None)
    if hung is not None and tests.status in (status.PASS, status.PARTIAL):
        result.status = status.TIMEOUT
        result.message = f"{tests.message}; a call hung in {hung.name}: {hung.message.splitlines()[0]}"
        tests.running_test = hung.name
