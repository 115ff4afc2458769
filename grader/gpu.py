"""Is there a GPU to grade on? Asked before anything is built, so that a machine without
one is told so in seconds, not after minutes of compiling (and a class is not graded
into zeros by mistake)."""

from __future__ import annotations

import os
import shutil
import subprocess
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


def telemetry() -> dict[str, object] | None:
    """The GPU's state now, as nvidia-smi reports it for the first visible GPU: SM and
    memory clocks (MHz), temperature (C), power (W) and the active clock-event reasons
    (`slowdown` lists those that make timings unfair). None when it cannot be read."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    visible = (os.environ.get("CUDA_VISIBLE_DEVICES") or "").split(",")[0].strip()
    which = ["-i", visible] if visible else ["-i", "0"]
    for reasons in REASON_FIELDS:
        try:
            done = subprocess.run([smi, *which, f"--query-gpu={','.join((*TELEMETRY_FIELDS, reasons))}",
                                   "--format=csv,noheader,nounits"], capture_output=True, text=True,
                                  timeout=PROBE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if done.returncode == 0 and done.stdout.strip():
            return parse_telemetry(done.stdout.strip().splitlines()[0])
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
