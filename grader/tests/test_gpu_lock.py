"""The GPU's lock between grader processes (gpu_lock.py): its semantics with real processes
and threads, its timeout, what a hostile lock folder costs, the config keys, and how a
grading run takes it (SHARED for the tests, then EXCLUSIVE for each lab's timing)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from pathlib import Path
from unittest import mock

from grader import config, gpu, gpu_lock
from grader.tests.helpers import KIT, fake_bench, fake_gtest, write_script
from grader.tests.test_batch import BatchTestCase
from grader.tests.test_cli import LARGE_GPU_SMI, CliTestCase

KEY = "GPU-5c0d1e2f-test"

# One process holding the lock: it logs "<name> <event> <monotonic time>" (asking, waiting,
# got or missed, released) and holds until its release file exists.
HOLDER = """
    import os, sys, time
    sys.path.insert(0, sys.argv[1])
    from pathlib import Path
    from grader import gpu_lock
    folder, events, name, mode, timeout, release = sys.argv[2:8]
    def event(what):
        with open(events, "a") as f:
            f.write(f"{name} {what} {time.monotonic()}\\n")
    lock = gpu_lock.GpuLock(Path(folder), sys.argv[8], float(timeout))
    event("asking")
    with getattr(lock, mode)(on_wait=lambda: event("waiting")) as hold:
        event("got" if hold.taken else "missed")
        end = time.monotonic() + 60
        while not os.path.exists(release) and time.monotonic() < end:
            time.sleep(0.01)
    event("released")
"""


def probe(path: Path, operation: int) -> bool:
    """Whether another open file description could take `path` with `operation` now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


class LockTestCase(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.folder = self.tmp / "locks"
        self.events = self.tmp / "events"
        self.holder = write_script(self.tmp / "holder.py", HOLDER)
        self.procs: dict[str, subprocess.Popen] = {}

    def lock(self, timeout: float = 30) -> gpu_lock.GpuLock:
        return gpu_lock.GpuLock(self.folder, KEY, timeout)

    def start(self, name: str, mode: str, timeout: float = 30) -> None:
        self.procs[name] = subprocess.Popen(
            [sys.executable, str(self.holder), str(KIT), str(self.folder), str(self.events), name, mode, str(timeout),
             str(self.tmp / f"release-{name}"), KEY])
        self.addCleanup(self._end, name)

    def _end(self, name: str) -> None:
        process = self.procs[name]
        if process.poll() is None:
            process.kill()
        process.wait(10)

    def release(self, name: str) -> None:
        (self.tmp / f"release-{name}").touch()
        self.wait_for(name, "released")
        self.assertEqual(self.procs[name].wait(10), 0)

    def seen(self) -> dict[tuple[str, str], float]:
        if not self.events.exists():
            return {}
        return {(n, what): float(when) for n, what, when in (line.split() for line in self.events.read_text().splitlines())}

    def wait_for(self, name: str, what: str, seconds: float = 15) -> float:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if (name, what) in self.seen():
                return self.seen()[(name, what)]
            time.sleep(0.02)
        self.fail(f"{name} never logged {what!r}: {self.seen()}")

    def assertStillWaiting(self, name: str, settle: float = 0.4) -> None:
        time.sleep(settle)
        self.assertIn((name, "waiting"), self.seen())
        self.assertNotIn((name, "got"), self.seen(), f"{name} got the lock too early")


class ProcessesTest(LockTestCase):
    # Two graders' tests share the GPU: both hold SHARED at once.
    def test_two_shared_holders_at_once(self):
        self.start("a", "shared")
        self.start("b", "shared")
        self.wait_for("a", "got")
        self.wait_for("b", "got")
        self.assertNotIn(("a", "released"), self.seen())
        self.release("a")
        self.release("b")

    # A timing waits for the tests of other graders to end, and keeps new tests out.
    def test_exclusive_waits_for_shared_and_excludes_them(self):
        self.start("tests", "shared")
        self.wait_for("tests", "got")
        self.start("timing", "exclusive")
        self.wait_for("timing", "waiting")
        self.assertStillWaiting("timing")
        self.release("tests")
        got = self.wait_for("timing", "got")
        self.assertGreater(got, self.seen()[("tests", "released")] - 0.5)
        self.start("later", "shared")
        self.wait_for("later", "waiting")
        self.assertStillWaiting("later")
        self.start("other", "exclusive")
        self.wait_for("other", "waiting")
        self.assertStillWaiting("other")
        self.release("timing")
        self.release(self.next_holder("later", "other"))
        self.release(self.next_holder("later", "other"))

    def next_holder(self, *names: str) -> str:
        """The one of `names` that holds the lock now (waits until one does)."""
        end = time.monotonic() + 15
        while time.monotonic() < end:
            seen = self.seen()
            holding = [n for n in names if (n, "got") in seen and (n, "released") not in seen]
            if holding:
                return holding[0]
            time.sleep(0.02)
        self.fail(f"none of {names} got the lock: {self.seen()}")

    # Writer preference: a waiting timing blocks new test phases even while only test phases
    # hold the lock, so a stream of tests never starves a timing.
    def test_waiting_exclusive_blocks_new_shared(self):
        self.start("tests", "shared")
        self.wait_for("tests", "got")
        self.start("timing", "exclusive")
        self.wait_for("timing", "waiting")
        self.start("more-tests", "shared")
        self.wait_for("more-tests", "waiting")
        self.assertStillWaiting("more-tests")
        self.release("tests")
        self.wait_for("timing", "got")
        self.assertStillWaiting("more-tests")
        self.release("timing")
        self.assertGreater(self.wait_for("more-tests", "got"), self.seen()[("timing", "released")] - 0.5)
        self.release("more-tests")

    # Past its timeout a grader goes on without the lock: "missed", never a hang.
    def test_timeout_goes_on_without_the_lock(self):
        self.start("timing", "exclusive")
        self.wait_for("timing", "got")
        for mode in ("exclusive", "shared"):
            self.start(mode, mode, timeout=0.5)
            asked = self.wait_for(mode, "asking")
            missed = self.wait_for(mode, "missed")
            self.assertGreaterEqual(missed - asked, 0.45)
            self.assertLess(missed - asked, 5)
            self.release(mode)
        with self.lock(timeout=0.3).exclusive() as hold:
            self.assertFalse(hold.taken)
            self.assertIn("waited 0.3 s (gpu_lock_timeout_s)", hold.missed)
            self.assertIn("timing may have shared the GPU", gpu_lock.alone_note(hold, timed=True))
            self.assertIn("profile may have shared the GPU", gpu_lock.alone_note(hold, timed=False))
        self.release("timing")

    # The kernel ends the locks of a process that dies, however it dies.
    def test_a_killed_holder_frees_the_lock(self):
        self.start("timing", "exclusive")
        self.wait_for("timing", "got")
        self.procs["timing"].send_signal(signal.SIGKILL)
        self.procs["timing"].wait(10)
        with self.lock(timeout=5).exclusive() as hold:
            self.assertTrue(hold.taken, hold.missed)


class ThreadsTest(LockTestCase):
    # The threads of one grader share one SHARED lock; the flock is held until the last ends.
    def test_shared_by_threads(self):
        lock = self.lock()
        first = lock.acquire(gpu_lock.SHARED)
        got: list[gpu_lock.Hold] = []
        thread = threading.Thread(target=lambda: got.append(lock.acquire(gpu_lock.SHARED)))
        thread.start()
        thread.join(10)
        self.assertTrue(first.taken and got[0].taken)
        self.assertFalse(probe(lock.path, fcntl.LOCK_EX))
        self.assertTrue(probe(lock.path, fcntl.LOCK_SH))
        lock.release(first)
        self.assertFalse(probe(lock.path, fcntl.LOCK_EX), "released while a thread still held it")
        lock.release(got[0])
        self.assertTrue(probe(lock.path, fcntl.LOCK_EX))

    # A thread's EXCLUSIVE waits for the SHARED hold of another thread of the same process.
    def test_exclusive_waits_for_another_threads_shared(self):
        lock = self.lock()
        shared = lock.acquire(gpu_lock.SHARED)
        done = threading.Event()

        def timing() -> None:
            with lock.exclusive() as hold:
                self.assertTrue(hold.taken)
                self.assertFalse(probe(lock.path, fcntl.LOCK_SH))
            done.set()

        thread = threading.Thread(target=timing)
        thread.start()
        self.assertFalse(done.wait(0.4), "EXCLUSIVE while another thread held SHARED")
        lock.release(shared)
        self.assertTrue(done.wait(10))
        thread.join(10)
        self.assertTrue(probe(lock.path, fcntl.LOCK_EX))

    # EXCLUSIVE nests in the same thread (the profile inside a lab's phase two); SHARED after
    # EXCLUSIVE in the same thread is covered by it; EXCLUSIVE while holding SHARED is a bug.
    def test_nesting(self):
        lock = self.lock()
        with lock.exclusive() as outer:
            with lock.exclusive() as inner, lock.shared() as shared:
                self.assertTrue(outer.taken and inner.taken and shared.taken)
            self.assertFalse(probe(lock.path, fcntl.LOCK_SH), "the inner holds released the outer one")
        self.assertTrue(probe(lock.path, fcntl.LOCK_EX))
        with lock.shared():
            with self.assertRaisesRegex(RuntimeError, "release the SHARED hold first"):
                with lock.exclusive():
                    pass
        self.assertTrue(probe(lock.path, fcntl.LOCK_EX))

    # A thread that times out waiting for another thread holds nothing; the other's hold stays.
    def test_timeout_between_threads(self):
        lock = self.lock()
        with lock.exclusive():
            got: list[gpu_lock.Hold] = []
            impatient = gpu_lock.GpuLock(self.folder, KEY, 0.3)
            thread = threading.Thread(target=lambda: got.append(impatient.acquire(gpu_lock.SHARED)))
            thread.start()
            thread.join(10)
            self.assertFalse(got[0].taken)
            self.assertIn("gpu_lock_timeout_s", got[0].missed)
            impatient.release(got[0])
            self.assertFalse(probe(lock.path, fcntl.LOCK_SH), "a timed-out hold released the holder's lock")
        self.assertTrue(probe(lock.path, fcntl.LOCK_EX))


class FolderTest(LockTestCase):
    # The folder every user's graders share: 1777, files 0666, whatever the umask.
    def test_modes(self):
        old = os.umask(0o077)
        try:
            with self.lock().shared() as hold:
                self.assertTrue(hold.taken, hold.missed)
        finally:
            os.umask(old)
        self.assertEqual(stat.S_IMODE(self.folder.stat().st_mode), 0o1777)
        for name in (f"{KEY}.lock", f"{KEY}.turnstile"):
            self.assertEqual(stat.S_IMODE((self.folder / name).stat().st_mode), 0o666, name)

    # A lock file someone made a symlink (to a file, or to nothing) is not followed: no lock,
    # a note, and the target is neither created nor touched.
    def test_symlinks_are_not_followed(self):
        self.folder.mkdir()
        target = self.tmp / "precious"
        target.write_text("keep me")
        os.symlink(target, self.folder / f"{KEY}.turnstile")
        os.symlink(self.tmp / "created", self.folder / f"{KEY}.lock")
        with self.lock().shared() as hold:
            self.assertFalse(hold.taken)
            self.assertIn("could not be used", hold.missed)
        self.assertEqual(target.read_text(), "keep me")
        (self.folder / f"{KEY}.turnstile").unlink()
        with self.lock().exclusive() as hold:
            self.assertFalse(hold.taken)
            self.assertIn("could not be used", hold.missed)
        self.assertFalse((self.tmp / "created").exists())

    # A FIFO or a folder in the lock file's place: refused at once, no hang.
    def test_not_a_regular_file(self):
        self.folder.mkdir()
        os.mkfifo(self.folder / f"{KEY}.turnstile")
        (self.folder / f"{KEY}.lock").mkdir()
        started = time.monotonic()
        with self.lock().exclusive() as hold:
            self.assertIn("is not a regular file", hold.missed)
        (self.folder / f"{KEY}.turnstile").unlink()
        with self.lock().exclusive() as hold:
            self.assertIn("is not a regular file", hold.missed)
        self.assertLess(time.monotonic() - started, 5)

    # A lock folder that is a symlink (someone made it first, pointing elsewhere): no lock.
    def test_folder_symlink(self):
        elsewhere = self.tmp / "elsewhere"
        elsewhere.mkdir()
        os.symlink(elsewhere, self.folder)
        with self.lock().shared() as hold:
            self.assertFalse(hold.taken)
            self.assertIn("is not a folder", hold.missed)
        self.assertEqual(list(elsewhere.iterdir()), [])

    # An existing lock file is only read: its content stays (it could be anyone's file).
    def test_existing_file_is_never_written(self):
        self.folder.mkdir()
        (self.folder / f"{KEY}.lock").write_text("someone's")
        with self.lock().exclusive() as hold:
            self.assertTrue(hold.taken)
        self.assertEqual((self.folder / f"{KEY}.lock").read_text(), "someone's")


class SettingsTest(unittest.TestCase):
    H100 = gpu.Device("0", "NVIDIA H100 80GB HBM3", "9.0", 81559, "GPU-5c0d")

    # The lock of the first visible GPU, by its UUID; none without a GPU, a UUID, or with "off".
    def test_for_devices(self):
        settings = config.from_dict({}, None).grader
        lock = gpu_lock.for_devices(settings, [self.H100, gpu.Device("1", "NVIDIA H200", "9.0", 143771, "GPU-99")])
        self.assertIsInstance(lock, gpu_lock.GpuLock)
        self.assertEqual(lock.path, gpu_lock.default_folder() / "GPU-5c0d.lock")
        self.assertEqual(lock.timeout_s, 3600)
        self.assertIsInstance(gpu_lock.for_devices(settings, []), gpu_lock.NoLock)
        self.assertIsInstance(gpu_lock.for_devices(settings, [gpu.Device("0", "GPU", "9.0", 1, "")]), gpu_lock.NoLock)
        off = config.from_dict({"grader": {"gpu_lock": "off"}}, None).grader
        self.assertIsInstance(gpu_lock.for_devices(off, [self.H100]), gpu_lock.NoLock)
        own = config.from_dict({"grader": {"gpu_lock_dir": "/srv/locks", "gpu_lock_timeout_s": 60}}, None).grader
        lock = gpu_lock.for_devices(own, [gpu.Device("0", "GPU", "9.0", 1, "GPU-a/../../etc/x")])
        self.assertEqual(lock.path.parent, Path("/srv/locks"))  # a UUID cannot name another folder
        self.assertEqual(lock.timeout_s, 60)
        with mock.patch.object(gpu, "devices") as devices:
            self.assertIsInstance(gpu_lock.for_settings(off), gpu_lock.NoLock)
            devices.assert_not_called()

    def test_no_lock_grants_every_hold(self):
        lock = gpu_lock.NoLock()
        with lock.shared() as shared, lock.exclusive() as alone:
            self.assertEqual((shared.taken, shared.missed, alone.taken, alone.missed), (False, "", False, ""))
        self.assertEqual(gpu_lock.alone_note(alone, timed=True), "")

    def test_config_validation(self):
        for key, value, expected in (("gpu_lock", True, '"auto" or "off"'), ("gpu_lock", "on", '"auto" or "off"'),
                                     ("gpu_lock_dir", "locks", "an absolute path"),
                                     ("gpu_lock_dir", 3, "an absolute path"),
                                     ("gpu_lock_timeout_s", 0, "a number of seconds > 0"),
                                     ("gpu_lock_timeout_s", True, "a number of seconds > 0")):
            with self.subTest(key=key, value=value):
                with self.assertRaisesRegex(config.ConfigError, f"gpu_lock.*expected {expected}"):
                    config.from_dict({"grader": {key: value}}, None)
        good = config.from_dict({"grader": {"gpu_lock": "off", "gpu_lock_dir": "/var/lock/labkit",
                                            "gpu_lock_timeout_s": 1.5}}, None).grader
        self.assertEqual((good["gpu_lock"], good["gpu_lock_dir"], good["gpu_lock_timeout_s"]),
                         ("off", "/var/lock/labkit", 1.5))
        self.assertEqual(config.DEFAULTS["grader"]["gpu_lock"], "auto")


# A gated fake bench that checks, when set up and when timed, whether the GPU's lock could
# be had by another grader: SHARED and EXCLUSIVE each (LOCK_PROBE names the lock file).
PROBING_BENCH_HEAD = """
import fcntl, os, sys, time
def could(operation):
    fd = os.open(os.environ["LOCK_PROBE"], os.O_RDONLY)
    try:
        fcntl.flock(fd, operation | fcntl.LOCK_NB)
        return "yes"
    except BlockingIOError:
        return "no"
    finally:
        os.close(fd)
def stamp(what):
    with open(os.environ["SPANS"], "a") as f:
        f.write("%s %s %s %s\\n" % (what, time.monotonic(), could(fcntl.LOCK_SH), could(fcntl.LOCK_EX)))
stamp("setup")
gate = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--gate-fd=")), None)
if gate is not None:
    os.write(gate, b"r")
    if os.read(gate, 1) != b"g":
        sys.exit(4)
stamp("go")
"""


class GradingRunTest(CliTestCase):
    """A grading run on a GPU with a UUID: its tests hold the GPU's lock SHARED, then each
    timed lab's bench EXCLUSIVE, one after the other, never both."""

    def setUp(self) -> None:
        super().setUp()
        write_script(self.tmp / "gpu" / "nvidia-smi", LARGE_GPU_SMI)  # GPU-0, 80 GB: a bench sets up early
        os.environ["PATH"] = f"{self.tmp / 'gpu'}{os.pathsep}{os.environ['PATH']}"
        self.lock_file = self.tmp / "gpu-locks" / "GPU-0.lock"
        self.spans = self.tmp / "spans"
        os.environ["SPANS"], os.environ["LOCK_PROBE"] = str(self.spans), str(self.lock_file)

    def probing_labs(self) -> None:
        self.fake_labs(self.bin)
        probe_line = ("import fcntl, os, time\nfd = os.open(os.environ['LOCK_PROBE'], os.O_RDONLY)\n"
                      "def could(op):\n    try:\n        fcntl.flock(fd, op | fcntl.LOCK_NB)\n"
                      "        fcntl.flock(fd, fcntl.LOCK_UN)\n        return 'yes'\n"
                      "    except BlockingIOError:\n        return 'no'\n"
                      "open(os.environ['SPANS'], 'a').write('test %s %s %s\\n' % (time.monotonic(), "
                      "could(fcntl.LOCK_SH), could(fcntl.LOCK_EX)))")
        fake_gtest(self.bin / "vectorAdd_judge_test", "gtest-1.12-pass.json", "gtest-1.12-pass.stdout.txt",
                   extra=probe_line)
        bench = fake_bench(self.bin / "vectorAdd_judge_bench", "bench-ok.json", argv_log=self.bench_log)
        head, body = bench.read_text().split("\n", 1)
        bench.write_text(head + "\n" + textwrap.dedent(PROBING_BENCH_HEAD) + body)

    def spans_seen(self) -> dict[str, tuple[float, str, str]]:
        return {what: (float(when), shared, alone)
                for what, when, shared, alone in (line.split() for line in self.spans.read_text().splitlines())}

    # The lock files' use seen from outside, by the judge programs themselves: while the
    # tests ran and the bench set up, another grader could test (SHARED) but not time; while
    # the bench was timed, another grader could do neither.
    def test_tests_shared_then_timing_exclusive(self):
        self.probing_labs()
        code, out, err = self.main("--no-build", "--seed", "5", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        spans = self.spans_seen()
        self.assertEqual(spans["test"][1:], ("yes", "no"))
        self.assertEqual(spans["setup"][1:], ("yes", "no"))
        self.assertEqual(spans["go"][1:], ("no", "no"))
        self.assertTrue(probe(self.lock_file, fcntl.LOCK_EX), "the run ended holding the lock")
        lab = self.report()["labs"][0]
        self.assertEqual((lab["performance"]["points"], lab["performance"]["flags"]), (30, []))
        self.assertFalse([n for n in lab["notes"] if "shared the GPU" in n])

    # The order of the holds, recorded by a stand-in lock: SHARED over the tests, released,
    # then EXCLUSIVE for the one lab that is timed (the others failed their tests), never one
    # inside the other.
    def test_order_of_the_holds(self):
        self.fake_labs(self.bin)
        calls: list[str] = []

        class Recorder(gpu_lock.NoLock):
            enabled = True

            @contextlib.contextmanager
            def shared(self, on_wait=None):
                yield from self._hold(gpu_lock.SHARED)

            @contextlib.contextmanager
            def exclusive(self, on_wait=None):
                yield from self._hold(gpu_lock.EXCLUSIVE)

            def _hold(self, mode):
                if calls and not calls[-1].startswith("end"):
                    raise AssertionError(f"{mode} asked for inside {calls[-1]}")
                calls.append(mode)
                try:
                    yield gpu_lock.Hold(mode, taken=True)
                finally:
                    calls.append(f"end {mode}")

        with mock.patch.object(gpu_lock, "for_devices", return_value=Recorder()) as made:
            code, out, err = self.main("--no-build", "--seed", "5")
        self.assertEqual(code, 1, out + err)  # reduction PARTIAL, scan CRASH
        self.assertEqual(made.call_args.args[1][0].uuid, "GPU-0")
        self.assertEqual(calls, ["shared", "end shared", "exclusive", "end exclusive"])
        self.assertEqual([lab["lab"] for lab in self.report()["labs"] if lab["bench_runs"]], ["vectorAdd"])

    # Another grader holds the GPU past gpu_lock_timeout_s: the run goes on, and its report
    # says the tests did not wait and the timing may have shared the GPU (flag shared_gpu).
    def test_timeout_is_noted_not_fatal(self):
        self.probing_labs()
        holder = gpu_lock.GpuLock(self.lock_file.parent, "GPU-0", 5)
        release = self.tmp / "release"
        script = write_script(self.tmp / "hold.py", f"""
            import os, sys, time
            sys.path.insert(0, {str(KIT)!r})
            from pathlib import Path
            from grader import gpu_lock
            with gpu_lock.GpuLock(Path({str(holder.folder)!r}), "GPU-0", 5).exclusive() as hold:
                print("held" if hold.taken else hold.missed, flush=True)
                end = time.monotonic() + 60
                while not os.path.exists({str(release)!r}) and time.monotonic() < end:
                    time.sleep(0.01)
        """)
        other = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (release.touch(), other.wait(10), other.stdout.close()))
        self.assertEqual(other.stdout.readline().strip(), "held")
        course = self.tmp / "course.toml"
        course.write_text(f'[grader]\ngpu_lock_timeout_s = 0.5\ngpu_lock_dir = "{self.lock_file.parent}"\n')
        started = time.monotonic()
        code, out, err = self.main("--no-build", "--config", str(course), "--seed", "5", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertLess(time.monotonic() - started, 20)
        self.assertIn(gpu_lock_wait_line(), out)
        report = self.report()
        self.assertTrue(any("the tests did not wait for other graders' timing" in n for n in report["notes"]),
                        report["notes"])
        lab = report["labs"][0]
        self.assertEqual(lab["performance"]["points"], 30)
        self.assertEqual(lab["performance"]["flags"], [gpu_lock.SHARED_GPU_FLAG])
        self.assertTrue(any("timing may have shared the GPU" in n and "grade it again" in n for n in lab["notes"]),
                        lab["notes"])
        release.touch()
        other.wait(10)


def gpu_lock_wait_line() -> str:
    from grader import grade
    return grade.WAITING_FOR_TIMING


class BatchLineTest(BatchTestCase):
    # More jobs than GPUs: the opening line says the graders take turns for timing.
    def test_opening_line(self):
        for name in ("a", "b"):
            self.submission(name, "score 100")
        roster = self.roster([("a", "subs/a"), ("b", "subs/b")])
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--jobs", "2", "--labs", "vectorAdd")
        self.assertEqual(code, 0, out)
        self.assertIn("2 at a time on GPU 0,", out)
        self.assertIn("graders sharing a GPU take turns for timing", out.splitlines()[0])
        code, out, _ = self.main(str(roster), "--out", str(self.tmp / "again"), "--labs", "vectorAdd")
        self.assertEqual(code, 0, out)
        self.assertNotIn("take turns", out)


if __name__ == "__main__":
    unittest.main()
