"""The corpus of bad submissions (grader/tests/corpus/), graded for real.

Each case folder holds a submission (student files under labs/) and `expect.json`: the
lab, the designed status, correctness and total ranges, a message the lab's report must
contain, and the rules and sanitizer tools that must (and alone may) report findings.
Every case is graded by `python3 -m grader --submission <case> --pristine <this kit>`
in its own process with a time limit, all cases sharing one build directory (only the
student's file is recompiled between cases; each case's libraries go to a folder of its
own). `bash .ci/gpu-check corpus` grades the timed cases one at a time first, then the
others a few at a time (`groups()`). With LABKIT_CORPUS_TAKE_TURNS=1 it grades them all in
LABKIT_CORPUS_JOBS shards side by side (`shards()`): graders that share a GPU take turns
for timing (grader/gpu_lock.py), so a timed case's bench still has the GPU to itself,
though not the CPU.

Needs an NVIDIA GPU: skipped when `nvidia-smi` is missing or fails. LABKIT_CORPUS=1
forces the run, LABKIT_CORPUS=0 skips it, LABKIT_CORPUS=nogpu builds and grades every
case on a machine without a GPU (tests skip, so labs are NO_GPU; build errors and rules
are still checked). LABKIT_CORPUS_BUILD=DIR picks the shared build directory (default
build/grader-corpus in the kit). On an H100 the corpus takes a few minutes:

    LABKIT_CORPUS=1 python3 -m unittest grader.tests.test_corpus -v
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path
from typing import Any

from grader import answers, cli

KIT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
SEED = 20261122
GRADER_TIMEOUT_S = 1800  # one case, its first build included; the grader must end by itself
MAX_REPORT_BYTES = 2 * 1024 * 1024
# The corpus's config: short timeouts, no bench unless a case asks, the sanitizer only
# where a case expects something of it.
BASE_CONFIG: dict[str, Any] = {
    "grader": {"test_timeout_s": 120, "sanitizer_timeout_s": 300, "bench_timeout_s": 300, "bench_reruns": 1},
    "defaults": {"sanitizer": False},
}
# What a case becomes without a GPU unless its "nogpu" entry says otherwise.
NO_GPU = {"status": "NO_GPU", "correctness": [0, 0], "total": [0, 0], "message": "no CUDA GPU", "sanitizer": None}


def cases() -> list[str]:
    return sorted(p.name for p in CORPUS.iterdir() if (p / "expect.json").is_file())


def runs_alone(expect: dict[str, Any]) -> bool:
    """Whether a case must have the GPU to itself: it is timed (its performance points
    depend on it). The other cases may be graded side by side (`bash .ci/gpu-check corpus`);
    those that check that nothing was written to a path after they end watch a path of
    their own."""
    return bool(expect.get("bench"))


def groups() -> tuple[list[str], list[str]]:
    """(the cases that run alone, the cases that may run side by side), in name order."""
    alone = [case for case in cases() if runs_alone(expectation(case, "gpu"))]
    return alone, [case for case in cases() if case not in alone]


def shards(jobs: int) -> tuple[list[str], list[list[str]]]:
    """Every case, for graders that take turns for timing (the GPU's lock): (the cases graded
    first, one at a time: for each lab the corpus grades, the first case that grades it, a
    timed one where there is one, so that the shared build is configured and the kit's part
    of each lab built by one grader alone; the other cases dealt into `jobs` shards, the timed
    ones spread evenly over them, each shard's timed cases first)."""
    alone, shared = groups()
    first: list[str] = []
    covered: set[str] = set()
    for case in alone + shared:
        expect = expectation(case, "gpu")
        labs = {expect["lab"], *expect.get("also", {})}
        if not labs <= covered:
            first.append(case)
            covered |= labs
    return first, deal([case for case in alone + shared if case not in first], jobs)


def deal(names: list[str], jobs: int) -> list[list[str]]:
    """`names` dealt in turn into at most `jobs` shards (none empty)."""
    dealt: list[list[str]] = [[] for _ in range(max(1, jobs))]
    for k, name in enumerate(names):
        dealt[k % len(dealt)].append(name)
    return [shard for shard in dealt if shard]


def shard_plan(jobs: int) -> str:
    """shards() for `bash .ci/gpu-check corpus`, one line of test names per step (the first
    line: the cases graded one at a time first; then one line per shard); "" when this GPU
    has no lock to take turns with (no UUID, or the lock folder cannot be used): the caller
    then grades the timed cases alone."""
    from grader import config, gpu_lock

    lock = gpu_lock.for_settings(config.DEFAULTS["grader"])
    if not lock.enabled:
        return ""
    with lock.shared() as hold:  # the folder and the files can be used
        if not hold.taken:
            return ""
    first, dealt = shards(jobs)
    return "\n".join(" ".join(f"test_{case}" for case in step) for step in [first, *dealt])


def corpus_plan(jobs: int, take_turns: bool = False) -> str:
    """What `bash .ci/gpu-check corpus` runs: one line of test names per step, the first
    line's cases one at a time, then each further line in a process of its own, side by
    side. By default the timed cases first (groups()), then the others in `jobs` shards;
    with `take_turns`, shard_plan() where this GPU has a lock to take turns with."""
    if take_turns and (plan := shard_plan(jobs)):
        return plan
    alone, shared = groups()
    return "\n".join(" ".join(f"test_{case}" for case in step) for step in [alone, *deal(shared, jobs)])


def gpu_present() -> bool:
    """Whether `nvidia-smi -L` runs and lists a GPU."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "GPU" in done.stdout


def corpus_mode() -> tuple[str | None, str]:
    """("gpu" | "nogpu", "") to run the corpus, or (None, why it is skipped)."""
    wanted = os.environ.get("LABKIT_CORPUS", "").strip().lower()
    if wanted in ("0", "no", "off"):
        return None, "LABKIT_CORPUS=0"
    if wanted == "nogpu":
        return "nogpu", ""
    if wanted in ("1", "yes", "on") or gpu_present():
        return "gpu", ""
    return None, ("no NVIDIA GPU (nvidia-smi missing or failing): the corpus of bad submissions needs one. "
                  "LABKIT_CORPUS=1 forces it; LABKIT_CORPUS=nogpu builds and grades the cases without a GPU")


def expectation(case: str, mode: str) -> dict[str, Any]:
    expect = json.loads((CORPUS / case / "expect.json").read_text())
    if mode == "nogpu":
        overrides = {**NO_GPU, **expect.get("nogpu", {})}
        expect = {**expect, **overrides}
    return expect


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        out[key] = merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def to_toml(data: dict[str, Any], prefix: str = "") -> str:
    """TOML for nested tables of numbers, booleans, strings and lists of those."""
    lines, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            lines.append(f"{key} = {json.dumps(value)}")  # JSON scalars and lists are valid TOML here
    text = (f"[{prefix}]\n" if prefix and lines else "") + "".join(line + "\n" for line in lines)
    for key, value in tables:
        text += to_toml(value, f"{prefix}.{key}" if prefix else key)
    return text


def build_dir() -> Path:
    return Path(os.environ.get("LABKIT_CORPUS_BUILD") or KIT / "build" / "grader-corpus").resolve()


def lab_texts(lab: dict[str, Any]) -> str:
    """Everything a student reads about a lab: message, test messages, rules, sanitizer."""
    parts = [lab.get("message", ""), lab["performance"].get("reason", "")]
    parts += [t.get("message", "") for t in lab["correctness"]["tests"]]
    parts += [r.get("message", "") for r in lab.get("rules", [])]
    parts += [f["message"] for f in ((lab.get("sanitizer") or {}).get("findings") or [])]
    parts += lab.get("notes", [])
    return "\n".join(parts)


class CorpusTest(unittest.TestCase):
    mode: str | None = None

    @classmethod
    def setUpClass(cls) -> None:
        cls.mode, cls.why = corpus_mode()

    def grade(self, case: str, expect: dict[str, Any]) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
        tmp = Path(tempfile.mkdtemp(prefix=f"corpus-{case}-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        config = merge(BASE_CONFIG, expect.get("config", {}))
        if expect.get("sanitizer") is not None and self.mode == "gpu":
            config = merge(config, {"defaults": {"sanitizer": True}})
        (tmp / "grader.toml").write_text(to_toml(config))
        labs = [expect["lab"], *expect.get("also", {})]
        # The case's libraries and raw results in its own folder (--student-dir), so that
        # cases graded side by side share only the kit's build.
        args = [sys.executable, "-m", "grader", "--allow-no-gpu", "--submission", str(CORPUS / case),
                "--pristine", str(KIT), "--student-dir", str(tmp / "work"),
                "--build-dir", str(build_dir()), "--config", str(tmp / "grader.toml"), "--json",
                str(tmp / "report.json"), "--seed", str(SEED), *labs]
        if not expect.get("bench"):
            args.append("--skip-bench")
        # Options of the grading run, "{case}" standing for the case's folder (e.g. a folder
        # of answer keys beside the submission).
        args += [arg.replace("{case}", str(CORPUS / case)) for arg in expect.get("grader_args", [])]
        env = {k: v for k, v in os.environ.items() if k not in ("LABKIT_GRADER_SECRET", "LABKIT_PRISTINE")}
        start = time.monotonic()
        done = subprocess.run(args, capture_output=True, text=True, timeout=GRADER_TIMEOUT_S, cwd=KIT, env=env)
        # Each case's grading time, for `bash .ci/gpu-check corpus` to plan its shards by.
        print(f"[corpus {case}: graded in {time.monotonic() - start:.1f} s]", file=sys.stderr, flush=True)
        self.assertIn(done.returncode, (0, 1), f"the grader failed on {case}:\n{done.stdout}\n{done.stderr}")
        self.assertNotIn("Traceback", done.stdout + done.stderr)
        report_path = tmp / "report.json"
        self.assertTrue(report_path.is_file(), f"no report for {case}:\n{done.stdout}")
        self.assertLess(report_path.stat().st_size, MAX_REPORT_BYTES, "the report must stay small")
        return done, json.loads(report_path.read_text())

    def check_lab(self, case: str, lab: dict[str, Any], expect: dict[str, Any], console: str) -> None:
        where = f"{case}/{lab['lab']}: {lab['status']} {lab['message'][:300]}\n{console[-3000:]}"
        statuses = expect["status"] if isinstance(expect["status"], list) else [expect["status"]]
        self.assertIn(lab["status"], statuses, where)
        if "correctness" in expect:
            low, high = expect["correctness"]
            self.assertTrue(low <= lab["correctness"]["points"] <= high,
                            f"correctness {lab['correctness']['points']} not in [{low}, {high}]: {where}")
        if "total" in expect:
            low, high = expect["total"]
            self.assertTrue(low <= lab["total"] <= high, f"total {lab['total']} not in [{low}, {high}]: {where}")
        if "performance" in expect:
            low, high = expect["performance"]
            points = lab["performance"]["points"]
            self.assertTrue(low <= points <= high, f"performance {points} not in [{low}, {high}]: {where}")
        if expect.get("message"):  # a text, or a list of texts one of which must appear
            wanted = expect["message"] if isinstance(expect["message"], list) else [expect["message"]]
            self.assertTrue(any(text in lab_texts(lab) for text in wanted), f"none of {wanted!r} in: {where}")
        for text in expect.get("hidden", []):  # e.g. the content of a file the case tried to read
            self.assertNotIn(text, json.dumps(lab) + console, f"{text!r} reached the report: {where}")
        rules = sorted({r["rule"] for r in lab.get("rules", [])})
        if "rules" in expect or "status" in expect:
            self.assertEqual(rules, sorted(expect.get("rules", [])), f"rule findings: {where}")
        # Graded questions: the status each named answer must get.
        questions = {q["id"]: q for q in (lab.get("answers") or {}).get("questions", [])}
        for question, status in expect.get("answers", {}).items():
            self.assertIn(question, questions, f"no answer {question} in the report: {where}")
            got = questions[question]
            self.assertEqual(got["status"], status, f"answer {question}: {got}: {where}")
            if status in (answers.AT_DEADLINE, answers.UNCHECKED):  # not marked: its points wait for the instructor
                self.assertEqual(got["points"], 0.0, f"answer {question} earned points: {got}: {where}")
        tools = expect.get("sanitizer")
        if tools is not None and self.mode == "gpu":
            sanitizer = lab.get("sanitizer") or {}
            self.assertTrue(sanitizer.get("ran"), f"the sanitizer did not run ({sanitizer.get('note')}): {where}")
            found = sorted(f["tool"] for f in sanitizer.get("findings", []))
            self.assertEqual(found, sorted(tools), f"sanitizer findings {sanitizer.get('findings')}: {where}")
            if expect.get("sanitizer_message"):
                self.assertIn(expect["sanitizer_message"], lab_texts(lab), where)

    def run_case(self, case: str) -> None:
        if self.mode is None:
            self.skipTest(self.why)
        expect = expectation(case, self.mode)
        for path in expect.get("forbid_paths", []):
            Path(path).unlink(missing_ok=True)
        started = time.monotonic()
        done, report = self.grade(case, expect)
        stages = ", ".join(f"{stage} {seconds:.0f} s" for lab in report.get("labs", [])
                           for stage, seconds in (lab.get("seconds") or {}).items())
        print(f"[{case}: graded in {time.monotonic() - started:.0f} s{'; ' + stages if stages else ''}] ",
              end="", file=sys.stderr, flush=True)
        for path in expect.get("forbid_paths", []):
            time.sleep(2)  # the case's escapee writes after a second: give it the chance
            self.assertFalse(Path(path).exists(), f"{case}: {path} was written: something escaped the grader")
        labs = {lab["lab"]: lab for lab in report["labs"]}
        self.assertEqual(report["seed"], SEED)
        self.check_lab(case, labs[expect["lab"]], expect, done.stdout)
        for other, wanted in expect.get("also", {}).items():
            self.check_lab(case, labs[other], {**wanted, "rules": wanted.get("rules", [])}, done.stdout)


def _add_case_tests() -> None:
    for case in cases():
        setattr(CorpusTest, f"test_{case}", lambda self, case=case: self.run_case(case))


_add_case_tests()


class CorpusWithoutGpuTest(unittest.TestCase):
    """Always runs (no GPU, no compiler): the grader given a corpus case with --no-build
    ends cleanly with its report, and the rules name file and line."""

    def grade(self, case: str, lab: str) -> dict[str, Any]:
        tmp = Path(tempfile.mkdtemp(prefix="corpus-nobuild-"))
        self.addCleanup(shutil.rmtree, tmp, True)
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            code = cli.main(["--submission", str(CORPUS / case), "--pristine", str(KIT), "--build-dir",
                             str(tmp / "build"), "--no-build", "--no-sanitizer", "--seed", "1", lab])
        self.assertEqual(code, 1, out.getvalue())
        return json.loads((tmp / "build" / "report.json").read_text())["labs"][0]

    def test_forbidden_api_rule(self):
        lab = self.grade("forbidden_api", "reduction")
        self.assertEqual(lab["status"], "BUILD_ERROR")  # --no-build: nothing to run
        cub = [r for r in lab["rules"] if r["rule"] == "cub"]
        self.assertEqual([(r["file"], r["line"]) for r in cub][:2],
                         [("labs/reduction/reduction.cu", 4), ("labs/reduction/reduction.cu", 12)])

    def test_exit_rule(self):
        lab = self.grade("calls_exit", "vectorAdd")
        self.assertEqual([(r["rule"], r["line"]) for r in lab["rules"]], [("exit", 14)])

    def test_streams_of_ones_own_only_where_the_lab_allows_them(self):
        # vectorAdd's manifest lifts rule own_streams (its streams part): the spelled stream
        # calls are findings in reduction only.
        for case in ("stream_returns_early", "stream_nonblocking"):
            self.assertEqual(self.grade(case, "vectorAdd")["rules"], [], case)
        lab = self.grade("stream_other_lab", "reduction")
        self.assertEqual({(r["rule"], r["line"]) for r in lab["rules"]},
                         {("own_streams", 49)})

    def test_correct_case_breaks_no_rule(self):
        for case, lab in (("correct", "vectorAdd"), ("correct_reduction", "reduction")):
            self.assertEqual(self.grade(case, lab)["rules"], [], case)


if __name__ == "__main__":
    unittest.main()


class CorpusGroupsTest(unittest.TestCase):
    """`bash .ci/gpu-check corpus` grades the untimed cases side by side: every timed case
    must be in the group that runs alone, and cases side by side must not watch one path."""

    def test_each_case_in_one_group(self):
        alone, shared = groups()
        self.assertEqual(sorted(alone + shared), cases())
        self.assertFalse(set(alone) & set(shared))

    def test_timed_cases_run_alone(self):
        alone, shared = groups()
        for case in cases():
            expect = expectation(case, "gpu")
            if expect.get("bench") or "performance" in expect:
                self.assertIn(case, alone, f"{case} is timed: it must run alone")
        self.assertIn("correct", alone)  # graded with its bench
        self.assertIn("compile_error", shared)

    # With the GPU's lock: every case once, a case per lab first, the timed ones spread evenly.
    def test_shards(self):
        first, dealt = shards(4)
        every = first + [case for shard in dealt for case in shard]
        self.assertEqual(sorted(every), cases())
        self.assertEqual(len(every), len(set(every)))
        self.assertLessEqual(len(dealt), 4)
        labs = {lab for case in cases() for lab in (expectation(case, "gpu")["lab"], *expectation(case, "gpu").get("also", {}))}
        self.assertEqual({expectation(case, "gpu")["lab"] for case in first} | {
            lab for case in first for lab in expectation(case, "gpu").get("also", {})}, labs)
        self.assertEqual(first[0], "correct")  # timed, vectorAdd: it builds the kit's part alone
        alone, _ = groups()
        timed = [sum(case in alone for case in shard) for shard in dealt]
        self.assertLessEqual(max(timed) - min(timed), 1, timed)
        self.assertEqual(shards(1)[1], [[case for case in alone + groups()[1] if case not in first]])

    # Without taking turns (or without a lock to take turns with): the timed cases first,
    # then the others dealt into the shards.
    def test_corpus_plan(self):
        from unittest import mock

        from grader import gpu_lock
        alone, shared = groups()
        lines = corpus_plan(3).splitlines()
        self.assertEqual(lines[0].split(), [f"test_{case}" for case in alone])
        self.assertEqual(len(lines), 4)
        self.assertEqual(sorted(name for line in lines[1:] for name in line.split()),
                         sorted(f"test_{case}" for case in shared))
        with mock.patch.object(gpu_lock, "for_settings", return_value=gpu_lock.NoLock()):
            self.assertEqual(corpus_plan(3, take_turns=True), corpus_plan(3))
        self.assertEqual(deal(["a", "b", "c"], 2), [["a", "c"], ["b"]])
        self.assertEqual(deal(["a"], 4), [["a"]])

    # `bash .ci/gpu-check corpus`'s plan: "" without a lock to take turns with (then the timed
    # cases run alone), else a line of test names per step.
    def test_shard_plan(self):
        from unittest import mock

        from grader import gpu_lock
        with mock.patch.object(gpu_lock, "for_settings", return_value=gpu_lock.NoLock()):
            self.assertEqual(shard_plan(4), "")
        with tempfile.TemporaryDirectory() as tmp:
            with mock.patch.object(gpu_lock, "for_settings", return_value=gpu_lock.GpuLock(Path(tmp), "GPU-x", 5)):
                lines = shard_plan(3).splitlines()
            with mock.patch.object(gpu_lock, "for_settings",
                                   return_value=gpu_lock.GpuLock(Path(tmp) / "none" / "deeper", "GPU-x", 5)):
                self.assertEqual(shard_plan(3), "")  # the lock folder cannot be made
        first, dealt = shards(3)
        self.assertEqual(lines, [" ".join(f"test_{case}" for case in step) for step in [first, *dealt]])

    def test_watched_paths_are_each_cases_own(self):
        owners: dict[str, str] = {}
        for case in cases():
            for path in expectation(case, "gpu").get("forbid_paths", []):
                self.assertNotIn(path, owners, f"{case} and {owners.get(path)} watch the same path")
                owners[path] = case
