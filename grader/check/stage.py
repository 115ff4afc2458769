"""The stage: every static check of one lab's files (check_lab), and the files outside the
kit a compile reads (foreign_reads)."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from grader import manifest, rules
from grader.check import steps
from grader.check.elf import Code, Object
from grader.check.findings import CheckError, CheckResult, CompileFailed, Exceeded, Source, lines_from_includes, unique
from grader.check.includes import IncludePolicy, allowed_families, dependencies, include_findings, outside_files, under
from grader.check.loadtime import constructor_findings, syscall_findings
from grader.check.session import SOURCE_SUFFIXES, Session, clean_sources, compile_object, read_object
from grader.check.source_text import source_text_findings
from grader.check.symbols import (ObjectContext, header_functions, header_identifiers, registration_findings,
                                  symbol_findings)
from grader.check.tools import find_nvcc, toolchain, tools_missing


def check_lab(kit: Path, lab: manifest.Lab, files: list[Path], *, work_dir: Path, object_file: Path | None = None,
              nvcc: str | None = None, timeout: float = 120.0) -> CheckResult:
    """Static checks of the student's editable `files` of `lab` against the kit at `kit`.

    `object_file` is an already compiled object of the main file (labs/<lab>/<lab>.cu);
    without it the check compiles one into a private folder under `work_dir`. Everything
    the check writes is removed before it returns."""
    result = CheckResult()
    found = find_nvcc(nvcc)
    if found is None:
        where = nvcc or "looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin"
        return CheckResult(ok=False, message=f"nvcc not found ({where}): install the CUDA toolkit or pass its nvcc")
    missing_tools = tools_missing()
    if missing_tools:
        return CheckResult(ok=False, message=f"{', '.join(missing_tools)} not found: install binutils")
    kit = kit.resolve()
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    root = work_dir / f"check-{lab.name}-{uuid.uuid4().hex[:8]}"
    session = None
    try:
        session = Session(kit, lab, toolchain(found), root, timeout)
        _check_files(session, files, work_dir, object_file, result.findings, result)
    except Exceeded as exc:
        result.ok, result.exceeded = False, True
        result.message = (f"{lab.name}: could not compile within the check's limits: {exc}. Simplify the code "
                          "(no huge arrays with initial values, no runaway templates)")
    except CompileFailed as exc:  # the findings so far (its includes) stay: they are true of the file
        result.ok, result.message = False, str(exc)
    except CheckError as exc:
        result.ok, result.message = False, str(exc)
    finally:
        if session is not None:
            result.commands = session.commands
        shutil.rmtree(root, ignore_errors=True)
    result.findings[:] = unique(result.findings)
    return result


def foreign_reads(kit: Path, lab: manifest.Lab, files: list[Path], *, work_dir: Path, nvcc: str | None = None,
                  timeout: float = 120.0) -> list[str] | None:
    """The files outside the kit's headers, the toolkit, the system and the student's own
    files that compiling `files` reads (nvcc -M, every pass), by the names the student
    would see; None when that cannot be told (no nvcc, or the preprocessor failed).

    A compiler's messages quote the lines they are about: when a file that does not
    compile includes such a file, its messages must not reach the student's report."""
    found = find_nvcc(nvcc)
    if found is None:
        return None
    kit = kit.resolve()
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    root = work_dir / f"reads-{lab.name}-{uuid.uuid4().hex[:8]}"
    try:
        session = Session(kit, lab, toolchain(found), root, timeout)
        sources = clean_sources(session, files, work_dir)
        policy = IncludePolicy(session, sources, allowed_families(lab))
        deps: list[str] = []
        for number, source in enumerate(s for s in sources if s.clean.suffix in SOURCE_SUFFIXES):
            out = root / f"step{number}"
            out.mkdir()
            deps += dependencies(session, source, out)[0]
        return outside_files(policy, deps)
    except (CheckError, CompileFailed, Exceeded, OSError):
        return None
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _check_files(session: Session, files: list[Path], work_dir: Path, object_file: Path | None,
                 findings: list[rules.Finding], result: CheckResult | None = None) -> None:
    """Adds every finding in the student's files (copied into a clean folder first) to
    `findings`, and the main file's steps (steps.py) to `result`."""
    lab, kit = session.lab, session.kit
    sources = clean_sources(session, files, work_dir)
    compiled = [s for s in sources if s.clean.suffix in SOURCE_SUFFIXES]
    main = next((s for s in compiled if s.clean.name == f"{lab.name}.cu"), compiled[0] if compiled else None)
    policy = IncludePolicy(session, sources, allowed_families(lab))
    objects: list[tuple[Source, Object, list[str]]] = []
    for number, source in enumerate(compiled):
        out = session.root / f"step{number}"
        out.mkdir()
        deps, passes, complete = dependencies(session, source, out)
        found, own = include_findings(source, policy, deps, passes, out, complete)
        findings += found + source_text_findings(own, policy)
        shutil.rmtree(out / "keep", ignore_errors=True)  # the preprocessed passes are large
        outside = outside_files(policy, deps)
        try:
            obj = (Path(object_file) if (object_file is not None and source is main)
                   else compile_object(session, source, out))
        except CompileFailed:
            if not outside:
                raise
            # Its messages would quote the file outside the lab: name it, show none of them.
            raise CompileFailed(f"{source.shown} does not compile, and it includes {outside[0]}, a file outside "
                                "your lab: the compiler's messages are not shown") from None
        kit_headers = [d for d in deps if under(d, policy.common) or d == policy.lab_header]
        objects.append((source, read_object(session, obj), kit_headers))
        if result is not None and source is main:
            result.steps = _read_steps(obj, objects[-1][1])
    own_defined = {s.name for _, obj, _ in objects for s in obj.symbols if s.defined and s.is_global}
    kit_functions = header_functions(kit / "labs" / lab.name / f"{lab.name}.h")
    for source, obj, kit_headers in objects:
        ctx = ObjectContext(source, lab.name, kit_functions, set(lab.functions), own_defined,
                            header_identifiers(kit_headers), tuple(lab.allowed_symbols),
                            tuple(lab.forbidden_symbols), {index: info[4] for index, info in obj.sections.items()},
                            tuple(lab.allowed_rules))
        findings += (symbol_findings(obj, ctx) + constructor_findings(obj, source, own_defined)
                     + registration_findings(obj, source) + syscall_findings(obj, source, obj.demangled))
    lines_from_includes(findings)


def _read_steps(path: Path, obj: Object) -> dict[str, object]:
    """The registered variants of the object at `path` and the kernels each launches (steps.py)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return {"ok": False, "message": f"cannot read {path.name}: {exc.strerror}", "variants": [], "near": []}
    return steps.analyse(data, Code.of(obj)).as_dict()
