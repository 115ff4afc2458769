"""Package the reference libraries as machine code only, so that a machine can grade
without solutions/ and without a readable reference.

    python3 -m grader package --out labkit-reference.tar.gz --cuda-arch 90   # build for H100s, package
    python3 -m grader package --verify labkit-reference.tar.gz              # or an unpacked folder

The command builds `lib<lab>_solution.so` itself, in a fresh folder outside the kit, the
way a reference that leaves the instructor's hands must be built:

- machine code (SASS) for the named architectures only, no PTX: CMAKE_CUDA_ARCHITECTURES
  `<arch>-real`;
- no line information and no debug information: the CUDA compiler runs through
  nvcc_shipping.py (CMAKE_CUDA_COMPILER_LAUNCHER), which drops the kit's -lineinfo (and
  -G); with -lineinfo every cubin would carry its kernels' PTX and the source paths;
- no source paths: __FILE__ and the like are mapped to kit-relative paths
  (-ffile-prefix-map for the host and the device compiler);
- stripped (`strip --strip-all`; the exported variant registry stays).

Every option is a cache variable on CMake's command line: the kit's CMake files are not
changed. Each library is then inspected before anything is written (`inspect`): no PTX
in its fatbinaries (and none listed by `cuobjdump --list-ptx` where cuobjdump exists), no
PTX text, no path of the kit or of the build folder, no debug sections. Without
--cuda-arch the architectures are those of the GPUs in this machine; with no GPU either,
the kit's fallback architectures (LABKIT_FALLBACK_CUDA_ARCHITECTURES, sm_75), with a
warning: SASS runs only on GPUs of its own major version. Several at once, for a course
with several kinds of runners: `--cuda-arch 75,80,86,89,90` (T4, A100, A10, L4, H100).

The archive holds the libraries and `manifest.json` (kit and grader version, git commit,
CUDA architectures, the SASS of each library, nvcc version, creation time, a sha256 per
library), all at its top level. On a grading machine:

    sudo mkdir -p /opt/labkit-reference
    sudo tar -xzf labkit-reference.tar.gz -C /opt/labkit-reference
    python3 -m grader package --verify /opt/labkit-reference
    export LABKIT_REFERENCE_DIR=/opt/labkit-reference   # or: python3 -m grader --reference DIR

`--build-dir DIR` packages the libraries of a build you made yourself instead; they are
stripped and must pass the same inspection (a `cmake --preset dev` build does not: it
has line information).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import shutil
import struct
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader import __version__, build, commandline, gpu, layout, proc
from grader.arch import DEFAULT_FALLBACK, fallback_architectures as kit_fallback, runs_on
from grader.instructor import nvcc_shipping
from grader.instructor.progress import BuildProgress
from grader.manifest import ManifestError
from grader.manifest import names as kit_lab_names

EXIT_OK, EXIT_BAD, EXIT_USAGE = 0, 1, 2
MANIFEST = "manifest.json"
SCHEMA = "labkit-reference"
KIT_ROOT = Path(__file__).resolve().parents[2]
TIMEOUTS = {"configure": 600, "build": 3 * 3600, "tool": 120}
_LIB = layout.SOLUTION_LIBRARY
_ARCH = re.compile(r"^(?:sm_)?(?P<arch>\d{2,3}[af]?)(?:-real)?$")

# CUDA fatbinaries (the .nv_fatbin section): a header, then entries of machine code (ELF
# cubins, kind 2) or PTX (kind 1), each with its architecture. The layout is what
# cuobjdump reads; only the fields below are used.
FATBIN_MAGIC = 0xBA55ED50
FATBIN_PTX, FATBIN_ELF = 1, 2
FATBIN_COMPRESSED = 0x2000
# PTX text: its first two directives, as a cubin's .nv_debug_ptx_txt (-lineinfo) or a PTX entry holds them.
_PTX_TEXT = re.compile(rb"\.version \d+\.\d+[\s\x00]+\.target (?:sm|compute)_\d+")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- what the build is for ----------------------------------------------------------------

def parse_architectures(text: str) -> list[str]:
    """`90`, `sm_90`, `90-real`, `80,90` or `80;90` -> ['80', '90'] (ValueError otherwise)."""
    archs = []
    for item in re.split(r"[;,\s]+", text.strip()):
        if not item:
            continue
        match = _ARCH.match(item)
        if not match:
            raise ValueError(f"--cuda-arch {item!r} is not a GPU architecture: give the compute capability of the "
                             "grading machines' GPUs without the dot, e.g. 90 (H100), 80 (A100), 89 (L4), 75 (T4); "
                             "the package holds machine code for exactly these, never PTX")
        if match.group("arch") not in archs:
            archs.append(match.group("arch"))
    if not archs:
        raise ValueError("--cuda-arch is empty: give e.g. 90 (H100)")
    return archs


def gpu_architectures() -> list[str]:
    """The compute capabilities of this machine's GPUs (['90']), [] when it has none."""
    return list(dict.fromkeys(device.arch for device in gpu.devices() if device.arch))


def fallback_architectures(root: Path) -> list[str]:
    """The architectures the kit builds for on a machine without a GPU (its
    LABKIT_FALLBACK_CUDA_ARCHITECTURES), as machine code: a PTX-only entry is left out."""
    found = [m.group("arch") for item in kit_fallback(root) if (m := _ARCH.match(item))]
    return list(dict.fromkeys(found)) or list(DEFAULT_FALLBACK)


def choose_architectures(given: str | None, root: Path) -> tuple[list[str], str]:
    """The architectures to build for, and a warning when they are the fallback (no GPU
    on this machine and no --cuda-arch). ValueError for a bad --cuda-arch."""
    if given:
        return parse_architectures(given), ""
    found = gpu_architectures()
    if found:
        return found, ""
    archs = fallback_architectures(root)
    named = ", ".join(f"sm_{a}" for a in archs)
    majors = ", ".join(dict.fromkeys(re.sub(r"\D", "", a)[:-1] + ".x" for a in archs))
    return archs, (f"no GPU on this machine and no --cuda-arch: the references are built for the fallback "
                   f"architecture{'s' if len(archs) > 1 else ''} {named}, whose machine code runs only on GPUs of "
                   f"compute capability {majors}. Pass --cuda-arch with the grading machines' GPUs (e.g. "
                   "--cuda-arch 90 for H100, --cuda-arch 75,80,86,89,90 for T4, A100, A10, L4 and H100 runners)")


# --- building ---------------------------------------------------------------------------------

def configure_command(root: Path, work: Path, archs: list[str], labs: list[str] | None) -> list[str]:
    """CMake's command line for a shipping build of the references (cache variables only)."""
    maps = [f"-ffile-prefix-map={root}/=", f"-ffile-prefix-map={work}/="]
    command = ["cmake", "-S", str(root), "-B", str(work), *(["-G", "Ninja"] if shutil.which("ninja") else []),
               "-DCMAKE_BUILD_TYPE=Release", "-DLABKIT_BUILD_SOLUTIONS=ON", "-DLABKIT_BUILD_TESTS=OFF",
               "-DCMAKE_CUDA_ARCHITECTURES=" + ";".join(f"{arch}-real" for arch in archs),
               f"-DCMAKE_CUDA_COMPILER_LAUNCHER={sys.executable};{Path(nvcc_shipping.__file__).resolve()}",
               "-DCMAKE_CUDA_FLAGS=-Xcompiler=" + ",".join(maps),
               "-DCMAKE_CXX_FLAGS=" + " ".join(maps)]
    if labs:
        command.append("-DLABKIT_LABS=" + ";".join(labs))
    return command


def build_references(root: Path, work: Path, archs: list[str], labs: list[str],
                     say) -> tuple[dict[str, Path], str]:
    """Configure and build lib<lab>_solution.so for `labs` in `work`: ({name: path}, '') or
    ({}, what went wrong)."""
    steps = (("configure", configure_command(root, work, archs, labs), "configuring"),
             ("build", ["cmake", "--build", str(work), "--target",
                        *(layout.library_target(lab, layout.SOLUTION) for lab in labs)],
              f"building {len(labs)} reference librar{'ies' if len(labs) != 1 else 'y'} (nvcc takes a while)"))
    for name, command, what in steps:
        say(f"package: {what}...")
        try:
            if name == "build":
                with BuildProgress(work, "package: building", targets=command[4:]):
                    result = proc.run(command, timeout=TIMEOUTS[name])
            else:
                result = proc.run(command, timeout=TIMEOUTS[name])
        except proc.LaunchError as exc:
            return {}, f"{exc}: install CMake >= 3.25, Ninja and the CUDA toolkit"
        if result.timed_out:
            return {}, f"the {name} step timed out after {TIMEOUTS[name]} s: {result.command}"
        if result.returncode != 0:
            errors = build.first_errors(result.stdout + "\n" + result.stderr)
            return {}, f"the {name} step failed: {result.command}\n{errors}"
    found = find_libraries(work, labs)
    missing = [lab for lab in labs if layout.solution_library(lab) not in found]
    if missing:
        return {}, f"the build made no {layout.solution_library(missing[0])} in {work / layout.LIB}"
    return found, ""


def strip(path: Path, out: Path) -> str:
    """Copy `path` to `out` without symbols or debug information; '' or what went wrong."""
    shutil.copyfile(path, out)
    try:
        result = proc.run(["strip", "--strip-all", str(out)], timeout=TIMEOUTS["tool"])
    except proc.LaunchError:
        return "strip not found: install binutils (apt-get install binutils), then package again"
    if result.returncode != 0 or result.timed_out:
        return f"strip failed on {path.name}: {(result.stderr or result.stdout).strip()[:300]}"
    return ""


# --- inspecting a library -------------------------------------------------------------------

@dataclass(frozen=True)
class FatbinEntry:
    kind: int  # FATBIN_PTX or FATBIN_ELF
    arch: int  # 90 for sm_90 (ELF) or compute_90 (PTX)
    compressed: bool
    identifier: str  # the source file nvcc named it after (with -lineinfo: its absolute path)

    @property
    def name(self) -> str:
        return f"{'compute' if self.kind == FATBIN_PTX else 'sm'}_{self.arch}"


def fatbin_entries(data: bytes) -> list[FatbinEntry]:
    """The entries of every CUDA fatbinary in `data` (a shared library's bytes)."""
    entries = []
    magic = struct.pack("<I", FATBIN_MAGIC)
    start = data.find(magic)
    while start >= 0:
        if start + 16 <= len(data):
            _, version, header, size = struct.unpack_from("<IHHQ", data, start)
            end = start + header + size
            pos = start + header
            if version == 1 and header == 16 and end <= len(data):
                while pos + 64 <= end:
                    kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, pos)
                    arch, = struct.unpack_from("<I", data, pos + 28)
                    ident_at, ident_len = struct.unpack_from("<II", data, pos + 32)
                    flags, = struct.unpack_from("<Q", data, pos + 40)
                    if kind not in (FATBIN_PTX, FATBIN_ELF) or entry_header < 64:
                        break
                    identifier = ""
                    if 64 <= ident_at and ident_at + ident_len <= entry_header:
                        raw = data[pos + ident_at:pos + ident_at + ident_len]
                        identifier = raw.split(b"\0", 1)[0].decode(errors="replace")
                    entries.append(FatbinEntry(kind, arch, bool(flags & FATBIN_COMPRESSED), identifier))
                    pos += entry_header + payload
        start = data.find(magic, start + 4)
    return entries


def elf_sections(data: bytes) -> list[str] | None:
    """The section names of a 64-bit little-endian ELF file (None when `data` is not one)."""
    if data[:6] != b"\x7fELF\x02\x01" or len(data) < 64:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if not shoff or shentsize < 64 or shstrndx >= shnum or shoff + shnum * shentsize > len(data):
        return None
    str_off, = struct.unpack_from("<Q", data, shoff + shstrndx * shentsize + 0x18)
    names = []
    for i in range(shnum):
        name_at, = struct.unpack_from("<I", data, shoff + i * shentsize)
        end = data.find(b"\0", str_off + name_at)
        names.append(data[str_off + name_at:end].decode(errors="replace") if end >= 0 else "")
    return names


def cuobjdump() -> str | None:
    """cuobjdump on PATH or next to nvcc (it needs no GPU), else None."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    nvcc = shutil.which("nvcc")
    for folder in ([Path(nvcc).resolve().parent] if nvcc else []) + [Path("/usr/local/cuda/bin")]:
        if proc.is_executable(folder / "cuobjdump"):
            return str(folder / "cuobjdump")
    return None


def listed_ptx(path: Path) -> list[str] | None:
    """The PTX files `cuobjdump --list-ptx` lists in `path` (None without cuobjdump)."""
    tool = cuobjdump()
    if tool is None:
        return None
    try:
        result = proc.run([tool, "--list-ptx", str(path)], timeout=TIMEOUTS["tool"])
    except proc.LaunchError:
        return None
    return [line.strip() for line in result.stdout.splitlines() if line.strip().startswith("PTX file")]


def inspect(data: bytes, paths: list[str], path: Path | None = None) -> tuple[list[str], list[str]]:
    """(problems, SASS architectures) of a library meant to ship: PTX (fatbinary entries,
    PTX text, cuobjdump's list when `path` is given), any of `paths` in its bytes, debug
    or symbol sections, compressed device code that cannot be looked into."""
    problems = []
    entries = fatbin_entries(data)
    ptx = sorted({e.name for e in entries if e.kind == FATBIN_PTX})
    if ptx:
        problems.append(f"PTX in its fatbinary ({', '.join(ptx)}): build for <arch>-real architectures only")
    if _PTX_TEXT.search(data):
        problems.append("PTX text in its device code (built with -lineinfo or -G?)")
    listed = listed_ptx(path) if path is not None else None
    if listed:
        problems.append(f"cuobjdump --list-ptx lists {len(listed)} PTX file(s)")
    identifiers = sorted({e.identifier for e in entries if e.identifier.startswith("/")})
    if identifiers:
        problems.append(f"source paths name its device code ({identifiers[0]}): built with -lineinfo or -G?")
    for where in dict.fromkeys(p.rstrip("/") for p in paths if p.strip("/")):
        count = data.count(where.encode())
        if count:
            problems.append(f"the path {where} appears {count} time(s) in it")
    sections = elf_sections(data) or []
    debug = sorted({name for name in sections if name.startswith((".debug", ".zdebug")) or name == ".symtab"})
    if debug:
        problems.append(f"not stripped ({', '.join(debug)})")
    if path is not None and listed is None and any(e.compressed for e in entries):
        problems.append("compressed device code, which cannot be looked into without cuobjdump: install the CUDA "
                        "toolkit's cuobjdump, or build with nvcc --no-compress")
    sass = sorted({e.name for e in entries if e.kind == FATBIN_ELF}, key=lambda n: int(re.sub(r"\D", "", n) or 0))
    return problems, sass


# --- the package ------------------------------------------------------------------------------

def cmake_cache(build_dir: Path) -> dict[str, str]:
    """NAME -> value from <build>/CMakeCache.txt ({} when there is none)."""
    values = {}
    try:
        text = (build_dir / layout.CMAKE_CACHE).read_text(errors="replace")
    except OSError:
        return values
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z_][A-Za-z0-9_.+-]*):[A-Z]+=(.*)$", line)
        if match:
            values[match.group(1)] = match.group(2)
    return values


def nvcc_version(build_dir: Path, cache: dict[str, str]) -> str | None:
    """The CUDA compiler version the build used: CMake records it when it tests the compiler."""
    for path in sorted(build_dir.glob("CMakeFiles/*/CMakeCUDACompiler.cmake")):
        match = re.search(r'set\(CMAKE_CUDA_COMPILER_VERSION "([^"]+)"\)', path.read_text(errors="replace"))
        if match:
            return match.group(1)
    compiler = cache.get("CMAKE_CUDA_COMPILER")
    if compiler:
        try:
            out = proc.run([compiler, "--version"], timeout=TIMEOUTS["tool"]).stdout
        except proc.LaunchError:
            return None
        match = re.search(r"release [\d.]+, V([\d.]+)", out)
        return match.group(1) if match else None
    return None


def git_commit(root: Path) -> tuple[str | None, bool | None]:
    """The kit's commit and whether the working tree has changes (None, None outside git)."""
    try:
        head = proc.run(["git", "-C", str(root), "rev-parse", "HEAD"], timeout=30)
        dirty = proc.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"], timeout=60)
    except proc.LaunchError:
        return None, None
    if head.returncode != 0 or dirty.returncode != 0 or head.timed_out or dirty.timed_out:
        return None, None
    return head.stdout.strip(), bool(dirty.stdout.strip())


def cuda_runtime(data: bytes) -> str | None:
    """The CUDA runtime a library needs (libcudart.so.<major>), read from its bytes."""
    match = re.search(rb"libcudart\.so\.\d+", data)
    return match.group(0).decode() if match else None


def make_manifest(build_dir: Path, libraries: dict[str, bytes], root: Path = KIT_ROOT,
                  sass: dict[str, list[str]] | None = None, fallback: bool = False) -> dict[str, Any]:
    cache = cmake_cache(build_dir)
    commit, dirty = git_commit(root)
    return {
        "schema": SCHEMA,
        "version": 1,
        "kit_version": cache.get("CMAKE_PROJECT_VERSION") or __version__,
        "grader_version": __version__,
        "git_commit": commit,
        "git_dirty": dirty,
        "cuda_architectures": cache.get("CMAKE_CUDA_ARCHITECTURES"),
        "fallback_architecture": fallback,  # built without --cuda-arch on a machine without a GPU
        "nvcc_version": nvcc_version(build_dir, cache),
        "build_type": cache.get("CMAKE_BUILD_TYPE"),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "libraries": {
            name: {"lab": _LIB.match(name).group("lab"), "sha256": sha256(data), "bytes": len(data),
                   "cuda_runtime": cuda_runtime(data), "sass": (sass or {}).get(name, []), "ptx": False,
                   "stripped": True}
            for name, data in sorted(libraries.items())
        },
    }


def find_libraries(build_dir: Path, labs: list[str]) -> dict[str, Path]:
    """lib<lab>_solution.so -> its path in <build>/lib, for those of `labs` (in course order) it holds."""
    found = {}
    for lab in labs:
        path = layout.solution_library_path(build_dir, lab)
        if path.is_file():
            found[path.name] = path
    return found


def write_package(out: Path, manifest: dict[str, Any], libraries: dict[str, bytes]) -> None:
    """A .tar.gz with the manifest and the libraries at its top level, written atomically."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for name, data in [(MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode()), *libraries.items()]:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o755 if name != MANIFEST else 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    tmp.replace(out)


def read_package(path: Path) -> tuple[dict[str, Any] | None, dict[str, bytes], list[str]]:
    """(manifest, file name -> bytes, problems) of a .tar.gz package or an unpacked folder."""
    problems: list[str] = []
    files: dict[str, bytes] = {}
    if path.is_dir():
        for item in sorted(path.iterdir()):
            if item.is_file() and (item.name == MANIFEST or _LIB.match(item.name)):
                files[item.name] = item.read_bytes()
    else:
        try:
            with tarfile.open(path, "r:*") as tar:
                for member in tar.getmembers():
                    if not member.isfile():
                        continue
                    name = member.name.removeprefix("./")
                    if not (name == MANIFEST or _LIB.match(name)):
                        problems.append(f"unexpected file in the package: {member.name}")
                        continue
                    files[name] = tar.extractfile(member).read()
        except (OSError, tarfile.TarError) as exc:
            return None, {}, [f"cannot read {path}: {exc}"]
    if MANIFEST not in files:
        return None, files, problems + [f"no {MANIFEST} in {path}: not a reference package (make one with "
                                        "python3 -m grader package --out FILE --cuda-arch ARCH)"]
    try:
        manifest = json.loads(files.pop(MANIFEST))
    except ValueError as exc:
        return None, files, problems + [f"{MANIFEST} is not valid JSON: {exc}"]
    return manifest, files, problems


def verify(path: Path) -> tuple[bool, list[str]]:
    """Check a package or an unpacked folder against its manifest, for PTX, and for this
    machine's GPUs; (ok, report lines)."""
    manifest, files, problems = read_package(path)
    lines = []
    if manifest is not None:
        if manifest.get("schema") != SCHEMA:
            problems.append(f"{MANIFEST} has schema {manifest.get('schema')!r}, expected {SCHEMA!r}")
        listed = manifest.get("libraries") if isinstance(manifest.get("libraries"), dict) else {}
        if not listed:
            problems.append(f"{MANIFEST} lists no library")
        gpus = gpu_architectures()
        for name, entry in listed.items():
            data = files.get(name)
            if data is None:
                problems.append(f"{name}: listed in the manifest but missing")
                continue
            if sha256(data) != (entry or {}).get("sha256"):
                problems.append(f"{name}: sha256 differs from the manifest (corrupted or replaced)")
                continue
            found, sass = inspect(data, [])
            problems += [f"{name}: {problem}" for problem in found if problem.startswith("PTX")]
            unusable = [arch for arch in gpus if sass and not runs_on(sass, arch)]
            if unusable:
                # Again for these GPUs and those it was made for, so other runners keep working.
                wanted = sorted({*(s.removeprefix("sm_") for s in sass), *unusable},
                                key=lambda a: int(re.sub(r"\D", "", a)))
                problems.append(f"{name}: no machine code for this machine's GPU (sm_{unusable[0]}; it has "
                                f"{', '.join(sass)}): package again with --cuda-arch {','.join(wanted)}")
            elif not any(p.startswith(f"{name}:") for p in problems):
                lines.append(f"ok  {name}" + (f" ({', '.join(sass)})" if sass else ""))
        for name in sorted(set(files) - set(listed)):
            problems.append(f"{name}: not in the manifest")
        lines.insert(0, f"reference package: kit {manifest.get('kit_version')}, commit {manifest.get('git_commit')}, "
                        f"CUDA architectures {manifest.get('cuda_architectures')}, nvcc {manifest.get('nvcc_version')}, "
                        f"created {manifest.get('created')}")
        if manifest.get("fallback_architecture"):
            lines.insert(1, "warning: built for the fallback architecture (no GPU and no --cuda-arch where it was made)")
    return not problems, lines + [f"BAD {p}" for p in problems]


# --- command line ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="package",
        prog="python3 -m grader package",
        description="Build the reference libraries (lib<lab>_solution.so) as machine code only (SASS for the "
                    "named architectures, no PTX, no line information or source paths, stripped) and package "
                    "them with a manifest, so that a grading machine needs no solutions/; or verify such a package.",
        epilog="On the grading machine: unpack into a folder (e.g. /opt/labkit-reference) and set "
               "LABKIT_REFERENCE_DIR to it, or pass --reference DIR to the grader. "
               "Exit status: 0 ok; 1 the build, the inspection or the verification failed; 2 bad usage.")
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--build-dir", type=Path, metavar="DIR",
                        help="package the libraries of this existing build instead of building them; they are "
                             "stripped and must pass the same inspection (no PTX, no line information)")
    action.add_argument("--verify", type=Path, metavar="FILE|DIR",
                        help="check a package or an unpacked folder: checksums, no PTX, machine code for this "
                             "machine's GPU")
    parser.add_argument("--out", type=Path, metavar="FILE", help="the package to write (e.g. labkit-reference.tar.gz)")
    parser.add_argument("--cuda-arch", metavar="ARCH",
                        help="the grading machines' GPU architectures, e.g. 90 (H100) or 80,90; machine code for "
                             "exactly these is built (default: the GPUs of this machine; without one, the kit's "
                             "fallback sm_75, with a warning)")
    parser.add_argument("--labs", nargs="+", metavar="LAB", help="package only these labs (default: every lab with "
                        "a reference in solutions/)")
    parser.add_argument("--keep-build", action="store_true", help="keep the build folder (it is printed)")
    parser.add_argument("--root", type=Path, default=KIT_ROOT, metavar="DIR", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader package`; returns the exit status."""
    args = commandline.parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.verify:
        if not args.verify.exists():
            print(f"grader package: error: {args.verify} not found: pass the package file or the folder it was "
                  "unpacked into", file=sys.stderr)
            return EXIT_USAGE
        ok, lines = verify(args.verify)
        print("\n".join(lines))
        print("verified" if ok else f"grader package: {args.verify} does not pass: see the BAD lines above",
              file=sys.stdout if ok else sys.stderr)
        return EXIT_OK if ok else EXIT_BAD
    if args.out is None:
        print("grader package: error: --out FILE is needed (see --help)", file=sys.stderr)
        return EXIT_USAGE
    root = args.root.resolve()
    try:
        course = kit_lab_names(root)  # the labs of the kit being packaged, in course order
    except ManifestError as exc:
        print(f"grader package: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    labs = None
    if args.labs:
        by_lower = {lab.lower(): lab for lab in course}
        unknown = [name for name in args.labs if name.lower() not in by_lower]
        if unknown:
            print(f"grader package: error: unknown lab {unknown[0]!r}: the labs are {', '.join(course)}",
                  file=sys.stderr)
            return EXIT_USAGE
        labs = [by_lower[name.lower()] for name in args.labs]
    if args.build_dir is not None:
        return package_build(args.build_dir, args.out, labs, root, course)
    return build_and_package(args, labs, course)


def build_and_package(args: argparse.Namespace, labs: list[str] | None, course: list[str]) -> int:
    root = args.root.resolve()
    with_solution = [lab for lab in course
                     if (root / "solutions" / lab).is_dir() and (root / "labs" / lab).is_dir()]
    missing = [lab for lab in labs or [] if lab not in with_solution]
    if missing or not with_solution:
        what = f"solutions/{missing[0]}" if missing else "solutions/"
        print(f"grader package: error: {what} not found in {root}: run the package command in the instructor's "
              "kit, which holds the reference solutions", file=sys.stderr)
        return EXIT_USAGE
    try:
        archs, warning = choose_architectures(args.cuda_arch, root)
    except ValueError as exc:
        print(f"grader package: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if warning:
        print(f"warning: {warning}", flush=True)
    labs = labs or with_solution
    work = Path(tempfile.mkdtemp(prefix="labkit-package-build-"))
    try:
        paths, failure = build_references(root, work, archs, labs, say=lambda text: print(text, flush=True))
        if failure:
            print(f"grader package: {failure}", file=sys.stderr)
            return EXIT_BAD
        return _package(paths, work, args.out, root, fallback=bool(warning))
    finally:
        if args.keep_build:
            print(f"build folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def package_build(build_dir: Path, out: Path, labs: list[str] | None, root: Path, course: list[str]) -> int:
    """Package the references of a build made elsewhere (after the same inspection): those
    of `labs`, else of every lab of `course` that it holds."""
    paths = find_libraries(build_dir, labs or course)
    missing = [lab for lab in labs or [] if layout.solution_library(lab) not in paths]
    if not paths or missing:
        what = layout.solution_library(missing[0]) if missing else f"no {layout.SOLUTION_LIBRARIES}"
        print(f"grader package: error: {what} in {build_dir / layout.LIB}: build the references first, or let this "
              "command build them (python3 -m grader package --out FILE --cuda-arch ARCH)", file=sys.stderr)
        return EXIT_USAGE
    source = cmake_cache(build_dir).get("CMAKE_HOME_DIRECTORY")
    return _package(paths, build_dir, out, Path(source) if source else root, made_here=False)


def _package(paths: dict[str, Path], build_dir: Path, out: Path, root: Path, fallback: bool = False,
             made_here: bool = True) -> int:
    """Strip, inspect and package the libraries `paths` of `build_dir`."""
    forbidden = [str(root), str(build_dir.resolve()), str(KIT_ROOT)]
    libraries: dict[str, bytes] = {}
    sass: dict[str, list[str]] = {}
    problems: list[str] = []
    with tempfile.TemporaryDirectory(prefix="labkit-package-") as staging:
        for name, path in paths.items():
            stripped = Path(staging) / name
            failure = strip(path, stripped)
            if failure:
                print(f"grader package: error: {failure}", file=sys.stderr)
                return EXIT_BAD
            data = stripped.read_bytes()
            found, sass[name] = inspect(data, forbidden, stripped)
            if not sass[name]:
                found.append("no machine code (SASS) in it")
            problems += [f"{name}: {problem}" for problem in found]
            libraries[name] = data
    if problems:
        for problem in problems:
            print(f"problem: {problem}", file=sys.stderr)
        hint = ("this is a bug of the package build: please report it with the problems above" if made_here else
                "this build has line information, PTX or source paths in it (a `cmake --preset dev` build has): "
                "let the command build the references itself: python3 -m grader package --out FILE --cuda-arch ARCH")
        print(f"grader package: nothing written: {hint}", file=sys.stderr)
        return EXIT_BAD
    manifest = make_manifest(build_dir, libraries, root, sass, fallback)
    write_package(out, manifest, libraries)
    every = sorted({arch for archs in sass.values() for arch in archs})
    print(f"wrote {out}: {len(libraries)} reference libraries "
          f"({', '.join(e['lab'] for e in manifest['libraries'].values())}), machine code for {', '.join(every)} "
          f"only (no PTX, no line information, stripped), nvcc {manifest['nvcc_version']}")
    if manifest["git_dirty"]:
        print("note: the kit has uncommitted changes: the manifest's commit does not fully describe these libraries")
    if fallback:
        print(f"warning: built for the fallback architecture {', '.join(every)}: it runs only on GPUs of that "
              "major version; package again with --cuda-arch for other GPUs")
    print("on the grading machine: mkdir -p /opt/labkit-reference && tar -xzf "
          f"{out.name} -C /opt/labkit-reference && python3 -m grader package --verify /opt/labkit-reference")
    return EXIT_OK
