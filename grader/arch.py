"""Which GPUs a build can run on, checked before anything is built or graded.

Device code reaches a GPU in one of two forms, named here as nvcc names them:

- machine code (SASS), `sm_XY`: runs on a GPU of the same major version X and a minor
  version Y or newer (sm_80 code runs on an sm_86 GPU, not the reverse). Arch-specific
  code, `sm_90a`, runs only on its own GPU (sm_90); family-specific code, `sm_100f`, on
  its family (same major version, a minor version Y or newer: sm_100 and sm_103);
- PTX, `compute_XY`: the driver compiles it, at first use, for any GPU of compute
  capability X.Y or newer (`compute_90a` for sm_90 alone, `compute_100f` for its family).

CMAKE_CUDA_ARCHITECTURES names both at once: `80` is sm_80 and compute_80, `80-real`
sm_80 alone, `80-virtual` compute_80 alone, `all` and `all-major` every architecture nvcc
knows; `native` (the GPUs of the machine that configured) cannot be told in advance. A
reference package holds machine code only; its manifest lists each library's.

`python3 -m grader` and `python3 -m grader profile` compare what the build (and the
reference package, when one is given) holds with every GPU they will run on
(gpu.devices(), as CUDA_VISIBLE_DEVICES narrows it), and stop with exit status 3 before
anything is built when a GPU cannot run it: otherwise every test would fail with "no
kernel image is available for execution on the device", after minutes of building.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from grader import build, gpu, layout

MIN_ARCH = "75"  # the oldest the labs support (and CUDA 13 builds for)
EVERY = "all"  # stands for CMake's `all` and `all-major`: machine code for every architecture nvcc knows
SASS, PTX = "machine code", "PTX"  # how a GPU runs a build (coverage)
DEFAULT_FALLBACK = ("75",)  # cmake/LabKitCudaArch.cmake's default, when the file cannot be read
FALLBACK_VARIABLE = "LABKIT_FALLBACK_CUDA_ARCHITECTURES"
MANIFEST = "manifest.json"  # a reference package's (grader/instructor/package.py)

_CMAKE_ITEM = re.compile(r"^(?P<arch>\d{2,3}[af]?)(?:-(?P<kind>real|virtual))?$")
_CODE = re.compile(r"^(?P<kind>sm|compute)_(?P<major>\d+)(?P<minor>\d)(?P<suffix>[af]?)$")
_SPECIAL = ("all", "all-major", "native")


def split(text: str) -> list[str]:
    """A list as CMake (`80;90`) or a person (`80,90`, `80 90`) writes it."""
    return [item for item in re.split(r"[;,\s]+", text.strip()) if item]


def cmake_codes(value: str) -> tuple[str, ...] | None:
    """What CMAKE_CUDA_ARCHITECTURES=`value` puts in the binaries: '75' -> ('sm_75', 'compute_75'),
    '80-real;90' -> ('sm_80', 'sm_90', 'compute_90'); (EVERY,) for `all`. None when it
    cannot be told (`native`, an empty or unknown value)."""
    codes: list[str] = []
    items = split(value)
    for item in items:
        if item in ("all", "all-major"):
            codes.append(EVERY)
            continue
        match = _CMAKE_ITEM.match(item)
        if match is None:
            return None
        if match.group("kind") != "virtual":
            codes.append(f"sm_{match.group('arch')}")
        if match.group("kind") != "real":
            codes.append(f"compute_{match.group('arch')}")
    return tuple(dict.fromkeys(codes)) or None


def parse_cuda_arch(text: str) -> str:
    """The grader's --cuda-arch as CMake takes it: '80,90' -> '80;90'. ValueError, saying what
    to give, for anything CMake would not take."""
    items = split(text)
    bad = [item for item in items if item not in _SPECIAL and not _CMAKE_ITEM.match(item)]
    if bad or not items:
        raise ValueError(f"--cuda-arch {(bad[0] if bad else text)!r} is not a CUDA architecture: give compute "
                         "capabilities without the dot, e.g. 90 (H100, H200), 80 (A100), 86 (A10, RTX 30xx), "
                         "89 (L4, RTX 40xx), 75 (T4), several as 80,90; NN-real for machine code alone")
    return ";".join(dict.fromkeys(items))


def _version(arch: str) -> tuple[int, int] | None:
    """'86' -> (8, 6), '100' -> (10, 0)."""
    match = re.fullmatch(r"(\d+)(\d)", arch)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _runs(code: re.Match[str], gpu_version: tuple[int, int]) -> bool:
    """Whether one code (machine code or PTX, by `kind`) runs on a GPU of `gpu_version`."""
    have = (int(code.group("major")), int(code.group("minor")))
    suffix = code.group("suffix")
    if suffix == "a":  # arch-specific features: its own GPU only
        return have == gpu_version
    if suffix == "f" or code.group("kind") == "sm":  # its family, or machine code: same major, no newer minor
        return have[0] == gpu_version[0] and have[1] <= gpu_version[1]
    return have <= gpu_version  # PTX: the driver compiles it for any newer GPU


def runs_on(sass: Iterable[str], arch: str) -> bool:
    """Whether machine code for `sass` (['sm_90']) runs on a GPU of compute capability `arch`
    ('90'): same major version, a minor version no newer than the GPU's (arch-specific
    code, sm_90a, on its own GPU only)."""
    want = _version(arch)
    return want is not None and any(
        (match := _CODE.match(name)) is not None and match.group("kind") == "sm" and _runs(match, want)
        for name in sass)


def coverage(codes: Iterable[str], arch: str) -> str:
    """How a GPU of compute capability `arch` ('86') runs code `codes` (nvcc's names, 'sm_80',
    'compute_75', or EVERY): SASS when there is machine code for it, PTX when there is only
    PTX the driver compiles for it, '' when it cannot run it."""
    codes = list(codes)
    want = _version(arch)
    if want is None:
        return ""
    if EVERY in codes or runs_on(codes, arch):
        return SASS
    for name in codes:
        match = _CODE.match(name)
        if match is not None and match.group("kind") == "compute" and _runs(match, want):
            return PTX
    return ""


def describe(codes: Iterable[str]) -> str:
    """'machine code for sm_80, sm_90 and PTX for compute_90', for a message."""
    codes = list(codes)
    if EVERY in codes:
        return "machine code for every architecture"
    sass = [c for c in codes if c.startswith("sm_")]
    ptx = [c for c in codes if c.startswith("compute_")]
    if sass and ptx:
        return f"machine code for {', '.join(sass)} and PTX for {', '.join(ptx)}"
    if sass:
        return f"machine code for {', '.join(sass)} only (no PTX)"
    return f"PTX for {', '.join(ptx)} only" if ptx else "no device code"


# --- the check ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Holding:
    """What one build or package holds, and what to do when a GPU cannot run it."""

    what: str  # "the build folder /kit/build/grader (CMAKE_CUDA_ARCHITECTURES=90-real)"
    codes: tuple[str, ...]  # nvcc's names: sm_90, compute_90 (or EVERY)
    # What makes it run on the GPUs: "{archs}" becomes their architectures as the grader's
    # --cuda-arch takes them ("80,90"), "{cmake}" as CMake does ("80;90").
    fix: str
    keep: tuple[str, ...] = ()  # architectures the fix should keep building for (a package's)


@dataclass
class Verdict:
    """The check's outcome: errors stop the grading; notes are worth a line."""

    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def _named(device: gpu.Device) -> str:
    return f"GPU {device.index}, {device.label()},"


def check(holdings: Iterable[Holding], devices: Iterable[gpu.Device]) -> Verdict:
    """Whether every GPU of `devices` can run every holding: one error per GPU and holding
    that cannot (and per GPU older than sm_75), one note per GPU that runs one from PTX
    only. GPUs whose compute capability is unknown are not judged."""
    verdict = Verdict()
    known = [d for d in devices if _version(d.arch)]
    usable = []
    for device in known:
        if _version(device.arch) < _version(MIN_ARCH):
            verdict.errors.append(
                f"{_named(device)} is too old for the labs: they need compute capability 7.5 or newer (T4, "
                "RTX 20xx and later). Grade on a newer GPU" + (", or hide this one with CUDA_VISIBLE_DEVICES"
                                                               if len(known) > 1 else "") + ".")
        else:
            usable.append(device)
    archs = sorted({d.arch for d in usable}, key=_version)
    for holding in holdings:
        for device in usable:
            how = coverage(holding.codes, device.arch)
            wanted = sorted(set(archs) | set(holding.keep), key=lambda a: _version(a) or (0, 0))
            if not how:
                fix = holding.fix.format(archs=",".join(wanted), cmake=";".join(wanted))
                verdict.errors.append(f"{_named(device)} cannot run {holding.what}: it has "
                                      f"{describe(holding.codes)}. Fix: {fix}.")
            elif how == PTX:
                verdict.notes.append(f"{_named(device)} runs {holding.what} from PTX, which the driver compiles "
                                     f"at first use (slower to start); --cuda-arch {device.arch} builds machine "
                                     "code for it.")
    return verdict


# --- what a grading run will use ------------------------------------------------------------

BUILD, NO_BUILD, PREBUILT, PROFILE = "build", "no-build", "prebuilt", "profile"


def fallback_architectures(root: Path) -> list[str]:
    """The kit's architectures for a machine without a GPU (LABKIT_FALLBACK_CUDA_ARCHITECTURES's
    default in cmake/LabKitCudaArch.cmake)."""
    try:
        text = (root / "cmake" / "LabKitCudaArch.cmake").read_text(errors="replace")
    except OSError:
        return list(DEFAULT_FALLBACK)
    match = re.search(rf"set\({FALLBACK_VARIABLE}\s+\"?([^\s\"]+)\"?\s+CACHE", text)
    found = split(match.group(1)) if match else []
    return found if found and cmake_codes(";".join(found)) else list(DEFAULT_FALLBACK)


def kit_choice(root: Path, devices: Iterable[gpu.Device], environ: Mapping[str, str]) -> tuple[str, str]:
    """What a first configure of the kit builds for, and why: CUDAARCHS, else every GPU's
    compute capability (7.5 or newer; CMake asks nvidia-smi as gpu.devices() does), else
    the fallback list."""
    if environ.get("CUDAARCHS", "").strip():
        return environ["CUDAARCHS"].strip(), "CUDAARCHS"
    found = sorted({d.arch for d in devices if _version(d.arch) and _version(d.arch) >= _version(MIN_ARCH)},
                   key=_version)
    if found:
        return ";".join(found), "the GPUs"
    return ";".join(fallback_architectures(root)), FALLBACK_VARIABLE


def cmake_fix(build_dir: Path) -> str:
    """The commands that rebuild `build_dir` for the architectures "{cmake}" (a Holding.fix template)."""
    folder = str(build_dir).replace("{", "{{").replace("}", "}}")  # a literal in the template
    return f'cmake -B {folder} -DCMAKE_CUDA_ARCHITECTURES="{{cmake}}" && cmake --build {folder}'


def build_holding(build_dir: Path, *, mode: str, root: Path | None = None, cuda_arch: str | None = None,
                  devices: Iterable[gpu.Device] = (), environ: Mapping[str, str] | None = None) -> Holding | None:
    """What the kit's build in `build_dir` holds, or will once configured: `mode` BUILD (the
    grader configures it: --cuda-arch, else its cache, else the kit's choice), NO_BUILD,
    PREBUILT or PROFILE (its cache only). None when that cannot be told."""
    environ = os.environ if environ is None else environ
    cached = build.cache_value(build_dir, "CMAKE_CUDA_ARCHITECTURES")
    where = f"the build folder {build_dir}"
    if mode == BUILD and cuda_arch:
        value, what = cuda_arch, f"the build for --cuda-arch {cuda_arch.replace(';', ',')}"
    elif cached:
        value, what = cached, f"{where} (CMAKE_CUDA_ARCHITECTURES={cached})"
    elif mode == BUILD and root is not None:
        value, why = kit_choice(root, devices, environ)
        what = f"the kit's build for {why} (CMAKE_CUDA_ARCHITECTURES={value})"
    else:
        return None
    codes = cmake_codes(value)
    if codes is None:
        return None
    cmake = cmake_fix(build_dir)
    if mode == BUILD:
        if cuda_arch:
            fix = "pass --cuda-arch {archs} instead"
        elif not cached and environ.get("CUDAARCHS", "").strip():
            fix = "set CUDAARCHS to {cmake}, or pass --cuda-arch {archs}"
        else:
            fix = f"pass --cuda-arch {{archs}}: the grader then configures its build folder for it (or: {cmake})"
    else:
        fix = {
            NO_BUILD: f"reconfigure and build it ({cmake}), or grade without --no-build and with --cuda-arch "
                      "{archs}",
            PREBUILT: "build the kit's part again with --cuda-arch {archs} (grader batch: "
                      "--grader-arg=--cuda-arch={archs})",
        }.get(mode, f"reconfigure and build it: {cmake}")
    return Holding(what, codes, fix)


def reference_holdings(reference_dir: Path | None, labs: Iterable[str]) -> list[Holding]:
    """What the reference libraries of `labs` in `reference_dir` hold: a package's manifest
    (each library's machine code), else the CMake cache of the build they were copied from
    (<dir>/../CMakeCache.txt). [] when neither tells."""
    if reference_dir is None:
        return []
    try:
        manifest = json.loads((reference_dir / MANIFEST).read_text())
    except (OSError, ValueError):
        manifest = None
    if not isinstance(manifest, dict):
        built_in = reference_dir.parent
        value = build.cache_value(built_in, "CMAKE_CUDA_ARCHITECTURES")
        codes = cmake_codes(value) if value else None
        if codes is None:
            return []
        return [Holding(f"the reference libraries in {reference_dir} (built with CMAKE_CUDA_ARCHITECTURES={value})",
                        codes, f'build them again ({cmake_fix(built_in)}), or package them for these GPUs: '
                               "python3 -m grader package --out FILE --cuda-arch {archs}")]
    listed = manifest.get("libraries") if isinstance(manifest.get("libraries"), dict) else {}
    groups: dict[tuple[str, ...], list[str]] = {}
    for lab in labs:
        name = layout.solution_library(lab)
        entry = listed.get(name)
        sass = entry.get("sass") if isinstance(entry, dict) else None
        if isinstance(sass, list) and sass and all(isinstance(s, str) for s in sass):
            groups.setdefault(tuple(sass), []).append(name)
    out = []
    for sass, names in groups.items():
        keep = tuple(m.group("major") + m.group("minor") + m.group("suffix") for s in sass if (m := _CODE.match(s)))
        what = f"the reference package {reference_dir}" + (f" ({', '.join(names)})" if len(groups) > 1 else "")
        out.append(Holding(what, sass, "package the references again for these GPUs too: python3 -m grader package "
                                        "--out FILE --cuda-arch {archs}", keep=keep))
    return out


def for_grading(*, root: Path, build_dir: Path, mode: str, cuda_arch: str | None, reference_dir: Path | None,
                labs: Iterable[str], devices: list[gpu.Device], environ: Mapping[str, str] | None = None) -> Verdict:
    """The check before a grading run: the kit's build, and the reference package when the
    bench loads its libraries from one (`labs`: those graded; [] when nothing is timed)."""
    holding = build_holding(build_dir, mode=mode, root=root, cuda_arch=cuda_arch, devices=devices, environ=environ)
    holdings = ([holding] if holding else []) + reference_holdings(reference_dir, labs)
    return check(holdings, devices)
