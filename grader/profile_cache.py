"""The figures of the profiler questions, kept for the next grading run.

A lab's "profile" questions are checked against Nsight Compute's figures of the kit's
own reference kernels (grader/stages/scoring.py, take_profile): no student code runs in
the profiled program, so every student graded on the same GPU, with the same build of
the kit and the same ncu, is checked against the same figures. Taking them costs ncu's
kernel replays (about 15 s for transpose on an H100, alone on the GPU), once per student
and lab without this cache; a batch of 200 students then spends most of an hour on one
set of figures.

Only the instructor's batch uses it (`grader batch` passes `--profile-cache DIR/profile-cache`
to each grader): a grading run without the option never reads figures from a file, since
on a machine where students run steps of their own (a Classroom runner) a file could be
theirs. The cache is a JSON file per lab and key in that folder. The key holds what
the figures depend on: the profiled program's contents (SHA-256), the candidates, ncu's
path, size and modification time (a new ncu, new figures), and the GPU's name and UUID
(each GPU of a host measures for itself). The data seed is not in it: the profiled
workloads draw their values with the same distribution whatever the seed, and a
throughput or an efficiency does not depend on the values drawn.

A file that cannot be read, whose key differs or whose figures have another shape is a
miss: the profile is taken again and the file replaced (whole, through a rename: the
class's graders may write it at the same time). The batch's folder is the instructor's: a
submission's code runs only in the judge's workers, whose sandbox opens no file for
writing, and compiles in the jail. To take fresh figures anyway, delete the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

SCHEMA = "labkit-profile-cache"
VERSION = 1


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's contents (hex)."""
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def key(bench: Path, candidates: list[str], ncu: str, gpu_name: str, gpu_uuid: str) -> dict[str, Any]:
    """What the figures depend on (see the module's docstring). OSError when the bench or
    ncu cannot be read."""
    tool = Path(ncu).resolve()
    stat = tool.stat()
    return {"bench_sha256": file_digest(bench), "candidates": list(candidates),
            "ncu": {"path": str(tool), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns},
            "gpu": {"name": gpu_name, "uuid": gpu_uuid}}


def path_for(folder: Path, lab: str, wanted: dict[str, Any]) -> Path:
    """The cache file of `lab` for this key in the batch's folder."""
    name = hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:16]
    return folder / f"{lab}-{name}.json"


def _well_formed(figures: Any, candidates: list[str]) -> bool:
    """Figures as take_profile makes them: per candidate, a list of {"name", "metrics"}."""
    if not isinstance(figures, dict) or not isinstance(figures.get("_gpu"), str):
        return False
    for who in candidates:
        kernels = figures.get(who)
        if not isinstance(kernels, list):
            return False
        for kernel in kernels:
            if not (isinstance(kernel, dict) and isinstance(kernel.get("name"), str)
                    and isinstance(kernel.get("metrics"), dict)):
                return False
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in kernel["metrics"].values()):
                return False
    return True


def load(folder: Path, lab: str, wanted: dict[str, Any]) -> dict[str, Any] | None:
    """The figures kept for this lab and key, or None (a miss)."""
    try:
        data = json.loads(path_for(folder, lab, wanted).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("version") != VERSION:
        return None
    if data.get("key") != wanted or not _well_formed(data.get("figures"), wanted["candidates"]):
        return None
    return data["figures"]


def store(folder: Path, lab: str, wanted: dict[str, Any], figures: dict[str, Any]) -> None:
    """Keeps the figures for the next run; a folder that cannot be written costs only that."""
    path = path_for(folder, lab, wanted)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(json.dumps({"schema": SCHEMA, "version": VERSION, "key": wanted, "figures": figures},
                                        indent=1, sort_keys=True) + "\n")
        temporary.replace(path)
    except OSError:
        try:
            temporary.unlink()
        except OSError:
            pass
