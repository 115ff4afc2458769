"""Tests of grader.proc: timeouts that leave no process, capped output, env and cwd, and
the gate that holds a set-up program until its turn."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import sys
import tempfile
import time
import unittest
from pathlib import Path

from grader import proc
from grader.tests.helpers import wait_gone, write_script


class ProcTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.dir = Path(tmp.name)

    def test_output_env_cwd_and_command(self):
        result = proc.run([sys.executable, "-c", "import os, sys; print(os.environ['LABKIT_X'], os.getcwd());"
                           "print('err', file=sys.stderr); sys.exit(3)"],
                          timeout=20, env={"LABKIT_X": "a b"}, cwd=self.dir)
        self.assertEqual(result.returncode, 3)
        self.assertIsNone(result.signal)
        self.assertFalse(result.timed_out)
        self.assertEqual(result.stdout.split(), ["a", "b", str(self.dir.resolve())])
        self.assertEqual(result.stderr, "err\n")
        self.assertTrue(result.command.startswith("LABKIT_X='a b' "), result.command)
        self.assertIn("-c 'import os", result.command)  # shlex-quoted, copy-pasteable

    # A hung child and its own children are killed at the timeout.
    def test_timeout_kills_the_process_group(self):
        pid_file = self.dir / "pids"
        script = write_script(self.dir / "hang", f"""
            import os, subprocess, sys, time
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
            open({str(pid_file)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
            print("started", flush=True)
            time.sleep(600)
        """)
        start = time.monotonic()
        result = proc.run([script], timeout=2)
        self.assertLess(time.monotonic() - start, 10)
        self.assertTrue(result.timed_out)
        self.assertEqual(result.signal_name, "SIGKILL")
        self.assertEqual(result.stdout, "started\n")  # output up to the kill is kept
        for pid in map(int, pid_file.read_text().split()):
            self.assertTrue(wait_gone(pid), f"process {pid} survived the timeout")

    def test_signal(self):
        result = proc.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                          timeout=20)
        self.assertEqual((result.signal, result.signal_name), (11, "SIGSEGV"))

    # Megabytes of output keep only head and tail, and say how much was cut.
    def test_output_is_capped(self):
        result = proc.run([sys.executable, "-c", "import sys; sys.stdout.write('h' * 100000 + 'x' * 5000000 + 'TAIL')"],
                          timeout=20)
        self.assertEqual(result.stdout_cut, 5100004 - 2 * proc.CAP_BYTES)
        self.assertLess(len(result.stdout), 2 * proc.CAP_BYTES + 200)
        self.assertTrue(result.stdout.startswith("h" * 1000))
        self.assertTrue(result.stdout.endswith("TAIL"))
        self.assertIn(f"[... {result.stdout_cut} bytes of output cut by the grader ...]", result.stdout)

    # A flood of output (here 300 MB) is drained as it comes: nothing but the head and
    # the tail is kept, in memory or on disk, and the child never blocks.
    def test_flood_is_drained_and_capped(self):
        code = "import sys\nchunk = b'y' * (1 << 20)\nfor _ in range(300): sys.stdout.buffer.write(chunk)\nprint('END')"
        start = time.monotonic()
        result = proc.run([sys.executable, "-c", code], timeout=60)
        self.assertFalse(result.timed_out)
        self.assertLess(time.monotonic() - start, 30)
        self.assertEqual(result.stdout_cut, 300 * (1 << 20) + 4 - 2 * proc.CAP_BYTES)
        self.assertTrue(result.stdout.endswith("END\n"))
        self.assertLess(len(result.stdout), 2 * proc.CAP_BYTES + 200)

    # A grandchild that left the process group (setsid) keeps the pipe open: the run
    # still returns soon after the child itself ends.
    def test_escaped_grandchild_does_not_block(self):
        pid_file = self.dir / "pid"
        script = write_script(self.dir / "escape", f"""
            import subprocess, sys
            child = subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(30)"])
            open({str(pid_file)!r}, "w").write(str(child.pid))
            print("parent done", flush=True)
        """)
        start = time.monotonic()
        result = proc.run([script], timeout=20)
        # Returned after the reader's grace period, well before the 20 s timeout and the
        # grandchild's 30 s sleep (the margin is wide: busy machines start Python slowly).
        self.assertLess(time.monotonic() - start, 19)
        self.assertEqual(result.returncode, 0)
        self.assertIn("parent done", result.stdout)
        try:
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the test's own stray process
        except (OSError, ValueError):
            pass

    # Bytes that are not UTF-8 are replaced, not fatal.
    def test_undecodable_output(self):
        result = proc.run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'ok \\xff\\xfe')"], timeout=20)
        self.assertTrue(result.stdout.startswith("ok "))

    def test_missing_program(self):
        with self.assertRaises(proc.LaunchError) as caught:
            proc.run([self.dir / "missing"], timeout=5)
        self.assertIn("cannot run", str(caught.exception))

    def test_output_tail(self):
        result = proc.ProcResult("c", 1, False, 0.0, "\n".join(map(str, range(100))), "bad\n")
        tail = result.output_tail(lines=3)
        self.assertIn("97\n98\n99", tail)
        self.assertNotIn("96", tail)
        self.assertIn("bad", tail)


# A child that sets up (sleeps), says it is ready on its gate, waits for the go, then
# works for a moment. It exits 4 when the gate closes without a go.
GATED_CHILD = """
import os, sys, time
fd = int(sys.argv[1])
time.sleep(float(sys.argv[2]))
os.write(fd, b"r")
go = os.read(fd, 1)
if go != b"g":
    print("stopped at the gate", flush=True)
    sys.exit(4)
time.sleep(float(sys.argv[3]))
print("timed", flush=True)
"""


class GateTest(unittest.TestCase):
    def start(self, gate: proc.Gate, setup_s: float, work_s: float, timeout: float):
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.addCleanup(pool.shutdown)
        return pool.submit(proc.run, [sys.executable, "-c", GATED_CHILD, str(gate.child_fd), str(setup_s),
                                      str(work_s)], timeout=timeout, gate=gate)

    # Ready once set up; nothing happens before the go; the timeout counts from the go
    # (set-up 0.6 s + waiting would exceed 0.5 s, the work alone does not).
    def test_waits_for_the_go_and_times_out_from_it(self):
        gate = proc.Gate()
        run = self.start(gate, setup_s=0.6, work_s=0.1, timeout=0.5)
        self.assertFalse(gate.wait_ready(0.05), "ready before its set-up ended")
        self.assertTrue(gate.wait_ready(10))
        time.sleep(0.3)
        self.assertFalse(run.done(), "the child went on without its go")
        gate.open()
        result = run.result(timeout=10)
        self.assertFalse(result.timed_out)
        self.assertEqual((result.returncode, result.stdout), (0, "timed\n"))

    # Closed without a go: the child stops by itself (exit 4), and the run returns.
    def test_closed_gate_stops_the_child(self):
        gate = proc.Gate()
        run = self.start(gate, setup_s=0.0, work_s=0.0, timeout=5)
        self.assertTrue(gate.wait_ready(10))
        gate.close()
        result = run.result(timeout=10)
        self.assertEqual((result.returncode, result.stdout), (4, "stopped at the gate\n"))

    # A child that ends during its set-up is never "ready", and waiting for it does not hang.
    def test_child_that_ends_first(self):
        gate = proc.Gate()
        result = proc.run([sys.executable, "-c", "import sys; sys.exit(3)"], timeout=5, gate=gate)
        self.assertEqual(result.returncode, 3)
        self.assertFalse(gate.wait_ready(1))
        gate.open()  # no one to hear it: no error
        gate.close()

    # The gate's descriptor reaches only the child it was made for.
    def test_descriptor_not_inherited_elsewhere(self):
        gate = proc.Gate()
        other = proc.run([sys.executable, "-c", f"import os; os.fstat({gate.child_fd}); print('open')"], timeout=5)
        self.assertNotEqual(other.returncode, 0, "an unrelated child inherited the gate")
        gate.close()


@unittest.skipUnless(proc.Jail.abi() >= 1, "this kernel has no Landlock")
class JailTest(unittest.TestCase):
    """proc.Jail: the kernel lets a run read and write only what the jail names."""

    def test_reads_and_writes_only_where_allowed(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(tmp)
            (base / "open").mkdir()
            (base / "open" / "a.txt").write_text("readable")
            (base / "closed.txt").write_text("secret")
            (base / "out").mkdir()
            jail = proc.Jail(["/usr", "/lib", "/lib64", "/bin", "/etc/ld.so.cache", base / "open"], [base / "out"])
            limits = proc.Limits(jail=jail)
            ok = proc.run(["/bin/cat", str(base / "open" / "a.txt")], timeout=10, limits=limits)
            self.assertEqual((ok.returncode, ok.stdout), (0, "readable"))
            denied = proc.run(["/bin/cat", str(base / "closed.txt")], timeout=10, limits=limits)
            self.assertNotEqual(denied.returncode, 0)
            self.assertIn("Permission denied", denied.stderr)
            wrote = proc.run(["/bin/sh", "-c", f"echo x > {base / 'out' / 'x'}; echo y > {base / 'open' / 'y'}"],
                             timeout=10, limits=limits)
            self.assertTrue((base / "out" / "x").is_file())
            self.assertFalse((base / "open" / "y").exists())
            self.assertIn("Permission denied", wrote.stderr)
            # The grader itself is not jailed.
            self.assertEqual((base / "closed.txt").read_text(), "secret")


if __name__ == "__main__":
    unittest.main()
