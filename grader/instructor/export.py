"""Write the student template repository: `python3 -m grader export --out DIR`.

The template is this kit without what only instructors need, with the GitHub Classroom
workflow in place and a README for students; then it is checked the way a student
will use it: configured without solutions, built, and its tests run. The CPU tests
must pass; the skeletons' GPU tests fail by design on a GPU machine, and nothing else
may fail. Which tests need a GPU is read from their CTest labels (cmake/LabKit.cmake
labels each test `cpu` or `gpu`; `ctest --show-only=json-v1` lists them): on a machine
without a GPU exactly those are forgiven for being skipped.

Nothing leaks: in a git checkout only the files git tracks are copied (a file you have
not committed is listed and left out; --include-untracked copies those too, never an
ignored one). Left out as well (INSTRUCTOR_ONLY): solutions/, the course's grader.toml,
the kit's own CI (.github/, .ci/), the instructors' handout, the grader's own test
suite and the instructor commands (grader/instructor/: export, package, batch;
`python3 -m grader export` in a student repository says that it is not part of that
copy); and, tracked or not, what an instructor keeps at the kit's top while running a
course (PRIVATE: grades, rosters, secrets, submissions, the reference package), which
the kit's .gitignore also ignores. The template is written outside the kit, never in it.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import re
import shutil
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from grader import build, commandline, gpu, manifest, proc
from grader.formats.classroom import classroom_output_name
from grader.instructor.progress import BuildProgress

EXIT_OK, EXIT_CHECK_FAILED, EXIT_USAGE = 0, 1, 2
KIT_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = Path("grader/templates/classroom.yml")  # relative to the kit root
# The template's placeholders: the exported labs, comma-separated, and a line written once
# per lab with its reporter variable (classroom_output_name) in place of the token.
LABS_TOKEN, RESULTS_TOKEN = "LABKIT_LABS", "LABKIT_LAB_RESULTS"
TEMPLATE_NOTE = "##"  # a template line starting so (after spaces) is for its readers, left out of the workflow
WORKFLOW = Path(".github/workflows/classroom.yml")  # where it goes in the template
# Files the export writes rather than copies: a student repository differs from the kit
# there by design (the overlay of instructor-mode grading need not report them).
GENERATED = ("README.md", WORKFLOW.as_posix())

# Paths (relative to the kit root) that stay with the instructor; a trailing / is a folder.
INSTRUCTOR_ONLY = (
    "solutions/",               # the reference solutions
    "grader.toml",              # the course's grading config
    ".github/",                 # the kit's own CI; the template gets the Classroom workflow instead
    ".ci/",                     # the kit's CI scripts (gpu-check grades the solutions)
    "handouts/instructors.md",  # runner set-up, export, batch grading
    "grader/templates/",        # the source of the Classroom workflow
    "grader/tests/",            # the grader's own tests (they test the instructor commands too)
    "grader/instructor/",       # the instructor commands: export, package, batch
)
# What an instructor keeps at the kit's top while running a course, with the names
# handouts/instructors.md uses (the kit's .gitignore ignores the same): never exported,
# even when git tracks it. Names without a / match a file's name in any folder; a
# trailing / is a folder at the top.
PRIVATE = (
    "grades/",                  # batch --out grades/: gradebook.csv, reports/, logs/
    "submissions/",             # the students' clones the roster names
    "roster*.csv",              # roster.csv: student,path
    "*secret*",                 # grader-secret.txt: --secret-file
    "*.sbatch",                 # batch --slurm grade.sbatch
    "labkit-reference*",        # package --out labkit-reference.tar.gz
)
PRIVATE_REASON = "the instructor's files: grades, rosters, secrets, submissions, the reference package"
MAX_LISTED = 10  # untracked files named in the export's output
# When the kit is not a git checkout: what never belongs in a copy.
NEVER = ("build", "build-*", ".git", "__pycache__", "*.pyc", ".whl", ".venv")

TIMEOUTS = {"configure": 600, "build": 3 * 3600, "ctest": 3600, "grader": 60}


# --- which files -----------------------------------------------------------------------

def git_files(root: Path, *which: str) -> list[str] | None:
    """`git ls-files <which>` in `root`: the files, relative to `root`, that exist; None
    when `root` is not in a git checkout (or git is missing)."""
    try:
        result = proc.run(["git", "-C", str(root), "ls-files", "-z", *which], timeout=60, cap=1 << 26)
    except proc.LaunchError:
        return None
    if result.returncode != 0 or result.timed_out or result.stdout_cut:
        return None
    names = sorted({name for name in result.stdout.split("\0") if name})
    return [name for name in names if (root / name).is_file() or (root / name).is_symlink()]


def kit_files(root: Path) -> list[str]:
    """The kit's files, relative to `root`: in a git checkout the files git tracks (so
    build outputs, ignored and untracked files stay out), else a walk. ValueError for a
    checkout git cannot list: a walk there would copy whatever lies in it."""
    tracked = git_files(root, "--cached")
    if tracked is not None:
        return tracked
    if (root / ".git").exists():
        raise ValueError(f"{root} is a git checkout, but `git ls-files` fails there, and the export copies what git "
                         f"tracks: run `git -C {root} status` to see why (a checkout owned by another user needs "
                         f"`git config --global --add safe.directory {root}`)")
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not _never(d))
        rel = Path(folder).relative_to(root)
        files += [(rel / name).as_posix() for name in sorted(names) if not _never(name)]
    return files


def untracked_files(root: Path) -> list[str]:
    """The files git neither tracks nor ignores ([] outside a git checkout): left out of the
    template unless --include-untracked."""
    return git_files(root, "--others", "--exclude-standard") or []


def private(name: str) -> bool:
    """Whether the kit path `name` is one of the instructor's own files (PRIVATE)."""
    base = name.rsplit("/", 1)[-1]
    for pattern in PRIVATE:
        if pattern.endswith("/"):
            if name.startswith(pattern):
                return True
        elif fnmatch.fnmatchcase(base, pattern):
            return True
    return False


def _never(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in NEVER)


def student_files(files: list[str], labs: list[str], course: list[str]) -> tuple[list[str], dict[str, int]]:
    """The files that go into the template, and how many were left out per reason: those of
    the labs of `course` (the kit's labs) that are not among `labs` are left out."""
    left_out: dict[str, int] = {}
    dropped_labs = [lab for lab in course if lab not in labs]
    keep = []
    for name in files:
        reason = next((rule for rule in INSTRUCTOR_ONLY if name == rule or (rule.endswith("/") and name.startswith(rule))),
                      None)
        if reason is None and private(name):
            reason = PRIVATE_REASON
        if reason is None:
            for lab in dropped_labs:
                if name.startswith(f"labs/{lab}/") or name == f"handouts/{lab}.md":
                    reason = f"labs not exported ({lab})"
                    break
        if reason is None:
            keep.append(name)
        else:
            key = reason if not reason.startswith("labs not") else "labs not exported"
            left_out[key] = left_out.get(key, 0) + 1
    return keep, left_out


def kit_labs(root: Path) -> list[str]:
    """The labs of the kit at `root`, from their manifests (labs/<lab>/lab.json), in course
    order; ValueError when one is broken."""
    try:
        return manifest.names(root)
    except manifest.ManifestError as exc:
        raise ValueError(str(exc)) from None


def present_labs(root: Path) -> list[str]:
    """The labs of the kit at `root` that can be exported: a manifest and an interface (<lab>.h)."""
    return [lab for lab in kit_labs(root) if (root / "labs" / lab / f"{lab}.h").is_file()]


# --- what is generated -------------------------------------------------------------------

def render_workflow(template: str, labs: list[str]) -> str:
    """The Classroom workflow for `labs`, generated from the lab list: the reporter's
    runners and the report command's --labs name exactly these labs (LABS_TOKEN), and each
    gets its <LAB>_RESULTS line (the template's RESULTS_TOKEN line, once per lab); the
    template's notes (TEMPLATE_NOTE) are left out."""
    lines: list[str] = []
    for line in template.splitlines(keepends=True):
        if line.lstrip().startswith(TEMPLATE_NOTE):
            continue
        if RESULTS_TOKEN in line:
            lines += [line.replace(RESULTS_TOKEN, classroom_output_name(lab)) for lab in labs]
            continue
        lines.append(line.replace(LABS_TOKEN, ",".join(labs)))
    return "".join(lines)


def student_readme(kit_readme: str, labs: list[str]) -> str:
    """The template's README: the student parts of the kit's README, the labs, and how
    grading on push works."""
    rows = "\n".join(f"| {lab} | [handouts/{lab}.md](handouts/{lab}.md) | `labs/{lab}/{lab}.cu`, "
                     f"`labs/{lab}/answers.md`, `labs/{lab}/WRITEUP.md` |" for lab in labs)
    parts = [
        "# CUDA labs\n",
        _fill("Your labs for the GPU programming course. In each lab you edit three files: "
              "`labs/<lab>/<lab>.cu`, your code, `labs/<lab>/answers.md`, your answers to the "
              "handout's graded questions, and `labs/<lab>/WRITEUP.md`, your write-up (graded by "
              "hand); every other file is provided. The tests say what is wrong "
              "(which size, which index, expected and actual values, the seed to reproduce it), "
              "the bench times your kernels against the CPU, and the grader gives the score "
              "you will get.") + "\n",
        "| lab | handout | your files |\n|:--|:--|:--|\n" + rows + "\n",
    ]
    for title in ("Requirements", "For students"):
        text = markdown_section(kit_readme, title)
        if text:
            parts.append(f"## {'Build, test, grade' if title == 'For students' else title}\n\n{text}\n")
    if not markdown_section(kit_readme, "For students"):
        parts.append("## Build, test, grade\n\n"
                     "    cmake --workflow --preset student   # configure, build and run your labs' tests\n"
                     "    python3 -m grader                   # the score you will get\n")
    parts.append("## Grading on every push\n\n" + _fill(
        "Each push runs the workflow *Autograding Tests* (`.github/workflows/classroom.yml`) on "
        "the course's GPU machine: it builds your labs, runs the tests and the bench, and sends "
        "the points to GitHub Classroom. The run's summary page shows the score table and every "
        "failure with the command that reproduces it; compile errors and failed tests are marked "
        "at their file and line; the JSON report and a page to open in a browser (`report.html`) are attached to the run as `grading-report`. "
        "Each run draws new random inputs: the seed is in the summary. Do not edit the workflow.") + "\n\n"
        + _fill("The reference solutions are not in this repository, so on your own machine the bench "
                "has no reference to time you against and the grader gives no performance points; "
                "the course's GPU machine has the reference. Your course may compute the final grade "
                "again from your repository at the deadline, with new random inputs.") + "\n")
    grading = markdown_section(kit_readme, "How the grade is computed")
    if grading:
        parts.append(f"## How the grade is computed\n\n{grading}\n")
    return "\n".join(parts)


def _fill(text: str) -> str:
    return textwrap.fill(text, width=88, break_on_hyphens=False, break_long_words=False)


def markdown_section(text: str, title: str) -> str:
    """The body of the `## title` section of a Markdown text ('' if there is none)."""
    match = re.search(rf"^## {re.escape(title)}\s*\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    return match.group(1).strip() if match else ""


# --- writing -------------------------------------------------------------------------------

def write_template(root: Path, out: Path, labs: list[str],
                   files: list[str] | None = None) -> tuple[int, dict[str, int]]:
    """Copy the student files among `files` (default: kit_files) of `root` to `out` and add
    the generated ones; returns the number of files written and what was left out."""
    files = sorted(set(kit_files(root) if files is None else files))
    keep, left_out = student_files(files, labs, kit_labs(root))
    for name in keep:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target, follow_symlinks=False)
    readme = (root / "README.md").read_text() if (root / "README.md").is_file() else ""
    (out / "README.md").write_text(student_readme(readme, labs))
    workflow = out / WORKFLOW
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(render_workflow((root / TEMPLATE).read_text(), labs))
    written = len(keep) + (0 if "README.md" in keep else 1) + 1
    return written, left_out


def prepare_out(out: Path, root: Path, force: bool) -> None:
    """Make `out` an empty folder (keeping a .git: re-exporting into a clone of the template
    repository updates it). Raises ValueError when that is not allowed."""
    if out == root or root.is_relative_to(out):
        raise ValueError(f"--out {out} holds the kit itself: choose a new folder")
    if out.is_relative_to(root):  # the next export would copy this one into itself
        raise ValueError(f"--out {out} is inside the kit {root}: write the template outside it, "
                         f"e.g. --out {root.parent / 'cuda-labs-template'}")
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file: choose a folder")
    contents = [p for p in out.iterdir() if p.name != ".git"] if out.is_dir() else []
    if contents and not force:
        raise ValueError(f"--out {out} is not empty: choose a new folder, or pass --force to replace its "
                         "contents (a .git folder is kept)")
    for path in contents:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    out.mkdir(parents=True, exist_ok=True)


# --- checking --------------------------------------------------------------------------------

@dataclass
class CtestResult:
    name: str
    outcome: str  # passed | failed | skipped | timeout | crashed | not run
    labels: frozenset[str] = frozenset()  # its CTest labels (ctest --show-only=json-v1)

    @property
    def needs_gpu(self) -> bool:
        return GPU_LABEL in self.labels

    @property
    def skeleton(self) -> bool:
        """A test of a student's file: in the template, the untouched skeleton's."""
        return STUDENT_LABEL in self.labels


GPU_LABEL, STUDENT_LABEL = "gpu", "student"  # cmake/LabKit.cmake: labkit_add_gtest

_CTEST_LINE = re.compile(r"^\s*\d+/\d+\s+Test\s+#\d+:\s+(\S+)\s+\.*\s*(?:\*\*\*)?"
                         r"(Passed|Failed|Skipped|Timeout|Not Run|Exception|Disabled|SegFault|BAD_COMMAND)")


def parse_ctest(output: str, labels: dict[str, frozenset[str]] | None = None) -> list[CtestResult]:
    """Per-test outcomes from ctest's progress lines (`1/9 Test #1: name ....   Passed`),
    each with its labels from `labels` (ctest_labels) where given."""
    words = {"Passed": "passed", "Failed": "failed", "Skipped": "skipped", "Timeout": "timeout",
             "Not Run": "not run", "Disabled": "skipped", "Exception": "crashed", "SegFault": "crashed",
             "BAD_COMMAND": "not run"}
    return [CtestResult(m.group(1), words[m.group(2)], (labels or {}).get(m.group(1), frozenset()))
            for m in map(_CTEST_LINE.match, output.splitlines()) if m]


def ctest_labels(text: str) -> dict[str, frozenset[str]]:
    """Each test's labels, from `ctest --show-only=json-v1`; ValueError when the text is not
    that listing."""
    try:
        data = json.loads(text)
    except ValueError:
        raise ValueError("ctest --show-only=json-v1 did not print JSON") from None
    tests = data.get("tests") if isinstance(data, dict) else None
    if not isinstance(tests, list) or data.get("kind") != "ctestInfo":
        raise ValueError("ctest --show-only=json-v1 printed no list of tests")
    found: dict[str, frozenset[str]] = {}
    for test in tests:
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            continue
        labels: list[str] = []
        for prop in test.get("properties") or []:
            if isinstance(prop, dict) and prop.get("name") == "LABELS" and isinstance(prop.get("value"), list):
                labels = [str(label) for label in prop["value"]]
        found[test["name"]] = frozenset(labels)
    return found


@dataclass
class Verdict:
    ok: bool
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def judge(results: list[CtestResult], labs: list[str], has_gpu: bool) -> Verdict:
    """Whether the template's tests behave as designed (`has_gpu`: this machine has one).

    Which tests need a GPU and which test a student's file come from their labels (gpu,
    student), never from their names. The skeletons' GPU tests must fail on a GPU machine:
    a pass is suspicious (a skeleton should be wrong), a hang or a crash is a problem
    (skeletons fail cleanly). Every other test must pass. A test that needs a GPU may be
    skipped only where there is none; a CPU test that is skipped is a problem.
    """
    verdict = Verdict(ok=True)
    if not results:
        verdict.problems.append("ctest ran no test")
    names = {r.name for r in results}
    for lab in labs:
        for kind in ("cpu", "gpu"):
            if f"{lab}.student.{kind}" not in names:
                verdict.problems.append(f"test {lab}.student.{kind} is missing: was labs/{lab} built?")
    for result in results:
        if not result.labels & {GPU_LABEL, "cpu"}:
            verdict.problems.append(f"{result.name}: {result.outcome}, and it has neither the label cpu nor gpu, "
                                    "so the check cannot tell whether it needs a GPU (label it in CMake)")
        elif ".solution." in result.name or "solution" in result.labels:
            verdict.problems.append(f"{result.name}: the template builds a solution")
        elif result.outcome == "skipped" and result.needs_gpu:
            if has_gpu:
                verdict.problems.append(f"{result.name}: skipped, although this machine has a GPU: the test "
                                        "programs cannot use it (run `nvidia-smi`, and one GPU test by hand)")
        elif result.skeleton and result.needs_gpu:
            if result.outcome == "passed":
                verdict.notes.append(f"{result.name} passed: the skeleton is expected to fail its GPU tests")
            elif result.outcome in ("timeout", "crashed", "not run"):
                verdict.problems.append(f"{result.name}: {result.outcome} (a skeleton must fail cleanly)")
        elif result.outcome != "passed":
            verdict.problems.append(f"{result.name}: {result.outcome}"
                                    + (" (a CPU test: it must pass on every machine)" if result.outcome == "skipped"
                                       else ""))
    if not has_gpu and any(r.needs_gpu and r.outcome == "skipped" for r in results):
        verdict.notes.append("no GPU here: the GPU tests were skipped (run the export on a GPU machine to see "
                             "the skeletons fail them)")
    verdict.ok = not verdict.problems
    return verdict


def check(out: Path, labs: list[str], cuda_arch: str | None, keep_build: bool, say) -> Verdict:
    """Configure (without solutions), build and test the template at `out` in a build
    folder outside it, the way a fresh clone is built."""
    build_dir = Path(tempfile.mkdtemp(prefix="labkit-template-build-"))
    configure = ["cmake", "-S", str(out), "-B", str(build_dir), *(["-G", "Ninja"] if shutil.which("ninja") else []),
                 "-DCMAKE_BUILD_TYPE=Release", "-DLABKIT_BUILD_SOLUTIONS=OFF",
                 *([f"-DCMAKE_CUDA_ARCHITECTURES={cuda_arch}"] if cuda_arch else [])]
    try:
        for name, command, what in (("configure", configure, "configuring"),
                                    ("build", ["cmake", "--build", str(build_dir)], "building every lab (nvcc takes a while)")):
            say(f"check: {what}...")
            watch = BuildProgress(build_dir, "check: building") if name == "build" else None
            result, failure = _run(name, command, out, watch)
            if failure:
                return Verdict(False, [failure])
            if result.returncode != 0:
                errors = build.first_errors(result.stdout + "\n" + result.stderr)
                return Verdict(False, [f"{name} failed: {result.command}\n{errors}"])
        listing, failure = _run("ctest", ["ctest", "--test-dir", str(build_dir), "--show-only=json-v1"], out)
        if failure or listing.returncode != 0:
            return Verdict(False, ["cannot list the tests and their labels: "
                                   + (failure or f"{listing.command}\n{listing.output_tail(10)}")])
        try:
            labels = ctest_labels(listing.stdout)
        except ValueError as exc:
            return Verdict(False, [f"cannot list the tests and their labels: {exc} ({listing.command})"])
        found = gpu.probe()
        say("check: running the tests" + ("..." if found.ok else " (no GPU here: the GPU tests will be skipped)..."))
        result, failure = _run("ctest", ["ctest", "--test-dir", str(build_dir)], out)
        if failure:
            return Verdict(False, [failure])
        results = parse_ctest(result.stdout, labels)  # failures are expected: the verdict says which are fine
        counts: dict[str, int] = {}
        for item in results:
            counts[item.outcome] = counts.get(item.outcome, 0) + 1
        say("check: ctest: " + ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items())))
        verdict = judge(results, labs, has_gpu=found.ok)
        failed_as_designed = {r.name.split(".")[0] for r in results
                              if r.skeleton and r.needs_gpu and r.outcome == "failed"}
        if failed_as_designed:
            count = len(failed_as_designed)
            verdict.notes.append(f"the skeletons fail their GPU tests, as designed ({count} lab{'s' * (count != 1)})")
        if not verdict.ok:
            verdict.notes.append("ctest output:\n" + result.output_tail(60))

        say("check: the grader runs in the template...")
        grader, failure = _run("grader", [sys.executable, "-m", "grader", "--version"], out)
        if failure or grader.returncode != 0:
            verdict.problems.append("`python3 -m grader --version` fails in the template:\n"
                                    + (failure or grader.output_tail(10)))
            verdict.ok = False
        return verdict
    finally:
        if keep_build:
            say(f"check: build folder kept: {build_dir}")
        else:
            shutil.rmtree(build_dir, ignore_errors=True)


def _run(name: str, command: list[str], cwd: Path,
         watch: BuildProgress | None = None) -> tuple[proc.ProcResult | None, str]:
    """The finished command, or None and why it did not finish; `watch` shows the
    progress of a build while it runs."""
    try:
        if watch is None:
            result = proc.run(command, timeout=TIMEOUTS[name], cwd=cwd)
        else:
            with watch:
                result = proc.run(command, timeout=TIMEOUTS[name], cwd=cwd)
    except proc.LaunchError as exc:
        return None, f"{exc}: install CMake >= 3.25, Ninja and the CUDA toolkit"
    if result.timed_out:
        return None, f"{name} timed out after {TIMEOUTS[name]} s: {result.command}"
    return result, ""


# --- command line ------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="export",
        prog="python3 -m grader export",
        description="Write the student template repository (no solutions, no instructor config, the "
                    "GitHub Classroom workflow in place) and check that it builds and that its tests "
                    "behave as designed.",
        epilog="Exit status: 0 written and checked; 1 written, but the check failed; 2 bad usage.")
    parser.add_argument("--out", type=Path, required=True, metavar="DIR",
                        help="the template's folder (new or empty; see --force)")
    parser.add_argument("--labs", nargs="+", metavar="LAB",
                        help="labs to export (default: every lab in labs/); the others are left out")
    parser.add_argument("--check", action=argparse.BooleanOptionalAction, default=True,
                        help="configure, build and test the template after writing it (default: on; "
                             "building all labs takes minutes)")
    parser.add_argument("--cuda-arch", metavar="ARCH",
                        help="CUDA architectures for the check's build (default: the kit's choice)")
    parser.add_argument("--keep-build", action="store_true", help="keep the check's build folder")
    parser.add_argument("--force", action="store_true",
                        help="replace the contents of a non-empty --out (a .git folder in it is kept)")
    parser.add_argument("--include-untracked", action="store_true",
                        help="also copy the files git does not track (and does not ignore); by default only "
                             "tracked files are copied and the others are listed")
    parser.add_argument("--root", type=Path, default=KIT_ROOT, metavar="DIR", help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader export`; returns the exit status."""
    args = commandline.parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    root, out = args.root.resolve(), args.out.resolve()
    try:
        present = present_labs(root)
        labs = _labs(args.labs, present)
        if not (root / TEMPLATE).is_file():
            raise ValueError(f"{TEMPLATE} not found in {root}: this copy of the kit cannot export")
        files = kit_files(root)
        prepare_out(out, root, args.force)
    except ValueError as exc:
        print(f"grader export: error: {exc}", file=sys.stderr)
        return EXIT_USAGE

    untracked = untracked_files(root)
    written, left_out = write_template(root, out, labs, files + (untracked if args.include_untracked else []))
    print(f"wrote the template to {out}: {written} files, labs {', '.join(labs)}")
    for reason, count in sorted(left_out.items()):
        print(f"  left out: {reason} ({count} file{'s' if count != 1 else ''})")
    shown = student_files(untracked, labs, kit_labs(root))[0]  # the untracked files that would otherwise be in the template
    if shown and not args.include_untracked:
        listed = ", ".join(shown[:MAX_LISTED]) + (f" and {len(shown) - MAX_LISTED} more" if len(shown) > MAX_LISTED else "")
        print(f"  left out: {len(shown)} file{'s' * (len(shown) != 1)} git does not track: {listed}")
        print("    commit the ones students need and export again (or pass --include-untracked); "
              "add the others to .gitignore")
    if not args.check:
        print("not checked (--no-check): build it with `python3 -m grader export ... --check`, or "
              "`cmake --workflow --preset student` in the template")
        return EXIT_OK
    verdict = check(out, labs, args.cuda_arch, args.keep_build, say=lambda text: print(text, flush=True))
    for note in verdict.notes:
        print(f"note: {note}")
    if not verdict.ok:
        for problem in verdict.problems:
            print(f"problem: {problem}", file=sys.stderr)
        print("grader export: the template was written but its check failed (see the problems above)", file=sys.stderr)
        return EXIT_CHECK_FAILED
    print("check passed: the template configures without solutions, builds, and its tests behave as designed")
    print(f"next: cd {out} && git init && git add -A && git commit -m 'CUDA labs' && push it to a new "
          "repository and mark it as a template (see handouts/instructors.md)")
    return EXIT_OK


def _labs(names: list[str] | None, present: list[str]) -> list[str]:
    if not names:
        if not present:
            raise ValueError("no lab found under labs/: run the export from the kit")
        return present
    by_lower = {lab.lower(): lab for lab in present}
    unknown = [name for name in names if name.lower() not in by_lower]
    if unknown:
        raise ValueError(f"unknown lab {unknown[0]!r}: this kit has {', '.join(present)}")
    wanted = {by_lower[name.lower()] for name in names}
    return [lab for lab in present if lab in wanted]
