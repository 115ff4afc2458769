"""4. The student's own preprocessed code, read as text after the compiler's preprocessor:
assembler directives that read files in any string (adjacent literals joined, escapes
decoded), names only the compiler generates, the kit's namespace opened."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

from grader import rules
from grader.check.findings import Source, forbidden, short
from grader.check.includes import IncludePolicy
from grader.check.policy import ASSEMBLER_DIRECTIVES, KIT_DEFINITION, KIT_NAMESPACE, READS_FILES, RESERVED_NAMES

_LITERAL = re.compile(
    r"""(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\((?P<rawbody>.*?)\)(?P=delim)")"""
    r"""|(?P<str>(?:u8|u|U|L)?"(?P<body>(?:\\.|[^"\\\n])*)")"""
    r"""|(?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])+')""",
    re.DOTALL)
_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]+)|([0-7]{1,3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b", "e": "\x1b"}


def _unescape_c(body: str) -> str:
    """The characters a C string literal's body stands for (hex, octal and named escapes)."""
    def one(match: re.Match[str]) -> str:
        hex_, octal, small, big, other = match.groups()
        number = hex_ or small or big
        if number is not None:
            return chr(min(int(number, 16), 0x10FFFF))
        if octal is not None:
            return chr(int(octal, 8))
        return _SIMPLE_ESCAPES.get(other, other)
    return _ESCAPE.sub(one, body)


def string_literals(text: str) -> list[tuple[int, str]]:
    """(offset, characters) of each string in preprocessed C++ `text`, adjacent literals
    joined as the compiler joins them (character literals are skipped)."""
    out: list[tuple[int, str]] = []
    end = -1
    for match in _LITERAL.finditer(text):
        if match.group("chr") is not None:
            end = -1
            continue
        value = match.group("rawbody") if match.group("raw") is not None else _unescape_c(match.group("body"))
        if out and end >= 0 and not text[end:match.start()].strip():
            out[-1] = (out[-1][0], out[-1][1] + value)
        else:
            out.append((match.start(), value))
        end = match.end()
    return out


def _joined(lines: list[tuple[int, str]]) -> tuple[str, Callable[[int], int]]:
    """The student's lines (line number, text) as one text, and the line number of an
    offset in it."""
    starts = [0]
    for _, text in lines[:-1]:
        starts.append(starts[-1] + len(text) + 1)

    def line_at(offset: int) -> int:
        return lines[bisect.bisect_right(starts, offset) - 1][0]

    return "\n".join(text for _, text in lines), line_at


def _assembler_findings(source: Source, joined: str, line_at: Callable[[int], int]) -> list[rules.Finding]:
    """Strings of the student's code that hold assembler directives reading files (.incbin)."""
    findings = []
    for offset, value in string_literals(joined):
        found = ASSEMBLER_DIRECTIVES.search(value)
        if found is None:
            continue
        directive = "." + found.group(1).lower()
        findings.append(forbidden(source, "include", line_at(offset),
                                  f"an assembler {directive} directive: it reads a file of the grading machine into "
                                  "your program (or builds one that does) at compile time, so the lab is not "
                                  "tested; write your code in C++ and CUDA", READS_FILES))
    return findings


def source_text_findings(own: list[tuple[str, int, str]], policy: IncludePolicy) -> list[rules.Finding]:
    """The student's preprocessed code: names only the compiler generates, the kit's namespace opened."""
    findings = []
    seen = set()
    by_file: dict[str, list[tuple[int, str]]] = {}
    for file, line, text in own:
        by_file.setdefault(file, []).append((line, text))
    for file, lines in by_file.items():
        source = policy.students.get(file)
        if source is None:
            continue
        joined, line_at = _joined(lines)
        findings += _assembler_findings(source, joined, line_at)
        for pattern, message in ((RESERVED_NAMES, "uses `{}`, a name reserved for code the compiler generates: "
                                  "rename it"),
                                 (KIT_DEFINITION, "defines a function of the kit's namespace lab (`{}`), which "
                                  "would replace the kit's own code: use the kit's helpers as they are"),
                                 (KIT_NAMESPACE, "adds to the kit's namespace lab (`{}`), which would replace the "
                                  "kit's own code: use the kit's helpers as they are and keep your code outside it")):
            for match in pattern.finditer(joined):
                line = line_at(match.start())
                if (source.shown, line, pattern.pattern) in seen:
                    continue
                seen.add((source.shown, line, pattern.pattern))
                spelled = short(" ".join(match.group(0).split()), 40)
                findings.append(forbidden(source, "defines", line, message.format(spelled), match.group(0)))
    return findings
