"""Static rules on the implementation's source: patterns a lab requires or forbids.

A course can demand a technique (the Sobel homework gives global-memory-only
solutions little credit: sobel requires `__shared__`) or ban a shortcut (a library
call that does the lab's job). Comments and string literals are blanked before
matching, so a rule is met by code, not by a comment that mentions it. A broken
rule costs `rule_penalty` (a fraction) of the points the lab earned otherwise.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_CODE_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.DOTALL)


@dataclass
class Finding:
    """One broken rule, where the student can see it."""

    kind: str  # "required" or "forbidden"
    pattern: str
    file: str  # relative to the kit root
    line: int | None  # None for a required pattern that is nowhere
    message: str

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "pattern": self.pattern, "file": self.file, "line": self.line,
                "message": self.message}


def blank_comments(text: str) -> str:
    """`text` with comments and string/char literals replaced by spaces (newlines kept)."""
    return _CODE_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def sources(root: Path, lab: str, impl: str) -> list[Path]:
    """The files a rule is checked in: the student's file, or the solution's sources."""
    if impl == "solution":
        folder = root / "solutions" / lab
        return sorted(p for p in folder.glob("*") if p.suffix in (".cu", ".cuh", ".cpp", ".h"))
    return [root / "labs" / lab / f"{lab}.cu"]


def check(root: Path, files: list[Path], required: list[str], forbidden: list[str]) -> list[Finding]:
    """Every broken rule in `files` (patterns are regular expressions)."""
    findings: list[Finding] = []
    code = {}
    for path in files:
        try:
            code[path] = blank_comments(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue  # a missing file is the build's problem, reported there
    names = ", ".join(_rel(root, p) for p in files)
    for pattern in required:
        if not any(re.search(pattern, text) for text in code.values()):
            findings.append(Finding("required", pattern, names, None,
                                    f"{names}: this lab requires `{pattern}` in your code, and it is not there"))
    for pattern in forbidden:
        for path, text in code.items():
            for match in re.finditer(pattern, text):
                line = text.count("\n", 0, match.start()) + 1
                findings.append(Finding("forbidden", pattern, _rel(root, path), line,
                                        f"{_rel(root, path)}:{line}: `{match.group(0)}` is not allowed in this lab"))
    return findings


def _rel(root: Path, path: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)
