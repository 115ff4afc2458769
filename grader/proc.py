"""Run one subprocess safely: argument list, timeout, capped output, no survivors.

Every program the grader starts (cmake, compilers, test, bench and sanitizer runs) goes
through `run`. Its output is drained from pipes by reader threads that keep only the
head and the tail, so a child printing gigabytes fills neither the grader's memory nor
the disk, and never blocks on a full pipe.

No survivors: each run marks its environment with an id (LABKIT_RUN_IDS), which every
process it starts inherits; when the run ends, by itself, by its timeout or by Ctrl-C,
every process still carrying the mark is ended, first politely (SIGTERM), then by force
(SIGKILL). That reaches what a process group does not: compilers that Ninja starts in
groups of their own, and processes that left with setsid().

`limits` bounds each process of a run (memory, size of the files it writes): a
compiler fed a template bomb fails within a minute instead of filling the machine.
"""

from __future__ import annotations

import os
import resource
import shlex
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

# Bytes kept from each end of stdout and of stderr.
CAP_BYTES = 64 * 1024
READ_CHUNK = 64 * 1024
# Seconds to wait for the output readers once the process group is gone.
READER_GRACE_S = 5.0
# The environment variable that marks a run's processes (a ':'-separated list of ids).
RUN_IDS = "LABKIT_RUN_IDS"
# Seconds between SIGTERM and SIGKILL for a run's survivors.
POLITE_S = 2.0


@dataclass(frozen=True)
class Limits:
    """Per-process limits of a run (None: unlimited)."""

    memory_bytes: int | None = None  # address space of each process (RLIMIT_AS)
    file_bytes: int | None = None  # largest file a process may write (RLIMIT_FSIZE)
    jail: Jail | None = None  # the files it may read and write (a student's compile)

    def apply(self) -> None:
        """Sets the limits on the calling process (runs in the child before exec)."""
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.memory_bytes is not None:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes))
        if self.file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (self.file_bytes, self.file_bytes))


class Jail:
    """What a run's processes may read and write, enforced by the kernel (Linux Landlock).

    A student's compile gets one: the toolchain, the system, the kit's headers and build
    folder and the student's own folder may be read; only its output folder written. So no
    spelling of `#include` or `.incbin` reaches a file of the grading machine outside them
    (a classmate's submission, the reference's source, the instructor's home). The rules
    are made in the grader; the child only enters them, just before it starts the program."""

    # Landlock's file-system rights (linux/landlock.h) and system calls (x86-64 and arm64).
    _EXECUTE, _WRITE_FILE, _READ_FILE, _READ_DIR = 1, 2, 4, 8
    _CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
    _PR_SET_NO_NEW_PRIVS = 38

    def __init__(self, readable: Sequence[str | os.PathLike[str]], writable: Sequence[str | os.PathLike[str]]) -> None:
        self.readable = [str(p) for p in readable]
        self.writable = [str(p) for p in writable]

    @classmethod
    def abi(cls) -> int:
        """The kernel's Landlock ABI version (0: none)."""
        try:
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            libc.syscall.restype = ctypes.c_long
            version = libc.syscall(cls._CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
        except (OSError, AttributeError):
            return 0
        return max(0, int(version))

    @classmethod
    def _rights(cls, abi: int) -> int:
        rights = (1 << 13) - 1  # EXECUTE .. MAKE_SYM
        if abi >= 2:
            rights |= 1 << 13  # REFER
        if abi >= 3:
            rights |= 1 << 14  # TRUNCATE
        if abi >= 5:
            rights |= 1 << 15  # IOCTL_DEV
        return rights

    def prepare(self) -> Callable[[], None]:
        """Makes the rules (in the grader) and returns what the child calls to enter them.
        Raises OSError when the kernel has no Landlock or refuses the rules."""
        import ctypes
        import struct
        abi = self.abi()
        if abi < 1:
            raise OSError("Landlock is not available in this kernel")
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        handled = self._rights(abi)
        attr = ctypes.create_string_buffer(struct.pack("=Q", handled))
        ruleset = libc.syscall(self._CREATE_RULESET, attr, ctypes.c_size_t(8), ctypes.c_uint32(0))
        if ruleset < 0:
            raise OSError(ctypes.get_errno(), "cannot create a Landlock ruleset")
        file_rights = self._EXECUTE | self._READ_FILE | self._WRITE_FILE | ((1 << 14) if abi >= 3 else 0)
        read = self._EXECUTE | self._READ_FILE | self._READ_DIR
        for paths, rights in ((self.readable, read), (self.writable, handled)):
            for path in paths:
                try:
                    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue  # a folder this machine does not have
                try:
                    allowed = rights if os.path.isdir(path) else rights & file_rights
                    rule = ctypes.create_string_buffer(struct.pack("=Qi", allowed, fd))
                    if libc.syscall(self._ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(1), rule, ctypes.c_uint32(0)) < 0:
                        raise OSError(ctypes.get_errno(), f"cannot add a Landlock rule for {path}")
                finally:
                    os.close(fd)
        prctl, syscall = libc.prctl, libc.syscall
        message = b"labkit: the compile jail (Landlock) could not be entered\n"

        def enter() -> None:  # in the child, between fork and exec: C calls only
            if prctl(self._PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or syscall(self._RESTRICT_SELF, ruleset, 0) != 0:
                os.write(2, message)
                os._exit(126)

        enter.ruleset = ruleset  # type: ignore[attr-defined]  # closed by run() once the child started
        return enter


# The runs in progress (run id -> child), so that an interrupted grader can end them all,
# also those that other threads of it started.
_ACTIVE: dict[str, subprocess.Popen[bytes]] = {}
_ACTIVE_LOCK = threading.Lock()


def cancel_all() -> None:
    """Ends every run in progress and everything it started (Ctrl-C while labs are tested
    side by side): politely, then by force."""
    with _ACTIVE_LOCK:
        active = list(_ACTIVE.items())
    for run_id, child in active:
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    for run_id, child in active:
        end_marked(run_id)
        _kill_group(child)


class Gate:
    """The go signal of a program that sets up first and must then wait for its turn (a
    bench: its set-up may share the GPU with tests, its timing may not).

    One end of a socket pair goes to the child (`child_fd`, passed as `--gate-fd N`); the
    child writes b"r" once set up and blocks until it reads b"g". `open()` sends the go,
    `close()` without it makes the child stop. A run with a gate counts its timeout from
    the go, and waits at most `max_wait_s` for it."""

    def __init__(self, max_wait_s: float = 3600.0) -> None:
        self._ours, self._theirs = socket.socketpair()
        self.max_wait_s = max_wait_s
        self.opened = threading.Event()
        self.ready = False

    @property
    def child_fd(self) -> int:
        """The descriptor number the child gets (the same number in the child)."""
        return self._theirs.fileno()

    def started(self) -> None:
        """The child holds its end now: drop ours, so that its exit reads as end of file."""
        self._theirs.close()

    def wait_ready(self, timeout: float) -> bool:
        """Whether the child said it is set up within `timeout` s (False: it ended first,
        or is still setting up)."""
        if self.ready:
            return True
        try:
            self._ours.settimeout(max(0.001, timeout))
            self.ready = self._ours.recv(1) == b"r"
        except OSError:  # includes the timeout
            self.ready = False
        return self.ready

    def open(self) -> None:
        """Lets the child go on (its timeout starts now)."""
        try:
            self._ours.sendall(b"g")
        except OSError:
            pass  # it has ended already: its result says why
        self.opened.set()

    def close(self) -> None:
        """No go: a child still waiting stops (exit 4). Idempotent."""
        for end in (self._ours, self._theirs):
            try:
                end.close()
            except OSError:
                pass
        self.opened.set()


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
    limits: Limits | None = None,
    line_callback: Callable[[str], None] | None = None,
    gate: Gate | None = None,
) -> ProcResult:
    """Run `cmd` (never through a shell) and wait at most `timeout` seconds.

    `env` holds overrides on top of the grader's own environment. When the run ends (by
    itself, on timeout, or because the grader is interrupted) every process it started
    is ended, so a hung GPU program and anything it spawned are gone when this returns.
    `line_callback` is called with each line of stdout as it arrives (progress). With a
    `gate` the child gets its end of it, and `timeout` counts from the gate's opening.
    """
    args = [str(arg) for arg in cmd]
    child_setup, enter_jail = _child_setup(limits)
    run_id = uuid.uuid4().hex
    full_env = {**os.environ, **(env or {})}
    full_env[RUN_IDS] = ":".join(filter(None, [os.environ.get(RUN_IDS, ""), run_id]))
    start = time.monotonic()
    try:
        # A new session makes the child the leader of its own process group, so
        # killpg reaches its children too, and a Ctrl-C in the terminal reaches
        # only the grader, which then cleans up below.
        child = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=full_env, cwd=cwd, start_new_session=True,
            preexec_fn=child_setup,
            pass_fds=(gate.child_fd,) if gate is not None else (),
        )
    except OSError as exc:
        raise LaunchError(f"cannot run {args[0]}: {exc.strerror or exc}") from exc
    finally:
        if gate is not None:
            gate.started()
        if enter_jail is not None:
            os.close(enter_jail.ruleset)  # type: ignore[attr-defined]
    with _ACTIVE_LOCK:
        _ACTIVE[run_id] = child
    # One thread per stream drains the pipe as fast as the child writes, keeping only
    # the head and the tail: memory stays bounded and the child never blocks.
    out, err = _Capture(cap), _Capture(cap)
    readers = [_start_reader(child.stdout, out, line_callback), _start_reader(child.stderr, err)]
    timed_out = _wait(child, run_id, timeout, gate)
    duration = time.monotonic() - start
    _drain(readers, child)
    stdout, stdout_cut = out.text()
    stderr, stderr_cut = err.text()
    return ProcResult(
        command=command_string(args, env), returncode=child.returncode, timed_out=timed_out,
        duration_s=duration, stdout=stdout, stderr=stderr,
        stdout_cut=stdout_cut, stderr_cut=stderr_cut,
    )


def _child_setup(limits: Limits | None) -> tuple[Callable[[], None] | None, Any]:
    """What the child runs before the program (the limits, then the jail), and the jail's
    entry (its ruleset is closed in the grader once the child started), or None."""
    enter_jail = limits.jail.prepare() if limits is not None and limits.jail is not None else None
    if enter_jail is not None:
        def child_setup() -> None:
            limits.apply()
            enter_jail()
        return child_setup, enter_jail
    return (limits.apply if limits is not None else None), None


def _wait(child: subprocess.Popen[bytes], run_id: str, timeout: float, gate: Gate | None) -> bool:
    """Waits for the child (with a gate: for its opening first, then `timeout`); whether it
    timed out. Every process of its group is ended afterwards, and on any exception."""
    timed_out = False
    try:
        if gate is not None:
            # Set-up is not timed out here (it waits for its turn); only for max_wait_s.
            waited = time.monotonic()
            while not gate.opened.wait(0.05):
                if child.poll() is not None or time.monotonic() - waited > gate.max_wait_s:
                    break
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    except BaseException:
        _kill_group(child)
        end_marked(run_id)
        with _ACTIVE_LOCK:
            _ACTIVE.pop(run_id, None)
        raise
    # Also after a normal exit: a background child left in the group (a helper
    # the test spawned) must not outlive the grading of this lab.
    _kill_group(child)
    if gate is not None:
        gate.close()  # nothing more to say to it
    end_marked(run_id)
    with _ACTIVE_LOCK:
        _ACTIVE.pop(run_id, None)
    return timed_out


def _drain(readers: list[threading.Thread], child: subprocess.Popen[bytes]) -> None:
    """Lets the readers finish the child's output."""
    for reader, stream in zip(readers, (child.stdout, child.stderr)):
        # A process that left the group (setsid) may still hold the pipe open: do not
        # wait for it forever; its further output is simply not read.
        reader.join(timeout=READER_GRACE_S)
        if not reader.is_alive():
            stream.close()


def _kill_group(child: subprocess.Popen[bytes]) -> None:
    # The group id is the child's pid (start_new_session). While the group has a
    # member the kernel does not hand that id to another process.
    try:
        os.killpg(child.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty
    child.wait()


def marked_processes(run_id: str) -> list[int]:
    """The processes whose environment carries `run_id` (those of one run)."""
    mark = f"{RUN_IDS}=".encode()
    found = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue  # gone, or not ours to read
        for item in environ.split(b"\0"):
            if item.startswith(mark) and run_id.encode() in item[len(mark):].split(b":"):
                found.append(int(entry))
                break
    return found


def end_marked(run_id: str, polite_s: float = POLITE_S) -> int:
    """Ends every process of run `run_id`: SIGTERM, then SIGKILL for the ones still there.
    Returns how many were found."""
    victims = marked_processes(run_id)
    if not victims:
        return 0
    for pid in victims:
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + polite_s
    while time.monotonic() < deadline:
        victims = [pid for pid in victims if _alive(pid)]
        if not victims:
            return 0
        time.sleep(0.05)
    for pid in marked_processes(run_id):
        _signal(pid, signal.SIGKILL)
    return len(victims)


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[-1].split()[0]
        return state != b"Z"
    except (OSError, IndexError):
        return False


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


def _start_reader(stream: BinaryIO, capture: _Capture,
                  line_callback: Callable[[str], None] | None = None) -> threading.Thread:
    def drain() -> None:
        fd = stream.fileno()
        pending = b""
        while True:
            try:
                chunk = os.read(fd, READ_CHUNK)
            except OSError:
                return
            if not chunk:
                return
            capture.add(chunk)
            if line_callback is not None:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                pending = pending[-4096:]  # a line without end is not kept whole
                for line in lines:
                    try:
                        line_callback(line.decode(errors="replace"))
                    except Exception:  # a progress display must not stop the drain
                        pass

    thread = threading.Thread(target=drain, name="grader-output-reader", daemon=True)
    thread.start()
    return thread


def is_executable(path: Path) -> bool:
    """Whether `path` is a file this user may run."""
    return path.is_file() and os.access(path, os.X_OK)
