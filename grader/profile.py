"""Why is a kernel as fast as it is? Nsight Compute on the student's graded call and the reference's.

    python3 -m grader profile reduction                 # your reduce_sum and the reference's
    python3 -m grader profile reduction --size 16777216 # at another size (the bench's --size)

Runs the lab's own bench (`<lab>_bench`, your code linked in; this is feedback, not a
grade) under `ncu`, once for your function and once for the reference's, at a size that
takes seconds, and prints per kernel: its duration, the DRAM and SM throughput it
achieved (% of peak), its achieved occupancy and what limits it, its top stall reasons,
and, where the lab is about them, shared-memory bank conflicts and global-memory sectors
per request. Each figure comes with a sentence of what it means for this lab (the
manifest's "profile" notes). The kit's own kernels (data generation, output checks)
are left out.

A lab whose graded questions ask for profiler figures ("check": "profile", answers.py)
also has the candidates those questions name profiled (e.g. the reference's lecture steps
`ref:tiled`, timed with the bench's --time-variants), and the line to paste for each
question is printed. A grading run checks such answers only against a profile it takes
itself (profile_candidates, on the kit's own solution bench: no student code in it);
a figures file (--json) is for the student's own use, and the grader never reads one.

Exit status: 0 printed; 1 ncu ran but found no kernel of yours; 2 bad usage; 3 no GPU,
ncu or the bench is missing, the build has no code for the GPU (grader/arch.py), or ncu
may not read the GPU's counters.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import arch, commandline, config, gpu, gpu_lock, layout, manifest, proc

EXIT_OK, EXIT_NOTHING, EXIT_USAGE, EXIT_UNAVAILABLE = 0, 1, 2, 3
TIMEOUT_S = 600
# Metrics, by the short key the report uses. Names as Nsight Compute 2023-2025 spells them.
CORE_METRICS = {
    "duration_ns": "gpu__time_duration.sum",
    "dram_pct": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm_pct": "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "occupancy_pct": "sm__warps_active.avg.pct_of_peak_sustained_active",
    "theoretical_occupancy_pct": "sm__maximum_warps_per_active_cycle_pct",
    "limit_registers": "launch__occupancy_limit_registers",
    "limit_shared_mem": "launch__occupancy_limit_shared_mem",
    "limit_warps": "launch__occupancy_limit_warps",
    "limit_blocks": "launch__occupancy_limit_blocks",
    "registers": "launch__registers_per_thread",
}
MEMORY_METRICS = {
    "bank_conflicts_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bank_conflicts_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "global_ld_sectors": "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "global_ld_requests": "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
}
# The lecture's profiling table (nvprof's efficiencies, as nvbench and ncu's nvprof table
# map them): asked for with the memory metrics.
EFFICIENCY_METRICS = {
    "global_ld_efficiency_pct": "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.pct",
    "global_st_efficiency_pct": "smsp__sass_average_data_bytes_per_sector_mem_global_op_st.pct",
    "shared_efficiency_pct": "smsp__sass_average_data_bytes_per_wavefront_mem_shared.pct",
}
STALLS = ("long_scoreboard", "short_scoreboard", "barrier", "membar", "mio_throttle", "lg_throttle", "math_pipe_throttle",
          "wait", "not_selected", "dispatch_stall", "no_instruction", "branch_resolving", "drain", "tex_throttle")
STALL_METRICS = {f"stall_{name}": f"smsp__average_warps_issue_stalled_{name}_per_issue_active.ratio" for name in STALLS}
STALL_MEANING = {
    "long_scoreboard": "waiting for global memory", "short_scoreboard": "waiting for shared memory or special math",
    "barrier": "waiting at __syncthreads()", "membar": "waiting at a memory fence",
    "mio_throttle": "shared-memory instruction queue full", "lg_throttle": "global-memory instruction queue full",
    "math_pipe_throttle": "arithmetic units busy", "wait": "fixed instruction latency",
    "not_selected": "ready, another warp issued", "dispatch_stall": "dispatch stalled",
    "no_instruction": "instruction cache miss", "branch_resolving": "resolving a branch",
    "drain": "writing back memory at exit", "tex_throttle": "texture queue full",
}
DEFAULT_HINTS = {
    "dram": "the share of the DRAM bandwidth this kernel used: near 100% it is memory bound and done",
    "sm": "the share of the SMs' issue and pipe throughput this kernel used",
    "occupancy": "the share of the SM's warp slots that were filled: more warps hide more latency",
    "stalls": "what the warps waited for most, per issued instruction",
    "bank_conflicts": "extra shared-memory cycles when threads of a warp hit the same bank: 0 is ideal",
    "coalescing": "32-byte sectors per global load request: 4 is ideal for 4-byte loads by a whole warp",
}
NOT_PERMITTED = ("ERR_NVGPUCTRPERM", "permission to access NVIDIA GPU Performance Counters")


class ProfileError(Exception):
    """The profile cannot be taken; the message says why and what to do."""


@dataclass
class Kernel:
    """One kernel's figures: the median over its profiled launches."""

    name: str
    launches: int
    metrics: dict[str, float] = field(default_factory=dict)

    def limiter(self) -> str:
        """What limits the theoretical occupancy: the smallest of the launch limits."""
        limits = {key[len("limit_"):]: value for key, value in self.metrics.items() if key.startswith("limit_")}
        if not limits:
            return ""
        lowest = min(limits.values())
        return ", ".join(sorted(name.replace("_", " ") for name, value in limits.items() if value == lowest))

    def top_stalls(self, count: int = 3) -> list[tuple[str, float]]:
        stalls = [(key[len("stall_"):], value) for key, value in self.metrics.items() if key.startswith("stall_")]
        return sorted((s for s in stalls if s[1] > 0), key=lambda s: -s[1])[:count]

    def sectors_per_request(self) -> float | None:
        sectors, requests = self.metrics.get("global_ld_sectors"), self.metrics.get("global_ld_requests")
        return sectors / requests if sectors is not None and requests else None


# --- ncu's CSV ----------------------------------------------------------------------------

def parse_csv(text: str, wanted: dict[str, str]) -> dict[str, list[dict[str, float]]]:
    """Kernel name -> one {key: value} per profiled launch, from `ncu --csv` output in
    either layout: one row per metric ("Metric Name", "Metric Value": the details page)
    or one row per launch with a column per metric (--page raw, with a units row)."""
    by_name = {name: key for key, name in wanted.items()}
    lines = [line for line in text.splitlines() if line.startswith('"')]  # the program's own output is not CSV
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header_at = next((i for i, row in enumerate(rows) if "Kernel Name" in row), None)
    if header_at is None:
        return {}
    header, body = rows[header_at], rows[header_at + 1:]
    column = {name: index for index, name in enumerate(header)}
    kernel_col = column["Kernel Name"]
    launches: dict[tuple[str, str], dict[str, float]] = {}
    if "Metric Name" in column and "Metric Value" in column:
        for row in body:
            if len(row) != len(header):
                continue
            key = by_name.get(row[column["Metric Name"]])
            value = _number(row[column["Metric Value"]])
            if key is not None and value is not None:
                launch = (row[column.get("ID", kernel_col)], row[kernel_col])
                launches.setdefault(launch, {})[key] = value
    else:
        for row in body:
            if len(row) != len(header) or not row[kernel_col]:
                continue  # the units row has no kernel name
            values = {by_name[name]: _number(row[index]) for name, index in column.items() if name in by_name}
            launch = (row[column.get("ID", kernel_col)], row[kernel_col])
            launches[launch] = {key: value for key, value in values.items() if value is not None}
    found: dict[str, list[dict[str, float]]] = {}
    for (_, name), values in launches.items():
        found.setdefault(tidy_name(name), []).append(values)
    return found


def tidy_name(name: str) -> str:
    """A kernel's name as C++ spells it: ncu writes the anonymous namespace as `<unnamed>`
    and, in some versions, cuts its `<`."""
    for spelling in ("<unnamed>::", "unnamed>::"):
        if name.startswith(spelling):
            return "(anonymous namespace)::" + name[len(spelling):]
    return name


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:  # "n/a", ""
        return None


def is_kit_kernel(name: str) -> bool:
    """The kit's own kernels (data generation, output checks, L2 flushes): namespace lab::."""
    bare = name.removeprefix("void ").lstrip()
    return bare.startswith("lab::") or "(anonymous namespace)::lab" in bare


def kernels(found: dict[str, list[dict[str, float]]]) -> list[Kernel]:
    """The profiled kernels that are not the kit's, slowest first (median over launches)."""
    out = []
    for name, launches in found.items():
        if is_kit_kernel(name):
            continue
        keys = {key for launch in launches for key in launch}
        medians = {key: statistics.median(launch[key] for launch in launches if key in launch) for key in keys}
        out.append(Kernel(name, len(launches), medians))
    return sorted(out, key=lambda k: -k.metrics.get("duration_ns", 0.0))


# --- running ------------------------------------------------------------------------------

def find_ncu(given: str | None = None) -> str | None:
    """ncu on PATH, next to nvcc, or in the usual install folders."""
    if given:
        return shutil.which(given)
    found = shutil.which("ncu")
    if found:
        return found
    candidates = [Path("/usr/local/cuda/bin/ncu"), *sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"))]
    return next((str(c) for c in candidates if proc.is_executable(c)), None)


def profile(ncu: str, bench: Path, candidate: str, *, size: int | None, seed: int,
            memory: bool, timeout: float = TIMEOUT_S, time_variants: tuple[str, ...] = ()) -> tuple[list[Kernel], list[str]]:
    """Profile `candidate` ("student", "reference", or a variant such as "ref:tiled" that
    `time_variants` has the bench time) of the bench's graded workload: its kernels and the
    metrics this ncu did not know (it is asked again without them)."""
    wanted = {**CORE_METRICS, **STALL_METRICS, **({**MEMORY_METRICS, **EFFICIENCY_METRICS} if memory else {})}
    found, said, code = _ncu(ncu, bench, candidate, wanted, size=size, seed=seed, timeout=timeout,
                             time_variants=time_variants)
    dropped: list[str] = []
    if not found and "metric" in said.lower() and ("not found" in said.lower() or "invalid" in said.lower()):
        # An older or newer ncu without some metric: ask again for the core ones.
        dropped = [name for key, name in wanted.items() if key not in CORE_METRICS]
        found, said, code = _ncu(ncu, bench, candidate, CORE_METRICS, size=size, seed=seed, timeout=timeout,
                                 time_variants=time_variants)
    if not found:
        tail = "\n".join(said.strip().splitlines()[-8:])
        raise ProfileError(f"ncu profiled no kernel of the {candidate}'s call (exit status {code}):\n{tail}")
    return found, dropped


def _ncu(ncu: str, bench: Path, candidate: str, wanted: dict[str, str], *, size: int | None, seed: int,
         timeout: float, time_variants: tuple[str, ...] = ()) -> tuple[list[Kernel], str, int | None]:
    """One ncu run: the kernels it profiled, all it printed, and its exit status."""
    # The bench names an NVTX range after each candidate's timed call: only the kernels
    # inside the candidate's range are profiled (not the reference's too).
    command = [ncu, "--csv", "--page", "raw", "--clock-control", "none", "--target-processes", "all",
               "--nvtx", "--nvtx-include", f"{candidate}/",
               "--metrics", ",".join(wanted.values()), str(bench), "--graded-only", "--quick", "--no-cpu",
               f"--filter={candidate}", f"--seed={seed}"] + ([f"--size={size}"] if size else []) + (
                   ["--time-variants", ",".join(time_variants)] if time_variants else [])
    done = proc.run(command, timeout=timeout)
    said = done.stdout + "\n" + done.stderr
    if any(mark in said for mark in NOT_PERMITTED):
        raise ProfileError("ncu may not read this GPU's performance counters (ERR_NVGPUCTRPERM): run it as an "
                           "administrator, or have one set NVreg_RestrictProfilingToAdminUsers=0 for the driver")
    if done.timed_out:
        raise ProfileError(f"ncu did not finish within {timeout:g} s: try a smaller --size")
    return kernels(parse_csv(done.stdout, wanted)), said, done.returncode


# --- the table ----------------------------------------------------------------------------

def render(lab: manifest.Lab, results: dict[str, list[Kernel]], hints: dict[str, str], dropped: list[str]) -> str:
    """The report: per candidate, each kernel's figures with what they mean here."""
    notes = {**DEFAULT_HINTS, **hints}
    out = [f"Nsight Compute on {lab.name}'s graded call (kernels of the kit left out)"]
    for who, found in results.items():
        out.append(f"\n== {who}")
        for kernel in found:
            m = kernel.metrics
            out.append(f"\n  {kernel.name[:100]}  ({kernel.launches} launch{'es' if kernel.launches != 1 else ''} profiled)")
            if "duration_ns" in m:
                out.append(f"    duration        {m['duration_ns'] / 1e3:10.1f} us")
            if "dram_pct" in m:
                out.append(f"    DRAM throughput {m['dram_pct']:10.1f} % of peak   {notes['dram']}")
            if "sm_pct" in m:
                out.append(f"    SM throughput   {m['sm_pct']:10.1f} % of peak   {notes['sm']}")
            limiter = kernel.limiter()
            if "occupancy_pct" in m or limiter:
                theory = m.get("theoretical_occupancy_pct")
                achieved = f"{m['occupancy_pct']:10.1f} % achieved" if "occupancy_pct" in m else f"{'':10} "
                out.append(f"    occupancy       {achieved}"
                           + (f" of {theory:.0f}% possible" if theory is not None else "")
                           + (f", limited by {limiter}" if limiter else "") + f"   {notes['occupancy']}")
            stalls = kernel.top_stalls()
            if stalls:
                text = "; ".join(f"{name.replace('_', ' ')} {value:.1f} ({STALL_MEANING.get(name, '')})"
                                 for name, value in stalls)
                out.append(f"    top stalls      {text}   {notes['stalls']}")
            if "bank_conflicts" in hints and ("bank_conflicts_ld" in m or "bank_conflicts_st" in m):
                out.append(f"    bank conflicts  {m.get('bank_conflicts_ld', 0):10.0f} on loads, "
                           f"{m.get('bank_conflicts_st', 0):.0f} on stores   {notes['bank_conflicts']}")
            sectors = kernel.sectors_per_request()
            if "coalescing" in hints and sectors is not None:
                out.append(f"    sectors/request {sectors:10.2f}   {notes['coalescing']}")
            shares = [f"{label} {m[key]:.1f}%" for key, label in (("global_ld_efficiency_pct", "load"),
                      ("global_st_efficiency_pct", "store"), ("shared_efficiency_pct", "shared")) if key in m]
            if shares:
                out.append(f"    efficiency      {', '.join(shares)}   the lecture's table: bytes the threads asked "
                           "for / bytes moved")
    if dropped:
        out.append(f"\nThis ncu does not know {len(dropped)} of the metrics asked for (stall reasons, bank conflicts, "
                   "sectors): only the core figures are shown.")
    return "\n".join(out) + "\n"


def bench_program(build_dir: Path, lab: str, impl: str) -> Path:
    """The bench a profile runs: the student's own (their code linked in) or the solution's."""
    return layout.direct_bench_path(build_dir, lab, impl)


def question_candidates(lab: manifest.Lab) -> list[str]:
    """The candidates the lab's "profile" questions name, in order, each once."""
    return list(dict.fromkeys(q.candidate for q in lab.questions if q.check == "profile" and q.candidate))


def variants_to_time(candidates: list[str]) -> tuple[str, ...]:
    """The bench's --time-variants for these candidates: "ref:tiled" and "tiled" need "tiled"."""
    names = [c.removeprefix("ref:") for c in candidates if c not in ("student", "reference")]
    return tuple(dict.fromkeys(name for name in names if name and name != "default"))


def _figures(results: dict[str, list[Kernel]]) -> dict[str, Any]:
    return {who: [{"name": k.name, "launches": k.launches, "metrics": k.metrics, "limiter": k.limiter()}
                  for k in found] for who, found in results.items()}


def profile_candidates(bench: Path, candidates: list[str], *, ncu: str, size: int | None = None, seed: int = 1,
                       timeout: float = TIMEOUT_S, say=None) -> tuple[dict[str, list[Kernel]], list[str]]:
    """Each candidate's kernels (memory and efficiency metrics included), and the metrics
    this ncu did not know. ProfileError (or proc.LaunchError) says why it could not be taken."""
    results: dict[str, list[Kernel]] = {}
    dropped: list[str] = []
    steps = variants_to_time(candidates)
    for who in candidates:
        if say is not None:
            say(f"profiling {who} with {Path(ncu).name} (each kernel is replayed: this takes a while)...")
        results[who], missing = profile(ncu, bench, who, size=size, seed=seed, memory=True, timeout=timeout,
                                        time_variants=steps)
        dropped = dropped or missing
    return results, dropped


def answer_lines(lab: manifest.Lab, results: dict[str, list[Kernel]], gpu_label: str) -> str:
    """For each "profile" question, the line to paste into answers.md (its figure and the GPU)."""
    from grader import answers  # the figure is read as the grader reads it
    figures = _figures(results)
    out = []
    for question in (q for q in lab.questions if q.check == "profile"):
        value = answers.profile_figure(figures, question.candidate, question.metric)
        shown = f"{value:.4g} measured on {gpu_label}" if value is not None else "(not measured: see above)"
        out.append(f"  ## {question.id}\n  Answer: {shown}")
    if not out:
        return ""
    return ("\nYour answers to the profiler questions (paste each under its heading in "
            f"labs/{lab.name}/answers.md):\n" + "\n".join(out) + "\n")


def profile_lab(lab: manifest.Lab, bench: Path, *, ncu: str, size: int | None = None, seed: int = 1,
                timeout: float = TIMEOUT_S, say=None, gpu_label: str = "") -> tuple[str, dict[str, Any]]:
    """Profiles the student's and the reference's graded call, and the candidates the lab's
    "profile" questions name: the rendered table and its figures as JSON. ProfileError (or
    proc.LaunchError) says why it could not be taken."""
    hints = dict(lab.profile_hints)
    results: dict[str, list[Kernel]] = {}
    dropped: list[str] = []
    asked = question_candidates(lab)
    steps = variants_to_time(asked)
    for who in ("student", "reference"):
        if say is not None:
            say(f"profiling the {who}'s call with {Path(ncu).name} (each kernel is replayed: this takes a while)...")
        results[who], missing = profile(ncu, bench, who, size=size, seed=seed,
                                        memory=bool({"bank_conflicts", "coalescing"} & set(hints)) or bool(asked),
                                        timeout=timeout, time_variants=steps)
        dropped = dropped or missing
    more, missing = profile_candidates(bench, [c for c in asked if c not in results], ncu=ncu, size=size,
                                       seed=seed, timeout=timeout, say=say)
    results.update(more)
    dropped = dropped or missing
    text = render(lab, results, hints, dropped) + answer_lines(lab, results, gpu_label or "<your GPU>")
    return text, _figures(results)


def build_parser() -> argparse.ArgumentParser:
    parser = commandline.CommandParser(
        command="profile", prog="python3 -m grader profile",
        description="Nsight Compute on your graded call and the reference's: duration, DRAM and SM throughput, "
                    "occupancy and its limiter, stall reasons, bank conflicts and coalescing, with what each means "
                    "for the lab.",
        epilog="Exit status: 0 printed; 1 no kernel of yours was found; 2 bad usage; 3 no GPU, ncu or the "
               "bench is missing, the build has no code for the GPU, or ncu may not read the GPU's counters.")
    parser.add_argument("lab", help="the lab to profile")
    parser.add_argument("--build-dir", type=Path, default=None,
                        help="the build folder holding bin/<lab>_bench (default: build/dev of the kit)")
    parser.add_argument("--impl", choices=("student", "solution"), default="student",
                        help="profile your code (default) or the reference solution's own bench")
    parser.add_argument("--size", type=int, default=None, help="problem size (the bench's --size; default: its own)")
    parser.add_argument("--seed", type=int, default=1, help="data seed (default 1)")
    parser.add_argument("--ncu", default=None, help="the ncu to use (default: PATH, /usr/local/cuda/bin, "
                                                    "/opt/nvidia/nsight-compute)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures as JSON")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help=argparse.SUPPRESS)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = commandline.parse(build_parser(), argv)
    if isinstance(args, int):
        return args
    root = args.root.resolve()
    try:
        labs = manifest.by_name(root)
        name = manifest.resolve_name(args.lab, list(labs))
    except (manifest.ManifestError, ValueError) as exc:
        print(f"grader profile: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    lab = labs[name]
    build_dir = (args.build_dir or root / "build" / "dev").resolve()
    bench = bench_program(build_dir, name, args.impl)
    if not proc.is_executable(bench):
        print(f"grader profile: error: {bench} not found: build it first (cmake --build --preset dev --target "
              f"{bench.name})", file=sys.stderr)
        return EXIT_UNAVAILABLE
    found_gpu = gpu.probe()
    if not found_gpu.ok:
        print(f"grader profile: error: no usable GPU: {found_gpu.why}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    built = arch.build_holding(build_dir, mode=arch.PROFILE)
    verdict = arch.check([built] if built else [], gpu.devices())
    if not verdict.ok:
        for line in verdict.errors:
            print(f"grader profile: error: {line}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    ncu = find_ncu(args.ncu)
    if ncu is None:
        print("grader profile: error: ncu (Nsight Compute) not found on PATH, in /usr/local/cuda/bin or "
              "/opt/nvidia/nsight-compute: install it with the CUDA toolkit, or pass --ncu PATH", file=sys.stderr)
        return EXIT_UNAVAILABLE
    try:
        found = gpu.devices()
        # ncu replays each kernel and serialises the GPU's work: graders timing on this GPU
        # wait meanwhile, and this waits for their timing (gpu_lock.py, the kit's config).
        lock = gpu_lock.for_devices(_grader_settings(root), found)
        with lock.exclusive(on_wait=lambda: print("waiting for a grader's timing on this GPU to end...",
                                                  file=sys.stderr, flush=True)) as hold:
            text, figures = profile_lab(lab, bench, ncu=ncu, size=args.size, seed=args.seed,
                                        say=lambda line: print(line, file=sys.stderr, flush=True),
                                        gpu_label=found[0].label() if found else "")
        if hold.missed:
            print(f"grader profile: note: {gpu_lock.alone_note(hold, timed=False)}", file=sys.stderr)
    except ProfileError as exc:
        print(f"grader profile: error: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE if "ERR_NVGPUCTRPERM" in str(exc) else EXIT_NOTHING
    except proc.LaunchError as exc:
        print(f"grader profile: error: cannot run ncu: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(text)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return EXIT_OK


def _grader_settings(root: Path) -> dict[str, Any]:
    """The [grader] settings of the kit at `root` (its grader.toml), or the defaults where it
    cannot be read (the grader's own run says why)."""
    try:
        return config.load_course(root).grader
    except config.ConfigError:
        return config.DEFAULTS["grader"]


if __name__ == "__main__":
    sys.exit(main())
