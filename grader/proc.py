"""Run one subprocess safely: argument list, timeout, capped output, no survivors.

Every program the grader starts (cmake, test and bench binaries) goes through `run`.
Output goes to temporary files rather than pipes, so a child printing gigabytes can
neither fill the grader's memory nor block on a full pipe; only the head and the tail
are kept.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

# Bytes kept from each end of stdout and of stderr.
CAP_BYTES = 64 * 1024


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
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            # A new session makes the child the leader of its own process group, so
            # killpg reaches its children too, and a Ctrl-C in the terminal reaches
            # only the grader, which then cleans up below.
            child = subprocess.Popen(
                args, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                env=full_env, cwd=cwd, start_new_session=True,
            )
        except OSError as exc:
            raise LaunchError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
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
        stdout, stdout_cut = _read_capped(out, cap)
        stderr, stderr_cut = _read_capped(err, cap)
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


def _read_capped(stream: BinaryIO, cap: int) -> tuple[str, int]:
    """Head and tail of a captured stream, decoded; and how many bytes were cut."""
    size = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    if size <= 2 * cap:
        return stream.read().decode(errors="replace"), 0
    head = stream.read(cap)
    stream.seek(size - cap)
    tail = stream.read(cap)
    cut = size - 2 * cap
    note = f"\n[... {cut} bytes of output cut by the grader ...]\n".encode()
    return (head + note + tail).decode(errors="replace"), cut


def is_executable(path: Path) -> bool:
    """Whether `path` is a file this user may run."""
    return path.is_file() and os.access(path, os.X_OK)
