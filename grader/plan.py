"""What a grading run does, decided once: the command line's options (Options) resolved into
a plan (Plan) of what to build, which implementation to grade and which stages run.

cli.py builds the Options; grade.py reads the Plan, and every stage (grader/stages/) asks
the plan, never the mode flags themselves.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import layout
from grader.config import Config

SOLUTION = layout.SOLUTION
STUDENT = layout.STUDENT


@dataclass
class Options:
    """What to grade and how; built by cli.py from the command line and the config."""

    root: Path
    build_dir: Path
    impl: str  # "student" or "solution"
    seed: int
    config: Config
    reference_dir: Path | None = None  # given by the user; None: look in <build>/lib
    cuda_arch: str | None = None
    no_build: bool = False
    skip_bench: bool = False
    no_sanitizer: bool = False
    # Instructor mode: the student's repository; `root` is then the pristine kit.
    submission: Path | None = None
    seed_source: dict[str, Any] | None = None  # how the seed was chosen (seed.SeedChoice.as_dict)
    # A folder of this submission's own (batch: one per student, beside a build folder
    # shared by the class): its files, libraries, checks and raw results. None: in the
    # build folder.
    student_root: Path | None = None
    # The instructor's answer keys (<dir>/<lab>/answer_key.json); None: <root>/solutions.
    answer_keys: Path | None = None
    # --profile-cache (the instructor's batch): where the profiler questions' figures are
    # kept between runs (grader/profile_cache.py); None: taken afresh, never read from a file.
    profile_cache: Path | None = None
    build_only: bool = False  # compile the submission's files into student_root, grade nothing
    prebuilt: bool = False  # the submission was compiled earlier (build_only): build nothing

    @property
    def own_dir(self) -> Path:
        return self.student_root or self.build_dir

    @property
    def results_dir(self) -> Path:
        """Where the raw gtest and bench JSON of this run are kept, for inspection."""
        return layout.results_dir(self.own_dir)

    @property
    def work_dir(self) -> Path:
        """The submission's editable files, copied into a clean folder and compiled from there."""
        return layout.work_dir(self.own_dir)

    @property
    def student_dir(self) -> Path:
        """The student libraries of this run (<dir>/<lab>/lib<lab>_student.so)."""
        return layout.student_dir(self.build_dir, self.student_root)

    @functools.cached_property
    def plan(self) -> Plan:
        """The mode flags resolved (Plan.of), once per run."""
        return Plan.of(self)


@dataclass(frozen=True)
class Plan:
    """The mode flags of Options, resolved: what to build, which implementation, which stages."""

    solution: bool  # the reference is graded (--impl solution): no student file is built or checked
    build_kit: bool  # configure the kit and build its judge programs, workers and references
    build_students: bool  # compile the submission's files in this run
    load_students: bool  # the submission's files were compiled by an earlier --build-only run
    build_only: bool  # compile, record each lab's build, grade nothing
    compiled: bool  # the student files are compiled (here or earlier): the static checks can run
    sanitizer: bool  # the sanitizer stage (and the find-the-bug exercises' runs) may run
    bench: bool  # the timing stage runs

    @classmethod
    def of(cls, options: Options) -> Plan:
        solution = options.impl == SOLUTION
        build_kit = not options.prebuilt and not options.no_build
        return cls(solution=solution, build_kit=build_kit, build_students=build_kit and not solution,
                   load_students=options.prebuilt, build_only=options.build_only,
                   compiled=not options.no_build, sanitizer=not options.no_sanitizer,
                   bench=not options.skip_bench)

    @property
    def checks(self) -> bool:
        """Whether a student's file is checked at all (never the reference)."""
        return not self.solution
