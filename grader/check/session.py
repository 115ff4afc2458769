"""One check of one lab: its private folder, its deadline, and every process it runs, each
bounded in time, memory and file size (tools.DEFAULT_LIMITS)."""

from __future__ import annotations

import fnmatch
import os
import shutil
import time
from pathlib import Path

from grader import manifest, proc
from grader.check import tools
from grader.check.elf import Object, demangle_batches, object_from_text, parse_demangled
from grader.check.findings import CheckError, CompileFailed, Exceeded, Source
from grader.check.tools import TOOL_TIMEOUT_S, Toolchain

# Each compiler step may take this long; a template bomb that stays under the memory
# limit still ends here (the solutions compile in under 10 s on a loaded 2-core box).
STEP_TIMEOUT_S = 60.0
OUTPUT_CAP = 48 << 20  # bytes of readelf/objdump output read before giving up
MAX_SOURCE_BYTES = 16 << 20  # a student's file larger than this is not compiled
COMPILE_FLAGS = ["-x", "cu", "-std=c++17"]
OBJECT_FLAGS = ["-O3", "-Xcompiler=-fPIC"]
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")


class Session:
    """One check_lab call: its folders, deadline, limits and the commands it ran."""

    def __init__(self, kit: Path, lab: manifest.Lab, toolchain: Toolchain, root: Path, timeout: float) -> None:
        self.kit = kit
        self.lab = lab
        self.tools = toolchain
        self.root = root  # private folder, removed at the end
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True)
        self.deadline = time.monotonic() + timeout
        self.commands: list[str] = []

    def run(self, cmd: list[str], *, step: float = STEP_TIMEOUT_S, cap: int = proc.CAP_BYTES,
            cwd: Path | None = None, shown: list[str] | None = None) -> proc.ProcResult:
        """Run one bounded step; Exceeded when it runs out of time or memory.

        `shown` is the command as a student can rerun it (their file, outputs in the current
        folder); it goes into the CheckResult's commands. Tool runs pass none."""
        left = self.deadline - time.monotonic()
        if left <= 1:
            raise Exceeded("the static checks ran out of time")
        env = {"TMPDIR": str(self.tmp), "LC_ALL": "C"}  # nvcc's temporary files stay in our folder
        try:
            done = proc.run(cmd, timeout=min(step, left), env=env, cwd=cwd, cap=cap, limits=tools.DEFAULT_LIMITS)
        except proc.LaunchError as exc:
            raise CheckError(str(exc)) from None
        if shown is not None:
            self.commands.append(proc.command_string(shown))
        if done.timed_out:
            raise Exceeded(f"`{Path(cmd[0]).name}` took longer than {min(step, left):.0f} s")
        if done.returncode != 0 and _out_of_limits(done):
            limits = tools.DEFAULT_LIMITS
            raise Exceeded(f"`{Path(cmd[0]).name}` needed more memory or disk than the check allows "
                           f"({limits.memory_bytes >> 20} MiB, files up to {limits.file_bytes >> 20} MiB)")
        return done

    def include_flags(self) -> list[str]:
        """-I flags of the build: the lab's folder, then the kit's common headers."""
        return [f"-I{self.kit / 'labs' / self.lab.name}", f"-I{self.kit / 'common' / 'include'}"]


def _out_of_limits(done: proc.ProcResult) -> bool:
    """Whether a failed step hit the memory or file-size limit rather than an error in the code."""
    text = (done.stdout + done.stderr).lower()
    markers = ("out of memory", "memory exhausted", "bad_alloc", "cannot allocate memory",
               "file size limit exceeded", "file too large")
    return done.signal_name in ("SIGXFSZ", "SIGKILL") or any(m in text for m in markers)


def tail(done: proc.ProcResult, lines: int = 12) -> str:
    """The last lines a step printed (its error message)."""
    return "\n".join((done.stderr or done.stdout).strip().splitlines()[-lines:])


def shown_name(kit: Path, lab: manifest.Lab, path: Path, work_dir: Path) -> str:
    """How a student's file is named in findings: relative to the kit (labs/<lab>/<lab>.cu)."""
    resolved = Path(os.path.abspath(path))
    for pattern in lab.editable:  # a copy anywhere: the editable path its end matches
        rel = pattern.replace("{lab}", lab.name)
        parts = rel.split("/")
        end = "/".join(resolved.parts[-len(parts):])
        if fnmatch.fnmatchcase(end, rel):
            return end
    for base in (kit, work_dir):
        try:
            return resolved.relative_to(Path(os.path.abspath(base))).as_posix()
        except ValueError:
            pass
    return f"labs/{lab.name}/{path.name}"


def clean_sources(session: Session, files: list[Path], work_dir: Path) -> list[Source]:
    """The student's `files`, each copied alone into a clean folder (no header next to it
    shadows the kit's); CheckError or Exceeded when one is missing or too large."""
    lab = session.lab
    if not any(Path(p).suffix in SOURCE_SUFFIXES for p in files):
        raise CheckError(f"{lab.name}: no source file to check (the editable files are {', '.join(lab.editable)})")
    sources = []
    for path in files:
        if not Path(path).is_file():
            raise CheckError(f"{path} not found: the lab's editable file is missing")
        if Path(path).stat().st_size > MAX_SOURCE_BYTES:
            raise Exceeded(f"{Path(path).name} is larger than {MAX_SOURCE_BYTES >> 20} MiB")
        shown = shown_name(session.kit, lab, Path(path), work_dir)
        clean = session.root / "src" / shown
        clean.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, clean)
        sources.append(Source(shown, Path(path), clean))
    return sources


def compile_object(session: Session, source: Source, out: Path) -> Path:
    """Compiles `source` into an object the way the build does."""
    obj = out / (source.clean.stem + ".o")
    language = ["-x", "cu"] if source.clean.suffix == ".cu" else ["-x", "c++"]
    flags = [session.tools.nvcc, "-c", *language, *COMPILE_FLAGS[2:], *OBJECT_FLAGS, *session.include_flags()]
    done = session.run([*flags, str(source.clean), "-o", str(obj)], cwd=out,
                       shown=[*flags, str(source.original), "-o", obj.name])
    if done.returncode != 0 or not obj.is_file():
        raise CompileFailed(f"{source.shown} does not compile (the build reports the error):\n"
                            f"{tail(done).replace(str(source.clean), source.shown)}")
    return obj


def read_object(session: Session, obj: Path) -> Object:
    """Symbols, sections, relocations and disassembly of `obj`."""
    def tool(cmd: list[str]) -> str:
        """The output of one binutils run over the object."""
        done = session.run(cmd, step=TOOL_TIMEOUT_S, cap=OUTPUT_CAP)
        if done.stdout_cut:
            raise Exceeded(f"the compiled object is too large to inspect ({' '.join(cmd[:2])} printed more "
                           f"than {OUTPUT_CAP >> 20} MiB)")
        if done.returncode != 0:
            raise CheckError(f"cannot read the compiled object {obj.name}: {tail(done, 3)}")
        return done.stdout

    elf_text = tool(["readelf", "-W", "--section-headers", "--relocs", "--syms", str(obj)])
    disassembly = tool(["objdump", "-d", "-w", "--no-show-raw-insn", str(obj)])
    return object_from_text(elf_text, disassembly, lambda names: demangle(session, names))


def demangle(session: Session, names: list[str]) -> dict[str, str]:
    """Demangled forms of `names` (c++filt; `--` so that no name is read as an option)."""
    result: dict[str, str] = {}
    for batch in demangle_batches(names):
        done = session.run(["c++filt", "--", *batch], step=TOOL_TIMEOUT_S, cap=OUTPUT_CAP)
        if done.returncode == 0:
            result.update(parse_demangled(batch, done.stdout))
    return result
