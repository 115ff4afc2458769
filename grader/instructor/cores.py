"""Which CPU cores a batch gives its graders and its compiles.

Each grading job (one per GPU, by default) runs on cores of its own: its host threads time
the GPU's clock stamps and fences, so neither a compile nor the other GPU's grader may
share them. Where the machine says which cores sit beside a GPU (the NUMA node of its PCI
slot, /sys/bus/pci/devices/<bus id>/local_cpulist), that GPU's grader gets cores from
there: on a host of two sockets, a grader on the far socket reaches its GPU across the
sockets' link. A grader gets whole physical cores: where a core runs two hardware threads
(/sys/devices/system/cpu/cpu<N>/topology/thread_siblings_list), both go to the grader, so
that no compile runs on the other half of a core the grader's threads spin on. The compiles
ahead of the graders get the rest.
"""

from __future__ import annotations

import os
from pathlib import Path

from grader import proc

SYSFS_PCI = Path("/sys/bus/pci/devices")
SYSFS_CPU = Path("/sys/devices/system/cpu")


def grader_cores(labs: int) -> int:
    """Cores one grading job keeps busy: a judge and its worker per lab tested at once (the
    grader tests several labs side by side), and one for the grader and the bench."""
    return 1 + 2 * max(1, min(labs, 4))


def parse_cpulist(text: str) -> set[int]:
    """The cores of a kernel CPU list ("0-15,32-47"); an empty set for anything else."""
    cores: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            return set()
        cores.update(range(int(low), int(high or low) + 1))
    return cores


def sysfs_bus_id(bus_id: str) -> str | None:
    """nvidia-smi's PCI bus id ("00000000:19:00.0") as sysfs names the device ("0000:19:00.0")."""
    domain, _, rest = bus_id.strip().partition(":")
    try:
        return f"{int(domain, 16):04x}:{rest.lower()}" if rest else None
    except ValueError:
        return None


def local_cpus(gpu: str | None) -> set[int]:
    """The cores beside GPU `gpu` (an index or UUID, as CUDA_VISIBLE_DEVICES and nvidia-smi
    name it), or an empty set where that is not known: no nvidia-smi, no sysfs entry."""
    if gpu is None or not (gpu.isdigit() or gpu.startswith(("GPU-", "MIG-"))):
        return set()
    try:
        result = proc.run(["nvidia-smi", "-i", gpu, "--query-gpu=pci.bus_id", "--format=csv,noheader"], timeout=10)
    except proc.LaunchError:
        return set()
    lines = result.stdout.strip().splitlines() if result.returncode == 0 else []
    name = sysfs_bus_id(lines[0]) if lines else None
    if name is None:
        return set()
    try:
        return parse_cpulist((SYSFS_PCI / name / "local_cpulist").read_text())
    except OSError:
        return set()


def thread_siblings(core: int) -> set[int]:
    """The hardware threads that share `core`'s physical core (itself included), as the
    kernel lists them; {core} where that is not known."""
    try:
        found = parse_cpulist((SYSFS_CPU / f"cpu{core}" / "topology" / "thread_siblings_list").read_text())
    except OSError:
        found = set()
    return found if core in found else {core}


def physical_cores(available: list[int], siblings=thread_siblings) -> list[list[int]]:
    """`available` grouped by physical core (each group's hardware threads that are
    available, lowest first), the groups in the order of their lowest thread."""
    groups: dict[int, list[int]] = {}
    for core in available:
        group = sorted(set(siblings(core)) & set(available)) or [core]
        groups.setdefault(group[0], group)
    return [groups[first] for first in sorted(groups)]


def split_cores(jobs: int, labs: int = 1, gpus: list[str] | None = None,
                local=local_cpus, siblings=thread_siblings) -> tuple[list[set[int]] | None, set[int] | None]:
    """(the cores of each grading job, in the order of the jobs; the cores of the compiles
    ahead of them), or (None, None) on a machine too small to split. Job k grades on GPU
    gpus[k % len(gpus)] and takes its cores from those beside that GPU first, in whole
    physical cores (both hardware threads of a core, where it has two)."""
    try:
        available = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None, None
    each = grader_cores(labs)
    free = physical_cores(available, siblings)
    beside: dict[str | None, set[int]] = {}  # per GPU; every core of the machine says nothing
    per_job: list[set[int]] = []
    for k in range(jobs):
        gpu = gpus[k % len(gpus)] if gpus else None
        if gpu not in beside:
            near = (local(gpu) or set()) if gpu is not None else set()
            beside[gpu] = near if near != set(available) else set()
        # The GPU's own cores first (from the highest: the lowest ones are where the system
        # and interrupts mostly run), then any free core, from the lowest; whole physical
        # cores until the job has `each` hardware threads.
        order = [unit for unit in reversed(free) if set(unit) <= beside[gpu]]
        order += [unit for unit in free if unit not in order]
        mine: list[list[int]] = []
        for unit in order:
            if sum(len(taken) for taken in mine) >= each:
                break
            mine.append(unit)
        per_job.append({core for unit in mine for core in unit})
        free = [unit for unit in free if unit not in mine]
    if any(len(cores) < each for cores in per_job) or sum(len(unit) for unit in free) < 4:
        return None, None  # too small to split: the graders and the compiles share every core
    return per_job, {core for unit in free for core in unit}


def build_slots(jobs: int, labs: int, build_cores: set[int] | None) -> int:
    """How many students' files compile at once, ahead of the graders: two per grading job
    and one more, so that the GPUs stay fed even where a student's compile takes twice as
    long as their grading, each with a core per lab (its labs compile side by side), never
    more than the compiles' cores hold (at least one)."""
    cores = len(build_cores) if build_cores else max(1, (os.cpu_count() or 2) - grader_cores(labs) * jobs)
    return max(1, min(2 * jobs + 1, cores // max(1, labs)))


def ahead_limit(jobs: int, builders: int) -> int:
    """How many students may be compiling or compiled and not yet taken by a grader: every
    compile slot busy and two students ready for each grading job, so that a compile that
    takes long, or a few students that grade fast, do not leave a GPU waiting."""
    return builders + 2 * jobs
