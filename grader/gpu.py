"""Is there a GPU to grade on? Asked before anything is built, so that a machine without
one is told so in seconds, not after minutes of compiling (and a class is not graded
into zeros by mistake)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field

PROBE_TIMEOUT_S = 30


@dataclass
class Probe:
    """What the machine has: `ok` when at least one NVIDIA GPU can be used."""

    ok: bool
    why: str = ""  # when not ok: what is missing and what to do
    devices: list[str] = field(default_factory=list)  # nvidia-smi -L lines


def probe() -> Probe:
    """nvidia-smi's list of GPUs, as CUDA_VISIBLE_DEVICES narrows it."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1", "none", "NoDevFiles"):
        return Probe(False, f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU: unset it or name a GPU")
    smi = shutil.which("nvidia-smi")
    if smi is None:
        if os.path.exists("/dev/nvidiactl"):
            return Probe(True, devices=["(nvidia-smi not found; /dev/nvidiactl is there)"])
        return Probe(False, "no NVIDIA driver found (no nvidia-smi, no /dev/nvidiactl): grade on a machine with "
                            "an NVIDIA GPU and its driver")
    try:
        done = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return Probe(False, f"nvidia-smi did not answer within {PROBE_TIMEOUT_S} s: the driver or the GPU is in "
                            "trouble (check `nvidia-smi` by hand)")
    except OSError as exc:
        return Probe(False, f"cannot run nvidia-smi: {exc.strerror or exc}")
    devices = [line.strip() for line in done.stdout.splitlines() if line.strip().startswith("GPU ")]
    if done.returncode != 0 or not devices:
        said = (done.stderr or done.stdout).strip().splitlines()
        return Probe(False, "nvidia-smi finds no usable GPU" + (f" ({said[0]})" if said else "")
                     + ": grade on a machine with an NVIDIA GPU")
    return Probe(True, devices=devices)


def memory_mb() -> int:
    """The first visible GPU's memory in MiB (0 when it cannot be read)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return 0
    try:
        done = subprocess.run([smi, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        return int(done.stdout.split()[0]) if done.returncode == 0 and done.stdout.split() else 0
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return 0


# --- what each GPU is: name, compute capability, memory --------------------------------------

@dataclass(frozen=True)
class Device:
    """One GPU as nvidia-smi lists it (index and UUID as CUDA_VISIBLE_DEVICES may name it)."""

    index: str
    name: str
    compute_cap: str  # "9.0"; "" when the driver cannot say
    memory_mb: int
    uuid: str = ""

    @property
    def arch(self) -> str:
        """The compute capability without its dot ("90"), as CMake and nvcc spell it; "" if unknown."""
        return self.compute_cap.replace(".", "") if re.fullmatch(r"\d+\.\d+", self.compute_cap) else ""

    def label(self) -> str:
        """How a report names it: "NVIDIA H100 80GB HBM3 (sm_90)" (gpu_specs.device_label)."""
        from grader.gpu_specs import device_label  # the one spelling, for reports and answers alike

        return device_label(self.as_dict()) or self.name

    def as_dict(self) -> dict[str, object]:
        return {"index": self.index, "name": self.name, "compute_capability": self.compute_cap,
                "memory_mb": self.memory_mb, "uuid": self.uuid}


DEVICE_FIELDS = ("index", "name", "compute_cap", "memory.total", "uuid")


def devices() -> list[Device]:
    """The GPUs this process may use (nvidia-smi's list, narrowed by CUDA_VISIBLE_DEVICES when
    it names indices or UUIDs), in CUDA_VISIBLE_DEVICES' order; [] when none can be read."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return []
    found: list[Device] = []
    for fields in (DEVICE_FIELDS, tuple(f for f in DEVICE_FIELDS if f != "compute_cap")):  # old drivers lack compute_cap
        try:
            done = subprocess.run([smi, f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return []
        if done.returncode == 0:
            found = parse_devices(done.stdout, fields)
            break
    return narrow_to_visible(found, os.environ.get("CUDA_VISIBLE_DEVICES"))


def parse_devices(text: str, fields: tuple[str, ...] = DEVICE_FIELDS) -> list[Device]:
    """nvidia-smi's `--query-gpu=<fields> --format=csv,noheader,nounits` lines as Devices."""
    out = []
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(fields):
            continue
        row = dict(zip(fields, cells))
        try:
            memory = int(float(row.get("memory.total", "0")))
        except ValueError:
            memory = 0
        cap = row.get("compute_cap", "")
        out.append(Device(row["index"], row["name"], cap if re.fullmatch(r"\d+\.\d+", cap) else "", memory,
                          row.get("uuid", "")))
    return out


def narrow_to_visible(found: list[Device], visible: str | None) -> list[Device]:
    """`found` as CUDA_VISIBLE_DEVICES narrows it: indices or UUIDs (or their prefixes), in its
    order; a list that names none of them (MIG names, say) leaves `found` as it is."""
    if visible is None or not visible.strip():
        return found
    chosen: list[Device] = []
    for item in (part.strip() for part in visible.split(",")):
        match = next((d for d in found if item == d.index or (item.startswith("GPU-") and d.uuid.startswith(item))),
                     None)
        if match is None:
            break  # CUDA stops at the first entry it cannot use
        if match not in chosen:
            chosen.append(match)
    return chosen or found


# --- telemetry: clocks, temperature, power and throttling around each bench ---------------

# nvidia-smi's clock-event ("throttle") reasons, as bits of the active mask. The ones
# marked slow make a GPU run below its normal clocks for heat or a hardware fault: a run
# then is not the student's speed. A power cap at full load is how an H100 normally runs.
CLOCK_REASONS = {
    0x1: ("gpu_idle", False), 0x2: ("applications_clocks_setting", False), 0x4: ("sw_power_cap", False),
    0x8: ("hw_slowdown", True), 0x10: ("sync_boost", False), 0x20: ("sw_thermal_slowdown", True),
    0x40: ("hw_thermal_slowdown", True), 0x80: ("hw_power_brake_slowdown", True),
    0x100: ("display_clock_setting", False),
}
TELEMETRY_FIELDS = ("clocks.sm", "clocks.mem", "temperature.gpu", "power.draw")
# Newer drivers name the mask "clocks_event_reasons", older ones "clocks_throttle_reasons".
REASON_FIELDS = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")


# A lab's "before" telemetry may be the last lab's "after" when it is this recent: between
# two labs' timings only the grader's scoring runs, and the GPU's state does not move.
TELEMETRY_REUSE_S = 1.0
# The last reading of telemetry(): (monotonic time, the GPU it read, the reading).
_last_reading: tuple[float, str, dict[str, object]] | None = None


def telemetry(max_age_s: float = 0.0) -> dict[str, object] | None:
    """The GPU's state now, as nvidia-smi reports it for the first visible GPU: SM and
    memory clocks (MHz), temperature (C), power (W) and the active clock-event reasons
    (`slowdown` lists those that make timings unfair). None when it cannot be read.
    With `max_age_s`, a reading of the same GPU taken at most that long ago serves instead
    (the timing stage's "before" of one lab is the "after" of the lab timed just before it:
    one nvidia-smi call less per lab, on the grade's critical path)."""
    global _last_reading
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "").split(",")[0].strip()
    if (max_age_s > 0 and _last_reading is not None and _last_reading[1] == visible
            and time.monotonic() - _last_reading[0] <= max_age_s):
        return _last_reading[2]
    which = ["-i", visible] if visible else ["-i", "0"]
    for reasons in REASON_FIELDS:
        try:
            done = subprocess.run([smi, *which, f"--query-gpu={','.join((*TELEMETRY_FIELDS, reasons))}",
                                   "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0 and done.stdout.strip():
            reading = parse_telemetry(done.stdout.strip().splitlines()[0])
            if reading is not None:
                _last_reading = (time.monotonic(), visible, reading)
            return reading
    return None


def parse_telemetry(line: str) -> dict[str, object] | None:
    """One line of `nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu,power.draw,<reasons>`."""
    cells = [cell.strip() for cell in line.split(",")]
    if len(cells) != len(TELEMETRY_FIELDS) + 1:
        return None

    def number(text: str) -> float | None:
        try:
            return float(text)
        except ValueError:  # "[N/A]", "[Not Supported]"
            return None

    try:
        mask = int(cells[-1], 16) if cells[-1].lower().startswith("0x") else int(cells[-1])
    except ValueError:
        mask = 0
    names = [name for bit, (name, _) in CLOCK_REASONS.items() if mask & bit]
    return {"sm_clock_mhz": number(cells[0]), "mem_clock_mhz": number(cells[1]),
            "temperature_c": number(cells[2]), "power_w": number(cells[3]),
            "clock_reasons": names,
            "slowdown": [name for bit, (name, slow) in CLOCK_REASONS.items() if slow and mask & bit]}
