"""`python3 -m grader report`: turn a grader JSON report into the formats courses use.

    python3 -m grader report build/grader/report.json --markdown - --junit junit.xml

Its output options come from the table of formats (table.py), and it writes them in the
table's order. A report that is missing or unreadable still gives every output: what is
missing becomes a note, never a traceback, and the exit status says so.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from grader import commandline, config, manifest
from grader.formats.table import DEFAULT, DIR, FORMATS, SWITCH, Job
from grader.report import REPORT_SCHEMA, read

EXIT_OK, EXIT_DEGRADED, EXIT_USAGE = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="report",
        prog="python3 -m grader report",
        description="Turn a grader JSON report into the formats courses use. With no output "
                    "option, the Markdown summary goes to stdout.",
        epilog="Exit status: 0 written; 1 written, but the report was missing or unreadable "
               "(the outputs say so); 2 bad usage or an output that cannot be written.")
    parser.add_argument("report", type=Path, help="the JSON report (python3 -m grader --json FILE)")
    for output in FORMATS:
        if output.takes == SWITCH:
            parser.add_argument(output.option, action="store_true", help=output.help)
        else:
            parser.add_argument(output.option, metavar=output.takes, type=Path if output.takes == DIR else str,
                                help=output.help)
    parser.add_argument("--labs", metavar="LAB[,LAB]", action="extend", type=lambda s: [x for x in s.split(",") if x],
                        help="labs that must get a Classroom result even if the report lacks them "
                             "(they get 0 points and an error); the labs the workflow lists")
    parser.add_argument("--max-score", type=float, default=100.0, metavar="N",
                        help="maximum points of a lab the report lacks (default 100)")
    return parser


def main(argv: list[str] | None = None, kit_labs: list[str] | None = None) -> int:
    """`python3 -m grader report`; returns the exit status. `kit_labs`: the labs of the kit,
    for the spelling of --labs (default: those of the kit this grader belongs to)."""
    args = commandline.parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    data, problem = load(args.report)
    if problem:
        print(f"grader report: warning: {problem}", file=sys.stderr)
    known = [*(_own_kit_labs() if kit_labs is None else kit_labs), *(lab.name for lab in read(data).labs)]
    job = Job(data, problem, tuple(lab_names(args.labs or [], known)), args.max_score)
    outputs = [(output, getattr(args, output.dest)) for output in FORMATS if getattr(args, output.dest)]
    if not outputs:
        outputs = [(output, DEFAULT[1]) for output in FORMATS if output.option == DEFAULT[0]]
    try:
        for output, target in outputs:
            output.write(job, target)
    except OSError as exc:
        print(f"grader report: error: cannot write {exc.filename or 'an output'}: {exc.strerror or exc}",
              file=sys.stderr)
        return EXIT_USAGE
    return EXIT_DEGRADED if problem else EXIT_OK


def load(path: Path) -> tuple[Any, str]:
    """The parsed report and '' , or None and what is wrong with the file."""
    try:
        data = json.loads(path.read_text(errors="replace"))
    except FileNotFoundError:
        return None, f"no report at {path}: the grader did not write one (see the log of the grading step)"
    except OSError as exc:
        return None, f"cannot read the report {path}: {exc.strerror or exc}"
    except ValueError as exc:
        return None, f"the report {path} is not valid JSON ({exc}): the grader was probably cut off"
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != REPORT_SCHEMA:  # a bench JSON, a gtest JSON, another tool's file: nothing graded to report
        return None, (f"{path} is not a grading report (its schema is {schema!r}, not {REPORT_SCHEMA!r}): "
                      "give the report.json that `python3 -m grader` wrote")
    return data, ""


def lab_names(names: list[str], known: list[str]) -> list[str]:
    """`names` in the spelling of `known` where one matches case-insensitively; others as given."""
    by_lower = {lab.lower(): lab for lab in known}
    return [by_lower.get(name.lower(), name) for name in names]


def _own_kit_labs() -> list[str]:
    """The labs of the kit this grader belongs to, read now (none when a manifest is broken:
    then --labs is taken as spelled)."""
    try:
        return manifest.names(config.KIT)
    except manifest.ManifestError:
        return []
