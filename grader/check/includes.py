"""1. Includes: which headers a student's file may include, every file the compiler reads
for it (nvcc -M, every pass), and the line of the student's #include that led to each."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader import manifest, rules
from grader.check.findings import CompileFailed, Source, forbidden
from grader.check.policy import HEADER_FAMILIES, OUTSIDE_WHY
from grader.check.session import COMPILE_FLAGS, Session, tail


class IncludePolicy:
    """Which headers a student's file may include."""

    def __init__(self, session: Session, sources: list[Source], allow_families: set[str]) -> None:
        kit = session.kit
        self.kit = os.path.realpath(kit)
        self.lab_header = os.path.realpath(kit / "labs" / session.lab.name / f"{session.lab.name}.h")
        self.common = os.path.realpath(kit / "common" / "include")
        self.students = {os.path.realpath(s.clean): s for s in sources}
        self.roots = [(root, "toolkit") for root in session.tools.toolkit_includes]
        self.roots += [(root, "system") for root in session.tools.system_includes]
        self.allow_families = allow_families

    def verdict(self, real: str) -> tuple[str, str] | None:
        """None when `real` may be included, else (how to name it, why not)."""
        if real in self.students or real == self.lab_header or under(real, self.common):
            return None
        if under(real, self.kit):  # solutions/, another lab, the build folder
            return os.path.relpath(real, self.kit), OUTSIDE_WHY
        for root, _ in self.roots:
            if under(real, root):
                rel = os.path.relpath(real, root)
                shown = rel[len("cccl/"):] if rel.startswith("cccl/") else rel
                family = header_family(shown)
                if family is None or family[0] in self.allow_families:
                    return None
                return shown, family[2]
        return real, OUTSIDE_WHY


def under(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or inside it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def header_family(rel: str) -> tuple[str, str, str] | None:
    """(family, library, why) of a header path relative to an include root, if it is forbidden."""
    first = rel.split("/", 1)[0].lower()
    for name, exact, label, why in HEADER_FAMILIES:
        if (exact and first == name and "/" in rel) or (not exact and first.startswith(name)):
            return name, label, why
    return None


def allowed_families(lab: manifest.Lab) -> set[str]:
    """Header families a lab's manifest lets in: those whose symbols its "allow" patterns match."""
    allowed = set()
    for name, _, _, _ in HEADER_FAMILIES:
        sample = f"{name}::x" if name in ("cub", "thrust") else f"{name}x"
        samples = {sample, sample.replace("nvjitlink", "nvJitLink")}
        if any(fnmatch.fnmatchcase(s, p) for s in samples for p in lab.allowed_symbols):
            allowed.add(name)
    return allowed


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a Makefile rule as written by `nvcc -M` (target left out)."""
    text = text.replace("\\\n", " ")
    tokens = [re.sub(r"\\(.)", r"\1", t).replace("$$", "$") for t in re.findall(r"(?:\\.|[^\s\\])+", text)]
    for i, token in enumerate(tokens):
        if token.endswith(":"):
            return tokens[i + 1:]
        if i + 1 < len(tokens) and tokens[i + 1] == ":":
            return tokens[i + 2:]
    return tokens


def dependencies(session: Session, source: Source, out: Path) -> tuple[list[str], list[Path], bool]:
    """Every file the compiler reads for `source` (host and every device pass) and the preprocessed passes.

    Found with nvcc 13 (`--dryrun`): `nvcc -M` preprocesses the host pass and one device
    pass per architecture it is given (`-D__CUDA_ARCH__=<arch>`), and merges their
    dependencies; so a header included only under `#ifdef __CUDA_ARCH__` is listed, and
    one included only under `#if __CUDA_ARCH__ == 900` is listed when compute_90 is among
    the architectures: we give it all of `nvcc --list-gpu-arch`. Arch-specific feature
    macros (sm_90a's __CUDA_ARCH_FEAT_SM90_ALL) are not covered. `--keep` leaves the
    preprocessed passes (<name>.compute_XX.cpp1.ii, <name>.cpp4.ii), whose line markers
    tell which #include line of the student's file led to a header. Should an older nvcc
    keep no device pass, each architecture is preprocessed on its own (`-E -arch`).
    """
    keep = out / "keep"
    keep.mkdir(parents=True)
    depfile = out / "deps.d"
    gencode = [f"-gencode=arch={arch},code={arch}" for arch in session.tools.archs]
    language = ["-x", "cu"] if source.clean.suffix == ".cu" else ["-x", "c++"]
    flags = [session.tools.nvcc, "-M", *language, *COMPILE_FLAGS[2:], *session.include_flags(), *gencode]
    shown = [*flags, str(source.original), "-o", f"{source.clean.stem}.d"]
    done = session.run([*flags, str(source.clean), "-o", str(depfile), "--keep", f"--keep-dir={keep}"],
                       cwd=out, shown=shown)
    if done.returncode != 0:
        raise CompileFailed(f"{source.shown} does not compile (the build reports the error):\n"
                            f"{tail(done).replace(str(source.clean), source.shown)}")
    deps = parse_depfile(depfile.read_text(encoding="utf-8", errors="replace"))
    passes = sorted(keep.glob("*.ii"))
    complete = any(p.name.endswith(".cpp1.ii") for p in passes)  # -M read the device passes too
    if not complete:  # an nvcc that keeps no device pass
        for arch in session.tools.archs:
            target = keep / f"device.{arch}.cpp1.ii"
            flags = [session.tools.nvcc, "-E", *language, *COMPILE_FLAGS[2:], *session.include_flags(),
                     f"-arch={arch}"]
            done = session.run([*flags, str(source.clean), "-o", str(target)], cwd=out,
                               shown=[*flags, str(source.original), "-o", target.name])
            if done.returncode == 0:
                passes.append(target)
    return [os.path.realpath(os.path.join(out, d)) for d in deps], passes, complete


_MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"((?: \d+)*)\s*$')


def _unescape(name: str) -> str:
    """A file name from a line marker, with GCC's escapes undone."""
    return re.sub(r"\\([0-7]{1,3}|.)", lambda m: chr(int(m.group(1), 8)) if m.group(1).isdigit() else m.group(1),
                  name)


@functools.lru_cache(maxsize=65536)
def _real(cwd: str, name: str) -> str:
    """The real path of a file named in a line marker (`<built-in>` and the like stay)."""
    return name if name.startswith("<") else os.path.realpath(os.path.join(cwd, name))


@dataclass
class _Frame:
    """One open file of the include stack while a preprocessed pass is read."""

    file: str
    line: int
    chain: dict | None = None  # the include chain that began at a student's #include
    # A student's file renamed by its own #line directive: the name the markers now use,
    # and real line minus the markers' line. The lines stay the student's.
    alias: str | None = None
    offset: int = 0


@dataclass
class Scan:
    """What the line markers of one preprocessed pass say."""

    located: dict[str, tuple[str, int]]  # outermost header of `bad` -> (student file, line its #include ends)
    nested: set[str]  # headers of `bad` seen only inside another one
    own: list[tuple[str, int, str]]  # the student's own lines (file, line, text), if asked
    seen: set[str]  # every file the pass read
    # #line directives in a student's file that name another file: (file, line, the name)
    renamed: list[tuple[str, int, str]] = field(default_factory=list)


def scan_preprocessed(path: Path, cwd: Path, students: set[str], bad: set[str],
                      keep_student_lines: bool = False) -> Scan:
    """Reads the line markers of one preprocessed pass (GCC's `# <line> "<file>" <flags>`)."""
    located: dict[str, tuple[str, int]] = {}
    nested: set[str] = set()
    seen: set[str] = set()
    own: list[tuple[str, int, str]] = []
    renamed: list[tuple[str, int, str]] = []
    stack: list[_Frame] = []
    base = str(cwd)
    started = False  # past the preamble (<built-in>, <command-line>): the main file's own markers
    with open(path, encoding="utf-8", errors="replace") as stream:
        for raw in stream:
            if raw.startswith("# "):
                marker = _MARKER.match(raw)
                if marker:
                    file = _real(base, _unescape(marker.group(2)))
                    flags = marker.group(3).split()
                    top = stack[-1] if stack else None
                    if (started and not flags and top is not None and top.file in students
                            and file != top.file and top.alias != file):
                        # Only a #line directive of the student's makes a flagless marker name
                        # another file inside theirs: the code that follows is still theirs.
                        renamed.append((top.file, top.line, marker.group(2)))
                        top.alias, top.offset = file, top.line + 1 - int(marker.group(1))
                        top.line += 1
                        continue
                    seen.add(file)
                    _marker(stack, int(marker.group(1)), file, flags, students, bad, located, nested)
                    if not flags and len(stack) == 1 and stack[0].file in students and int(marker.group(1)) >= 1:
                        started = True
                    continue
            if stack:
                top = stack[-1]
                if keep_student_lines and top.file in students and raw.strip():
                    own.append((top.file, top.line, raw.rstrip("\n")))
                top.line += 1
    return Scan(located, nested, own, {f for f in seen if not f.startswith("<")}, renamed)


def _marker(stack: list[_Frame], line: int, file: str, flags: list[str], students: set[str], bad: set[str],
            located: dict[str, tuple[str, int]], nested: set[str]) -> None:
    """Follows one line marker: entering a header (flag 1), returning (flag 2), or a new line number."""
    if "1" in flags:
        parent = stack[-1] if stack else None
        if parent is not None and parent.file in students:
            chain = {"file": parent.file, "bad": []}  # a chain begins at the student's #include
        else:
            chain = parent.chain if parent is not None else None
        inside_bad = any(frame.file in bad for frame in stack)
        stack.append(_Frame(file, line, chain))
        if file in bad and inside_bad:
            nested.add(file)
        elif file in bad and chain is not None and file not in located:
            chain["bad"].append(file)
        return
    if "2" in flags:
        while len(stack) > 1 and stack[-1].file != file:
            popped = stack.pop()
            # Back in the student's file: the line before the marker ends the #include.
            if stack[-1].file == file and file in students and popped.chain and popped.chain["file"] == file:
                for header in popped.chain["bad"]:
                    located.setdefault(header, (file, line - 1))
        if stack:
            stack[-1].line = line
        return
    for depth in range(len(stack) - 1, -1, -1):  # a new line number, maybe of a file further out
        if stack[depth].file == file or (stack[depth].alias is not None and stack[depth].alias == file):
            del stack[depth + 1:]
            frame = stack[-1]
            frame.line = line + (frame.offset if frame.file != file else 0)
            return
    if stack:
        stack[-1] = _Frame(file, line, stack[-1].chain)
    else:
        stack.append(_Frame(file, line))


def directive_line(text: str, line: int) -> int:
    """The first line of the #include directive that ends at `line` (directives can span lines)."""
    lines = text.splitlines()
    for candidate in range(min(line, len(lines)), max(0, line - 10), -1):
        stripped = lines[candidate - 1].lstrip()
        if stripped.startswith(("#", "%:", "??=")):
            return candidate
    return line


def include_findings(source: Source, policy: IncludePolicy, deps: list[str],
                     passes: list[Path], cwd: Path, complete: bool
                     ) -> tuple[list[rules.Finding], list[tuple[str, int, str]]]:
    """Findings for the headers `source` may not include, and the student's own preprocessed lines.

    `complete`: the dependency list covers every pass (else every pass is read for its files)."""
    students = set(policy.students)
    if not complete:  # an nvcc whose -M saw the host pass only: the line markers name the rest
        for path in passes:
            deps = deps + sorted(scan_preprocessed(path, cwd, students, set()).seen)
    verdicts = {dep: policy.verdict(dep) for dep in dict.fromkeys(deps)}
    bad = {dep for dep, verdict in verdicts.items() if verdict is not None}
    located: dict[str, tuple[str, int]] = {}
    nested: set[str] = set()
    own: list[tuple[str, int, str]] = []
    renamed: list[tuple[str, int, str]] = []
    host = [p for p in passes if not p.name.endswith(".cpp1.ii")]
    for path in host + [p for p in passes if p not in host]:
        is_host = path in host
        if not is_host and bad <= set(located) | nested:
            break  # every forbidden header placed: the device passes need not be read
        scan = scan_preprocessed(path, cwd, students, bad, keep_student_lines=is_host)
        for header, where in scan.located.items():
            located.setdefault(header, where)
        nested |= scan.nested
        own += scan.own
        renamed = renamed or scan.renamed
    findings = []
    for file, line, named in renamed:
        student = policy.students.get(file, source)
        findings.append(forbidden(student, "defines", line, f"a #line directive names another file ({named}): "
                                  "it would hide where your code comes from; remove it", "#line"))
    reported_lines: set[tuple[str, int | None, str]] = set()
    for header in sorted(bad, key=lambda h: (located.get(h, ("", 1 << 30))[1], h)):
        if header not in located and header in nested:
            continue  # pulled in by a forbidden header that is reported
        shown, why = verdicts[header]
        file_real, line = located.get(header, (os.path.realpath(source.clean), None))
        student = policy.students.get(file_real, source)
        if line is not None:
            line = directive_line(student.text, line)
        key = (student.shown, line, why)
        if header not in located and key in reported_lines:
            continue
        reported_lines.add(key)
        where = f"{student.shown}:{line}" if line else student.shown
        findings.append(rules.Finding("forbidden", "#include", student.shown, line,
                                      f"{where}: includes {shown} ({why})", rule="include"))
    return findings, own


def outside_files(policy: IncludePolicy, deps: list[str]) -> list[str]:
    """The files of `deps` outside the kit's headers, the toolkit, the system and the
    student's own files, as the student would name them."""
    return list(dict.fromkeys(v[0] for d in deps if (v := policy.verdict(d)) is not None and v[1] == OUTSIDE_WHY))
