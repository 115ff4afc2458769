"""The formats of a grading report: Markdown, HTML, JUnit XML, GitHub Classroom, Gradescope,
GitHub annotations; and `python3 -m grader report`, which writes them.

Every format is a pure function of the JSON report (schema labkit-report, what
`report.to_json` writes), read into the one model of a report (`report.read`: Report,
Lab, Test) that the console and the gradebook render too; so a report can be turned into
any of them later, on any machine. A report with missing or odd fields (an older grader,
a run that was cut short) still gives every format: what is missing becomes a note,
never a traceback. Status names come from status.py.

    text.py, sources.py       shared pieces: points, figures, clipped messages; compiler
                              errors and the file and line a failure names
    markdown_summary.py, html_page.py, junit_xml.py, classroom.py, gradescope_results.py,
    github_annotations.py     one module per format, each importing only the shared pieces
    table.py                  the table of formats: the report command's options, what each writes
    command.py                `python3 -m grader report`, built from the table
"""

from grader.formats.classroom import CLASSROOM_ERROR_STATUSES, classroom_output_name, classroom_result
from grader.formats.classroom import classroom_results, encode
from grader.formats.command import EXIT_DEGRADED, EXIT_OK, EXIT_USAGE, build_parser, load, main
from grader.formats.github_annotations import annotations
from grader.formats.gradescope_results import gradescope
from grader.formats.html_page import html
from grader.formats.junit_xml import junit
from grader.formats.markdown_summary import markdown
from grader.formats.sources import compile_errors, repo_path
from grader.formats.table import FORMATS

__all__ = ["CLASSROOM_ERROR_STATUSES", "EXIT_DEGRADED", "EXIT_OK", "EXIT_USAGE", "FORMATS", "annotations",
           "build_parser", "classroom_output_name", "classroom_result", "classroom_results", "compile_errors",
           "encode", "gradescope", "html", "junit", "load", "main", "markdown", "repo_path"]
