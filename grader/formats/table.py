"""The table of formats: each row is one option of `python3 -m grader report` and what it
writes. The command's parser is built from this table and its outputs are written in
the table's order, so a new format is one module (a pure function of the report) and
one row here.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.formats.classroom import classroom_output_name, classroom_results, encode
from grader.formats.github_annotations import annotations
from grader.formats.gradescope_results import gradescope
from grader.formats.html_page import html
from grader.formats.junit_xml import junit
from grader.formats.markdown_summary import markdown

# What an option takes: a file ('-' for stdout), a folder, or nothing (it prints to stdout).
FILE, DIR, SWITCH = "FILE", "DIR", "SWITCH"


@dataclass(frozen=True)
class Job:
    """What a format renders and the settings the formats share."""

    data: Any  # the parsed report, or None when it is missing or unreadable
    problem: str = ""  # why the report is missing or unreadable ('' when it was read)
    labs: tuple[str, ...] = ()  # labs that must get a Classroom result even if the report lacks them
    max_score: float = 100.0  # the points of such a lab


@dataclass(frozen=True)
class Format:
    """One output of the report command."""

    option: str  # the command's option, e.g. "--junit"
    takes: str  # FILE, DIR or SWITCH
    help: str
    write: Callable[[Job, Any], None]  # render the job and write it to the option's value

    @property
    def dest(self) -> str:
        """The option's name in the parsed arguments."""
        return self.option[2:].replace("-", "_")


def write_text(target: str, text: str, append: bool = False) -> None:
    """`text` to the file `target` (its folder made as needed), or to stdout for '-'."""
    if target == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(target)
    if path.parent != Path("."):
        path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a" if append else "w", encoding="utf-8") as stream:
        stream.write(text)


def _annotations(job: Job, _: Any) -> None:
    for command in annotations(job.data):
        print(command)


def _markdown(job: Job, target: str) -> None:
    text = markdown(job.data)
    if job.problem:
        text = f"> **Grading did not finish:** {job.problem}\n\n" + text
    write_text(target, text)


def _classroom_env(job: Job, target: str) -> None:
    results = classroom_results(job.data, list(job.labs), job.max_score)
    write_text(target, "".join(f"{classroom_output_name(lab)}={encode(result)}\n" for lab, result in results.items()),
               append=True)


def _classroom_dir(job: Job, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for lab, result in classroom_results(job.data, list(job.labs), job.max_score).items():
        (folder / f"{lab}.json").write_text(json.dumps(result, indent=2) + "\n")
        (folder / f"{lab}.b64").write_text(encode(result) + "\n")


# In the order they are written (and listed by --help).
FORMATS: tuple[Format, ...] = (
    Format("--annotations", SWITCH,
           "print GitHub workflow commands (::error file=...,line=...) for compile errors and failed tests",
           _annotations),
    Format("--markdown", FILE,
           "Markdown summary ('-' for stdout; in a workflow: \"$GITHUB_STEP_SUMMARY\")", _markdown),
    Format("--html", FILE,
           "a self-contained HTML page with the scores, the failures and a chart per bench workload "
           "('-' for stdout; the grader writes report.html itself)",
           lambda job, target: write_text(target, html(job.data))),
    Format("--junit", FILE, "JUnit XML ('-' for stdout)", lambda job, target: write_text(target, junit(job.data))),
    Format("--gradescope", FILE, "Gradescope results.json ('-' for stdout)",
           lambda job, target: write_text(target, json.dumps(gradescope(job.data), indent=2) + "\n")),
    Format("--classroom-env", FILE,
           "append <LAB>_RESULTS=<base64> per lab, the GitHub Classroom reporter's input "
           "(in a workflow: \"$GITHUB_OUTPUT\")", _classroom_env),
    Format("--classroom-dir", DIR, "write <lab>.json (readable) and <lab>.b64 (for the reporter) per lab",
           _classroom_dir),
)
DEFAULT = ("--markdown", "-")  # what the command writes when no option names an output
