"""Package the compiled reference libraries, so that a machine can grade without solutions/.

    python3 -m grader package --build-dir build/dev --out labkit-reference.tar.gz
    python3 -m grader package --verify labkit-reference.tar.gz     # or an unpacked folder

The archive holds `lib<lab>_solution.so` from `<build>/lib` and `manifest.json` (kit and
grader version, git commit, CUDA architectures, nvcc version, creation time and a
sha256 per library), all at its top level. On a grading machine:

    sudo mkdir -p /opt/labkit-reference
    sudo tar -xzf labkit-reference.tar.gz -C /opt/labkit-reference
    python3 -m grader package --verify /opt/labkit-reference
    export LABKIT_REFERENCE_DIR=/opt/labkit-reference   # or: python3 -m grader --reference DIR

The libraries are built for the architectures in the manifest and need the CUDA runtime
they were linked with (libcudart.so.<major>) on the grading machine.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from grader import __version__, commandline
from grader.config import COURSE_LABS

EXIT_OK, EXIT_BAD, EXIT_USAGE = 0, 1, 2
MANIFEST = "manifest.json"
SCHEMA = "labkit-reference"
KIT_ROOT = Path(__file__).resolve().parent.parent
_LIB = re.compile(r"^lib(?P<lab>[A-Za-z]+)_solution\.so$")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cmake_cache(build_dir: Path) -> dict[str, str]:
    """NAME -> value from <build>/CMakeCache.txt ({} when there is none)."""
    values = {}
    try:
        text = (build_dir / "CMakeCache.txt").read_text(errors="replace")
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
            out = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60).stdout
            match = re.search(r"release [\d.]+, V([\d.]+)", out)
            return match.group(1) if match else None
        except (OSError, subprocess.SubprocessError):
            return None
    return None


def git_commit(root: Path) -> tuple[str | None, bool | None]:
    """The kit's commit and whether the working tree has changes (None, None outside git)."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=30, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=60, check=True).stdout.strip()
        return head, bool(dirty)
    except (OSError, subprocess.SubprocessError):
        return None, None


def cuda_runtime(data: bytes) -> str | None:
    """The CUDA runtime a library needs (libcudart.so.<major>), read from its bytes."""
    match = re.search(rb"libcudart\.so\.\d+", data)
    return match.group(0).decode() if match else None


def make_manifest(build_dir: Path, libraries: dict[str, bytes], root: Path = KIT_ROOT) -> dict[str, Any]:
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
        "nvcc_version": nvcc_version(build_dir, cache),
        "build_type": cache.get("CMAKE_BUILD_TYPE"),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "libraries": {
            name: {"lab": _LIB.match(name).group("lab"), "sha256": sha256(data), "bytes": len(data),
                   "cuda_runtime": cuda_runtime(data)}
            for name, data in sorted(libraries.items())
        },
    }


def find_libraries(build_dir: Path, labs: list[str] | None) -> dict[str, Path]:
    """lib<lab>_solution.so -> its path in <build>/lib, in course order."""
    found = {}
    for lab in labs or COURSE_LABS:
        path = build_dir / "lib" / f"lib{lab}_solution.so"
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
                                        "python3 -m grader package --build-dir DIR --out FILE)"]
    try:
        manifest = json.loads(files.pop(MANIFEST))
    except ValueError as exc:
        return None, files, problems + [f"{MANIFEST} is not valid JSON: {exc}"]
    return manifest, files, problems


def verify(path: Path) -> tuple[bool, list[str]]:
    """Check a package or an unpacked folder against its manifest; (ok, report lines)."""
    manifest, files, problems = read_package(path)
    lines = []
    if manifest is not None:
        if manifest.get("schema") != SCHEMA:
            problems.append(f"{MANIFEST} has schema {manifest.get('schema')!r}, expected {SCHEMA!r}")
        listed = manifest.get("libraries") if isinstance(manifest.get("libraries"), dict) else {}
        if not listed:
            problems.append(f"{MANIFEST} lists no library")
        for name, entry in listed.items():
            data = files.get(name)
            if data is None:
                problems.append(f"{name}: listed in the manifest but missing")
            elif sha256(data) != (entry or {}).get("sha256"):
                problems.append(f"{name}: sha256 differs from the manifest (corrupted or replaced)")
            else:
                lines.append(f"ok  {name}")
        for name in sorted(set(files) - set(listed)):
            problems.append(f"{name}: not in the manifest")
        lines.insert(0, f"reference package: kit {manifest.get('kit_version')}, commit {manifest.get('git_commit')}, "
                        f"CUDA architectures {manifest.get('cuda_architectures')}, nvcc {manifest.get('nvcc_version')}, "
                        f"created {manifest.get('created')}")
    return not problems, lines + [f"BAD {p}" for p in problems]



def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="package",
        prog="python3 -m grader package",
        description="Package the compiled reference libraries (lib<lab>_solution.so) with a manifest, "
                    "so that a grading machine needs no solutions/; or verify such a package.",
        epilog="On the grading machine: unpack into a folder (e.g. /opt/labkit-reference) and set "
               "LABKIT_REFERENCE_DIR to it, or pass --reference DIR to the grader. "
               "Exit status: 0 ok; 1 verification failed; 2 bad usage or nothing to package.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--build-dir", type=Path, metavar="DIR",
                        help="a build of the kit with solutions (e.g. build/dev, after `cmake --build --preset dev`)")
    action.add_argument("--verify", type=Path, metavar="FILE|DIR", help="check a package or an unpacked folder")
    parser.add_argument("--out", type=Path, metavar="FILE", help="the package to write (e.g. labkit-reference.tar.gz)")
    parser.add_argument("--labs", nargs="+", metavar="LAB", help="package only these labs (default: every one built)")
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader package`; returns the exit status."""
    args = commandline.parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    if args.verify:
        if not args.verify.exists():
            print(f"grader package: error: {args.verify} not found", file=sys.stderr)
            return EXIT_USAGE
        ok, lines = verify(args.verify)
        print("\n".join(lines))
        print("verified" if ok else f"grader package: {args.verify} does not match its manifest", file=sys.stdout if ok else sys.stderr)
        return EXIT_OK if ok else EXIT_BAD
    if args.out is None:
        print("grader package: error: --out FILE is needed with --build-dir (see --help)", file=sys.stderr)
        return EXIT_USAGE
    labs = None
    if args.labs:
        by_lower = {lab.lower(): lab for lab in COURSE_LABS}
        unknown = [name for name in args.labs if name.lower() not in by_lower]
        if unknown:
            print(f"grader package: error: unknown lab {unknown[0]!r}: the labs are {', '.join(COURSE_LABS)}",
                  file=sys.stderr)
            return EXIT_USAGE
        labs = [by_lower[name.lower()] for name in args.labs]
    paths = find_libraries(args.build_dir, labs)
    wanted = labs or []
    missing = [lab for lab in wanted if f"lib{lab}_solution.so" not in paths]
    if not paths or missing:
        what = f"lib{missing[0]}_solution.so" if missing else "no lib<lab>_solution.so"
        print(f"grader package: error: {what} in {args.build_dir / 'lib'}: build the references first "
              "(cmake --preset dev && cmake --build --preset dev, or python3 -m grader --impl solution)",
              file=sys.stderr)
        return EXIT_USAGE
    libraries = {name: path.read_bytes() for name, path in paths.items()}
    manifest = make_manifest(args.build_dir, libraries)
    write_package(args.out, manifest, libraries)
    print(f"wrote {args.out}: {len(libraries)} reference libraries ({', '.join(e['lab'] for e in manifest['libraries'].values())}), "
          f"CUDA architectures {manifest['cuda_architectures']}, nvcc {manifest['nvcc_version']}")
    if manifest["git_dirty"]:
        print("note: the kit has uncommitted changes: the manifest's commit does not fully describe these libraries")
    print("on the grading machine: mkdir -p /opt/labkit-reference && tar -xzf "
          f"{args.out.name} -C /opt/labkit-reference && export LABKIT_REFERENCE_DIR=/opt/labkit-reference")
    return EXIT_OK
