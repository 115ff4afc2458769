"""Tests of `python3 -m grader export` (grader/instructor/export.py): the copy on a tiny fake
kit and on a throwaway git clone of the kit (nothing of the instructor's leaks), the
Classroom workflow (both grading modes, run), the kit's CI, the check's verdict on
recorded ctest output and its progress while a (fake) build runs (the real build is
run by hand or in CI: `python3 -m grader export --out DIR`)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import time
import unittest
from pathlib import Path
from unittest import mock

from grader.instructor import export, progress
from grader import formats, gpu, manifest
from grader.tests.helpers import FIXTURES, write_script

KIT = export.KIT_ROOT
COURSE_LABS = manifest.names(KIT)  # the kit's labs, from their manifests


def git_reads_kit() -> bool:
    """Whether the kit is a git checkout that git will list (not, e.g., one owned by
    another user without safe.directory)."""
    if not shutil.which("git") or not (KIT / ".git").exists():
        return False
    return subprocess.run(["git", "-C", str(KIT), "rev-parse", "HEAD"], capture_output=True, timeout=60).returncode == 0

# ctest output on a machine without a GPU, and on one with a GPU (skeletons fail), and
# the labels cmake/LabKit.cmake gives those tests (as ctest --show-only=json-v1 lists them).
CTEST_NO_GPU = """\
Test project /tmp/b
    Start 1: common.cpu
1/5 Test #1: common.cpu .......................   Passed    0.12 sec
    Start 2: common.gpu
2/5 Test #2: common.gpu .......................***Skipped   0.01 sec
    Start 3: vectorAdd.student.cpu
3/5 Test #3: vectorAdd.student.cpu ............   Passed    0.05 sec
    Start 4: vectorAdd.student.gpu
4/5 Test #4: vectorAdd.student.gpu ............***Skipped   0.01 sec
    Start 5: scan.student.cpu
5/5 Test #5: scan.student.cpu .................   Passed    0.02 sec
"""
CTEST_GPU = """\
1/4 Test #1: common.cpu .......................   Passed    0.12 sec
2/4 Test #2: common.gpu .......................   Passed    1.01 sec
3/4 Test #3: vectorAdd.student.cpu ............   Passed    0.05 sec
4/4 Test #4: vectorAdd.student.gpu ............***Failed    2.31 sec
"""
LABELS = {"common.cpu": {"common", "cpu"}, "common.gpu": {"common", "gpu"},
          "vectorAdd.student.cpu": {"student", "cpu"}, "vectorAdd.student.gpu": {"student", "gpu"},
          "vectorAdd.student.gpu_alone": {"student", "gpu"}, "vectorAdd2.student.cpu": {"student", "cpu"},
          "vectorAdd2.student.gpu": {"student", "gpu"}, "vectorAdd.solution.cpu": {"solution", "cpu"},
          "scan.student.cpu": {"student", "cpu"}, "scan.student.gpu": {"student", "gpu"}}
# Recorded in the exported template, vectorAdd only, on a machine without a GPU.
RECORDED_CTEST = (FIXTURES / "export" / "ctest-no-gpu-vectorAdd.txt").read_text()
RECORDED_SHOW = (FIXTURES / "export" / "ctest-show-vectorAdd.json").read_text()


def show_only(labels: dict[str, set[str]]) -> str:
    """What `ctest --show-only=json-v1` prints for tests with these labels."""
    return json.dumps({"kind": "ctestInfo", "version": {"major": 1, "minor": 0},
                       "tests": [{"name": name, "properties": [{"name": "LABELS", "value": sorted(value)}]}
                                 for name, value in labels.items()]})


def results(output: str, labels: dict[str, set[str]] | None = None) -> list[export.CtestResult]:
    return export.parse_ctest(output, {k: frozenset(v) for k, v in (LABELS if labels is None else labels).items()})


def fake_kit(root: Path) -> Path:
    """The files of a kit that matter to the export: two labs, solutions, instructor files."""
    files = {
        "README.md": "# kit\n\n## Requirements\n\n- a GPU\n\n## For students\n\nEdit `labs/<lab>/<lab>.cu`.\n\n"
                     "## For instructors\n\nsecret\n\n## How the grade is computed\n\n70 + 30 points.\n",
        "CMakeLists.txt": "# top\n", "CMakePresets.json": "{}\n", ".gitignore": "build/\n",
        "labs/CMakeLists.txt": "add_lab(vectorAdd)\nadd_lab(scan)\n",
        "labs/vectorAdd/vectorAdd.h": "", "labs/vectorAdd/vectorAdd.cu": "// TODO(student)\n",
        "labs/scan/scan.h": "", "labs/scan/scan.cu": "",
        "labs/vectorAdd/lab.json": (KIT / "labs/vectorAdd/lab.json").read_text(),
        "labs/scan/lab.json": (KIT / "labs/scan/lab.json").read_text(),
        "handouts/vectorAdd.md": "", "handouts/scan.md": "", "handouts/instructors.md": "runners\n",
        "solutions/vectorAdd/vectorAdd.cu": "// answer\n", "grader.toml": "[grader]\n",
        ".github/workflows/ci.yml": "name: ci\n", ".ci/run": "#!/bin/sh\n", ".ci/gpu-check": "#!/bin/sh\n",
        "grader/__init__.py": "", "grader/cli.py": "", "grader/formats/__init__.py": "",
        "grader/instructor/__init__.py": "",
        "grader/instructor/export.py": "", "grader/instructor/batch.py": "", "grader/instructor/package.py": "",
        "grader/tests/test_x.py": "",
        "grader/templates/classroom.yml": (KIT / export.TEMPLATE).read_text(),
        "build/dev/CMakeCache.txt": "", "grader/__pycache__/cli.cpython-311.pyc": "",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / ".ci/run").chmod(0o755)
    (root / "labs/scan/scan.cu").chmod(0o755)
    return root


class ExportTestCase(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.root = fake_kit(self.tmp / "kit")
        self.out = self.tmp / "template"

    def main(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = export.main(["--root", str(self.root), "--out", str(self.out), *args])
        return code, out.getvalue(), err.getvalue()

    def files(self) -> list[str]:
        return sorted(p.relative_to(self.out).as_posix() for p in self.out.rglob("*") if p.is_file())


class CopyTest(ExportTestCase):
    # Without git the kit is walked; instructor files, builds and caches stay out; the
    # Classroom workflow and a student README are written.
    def test_template_files(self):
        code, out, err = self.main("--no-check")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(self.files(), [
            ".github/workflows/classroom.yml", ".gitignore", "CMakeLists.txt", "CMakePresets.json", "README.md",
            "grader/__init__.py", "grader/cli.py", "grader/formats/__init__.py",
            "handouts/scan.md", "handouts/vectorAdd.md", "labs/CMakeLists.txt", "labs/scan/lab.json",
            "labs/scan/scan.cu", "labs/scan/scan.h", "labs/vectorAdd/lab.json", "labs/vectorAdd/vectorAdd.cu",
            "labs/vectorAdd/vectorAdd.h"])
        self.assertIn("left out: solutions/ (1 file)", out)
        self.assertTrue(os.access(self.out / "labs/scan/scan.cu", os.X_OK))  # modes are kept
        readme = (self.out / "README.md").read_text()
        self.assertIn("Edit `labs/<lab>/<lab>.cu`.", readme)
        self.assertIn("70 + 30 points.", readme)
        self.assertIn("## Grading on every push", readme)
        self.assertNotIn("secret", readme)
        self.assertIn("| scan | [handouts/scan.md](handouts/scan.md) | `labs/scan/scan.cu`, `labs/scan/answers.md`, `labs/scan/WRITEUP.md` |", readme)
        workflow = (self.out / export.WORKFLOW).read_text()
        self.assertIn("runners: vectorAdd,scan\n", workflow)
        self.assertNotIn("REDUCTION_RESULTS", workflow)
        for path in self.files():
            self.assertFalse(path.startswith("solutions/") or path == "grader.toml", path)

    def test_some_labs(self):
        code, out, _ = self.main("--no-check", "--labs", "SCAN")
        self.assertEqual(code, 0)
        self.assertNotIn("labs/vectorAdd/vectorAdd.cu", self.files())
        self.assertNotIn("handouts/vectorAdd.md", self.files())
        self.assertIn("runners: scan\n", (self.out / export.WORKFLOW).read_text())

    # A non-empty folder needs --force, which keeps a .git (updating a clone of the template).
    def test_non_empty_out(self):
        (self.out / ".git").mkdir(parents=True)
        (self.out / ".git" / "HEAD").write_text("ref\n")
        (self.out / "old.txt").write_text("old")
        code, _, err = self.main("--no-check")
        self.assertEqual(code, 2)
        self.assertIn("is not empty", err)
        self.assertEqual(self.main("--no-check", "--force")[0], 0)
        self.assertFalse((self.out / "old.txt").exists())
        self.assertEqual((self.out / ".git" / "HEAD").read_text(), "ref\n")

    def test_usage(self):
        self.out = self.root
        code, _, err = self.main("--no-check", "--force")
        self.assertEqual(code, 2)
        self.assertIn("holds the kit itself", err)
        self.out = self.tmp / "t2"
        code, _, err = self.main("--no-check", "--labs", "sort")
        self.assertEqual(code, 2)
        self.assertIn("unknown lab 'sort'", err)
        code, _, err = self.main("--bogus")
        self.assertEqual(code, 2)

    # An --out inside the kit is refused (the next export would nest this one), with one line.
    def test_out_inside_kit(self):
        for inside in (self.root / "export", self.root / "build" / "template"):
            self.out = inside
            code, out, err = self.main("--no-check")
            self.assertEqual(code, 2)
            self.assertEqual(out, "")
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(f"is inside the kit {self.root}: write the template outside it", err)
            self.assertFalse(inside.exists())

    # A checkout git cannot list (a broken .git here): the export stops rather than copy whatever lies there.
    def test_unlistable_checkout(self):
        (self.root / ".git").write_text("gitdir: /nowhere\n")
        code, out, err = self.main("--no-check")
        self.assertEqual((code, out), (2, ""))
        self.assertIn("is a git checkout, but `git ls-files` fails there", err)
        self.assertEqual(err.count("\n"), 1)
        self.assertFalse(self.out.exists())

    # In a git checkout, git decides what belongs to the kit: what it tracks (the real kit, read only).
    @unittest.skipUnless(git_reads_kit(), "the kit is not a git checkout that git can read")
    def test_real_kit_files(self):
        files = export.kit_files(KIT)
        self.assertIn("grader/cli.py", files)
        self.assertIn("labs/vectorAdd/vectorAdd.cu", files)
        self.assertFalse(any(name.startswith("build/") or "__pycache__" in name for name in files))
        self.assertFalse(set(files) & set(export.untracked_files(KIT)))
        kept, left_out = export.student_files(files + ["grader/instructor/export.py"], COURSE_LABS, COURSE_LABS)
        self.assertFalse(any(name.startswith(("solutions/", ".github/", ".ci/", "grader/tests/", "grader/instructor/"))
                             for name in kept))
        self.assertNotIn("handouts/instructors.md", kept)
        self.assertIn("grader/formats/command.py", kept)  # the Classroom workflow runs `grader report`


class NewLabTest(ExportTestCase):
    # A lab copied under a new name (its folder and manifest renamed, no other file edited)
    # is exported with its own Classroom result line: the workflow is generated from the
    # exported kit's manifests, and the line reads the output `grader report` writes for it.
    def test_copied_lab_gets_its_result_line(self):
        copy = self.root / "labs" / "vectorCopy"
        shutil.copytree(self.root / "labs" / "vectorAdd", copy)
        for path in list(copy.iterdir()):
            path.rename(copy / path.name.replace("vectorAdd", "vectorCopy"))
        lab = json.loads((copy / "lab.json").read_text())
        lab.update(name="vectorCopy", order=99, editable=["labs/vectorCopy/vectorCopy.cu"])
        (copy / "lab.json").write_text(json.dumps(lab))
        code, out, err = self.main("--no-check")
        self.assertEqual(code, 0, out + err)
        self.assertIn("labs vectorAdd, scan, vectorCopy", out)
        workflow = (self.out / export.WORKFLOW).read_text()
        self.assertIn('          VECTORCOPY_RESULTS: "${{ steps.grader.outputs.VECTORCOPY_RESULTS }}"\n', workflow)
        self.assertRegex(workflow, r"(?m)^          runners: vectorAdd,scan,vectorCopy$")
        self.assertIn("labs/vectorCopy/vectorCopy.cu", self.files())
        # The workflow's Results step, on a run that wrote no report: every lab still gets
        # the output its result line reads.
        labs = re.search(r"--labs (\S+)", workflow).group(1)
        github_output = self.tmp / "github_output"
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = formats.main([str(self.tmp / "report.json"), "--labs", labs, "--classroom-env", str(github_output)])
        self.assertEqual(code, formats.EXIT_DEGRADED)
        written = [line.split("=", 1)[0] for line in github_output.read_text().splitlines()]
        read = re.findall(r"(?m)^ +([A-Z_]+_RESULTS): ", workflow)
        self.assertEqual(written, ["VECTORADD_RESULTS", "SCAN_RESULTS", "VECTORCOPY_RESULTS"])
        self.assertEqual(read, written)


class WorkflowTest(unittest.TestCase):
    template = (KIT / export.TEMPLATE).read_text()

    # The shape GitHub Classroom expects (see ANCHORS.md "Integration facts").
    def test_classroom_shape(self):
        text = self.template
        self.assertRegex(text, r"(?m)^name: Autograding Tests$")
        # A mapping of events (a list with repository_dispatch in it is what actionlint flags).
        self.assertRegex(text, r"(?m)^'on':\n  push:\n  repository_dispatch:$")
        self.assertNotRegex(text, r"(?m)^  - (push|repository_dispatch)$")
        self.assertRegex(text, r"(?m)^permissions:\n  checks: write\n  actions: read\n  contents: read$")
        self.assertRegex(text, r"(?m)^  run-autograding-tests:\n    runs-on: \[self-hosted, gpu\]$")
        self.assertIn("uses: classroom-resources/autograding-grading-reporter@v1", text)
        self.assertIn("python3 -m grader --json report.json || status=$?", text)
        self.assertIn('--classroom-env "$GITHUB_OUTPUT" --markdown "$GITHUB_STEP_SUMMARY" --annotations', text)
        self.assertIn("actions/upload-artifact@v4", text)
        self.assertNotIn("\t", text)

    # The template lists every lab of the course, and its lists agree with each other.
    def test_lab_lists_agree(self):
        # A course's own lab, which the template does not name, gets its result line too.
        for labs in (COURSE_LABS, ["vectorAdd"], ["scan", "sobel"], ["vectorAdd", "stencil"]):
            text = export.render_workflow(self.template, labs)
            runners = re.search(r"runners: (\S+)", text).group(1).split(",")
            report_labs = re.search(r"--labs (\S+)", text).group(1).split(",")
            env = re.findall(r"(?m)^\s+([A-Z]+)_RESULTS: \"\$\{\{ steps\.grader\.outputs\.\1_RESULTS \}\}\"$", text)
            self.assertEqual(runners, labs)
            self.assertEqual(report_labs, labs)
            self.assertEqual(env, [lab.upper() for lab in labs])
        # Generated from the lab list: no placeholder and no note of the template is left.
        text = export.render_workflow(self.template, COURSE_LABS)
        self.assertNotIn("LABKIT_LAB", text)
        self.assertFalse([line for line in text.splitlines() if line.lstrip().startswith("##")])
        self.assertIn("LABKIT_LABS", self.template)

    # The kit's own CI: CPU job in a CUDA container, GPU job on the self-hosted runners.
    def test_kit_ci(self):
        ci = (KIT / ".github/workflows/ci.yml").read_text()
        self.assertIn("container: nvidia/cuda:", ci)
        self.assertIn("bash .ci/run", ci)
        self.assertIn("runs-on: [self-hosted, gpu]", ci)
        # The GPU job runs the tests and grades the solutions: each phase, or all at once.
        self.assertTrue("bash .ci/gpu-check all" in ci
                        or ("bash .ci/gpu-check tests" in ci and "bash .ci/gpu-check grade" in ci), ci)
        self.assertFalse((KIT / ".github/workflows/classroom.yml").exists())  # it must not run in the kit

    # The self-hosted GPU runner never runs a fork's pull request: pushes and pull requests
    # from this repository only, and the job says why.
    def test_gpu_job_skips_forks(self):
        ci = (KIT / ".github/workflows/ci.yml").read_text()
        job = ci[ci.index("\n  gpu:\n"):]
        job = job[:job.index("    steps:")]
        self.assertIn("    if: github.event_name != 'pull_request' || "
                      "github.event.pull_request.head.repo.full_name == github.repository\n", job)
        self.assertIn("fork", job)  # the comment
        self.assertLess(job.index("    if:"), job.index("    runs-on: [self-hosted, gpu]"))
        self.assertNotIn("pull_request_target", ci)


    # The runner holds no answer key: a student edits this workflow and its steps run as the
    # runner's user, so a key the grader could read there, a student could print.
    def test_no_answer_key_on_the_runner(self):
        for labs in (COURSE_LABS, ["vectorAdd"]):
            text = export.render_workflow(self.template, labs)
            commands = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#")).lower()
            for leak in ("answer-keys", "answer_keys", "answer_key", "labkit-keys", "solutions"):
                self.assertNotIn(leak, commands, labs)
            self.assertIn("graded at the\n# deadline", text)  # the header says where keys are checked instead


def step_script(workflow: str, name: str) -> str:
    """The `run: |` block of the step called `name`, as the runner's shell gets it."""
    lines = workflow.splitlines()
    start = lines.index(f"      - name: {name}")
    run = next(i for i in range(start, len(lines)) if lines[i].strip() == "run: |")
    body = []
    for line in lines[run + 1:]:
        if line.strip() and not line.startswith(" " * 10):
            break
        body.append(line)
    return textwrap.dedent("\n".join(body)).strip() + "\n"


# The Classroom workflow grades in the pristine kit the runner names (LABKIT_PRISTINE),
# else the repository as it is, and the job summary says which. Its Grade step is run
# with bash, as the runner runs it, with a python3 that records how it was called.
@unittest.skipUnless(shutil.which("bash"), "needs bash")
class ClassroomModesTest(unittest.TestCase):
    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.workflow = export.render_workflow((KIT / export.TEMPLATE).read_text(), ["vectorAdd", "scan"])
        self.workspace, self.pristine = self.tmp / "student-repo", self.tmp / "opt" / "labkit-pristine"
        self.workspace.mkdir()
        self.pristine.mkdir(parents=True)
        write_script(self.tmp / "bin" / "python3", f"""
            import json, os, sys
            open({str(self.tmp / "calls")!r}, "a").write(json.dumps({{"cwd": os.getcwd(), "argv": sys.argv[1:]}}) + "\\n")
            sys.exit(1)  # a lab not fully correct
        """)

    def grade(self, pristine: bool) -> tuple[dict, str, str, str]:
        script = self.tmp / "grade.sh"
        script.write_text(step_script(self.workflow, "Grade"))
        summary, output = self.tmp / "summary.md", self.tmp / "output"
        env = {"PATH": f"{self.tmp / 'bin'}{os.pathsep}{os.environ['PATH']}", "GITHUB_WORKSPACE": str(self.workspace),
               "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output),
               "LABKIT_REFERENCE_DIR": "/opt/labkit-reference", "HOME": str(self.tmp)}
        if pristine:
            env["LABKIT_PRISTINE"] = str(self.pristine)
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=self.workspace,
                                env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stderr)
        call = json.loads((self.tmp / "calls").read_text().splitlines()[-1])
        return call, summary.read_text(), output.read_text(), result.stdout

    def test_pristine_kit(self):
        call, summary, output, stdout = self.grade(pristine=True)
        ws = self.workspace
        self.assertEqual(call["cwd"], str(self.pristine))  # the pristine kit's own grader
        self.assertEqual(call["argv"], ["-m", "grader", "--submission", str(ws), "--pristine", str(self.pristine),
                                        "--build-dir", f"{ws}/build/grader", "--json", f"{ws}/report.json"])
        self.assertFalse(any("key" in arg.lower() for arg in call["argv"]))  # no answer key on the runner
        self.assertIn(f"**Graded with the course's pristine kit** (`{self.pristine}` on the runner): only your "
                      "`labs/<lab>/<lab>.cu`, `labs/<lab>/answers.md` and `labs/<lab>/WRITEUP.md` files count",
                      summary)
        self.assertNotIn("Warning", summary)
        self.assertEqual(output, "exit=1\n")
        self.assertNotIn("::warning::", stdout)

    def test_repository_as_it_is(self):
        call, summary, output, stdout = self.grade(pristine=False)
        self.assertEqual(call["cwd"], str(self.workspace))
        self.assertEqual(call["argv"], ["-m", "grader", "--json", "report.json"])
        self.assertIn("> **Warning:** graded from this repository as it is: its tests, CMake files and grader are "
                      "the student's own", summary)
        self.assertIn("::warning::LABKIT_PRISTINE is not set on this runner", stdout)
        self.assertEqual(output, "exit=1\n")

    # The generated workflow holds both branches, and the report is rendered by the
    # pristine kit's grader when there is one.
    def test_text(self):
        text = self.workflow
        self.assertIn('if [ -n "${LABKIT_PRISTINE:-}" ]; then', text)
        self.assertIn('python3 -m grader --submission "$GITHUB_WORKSPACE" --pristine "$LABKIT_PRISTINE"', text)
        self.assertIn("python3 -m grader --json report.json || status=$?", text)
        self.assertIn('cd "${LABKIT_PRISTINE:-$GITHUB_WORKSPACE}" &&\n          python3 -m grader report '
                      '"$GITHUB_WORKSPACE/report.json"', text)


class ReadmeTest(unittest.TestCase):
    def test_sections(self):
        text = "# t\n\n## A\n\none\n\n## B\n\ntwo\n### sub\n\nthree\n"
        self.assertEqual(export.markdown_section(text, "A"), "one")
        self.assertEqual(export.markdown_section(text, "B"), "two\n### sub\n\nthree")
        self.assertEqual(export.markdown_section(text, "C"), "")

    # Without the kit's README sections, the student README still says how to build.
    def test_fallback(self):
        readme = export.student_readme("", ["vectorAdd"])
        self.assertIn("cmake --workflow --preset student", readme)
        self.assertIn("## Grading on every push", readme)


class JudgeTest(unittest.TestCase):
    def test_parse_ctest(self):
        found = export.parse_ctest(CTEST_NO_GPU + "5/5 Test #6: x.gpu ....***Exception: SegFault  0.01 sec\n"
                                   "6/6 Test #7: y.cpu ....***Timeout   1.00 sec\n7/7 Test #8: z ...***Not Run   0 sec\n")
        self.assertEqual([(r.name, r.outcome) for r in found][-4:], [
            ("scan.student.cpu", "passed"), ("x.gpu", "crashed"), ("y.cpu", "timeout"), ("z", "not run")])
        self.assertEqual(found[0].labels, frozenset())  # no listing given: no labels
        self.assertEqual(results(CTEST_NO_GPU)[1].labels, {"common", "gpu"})

    # The labels come from ctest's own listing of the tests.
    def test_ctest_labels(self):
        labels = export.ctest_labels(RECORDED_SHOW)
        self.assertEqual(len(labels), 21)
        self.assertEqual(labels["vectorAdd.student.gpu_alone"], {"gpu", "student"})
        self.assertEqual(labels["common.options.help"], {"common", "cpu"})
        self.assertEqual(sorted(name for name, found in labels.items() if "gpu" in found),
                         ["common.gpu", "vectorAdd.student.gpu", "vectorAdd.student.gpu_alone"])
        for text in ("not json", "[]", '{"kind": "ctestInfo"}', '{"kind": "other", "tests": []}'):
            with self.assertRaises(ValueError, msg=text):
                export.ctest_labels(text)

    # No GPU: every test labelled gpu is skipped, the CPU tests pass: as designed. This is
    # the template's real output; its vectorAdd.student.gpu_alone is a GPU test too.
    def test_recorded_without_gpu(self):
        found = export.parse_ctest(RECORDED_CTEST, export.ctest_labels(RECORDED_SHOW))
        self.assertEqual(len(found), 21)
        verdict = export.judge(found, ["vectorAdd"], has_gpu=False)
        self.assertTrue(verdict.ok, verdict.problems)
        self.assertIn("no GPU here", verdict.notes[0])
        # The same skips where the machine has a GPU: its GPU tests did not run.
        verdict = export.judge(found, ["vectorAdd"], has_gpu=True)
        self.assertFalse(verdict.ok)
        self.assertEqual([problem.split(":")[0] for problem in verdict.problems],
                         ["common.gpu", "vectorAdd.student.gpu", "vectorAdd.student.gpu_alone"])
        self.assertIn("although this machine has a GPU", verdict.problems[0])

    def test_no_gpu(self):
        verdict = export.judge(results(CTEST_NO_GPU), ["vectorAdd", "scan"], has_gpu=False)
        self.assertEqual(verdict.problems, ["test scan.student.gpu is missing: was labs/scan built?"])
        verdict = export.judge(results(CTEST_NO_GPU), ["vectorAdd"], has_gpu=False)
        self.assertTrue(verdict.ok, verdict.problems)

    # Forgiven by label, not by name: a CPU test skipped is a problem whatever its name,
    # and a test without labels cannot be judged.
    def test_skips_by_label(self):
        labels = {**LABELS, "common.gpu": {"common", "cpu"}}
        verdict = export.judge(results(CTEST_NO_GPU, labels), ["vectorAdd"], has_gpu=False)
        self.assertEqual(verdict.problems, ["common.gpu: skipped (a CPU test: it must pass on every machine)"])
        unlabelled = {k: v for k, v in LABELS.items() if k != "vectorAdd.student.gpu"}
        verdict = export.judge(results(CTEST_NO_GPU, unlabelled), ["vectorAdd"], has_gpu=False)
        self.assertEqual(len(verdict.problems), 1)
        self.assertIn("vectorAdd.student.gpu: skipped, and it has neither the label cpu nor gpu", verdict.problems[0])
        failed_cpu = CTEST_NO_GPU.replace("vectorAdd.student.cpu ............   Passed",
                                          "vectorAdd.student.cpu ............***Failed")
        verdict = export.judge(results(failed_cpu), ["vectorAdd"], has_gpu=False)
        self.assertEqual(verdict.problems, ["vectorAdd.student.cpu: failed"])

    # A GPU: the skeleton's GPU tests fail (expected), everything else passes.
    def test_gpu(self):
        verdict = export.judge(results(CTEST_GPU), ["vectorAdd"], has_gpu=True)
        self.assertTrue(verdict.ok, verdict.problems)
        self.assertEqual(verdict.notes, [])
        alone = CTEST_GPU + "5/5 Test #5: vectorAdd.student.gpu_alone ....***Failed    0.5 sec\n"
        self.assertTrue(export.judge(results(alone), ["vectorAdd"], has_gpu=True).ok)
        # A GPU test that is not a skeleton's must pass.
        failed = CTEST_GPU.replace("common.gpu .......................   Passed", "common.gpu ....***Failed")
        self.assertEqual(export.judge(results(failed), ["vectorAdd"], has_gpu=True).problems, ["common.gpu: failed"])

    def test_problems(self):
        bad = (CTEST_GPU.replace("common.cpu .......................   Passed", "common.cpu ....***Failed")
               .replace("vectorAdd.student.gpu ............***Failed", "vectorAdd.student.gpu ....***Timeout")
               + "5/5 Test #5: vectorAdd.solution.cpu ....   Passed    0.1 sec\n")
        verdict = export.judge(results(bad), ["vectorAdd"], has_gpu=True)
        self.assertFalse(verdict.ok)
        self.assertEqual(verdict.problems, ["common.cpu: failed",
                                            "vectorAdd.student.gpu: timeout (a skeleton must fail cleanly)",
                                            "vectorAdd.solution.cpu: the template builds a solution"])
        self.assertFalse(export.judge([], [], has_gpu=False).ok)
        skipped_cpu = export.judge(results("1/1 Test #1: vectorAdd.student.cpu ...***Skipped 0 sec\n"
                                           "2/2 Test #2: vectorAdd.student.gpu ...***Failed 0 sec\n"),
                                   ["vectorAdd"], has_gpu=True)
        self.assertEqual(skipped_cpu.problems, ["vectorAdd.student.cpu: skipped (a CPU test: it must pass on every "
                                                "machine)"])

    def test_passing_skeleton_is_a_note(self):
        verdict = export.judge(results(CTEST_GPU.replace("***Failed", "   Passed")), ["vectorAdd"], has_gpu=True)
        self.assertTrue(verdict.ok)
        self.assertIn("expected to fail", verdict.notes[0])


# The check end to end with fake cmake and ctest: the commands, and the verdict reported.
class CheckTest(ExportTestCase):
    def fake_tools(self, ctest_output: str, build_fails: bool = False, listing: str | None = None,
                   has_gpu: bool = False) -> Path:
        tools = self.tmp / "tools"
        log = self.tmp / "calls"
        listing = show_only(LABELS) if listing is None else listing
        write_script(tools / "cmake", f"""
            import sys
            open({str(log)!r}, "a").write(" ".join(sys.argv[1:]) + "\\n")
            if sys.argv[1] == "--build" and {build_fails}:
                print("labs/scan/scan.cu(3): error: expected a ;")
                sys.exit(1)
        """)
        write_script(tools / "ctest", f"""
            import sys
            open({str(log)!r}, "a").write("ctest " + " ".join(sys.argv[1:]) + "\\n")
            print({listing!r} if "--show-only=json-v1" in sys.argv else {ctest_output!r})
        """)
        patcher = mock.patch.dict(os.environ, {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"})
        patcher.start()
        self.addCleanup(patcher.stop)
        # Whether this machine has a GPU is the test's choice, never the host's.
        probe = mock.patch.object(export.gpu, "probe", return_value=gpu.Probe(has_gpu, "" if has_gpu else "none",
                                                                              ["GPU 0: X"] if has_gpu else []))
        probe.start()
        self.addCleanup(probe.stop)
        return log

    def test_check_passes(self):
        log = self.fake_tools(CTEST_NO_GPU.replace("scan", "vectorAdd2") +
                              "9/9 Test #9: scan.student.cpu ...   Passed 0 sec\n"
                              "9/9 Test #10: scan.student.gpu ...***Skipped 0 sec\n")
        (self.root / "grader" / "__main__.py").write_text("print('grader 0.1.0')\n")
        code, out, err = self.main("--cuda-arch", "90")
        self.assertEqual(code, 0, out + err)
        self.assertIn("check passed", out)
        self.assertIn("no GPU here: the GPU tests will be skipped", out)
        calls = log.read_text().splitlines()
        self.assertIn("-DLABKIT_BUILD_SOLUTIONS=OFF", calls[0])
        self.assertIn("-DCMAKE_CUDA_ARCHITECTURES=90", calls[0])
        self.assertIn(f"-S {self.out}", calls[0])
        self.assertTrue(calls[1].startswith("--build "))
        self.assertTrue(calls[2].startswith("ctest --test-dir ") and calls[2].endswith(" --show-only=json-v1"))
        self.assertTrue(calls[3].startswith("ctest --test-dir "))
        build_dir = calls[1].split()[1]
        self.assertFalse(build_dir.startswith(str(self.out)))  # built outside the template
        self.assertFalse(Path(build_dir).exists())  # and cleaned up

    # The recorded template without a GPU: its three GPU tests skip, and that passes.
    def test_check_recorded_without_gpu(self):
        self.fake_tools(RECORDED_CTEST, listing=RECORDED_SHOW)
        (self.root / "grader" / "__main__.py").write_text("print('grader 0.1.0')\n")
        code, out, err = self.main("--labs", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("check: ctest: 18 passed, 3 skipped", out)

    # On a GPU machine the skeletons fail their GPU tests: the check passes and says so.
    def test_check_on_gpu(self):
        self.fake_tools(CTEST_GPU, has_gpu=True)
        (self.root / "grader" / "__main__.py").write_text("print('grader 0.1.0')\n")
        code, out, err = self.main("--labs", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("check: ctest: 1 failed, 3 passed", out)
        self.assertIn("the skeletons fail their GPU tests, as designed (1 lab)", out)

    def test_check_fails(self):
        self.fake_tools(CTEST_GPU, build_fails=True)
        code, out, err = self.main()
        self.assertEqual(code, 1)
        self.assertIn("build failed", err)
        self.assertIn("labs/scan/scan.cu(3): error: expected a ;", err)

    # Without the tests' labels the check cannot tell GPU tests from CPU ones: it fails.
    def test_check_without_labels(self):
        self.fake_tools(CTEST_NO_GPU, listing="ctest: unknown option")
        code, out, err = self.main("--labs", "vectorAdd")
        self.assertEqual(code, 1, out + err)
        self.assertIn("cannot list the tests and their labels: ctest --show-only=json-v1 did not print JSON", err)


# "Nothing leaks": the handout's own layout in a throwaway clone of the kit, with the
# kit's .gitignore as it is on disk (the clone holds the committed one): grades, a roster,
# a secret, a Slurm script, the reference package and the students' clones at the top,
# an untracked note, ignored files, and a roster that git tracks by mistake.
@unittest.skipUnless(git_reads_kit(), "needs git and a git checkout of the kit that git can read")
class LeakTest(unittest.TestCase):
    PLANTED = {
        "grades/gradebook.csv": "student,total\nalice,87.5\n",
        "grades/reports/alice.json": '{"total": 87.5}\n',
        "roster.csv": "student,path\nalice,submissions/alice\n",
        "grader-secret.txt": "s3cret\n",
        "grade.sbatch": "#!/bin/bash\n",
        "labkit-reference.tar.gz": "libraries\n",
        "submissions/alice/labs/vectorAdd/vectorAdd.cu": "// alice's answer\n",
        "build/dev/CMakeCache.txt": "# ignored by the kit's .gitignore\n",
        "scratch/mine.txt": "ignored in .git/info/exclude\n",
        "rosters/roster-2025.csv": "student,path\n",  # `git add -f`: tracked, still never exported
        "notes.txt": "an untracked file at the top\n",
    }

    def setUp(self) -> None:
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tmp = Path(tmp.name)
        self.kit = self.tmp / "kit"
        subprocess.run(["git", "clone", "-q", "--shared", str(KIT), str(self.kit)], check=True, timeout=120)
        shutil.copyfile(KIT / ".gitignore", self.kit / ".gitignore")
        (self.kit / ".git" / "info").mkdir(exist_ok=True)
        with (self.kit / ".git" / "info" / "exclude").open("a") as exclude:
            exclude.write("/scratch/\n")
        for name, text in self.PLANTED.items():
            (self.kit / name).parent.mkdir(parents=True, exist_ok=True)
            (self.kit / name).write_text(text)
        subprocess.run(["git", "-C", str(self.kit), "add", "-f", "rosters/roster-2025.csv"], check=True, timeout=60)
        self.out = self.tmp / "template"

    def export(self, *args: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = export.main(["--root", str(self.kit), "--out", str(self.out), "--no-check", *args])
        return code, out.getvalue(), err.getvalue()

    def template(self) -> set[str]:
        return {p.relative_to(self.out).as_posix() for p in self.out.rglob("*") if p.is_file() and ".git" not in p.parts}

    def test_kit_gitignore_covers_the_handouts_files(self):
        for name in ("grades/gradebook.csv", "grades/reports/alice.json", "roster.csv", "grader-secret.txt",
                     "grade.sbatch", "labkit-reference.tar.gz", "submissions/alice/labs/vectorAdd/vectorAdd.cu"):
            with self.subTest(name):
                ignored = subprocess.run(["git", "-C", str(self.kit), "check-ignore", "-q", "--no-index", name],
                                         timeout=60)
                self.assertEqual(ignored.returncode, 0, f"{name} is not ignored by the kit's .gitignore")

    def test_nothing_leaks(self):
        code, out, err = self.export()
        self.assertEqual(code, 0, out + err)
        files = self.template()
        self.assertIn("labs/vectorAdd/vectorAdd.cu", files)
        self.assertIn(".github/workflows/classroom.yml", files)
        self.assertFalse(files & set(self.PLANTED), files & set(self.PLANTED))
        self.assertFalse([f for f in files if f.startswith(("grades/", "submissions/", "build/", "scratch/"))])
        self.assertIn("left out: 1 file git does not track: notes.txt", out)
        self.assertIn("commit the ones students need", out)
        self.assertIn("left out: the instructor's files", out)  # the tracked roster

    def test_include_untracked(self):
        code, out, err = self.export("--include-untracked")
        self.assertEqual(code, 0, out + err)
        files = self.template()
        self.assertIn("notes.txt", files)
        self.assertEqual(files & set(self.PLANTED), {"notes.txt"})
        self.assertNotIn("git does not track", out)

    # The handout's template folder is beside the kit; one inside it is refused.
    def test_out_inside_the_clone(self):
        self.out = self.kit / "template"
        code, out, err = self.export()
        self.assertEqual((code, out), (2, ""))
        self.assertIn("is inside the kit", err)
        self.assertFalse(self.out.exists())


# The check's build shows what it does while it runs: Ninja's [n/m], a line every few
# seconds here (stdout is not a terminal). Fake cmake, ninja and ctest stand in.
class ProgressTest(ExportTestCase):
    def setUp(self) -> None:
        super().setUp()
        tools = self.tmp / "tools"
        write_script(tools / "ninja", """
            import sys
            if "-t" in sys.argv and "commands" in sys.argv:
                print("\\n".join(f"nvcc -c file{i}.cu" for i in range(4)))
        """)
        write_script(tools / "cmake", f"""
            import os, sys, time
            args = sys.argv[1:]
            if args[0] == "--build":
                for i in range(4):  # four commands, as Ninja records them when each ends
                    time.sleep(0.4)
                    with open(os.path.join(args[1], ".ninja_log"), "a") as log:
                        log.write(("# ninja log v5\\n" if i == 0 else "") + f"0\\t1\\t0\\tfile{{i}}.o\\tabc\\n")
                sys.exit(0)
            build = args[args.index("-B") + 1]
            open(os.path.join(build, "build.ninja"), "w").write("# fake\\n")
            open(os.path.join(build, "CMakeCache.txt"), "w").write("CMAKE_MAKE_PROGRAM:FILEPATH={tools / 'ninja'}\\n")
        """)
        write_script(tools / "ctest", f"""
            import sys
            print({show_only(LABELS)!r} if "--show-only=json-v1" in sys.argv else {CTEST_NO_GPU!r})
        """)
        patcher = mock.patch.dict(os.environ, {"PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"})
        patcher.start()
        self.addCleanup(patcher.stop)
        probe = mock.patch.object(export.gpu, "probe", return_value=gpu.Probe(False, "none"))
        probe.start()
        self.addCleanup(probe.stop)
        (self.root / "grader" / "__main__.py").write_text("print('grader 0.1.0')\n")

    def test_build_progress_lines(self):
        with mock.patch.object(progress, "FIRST_S", 0.2), mock.patch.object(progress, "EVERY_S", 0.3):
            code, out, err = self.main("--labs", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        seen = [int(m.group(1)) for m in re.finditer(r"^check: building: \[(\d)/4\] commands done \(\d+ s\)$", out,
                                                     flags=re.M)]
        self.assertGreaterEqual(len(seen), 3, out)
        self.assertEqual(seen, sorted(seen))  # it moves forward
        self.assertGreaterEqual(seen[-1], 2, out)
        self.assertLess(out.index("check: building every lab"), out.index("check: building: ["))
        self.assertLess(out.index("check: building: ["), out.index("check: running the tests"))

    # On a terminal: one line, rewritten; without Ninja, the time so far; a short build: nothing.
    def test_terminal_and_short_builds(self):
        class Terminal(io.StringIO):
            def isatty(self) -> bool:
                return True

        stream = Terminal()
        with mock.patch.object(progress, "FIRST_S", 0.05), mock.patch.object(progress, "TTY_EVERY_S", 0.05):
            with progress.BuildProgress(self.tmp, "building", stream=stream) as watch:
                time.sleep(0.4)
        text = stream.getvalue()
        self.assertTrue(text.startswith("\rbuilding: still running (0 s)"), repr(text))
        self.assertGreater(len(watch.lines), 1)
        self.assertEqual(text.count("\n"), 1)
        self.assertTrue(text.endswith("\n"))
        quiet = Terminal()
        with progress.BuildProgress(self.tmp, "building", stream=quiet):
            pass
        self.assertEqual(quiet.getvalue(), "")


if __name__ == "__main__":
    unittest.main()
