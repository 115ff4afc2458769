"""What the check reports: the result of one lab, the reasons it could not run, and the
helpers that word its findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from grader import rules
from grader.check.policy import RULES


class CheckError(Exception):
    """The stage cannot run (nvcc or binutils missing, a file missing); the message says why."""


class Exceeded(Exception):
    """A step ran past the check's time, memory or file-size limits."""


class CompileFailed(Exception):
    """The student's file does not compile (the build reports it)."""


@dataclass
class CheckResult:
    """What the static checks found in one lab's files."""

    findings: list[rules.Finding] = field(default_factory=list)
    ok: bool = True  # False: the stage could not run; `message` says why
    message: str = ""
    commands: list[str] = field(default_factory=list)  # what was run, for reproduce lines
    exceeded: bool = False  # a file needs more than the check's limits to compile: grade as a build error
    # The main file's registered variants and the kernels each launches (steps.Analysis.as_dict);
    # None when the object could not be read that far
    steps: dict[str, object] | None = None

    def as_dict(self) -> dict[str, object]:
        """The result as JSON data (the command's --json report)."""
        return {"ok": self.ok, "message": self.message, "exceeded": self.exceeded,
                "findings": [f.as_dict() for f in self.findings], "commands": self.commands}


@dataclass
class Source:
    """One of the student's files, copied into the clean folder."""

    shown: str  # how reports name it: relative to the kit, e.g. labs/reduction/reduction.cu
    original: Path
    clean: Path  # the copy that is compiled

    @property
    def text(self) -> str:
        """The file's text."""
        return self.clean.read_text(encoding="utf-8", errors="replace")


def forbidden(source: Source, rule: str, line: int | None, message: str, pattern: str) -> rules.Finding:
    """A forbidden-rule finding in `source`, its message led by `file:line:`."""
    where = f"{source.shown}:{line}" if line else source.shown
    return rules.Finding("forbidden", pattern, source.shown, line, f"{where}: {message}", rule=rule)


def short(name: str, limit: int = 90) -> str:
    """`name`, cut to `limit` characters for a message."""
    return name if len(name) <= limit else name[:limit - 3] + "..."


def listing(names: list[str]) -> str:
    """`a`; `a` and `b`; `a`, `b` and `c`; `a`, `b` and 3 more."""
    quoted = [f"`{n}`" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    if len(quoted) <= 3:
        return ", ".join(quoted[:-1]) + " and " + quoted[-1]
    return f"{quoted[0]}, {quoted[1]} and {len(quoted) - 2} more"


def unique(findings: list[rules.Finding]) -> list[rules.Finding]:
    """`findings` without repeats, by file, line and rule."""
    seen, out = set(), []
    for finding in findings:
        key = (finding.rule, finding.file, finding.line, finding.message)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return sorted(out, key=lambda f: (f.file, f.line or 0, RULES.index(f.rule) if f.rule in RULES else 99))


def lines_from_includes(findings: list[rules.Finding]) -> None:
    """A library finding with no line gets the line of the #include that brought the library in."""
    for finding in findings:
        if finding.rule != "cub" or finding.line is not None:
            continue
        why = finding.message.rsplit("): ", 1)[-1]
        include = next((f for f in findings if f.rule == "include" and f.file == finding.file
                        and f.line is not None and f.message.endswith(f"({why})")), None)
        if include is not None:
            finding.line = include.line
            finding.message = finding.message.replace(f"{finding.file}: ", f"{finding.file}:{include.line}: ", 1)
