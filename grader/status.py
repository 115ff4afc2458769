"""Result codes of a graded lab, as objects (in the manner of LLVM lit's result codes).

A lab ends in exactly one of these. PASS is the only code that is not a failure: a
PASS lab whose performance is below full credit is still PASS (its points say the rest).
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


def by_name(name: str) -> ResultCode:
    """The result code called `name` (KeyError for anything else)."""
    for code in ALL:
        if code.name == name:
            return code
    raise KeyError(name)
