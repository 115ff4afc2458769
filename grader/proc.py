"""Run one subprocess safely: argument list, timeout, capped output, no survivors.

Every program the grader starts (cmake, test, bench and sanitizer runs) goes through
`run`. Its output is drained from pipes by reader threads that keep only the head and
the tail, so a child printing gigabytes fills neither the grader's memory nor the disk,
and never blocks on a full pipe.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Bytes kept from each end of stdout and of stderr.
CAP_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024
# Seconds to wait for the output readers once the process group is gone.
READER_GRACE_S = 5.0


class LaunchError(Exception):
    """The program could not be started at all (missing, not executable)."""


@dataclass
class ProcResult:
    """What one finished (or killed) subprocess left behind."""

    command: str  # copy-pasteable shell form, for "reproduce with"
    returncode: int | None  # None only if it was killed and never reaped
    timed_out: bool
    duration_s: float
    stdout: str
    stderr: str
    stdout_cut: int = 0  # bytes dropped from the middle of stdout
    stderr_cut: int = 0

    @property
    def signal(self) -> int | None:
        """The signal that ended the process, if one did (negative return code)."""
        if self.returncode is not None and self.returncode < 0:
            return -self.returncode
        return None

    @property
    def signal_name(self) -> str | None:
        """SIGSEGV rather than 11; None when no signal ended the process."""
        sig = self.signal
        if sig is None:
            return None
        try:
            return signal.Signals(sig).name
        except ValueError:
            return f"signal {sig}"

    def output_tail(self, lines: int = 40) -> str:
        """The last lines of stdout and stderr, for a report's failure context."""
        parts = []
        for name, text in (("stdout", self.stdout), ("stderr", self.stderr)):
            tail = text.rstrip("\n").splitlines()[-lines:]
            if tail:
                parts.append(f"--- {name} (last {len(tail)} lines) ---\n" + "\n".join(tail))
        return "\n".join(parts)


def command_string(cmd: Sequence[str | os.PathLike[str]], env: Mapping[str, str] | None = None) -> str:
    """`cmd` as one line a user can paste into a POSIX shell, env overrides first."""
    prefix = [f"{key}={shlex.quote(value)}" for key, value in (env or {}).items()]
    return " ".join(prefix + [shlex.join(str(arg) for arg in cmd)])


def run(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    cap: int = CAP_BYTES,
) -> ProcResult:
    """Run `cmd` (never through a shell) and wait at most `timeout` seconds.

    `env` holds overrides on top of the grader's own environment. On timeout, or if
    the grader is interrupted, the child's whole process group is killed, so a hung
    GPU program and anything it spawned are gone when this returns.
    """
    args = [str(arg) for arg in cmd]
    full_env = {**os.environ, **env} if env else None
    start = time.monotonic()
    timed_out = False
    try:
        # A new session makes the child the leader of its own process group, so
        # killpg reaches its children too, and a Ctrl-C in the terminal reaches
        # only the grader, which then cleans up below.
        child = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env, cwd=cwd, start_new_session=True,
        )
    except OSError as exc:
        raise LaunchError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
    # One thread per stream drains the pipe as fast as the child writes, keeping only
    # the head and the tail: memory stays bounded and the child never blocks.
    out, err = _Capture(cap), _Capture(cap)
    readers = [_start_reader(child.stdout, out), _start_reader(child.stderr, err)]
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        _kill_group(child)
        raise
    # Also after a normal exit: a background child left in the group (a helper
    # the test spawned) must not outlive the grading of this lab.
    _kill_group(child)
    duration = time.monotonic() - start
    for reader, stream in zip(readers, (child.stdout, child.stderr)):
        # A process that left the group (setsid) may still hold the pipe open: do not
        # wait for it forever; its further output is simply not read.
        reader.join(timeout=READER_GRACE_S)
        if not reader.is_alive():
            stream.close()
    stdout, stdout_cut = out.text()
    stderr, stderr_cut = err.text()
    return ProcResult(
        command=command_string(args, env), returncode=child.returncode, timed_out=timed_out,
        duration_s=duration, stdout=stdout, stderr=stderr,
        stdout_cut=stdout_cut, stderr_cut=stderr_cut,
    )


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    # The group id is the child's pid (start_new_session). While the group has a
    # member the kernel does not hand that id to another process.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty
    child.wait()


class _Capture:
    """The first and the last `cap` bytes of a stream, and how many bytes it had in all."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.lock = threading.Lock()

    def add(self, chunk: bytes) -> None:
        with self.lock:
            self.total += len(chunk)
            room = self.cap - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail += chunk
                if len(self.tail) > self.cap:
                    del self.tail[:len(self.tail) - self.cap]

    def text(self) -> tuple[str, int]:
        """Head and tail, decoded; and how many bytes were cut from the middle."""
        with self.lock:
            cut = self.total - len(self.head) - len(self.tail)
            if cut <= 0:
                return bytes(self.head + self.tail).decode(errors="replace"), 0
            note = f"\n[... {cut} bytes of output cut by the grader ...]\n".encode()
            return bytes(self.head + note + self.tail).decode(errors="replace"), cut


def _start_reader(stream: BinaryIO, capture: _Capture) -> threading.Thread:
    def drain() -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                return
            if not chunk:
                return
            capture.add(chunk)

    thread = threading.Thread(target=drain, name="grader-output-reader", daemon=True)
    thread.start()
    return thread


def is_executable(path: Path) -> bool:
    """Whether `path` is a file this user may run."""
    return path.is_file() and os.access(path, os.X_OK)
