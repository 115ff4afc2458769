"""JUnit XML, for CI servers: one testsuite per lab, one testcase per GoogleTest test.

    python3 -m grader report build/grader/report.json --junit junit.xml

A lab that did not get as far as its tests (build error, timeout, crash, missing) is one
failing testcase; its performance points are one more testcase.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from grader import status
from grader.formats.text import first_line, performance_reason, pts, xml_text
from grader.report import Lab, read

COUNTS = ("tests", "failures", "errors", "skipped")  # a testsuite's counts, in the order they are written


def junit(data: Any) -> str:
    """One testsuite per lab, one testcase per GoogleTest test; a lab that did not get as
    far as its tests (build error, timeout, crash, missing) is one failing testcase."""
    report = read(data)
    suites = ET.Element("testsuites", name="cuda-labkit")
    counts = dict.fromkeys(COUNTS, 0)
    for lab in report.labs:
        suite = ET.SubElement(suites, "testsuite", name=lab.name)
        props = ET.SubElement(suite, "properties")
        for key, value in (("status", lab.status.name), ("points", f"{pts(lab.total)}/{lab.max:g}"),
                           ("seed", "" if report.seed is None else str(report.seed)),
                           ("message", first_line(lab.message))):
            ET.SubElement(props, "property", name=key, value=xml_text(value))
        n = dict.fromkeys(COUNTS, 0)
        time_total = _test_cases(suite, lab, n)
        if lab.status not in status.TESTS_RAN:
            _stopped_case(suite, lab, n)
        elif lab.performance_max:
            _performance_case(suite, lab, n)
        for key, value in n.items():
            suite.set(key, str(value))
            counts[key] += value
        suite.set("time", f"{time_total:.3f}")
    # <testsuites> takes no "skipped" count in the JUnit schema that CI servers validate
    # against (Jenkins xunit's junit-10.xsd): the suites carry theirs.
    for key, value in counts.items():
        if key != "skipped":
            suites.set(key, str(value))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _test_cases(suite: ET.Element, lab: Lab, n: dict[str, int]) -> float:
    """A testcase per GoogleTest test of `lab`, counted in `n`; returns their time in seconds."""
    time_total = 0.0
    for test in lab.tests:
        suite_name, _, case_name = test.name.partition(".")
        case = ET.SubElement(suite, "testcase", classname=f"{lab.name}.{suite_name}",
                             name=case_name or suite_name, time=f"{test.time_s or 0:.3f}")
        time_total += test.time_s or 0.0
        n["tests"] += 1
        if test.failed:
            n["failures"] += 1
            failure = ET.SubElement(case, "failure", message=xml_text(first_line(test.message) or "failed"),
                                    type="failed")
            failure.text = xml_text(test.message + (f"\n\nreproduce: {test.reproduce}" if test.reproduce else ""))
        elif test.status == status.TEST_SKIPPED:
            n["skipped"] += 1
            skipped = ET.SubElement(case, "skipped", message=xml_text(first_line(test.message) or "skipped"))
            skipped.text = xml_text(test.message) or None  # the whole reason, e.g. "No CUDA GPU: ..."
    return time_total


def _stopped_case(suite: ET.Element, lab: Lab, n: dict[str, int]) -> None:
    """The lab stopped before (or while) its tests ran: one testcase says why."""
    case = ET.SubElement(suite, "testcase", classname=lab.name, name=lab.status.name.lower())
    n["tests"] += 1
    kind = "error" if lab.status is status.ERROR else "failure"
    n["errors" if kind == "error" else "failures"] += 1
    element = ET.SubElement(case, kind, message=xml_text(first_line(lab.message) or lab.status.name),
                            type=lab.status.name)
    body = lab.message + (f"\n\n{lab.output}" if lab.output else "")
    element.text = xml_text(body + (f"\n\nreproduce: {lab.failure_command}" if lab.failure_command else ""))


def _performance_case(suite: ET.Element, lab: Lab, n: dict[str, int]) -> None:
    """The lab's performance points as a testcase: skipped when not timed, failed below full."""
    case = ET.SubElement(suite, "testcase", classname=lab.name, name="performance")
    n["tests"] += 1
    if lab.status is status.PARTIAL:
        n["skipped"] += 1
        ET.SubElement(case, "skipped", message=xml_text(lab.performance_reason or "not timed"))
    elif lab.performance < lab.performance_max:
        n["failures"] += 1
        ET.SubElement(case, "failure", type="performance", message=xml_text(
            f"{pts(lab.performance)}/{lab.performance_max:g} points: " + performance_reason(lab)))
