"""Graders that share a GPU take turns for timing: a lock per GPU between processes.

One grading run tests its labs side by side and then times each lab's bench alone on the
GPU (grade.py); inside one process that order keeps the timing honest. This lock extends it
to every grader process on the machine (`grader batch --jobs N` with N above the GPUs, the
kit's corpus in shards, two instructors on one server): work that may share the GPU (tests,
the sanitizer, a bench's set-up) holds it SHARED, work that must have the GPU to itself
(timing a bench, Nsight Compute) holds it EXCLUSIVE.

    lock = gpu_lock.for_devices(config.grader, gpu.devices())
    with lock.shared() as hold: ...       # the tests phase
    with lock.exclusive() as hold: ...    # one lab's timing
        if hold.missed: ...               # waited gpu_lock_timeout_s in vain: went on without it

How: `fcntl.flock` on files in a folder every user can write (`<temp>/labkit-gpu-locks`,
mode 1777, or the config's `gpu_lock_dir`), named after the GPU's UUID (the first visible
device: the one this process grades on). The kernel drops a process's locks when it ends,
however it ends. Writers (EXCLUSIVE) are preferred, so that a stream of test phases never
starves a timing: a writer takes a "turnstile" file exclusively while it waits for the main
lock and holds it until it is done; a reader passes the turnstile (takes it, takes the main
lock shared, lets the turnstile go), so no new reader enters while a writer waits.

Every wait polls with LOCK_NB and ends at `gpu_lock_timeout_s`: past it the grader goes on
WITHOUT the lock (Hold.missed says why, for the lab's report), never a crash or a hang. Lock
files are opened read-only, never written, with O_NOFOLLOW and O_NONBLOCK, and used only if
they are regular files: a symlink, a FIFO or another user's unreadable file someone left
there costs the lock (a note), not the grader. With no GPU, or one without a UUID, or
`gpu_lock = "off"`: no lock at all (NoLock).

Within a process the lock is shared by every thread and counted: SHARED holds of several
threads are one SHARED lock; an EXCLUSIVE hold may nest EXCLUSIVE or SHARED holds of its own
thread. Asking for EXCLUSIVE while the same thread holds SHARED is a bug (two processes
doing so would wait for each other): it raises RuntimeError; release first.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import gpu

SHARED, EXCLUSIVE = "shared", "exclusive"
FOLDER_NAME = "labkit-gpu-locks"
DEFAULT_TIMEOUT_S = 3600
POLL_FIRST_S, POLL_MAX_S = 0.02, 0.25
# The performance flag of a lab timed without the lock (score.Performance.flags).
SHARED_GPU_FLAG = "shared_gpu"


def default_folder() -> Path:
    """Where the lock files are when the config names no folder: the system's temporary
    folder (TMPDIR), which every grader on the machine sees."""
    return Path(tempfile.gettempdir()) / FOLDER_NAME


@dataclass
class Hold:
    """What a request for the lock got: `taken` when this process holds it; `missed` says
    why not when the lock was wanted but not had (the wait timed out, the lock file cannot
    be used); both empty with the lock off (NoLock)."""

    mode: str
    taken: bool = False
    missed: str = ""
    waited_s: float = 0.0
    thread: int = field(default_factory=threading.get_ident)
    held: bool = field(default=False, repr=False)  # counted in the process (release ends it)


class NoLock:
    """No lock (no GPU, no UUID, or `gpu_lock = "off"`): every hold is granted at once."""

    enabled = False
    path: Path | None = None

    @contextlib.contextmanager
    def shared(self, on_wait: Callable[[], None] | None = None) -> Iterator[Hold]:
        yield Hold(SHARED)

    @contextlib.contextmanager
    def exclusive(self, on_wait: Callable[[], None] | None = None) -> Iterator[Hold]:
        yield Hold(EXCLUSIVE)


class _State:
    """What this process holds on one lock file, shared by its threads and its GpuLocks."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.mode: str | None = None  # what the process holds (or is taking)
        self.busy = False  # a thread is taking the files, the condition's lock released
        self.count = 0  # holds in the process
        self.owner: int | None = None  # the thread of an EXCLUSIVE hold
        self.readers: dict[int, int] = {}  # thread -> its SHARED holds
        self.taken = False
        self.missed = ""
        self.fds: list[int] = []


_STATES: dict[str, _State] = {}
_STATES_LOCK = threading.Lock()


def _state(path: Path) -> _State:
    with _STATES_LOCK:
        return _STATES.setdefault(str(path), _State())


class GpuLock:
    """The lock of one GPU (`key`, its UUID) in `folder`, waits limited to `timeout_s`."""

    enabled = True

    def __init__(self, folder: Path, key: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.folder = Path(folder)
        self.key = re.sub(r"[^A-Za-z0-9-]", "_", key)[:120] or "gpu"
        self.timeout_s = float(timeout_s)
        self.path = self.folder / f"{self.key}.lock"
        self.turnstile = self.folder / f"{self.key}.turnstile"
        self._state = _state(self.path)

    @contextlib.contextmanager
    def held(self, mode: str, on_wait: Callable[[], None] | None = None) -> Iterator[Hold]:
        """Held in `mode` for the block, released after it whatever happens."""
        hold = self.acquire(mode, on_wait)
        try:
            yield hold
        finally:
            self.release(hold)

    def shared(self, on_wait: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[Hold]:
        """Held SHARED for the block (GPU work that may share the GPU)."""
        return self.held(SHARED, on_wait)

    def exclusive(self, on_wait: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[Hold]:
        """Held EXCLUSIVE for the block (the GPU to this process alone)."""
        return self.held(EXCLUSIVE, on_wait)

    def acquire(self, mode: str, on_wait: Callable[[], None] | None = None) -> Hold:
        """The lock in `mode`, within the timeout; `on_wait()` is called once if it must wait.
        Release the Hold (release) whether or not it was taken."""
        if mode not in (SHARED, EXCLUSIVE):
            raise ValueError(f"unknown lock mode {mode!r}")
        start = time.monotonic()
        deadline = start + self.timeout_s
        me = threading.get_ident()
        state = self._state
        waited = _Waiting(on_wait)
        with state.cond:
            while True:
                if state.mode == EXCLUSIVE and state.owner == me and not state.busy:
                    state.count += 1  # nested in this thread's EXCLUSIVE hold, which covers it
                    return Hold(mode, state.taken, state.missed, 0.0, me, held=True)
                if mode == EXCLUSIVE and state.readers.get(me):
                    raise RuntimeError("a GPU lock held SHARED by this thread cannot become EXCLUSIVE: "
                                       "release the SHARED hold first")
                if mode == SHARED and state.mode == SHARED and not state.busy:
                    state.count += 1  # one SHARED lock for every thread of the process
                    state.readers[me] = state.readers.get(me, 0) + 1
                    return Hold(mode, state.taken, state.missed, time.monotonic() - start, me, held=True)
                if state.mode is None and not state.busy:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return Hold(mode, False, self._timeout_note(), time.monotonic() - start, me)
                waited()
                state.cond.wait(min(remaining, 1.0))
            state.mode, state.busy = mode, True
            state.owner = me if mode == EXCLUSIVE else None
        taken, missed, fds, done = False, "", [], False
        try:
            taken, missed, fds = self._take_files(mode, deadline, waited)
            done = True
        finally:
            with state.cond:
                state.busy = False
                if done:
                    state.taken, state.missed, state.fds, state.count = taken, missed, fds, 1
                    if mode == SHARED:
                        state.readers[me] = 1
                else:  # interrupted (Ctrl-C): nothing held
                    state.mode, state.owner = None, None
                state.cond.notify_all()
        return Hold(mode, taken, missed, time.monotonic() - start, me, held=True)

    def release(self, hold: Hold) -> None:
        """Ends a hold that `acquire` gave (one that timed out in the process is no hold)."""
        state = self._state
        with state.cond:
            if not hold.held:
                return  # it timed out waiting for another thread: nothing held
            hold.held = False
            if hold.mode == SHARED and state.mode == SHARED:
                state.readers[hold.thread] -= 1
                if not state.readers[hold.thread]:
                    del state.readers[hold.thread]
            state.count -= 1
            if state.count > 0:
                return
            for fd in reversed(state.fds):
                _unlock_close(fd)
            state.fds, state.mode, state.owner, state.taken, state.missed = [], None, None, False, ""
            state.readers.clear()
            state.cond.notify_all()

    def _take_files(self, mode: str, deadline: float, waited: _Waiting) -> tuple[bool, str, list[int]]:
        """Takes the lock files: (taken, why not, the descriptors to keep until release)."""
        opened: list[int] = []
        try:
            _ensure_folder(self.folder)
            turnstile = _open_lock_file(self.turnstile)
            opened.append(turnstile)
            if not _flock_until(turnstile, fcntl.LOCK_EX, deadline, waited):
                return False, self._timeout_note(), []
            main = _open_lock_file(self.path)
            opened.append(main)
            if not _flock_until(main, fcntl.LOCK_EX if mode == EXCLUSIVE else fcntl.LOCK_SH, deadline, waited):
                return False, self._timeout_note(), []
            if mode == EXCLUSIVE:
                kept, opened = [main, turnstile], []  # the turnstile stays closed to new readers
                return True, "", kept
            _unlock_close(turnstile)  # a reader passes the turnstile at once
            kept, opened = [main], []
            return True, "", kept
        except OSError as exc:
            return False, (f"the GPU lock {self.path} could not be used ({exc.strerror or exc}): graders on this "
                           "GPU did not take turns (fix or remove the folder, or set gpu_lock_dir)"), []
        finally:
            for fd in reversed(opened):
                _unlock_close(fd)

    def _timeout_note(self) -> str:
        return (f"waited {self.timeout_s:g} s (gpu_lock_timeout_s) for another grader on this GPU to finish, "
                "then went on without waiting longer")


class _Waiting:
    """Calls `on_wait` the first time a request has to wait (a progress line)."""

    def __init__(self, on_wait: Callable[[], None] | None) -> None:
        self.on_wait, self.called = on_wait, False

    def __call__(self) -> None:
        if not self.called:
            self.called = True
            if self.on_wait is not None:
                self.on_wait()


def _ensure_folder(folder: Path) -> None:
    """The lock folder, made with mode 1777 (every user's graders create their files in
    it, none may remove another's); refused when it is not a real folder (a symlink)."""
    try:
        os.mkdir(folder, 0o700)
        os.chmod(folder, 0o1777)  # after mkdir, which the umask narrows
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise OSError(errno.ENOTDIR, f"{folder} is not a folder (a symlink or a file)")


_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0)


def _open_lock_file(path: Path) -> int:
    """A read-only descriptor of the regular file `path`, made (mode 0666) if missing. A
    symlink fails (O_NOFOLLOW), a FIFO or a device opens without blocking (O_NONBLOCK) and is
    refused. The file is never written: flock needs no more than reading."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        try:
            fd = os.open(path, _OPEN_FLAGS | os.O_CREAT | os.O_EXCL, 0o666)
            with contextlib.suppress(OSError):
                os.fchmod(fd, 0o666)  # the umask narrowed it; other users' graders open it too
        except FileExistsError:  # another grader made it meanwhile
            fd = os.open(path, _OPEN_FLAGS)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{path} is not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _flock_until(fd: int, operation: int, deadline: float, waited: Callable[[], None]) -> bool:
    """flock(fd, operation) tried without blocking until `deadline`: whether it was taken."""
    pause = POLL_FIRST_S
    while True:
        try:
            fcntl.flock(fd, operation | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        waited()
        time.sleep(min(pause, remaining))
        pause = min(POLL_MAX_S, pause * 1.5)


def _unlock_close(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_UN)
    with contextlib.suppress(OSError):
        os.close(fd)


def for_devices(settings: dict[str, Any], devices: list[gpu.Device]) -> GpuLock | NoLock:
    """The lock of the GPU this process grades on (the first of `devices`, gpu.devices()),
    by the config's [grader] `gpu_lock`, `gpu_lock_dir` and `gpu_lock_timeout_s`; NoLock with
    the lock off, no GPU, or a GPU whose UUID nvidia-smi does not give."""
    if settings.get("gpu_lock", "auto") == "off" or not devices or not devices[0].uuid.strip():
        return NoLock()
    folder = settings.get("gpu_lock_dir") or ""
    return GpuLock(Path(folder) if folder else default_folder(), devices[0].uuid.strip(),
                   settings.get("gpu_lock_timeout_s", DEFAULT_TIMEOUT_S))


def for_settings(settings: dict[str, Any] | None = None) -> GpuLock | NoLock:
    """for_devices on this machine's GPUs (gpu.devices()), with the lock off costing no query."""
    settings = settings or {}
    if settings.get("gpu_lock", "auto") == "off":
        return NoLock()
    return for_devices(settings, gpu.devices())


def alone_note(hold: Hold, *, timed: bool) -> str:
    """The lab's note when its timing (`timed`) or its profile went on without the lock
    ("" when it had it, or the lock is off)."""
    if not hold.missed:
        return ""
    if not timed:
        return f"this lab's profile may have shared the GPU with another grader: {hold.missed}"
    return (f"this lab's timing may have shared the GPU with another grader: {hold.missed}. Its performance "
            "points were scored, but grade it again when the GPU is free to be sure of them")
