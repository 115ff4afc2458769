"""Grade the same code several times, each with another seed, and check the totals agree.

A grade must not depend on the seed or on timing noise: on a GPU machine, grading the
reference solutions five times must give totals within 1% of the maximum points.

    python3 -m grader.tests.stability                      # 5 runs of --impl solution, every lab
    python3 -m grader.tests.stability --runs 5 vectorAdd reduction
    python3 -m grader.tests.stability --submission DIR     # a student's repository instead

Each run is `python3 -m grader` in its own process with a fresh random seed, sharing one
build directory (built once). The compute-sanitizer stage is left out unless
--sanitizer is given (then it runs in every run, so all runs are graded alike; it also
shows that the references have no sanitizer finding). Exit status: 0 when the spread of
the totals is within the tolerance, 1 when not (or a run failed to produce a report),
2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

KIT = Path(__file__).resolve().parents[2]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.stability", description=__doc__.split("\n\n")[0],
                                     epilog="Exit status: 0 totals agree, 1 they do not (or a run failed), 2 usage.")
    parser.add_argument("labs", nargs="*", metavar="lab", help="labs to grade (default: every lab)")
    parser.add_argument("--runs", type=int, default=5, metavar="N", help="how many gradings (default 5)")
    parser.add_argument("--tolerance", type=float, default=0.01, metavar="F",
                        help="largest allowed spread of the totals, as a fraction of the maximum points (default 0.01)")
    parser.add_argument("--submission", type=Path, metavar="DIR",
                        help="grade this student repository (overlay mode) instead of the reference solutions")
    parser.add_argument("--build-dir", type=Path, metavar="DIR",
                        help="shared build directory (default: <kit>/build/grader-stability)")
    parser.add_argument("--timeout", type=float, default=7200, metavar="S", help="seconds allowed per run (default 7200)")
    parser.add_argument("--sanitizer", action="store_true",
                        help="include the compute-sanitizer stage in every run (slower)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.runs < 2:
        print("stability: error: --runs must be at least 2", file=sys.stderr)
        return 2
    build = (args.build_dir or KIT / "build" / "grader-stability").resolve()
    out = build / "stability"
    out.mkdir(parents=True, exist_ok=True)
    reports: list[dict[str, Any]] = []
    for run in range(1, args.runs + 1):
        report_path = out / f"run-{run}.json"
        report_path.unlink(missing_ok=True)
        command = [sys.executable, "-m", "grader", "--build-dir", str(build), "--json", str(report_path),
                   "--seed", "random", "--quiet", *args.labs]
        command += ["--submission", str(args.submission)] if args.submission else ["--impl", "solution"]
        if not args.sanitizer:
            command.append("--no-sanitizer")
        print(f"run {run}/{args.runs}: {' '.join(command)}", flush=True)
        try:
            done = subprocess.run(command, cwd=KIT, timeout=args.timeout, capture_output=True, text=True)
        except subprocess.TimeoutExpired:
            print(f"run {run} timed out after {args.timeout:g} s", file=sys.stderr)
            return 1
        if not report_path.is_file():
            print(f"run {run} wrote no report (exit {done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}",
                  file=sys.stderr)
            return 1
        reports.append(json.loads(report_path.read_text()))
        print(done.stdout.strip().split("\n\n")[0], flush=True)  # the score table
    ok, text = summarise(reports, args.tolerance, require_pass=args.submission is None)
    print("\n" + text)
    (out / "summary.txt").write_text(text + "\n")
    return 0 if ok else 1


def summarise(reports: list[dict[str, Any]], tolerance: float, require_pass: bool = False) -> tuple[bool, str]:
    """Whether the totals of `reports` lie within `tolerance` x max points (and, with
    `require_pass`, every lab passed in every run), and a table."""
    labs = [lab["lab"] for lab in reports[0]["labs"]]
    top = float(reports[0]["max"])
    lines = ["run  seed        " + "".join(f"{lab:>15}" for lab in labs) + f"{'total':>10}"]
    for i, report in enumerate(reports, 1):
        points = {lab["lab"]: lab["total"] for lab in report["labs"]}
        lines.append(f"{i:<4} {report['seed']:<11} " + "".join(f"{points.get(lab, float('nan')):>15.2f}" for lab in labs)
                     + f"{report['total']:>10.2f}")
    totals = [float(r["total"]) for r in reports]
    spread = max(totals) - min(totals)
    allowed = tolerance * top
    for lab in labs:
        values = [next((x["total"] for x in r["labs"] if x["lab"] == lab), None) for r in reports]
        statuses = {next((x["status"] for x in r["labs"] if x["lab"] == lab), "?") for r in reports}
        known = [v for v in values if v is not None]
        lines.append(f"  {lab}: spread {max(known) - min(known):.2f} points, statuses {', '.join(sorted(statuses))}")
    ok = spread <= allowed + 1e-9
    lines.append(f"totals {min(totals):.2f} .. {max(totals):.2f} of {top:g}: spread {spread:.2f}, allowed "
                 f"{allowed:.2f} ({tolerance:.1%} of the maximum): {'OK' if ok else 'TOO LARGE'}")
    failed = sorted({x["lab"] for r in reports for x in r["labs"] if x["status"] != "PASS"})
    if require_pass and failed:
        ok = False
        lines.append(f"not every lab passed in every run ({', '.join(failed)}): the references must score "
                     "100%; see the reports next to summary.txt")
    return ok, "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
