"""The files graded: a submission's editable files copied into a clean folder, ignored
changes, missing files, and the folder kept in step with the next submission."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from grader import config, overlay, seed
from grader.tests.helpers import make_kit
from grader.tests.test_cli import CliTestCase

LABS = ["vectorAdd", "reduction"]
DEFAULT = config.from_dict({}, None)


def patterns(lab: str) -> list[str]:
    return DEFAULT.lab(lab).editable


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def make_pristine(root: Path) -> Path:
    make_kit(root, LABS, solutions=True)
    for lab in LABS:
        write(root / "labs" / lab / f"{lab}.cu", f"// {lab} skeleton\n")
        write(root / "labs" / lab / f"{lab}_test.cu", f"// {lab} tests\n")
        write(root / "solutions" / lab / f"{lab}.cu", f"// {lab} reference\n")
    write(root / "CMakeLists.txt", "# kit\n")
    write(root / "build" / "grader" / "junk.o", "object")
    write(root / ".git" / "HEAD", "ref: refs/heads/main\n")
    write(root / "grader" / "__pycache__" / "x.pyc", "bytecode")
    return root


class PrepareTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.pristine = make_pristine(self.tmp / "pristine")
        # The student's repository: a clone without solutions/, with changes.
        self.sub = self.tmp / "student"
        shutil.copytree(self.pristine, self.sub, ignore=shutil.ignore_patterns("solutions", "build"))
        write(self.sub / "labs" / "vectorAdd" / "vectorAdd.cu", "// my kernel\n")
        write(self.sub / "labs" / "vectorAdd" / "vectorAdd_test.cu", "// tests that always pass\n")
        write(self.sub / "notes.txt", "my notes\n")
        write(self.sub / "build" / "dev" / "stuff", "x")
        self.work = self.tmp / "work" / "overlay"

    def prepare(self, labs=LABS) -> overlay.Overlay:
        return overlay.prepare(self.pristine, self.sub, self.work, labs, patterns, exclude=[self.tmp / "work"])

    # The clean folder holds the submission's editable files and nothing else: not its
    # tests, not a header it placed next to its file, not its notes.
    def test_editable_files_copied_others_ignored(self):
        write(self.sub / "labs" / "vectorAdd" / "vectorAdd.h", "// a header of my own\n")
        result = self.prepare()
        self.assertEqual((self.work / "labs/vectorAdd/vectorAdd.cu").read_text(), "// my kernel\n")
        self.assertEqual(sorted(p.relative_to(self.work).as_posix() for p in self.work.rglob("*") if p.is_file()),
                         ["labs/reduction/reduction.cu", "labs/vectorAdd/vectorAdd.cu"])
        self.assertFalse((self.work / "notes.txt").exists())
        for excluded in ("build", ".git", "grader/__pycache__"):
            self.assertFalse((self.work / excluded).exists(), excluded)
        self.assertEqual(result.copied, {"vectorAdd": ["labs/vectorAdd/vectorAdd.cu"],
                                         "reduction": ["labs/reduction/reduction.cu"]})
        self.assertEqual(result.missing, {})
        # Changes outside the editable files are listed (not the deleted solutions/, not build/).
        self.assertEqual(result.ignored_changes, [{"path": "labs/vectorAdd/vectorAdd.h", "change": "modified"},
                                                  {"path": "labs/vectorAdd/vectorAdd_test.cu", "change": "modified"},
                                                  {"path": "notes.txt", "change": "added"}])
        self.assertEqual(result.ignored_total, 3)
        self.assertIn("labs/vectorAdd/vectorAdd_test.cu", result.note())

    def test_missing_editable_file(self):
        (self.sub / "labs/reduction/reduction.cu").unlink()
        result = self.prepare()
        self.assertIn("labs/reduction/reduction.cu not found in the submission", result.missing["reduction"])
        self.assertEqual(result.copied["reduction"], [])
        self.assertFalse((self.work / "labs/reduction/reduction.cu").exists())

    # A symbolic link (e.g. to the reference) is not taken.
    def test_symlink_is_refused(self):
        target = self.sub / "labs/vectorAdd/vectorAdd.cu"
        target.unlink()
        target.symlink_to(self.pristine / "solutions/vectorAdd/vectorAdd.cu")
        result = self.prepare()
        self.assertIn("symbolic link", result.missing["vectorAdd"])
        self.assertFalse((self.work / "labs/vectorAdd/vectorAdd.cu").exists())

    # A FIFO where the file should be neither blocks the grader nor is taken.
    def test_fifo_is_refused(self):
        target = self.sub / "labs/vectorAdd/vectorAdd.cu"
        target.unlink()
        os.mkfifo(target)
        result = self.prepare()
        self.assertIn("not a regular file", result.missing["vectorAdd"])
        self.assertTrue(seed.identity([("labs/vectorAdd/vectorAdd.cu", target)]).startswith("sha256:"))

    # The folder follows the next submission: an unchanged file keeps its time, a changed
    # one gets a newer one, files no longer wanted go.
    def test_incremental_sync(self):
        self.prepare()
        test_file = self.work / "labs/reduction/reduction.cu"
        student_file = self.work / "labs/vectorAdd/vectorAdd.cu"
        before_test, before_student = test_file.stat().st_mtime_ns, student_file.stat().st_mtime_ns
        write(self.work / "stray.txt", "left over")
        time.sleep(0.01)
        write(self.sub / "labs/vectorAdd/vectorAdd.cu", "// my second kernel\n")
        os.utime(self.sub / "labs/vectorAdd/vectorAdd.cu", (1, 1))  # an old time must not hide the change
        self.prepare()
        self.assertEqual(test_file.stat().st_mtime_ns, before_test)
        self.assertGreater(student_file.stat().st_mtime_ns, before_student)
        self.assertEqual(student_file.read_text(), "// my second kernel\n")
        self.assertFalse((self.work / "stray.txt").exists())

    # Glob patterns take extra student files (e.g. their own headers).
    def test_glob_pattern(self):
        write(self.sub / "labs/vectorAdd/helpers.cuh", "// mine\n")
        result = overlay.prepare(self.pristine, self.sub, self.work, ["vectorAdd"],
                                 lambda lab: ["labs/{lab}/{lab}.cu", "labs/{lab}/*.cuh"])
        self.assertEqual(result.copied["vectorAdd"], ["labs/vectorAdd/vectorAdd.cu", "labs/vectorAdd/helpers.cuh"])
        self.assertTrue((self.work / "labs/vectorAdd/helpers.cuh").is_file())

    def test_bad_directories(self):
        with self.assertRaises(overlay.OverlayError):
            overlay.prepare(self.tmp / "none", self.sub, self.work, LABS, patterns)
        with self.assertRaises(overlay.OverlayError):
            overlay.prepare(self.pristine, self.tmp / "none", self.work, LABS, patterns)


class CliOverlayTest(CliTestCase):
    """`--submission` end to end with prebuilt fake binaries (--no-build)."""

    def setUp(self) -> None:
        super().setUp()
        for lab in ("vectorAdd", "reduction", "scan"):
            write(self.root / "labs" / lab / f"{lab}.cu", f"// {lab} skeleton\n")
        self.sub = self.tmp / "student"
        shutil.copytree(self.root, self.sub)
        write(self.sub / "labs/vectorAdd/vectorAdd.cu", "// mine\n")
        write(self.sub / "grader/grade.py", "# everything passes\n")
        (self.sub / "labs/scan/scan.cu").unlink()
        self.fake_labs(self.bin)

    def test_submission(self):
        code, out, err = self.main("--no-build", "--skip-bench", "--submission", str(self.sub), "--seed", "4")
        self.assertEqual(code, 1, out + err)
        report = self.report()
        self.assertEqual([lab["status"] for lab in report["labs"]], ["PASS", "PARTIAL", "MISSING"])
        self.assertIn("labs/scan/scan.cu not found in the submission", report["labs"][2]["message"])
        self.assertEqual(report["submission"], str(self.sub.resolve()))
        self.assertEqual(report["ignored_changes"], [{"path": "grader/grade.py", "change": "added"}])
        self.assertEqual(report["overlay"]["work_dir"], str(self.build / "submission"))
        self.assertIn("1 changed file(s) of the submission are not student-editable", out)
        self.assertEqual((self.build / "submission/labs/vectorAdd/vectorAdd.cu").read_text(), "// mine\n")

    def test_pristine_from_environment(self):
        other = make_kit(self.tmp / "other", ["vectorAdd"])
        write(other / "labs/vectorAdd/vectorAdd.cu", "// other skeleton\n")
        os.environ["LABKIT_PRISTINE"] = str(other)
        code, out, err = self.main("--no-build", "--skip-bench", "--submission", str(self.sub), "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.report()["root"], str(other.resolve()))

    def test_usage_errors(self):
        for args, fragment in ((["--submission", str(self.tmp / "none")], "is not a directory"),
                               (["--submission", str(self.sub), "--impl", "solution"], "cannot be combined"),
                               (["--pristine", str(self.root)], "--pristine is used with --submission"),
                               (["--submission", str(self.sub), "--pristine", str(self.tmp)], "has no labs/")):
            code, _, err = self.main(*args)
            self.assertEqual(code, 2, args)
            self.assertIn(fragment, err)


if __name__ == "__main__":
    unittest.main()


class TemplateFilesTest(unittest.TestCase):
    # The overlay must not report the template's own README and workflow as changes.
    def test_matches_what_export_generates(self):
        from grader.instructor import export
        self.assertEqual(overlay.TEMPLATE_FILES, frozenset(export.GENERATED))

