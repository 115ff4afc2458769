"""Tests of `python3 -m grader batch` (grader/instructor/batch.py) with a fake grader.

LABKIT_BATCH_GRADER replaces `python3 -m grader` by a small script that behaves as the
submission asks (its behaviour.txt): write a report, crash, or hang until stopped.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grader.instructor import batch
from grader.tests.helpers import FIXTURES, write_script

# The fake grader: the arguments batch passes, then what the submission asks for.
FAKE_GRADER = """
    import json, os, sys, time
    args = sys.argv[1:]
    opt = lambda name: args[args.index(name) + 1]
    if "--build-only" in args:  # the class's kit build, or a submission's files compiled ahead
        os.makedirs(opt("--student-dir"), exist_ok=True)
        if "--submission" in args:
            open(os.environ["FAKE_CALLS"] + ".built", "a").write(os.path.basename(opt("--submission")) + "\\n")
        sys.exit(0)
    submission, report, build = opt("--submission"), opt("--json"), opt("--build-dir")
    valued = {"--submission", "--pristine", "--build-dir", "--json", "--secret-file", "--student-dir"}
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


class BatchTestCase(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.out = self.tmp / "grades"
        self.calls = self.tmp / "calls"
        fake = write_script(self.tmp / "fake_grader.py", FAKE_GRADER)
        patcher = mock.patch.dict(os.environ, {batch.GRADER_ENV: f"{sys.executable} {fake}",
                                               "FAKE_CALLS": str(self.calls)})
        patcher.start()
        self.addCleanup(patcher.stop)
        os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        os.environ.pop("CMAKE_BUILD_PARALLEL_LEVEL", None)
        os.environ.pop("LABKIT_PRISTINE", None)

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
        self.assertIn("grading 3 students, 1 at a time, GPUs 0", out)
        self.assertRegex(out, r"\[\d/3\] alice: 175\.0/200 \(vectorAdd PARTIAL; reduction PARTIAL\) \(\d+ s\)")
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
        (bob / "behaviour.txt").write_text("score 50")
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--resume")
        self.assertEqual(code, 0, out)
        self.assertIn("[1/2] alice: 200.0/200 (resumed)", out)
        self.assertEqual(self.calls_made(), ["alice", "bob", "bob"])
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
        for name in ("a", "b", "c", "d"):
            self.submission(name, "score 100")
        roster = self.roster([(n, f"subs/{n}") for n in "abcd"])
        code, out, _ = self.main(str(roster), "--out", str(self.out), "--gpus", "3,5", "--labs", "VECTORADD")
        self.assertEqual(code, 0, out)
        self.assertIn("2 at a time, GPUs 3,5", out)
        envs = [json.loads((self.out / "reports" / f"{n}.json").read_text())["env"] for n in "abcd"]
        self.assertEqual({env["CUDA_VISIBLE_DEVICES"] for env in envs}, {"3", "5"})
        self.assertEqual(sorted(Path(str(self.calls) + ".built").read_text().split()), list("abcd"))
        argv = json.loads((self.out / "reports" / "a.json").read_text())["argv"]
        self.assertIn("--prebuilt", argv)
        self.assertEqual(argv[argv.index("--build-dir") + 1], str(self.out / "work" / "_kit"))
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
        with mock.patch.dict(os.environ, {"CUDA_VISIBLE_DEVICES": "2, 3"}):
            self.assertEqual(batch.gpu_ids(), ["2", "3"])
        tools = self.tmp / "tools"
        write_script(tools / "nvidia-smi", 'print("GPU 0: NVIDIA H100 (UUID: a)\\nGPU 1: NVIDIA H100 (UUID: b)")')
        with mock.patch.dict(os.environ, {"PATH": str(tools)}):
            self.assertEqual(batch.gpu_ids(), ["0", "1"])
        with mock.patch.dict(os.environ, {"PATH": str(self.tmp / "empty")}):
            self.assertEqual(batch.gpu_ids(), [])
        self.assertEqual(batch.gpu_ids("2"), ["0", "1"])

    def test_usage(self):
        roster = self.roster([("alice", "subs/alice")])
        for args, fragment in ((["--labs", "sorting"], "unknown lab 'sorting'"), (["--timeout", "0"], "--timeout"),
                               (["--jobs", "0"], "--jobs"), (["--pristine", str(self.tmp)], "is not a kit"),
                               (["--jobs", "2", "--gpus", "1"], "not allowed with")):
            code, _, err = self.main(str(roster), "--out", str(self.out), *args)
            self.assertEqual(code, 2, args)
            self.assertIn(fragment, err)


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
        rows = {row["student"]: row for row in batch.write_gradebook(entries, layout, None)}
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
        self.assertIsNone(batch.read_report(self.out / "none.json"))


if __name__ == "__main__":
    unittest.main()
