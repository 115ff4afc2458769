"""Tests of `python3 -m grader batch` (grader/instructor/batch.py) with a fake grader.

LABKIT_BATCH_GRADER replaces `python3 -m grader` by a small script that behaves as the
submission asks (its behaviour.txt): write a report, crash, or hang until stopped. It
records when it checked the kit build, compiled and graded (FAKE_CALLS.spans), so the
tests can see what ran side by side. Whether the machine has a GPU is each test's choice
(gpu.probe and gpu.devices mocked, or a fake nvidia-smi), never the host's.
"""

from __future__ import annotations

import contextlib
import csv
import inspect
import io
import json
import os
import shutil
import sys
import tempfile
import time
import unittest
from pathlib import Path
from unittest import mock

from grader import build, gpu
from grader.stages import building
from grader.instructor import batch, cores, gradebook
from grader.tests.helpers import FIXTURES, write_script

# The fake grader: the arguments batch passes, then what the submission asks for.
FAKE_GRADER = """
    import json, os, sys, time
    args = sys.argv[1:]
    opt = lambda name: args[args.index(name) + 1]
    seconds = lambda name: float(os.environ.get(name, "0"))

    def span(**what):
        open(os.environ["FAKE_CALLS"] + ".spans", "a").write(json.dumps(what) + "\\n")

    if "--build-only" in args:  # the class's kit build, or a submission's files compiled ahead
        os.makedirs(opt("--student-dir"), exist_ok=True)
        if "--submission" in args:
            who = os.path.basename(opt("--submission"))
            t0 = time.monotonic()
            time.sleep(seconds("FAKE_KIT_S"))  # Ninja in the shared kit build
            t1 = time.monotonic()
            print("compiling the student files of 2 lab(s)...", flush=True)
            own = os.path.join(opt("--submission"), "compile_s.txt")  # this submission's own compile time
            time.sleep(float(open(own).read()) if os.path.exists(own) else seconds("FAKE_COMPILE_S"))
            built = os.path.join(opt("--submission"), "built.txt")  # "<lab>: built" or "<lab>: not built: why"
            if os.path.exists(built):  # the build record of each lab, as --build-only leaves it
                for line in open(built).read().splitlines():
                    lab, _, outcome = line.partition(": ")
                    os.makedirs(os.path.join(opt("--student-dir"), lab), exist_ok=True)
                    with open(os.path.join(opt("--student-dir"), lab, os.environ["FAKE_BUILD_RECORD"]), "w") as f:
                        f.write(json.dumps({"ok": outcome == "built"}))
            span(who=who, kit=[t0, t1], compile=[t1, time.monotonic()])
            open(os.environ["FAKE_CALLS"] + ".built", "a").write(who + "\\n")
        sys.exit(0)
    submission, report, build = opt("--submission"), opt("--json"), opt("--build-dir")
    valued = {"--submission", "--pristine", "--build-dir", "--json", "--secret-file", "--student-dir", "--profile-cache"}
    labs = [a for i, a in enumerate(args) if not a.startswith("--") and args[i - 1] not in valued] or ["vectorAdd", "reduction"]
    open(os.environ["FAKE_CALLS"], "a").write(os.path.basename(submission) + "\\n")
    os.makedirs(build, exist_ok=True)
    behaviour = open(os.path.join(submission, "behaviour.txt")).read().split()

    def write(points, interrupted=False, graded=None):
        graded = labs if graded is None else graded
        data = {"schema": "labkit-report", "version": 1, "seed": 4242, "interrupted": interrupted,
                "finished": "2026-11-22T10:00:00+00:00", "pristine": opt("--pristine"), "argv": args,
                "env": {k: os.environ.get(k) for k in ("CUDA_VISIBLE_DEVICES", "CMAKE_BUILD_PARALLEL_LEVEL")},
                "labs": [{"lab": lab, "status": "PASS" if points == 100 else "PARTIAL", "total": points, "max": 100}
                         for lab in graded],
                "total": points * len(graded), "max": 100 * len(labs)}
        open(report, "w").write(json.dumps(data))

    print("grading", submission, flush=True)
    t0 = time.monotonic()
    time.sleep(seconds("FAKE_GRADE_S"))
    span(who=os.path.basename(submission), gpu=os.environ.get("CUDA_VISIBLE_DEVICES"), grade=[t0, time.monotonic()])
    if behaviour[0] == "score":
        write(float(behaviour[1]))
    elif behaviour[0] == "crash":
        print("grader: error: unrecognized arguments: --submission", file=sys.stderr)
        sys.exit(2)
    elif behaviour[0] == "hang":
        try:
            time.sleep(60)
        except KeyboardInterrupt:  # what the real grader does on SIGINT: a partial report
            write(50.0, interrupted=True, graded=labs[:1])
            sys.exit(130)
"""


REAL_DEVICES, REAL_PROBE, REAL_HAS_OPTION = gpu.devices, gpu.probe, batch.grader_has_option


def fake_smi(folder: Path, indices: list[str], fails: bool = False) -> Path:
    """A fake nvidia-smi listing GPUs `indices` (-L and --query-gpu), or failing as it does
    where the driver cannot be reached."""
    return write_script(folder / "nvidia-smi", f"""
        import sys
        if {fails}:
            print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.")
            sys.exit(9)
        for i in {indices!r}:
            if "-L" in sys.argv:
                print(f"GPU {{i}}: NVIDIA H100 80GB HBM3 (UUID: GPU-{{i}})")
            else:
                print(f"{{i}}, NVIDIA H100 80GB HBM3, 9.0, 81559, GPU-{{i}}")
    """)


class BatchTestCase(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.out = self.tmp / "grades"
        self.calls = self.tmp / "calls"
        fake = write_script(self.tmp / "fake_grader.py", FAKE_GRADER)
        patcher = mock.patch.dict(os.environ, {batch.GRADER_ENV: f"{sys.executable} {fake}",
                                               "FAKE_CALLS": str(self.calls),
                                               "FAKE_BUILD_RECORD": build.StudentBuild.RECORD})
        patcher.start()
        self.addCleanup(patcher.stop)
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        os.environ.pop("CMAKE_BUILD_PARALLEL_LEVEL", None)
        os.environ.pop("LABKIT_PRISTINE", None)
        # One GPU, unless a test says otherwise; this kit's grader without --answer-feedback.
        self.mock(batch.gpu, "probe", return_value=gpu.Probe(True, devices=["GPU 0: NVIDIA H100 (UUID: GPU-a)"]))
        self.mock(batch.gpu, "devices", return_value=[gpu.Device("0", "NVIDIA H100 80GB HBM3", "9.0", 81559)])
        self.mock(batch, "grader_has_option", return_value=False)

    def mock(self, target, name: str, **kwargs):
        patcher = mock.patch.object(target, name, **kwargs)
        found = patcher.start()
        self.addCleanup(patcher.stop)
        return found

    def spans(self) -> list[dict]:
        path = Path(str(self.calls) + ".spans")
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def submission(self, name: str, behaviour: str) -> Path:
        path = self.tmp / "subs" / name
        path.mkdir(parents=True)
        (path / "behaviour.txt").write_text(behaviour)
        return path

    def roster(self, rows: list[tuple[str, str]], header: str = "student,path") -> Path:
        path = self.tmp / "roster.csv"
        path.write_text(header + "\n" + "".join(f"{s},{p}\n" for s, p in rows))
        return path

    def main(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = batch.main(list(args))
        return code, out.getvalue(), err.getvalue()

    def gradebook(self) -> list[dict[str, str]]:
        with (self.out / "gradebook.csv").open() as stream:
            return list(csv.DictReader(stream))

    def calls_made(self) -> list[str]:
        return self.calls.read_text().split() if self.calls.exists() else []


class RosterTest(BatchTestCase):
    def assertRosterError(self, text: str, fragment: str) -> None:
        path = self.tmp / "r.csv"
        path.write_text(text)
        with self.assertRaises(batch.RosterError) as caught:
            batch.read_roster(path)
        self.assertIn(fragment, str(caught.exception))

    def test_errors(self):
        with self.assertRaises(batch.RosterError) as caught:
            batch.read_roster(self.tmp / "none.csv")
        self.assertIn("not found", str(caught.exception))
        self.assertRosterError("name,repo\nalice,a\n", "the first line must be the header `student,path`")
        self.assertRosterError("", "found: an empty file")
        self.assertRosterError("student,path\nalice,a\nbob,b\nALICE,c\n", "r.csv:4: student 'ALICE' is listed twice "
                                                                           "(also on line 2)")
        self.assertRosterError("student,path\n../x,a\n", "cannot name a file")
        self.assertRosterError("student,path\n,a\n", "r.csv:2: no student name")
        self.assertRosterError("student,path\n\n", "no student rows")

    # Relative paths are relative to the roster's folder; extra columns, blank and
    # comment lines and a byte-order mark are fine; a row without a path is kept.
    def test_reading(self):
        (self.tmp / "subs").mkdir()
        path = self.tmp / "r.csv"
        path.write_text("\ufeffPath,Student,email\nsubs/a,alice,a@x\n\n# dropped,bob\n,carol,\n/abs/d,dave\n",
                        encoding="utf-8")
        entries = batch.read_roster(path)
        self.assertEqual([(e.index, e.line, e.student) for e in entries], [(0, 2, "alice"), (1, 5, "carol"), (2, 6, "dave")])
        self.assertEqual(entries[0].path, (self.tmp / "subs" / "a").resolve())
        self.assertIsNone(entries[1].path)
        self.assertEqual(entries[2].path, Path("/abs/d"))

    def test_bad_roster_is_usage_error(self):
        code, _, err = self.main(str(self.tmp / "none.csv"), "--out", str(self.out))
        self.assertEqual(code, 2)
        self.assertIn("grader batch: error: roster", err)
        self.assertEqual(len(err.strip().splitlines()), 1)


class GradeTest(BatchTestCase):
    # Three students: graded, grader crash, missing submission. Each gets a row; the
    # batch goes on; the exit status says one needs attention.
    def test_batch(self):
        self.submission("alice", "score 87.5")
        self.submission("bob", "crash")
        roster = self.roster([("alice", "subs/alice"), ("bob", "subs/bob"), ("carol", "subs/carol")])
        code, out, err = self.main(str(roster), "--out", str(self.out), "--gpus", "1")
        self.assertEqual(code, 1, out + err)
        self.assertIn("grading 3 students, 1 at a time on GPU 0,", out)
        self.assertRegex(out, r"\[\d/3\] alice: 175\.0/200 \(vectorAdd PARTIAL; reduction PARTIAL\) \(\d+ s on GPU 0\)")
        self.assertRegex(out, r"\[\d/3\] carol: missing submission \(no folder .*carol\)")
        rows = {row["student"]: row for row in self.gradebook()}
        self.assertEqual(list(rows), ["alice", "bob", "carol"])  # roster order
        self.assertEqual(list(rows["alice"]), ["student", "total", "max", "vectorAdd", "reduction", "status", "seed"])
        self.assertEqual((rows["alice"]["total"], rows["alice"]["max"], rows["alice"]["vectorAdd"], rows["alice"]["seed"]),
                         ("175.0", "200", "87.5", "4242"))
        self.assertRegex(rows["bob"]["status"], r"grader failed \(exit 2, no report\): grader: error: unrecognized "
                                                r"arguments: --submission \(log: .*bob.log\)")
        self.assertEqual(rows["bob"]["total"], "")
        self.assertTrue(rows["carol"]["status"].startswith("missing submission"))
        self.assertEqual(rows["carol"]["total"], "0")
        report = json.loads((self.out / "reports" / "alice.json").read_text())
        self.assertEqual(report["env"]["CUDA_VISIBLE_DEVICES"], "0")
        self.assertEqual(report["pristine"], str(batch.KIT_ROOT))
        self.assertIn("--submission", (self.out / "logs" / "alice.log").read_text().splitlines()[0])
        self.assertFalse((self.out / "work" / "alice").exists())  # graded: the build is removed
        self.assertTrue((self.out / "work" / "bob").exists())  # kept to look into

    # --resume grades only what has no complete report.
    def test_resume(self):
        self.submission("alice", "score 100")
        bob = self.submission("bob", "crash")
        roster = self.roster([("alice", "subs/alice"), ("bob", "subs/bob")])
        self.assertEqual(self.main(str(roster), "--out", str(self.out))[0], 1)
        # The first run grades both, in the order their compiles finish (which varies with the cores).
        self.assertEqual(sorted(self.calls_made()), ["alice", "bob"])
        (bob / "behaviour.txt").write_text("score 50")
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--resume")
        self.assertEqual(code, 0, out)
        self.assertIn("[1/2] alice: 200.0/200 (resumed)", out)
        self.assertEqual(self.calls_made()[2:], ["bob"])  # the resumed run grades bob only
        self.assertEqual([row["status"] for row in self.gradebook()], ["ok", "vectorAdd PARTIAL; reduction PARTIAL"])

    # A grader past its time is stopped with SIGINT; its partial report says so.
    def test_timeout(self):
        self.submission("dan", "hang")
        roster = self.roster([("dan", "subs/dan")])
        with mock.patch.object(batch, "GRACE_S", 10):
            code, out, _ = self.main(str(roster), "--out", str(self.out), "--timeout", "1",
                                     "--labs", "vectorAdd", "reduction")
        self.assertEqual(code, 1)
        row = self.gradebook()[0]
        self.assertRegex(row["status"], r"^incomplete \(timed out after [\d.]+ s; not graded: reduction\)")
        self.assertEqual(row["vectorAdd"], "50.0")
        status = json.loads((self.out / "status" / "dan.json").read_text())
        self.assertTrue(status["timed_out"])
        self.assertEqual(status["exit"], 130)

    # One job per GPU; each job's grader sees one GPU; every submission's files are
    # compiled once, ahead of its grading, in the build the class shares.
    def test_gpus(self):
        self.mock(batch.gpu, "devices", return_value=[gpu.Device(str(i), "NVIDIA H100", "9.0", 81559) for i in range(6)])
        for name in ("a", "b", "c", "d"):
            self.submission(name, "score 100")
        roster = self.roster([(n, f"subs/{n}") for n in "abcd"])
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--gpus", "3,5", "--labs", "VECTORADD")
        self.assertEqual(code, 0, out)
        self.assertIn("2 at a time on GPUs 3,5", out)
        envs = [json.loads((self.out / "reports" / f"{n}.json").read_text())["env"] for n in "abcd"]
        self.assertEqual({env["CUDA_VISIBLE_DEVICES"] for env in envs}, {"3", "5"})
        self.assertEqual(sorted(Path(str(self.calls) + ".built").read_text().split()), list("abcd"))
        argv = json.loads((self.out / "reports" / "a.json").read_text())["argv"]
        self.assertIn("--prebuilt", argv)
        self.assertEqual(argv[argv.index("--build-dir") + 1], str(self.out / "work" / "_kit"))
        # The class's profiler figures: one folder of the batch's own, beside the reports.
        self.assertEqual(argv[argv.index("--profile-cache") + 1], str(self.out / "profile-cache"))
        self.assertEqual(list(self.gradebook()[0]), ["student", "total", "max", "vectorAdd", "status", "seed"])

    # Extra grader arguments and the instructor secret reach every grader run.
    def test_grader_args(self):
        self.submission("a", "score 100")
        secret = self.tmp / "secret"
        secret.write_text("s3cret\n")
        roster = self.roster([("a", "subs/a")])
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--grader-arg=--no-sanitizer",
                                 "--secret-file", str(secret), "--labs", "scan")
        self.assertEqual(code, 0, out)
        argv = json.loads((self.out / "reports" / "a.json").read_text())["argv"]
        self.assertEqual(argv[-4:], ["--secret-file", str(secret.resolve()), "--no-sanitizer", "scan"])
        code, _, err = self.main(str(roster), "--out", str(self.out), "--secret-file", str(self.tmp / "none"))
        self.assertEqual(code, 2)
        self.assertIn("not found", err)

    def test_gpu_detection(self):
        self.mock(batch.gpu, "devices", new=REAL_DEVICES)  # the real one, with a fake nvidia-smi
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "2, 3"}):
            self.assertEqual(batch.gpu_ids(), ["2", "3"])
        fake_smi(self.tmp / "tools", ["0", "1"])
        with mock.patch.dict(os.environ, {"PATH": str(self.tmp / "tools")}):
            self.assertEqual(batch.gpu_ids(), ["0", "1"])
            self.assertEqual(batch.unknown_gpus(["0", "1", "2"]), ["2"])
        with mock.patch.dict(os.environ, {"PATH": str(self.tmp / "empty")}):
            self.assertEqual(batch.gpu_ids(), [])
        self.assertEqual(batch.gpu_ids("2"), ["0", "1"])  # a count
        self.assertEqual(batch.gpu_ids("3,"), ["3"])  # a list
        self.assertEqual(batch.gpu_ids("0"), [])  # a count of none: refused by main

    def test_usage(self):
        roster = self.roster([("alice", "subs/alice")])
        for args, fragment in ((["--labs", "sorting"], "unknown lab 'sorting'"), (["--timeout", "0"], "--timeout"),
                               (["--jobs", "0"], "--jobs"), (["--pristine", str(self.tmp)], "is not a kit"),
                               (["--jobs", "2", "--gpus", "1"], "not allowed with"),
                               (["--gpus", "0"], "--gpus 0 names no GPU: give a count (1 for GPU 0)")):
            code, _, err = self.main(str(roster), "--out", str(self.out), *args)
            self.assertEqual(code, 2, args)
            self.assertIn(fragment, err)


# Without a GPU: refused at once, before anything is built, unless --allow-no-gpu.
class NoGpuTest(BatchTestCase):
    def setUp(self) -> None:
        super().setUp()
        # The real probe, with an nvidia-smi that cannot reach a driver (the PATH holds nothing else).
        self.mock(batch.gpu, "probe", new=REAL_PROBE)
        self.mock(batch.gpu, "devices", new=REAL_DEVICES)
        fake_smi(self.tmp / "tools", [], fails=True)
        patcher = mock.patch.dict(os.environ, {"PATH": str(self.tmp / "tools")})
        patcher.start()
        self.addCleanup(patcher.stop)
        self.submission("alice", "score 100")
        self.roster_file = self.roster([("alice", "subs/alice")])

    def test_refused_at_once(self):
        start = time.monotonic()
        code, out, err = self.main(str(self.roster_file), "--out", str(self.out), "--labs", "vectorAdd")
        self.assertEqual(code, 3, out + err)
        self.assertLess(time.monotonic() - start, 10)
        self.assertEqual(out, "")
        self.assertIn("no usable GPU: nvidia-smi finds no usable GPU (NVIDIA-SMI has failed", err)
        self.assertIn("Nothing was built", err)
        self.assertIn("--allow-no-gpu", err)
        self.assertEqual(len(err.strip().splitlines()), 1)
        self.assertFalse(self.out.exists())  # no kit build, no folder
        self.assertEqual(self.calls_made(), [])
        # A Slurm task on a node without a GPU says so too.
        code, _, err = self.main(str(self.roster_file), "--out", str(self.out), "--task", "0")
        self.assertEqual(code, 3)
        self.assertIn("no usable GPU", err)

    # --allow-no-gpu grades anyway, and every student's grading gets the flag (NO_GPU
    # reports instead of "exit 3, no report").
    def test_allow_no_gpu(self):
        code, out, err = self.main(str(self.roster_file), "--out", str(self.out), "--labs", "vectorAdd",
                                   "--allow-no-gpu")
        self.assertEqual(code, 0, out + err)
        self.assertIn("1 at a time on no GPU (--allow-no-gpu", out)
        self.assertNotIn("busy", out)  # no GPU: no busy time to tell
        report = json.loads((self.out / "reports" / "alice.json").read_text())
        self.assertIn("--allow-no-gpu", report["argv"])
        self.assertIsNone(report["env"]["CUDA_VISIBLE_DEVICES"])
        self.assertEqual(self.gradebook()[0]["status"], "ok")

    # --slurm writes a script for the cluster's GPU nodes: no GPU needed here.
    def test_slurm_needs_no_gpu(self):
        script = self.tmp / "grade.sbatch"
        code, out, err = self.main(str(self.roster_file), "--out", str(self.out), "--slurm", str(script))
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("--allow-no-gpu", script.read_text())
        code, _, _ = self.main(str(self.roster_file), "--out", str(self.out), "--slurm", str(script), "--allow-no-gpu")
        self.assertEqual(code, 0)
        self.assertIn("--grader-arg=--allow-no-gpu --task", script.read_text())

    # A GPU that nvidia-smi does not list is a usage error, said before any build.
    def test_unknown_gpu(self):
        fake_smi(self.tmp / "tools", ["0"])
        code, _, err = self.main(str(self.roster_file), "--out", str(self.out), "--gpus", "0,1")
        self.assertEqual(code, 2)
        self.assertIn("--gpus 0,1: nvidia-smi lists no GPU 1 on this machine", err)
        self.assertFalse(self.out.exists())


# A class's kit build without code for the GPU it grades on: said once, before anything
# is built or graded, with the flag that fixes it for batch; --cuda-arch given fixes it.
class ArchitectureTest(BatchTestCase):
    def test_refused_once_before_building(self):
        self.submission("alice", "score 100")
        roster = self.roster([("alice", "subs/alice")])
        kit = self.out / "work" / "_kit"
        kit.mkdir(parents=True)
        (kit / "CMakeCache.txt").write_text("CMAKE_CUDA_ARCHITECTURES:STRING=80-real\n")
        code, out, err = self.main(str(roster), "--out", str(self.out), "--labs", "vectorAdd")
        self.assertEqual(code, 3, out + err)
        self.assertIn("NVIDIA H100 80GB HBM3 (sm_90)", err)
        self.assertIn("--grader-arg=--cuda-arch=", err)
        self.assertIn("Nothing was built or graded", err)
        self.assertEqual(self.calls_made(), [])
        code, out, err = self.main(str(roster), "--out", str(self.out), "--labs", "vectorAdd",
                                   "--grader-arg=--cuda-arch=90")
        self.assertEqual(code, 0, out + err)
        code, _, err = self.main(str(roster), "--out", str(self.out), "--labs", "vectorAdd",
                                 "--grader-arg=--cuda-arch=nine")
        self.assertEqual(code, 2)
        self.assertIn("is not a CUDA architecture", err)


# More than one GPU: the compiles of several students run side by side ahead of the
# graders (one at a time in the shared kit build), one grader per GPU, and each GPU's
# busy time is reported.
class ScaleTest(BatchTestCase):
    def test_overlap_and_busy_time(self):
        names = ["a", "b", "c", "d"]
        for name in names:
            self.submission(name, "score 100")
        roster = self.roster([(n, f"subs/{n}") for n in names])
        self.mock(batch.gpu, "devices", return_value=[gpu.Device(i, "NVIDIA H100", "9.0", 81559) for i in "01"])
        self.mock(batch, "split_cores", return_value=(None, None))  # no pinning: this host's cores do not count
        self.mock(batch, "build_slots", return_value=2)
        with mock.patch.dict(os.environ, {"FAKE_KIT_S": "0.3", "FAKE_COMPILE_S": "1.5", "FAKE_GRADE_S": "0.6"}):
            code, out, err = self.main(str(roster), "--out", str(self.out), "--gpus", "0,1", "--labs", "vectorAdd",
                                       "reduction")
        self.assertEqual(code, 0, out + err)
        self.assertIn("2 at a time on GPUs 0,1, the compiles of 2 students at a time ahead of them", out)
        spans = self.spans()
        kits = sorted(tuple(span["kit"]) for span in spans if "kit" in span)
        compiles = sorted(tuple(span["compile"]) for span in spans if "compile" in span)
        self.assertEqual(len(kits), 4)
        # The kit build is checked by one compile at a time; the compiles overlap.
        for before, after in zip(kits, kits[1:]):
            self.assertLessEqual(before[1], after[0], kits)
        self.assertTrue(any(b[0] < a[1] for a, b in zip(compiles, compiles[1:])), compiles)
        # One grader per GPU at a time, and both GPUs used.
        grades = [span for span in spans if "grade" in span]
        self.assertEqual({span["gpu"] for span in grades}, {"0", "1"})
        for one in "01":
            on_it = sorted(tuple(span["grade"]) for span in grades if span["gpu"] == one)
            for before, after in zip(on_it, on_it[1:]):
                self.assertLessEqual(before[1], after[0], on_it)
        # Each GPU's busy time: in the output and in timing.json.
        self.assertRegex(out, r"4 students in \d+ s: the kit's part \d+ s, then \d+ s grading \([\d.]+ s per student\)")
        timing = json.loads((self.out / "timing.json").read_text())
        self.assertEqual((timing["students"], timing["gpus"], timing["builders"]), (4, ["0", "1"], 2))
        self.assertEqual(timing["labs"], ["vectorAdd", "reduction"])
        per_gpu = {one["gpu"]: one for one in timing["per_gpu"]}
        self.assertEqual(set(per_gpu), {"0", "1"})
        self.assertEqual(sum(one["students"] for one in per_gpu.values()), 4)
        for one, use in per_gpu.items():
            graded = sum(1 for span in grades if span["gpu"] == one)
            self.assertEqual(use["students"], graded)
            self.assertGreaterEqual(use["busy_s"], 0.6 * graded - 0.05)  # at least the grader's own sleep
            self.assertLessEqual(use["busy_s"], use["of_s"])
            self.assertAlmostEqual(use["of_s"], timing["grading_s"], delta=0.2)
            self.assertRegex(out, rf"GPU {one}: busy \d+ s of \d+ s \(\d+%\), {graded} students?")
        self.assertIn(f"[1/4]", out)
        self.assertRegex(out, r"\(\d+ s on GPU [01]\)")
        # The compiles: each student's, and the summary line.
        compiles = timing["compiles"]
        self.assertEqual((compiles["students"], compiles["builders"]), (4, 2))
        self.assertGreaterEqual(compiles["per_student_s"], 1.7)  # the kit's check and the compile, at least
        self.assertGreaterEqual(compiles["max_s"], compiles["per_student_s"])
        self.assertGreaterEqual(compiles["kit_check_wait_s"], 0.2)  # the second waited for the first's check
        self.assertAlmostEqual(timing["compile_s"], 4 * compiles["per_student_s"], delta=0.3)
        self.assertRegex(out, r"\n  compiles: [\d.]+ s per student \(longest \d+ s\), 2 students at a time; \d+ s "
                              r"waiting for the shared kit build's check\n")
        # Busy, waited for a compile and idle at the end make up each GPU's grading time.
        for use in per_gpu.values():
            self.assertAlmostEqual(use["busy_s"] + use["waited_s"] + use["tail_s"], use["of_s"], delta=0.3)
        self.assertEqual(timing["waited_s"], round(sum(use["waited_s"] for use in per_gpu.values()), 1))

    def run_class(self, students: dict[str, float], gpus: str, slots: int, grade_s: float,
                  built: dict[str, str] | None = None) -> tuple[str, dict]:
        """Grades students (name -> seconds their compile takes) on `gpus` with `slots`
        compiles at a time; returns batch's output and its timing.json. `built`: what a
        student's compile prints per lab (name -> text)."""
        for name, compile_s in students.items():
            folder = self.submission(name, "score 100")
            (folder / "compile_s.txt").write_text(str(compile_s))
            if built and name in built:
                (folder / "built.txt").write_text(built[name] + "\n")
        roster = self.roster([(n, f"subs/{n}") for n in students])
        self.mock(batch.gpu, "devices", return_value=[gpu.Device(i, "NVIDIA H100", "9.0", 81559) for i in "01"])
        self.mock(batch, "split_cores", return_value=(None, None))
        self.mock(batch, "build_slots", return_value=slots)
        with mock.patch.dict(os.environ, {"FAKE_GRADE_S": str(grade_s)}):
            code, out, err = self.main(str(roster), "--out", str(self.out), "--gpus", gpus, "--labs", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        return out, json.loads((self.out / "timing.json").read_text())

    # Compiles that cannot keep up: one at a time, each longer than a grading. The GPUs'
    # idle time shows as waiting for compiles, most of it between students, and the
    # summary says so.
    def test_starved_gpus_show(self):
        out, timing = self.run_class({name: 1.0 for name in "abcd"}, "0,1", slots=1, grade_s=0.2)
        per_gpu = {one["gpu"]: one for one in timing["per_gpu"]}
        self.assertGreaterEqual(timing["waited_s"], 3.5, timing)  # about 6 s of the GPUs' 8.5 s
        self.assertLess(timing["tail_s"], timing["waited_s"], timing)
        for use in per_gpu.values():
            self.assertGreaterEqual(use["first_wait_s"], 0.9, use)  # the first compile ends after 1 s
            self.assertLessEqual(use["first_wait_s"], use["waited_s"])
            self.assertAlmostEqual(use["busy_s"] + use["waited_s"] + use["tail_s"], use["of_s"], delta=0.3)
        self.assertGreaterEqual(max(use["waited_s"] - use["first_wait_s"] for use in per_gpu.values()), 0.7)
        self.assertGreaterEqual(timing["compiles"]["per_student_s"], 1.0)
        self.assertRegex(out, r"GPU 0: busy \d+ s of \d+ s \(\d+%\), \d students?; waited [1-9]\d* s for compiles "
                              r"\([1-9]\d* s before its first student\), \d+ s idle at the end")

    # Compiles well ahead, an odd class on two GPUs: one GPU grades the last student while
    # the other has none left. That shows as idle at the end, not as waiting.
    def test_tail_shows(self):
        # Gradings of 2 s, so that a loaded machine (the test command runs many tests at once)
        # slowing the fake's start by most of a second still leaves waiting well apart from the tail.
        out, timing = self.run_class({name: 0.05 for name in "abc"}, "0,1", slots=3, grade_s=2.0)
        per_gpu = sorted(timing["per_gpu"], key=lambda one: one["students"])
        self.assertEqual([one["students"] for one in per_gpu], [1, 2])
        self.assertGreaterEqual(per_gpu[0]["tail_s"], 1.6, per_gpu)  # the last student's grading
        self.assertLess(per_gpu[1]["tail_s"], 0.6, per_gpu)
        for use in per_gpu:
            self.assertLess(use["waited_s"], 1.2, use)  # only the first compile (and the fake's start)
        self.assertLess(timing["waited_s"], timing["tail_s"])

    # A student whose compile ends first is graded first: a GPU never waits for one slow
    # compile while another student is ready.
    def test_grades_in_the_order_compiles_end(self):
        out, timing = self.run_class({"slow": 2.0, "quick": 0.05}, "0,", slots=2, grade_s=0.2)
        grades = sorted((span["grade"][0], span["who"]) for span in self.spans() if "grade" in span)
        self.assertEqual([who for _, who in grades], ["quick", "slow"])
        self.assertRegex(out, r"\[1/2\] quick: .*\n\[2/2\] slow: ")
        built = {span["who"]: span["compile"] for span in self.spans() if "compile" in span}
        self.assertLess(grades[0][0], built["slow"][1])  # graded while the slow one still compiled

    # Among the students compiled and waiting, the one with the most labs built goes first:
    # the long gradings start early, the short ones (files that did not compile) fill the end.
    def test_longest_first_among_the_compiled(self):
        labs = {"first": "vectorAdd: built\nreduction: not built: error",
                "none_built": "vectorAdd: not built: error\nreduction: not built: error",
                "both_built": "vectorAdd: built\nreduction: built"}
        out, timing = self.run_class({"first": 0.05, "none_built": 0.8, "both_built": 1.6}, "0,", slots=3,
                                     grade_s=3.0, built=labs)
        spans = self.spans()
        grades = sorted((span["grade"][0], span["who"]) for span in spans if "grade" in span)
        compiled = {span["who"]: span["compile"][1] for span in spans if "compile" in span}
        # Both others were compiled, waiting, when the first grading ended: the choice was the order's.
        self.assertLess(max(compiled["none_built"], compiled["both_built"]), grades[1][0], (compiled, grades))
        self.assertEqual([who for _, who in grades], ["first", "both_built", "none_built"])
        with tempfile.TemporaryDirectory() as tmp:
            for lab, ok in (("vectorAdd", True), ("reduction", False), ("scan", True)):
                build.StudentBuild(ok=ok).save(Path(tmp) / lab)
            self.assertEqual(batch.labs_built(Path(tmp), ["vectorAdd", "reduction", "scan", "sort"]), 2)
            self.assertEqual(batch.labs_built(Path(tmp) / "nothing", ["vectorAdd"]), 0)

    # Busy time is the union of the graders' spans on a GPU (two jobs sharing one count once);
    # the rest is idle: waiting for a compile where a job of that GPU waited for its next
    # student (and no other grader held it), at the end otherwise.
    def test_gpu_use(self):
        use = batch.GpuUse(["0", "1"])
        use.add_wait("0", 10.0, 10.0)
        use.add("0", 10.0, 14.0)
        use.add_wait("0", 10.0, 12.0)  # --jobs 3 on 2 GPUs: a second job waits while the first holds GPU 0
        use.add("0", 12.0, 16.0)  # ... then overlaps it
        use.add_wait("0", 16.0, 20.0)  # its next student still compiled
        use.add("0", 20.0, 21.0)
        use.add_wait("1", 9.0, 11.0)  # partly before the grading time: not counted
        use.add("1", 11.0, 12.0)
        self.assertEqual(use.busy("0"), 7.0)
        summary = {one["gpu"]: one for one in use.summary(10.0, 24.0)}
        self.assertEqual(summary["0"], {"gpu": "0", "busy_s": 7.0, "of_s": 14.0, "share": 0.5, "students": 3,
                                        "waited_s": 4.0, "first_wait_s": 0.0, "tail_s": 3.0})
        self.assertEqual(summary["1"], {"gpu": "1", "busy_s": 1.0, "of_s": 14.0, "share": round(1 / 14, 3),
                                        "students": 1, "waited_s": 1.0, "first_wait_s": 1.0, "tail_s": 12.0})
        self.assertEqual(batch.gpu_lines(use.summary(10.0, 24.0)),
                         ["  GPU 0: busy 7 s of 14 s (50%), 3 students; waited 4 s for compiles (0 s before its first "
                          "student), 3 s idle at the end",
                          "  GPU 1: busy 1 s of 14 s (7%), 1 student; waited 1 s for compiles (1 s before its first "
                          "student), 12 s idle at the end"])
        # An older summary without the idle figures reads as before.
        self.assertEqual(batch.gpu_lines([{"gpu": "0", "busy_s": 5.0, "of_s": 10.0, "share": 0.5, "students": 1}]),
                         ["  GPU 0: busy 5 s of 10 s (50%), 1 student"])
        # A GPU that never had a student: all its wait came before its first (there was none).
        use = batch.GpuUse(["0"])
        use.add_wait("0", 0.0, 3.0)
        self.assertEqual(use.idle("0", 0.0, 5.0), {"waited_s": 3.0, "first_wait_s": 3.0, "tail_s": 2.0})

    def test_compile_line(self):
        self.assertEqual(batch.compile_line({"per_student_s": 4.24, "max_s": 7.4, "builders": 5, "cores": 22,
                                             "kit_check_wait_s": 1.2}),
                         "  compiles: 4.2 s per student (longest 7 s), 5 students at a time on 22 cores; 1 s waiting "
                         "for the shared kit build's check")
        self.assertEqual(batch.compile_line({"per_student_s": 3.0, "max_s": 3.0, "builders": 1, "cores": None,
                                             "kit_check_wait_s": 0.0}),
                         "  compiles: 3.0 s per student (longest 3 s), 1 student at a time; 0 s waiting for the "
                         "shared kit build's check")

    # Cores: each grading job keeps a judge and a worker per lab tested at once; the
    # compiles get the rest, one student per core per lab, up to two students per grading
    # job and one more; the compiles may run ahead by every slot and two per job.
    def test_cores(self):
        with mock.patch.object(batch.os, "sched_getaffinity", return_value=set(range(16))):
            jobs, compiles = batch.split_cores(1, 2)
            self.assertEqual(([len(one) for one in jobs], len(compiles)), ([5], 11))
            self.assertEqual(batch.build_slots(1, 2, compiles), 3)
            self.assertEqual(batch.split_cores(2, 6), (None, None))  # 18 cores wanted for the graders alone
        with mock.patch.object(batch.os, "sched_getaffinity", return_value=set(range(32))):
            jobs, compiles = batch.split_cores(2, 2)  # the 2-GPU host of 32 cores
            self.assertEqual(([len(one) for one in jobs], len(compiles)), ([5, 5], 22))
            self.assertFalse(jobs[0] & jobs[1] or (jobs[0] | jobs[1]) & compiles)  # a grader's cores are its own
            self.assertEqual(batch.build_slots(2, 2, compiles), 5)
            self.assertEqual(batch.build_slots(2, 10, compiles), 2)  # ten labs a student: the cores bound it
        with mock.patch.object(batch.os, "sched_getaffinity", return_value=set(range(128))):
            jobs, compiles = batch.split_cores(8, 2)
            self.assertEqual(([len(one) for one in jobs], len(compiles)), ([5] * 8, 88))
            self.assertEqual(len(set().union(*jobs)), 40)
            self.assertEqual(batch.build_slots(8, 2, compiles), 17)
        self.assertEqual(batch.build_slots(2, 4, set(range(5))), 1)
        self.assertEqual(batch.build_slots(1, 1, set(range(1))), 1)
        self.assertEqual(batch.build_slots(4, 2, set(range(10))), 5)
        with mock.patch.object(batch.os, "cpu_count", return_value=8):  # no cores to pin: what is left over
            self.assertEqual(batch.build_slots(1, 1, None), 3)  # 8 - 3 for the grader
            self.assertEqual(batch.build_slots(2, 2, None), 1)  # 8 - 10: at least one
        self.assertEqual((batch.ahead_limit(1, 3), batch.ahead_limit(2, 5)), (5, 9))

    # A host of two sockets: each GPU's grader gets cores beside its GPU (the NUMA node of
    # its PCI slot), two jobs on one GPU get disjoint cores there, and a GPU whose cores are
    # not known (or are every core) gets free cores from the lowest.
    def test_cores_beside_each_gpu(self):
        beside = {"0": set(range(0, 16)), "1": set(range(16, 32)), "2": set(range(32))}
        with mock.patch.object(batch.os, "sched_getaffinity", return_value=set(range(32))):
            jobs, compiles = batch.split_cores(2, 2, ["0", "1"], local=beside.get)
            self.assertLessEqual(jobs[0], beside["0"])
            self.assertLessEqual(jobs[1], beside["1"])
            self.assertEqual(compiles, set(range(32)) - jobs[0] - jobs[1])
            jobs, _ = batch.split_cores(4, 2, ["1"], local=beside.get)  # four jobs, one GPU: 3 fit beside it
            self.assertEqual([len(one) for one in jobs], [5, 5, 5, 5])
            self.assertEqual(len(set().union(*jobs)), 20)
            self.assertEqual(sum(1 for one in jobs if one <= beside["1"]), 3)
            jobs, _ = batch.split_cores(2, 2, ["2", "3"], local=lambda gpu: beside.get(gpu, set()))
            self.assertEqual(jobs, [set(range(5)), set(range(5, 10))])  # nothing known: the lowest free cores

    def test_local_cpus_from_nvidia_smi_and_sysfs(self):
        self.assertEqual(cores.parse_cpulist("0-3,8,10-11\n"), {0, 1, 2, 3, 8, 10, 11})
        self.assertEqual(cores.parse_cpulist("garbage"), set())
        self.assertEqual(cores.sysfs_bus_id("00000000:19:00.0"), "0000:19:00.0")
        self.assertEqual(cores.sysfs_bus_id("00000001:AB:00.0"), "0001:ab:00.0")
        self.assertIsNone(cores.sysfs_bus_id("0, NVIDIA H100, 9.0"))
        tools = self.tmp / "smi-tools"
        write_script(tools / "nvidia-smi", "print(\"00000000:19:00.0\")\n")
        (self.tmp / "pci" / "0000:19:00.0").mkdir(parents=True)
        (self.tmp / "pci" / "0000:19:00.0" / "local_cpulist").write_text("16-31\n")
        with mock.patch.dict(os.environ, {"PATH": str(tools)}), mock.patch.object(cores, "SYSFS_PCI", self.tmp / "pci"):
            self.assertEqual(cores.local_cpus("0"), set(range(16, 32)))
            self.assertEqual(cores.local_cpus("GPU-1234"), set(range(16, 32)))
            self.assertEqual(cores.local_cpus(None), set())
            self.assertEqual(cores.local_cpus("0; rm -rf"), set())  # not a GPU's name: nothing run
        with mock.patch.dict(os.environ, {"PATH": str(self.tmp / "nothing")}):
            self.assertEqual(cores.local_cpus("0"), set())  # no nvidia-smi

    # A grading job that fails (a bug in batch, say) ends the run with its error; the
    # compiles still queued do not keep it waiting.
    def test_job_failure_ends_the_run(self):
        for name in "abcdef":
            self.submission(name, "score 100")
        roster = self.roster([(n, f"subs/{n}") for n in "abcdef"])
        self.mock(batch, "split_cores", return_value=(None, None))
        self.mock(batch, "build_slots", return_value=1)
        real = batch.grade_one

        def failing(entry, *args, phase="all", **kwargs):
            if phase == "grade":
                raise RuntimeError("a bug")
            return real(entry, *args, phase=phase, **kwargs)

        self.mock(batch, "grade_one", new=failing)
        start = time.monotonic()
        with mock.patch.dict(os.environ, {"FAKE_COMPILE_S": "0.5"}), self.assertRaisesRegex(RuntimeError, "a bug"):
            self.main(str(roster), "--out", str(self.out), "--labs", "vectorAdd")
        self.assertLess(time.monotonic() - start, 4)  # not the six compiles one after the other
        self.assertLess(len(Path(str(self.calls) + ".built").read_text().split()), 6)

    # The compiles wait for this line of the grader before the next one starts.
    def test_kit_ready_marker(self):
        self.assertIn(batch.KIT_READY_MARKER, inspect.getsource(building.build_students))


# The instructor's batch shows the figures behind each answer, where the grader can.
class FeedbackTest(BatchTestCase):
    def test_answer_feedback(self):
        self.submission("a", "score 100")
        roster = self.roster([("a", "subs/a")])
        self.mock(batch, "grader_has_option", return_value=True)
        self.assertEqual(self.main(str(roster), "--out", str(self.out), "--labs", "scan")[0], 0)
        argv = json.loads((self.out / "reports" / "a.json").read_text())["argv"]
        self.assertEqual(argv[argv.index("--answer-feedback") + 1], "figures")
        self.main(str(roster), "--out", str(self.out), "--labs", "scan", "--grader-arg=--answer-feedback=verdict")
        argv = json.loads((self.out / "reports" / "a.json").read_text())["argv"]
        self.assertNotIn("--answer-feedback", argv)
        self.assertIn("--answer-feedback=verdict", argv)
        batch.grader_has_option.return_value = False
        self.main(str(roster), "--out", str(self.out), "--labs", "scan")
        argv = json.loads((self.out / "reports" / "a.json").read_text())["argv"]
        self.assertFalse(any(arg.startswith("--answer-feedback") for arg in argv))

    def test_grader_has_option(self):
        self.mock(batch, "grader_has_option", new=REAL_HAS_OPTION)
        self.assertTrue(batch.grader_has_option("--allow-no-gpu"))
        self.assertTrue(batch.grader_has_option("--no-sanitizer"))
        self.assertFalse(batch.grader_has_option("--no-such-option"))
        self.assertFalse(batch.grader_has_option("--no"))  # whole options only


class SlurmTest(BatchTestCase):
    # --slurm writes a job array, one task per roster row; each task grades its row;
    # --collect assembles the gradebook.
    def test_slurm(self):
        self.submission("alice", "score 100")
        self.submission("bob", "score 40")
        roster = self.roster([("alice", "subs/alice"), ("bob", "subs/bob"), ("carol", "")])
        script = self.tmp / "grade.sbatch"
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--slurm", str(script), "--labs", "scan",
                                 "--sbatch=--partition=gpu", "--timeout", "1800")
        self.assertEqual(code, 0, out)
        text = script.read_text()
        self.assertTrue(text.startswith("#!/bin/bash\n"))
        for line in ("#SBATCH --array=0-2", "#SBATCH --gres=gpu:1", "#SBATCH --partition=gpu",
                     "#SBATCH --time=00:45:00", f"#SBATCH --output={self.out}/logs/slurm-%A_%a.out"):
            self.assertIn(line + "\n", text)
        self.assertIn('--task "$SLURM_ARRAY_TASK_ID" --labs scan', text)
        self.assertIn("--collect", out)
        self.assertEqual(self.calls_made(), [])  # nothing graded yet

        # What two array tasks do, then the collection (bob's task has not run).
        self.assertEqual(self.main(str(roster), "--out", str(self.out), "--task", "0", "--labs", "scan")[0], 0)
        self.assertEqual(self.main(str(roster), "--out", str(self.out), "--task", "2", "--labs", "scan")[0], 0)
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--collect", "--labs", "scan")
        self.assertEqual(code, 1)
        rows = {row["student"]: row for row in self.gradebook()}
        self.assertEqual((rows["alice"]["scan"], rows["alice"]["status"]), ("100.0", "ok"))
        self.assertEqual(rows["bob"]["status"], "not graded yet")
        self.assertEqual(rows["carol"]["status"], "missing submission (no path in the roster)")
        code, _, err = self.main(str(roster), "--out", str(self.out), "--task", "3")
        self.assertEqual(code, 2)
        self.assertIn("outside the roster", err)



class GradebookTest(BatchTestCase):
    # The gradebook reads the grader's reports through the model every rendering uses
    # (report.read): the recorded reports as rows.
    def test_rows_from_recorded_reports(self):
        layout = batch.Layout(self.out)
        entries = []
        for i, name in enumerate(("pass", "partial", "build-error", "missing", "legacy-partial")):
            path = self.submission(name, "score 0")
            layout.report(name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(FIXTURES / "reports" / f"{name}.json", layout.report(name))
            entries.append(batch.Entry(i, i + 2, name, path))
        rows = {row["student"]: row for row in gradebook.write_gradebook(entries, layout, None)}
        self.assertEqual((rows["pass"]["total"], rows["pass"]["max"], rows["pass"]["status"]), (186.67, 200, "ok"))
        self.assertEqual(rows["pass"]["labs"], {"vectorAdd": 100.0, "reduction": 86.67})
        self.assertEqual(rows["pass"]["seed"], 77)
        self.assertEqual(rows["partial"]["status"], "reduction PARTIAL")
        self.assertEqual(rows["legacy-partial"]["status"], "reduction PARTIAL")
        self.assertEqual(rows["build-error"]["status"], "scan BUILD_ERROR")
        self.assertEqual(rows["missing"]["status"], "sort MISSING")
        lines = (self.out / "gradebook.csv").read_text().splitlines()
        self.assertEqual(lines[0], "student,total,max,vectorAdd,reduction,scan,sort,status,seed")
        self.assertEqual(lines[1], "pass,186.67,200,100.0,86.67,,,ok,77")
        self.assertIsNotNone(batch.complete_report(layout.report("pass"), ["vectorAdd"]))
        self.assertIsNone(batch.complete_report(layout.report("pass"), ["scan"]))
        self.assertIsNone(gradebook.read_report(self.out / "none.json"))


if __name__ == "__main__":
    unittest.main()
