"""A right one-file submission for each lab, made from its reference solution: what a
student who wrote the reference would hand in (labs/<lab>/<lab>.cu and labs/<lab>/answers.md).

    python3 -m grader.tests.onefile --out DIR [lab ...]

writes DIR/labs/<lab>/<lab>.cu and DIR/labs/<lab>/answers.md for each lab (default: every
lab), so that `python3 -m grader --submission DIR` grades the references as students'
files. Needs the instructor's kit (solutions/).

The files are generated, not kept in the repository: the references change (new variants,
faster kernels) and a copy would drift from them, while a generated file follows them by
construction, and the tests check what matters (it compiles, passes the static checks,
registers every lecture step). The solution's files are joined in a fixed order:
solutions/<lab>/<lab>.cu first, then the other .cu/.cpp files by name; each of the
solution's own headers (#include "x.cuh" found in solutions/<lab>/) is inlined once, where
it is first included, its `#pragma once` dropped; the kit's headers (the lab header,
lab/*.h) and the system's are included once each, at the top. Two files may each define a
helper of the same name in their anonymous namespaces (a kThreads in each), which one file
cannot: such a name keeps its spelling in the first file that defines it and becomes
`<name>_<file stem>` in the later ones, wherever it is code in that file (not in comments
and strings, nor as a member of something else). An include that names a file found
nowhere is an error that says which file and line. The answers are the solution's
answers.md, word for word.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from grader import manifest, rules

KIT = Path(__file__).resolve().parents[2]
SOURCE_SUFFIXES = (".cu", ".cpp")
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]\s*(?://.*)?$')
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*(?://.*)?$")
_CONDITIONAL_OPEN = re.compile(r"^\s*#\s*if(?:n?def)?\b")
_CONDITIONAL_CLOSE = re.compile(r"^\s*#\s*endif\b")


class OneFileError(Exception):
    """The solution cannot be made into one file; the message says why."""


@dataclass
class _Joined:
    """The pieces of the one file as they are gathered."""

    system: list[str] = field(default_factory=list)  # <...> headers, once each, in order of first use
    kit: list[str] = field(default_factory=list)  # "..." headers of the kit, once each
    inlined: set[Path] = field(default_factory=set)  # the solution's headers already inlined


def solution_sources(solution: Path, lab: str) -> list[Path]:
    """The solution's translation units in the order they are joined: <lab>.cu, then the rest by name."""
    found = sorted((p for p in solution.iterdir() if p.suffix in SOURCE_SUFFIXES and p.is_file()),
                   key=lambda p: (p.name != f"{lab}.cu", p.name))
    if not found:
        raise OneFileError(f"solutions/{lab}/ holds no .cu or .cpp file")
    return found


def kit_include_dirs(kit: Path, lab: str) -> list[Path]:
    """Where the kit's headers a student's file may include are: the lab's folder and common/include."""
    return [kit / "labs" / lab, kit / "common" / "include"]


def _shown(path: Path, kit: Path) -> str:
    try:
        return str(path.relative_to(kit))
    except ValueError:
        return str(path)


def _add(seen: list[str], item: str) -> None:
    if item not in seen:
        seen.append(item)


_ATTRIBUTE_CALL = re.compile(r"\b(?:__launch_bounds__|__align__|alignas|__attribute__|__declspec|decltype)\s*"
                             r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_TYPE_HEAD = re.compile(r"(?:struct|class|union|enum(?:\s+class|\s+struct)?)\s+"
                        r"(?:(?:__align__|alignas)\s*\([^)]*\)\s*)?([A-Za-z_]\w*)")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NOT_NAMES = frozenset("operator const constexpr static inline unsigned int long short char float double void "
                       "bool auto signed volatile __device__ __host__ __global__ __forceinline__ __noinline__ "
                       "__constant__ __shared__ __managed__ extern".split())


def _closing(code: str, open_at: int) -> int:
    """The offset of the brace that closes the one at `open_at` (len(code) if none does)."""
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(code)


def _strip_template(head: str) -> str:
    """`head` without its leading `template <...>` clauses."""
    while True:
        match = re.match(r"\s*template\s*<", head)
        if not match:
            return head
        depth, i = 1, match.end()
        while i < len(head) and depth:
            depth += {"<": 1, ">": -1}.get(head[i], 0)
            i += 1
        head = head[i:]


def _declared_name(head: str) -> str | None:
    """The name a namespace-scope declaration declares, from the text before its body,
    initializer or `;` (`constexpr int kThreads = 256` -> kThreads, `__global__ void
    __launch_bounds__(256) k(const int* in)` -> k, `struct Tile` -> Tile), or None."""
    head = _strip_template(head).strip()
    if not head or re.match(r"(?:static_assert|using\s+namespace|namespace)\b", head):
        return None
    match = re.match(r"using\s+([A-Za-z_]\w*)\s*=", head)
    if match:
        return match.group(1)
    head = re.sub(r"^(?:typedef\s+)", "", head)
    match = _TYPE_HEAD.match(re.sub(r"^(?:(?:static|inline|constexpr)\s+)*", "", head))
    if match and "(" not in head[:match.end()]:
        return match.group(1)
    head = _ATTRIBUTE_CALL.sub(" ", head)
    cut = min((i for i in (head.find("("), head.find("="), head.find("[")) if i >= 0), default=len(head))
    names = [n for n in _IDENTIFIER.findall(head[:cut]) if n not in _NOT_NAMES]
    return names[-1] if names else None


def anonymous_names(code: str) -> set[str]:
    """The names declared at the top of the anonymous namespaces of `code` (comments and
    strings blanked): what another file of the solution may declare again."""
    names: set[str] = set()
    for match in re.finditer(r"\bnamespace\s*\{", code):
        start = match.end()
        end = _closing(code, match.end() - 1)
        depth, head_start = 0, start
        for i in range(start, end):
            char = code[i]
            if char == "{":
                if depth == 0:
                    name = _declared_name(code[head_start:i])
                    if name:
                        names.add(name)
                depth += 1
            elif char == "}":
                depth -= 1
                if depth == 0:
                    head_start = i + 1
            elif char == ";" and depth == 0:
                name = _declared_name(code[head_start:i])
                if name:
                    names.add(name)
                head_start = i + 1
    return names


def rename(text: str, renames: dict[str, str]) -> str:
    """`text` with each identifier of `renames` replaced as a word of code: not in comments,
    strings or #include lines, not as a member (after `.`, `->`, or `X::` where X is not a
    namespace the file opens)."""
    if not renames:
        return text
    code = rules.blank_comments(text)
    namespaces = set(re.findall(r"\bnamespace\s+([A-Za-z_]\w*)", code))
    pattern = re.compile(r"(?<![\w$])(" + "|".join(map(re.escape, sorted(renames))) + r")(?![\w$])")
    out, last = [], 0
    for match in pattern.finditer(code):
        line_start = code.rfind("\n", 0, match.start()) + 1
        line_end = code.find("\n", match.start())
        if _INCLUDE.match(code[line_start:line_end if line_end >= 0 else len(code)]):
            continue
        before = code[:match.start()].rstrip()
        if before.endswith((".", "->")):
            continue
        if before.endswith("::"):
            qualifier = re.search(r"([A-Za-z_]\w*)?\s*$", before[:-2])
            if qualifier and qualifier.group(1) and qualifier.group(1) not in namespaces:
                continue
        out += [text[last:match.start()], renames[match.group(1)]]
        last = match.end()
    return "".join(out) + text[last:]


def _inline(path: Path, kit: Path, lab: str, solution: Path, joined: _Joined, stack: tuple[Path, ...],
            renames: dict[str, str] | None = None) -> list[str]:
    """The lines of `path` with its includes sorted out: the solution's headers inlined
    (once), the others gathered in `joined` and left out here; `renames` applied to its own lines."""
    out: list[str] = []
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OneFileError(f"cannot read {_shown(path, kit)}: {exc}") from None
    text = rename(text, renames or {})
    conditional = 0  # depth of #if blocks: an include inside one stays where it is
    for number, line in enumerate(text.splitlines(), 1):
        if _PRAGMA_ONCE.match(line):
            continue
        if _CONDITIONAL_OPEN.match(line):
            conditional += 1
        elif _CONDITIONAL_CLOSE.match(line):
            conditional = max(0, conditional - 1)
        match = _INCLUDE.match(line)
        if not match:
            out.append(line)
            continue
        bracket, name = match.groups()
        local = (path.parent / name).resolve()
        is_local = bracket == '"' and local.is_file() and local.is_relative_to(solution.resolve())
        if conditional and not is_local:
            out.append(line)
            continue
        if bracket == "<":
            _add(joined.system, name)
            continue
        if is_local:
            if local in stack:
                raise OneFileError(f"{_shown(path, kit)}:{number}: {name} includes itself (through "
                                   f"{' -> '.join(p.name for p in stack)})")
            if local not in joined.inlined:
                joined.inlined.add(local)
                out += _inline(local, kit, lab, solution, joined, stack + (local,))
            continue
        if any((folder / name).is_file() for folder in kit_include_dirs(kit, lab)):
            _add(joined.kit, name)
            continue
        raise OneFileError(f"{_shown(path, kit)}:{number}: #include \"{name}\" is neither a file of "
                           f"{_shown(solution, kit)}/ nor a kit header (labs/{lab}/, common/include/)")
    return out


def _suffix(source: Path) -> str:
    """What a file's clashing names get at their end: its stem as a C++ word."""
    return re.sub(r"\W", "_", source.stem)


def one_file(kit: Path, lab: str) -> str:
    """The text of labs/<lab>/<lab>.cu made from solutions/<lab>/."""
    solution = kit / "solutions" / lab
    if not solution.is_dir():
        raise OneFileError(f"no solution for lab {lab} ({_shown(solution, kit)} is missing: the instructor's kit has it)")
    joined = _Joined()
    parts: list[tuple[Path, list[str]]] = []
    first_defined: dict[str, Path] = {}  # a name of an anonymous namespace -> the file that keeps it
    for source in solution_sources(solution, lab):
        try:
            names = anonymous_names(rules.blank_comments(source.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as exc:
            raise OneFileError(f"cannot read {_shown(source, kit)}: {exc}") from None
        renames = {name: f"{name}_{_suffix(source)}" for name in sorted(names) if name in first_defined}
        for name in names:
            first_defined.setdefault(name, source)
        parts.append((source, _inline(source.resolve(), kit, lab, solution, joined, (source.resolve(),), renames)))
    lines = [f"// labs/{lab}/{lab}.cu made from the reference (solutions/{lab}/, {len(parts)} file(s)) as one",
             "// student file by grader/tests/onefile.py: a right submission for testing the grader.", ""]
    lines += [f"#include <{name}>" for name in joined.system]
    if joined.system:
        lines.append("")
    lines += [f'#include "{name}"' for name in joined.kit]
    for source, body in parts:
        lines += ["", f"// ==== {source.name} " + "=" * max(0, 80 - 9 - len(source.name)), ""]
        while body and not body[0].strip():
            body = body[1:]
        lines += body
    return "\n".join(lines).rstrip("\n") + "\n"


def write(kit: Path, lab: str, out: Path) -> list[Path]:
    """Writes out/labs/<lab>/<lab>.cu and its answers.md (when the solution has one); the paths written."""
    folder = out / "labs" / lab
    text = one_file(kit, lab)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"{lab}.cu"]
    written[0].write_text(text, encoding="utf-8")
    answers = kit / "solutions" / lab / "answers.md"
    if answers.is_file():
        (folder / "answers.md").write_text(answers.read_text(encoding="utf-8"), encoding="utf-8")
        written.append(folder / "answers.md")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.onefile", description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", metavar="lab", help="labs to write (default: every lab)")
    parser.add_argument("--out", type=Path, required=True, help="the submission folder to write labs/ into")
    parser.add_argument("--root", type=Path, default=KIT, help="the instructor's kit (default: this one)")
    args = parser.parse_args(argv)
    kit = args.root.resolve()
    try:
        labs = manifest.resolve_names(args.labs, manifest.names(kit)) if args.labs else manifest.names(kit)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        for lab in labs:
            for path in write(kit, lab, args.out):
                print(path)
    except (OneFileError, OSError) as exc:
        print(f"onefile: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
