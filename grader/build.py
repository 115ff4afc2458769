"""Build the kit once, then each submission's files alone (CONTRACT.md "Build").

The kit's own part (common/, the tests' and benches' objects, the judge programs and
their workers, the reference libraries) does not depend on a student's file: it is
configured and built once per build folder and reused for every submission. A
submission then costs one compile and one link per lab: the student's file, compiled
with exactly the command CMake wrote for the kit's own copy of it (read back from
Ninja), into a shared library of the submission's own that the judge loads. Those
compiles are bounded in time, memory and output size (proc.Limits).

When a build fails, the first compiler error lines become the message, since those
(not the cascade after them) tell a student what to fix.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Callable
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from grader import layout, proc

STAMP_NAME = layout.CONFIGURE_STAMP
MAX_ERROR_LINES = 15

# "file.cu:12:5: error: ..." (gcc, clang), "file.cu(12): error: ..." (nvcc).
_LOCATED_ERROR = re.compile(r"\S+(:\d+|\(\d+\))\S*.*\berror\b", re.IGNORECASE)
_ANY_ERROR = re.compile(r"\berror\b|undefined reference", re.IGNORECASE)


@dataclass
class BuildResult:
    """Outcome of the configure step or of one lab's build."""

    ok: bool
    message: str = ""  # on failure: what went wrong and what to do
    command: str = ""  # the command that reproduces it
    output: str = ""  # combined output tail, for the report


# Ninja prints "[12/140] Building CUDA object ..." as it goes.
_NINJA_PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] ")


judge_targets = layout.judge_targets  # the kit's targets one lab's grading needs


def is_configured(build_dir: Path, root: Path) -> bool:
    """Whether `build_dir` is a Ninja build of the kit at `root` (e.g. the developer's build/dev)."""
    cache = build_dir / layout.CMAKE_CACHE
    try:
        text = cache.read_text(errors="replace")
    except OSError:
        return False
    home = re.search(r"^CMAKE_HOME_DIRECTORY:INTERNAL=(.*)$", text, re.MULTILINE)
    generator = re.search(r"^CMAKE_GENERATOR:INTERNAL=(.*)$", text, re.MULTILINE)
    if not home or not generator or generator.group(1).strip() != "Ninja":
        return False
    try:
        return Path(home.group(1).strip()).resolve() == root.resolve()
    except OSError:
        return False


def cache_value(build_dir: Path, name: str) -> str | None:
    """A variable of `build_dir`'s CMakeCache.txt (`NAME:TYPE=value`); None when there is no
    cache or it lacks the variable."""
    try:
        text = (build_dir / layout.CMAKE_CACHE).read_text(errors="replace")
    except OSError:
        return None
    found = re.search(rf"^{re.escape(name)}:[A-Za-z]+=(.*)$", text, re.MULTILINE)
    return found.group(1).strip() if found else None


def configure_args(root: Path, build_dir: Path, *, solutions: bool, cuda_arch: str | None) -> list[str]:
    """The CMake configure command line for this grading run."""
    args = ["cmake", "-S", str(root), "-B", str(build_dir)]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    args.append("-DCMAKE_BUILD_TYPE=Release")
    if cuda_arch:
        args.append(f"-DCMAKE_CUDA_ARCHITECTURES={cuda_arch}")
    if solutions:
        args.append("-DLABKIT_BUILD_SOLUTIONS=ON")
    return args


def configure(args: list[str], build_dir: Path, timeout: float) -> BuildResult:
    """Run `args` unless the build dir was already configured with exactly them.

    The arguments are remembered in a stamp file: a changed `--cuda-arch` or `--impl`
    must reconfigure, an unchanged one must not pay for it again. So must a cache whose
    CUDA architectures someone changed since (`cmake -B <build> -DCMAKE_CUDA_ARCHITECTURES=..`):
    the grader's --cuda-arch is what is built.
    """
    stamp = build_dir / STAMP_NAME
    if (build_dir / layout.CMAKE_CACHE).is_file() and _read_stamp(stamp) == args and not _arch_changed(args, build_dir):
        return BuildResult(ok=True)
    if not shutil.which("cmake"):
        return BuildResult(ok=False, command=proc.command_string(args), message=(
            "cmake not found on PATH: install CMake >= 3.25 (e.g. `sudo apt install cmake`"
            " or `pip install cmake`) and Ninja, then run the grader again"))
    build_dir.mkdir(parents=True, exist_ok=True)
    result = proc.run(args, timeout=timeout)
    if result.timed_out:
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message=f"CMake configure timed out after {timeout:g} s")
    if result.returncode != 0:
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message="CMake configure failed:\n" + first_errors(result.stdout + "\n" + result.stderr))
    stamp.write_text(json.dumps(args) + "\n")
    return BuildResult(ok=True, command=result.command)


def build_targets(build_dir: Path, targets: list[str], timeout: float, root: Path | None = None,
                  progress: Callable[[int, int], None] | None = None, keep_going: bool = False) -> BuildResult:
    """Build `targets`; on failure the message holds the first errors. `progress(done, total)`
    is told Ninja's progress as it goes; `keep_going` builds what it can despite errors."""
    args = ["cmake", "--build", str(build_dir), "--target", *targets]
    if keep_going:
        args += ["--", "-k", "0"]

    def on_line(line: str) -> None:
        if progress is not None and (m := _NINJA_PROGRESS.match(line)):
            progress(int(m.group(1)), int(m.group(2)))

    result = proc.run(args, timeout=timeout, line_callback=on_line if progress else None)
    if result.timed_out:
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message=f"the build timed out after {timeout:g} s")
    if result.returncode != 0:
        errors = first_errors(result.stdout + "\n" + result.stderr)
        if root is not None:  # paths relative to the kit read better in a table
            errors = errors.replace(f"{root}/", "")
        return BuildResult(ok=False, command=result.command, output=result.output_tail(),
                           message="compilation failed:\n" + errors)
    return BuildResult(ok=True, command=result.command)


def first_errors(output: str, limit: int = MAX_ERROR_LINES) -> str:
    """The first error lines of compiler/CMake output (at most `limit`).

    A CMake error keeps its explanation lines; otherwise lines that name a file and
    line are preferred, then any line mentioning an error (linker errors have no line
    number), then the last lines of the output.
    """
    lines = [line.rstrip() for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        # CMake puts the explanation on the indented lines after "CMake Error at".
        if line.startswith("CMake Error"):
            return "\n".join(lines[i:i + limit])
    for pattern in (_LOCATED_ERROR, _ANY_ERROR):
        found = [line for line in lines if pattern.search(line)]
        if found:
            return "\n".join(found[:limit])
    return "\n".join(lines[-limit:])


def _arch_changed(args: list[str], build_dir: Path) -> bool:
    """Whether `args` name CUDA architectures that the build folder's cache no longer holds."""
    given = [a.split("=", 1)[1] for a in args if a.startswith("-DCMAKE_CUDA_ARCHITECTURES=")]
    cached = cache_value(build_dir, "CMAKE_CUDA_ARCHITECTURES")
    return bool(given) and cached is not None and cached != given[-1]


def _read_stamp(stamp: Path) -> list[str] | None:
    try:
        return json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None


# ---- a submission's own build --------------------------------------------------------

class CommandsError(Exception):
    """The kit's build cannot tell how to compile a lab's student file."""


@dataclass
class StudentCommands:
    """How CMake builds a lab's student library in the kit's build folder (from Ninja)."""

    compile: list[str]  # nvcc ... -c <kit>/labs/<lab>/<lab>.cu -o <object> (its depfile options too)
    link: list[list[str]]  # the link's commands (arguments), run one after the other
    source: str  # the kit's own student file, as named in `compile`
    object: str  # the object file, as named in `compile` and `link`
    library: str  # the library the link writes, as named in `link`


# Programs CMake may put before the compiler (CMAKE_<LANG>_COMPILER_LAUNCHER).
LAUNCHERS = ("ccache", "sccache", "buildcache")


def student_commands(build_dir: Path, lab: str, kit_root: Path, timeout: float = 60) -> StudentCommands:
    """The commands that build lib<lab>_student.so, read from `ninja -t commands`."""
    ninja = shutil.which("ninja")
    if ninja is None:
        raise CommandsError("ninja not found on PATH: install Ninja (e.g. `sudo apt install ninja-build`); "
                            "the grader builds with it")
    target = layout.library_target(lab, layout.STUDENT)
    result = proc.run([ninja, "-C", str(build_dir), "-t", "commands", target], timeout=timeout)
    if result.returncode != 0:
        raise CommandsError(f"cannot read the build commands of {target} from Ninja: "
                            + first_errors(result.stdout + "\n" + result.stderr))
    wanted = layout.student_source(kit_root, lab).resolve()
    source = str(wanted)
    compile_args: list[str] | None = None
    link: list[list[str]] | None = None
    library = layout.ninja_student_library(lab)
    for line in result.stdout.splitlines():
        segments = _segments(line)
        for args in segments:
            if "-c" in args and "-o" in args and args.index("-c") + 1 < len(args):
                named = args[args.index("-c") + 1]
                if Path(named).resolve() == wanted:
                    compile_args, source = args, named
        if any(a.endswith(library) for segment in segments for a in segment):
            link = [args for args in segments if args and args != [":"]]
    if compile_args is None or link is None:
        raise CommandsError(f"Ninja's commands for {target} do not compile {source}: reconfigure the kit "
                            "(delete the build folder) and try again")
    # A compiler launcher (CMAKE_CUDA_COMPILER_LAUNCHER=ccache) would write to its cache
    # outside the compile jail, and a student's file gains nothing from a cache: nvcc alone.
    while len(compile_args) > 1 and Path(compile_args[0]).name in LAUNCHERS:
        compile_args = compile_args[1:]
    obj = compile_args[compile_args.index("-o") + 1]
    return StudentCommands(compile_args, link, source, obj, library)


def _segments(line: str) -> list[list[str]]:
    """A Ninja command line (`: && a && b && :`) as the argument lists of its commands."""
    try:
        words = shlex.split(line)
    except ValueError:
        return []
    out, current = [], []
    for word in words:
        if word == "&&":
            out.append(current)
            current = []
        else:
            current.append(word)
    out.append(current)
    return [segment for segment in out if segment and segment != [":"]]


@dataclass
class StudentBuild:
    """One lab's student library, built for one submission."""

    ok: bool
    library: Path | None = None
    object: Path | None = None
    depfile: Path | None = None
    message: str = ""
    command: str = ""  # reproduces the compile (or the failed step)
    output: str = ""
    commands: list[str] = field(default_factory=list)

    RECORD = layout.BUILD_RECORD

    def save(self, folder: Path) -> None:
        """Records the outcome in `folder` (for a grading run that builds nothing: --prebuilt)."""
        folder.mkdir(parents=True, exist_ok=True)
        data = {key: (str(value) if isinstance(value, Path) else value) for key, value in vars(self).items()}
        (folder / self.RECORD).write_text(json.dumps(data, indent=1) + "\n")

    @classmethod
    def load(cls, folder: Path) -> StudentBuild | None:
        """The outcome `save` recorded in `folder`, or None when there is none."""
        try:
            data = json.loads((folder / cls.RECORD).read_text())
        except (OSError, ValueError):
            return None
        paths = {key: Path(data[key]) if data.get(key) else None for key in ("library", "object", "depfile")}
        return cls(ok=bool(data.get("ok")), message=str(data.get("message", "")), command=str(data.get("command", "")),
                   output=str(data.get("output", "")), commands=list(data.get("commands", [])), **paths)


# A compiler may use this much memory and write files this large: every reference and
# skeleton fits with room to spare; a template bomb or a gigabyte array in a student's
# file fails within about a minute instead of filling the machine.
DEFAULT_COMPILE_LIMITS = proc.Limits(memory_bytes=6 << 30, file_bytes=512 << 20)
# What every compile may read besides the kit's build folder, its include folders and the
# student's own folder: the system's programs and libraries, and a few device files.
SYSTEM_READABLE = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc/ld.so.cache",
                   "/etc/alternatives", "/dev/urandom", "/dev/zero")


# The version of how a student's file is built in the jail (build_student, compile_jail):
# a build folder's cached verdict on the jail (jail_verdict) already follows the
# folders the jail opens; this number makes it try again when the code around them changes.
JAIL_RULES = 3


def compile_jail(build_dir: Path, commands: StudentCommands, source: Path, out_dir: Path) -> proc.Jail:
    """What compiling and linking a student's file may touch: read the system, the toolkit,
    the kit's build folder and include folders and the student's folder; write the output
    folder (its tmp/ holds nvcc's temporary files) and /dev/null. Nothing else of the
    machine: not the kit's solutions/, not another submission, not a home folder."""
    readable = [*SYSTEM_READABLE, str(build_dir), str(source.parent)]
    nvcc = Path(os.path.realpath(shutil.which(commands.compile[0]) or commands.compile[0]))
    readable.append(str(nvcc.parent.parent))  # the toolkit, wherever it is
    # The other programs the build runs: the host compiler nvcc is told to use (-ccbin) and
    # each link step's program, wherever they are installed (a compiler of its own in /opt).
    programs = [step[0] for step in commands.link if step]
    args = commands.compile
    for i, arg in enumerate(args):
        if arg in ("-I", "-isystem") and i + 1 < len(args):  # the include folders
            readable.append(args[i + 1])
        elif arg.startswith("-isystem"):
            readable.append(arg[len("-isystem"):].removeprefix("="))
        elif arg.startswith("-I"):
            readable.append(arg[2:])
        elif arg in ("-ccbin", "--compiler-bindir") and i + 1 < len(args):  # the host compiler
            programs.append(args[i + 1])
        elif arg.startswith(("-ccbin=", "--compiler-bindir=")):
            programs.append(arg.split("=", 1)[1])
    for program in programs:
        readable += _program_readable(Path(os.path.realpath(shutil.which(program) or program)))
    return proc.Jail(readable, [str(out_dir), "/dev/null"])


def _program_readable(found: Path) -> list[str]:
    """What running compiler `found` (a file, or the folder -ccbin names) needs to read: the
    file or folder itself, and the installation above its bin/ when that looks like a
    compiler's (a libexec/ or lib/gcc/ beside it), never a home folder or the root. So a
    wrapper script in ~/bin opens neither ~ nor the rest of ~/bin to a student's compile."""
    folder = found if found.is_dir() else found.parent
    prefix = folder.parent
    out = [str(found)]
    toolchain = any((prefix / sub).is_dir() for sub in ("libexec", "lib/gcc", "lib/clang", "lib64/gcc"))
    if toolchain and prefix not in (Path("/"), Path.home()) and prefix.parent != Path("/home"):
        out.append(str(prefix))
    return out


def build_student(build_dir: Path, commands: StudentCommands, source: Path, out_dir: Path, lab: str, *,
                  timeout: float, limits: proc.Limits = DEFAULT_COMPILE_LIMITS,
                  display_root: Path | None = None, jail: bool = False) -> StudentBuild:
    """Compile `source` (a lab's student file) as the kit compiles its own copy, and link it into
    out_dir/lib<lab>_student.so; with `jail`, inside compile_jail."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tmp = out_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    if jail:
        limits = dataclasses.replace(limits, jail=compile_jail(build_dir, commands, source, out_dir))
    obj = out_dir / f"{lab}.cu.o"
    depfile = out_dir / f"{lab}.cu.o.d"
    library = out_dir / layout.student_library(lab)
    for stale in (obj, depfile, library):
        stale.unlink(missing_ok=True)  # a failed build must not leave the last one's library behind
    args = [_replace(a, {commands.source: str(source), commands.object: str(obj)}) for a in commands.compile]
    for flag in ("-MF", "-MT"):
        if flag in args:
            args[args.index(flag) + 1] = str(depfile if flag == "-MF" else obj)
    env = {"TMPDIR": str(tmp)} if jail else None  # in the jail, nvcc's temporary files stay in its folder
    try:
        result = proc.run(args, timeout=timeout, cwd=build_dir, limits=limits, env=env)
    except proc.LaunchError as exc:
        return StudentBuild(False, message=f"compilation could not start: {exc}", command=proc.command_string(args))
    built = StudentBuild(False, command=result.command, commands=[result.command])
    if not (failed := _compile_failure(result, timeout, limits, display_root)):
        for step in commands.link:
            step = [_replace(a, {commands.object: str(obj), commands.library: str(library)}) for a in step]
            # The linker's dependency file (CMake 3.27+ asks for one) goes to the output folder
            # too: the kit's build folder is not the student's to write.
            step = [f"-Wl,--dependency-file={out_dir / 'link.d'}" if a.startswith("-Wl,--dependency-file=") else a
                    for a in step]
            linked = proc.run(step, timeout=timeout, cwd=build_dir, limits=limits, env=env)
            built.commands.append(linked.command)
            if failed := _compile_failure(linked, timeout, limits, display_root, linking=True):
                result = linked
                break
    if failed:
        built.message, built.output = failed, result.output_tail()
        return built
    built.ok, built.library, built.object = True, library, obj
    built.depfile = depfile if depfile.is_file() else None
    return built


def _replace(arg: str, mapping: dict[str, str]) -> str:
    """`arg` with a path of `mapping` replaced, whole or after an option's '=' ("-Wl,..." kept)."""
    if arg in mapping:
        return mapping[arg]
    for old, new in mapping.items():
        if arg.endswith("=" + old):
            return arg[: -len(old)] + new
    return arg


def _compile_failure(result: proc.ProcResult, timeout: float, limits: proc.Limits,
                     display_root: Path | None, linking: bool = False) -> str:
    """Why a compile or link step failed ('' when it did not)."""
    step = "linking" if linking else "compilation"
    if result.timed_out:
        return (f"{step} took longer than {timeout:g} s and was stopped: a template instantiated without end, "
                "or a huge initialised array? Make the file compile quickly")
    if result.returncode == 0:
        return ""
    output = result.stdout + "\n" + result.stderr
    if result.signal_name in ("SIGKILL", "SIGXFSZ", "SIGSEGV", "SIGABRT") or "memory exhausted" in output or \
            "out of memory" in output.lower() or "File size limit exceeded" in output or "std::bad_alloc" in output:
        size = f"{(limits.memory_bytes or 0) >> 30} GiB of memory" if limits.memory_bytes else "its memory limit"
        files = f"{(limits.file_bytes or 0) >> 20} MiB" if limits.file_bytes else "its limit"
        return (f"{step} failed at a limit ({size} per compiler process, {files} per output file): a template "
                "that instantiates without end, or a huge initialised array? " + first_errors(output, 5))
    errors = first_errors(output)
    if display_root is not None:
        errors = errors.replace(f"{display_root}/", "")
    return f"{step} failed:\n" + errors


# ---- does the jail work here? ---------------------------------------------------------

def jail_verdict(build_dir: Path, commands: StudentCommands, kit_root: Path, lab: str, trial: Path, *,
                 limits: proc.Limits, timeout: float) -> tuple[bool, str]:
    """Whether students' files compile inside the jail (compile_jail), and a note when not:
    where the kernel has Landlock and the kit's own file of `lab` compiles inside it, tried
    in the folder `trial` once per build folder, toolchain and kernel (the verdict is kept
    in the build folder, layout.COMPILE_JAIL)."""
    abi = proc.Jail.abi()
    if abi < 1:
        return False, ("compile jail: off (this kernel has no Landlock): a student's file can read any file "
                       "this user can read while it compiles")
    # The verdict holds for the jail's rules (toolkit, host compiler, linker, include
    # folders; a student's own folders stand in as placeholders, the same for every
    # student of a class), this kernel and this version of the jail's code.
    jail = compile_jail(build_dir, commands, Path("/student") / f"{lab}.cu", Path("/out"))
    key = json.dumps([os.uname().release, abi, JAIL_RULES, sorted(jail.readable), jail.writable])
    record = build_dir / layout.COMPILE_JAIL
    try:
        known = json.loads(record.read_text())
        if known.get("key") == key:
            return bool(known.get("ok")), str(known.get("why", ""))
    except (OSError, ValueError, AttributeError):
        pass
    problem = _try_jail(build_dir, commands, kit_root, lab, trial, limits=limits, timeout=timeout)
    why = f"compile jail: off (the kit's own file did not compile inside it: {problem})" if problem else ""
    try:
        record.write_text(json.dumps({"key": key, "ok": not problem, "why": why}) + "\n")
    except OSError:
        pass
    return not problem, why


def _try_jail(build_dir: Path, commands: StudentCommands, kit_root: Path, lab: str, trial: Path, *,
              limits: proc.Limits, timeout: float) -> str:
    """Compiles the kit's own file of `lab` inside the jail: '' when it worked, else why not."""
    shutil.rmtree(trial, ignore_errors=True)
    source = layout.student_source(trial, lab)
    source.parent.mkdir(parents=True)
    shutil.copyfile(layout.student_source(kit_root, lab), source)
    try:
        tried = build_student(build_dir, commands, source, trial / "out", lab, timeout=timeout, limits=limits,
                              jail=True)
        problem = "" if tried.ok else first_cause(tried.message + "\n" + (tried.output or ""))
    except (proc.LaunchError, OSError) as exc:  # e.g. the compiler itself may not be run from inside
        problem = str(exc)
    shutil.rmtree(trial, ignore_errors=True)
    return problem


def first_cause(text: str) -> str:
    """The line of a failed build's output that says why (a denied file, a missing one),
    else its last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for line in lines:
        if any(word in line for word in ("Permission denied", "cannot ", "fatal", "No such file")):
            return line
    return lines[-1] if lines else "no message"
