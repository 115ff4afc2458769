"""The toolchain the check runs: nvcc, the folders its headers come from, and binutils."""

from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from grader import proc

TOOL_TIMEOUT_S = 30.0  # readelf, objdump, c++filt, the host compiler's include list
# Every process the check runs (the tool probes here, each compiler and binutils step of a
# session.Session) gets these limits. Per process: every solution compiles in 512 MiB and a CUB-heavy bench in 1 GiB; a
# template bomb reaches 2 GiB within about 15 s. The largest file a compiler step writes
# (.ii, PTX, cubin, object) stays below 3 MiB for every solution.
DEFAULT_LIMITS = proc.Limits(memory_bytes=2 << 30, file_bytes=256 << 20)
# Device architectures preprocessed for the dependency list when nvcc cannot list its
# own (--list-gpu-arch); each must be known to the oldest supported nvcc (11.8).
FALLBACK_ARCHS = ("compute_75", "compute_80", "compute_86", "compute_89", "compute_90")


@dataclass(frozen=True)
class Toolchain:
    """nvcc and the folders its headers come from."""

    nvcc: str
    toolkit_includes: tuple[str, ...]  # real paths of the CUDA toolkit's include folders
    system_includes: tuple[str, ...]  # real paths of the host compiler's folders
    archs: tuple[str, ...]  # virtual architectures preprocessed for the dependency list


def find_nvcc(nvcc: str | None = None) -> str | None:
    """The nvcc to use: `nvcc` (a path or a name), else PATH, $CUDA_HOME/bin, /usr/local/cuda/bin."""
    if nvcc:
        found = shutil.which(nvcc)
        return str(Path(found).resolve()) if found else None
    candidates = [shutil.which("nvcc")]
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(str(Path(os.environ[env]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for candidate in candidates:
        if candidate and proc.is_executable(Path(candidate)):
            return str(Path(candidate).resolve())
    return None


@functools.lru_cache(maxsize=8)
def toolchain(nvcc: str) -> Toolchain:
    """Include folders and architectures of the nvcc at `nvcc` (a resolved path)."""
    # `nvcc` may be a wrapper script (`exec /opt/cuda-X/bin/nvcc "$@"`), so the toolkit's
    # folders are what nvcc itself reports, with the folders beside `nvcc` as a fallback.
    tops = _toolkit_tops(nvcc) or [Path(nvcc).parent.parent]
    toolkit = {os.path.realpath(p) for top in tops for p in [top / "include", *top.glob("targets/*/include")]
               if p.is_dir()}
    return Toolchain(nvcc, tuple(sorted(toolkit)), _system_includes(), _archs(nvcc))


def _toolkit_tops(nvcc: str) -> list[Path]:
    """The toolkit folders named by `nvcc --dryrun` (its TOP and _HERE_/.. lines)."""
    try:
        done = proc.run([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                        timeout=TOOL_TIMEOUT_S, limits=DEFAULT_LIMITS)
    except proc.LaunchError:
        return []
    tops = [Path(m) for m in re.findall(r"^#\$ TOP=(.+?)\s*$", done.stderr, re.MULTILINE)]
    tops += [Path(m).parent for m in re.findall(r"^#\$ _HERE_=(.+?)\s*$", done.stderr, re.MULTILINE)]
    return [Path(os.path.realpath(t)) for t in tops]


def _archs(nvcc: str) -> tuple[str, ...]:
    """Every virtual architecture this nvcc compiles for (`--list-gpu-arch`, CUDA 11.x and newer)."""
    try:
        done = proc.run([nvcc, "--list-gpu-arch"], timeout=TOOL_TIMEOUT_S, limits=DEFAULT_LIMITS)
    except proc.LaunchError:
        return FALLBACK_ARCHS
    found = tuple(dict.fromkeys(re.findall(r"\bcompute_\d+[a-z]?\b", done.stdout)))
    return found if done.returncode == 0 and found else FALLBACK_ARCHS


def _system_includes() -> tuple[str, ...]:
    """The host compiler's own header folders (what `g++ -E -v` lists) and the usual ones."""
    folders = ["/usr/include", "/usr/local/include", "/usr/lib/gcc"]
    host = os.environ.get("NVCC_CCBIN") or os.environ.get("CUDAHOSTCXX") or shutil.which("g++") or shutil.which("c++")
    if host:
        try:
            done = proc.run([host, "-E", "-v", "-x", "c++", "-std=c++17", os.devnull],
                            timeout=TOOL_TIMEOUT_S, limits=DEFAULT_LIMITS)
            listing = re.search(r"#include <\.\.\.> search starts here:\n(.*?)End of search list",
                                done.stderr, re.DOTALL)
            if listing:
                folders += [line.strip().split(" (")[0] for line in listing.group(1).splitlines() if line.strip()]
        except proc.LaunchError:
            pass
    return tuple(sorted({os.path.realpath(f) for f in folders if os.path.isdir(f)}))


def tools_missing() -> list[str]:
    """The binutils programs the check needs that are not on PATH."""
    return [tool for tool in ("readelf", "objdump", "c++filt") if shutil.which(tool) is None]
