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
