"""How much does a grade move from one timing run to the next? The reference's own
variants stand in for students: each lab's bench runs K times through the judge, and
for each variant the performance points it would earn (the grader's curve, against the
lab's graded reference variant) are computed per run. Prints, per lab and variant, the
mean points and their spread (largest minus smallest), and the largest spread of all as
a share of the lab's performance points. Needs a GPU and a build of the kit:

    python3 -m grader.tests.points_spread --build-dir build/dev --runs 5 [lab ...]

Exit status 0, or 1 when a spread exceeds --max-spread (default 1% of a lab's points) or
a lab's bench is not built.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from grader import config, manifest, proc, score

KIT = Path(__file__).resolve().parents[2]


def variant_ratios(data: dict[str, Any]) -> dict[str, float]:
    """Variant name -> t_variant / t_reference in the graded workload (student included)."""
    out = {}
    for workload in data.get("workloads", []):
        if not workload.get("graded"):
            continue
        reference = next((r.get("median_ms") for r in workload.get("results", []) if r.get("role") == "reference"), None)
        for r in workload.get("results", []):
            ms = r.get("median_ms")
            if r.get("role") in ("student", "variant") and isinstance(ms, (int, float)) and reference:
                out[r["name"]] = ms / reference
    return out


def spreads(runs: list[dict[str, float]], settings: config.LabSettings) -> dict[str, tuple[float, float]]:
    """Variant -> (mean points, largest minus smallest points) over the runs it appears in."""
    points: dict[str, list[float]] = {}
    for run in runs:
        for name, ratio in run.items():
            points.setdefault(name, []).append(score.curve_points(ratio, 0.0, settings)[0])
    return {name: (statistics.fmean(p), max(p) - min(p)) for name, p in points.items() if len(p) == len(runs)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.points_spread", description=__doc__.split("\n\n")[0])
    parser.add_argument("labs", nargs="*", help="labs (default: every lab of the kit)")
    parser.add_argument("--build-dir", type=Path, default=KIT / "build" / "dev")
    parser.add_argument("--runs", type=int, default=5, help="timing runs per lab (default 5)")
    parser.add_argument("--max-time", type=float, default=1.0, help="the bench's --max-time per workload")
    parser.add_argument("--max-spread", type=float, default=0.01, help="largest allowed spread, share of the points")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    cfg = config.load(None)
    labs = args.labs or manifest.names(KIT)
    worst = (0.0, "")
    missing = False
    with tempfile.TemporaryDirectory() as tmp:
        for lab in labs:
            settings = cfg.lab(lab)
            library = args.build_dir / "lib" / f"lib{lab}_solution.so"
            bench = args.build_dir / "bin" / f"{lab}_judge_bench"
            if not proc.is_executable(bench) or not library.is_file():
                print(f"{lab}: {bench.name} or {library.name} is not built in {args.build_dir}: build the kit with its "
                      f"solutions first (cmake --build --preset dev)")
                missing = True
                continue
            runs = []
            for run in range(args.runs):
                path = Path(tmp) / f"{lab}.{run}.json"
                done = proc.run([str(bench), f"--impl={library}",
                                 f"--reference={library}", f"--reference-variant={settings.reference_variant}",
                                 f"--max-time={args.max_time}", "--no-cpu", f"--seed={run + 1}", "--json", str(path)],
                                timeout=args.timeout)
                try:
                    runs.append(variant_ratios(json.loads(path.read_text())))
                except (OSError, ValueError):
                    print(f"{lab}: run {run + 1} wrote no JSON (exit {done.returncode}):\n{done.output_tail(6)}")
            if not runs:
                continue
            print(f"\n{lab} (against {settings.reference_variant}, {len(runs)} runs, "
                  f"{settings.performance_points:g} points)")
            for name, (mean, spread) in sorted(spreads(runs, settings).items(), key=lambda item: -item[1][1]):
                share = spread / settings.performance_points
                print(f"  {name:28} mean {mean:6.2f}  spread {spread:5.2f}  ({100 * share:.2f}% of the points)")
                worst = max(worst, (share, f"{lab}/{name}"))
    print(f"\nlargest spread: {100 * worst[0]:.2f}% of a lab's performance points ({worst[1] or 'none'})")
    return 1 if worst[0] > args.max_spread or missing else 0


if __name__ == "__main__":
    sys.exit(main())
