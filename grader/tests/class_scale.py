"""How long does a class take, and how does it scale over GPUs? Generates N submissions
and grades them with `batch`, once per GPU set asked for.

The submissions mix the files a class hands in, in every lab graded: right ones (the
lab's reference as one student file with its answers, made by grader/tests/onefile.py),
untouched skeletons (with the skeleton's unanswered answers.md), and files that do not
compile. `--mix R,S,B` gives their shares in percent (default 60,20,20): each lab gets
exactly that share of its students (rounded to whole students), spread over the class so
that each student hands in a mix. DIR/class.json records who got what. They are graded
with `python3 -m grader batch` as an instructor would. Needs a GPU and the instructor's
kit (with solutions/):

    python3 -m grader.tests.class_scale --students 8 --labs vectorAdd reduction --out /tmp/class \
        --gpus 0 --gpus 0,1

prints one table row per `--gpus` (default: batch's own choice, every GPU): students,
labs, GPUs, wall time, the kit's one-time build, seconds per student after it, the
speedup over the first row, the GPU seconds one student's grading held (all GPUs added
over the students: it grows where graders on several GPUs slow each other down on the
shared host), the seconds one student's compile took, the GPUs' idle time, and each GPU's
busy time. Busy is what batch measures: the seconds a grader process held
that GPU (its tests, sanitizer and bench, and the CPU work between them), out of the
grading time after the kit's build; it is slot occupancy, not nvidia-smi's utilisation
(nothing here samples the GPU). The rest of the time the GPU was idle, and batch says
why: "waited for compiles" (its next student's files were still compiling: the compiles
ahead did not keep up; "first" is the part before each GPU's first student, which no
compile-ahead can hide) or "idle at end" (no student was left for it while the other
GPUs graded their last ones: the tail of a class, at most about one student's grading
per GPU, which weighs less in a larger class). The runs share the class's kit
build (the first run's wall time holds it; batch reports it apart), and each run's
gradebook, reports and logs are kept in DIR/run<K>-gpus-<SPEC>/. A GPU set may ask for
several graders per GPU, `--gpus 0:2` (batch --jobs): they take turns for timing
(grader/gpu_lock.py), and overlap their tests and the CPU work of their grading.
A second table says where each student's grading went, per GPU set and GPU: the grader
process's seconds (what busy adds up) and its report's stages (files, build, tests,
timing) and the rest of the process, and how busy the host's cores were meanwhile (the
reports' processor samples); a stage that grows from one GPU to several is where
the graders slow each other down. Since each GPU of a set grades different students, lines
after it compare the same students across GPU sets: how much longer each one's grading took
on the later set than on the first, in the grader process, its stages, the lab phases that
changed most (tests, sanitizer, bench set-up, profile), and per GPU. A line before the runs describes the host: its cores,
the physical cores they make up, and how long one nvidia-smi query takes.

A class too long for one sitting is graded in parts: `--limit K` grades the next K
students not graded yet, GPU set after GPU set in the order given, and keeps the folder;
`--resume` (with the same --students, --labs and --gpus) goes on where the last part
stopped. A GPU set is finished before the next one starts, so two sittings can time a
class on one GPU and then on two:

    python3 -m grader.tests.class_scale --students 20 --labs vectorAdd reduction --out DIR \
        --gpus 0 --gpus 0,1 --limit 20
    python3 -m grader.tests.class_scale --students 20 --labs vectorAdd reduction --out DIR \
        --gpus 0 --gpus 0,1 --resume

Each part's figures are kept in DIR/class_scale.json, and the table adds each GPU set's
parts up.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from grader import cpu_load, manifest
from grader.instructor import cores
from grader.tests import onefile

KIT = Path(__file__).resolve().parents[2]
BROKEN = "#include \"{lab}.h\"\nthis line does not compile;\n"
RUN_OUTPUTS = ("gradebook.csv", "timing.json", "reports", "logs", "status")  # what batch writes per run
AUTO = "auto"
KINDS = ("right", "skeleton", "broken")
DEFAULT_MIX = (60, 20, 20)  # percent of each lab's submissions: right, skeleton, broken


def parse_mix(text: str) -> tuple[int, ...]:
    """`--mix R,S,B`: three whole percentages (right, skeleton, broken) that add up to 100."""
    try:
        shares = tuple(int(part) for part in text.split(","))
    except ValueError:
        shares = ()
    if len(shares) != len(KINDS) or min(shares) < 0 or sum(shares) != 100:
        raise argparse.ArgumentTypeError(f"--mix {text!r}: give three whole percentages that add up to 100, "
                                         "right,skeleton,broken (e.g. 60,20,20)")
    return shares


def kinds_for(students: int, mix: tuple[int, ...]) -> list[str]:
    """What each of `students` hands in for one lab, in an order that spreads the kinds out:
    exactly round(share * students) of each (largest remainders), where the running count of
    each kind stays closest to its share."""
    exact = [share * students / 100 for share in mix]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(mix)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in by_remainder[:students - sum(counts)]:
        counts[i] += 1
    order: list[str] = []
    given = [0] * len(mix)
    for slot in range(students):
        # the kind furthest behind its share of the first slot + 1 submissions
        pick = max((i for i in range(len(mix)) if given[i] < counts[i]),
                   key=lambda i: (counts[i] * (slot + 1) / students - given[i], -i))
        given[pick] += 1
        order.append(KINDS[pick])
    return order


def make_class(out: Path, students: int, labs: list[str], mix: tuple[int, ...] = DEFAULT_MIX) -> Path:
    """N submission folders and their roster, and DIR/class.json (each student's kind per
    lab); returns the roster. Student k hands in kind (k + i) of the lab's spread-out list
    in the i-th lab, so that the students' mixes differ."""
    subs = out / "submissions"
    shutil.rmtree(subs, ignore_errors=True)
    right = out / "right"  # each lab's right submission, made once
    shutil.rmtree(right, ignore_errors=True)
    order = kinds_for(students, mix)
    if "right" in order:
        for lab in labs:
            onefile.write(KIT, lab, right)
    rows = []
    composition: dict[str, dict[str, str]] = {}
    for k in range(students):
        name = f"student{k:03d}"
        composition[name] = {}
        for i, lab in enumerate(labs):
            kind = order[(k + i) % students]
            composition[name][lab] = kind
            folder = subs / name / "labs" / lab
            folder.mkdir(parents=True, exist_ok=True)
            skeleton = KIT / "labs" / lab
            if kind == "right":
                shutil.copy(right / "labs" / lab / f"{lab}.cu", folder / f"{lab}.cu")
            elif kind == "broken":
                (folder / f"{lab}.cu").write_text(BROKEN.format(lab=lab))
            else:
                shutil.copy(skeleton / f"{lab}.cu", folder / f"{lab}.cu")
            answers = (right if kind == "right" else KIT) / "labs" / lab / "answers.md"
            if answers.is_file():
                shutil.copy(answers, folder / "answers.md")
        rows.append((name, str(subs / name)))
    totals = {kind: sum(list(one.values()).count(kind) for one in composition.values()) for kind in KINDS}
    (out / "class.json").write_text(json.dumps({"mix": dict(zip(KINDS, mix)), "labs": labs, "totals": totals,
                                                "students": composition}, indent=1) + "\n")
    print(f"class: {students} students x {len(labs)} labs: "
          + ", ".join(f"{totals[kind]} {kind}" for kind in KINDS)
          + f" (--mix {','.join(map(str, mix))}, in {out / 'class.json'})", flush=True)
    roster = out / "roster.csv"
    with roster.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "path"])
        writer.writerows(rows)
    return roster


def parse_spec(spec: str) -> tuple[str, int]:
    """A --gpus value: (the GPUs as CUDA_VISIBLE_DEVICES names them, or AUTO; graders per
    GPU). "0,1" -> ("0,1", 1); "0:2" -> ("0", 2), two graders taking turns on GPU 0."""
    devices, _, per = spec.partition(":")
    if spec == AUTO:
        return AUTO, 1
    if not devices or not all(d.strip().isdigit() for d in devices.split(",")) or (per and not per.isdigit()) \
            or (per and int(per) < 1):
        raise ValueError(f"--gpus {spec}: give GPU indexes, e.g. 0 or 0,1, and optionally :N graders per GPU (0:2)")
    return devices, int(per or 1)


STAGES = ("files", "build", "tests", "timing")  # a report's "seconds", in the grader's order


def stage_seconds(per_student: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Where the grading of a part's students went, per GPU, summed over them (from
    student_seconds): the grader process's seconds (batch's status: what "busy" adds up) and
    its stages' (the report's "seconds": files, build, tests, timing). Comparing a GPU set's
    figures with one GPU's shows which stage grows where graders share the host. Students
    whose report gives no stage seconds are left out."""
    per_gpu: dict[str, dict[str, float]] = {}
    for one in per_student.values():
        if not one["stages"]:
            continue
        total = per_gpu.setdefault(one["gpu"], {"students": 0, "grader_s": 0.0, **dict.fromkeys(STAGES, 0.0),
                                                "cpu_busy": 0.0, "cpu_students": 0})
        total["students"] += 1
        total["grader_s"] += one["grader_s"]
        for stage in STAGES:
            total[stage] += one["stages"].get(stage, 0.0)
        if one.get("cpu_busy") is not None:
            total["cpu_busy"] += one["cpu_busy"]
            total["cpu_students"] += 1
    return per_gpu


def mean_busy(load: Any) -> float | None:
    """The mean share of the host's cores busy over a report's "cpu_busy" samples
    (grader/cpu_load.py), or None without any."""
    values = [busy for _, busy in cpu_load.samples_of(load)]
    return round(sum(values) / len(values), 3) if values else None


def student_seconds(grades: Path, students: list[str]) -> dict[str, dict]:
    """Each of `students`' grading, for comparing the same student across GPU sets: the GPU,
    the grader process's seconds, the report's stages and each lab's phases (its
    "seconds": tests, sanitizer, bench set-up, profile). Students without a report or a
    status are left out."""
    found: dict[str, dict] = {}
    for student in students:
        try:
            status = json.loads((grades / "status" / f"{student}.json").read_text())
            report = json.loads((grades / "reports" / f"{student}.json").read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(status, dict) or not isinstance(report, dict) or not status.get("seconds"):
            continue
        stages = report.get("seconds") if isinstance(report.get("seconds"), dict) else {}
        labs: dict[str, dict[str, float]] = {}
        for lab in report.get("labs") or []:
            if isinstance(lab, dict) and isinstance(lab.get("seconds"), dict):
                labs[str(lab.get("lab"))] = {str(phase): float(value) for phase, value in lab["seconds"].items()
                                             if isinstance(value, (int, float))}
        found[student] = {"gpu": str(status.get("gpu")), "grader_s": float(status["seconds"]),
                          "stages": {stage: float(value) for stage, value in stages.items()
                                     if isinstance(value, (int, float))},
                          "labs": labs, "cpu_busy": mean_busy(report.get("cpu_busy"))}
    return found


def run_batch(out: Path, roster: Path, labs: list[str], gpus: str, grader_args: list[str],
              students: list[str] | None = None) -> dict:
    """One `batch` run over `roster` in out/grades (the kit build there is reused); returns
    its figures from batch's timing.json, with the exit status and the wall time seen here.
    `gpus` is a --gpus value (parse_spec): with :N, batch runs N graders per GPU (--jobs),
    which take turns for timing (grader/gpu_lock.py)."""
    grades = out / "grades"
    devices, per_gpu = parse_spec(gpus)
    jobs = ["--jobs", str(per_gpu * len(devices.split(",")))] if per_gpu > 1 and devices != AUTO else []
    command = [sys.executable, "-m", "grader", "batch", str(roster), "--out", str(grades), "--labs", *labs,
               "--resume", *jobs, *(f"--grader-arg={a}" for a in grader_args)]
    # The GPUs as CUDA_VISIBLE_DEVICES names them: batch's --gpus auto then uses exactly
    # those (its --gpus would read "0" as a count).
    env = dict(os.environ, **({"CUDA_VISIBLE_DEVICES": devices} if devices != AUTO else {}))
    (grades / "timing.json").unlink(missing_ok=True)
    print(f"$ {'CUDA_VISIBLE_DEVICES=' + devices + ' ' if devices != AUTO else ''}{' '.join(command)}", flush=True)
    start = time.monotonic()
    done = subprocess.run(command, cwd=KIT, env=env)  # its output shows as it goes
    wall = time.monotonic() - start
    try:
        timing = json.loads((grades / "timing.json").read_text())
    except (OSError, ValueError):
        timing = {}
    per_student = student_seconds(grades, students or [])
    return {"gpus": gpus, "exit": done.returncode, "wall_s": round(wall, 1),
            "students": timing.get("students", 0), "kit_s": timing.get("kit_s"),
            "grading_s": timing.get("grading_s"), "per_gpu": timing.get("per_gpu", []),
            "used_gpus": timing.get("gpus", []), "builders": timing.get("builders"),
            "compiles": timing.get("compiles"), "stages": stage_seconds(per_student), "per_student": per_student}


def keep_run(out: Path, index: int, gpus: str) -> Path:
    """Moves a finished run's gradebook, reports, logs and status to out/run<K>-gpus-<SPEC>,
    so that the next run grades every student again (in the same kit build)."""
    kept = out / f"run{index}-gpus-{gpus.replace(',', '_').replace(':', 'x')}"
    shutil.rmtree(kept, ignore_errors=True)
    kept.mkdir(parents=True)
    for name in RUN_OUTPUTS:
        if (out / "grades" / name).exists():
            shutil.move(str(out / "grades" / name), str(kept / name))
    for work in (out / "grades" / "work").glob("student*"):
        shutil.rmtree(work, ignore_errors=True)
    return kept


IDLE = ("waited_s", "first_wait_s", "tail_s")  # batch's idle seconds per GPU (absent from an older batch's)


def combine(parts: list[dict]) -> dict:
    """The parts of one GPU set added up: students, wall, kit and grading seconds; the
    students compiled and their compile seconds; and per GPU the busy seconds, the seconds
    it could have been, the students it graded, and its idle seconds waiting for a compile
    and at the end (None where a part does not tell them)."""
    total = {"gpus": parts[0]["gpus"], "parts": len(parts), "students": 0, "wall_s": 0.0, "kit_s": 0.0,
             "grading_s": 0.0, "per_gpu": {}, "exit": max(part["exit"] for part in parts), "known": True,
             "compiled": 0, "compile_s": 0.0, "compile_max_s": 0.0}
    for part in parts:
        total["students"] += part["students"]
        total["wall_s"] += part["wall_s"]
        if part.get("grading_s") is None:
            total["known"] = False
            continue
        total["kit_s"] += part["kit_s"] or 0.0
        total["grading_s"] += part["grading_s"]
        compiles = part.get("compiles") or {}
        if compiles.get("students"):
            total["compiled"] += compiles["students"]
            total["compile_s"] += compiles["per_student_s"] * compiles["students"]
            total["compile_max_s"] = max(total["compile_max_s"], compiles.get("max_s", 0.0))
        for one in part["per_gpu"]:
            use = total["per_gpu"].setdefault(str(one["gpu"]), {"busy_s": 0.0, "of_s": 0.0, "students": 0,
                                                                **dict.fromkeys(IDLE, 0.0)})
            use["busy_s"] += one["busy_s"]
            use["of_s"] += one["of_s"]
            use["students"] += one["students"]
            for key in IDLE:
                use[key] = None if use[key] is None or one.get(key) is None else use[key] + one[key]
    return total


def _seconds(values: list[float | None]) -> str:
    """The sum of `values` in whole seconds, or "?" where one is not known."""
    return "?" if not values or None in values else f"{sum(values):.0f}"


def table(rows: list[dict], labs: int) -> str:
    """students, labs, GPUs, wall s, kit s, s per student (after the kit), speedup over the
    first row, busy GPU seconds per student, seconds per student's compile, GPU seconds waiting for a compile and idle at
    the end (all GPUs), each GPU's busy time and idle seconds."""
    lines = [f"{'students':>8} {'labs':>4} {'GPUs':>6} {'wall s':>7} {'kit s':>6} {'s/student':>9} {'speedup':>8} "
             f"{'busy s/st':>9} {'compile s/st':>12} {'waited for compiles s':>21} {'idle at end s':>13}  "
             f"busy per GPU (a grader held it; of the grading time after the kit)"]
    first = None
    for row in rows:
        per = row["grading_s"] / row["students"] if row["known"] and row["students"] else None
        first = first or per
        # Three decimals: a threshold such as 1.9x is then not met by a 1.896x that two
        # decimals would print as 1.90x.
        speedup = f"{first / per:.3f}x" if per and first else "?"
        gpus = ",".join(row["per_gpu"]) if row["per_gpu"] else row["gpus"]
        if ":" in row["gpus"]:
            gpus += ":" + row["gpus"].partition(":")[2]  # graders per GPU
        uses = list(row["per_gpu"].values())
        compile_per = f"{row['compile_s'] / row['compiled']:.1f}" if row.get("compiled") else "?"
        busy_per = f"{sum(use['busy_s'] for use in uses) / row['students']:.1f}" if uses and row["students"] else "?"
        waited = _seconds([use.get("waited_s") for use in uses])
        if waited != "?":
            waited += f" ({_seconds([use.get('first_wait_s') for use in uses])} first)"
        tail = _seconds([use.get("tail_s") for use in uses])

        def idle(use: dict) -> str:
            if use.get("waited_s") is None or use.get("tail_s") is None:
                return ""
            return f", waited {use['waited_s']:.0f} s, idle at end {use['tail_s']:.0f} s"

        busy = "; ".join(f"{gpu}: {use['busy_s']:.0f} s of {use['of_s']:.0f} s "
                         f"({100 * use['busy_s'] / use['of_s'] if use['of_s'] else 0:.0f}%), {use['students']} st."
                         + idle(use)
                         for gpu, use in row["per_gpu"].items()) or "?"
        lines.append(f"{row['students']:>8} {labs:>4} {gpus:>6} {row['wall_s']:>7.0f} "
                     f"{row['kit_s'] if row['known'] else float('nan'):>6.0f} "
                     f"{f'{per:.1f}' if per else '?':>9} {speedup:>8} {busy_per:>9} {compile_per:>12} {waited:>21} {tail:>13}  {busy}"
                     + (f"   ({row['parts']} parts)" if row["parts"] > 1 else "")
                     + (f"   (batch exit {row['exit']})" if row["exit"] not in (0, 1) else ""))
    lines.append("(busy s/st: the GPU seconds a student's grading held, all GPUs added over the students: where it "
                 "grows with more GPUs, the graders slow each other down on the shared host; "
                 "compile s/st: one student's compile ahead of the graders; waited for compiles: seconds the GPUs "
                 "were free while their next student still compiled, all GPUs added, of them before each GPU's "
                 "first student; idle at end: seconds a GPU had no student left while the others graded their last)")
    return "\n".join(lines)


def host_line() -> str:
    """The host as the graders share it: its cores (and the physical cores they make up,
    where hardware threads share one), and how long one nvidia-smi query takes (the grader
    asks it a few times per lab)."""
    try:
        available = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        available = list(range(os.cpu_count() or 0))
    # Grouped as batch groups them for its graders (one core per group where the kernel does not say).
    physical = cores.physical_cores(available)
    per_core = f" in {len(physical)} physical cores" if len(physical) != len(available) else ""
    count = len(available)
    smi = shutil.which("nvidia-smi")
    query = "nvidia-smi: not found"
    if smi:
        start = time.monotonic()
        try:
            subprocess.run([smi, "--query-gpu=index,uuid", "--format=csv,noheader"], capture_output=True, timeout=30)
            query = f"one nvidia-smi query: {1000 * (time.monotonic() - start):.0f} ms"
        except (OSError, subprocess.TimeoutExpired) as exc:
            query = f"nvidia-smi: {exc}"
    return f"host: {count} cores{per_core}; {query}"


def stage_table(by_spec: dict[str, list[dict]]) -> str:
    """Seconds per student, per GPU set and GPU: the grader process, its stages, and the rest
    of it (the process's start, its checks of the build, scoring and the report), from the
    parts' stage_seconds."""
    lines = [f"{'GPUs':>6} {'GPU':>4} {'students':>8} {'grader s/st':>11} "
             + " ".join(f"{stage + ' s/st':>{max(8, len(stage) + 5)}}" for stage in STAGES)
             + f" {'rest s/st':>9} {'cpu busy':>8}"]
    for spec, parts in by_spec.items():
        summed: dict[str, dict[str, float]] = {}
        for part in parts:
            for gpu, one in (part.get("stages") or {}).items():
                total = summed.setdefault(gpu, dict.fromkeys(one, 0.0))
                for key, value in one.items():
                    total[key] = total.get(key, 0.0) + value
        for gpu, one in summed.items():
            n = one.get("students") or 0
            if not n:
                continue
            rest = one["grader_s"] - sum(one.get(stage, 0.0) for stage in STAGES)
            sampled = one.get("cpu_students") or 0
            busy = f"{100 * one.get('cpu_busy', 0.0) / sampled:>7.0f}%" if sampled else f"{'-':>8}"
            lines.append(f"{spec:>6} {gpu:>4} {n:>8.0f} {one['grader_s'] / n:>11.2f} "
                         + " ".join(f"{one.get(stage, 0.0) / n:>{max(8, len(stage) + 5)}.2f}" for stage in STAGES)
                         + f" {rest / n:>9.2f} {busy}")
    if len(lines) == 1:
        return "(no stage figures: the reports hold no \"seconds\")"
    lines.append("(per student: the grader process's seconds, as busy counts them, and its stages from the report: "
                 "tests is the labs' tests, sanitizer and bench set-up side by side, timing each lab's bench alone; "
                 "rest is the process's start, its build checks, scoring and the report. A stage that grows from "
                 "one GPU to several is where the graders slow each other down. cpu busy: the share of the host's "
                 "cores busy while they graded, the mean of their reports' samples)")
    return "\n".join(lines)


def growth_lines(by_spec: dict[str, list[dict]], top: int = 6) -> list[str]:
    """The same students graded by the first GPU set and by each later one: how much longer
    (or shorter) each one's grading took, per student, in the grader process, its stages and
    the lab phases that grew most, and per GPU of the later set. Where graders on several
    GPUs slow each other down, this says where, without the students' mix in the way (each
    GPU of a set gets different students)."""
    specs = list(by_spec)
    if len(specs) < 2:
        return []

    def students(spec: str) -> dict[str, dict]:
        merged: dict[str, dict] = {}
        for part in by_spec[spec]:
            merged.update(part.get("per_student") or {})
        return merged

    base = students(specs[0])
    lines = []
    for spec in specs[1:]:
        now = students(spec)
        both = [name for name in now if name in base]
        if not both:
            lines.append(f"same students, GPUs {spec} against GPUs {specs[0]}: none graded by both "
                         "(no per-student figures)")
            continue
        n = len(both)

        def mean_growth(value) -> float:
            return sum(value(now[name]) - value(base[name]) for name in both) / n

        grader = mean_growth(lambda one: one["grader_s"])
        base_grader = sum(base[name]["grader_s"] for name in both) / n
        stages = [(stage, mean_growth(lambda one, stage=stage: one["stages"].get(stage, 0.0))) for stage in STAGES]
        rest = grader - sum(value for _, value in stages)
        percent = f" ({100 * grader / base_grader:+.1f}%)" if base_grader else ""
        lines.append(f"same students, GPUs {spec} against GPUs {specs[0]} ({n} graded by both): "
                     f"grader {grader:+.2f} s/st{percent}; "
                     + ", ".join(f"{stage} {value:+.2f}" for stage, value in stages) + f", rest {rest:+.2f}")
        phases = sorted({(lab, phase) for name in both for one in (now[name], base[name])
                         for lab, seconds in one["labs"].items() for phase in seconds})

        def phase_growth(lab: str, phase: str) -> float:
            return mean_growth(lambda one: one["labs"].get(lab, {}).get(phase, 0.0))

        grown = sorted(((phase_growth(lab, phase), lab, phase) for lab, phase in phases),
                       key=lambda item: -abs(item[0]))[:top]
        if grown:
            lines.append("  lab phases that changed most, s/st: "
                         + ", ".join(f"{lab} {phase} {value:+.2f}" for value, lab, phase in grown)
                         + " (the labs are graded side by side: their phases overlap)")
        by_gpu: dict[str, list[float]] = {}
        for name in both:
            by_gpu.setdefault(now[name]["gpu"], []).append(now[name]["grader_s"] - base[name]["grader_s"])
        if len(by_gpu) > 1:
            lines.append(f"  per GPU of GPUs {spec}: " + "; ".join(
                f"{gpu} {sum(grown_s) / len(grown_s):+.2f} s/st ({len(grown_s)} st.)"
                for gpu, grown_s in sorted(by_gpu.items())))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.tests.class_scale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=20, help="how many submissions (default 20)")
    parser.add_argument("--out", type=Path, required=True, help="a folder for the class (deleted first)")
    parser.add_argument("--labs", nargs="+", help="labs to grade (default: all)")
    parser.add_argument("--mix", type=parse_mix, default=DEFAULT_MIX, metavar="R,S,B",
                        help="percent of each lab's submissions that are right (the reference as one file, with "
                             "its answers), untouched skeletons, and files that do not compile "
                             f"(default {','.join(map(str, DEFAULT_MIX))})")
    parser.add_argument("--gpus", action="append", metavar="LIST",
                        help="grade the class on these GPUs, by index as CUDA_VISIBLE_DEVICES names them, e.g. 0 or "
                             "0,1, and :N for N graders per GPU taking turns for timing (e.g. 0:2); repeat it for one "
                             "run per GPU set, in order (default: one run on every GPU)")
    parser.add_argument("--grader-arg", action="append", default=[], help="passed on to every grader run")
    parser.add_argument("--limit", type=int, metavar="K", help="grade at most K more students now (a part)")
    parser.add_argument("--resume", action="store_true", help="go on with the class in --out (its next part)")
    args = parser.parse_args(argv)
    specs = args.gpus or [AUTO]
    for spec in specs:
        try:
            parse_spec(spec)
        except ValueError as exc:
            parser.error(str(exc))
    if args.limit is not None and args.limit < 1:
        parser.error("--limit must be at least 1")
    try:
        labs = manifest.resolve_names(args.labs, manifest.names(KIT)) if args.labs else manifest.names(KIT)
    except ValueError as exc:
        parser.error(str(exc))
    out = args.out.resolve()
    parts_file = out / "class_scale.json"
    if not args.resume:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        try:
            make_class(out, args.students, labs, args.mix)
        except onefile.OneFileError as exc:
            parser.error(f"cannot make a lab's right submission: {exc}")
        parts_file.write_text("[]\n")
    elif not parts_file.is_file():
        parser.error(f"--resume: no class in {out} (run without --resume first)")
    parts = json.loads(parts_file.read_text())
    roster = out / "roster.csv"
    with roster.open() as f:
        rows = list(csv.reader(f))

    print(host_line(), flush=True)
    budget = args.limit  # students this sitting may still grade (None: all)
    for index, spec in enumerate(specs, 1):
        graded_before = sum(part["students"] for part in parts if part["gpus"] == spec)
        left = args.students - graded_before
        if left <= 0:
            print(f"--gpus {spec}: all {args.students} students are graded")
            continue
        if budget is not None and budget <= 0:
            break
        now = left if budget is None else min(budget, left)
        # This part's roster: the students graded before (batch --resume skips them) and the next ones.
        part_roster = out / f"roster.part{len(parts) + 1}.csv"
        with part_roster.open("w", newline="") as f:
            csv.writer(f).writerows(rows[:1 + graded_before + now])
        part = run_batch(out, part_roster, labs, spec, args.grader_arg,
                         [row[0] for row in rows[1 + graded_before:1 + graded_before + now]])
        part["students"] = part["students"] or now
        parts.append(part)
        parts_file.write_text(json.dumps(parts, indent=1) + "\n")
        if part["exit"] not in (0, 1):
            print(f"batch ended with exit status {part['exit']}: see its output above", file=sys.stderr)
            return part["exit"]
        if budget is not None:
            budget -= now
        if now < left:
            break  # this GPU set is not finished: the next sitting goes on with it (--resume)
        if len(specs) > 1:
            print(f"run {index} kept in {keep_run(out, index, spec)}", flush=True)

    by_spec: dict[str, list[dict]] = {}
    for part in parts:
        by_spec.setdefault(part["gpus"], []).append(part)
    print()
    print(table([combine(found) for found in by_spec.values()], len(labs)))
    print()
    print(stage_table(by_spec))
    for line in growth_lines(by_spec):
        print(line)
    graded = {spec: sum(part["students"] for part in by_spec.get(spec, []))
              for spec in dict.fromkeys(specs + list(by_spec))}
    short = [spec for spec, count in graded.items() if count < args.students]
    if short:
        print(f"({', '.join(f'{args.students - graded[spec]} to go on --gpus {spec}' for spec in short)}: --resume)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
