"""`python3 -m grader batch ROSTER --out DIR --slurm FILE`: a Slurm job array that grades a
class with one array task (and one GPU) per roster row, instead of grading here; once
every task has ended, `batch --collect` assembles the gradebook (grader/instructor/batch.py)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

EXIT_OK = 0


def slurm_script(roster: Path, out: Path, count: int, pristine: Path, labs: list[str], timeout: float,
                 sbatch: list[str], grader_args: list[str] = (), *, grader: list[str], kit_root: Path) -> str:
    """A job array with one task per roster row; each task grades its row with --task.
    `grader` is the command that runs the grader (`python3 -m grader`), `kit_root` the kit's folder."""
    minutes = int(timeout // 60) + 15  # the grader's own timeout, and time to build and clean up
    task = [*grader, "batch", str(roster), "--out", str(out), "--pristine", str(pristine),
            "--timeout", f"{timeout:g}", *(f"--grader-arg={arg}" for arg in grader_args),
            "--task", "${SLURM_ARRAY_TASK_ID}", *(["--labs", *labs] if labs else [])]
    command = " ".join('"$SLURM_ARRAY_TASK_ID"' if arg == "${SLURM_ARRAY_TASK_ID}" else shlex.quote(arg) for arg in task)
    collect = [*grader, "batch", str(roster), "--out", str(out), "--collect", *(["--labs", *labs] if labs else [])]
    lines = [
        "#!/bin/bash",
        f"# Grades the {count} students of {roster}, one Slurm array task (and one GPU) each,",
        "# with a hidden seed per student. Submit with `sbatch` from any folder; once every",
        "# task has ended, assemble the gradebook:",
        f"#   {shlex.join(collect)}",
        "# Tasks that failed can simply be submitted again (--array=<index>).",
        "#SBATCH --job-name=labkit-grade",
        f"#SBATCH --array=0-{count - 1}",
        "#SBATCH --gres=gpu:1",
        "#SBATCH --cpus-per-task=8",
        f"#SBATCH --time={minutes // 60:02d}:{minutes % 60:02d}:00",
        f"#SBATCH --output={out}/logs/slurm-%A_%a.out",
        *[f"#SBATCH {option}" for option in sbatch],
        "set -euo pipefail",
        "command -v nvcc >/dev/null 2>&1 || export PATH=/usr/local/cuda/bin:$PATH",
        f"cd {shlex.quote(str(kit_root))}",
        command,
    ]
    return "\n".join(lines) + "\n"


def write_slurm(args: argparse.Namespace, count: int, out: Path, pristine: Path, labs: list[str], *,
                grader: list[str], kit_root: Path) -> int:
    """--slurm: writes the job array of `count` tasks instead of grading."""
    text = slurm_script(args.roster.resolve(), out, count, pristine, labs, args.timeout, args.sbatch,
                        args.grader_arg + (["--allow-no-gpu"] if args.allow_no_gpu else []),
                        grader=grader, kit_root=kit_root)
    args.slurm.parent.mkdir(parents=True, exist_ok=True)
    args.slurm.write_text(text)
    args.slurm.chmod(0o755)
    (out / "logs").mkdir(parents=True, exist_ok=True)  # Slurm does not create the folder of --output
    print(f"wrote {args.slurm}: a job array of {count} tasks, one GPU each")
    print(f"submit:  sbatch {args.slurm}")
    print(f"then:    python3 -m grader batch {args.roster} --out {args.out} --collect"
          + (f" --labs {' '.join(labs)}" if labs else ""))
    return EXIT_OK
