"""What a long build is doing, while it runs: `[37/140] targets built (1 min 20 s)`.

A build of every lab takes minutes with nvcc, and proc.run shows its output only once it
has ended. So while the build runs, a thread reads Ninja's own record of what it has
done (`<build>/.ninja_log`, one line per finished command, written as each one ends)
and the total from `ninja -t commands` (every command the targets need; in the fresh
build folders of `export` and `package`, every one of them runs): Ninja's [n/m]
progress. (A dry run, `ninja -n`, cannot tell: in a CMake build it stops at the step
that re-checks CMake's globs.) On a terminal that is one updating line; otherwise (a CI
log, a pipe) one line every few seconds. With another generator than Ninja only the
time so far is shown. Nothing is shown for a build that ends within FIRST_S seconds.
"""

from __future__ import annotations

import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from grader import layout, proc

FIRST_S = 3.0  # a build that ends sooner shows nothing
EVERY_S = 10.0  # seconds between lines when the output is not a terminal
TTY_EVERY_S = 1.0  # seconds between updates of the line on a terminal
TOOL_TIMEOUT_S = 120


def ninja_program(build_dir: Path) -> str | None:
    """The Ninja of a build folder (CMAKE_MAKE_PROGRAM), or None when it is not a Ninja build."""
    if not (build_dir / "build.ninja").is_file():
        return None
    try:
        cache = (build_dir / layout.CMAKE_CACHE).read_text(errors="replace")
    except OSError:
        cache = ""
    match = re.search(r"^CMAKE_MAKE_PROGRAM:[A-Z]+=(.+)$", cache, flags=re.M)
    program = match.group(1).strip() if match else ""
    return program if program and Path(program).is_file() else shutil.which("ninja")


def planned(build_dir: Path, targets: list[str] | None = None) -> int | None:
    """How many commands building `targets` (the default ones when None) takes in all, from
    `ninja -t commands`; None when that cannot be told."""
    ninja = ninja_program(build_dir)
    if ninja is None:
        return None
    try:
        result = proc.run([ninja, "-C", str(build_dir), "-t", "commands", *(targets or [])],
                          timeout=TOOL_TIMEOUT_S, cap=1 << 26)
    except proc.LaunchError:
        return None
    if result.returncode != 0 or result.timed_out or result.stdout_cut:
        return None
    return sum(1 for line in result.stdout.splitlines() if line.strip())


def finished(build_dir: Path) -> int:
    """How many commands Ninja has recorded as finished in `<build>/.ninja_log`."""
    try:
        with open(build_dir / ".ninja_log", "rb") as log:
            return sum(1 for line in log if line.strip() and not line.startswith(b"#"))
    except OSError:
        return 0


def duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


class BuildProgress:
    """A context manager that shows the progress of the build running inside it.

        with BuildProgress(build_dir, "check: building"):
            result = proc.run(["cmake", "--build", str(build_dir)], timeout=...)
    """

    def __init__(self, build_dir: Path, label: str, *, targets: list[str] | None = None,
                 stream: TextIO | None = None) -> None:
        self.build_dir, self.label, self.targets = build_dir, label, targets
        self.stream = stream if stream is not None else sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total: int | None = None
        self.lines: list[str] = []  # every progress text shown, for tests
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown_on_line = False

    def __enter__(self) -> BuildProgress:
        self.total = planned(self.build_dir, self.targets)
        self._before = finished(self.build_dir)
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._watch, name="build-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._shown_on_line:
            self.stream.write("\n")
            self.stream.flush()

    def text(self) -> str:
        """`check: building: 37/140 commands done (1 min 20 s)`."""
        elapsed = duration(time.monotonic() - self._start)
        if self.total is None:
            return f"{self.label}: still running ({elapsed})"
        done = min(max(finished(self.build_dir) - self._before, 0), self.total)
        return f"{self.label}: [{done}/{self.total}] commands done ({elapsed})"

    def _watch(self) -> None:
        if self._stop.wait(FIRST_S):
            return
        every = TTY_EVERY_S if self.tty else EVERY_S
        while True:
            text = self.text()
            self.lines.append(text)
            if self.tty:  # one line, rewritten in place
                self.stream.write("\r" + text + "\x1b[K")
                self._shown_on_line = True
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            if self._stop.wait(every):
                return
