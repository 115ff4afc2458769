"""The files that are graded: a submission's editable files, and nothing else.

A student's repository may contain changed tests, a changed bench, a changed grader or
CMake file. None of that may count: the grader copies only the student-editable files
(`editable` in the manifest and the config, by default `labs/<lab>/<lab>.cu`) into a
clean folder, and compiles them there against the pristine kit (the instructor's copy),
so that not even a header placed next to the student's file can stand in for the kit's.
Other files of the submission that differ from the pristine kit are listed in the
report as ignored changes. Grading a kit's own files (no --submission) takes the same
path, with the kit as both the source and the pristine kit.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.rules import editable_paths

EXCLUDED_TOP = frozenset({"build"})  # build trees at the kit's top
EXCLUDED_ANYWHERE = frozenset({".git", "__pycache__"})
# Files the student template repository has in its own version (grader export writes
# them: export.GENERATED); they differ from the kit's by design, so they are not listed.
TEMPLATE_FILES = frozenset({"README.md", ".github/workflows/classroom.yml"})
MAX_LISTED = 200  # ignored changes listed in the report (all are counted)
MAX_FILES = 50_000  # files looked at in a submission before giving up the comparison
MAX_EDITABLE_BYTES = 16 * 1024 * 1024


class OverlayError(Exception):
    """The work tree cannot be made (e.g. the pristine kit is not a directory)."""


@dataclass
class Overlay:
    """What was taken from a submission, what was missing, and what was ignored."""

    pristine: Path
    submission: Path
    work: Path
    copied: dict[str, list[str]] = field(default_factory=dict)  # lab -> files taken from the submission
    missing: dict[str, str] = field(default_factory=dict)  # lab -> why it cannot be graded
    ignored_changes: list[dict[str, str]] = field(default_factory=list)  # {"path", "change"}
    ignored_total: int = 0
    truncated: bool = False  # the submission had too many files to compare them all

    def as_dict(self) -> dict[str, Any]:
        return {"pristine": str(self.pristine), "submission": str(self.submission), "work_dir": str(self.work),
                "copied": self.copied, "missing": self.missing, "ignored_changes": self.ignored_changes,
                "ignored_changes_total": self.ignored_total, "comparison_truncated": self.truncated}

    def note(self) -> str:
        """One line for the console about ignored changes ('' when there are none)."""
        if not self.ignored_total:
            return ""
        shown = ", ".join(c["path"] for c in self.ignored_changes[:5])
        more = f" and {self.ignored_total - 5} more" if self.ignored_total > 5 else ""
        return (f"note: {self.ignored_total} changed file(s) of the submission are not student-editable "
                f"and were ignored (the pristine kit's copies were used): {shown}{more}")


def editable_files(root: Path, lab: str, patterns: list[str]) -> list[tuple[str, Path]]:
    """(relative path, path under `root`) of the editable files of `lab` in `root`."""
    return [(path.relative_to(root).as_posix(), path) for path in editable_paths(root, lab, patterns)]


def prepare(pristine: Path, submission: Path, work: Path, labs: list[str],
            patterns_of: Callable[[str], list[str]], exclude: list[Path] | None = None,
            optional_of: Callable[[str], list[str]] | None = None) -> Overlay:
    """Copy the editable files of `submission` for `labs` into the clean folder `work` (emptied
    first), and list the submission's other changes against `pristine`.

    `exclude` names directories never compared (the build directory). `optional_of(lab)`
    names editable files taken when usable whose absence leaves the lab gradable (a lab's
    answers file: without it, its questions earn nothing)."""
    pristine, submission, work = pristine.resolve(), submission.resolve(), work.resolve()
    if not pristine.is_dir():
        raise OverlayError(f"pristine kit {pristine} is not a directory: pass --pristine (or set "
                           "LABKIT_PRISTINE to) the instructor's copy of the kit")
    if not submission.is_dir():
        raise OverlayError(f"submission {submission} is not a directory: pass --submission the student's "
                           "repository (a local clone)")
    skip = [work] + [p.resolve() for p in (exclude or [])]
    result = Overlay(pristine, submission, work)
    wanted: dict[str, Path] = {}
    editable: set[str] = set()
    for lab in labs:
        taken = []
        for rel, path in editable_files(submission, lab, patterns_of(lab)):
            editable.add(rel)
            problem = _unusable(submission, path, rel)
            if problem:
                result.missing.setdefault(lab, problem)
                continue
            wanted[rel] = path
            taken.append(rel)
        for rel in (optional_of(lab) if optional_of else []):
            editable.add(rel)
            path = submission / rel
            if not _unusable(submission, path, rel):
                wanted[rel] = path
                taken.append(rel)
        result.copied[lab] = taken
    _sync(wanted, work)
    if submission != pristine:
        _compare(result, pristine, submission, editable, skip)
    return result


def _unusable(submission: Path, path: Path, rel: str) -> str:
    """Why the editable file `path` cannot be taken ('' when it can)."""
    try:
        info = path.lstat()
    except OSError:
        return (f"{rel} not found in the submission {submission}: commit your file (only the editable "
                "files of a submission are graded)")
    if stat.S_ISLNK(info.st_mode):
        return f"{rel} in the submission is a symbolic link: submit the file itself"
    if not stat.S_ISREG(info.st_mode):
        return f"{rel} in the submission is not a regular file"
    if not path.resolve().is_relative_to(submission):
        return f"{rel} lies outside the submission (through a linked folder): submit the file itself"
    if info.st_size > MAX_EDITABLE_BYTES:
        return f"{rel} is {info.st_size} bytes, more than the {MAX_EDITABLE_BYTES} allowed"
    return ""


def _files(top: Path, skip: list[Path], limit: int | None = None) -> Iterator[tuple[str, Path]]:
    """(relative path, path) of the files under `top`, without the excluded folders;
    symbolic links are listed, not followed."""
    count = 0
    for folder, dirs, files in os.walk(top):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_ANYWHERE
                         and not (here == top and d in EXCLUDED_TOP)
                         and (here / d) not in skip)
        for name in sorted(files):
            if name in EXCLUDED_ANYWHERE:
                continue
            count += 1
            if limit is not None and count > limit:
                return
            path = here / name
            yield path.relative_to(top).as_posix(), path


def _sync(wanted: dict[str, Path], work: Path) -> None:
    """Make `work` hold exactly the files `wanted` (relative path -> source).

    A file is rewritten only when its content changes, with a fresh modification time:
    the grader compares times to tell what to check again."""
    work.mkdir(parents=True, exist_ok=True)
    for rel, src in wanted.items():
        dst = work / rel
        if dst.is_file() and not dst.is_symlink() and _same(src, dst):
            continue
        old_mtime = dst.lstat().st_mtime_ns if dst.is_file() or dst.is_symlink() else 0
        if dst.is_symlink() or dst.is_file():
            dst.unlink()
        elif dst.is_dir():
            shutil.rmtree(dst)
        for parent in reversed(Path(rel).parents[:-1]):  # a file where a folder must be
            if (work / parent).is_file() or (work / parent).is_symlink():
                (work / parent).unlink()
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        now = max(time.time_ns(), old_mtime + 1_000_000)  # strictly newer than the last one's
        os.utime(dst, ns=(now, now))
    for folder, dirs, files in os.walk(work, topdown=False):
        here = Path(folder)
        for name in files:
            path = here / name
            if path.relative_to(work).as_posix() not in wanted:
                path.unlink()
        for name in dirs:
            path = here / name
            if path.is_symlink():
                path.unlink()
            elif not any(path.iterdir()):
                path.rmdir()


def _compare(result: Overlay, pristine: Path, submission: Path, editable: set[str], skip: list[Path]) -> None:
    """List the submission's files that differ from the pristine kit and are not editable."""
    changes = []
    count = 0
    for rel, path in _files(submission, skip, limit=MAX_FILES + 1):
        count += 1
        if count > MAX_FILES:
            result.truncated = True
            break
        if rel in editable or rel in TEMPLATE_FILES:
            continue
        change = _change(path, pristine / rel)
        if change:
            changes.append({"path": rel, "change": change})
    changes.sort(key=lambda c: c["path"])
    result.ignored_total = len(changes)
    result.ignored_changes = changes[:MAX_LISTED]


def _change(path: Path, original: Path) -> str:
    """'added', 'modified' or '' (unchanged) for a submission file against the pristine one."""
    try:
        mine = path.lstat()
        theirs = original.lstat()
    except FileNotFoundError:
        return "added"
    except OSError:
        return "modified"
    if not stat.S_ISREG(mine.st_mode) or not stat.S_ISREG(theirs.st_mode):
        return "modified" if stat.S_IFMT(mine.st_mode) != stat.S_IFMT(theirs.st_mode) or \
            (stat.S_ISLNK(mine.st_mode) and os.readlink(path) != os.readlink(original)) else ""
    return "" if _same(path, original) else "modified"


def _same(a: Path, b: Path) -> bool:
    """Whether two regular files hold the same bytes."""
    try:
        return a.stat().st_size == b.stat().st_size and filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False
