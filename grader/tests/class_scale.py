"""How long does a class take? Generates N submissions and grades them with `batch`.

The submissions mix the files a class hands in: right ones (the corpus's correct
submissions, for the labs that have one), untouched skeletons, and files that do not
compile. They are graded with `python3 -m grader batch` as an instructor would, and the
script prints one table row: N, wall time, time per student, and how busy the GPU was.
Needs a GPU and the instructor's kit (with solutions/):

    python3 -m grader.tests.class_scale --students 20 --out /tmp/class [--labs ...]

A class too long for one sitting is graded in parts: `--limit K` grades the first K
students not graded yet and keeps the folder; `--resume` goes on where the last part
stopped. Each part's wall time is kept in DIR/class_scale.json, and the table adds the
parts up (the kit's one-time build is in the first part's time).
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from grader import manifest

KIT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
# Right single-file submissions the kit holds (a lab's solution spans several files).
RIGHT = {"vectorAdd": CORPUS / "correct" / "labs" / "vectorAdd" / "vectorAdd.cu",
         "reduction": CORPUS / "correct_reduction" / "labs" / "reduction" / "reduction.cu"}
BROKEN = "#include \"{lab}.h\"\nthis line does not compile;\n"


def make_class(out: Path, students: int, labs: list[str]) -> Path:
    """N submission folders and their roster; returns the roster."""
    subs = out / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    rows = []
    for k in range(students):
        name = f"student{k:03d}"
        for i, lab in enumerate(labs):
            target = subs / name / "labs" / lab / f"{lab}.cu"
            target.parent.mkdir(parents=True, exist_ok=True)
            kind = (k + i) % 5  # 0-2 right where the kit has a right file, 3 skeleton, 4 broken
            if kind <= 2 and lab in RIGHT:
                shutil.copy(RIGHT[lab], target)
            elif kind == 4:
                target.write_text(BROKEN.format(lab=lab))
            else:
                shutil.copy(KIT / "labs" / lab / f"{lab}.cu", target)
        rows.append((name, str(subs / name)))
    roster = out / "roster.csv"
    with roster.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "path"])
        writer.writerows(rows)
    return roster


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.class_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20, help="how many submissions (default 20)")
    parser.add_argument("--out", type=Path, required=True, help="a folder for the class (deleted first)")
    parser.add_argument("--labs", nargs="+", help="labs to grade (default: all)")
    parser.add_argument("--grader-arg", action="append", default=[], help="passed on to every grader run")
    parser.add_argument("--limit", type=int, metavar="K", help="grade at most K more students now (a part)")
    parser.add_argument("--resume", action="store_true", help="go on with the class in --out (its next part)")
    args = parser.parse_args(argv)
    labs = manifest.resolve_names(args.labs, manifest.names(KIT)) if args.labs else manifest.names(KIT)
    out = args.out.resolve()
    parts_file = out / "class_scale.json"
    if not args.resume:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        make_class(out, args.students, labs)
        parts_file.write_text("[]\n")
    elif not parts_file.is_file():
        parser.error(f"--resume: no class in {out} (run without --resume first)")
    parts = json.loads(parts_file.read_text())
    graded_before = sum(part["students"] for part in parts)
    now = args.students - graded_before if args.limit is None else min(args.limit, args.students - graded_before)
    if now <= 0:
        print(f"all {args.students} students are graded")
    else:
        # This part's roster: the students graded before (batch --resume skips them) and the next ones.
        roster = out / "roster.csv"
        with roster.open() as f:
            rows = list(csv.reader(f))
        part_roster = out / f"roster.part{len(parts) + 1}.csv"
        with part_roster.open("w", newline="") as f:
            csv.writer(f).writerows(rows[:1 + graded_before + now])
        command = [sys.executable, "-m", "grader", "batch", str(part_roster), "--out", str(out / "grades"), "--labs",
                   *labs, "--resume", *(f"--grader-arg={a}" for a in args.grader_arg)]
        start = time.monotonic()
        done = subprocess.run(command, cwd=KIT, capture_output=True, text=True)
        wall = time.monotonic() - start
        print(done.stdout[-4000:], done.stderr[-2000:], sep="")
        busy = re.search(r"busy (\d+)% of the time", done.stdout)
        parts.append({"students": now, "wall_s": round(wall, 1), "busy": int(busy.group(1)) / 100 if busy else None,
                      "exit": done.returncode})
        parts_file.write_text(json.dumps(parts, indent=1) + "\n")
        if done.returncode not in (0, 1):
            return done.returncode
    graded = sum(part["students"] for part in parts)
    wall = sum(part["wall_s"] for part in parts)
    known = [part for part in parts if part["busy"] is not None]
    busy = sum(part["busy"] * part["wall_s"] for part in known) / sum(part["wall_s"] for part in known) if known else None
    print(f"\n{'N':>4} {'parts':>6} {'wall s':>8} {'s/student':>10} {'GPU busy':>9}")
    print(f"{graded:>4} {len(parts):>6} {wall:>8.0f} {wall / max(1, graded):>10.1f} "
          f"{f'{100 * busy:.0f}%' if busy is not None else '?':>9}" + ("" if graded == args.students else
                                                                         f"   ({args.students - graded} to go: --resume)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
