"""What a stage of one lab may read (LabContext), and the small facts several stages share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from grader import build, layout, manifest, overlay, score, variants
from grader.config import LabSettings
from grader.plan import Options, Plan

if TYPE_CHECKING:
    from grader.schedule import PendingBench


@dataclass
class KitBuild:
    """The kit's part of the build: done once per build folder, shared by every submission."""

    configured: build.BuildResult | None = None
    failed: dict[str, build.BuildResult] = field(default_factory=dict)  # lab -> why its judge did not build
    commands: dict[str, build.StudentCommands] = field(default_factory=dict)
    command_errors: dict[str, str] = field(default_factory=dict)


@dataclass
class LabContext:
    """One lab's grading: the run's options and plan, what was built, what was taken."""

    options: Options
    lab: str
    kit: KitBuild
    student: build.StudentBuild | None  # the submission's build of the lab (None: not built in this run)
    taken: overlay.Overlay | None  # the submission's files (None: the kit's own)
    stage: Callable[[str], None]  # tells the progress which stage runs, and its outcome
    manifest: manifest.Lab | None = None
    # Set by the stages for the later ones: the library under test, the judge's test
    # program and its arguments.
    implementation: Path | None = None
    test_bin: Path | None = None
    judge_args: list[str] = field(default_factory=list)
    pending: PendingBench | None = None  # the lab's first bench run, set up while tests ran

    @property
    def plan(self) -> Plan:
        return self.options.plan

    @property
    def settings(self) -> LabSettings:
        return self.options.config.lab(self.lab)


def testing_environment(options: Options) -> dict[str, str]:
    """Environment overrides of the test and sanitizer runs: the config's
    `test_device_connections` as CUDA_DEVICE_MAX_CONNECTIONS. The driver starts CUDA contexts
    one at a time and sets up every hardware queue of each: fewer queues let the judge
    programs and workers of labs tested side by side start sooner."""
    return connections_environment(options.config.grader["test_device_connections"])


def bench_environment(options: Options) -> dict[str, str]:
    """Environment overrides of the judge's benches: `bench_device_connections`, likewise
    (the benches set up while other labs are tested)."""
    return connections_environment(options.config.grader["bench_device_connections"])


def connections_environment(count: int) -> dict[str, str]:
    """CUDA_DEVICE_MAX_CONNECTIONS=count for a judge program (nothing for 0: the driver's default)."""
    return {"CUDA_DEVICE_MAX_CONNECTIONS": str(count)} if count else {}


def kit_manifests(root: Path) -> dict[str, manifest.Lab]:
    """The manifests of the kit at `root` by lab ({} when they cannot be read: the labs
    then fail on their own, with the reason)."""
    try:
        return manifest.by_name(root)
    except manifest.ManifestError:
        return {}


def required_steps(lab: manifest.Lab | None) -> list[str]:
    """The lecture's steps a lab requires (timed beside the reference's)."""
    return [v.name for v in lab.required_variants if v.kind == variants.STEP] if lab is not None else []


def reference(options: Options, lab: str) -> tuple[Path | None, str]:
    """The reference library to pass to the bench, and why it is missing if it is."""
    if options.reference_dir is not None:
        path = layout.solution_library_path(options.reference_dir, lab, built=False)
        if path.is_file():
            return path, ""
        return None, f"{score.NO_REFERENCE} ({path} not found)"
    path = layout.solution_library_path(options.build_dir, lab)
    if path.is_file():
        return path, ""
    return None, f"{score.NO_REFERENCE} ({path} not found: the kit has no solutions/{lab})"
