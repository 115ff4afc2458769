"""Symbol names: what a demangled name is about, whose library it is, and where the
student's file spells it."""

from __future__ import annotations

import fnmatch
import re

from grader import rules
from grader.check.elf import Symbol
from grader.check.findings import Source
from grader.check.policy import ENTITY_PREFIXES, LIBRARY_SYMBOLS, NAMESPACE_LIBRARY


def entity_of(demangled: str) -> str:
    """The entity a demangled name is about: `vtable for lab::X` -> `lab::X`."""
    for prefix in ENTITY_PREFIXES:
        if demangled.startswith(prefix):
            return entity_of(demangled[len(prefix):])
    return demangled


_OPERATOR = re.compile(r"operator\s*(?:\(\)|\[\]|new\[\]|delete\[\]|new|delete|<=>|<<=|>>=|<<|>>|->\*|->|&&"
                       r"|\|\||\+\+|--|[-+*/%^&|~!=<>,]=?|\"\"\s*\w+|[^(<]+?(?=\())")


def qualified_name(entity: str) -> str:
    """`R ns::f<T>(int) const [clone .cold]` -> `ns::f`: the name without return type, template
    arguments and parameters (`std::operator<<`, `operator new` keep their operator)."""
    text = re.sub(r"\s*\[clone [^\]]*\]", "", entity).replace("(anonymous namespace)::", "")
    out: list[str] = []
    depth, i = 0, 0
    while i < len(text):
        char = text[i]
        word_start = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        if depth == 0 and word_start and text.startswith("operator", i):
            match = _OPERATOR.match(text, i)
            if match and not (text[i + 8:i + 9].isalnum() or text[i + 8:i + 9] == "_") or \
                    (match and match.group(0)[8:9] == " "):
                out.append(match.group(0).rstrip())
                i = match.end()
                continue
        if char == "<":
            depth += 1
        elif char == ">" and depth:
            depth -= 1
        elif char == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(char)
        i += 1
    name = "".join(out).strip()
    tokens = name.split(" ")
    first = next((n for n, token in enumerate(tokens) if "operator" in token), len(tokens) - 1)
    return " ".join(tokens[first:])


def library_of(raw: str, demangled: str) -> str | None:
    """The work-doing library a symbol belongs to (CUB, Thrust, cuBLAS...), if any."""
    match = NAMESPACE_LIBRARY.search(demangled)
    if match:
        return "CUB" if match.group(1) == "cub" else "Thrust"
    stub = re.search(r"__device_stub__(Z\w+)", demangled)
    if stub and re.search(r"N?\d*(?:3cub|6thrust)", stub.group(1)[:40]):
        return "CUB" if "3cub" in stub.group(1)[:40] else "Thrust"
    for pattern, label in LIBRARY_SYMBOLS:
        if fnmatch.fnmatchcase(raw, pattern):
            return label
    return None


def library_code(function: Symbol) -> bool:
    """Whether a function is code of CUB, Thrust, NVTX, or of libcu++ (cuda::), which CUB calls."""
    return (bool(library_of(function.name, function.demangled))
            or qualified_name(function.demangled).startswith("cuda::"))


def matches(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether `name` matches one of the fnmatch `patterns` (case matters)."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def source_line(text: str, names: list[str]) -> int | None:
    """The first line of `text` (comments and directives blanked) that spells one of `names` as a word."""
    code = re.sub(r"(?m)^[ \t]*(?:#|%:).*$", "", rules.blank_comments(text))
    for name in names:
        if not name or not re.match(r"^[\w$]+$", name):
            continue
        match = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", code)
        if match:
            return code.count("\n", 0, match.start()) + 1
    return None


def search_names(raw: str, entity: str) -> list[str]:
    """Words to look for in the source for a symbol: `cublasCreate_v2` -> cublasCreate_v2, cublasCreate."""
    if not raw.startswith("_Z"):
        return [raw, re.sub(r"_v\d+$", "", raw)]
    parts = [p for p in re.split(r"::|~", qualified_name(entity))
             if p and p not in ("std", "lab", "__cxx11", "detail") and not re.match(r"^(?:CUB|THRUST)_\d", p)]
    return list(reversed(parts))


def symbol_line(source: Source, symbol: Symbol) -> int | None:
    """The first line of the student's file that names `symbol`."""
    return source_line(source.text, search_names(symbol.name, entity_of(symbol.demangled or symbol.name)))
