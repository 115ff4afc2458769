"""GitHub annotations: `::error file=...,line=...` workflow commands, which GitHub shows at
the student's lines (compile errors, failed tests, broken rules, sanitizer errors).

    python3 -m grader report report.json --annotations
"""

from __future__ import annotations

from typing import Any

from grader import status
from grader.formats.sources import compile_errors, failure_location, repo_path
from grader.formats.text import clip
from grader.report import read

MAX_ANNOTATIONS = 50  # GitHub shows at most 50 annotations of a kind per job


def annotations(data: Any) -> list[str]:
    """`::error file=...,line=...,title=...::message` workflow commands: compile errors at
    the student's file and line, failed tests at the line they name, other failures at
    the student's file. Paths are relative to the repository root."""
    report = read(data)
    found: list[tuple[str | None, int | None, str, str]] = []
    for lab in report.labs:
        if lab.status is status.BUILD_ERROR:
            diags = compile_errors(lab.message + "\n" + lab.output, report.root)
            for path, line, message in diags:
                found.append((path, line, f"{lab.name}: compile error", message))
            if not diags:
                found.append((lab.student_file, None, f"{lab.name}: build failed", clip(lab.message, 600)))
            continue
        for test in lab.failed_tests:
            path, line = failure_location(lab, test.message, report.root) or (lab.student_file, None)
            body = clip(test.message, 600) + (f"\nReproduce: {test.reproduce}" if test.reproduce else "")
            found.append((path, line, f"{lab.name}: {test.name} failed", body))
        if (lab.status in (status.CRASH, status.TIMEOUT, status.NO_GPU, status.ERROR)
                or (lab.status is status.PARTIAL and not lab.tests)):
            body = clip(lab.message, 600) + (f"\nReproduce: {lab.failure_command}" if lab.failure_command else "")
            found.append((lab.student_file, None, f"{lab.name}: {lab.status}", body))
        for rule in lab.rules:
            location = failure_location(lab, rule, report.root) or (lab.student_file, None)
            found.append((*location, f"{lab.name}: {lab.rule_title}", rule))
        for message, file, line in lab.sanitizer:
            path = repo_path(file, report.root, lab.name) if file else None
            found.append((path or lab.student_file, line if path else None, f"{lab.name}: compute-sanitizer", message))
    seen = set()
    commands = []
    for path, line, title, message in found:
        if (path, line, message) in seen:
            continue
        seen.add((path, line, message))
        props = ([f"file={_escape_property(path)}"] if path else []) + ([f"line={line}"] if line else [])
        props.append(f"title={_escape_property(title)}")
        commands.append(f"::error {','.join(props)}::{_escape_data(message)}")
    return commands[:MAX_ANNOTATIONS]


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
