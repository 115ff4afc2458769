"""Result codes of a graded lab, as objects (in the manner of LLVM lit's result codes).

A lab ends in exactly one of these. PASS is the only code that is not a failure: a
PASS lab whose performance is below full credit is still PASS (its points say the rest).

Every status name the grader writes or reads (reports, renderings, the gradebook) comes
from here: the lab's codes, the groups the renderings ask about (TESTS_RAN,
ENDED_EARLY), and the outcomes of one test (TEST_PASSED, TEST_FAILED, TEST_SKIPPED).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ResultCode:
    """One outcome of grading a lab."""

    name: str  # stable identifier, written to reports
    label: str  # short human text for the score table
    is_failure: bool

    def __str__(self) -> str:
        return self.name


PASS = ResultCode("PASS", "passed", False)
PARTIAL = ResultCode("PARTIAL", "some tests failed", True)
BUILD_ERROR = ResultCode("BUILD_ERROR", "build failed", True)
CRASH = ResultCode("CRASH", "crashed", True)
TIMEOUT = ResultCode("TIMEOUT", "timed out", True)
NO_GPU = ResultCode("NO_GPU", "no CUDA GPU", True)
MISSING = ResultCode("MISSING", "lab files missing", True)
ERROR = ResultCode("ERROR", "grader error", True)

ALL: tuple[ResultCode, ...] = (PASS, PARTIAL, BUILD_ERROR, CRASH, TIMEOUT, NO_GPU, MISSING, ERROR)

# The lab got as far as its tests' results (every other code stopped it before them).
TESTS_RAN: frozenset[ResultCode] = frozenset({PASS, PARTIAL})
# The test program ended before every test had a result: the test that was running
# says more than the tests that never ran (all of them "failed").
ENDED_EARLY: frozenset[ResultCode] = frozenset({CRASH, TIMEOUT})

# The outcome of one test (gtest.TestResult.outcome; `status` of a report's tests).
TEST_PASSED, TEST_FAILED, TEST_SKIPPED = "passed", "failed", "skipped"


def by_name(name: str) -> ResultCode:
    """The result code called `name` (KeyError for anything else)."""
    for code in ALL:
        if code.name == name:
            return code
    raise KeyError(name)


def lookup(name: str) -> ResultCode:
    """The result code called `name`; a name this grader does not know (a report of
    another grader version) is a failure of that name, shown as it is."""
    try:
        return by_name(name)
    except KeyError:
        return ResultCode(name, name, True)
