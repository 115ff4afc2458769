"""The peaks of the GPUs a course meets, for figures measured on another GPU than the grader's.

A bench question (answers.py) asks for a figure of the student's own bench: a throughput,
or a share of the GPU's peak. Measured on the grading GPU it is compared with the grading
run's figure directly. Measured on another GPU, a throughput says little until it is taken
as a share of that GPU's peak: this table gives the peaks, computed from each GPU's source
figures exactly as the bench computes the peaks of the GPU it runs on
(common/src/device.cpp):

    DRAM GB/s    = 2 x memory clock x bus width / 8   (two transfers per clock)
    FP32 GFLOP/s = SMs x FP32 lanes per SM x 2 x boost clock   (64 lanes on sm_70, sm_75
                   and sm_80, 128 on sm_86, sm_89 and sm_90; an FMA counts as two)
    rsqrt Gops/s = SMs x 16 x boost clock   (the special-function units)

The clocks are the ones CUDA reports (cudaDevAttrClockRate, cudaDevAttrMemoryClockRate:
deviceQuery's "GPU Max Clock rate" and "Memory Clock rate"), taken from NVIDIA's
specifications of the reference board. Boards of other makers may clock a little higher;
laptop parts clock by their power limit, so only their DRAM peak is known. Where two
boards share a name (the RTX 3060 with 12 or 8 GB), a peak is known only when they agree.

The names are those the driver reports (nvidia-smi, cudaGetDeviceProperties), matched
case-insensitively, with spaces, punctuation and a leading "NVIDIA" ignored.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Any

PEAKS = ("dram", "fp32", "rsqrt")  # what a workload's "peak_of" may name
AGREE = 0.01  # boards sharing a name: a peak is known when they agree this closely


@dataclass(frozen=True)
class GpuSpec:
    """One GPU model's source figures. `boost_mhz` is None where boards differ too much
    (laptops): its FP32 and rsqrt peaks are then unknown."""

    names: tuple[str, ...]  # as drivers report it
    compute_cap: str  # "8.6"
    sms: int
    boost_mhz: float | None
    mem_clock_mhz: float
    bus_width_bits: int
    source: str = ""  # where the figures come from, when it is not the reference board's specification

    @property
    def fp32_lanes_per_sm(self) -> int:
        major, minor = (int(part) for part in self.compute_cap.split("."))
        return 64 if major < 8 or (major, minor) == (8, 0) else 128

    @property
    def peak_dram_gbps(self) -> float:
        return 2.0 * self.mem_clock_mhz * 1e6 * (self.bus_width_bits / 8.0) / 1e9

    @property
    def peak_fp32_gflops(self) -> float | None:
        return None if self.boost_mhz is None else 2.0 * self.sms * self.fp32_lanes_per_sm * self.boost_mhz / 1e3

    @property
    def peak_rsqrt_gops(self) -> float | None:
        return None if self.boost_mhz is None else 16.0 * self.sms * self.boost_mhz / 1e3

    def peak(self, kind: str) -> float | None:
        """The peak a workload's `peak_of` names ("dram", "fp32", "rsqrt"), None if unknown."""
        return {"dram": self.peak_dram_gbps, "fp32": self.peak_fp32_gflops,
                "rsqrt": self.peak_rsqrt_gops}.get(kind)


def _gpu(names: str | tuple[str, ...], cap: str, sms: int, boost: float | None, mem: float, bus: int,
         source: str = "") -> GpuSpec:
    return GpuSpec(names if isinstance(names, tuple) else (names,), cap, sms, boost, mem, bus, source)


# name(s), compute capability, SMs, boost clock MHz, memory clock MHz, bus width bits.
TABLE: tuple[GpuSpec, ...] = (
    # Volta and Turing: 64 FP32 lanes per SM.
    _gpu(("Tesla V100-SXM2-16GB", "Tesla V100-SXM2-32GB", "NVIDIA V100-SXM2-16GB", "NVIDIA V100-SXM2-32GB"),
         "7.0", 80, 1530, 877, 4096),
    _gpu(("Tesla V100-PCIE-16GB", "Tesla V100-PCIE-32GB", "NVIDIA V100-PCIE-16GB", "NVIDIA V100-PCIE-32GB"),
         "7.0", 80, 1380, 877, 4096),
    _gpu(("Tesla V100S-PCIE-32GB", "NVIDIA V100S-PCIE-32GB"), "7.0", 80, 1597, 1107, 4096),
    _gpu(("Tesla T4", "NVIDIA T4"), "7.5", 40, 1590, 5001, 256),
    _gpu("NVIDIA GeForce RTX 2080 Ti", "7.5", 68, 1545, 7000, 352),
    # Ampere data centre (sm_80: 64 FP32 lanes per SM).
    _gpu(("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"), "8.0", 108, 1410, 1215, 5120),
    _gpu(("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"), "8.0", 108, 1410, 1593, 5120),
    _gpu(("NVIDIA A100-PCIE-40GB", "A100-PCIE-40GB"), "8.0", 108, 1410, 1215, 5120),
    _gpu("NVIDIA A100 80GB PCIe", "8.0", 108, 1410, 1512, 5120),
    _gpu("NVIDIA A30", "8.0", 56, 1440, 1215, 3072),
    # Ampere sm_86: 128 FP32 lanes per SM.
    _gpu("NVIDIA A10", "8.6", 72, 1695, 6251, 384),
    _gpu("NVIDIA RTX A4000", "8.6", 48, 1560, 7001, 256),
    _gpu("NVIDIA RTX A4500", "8.6", 56, 1650, 8001, 320),
    _gpu("NVIDIA RTX A5000", "8.6", 64, 1695, 8001, 384),
    _gpu("NVIDIA RTX A6000", "8.6", 84, 1800, 8001, 384),
    _gpu("NVIDIA GeForce RTX 3060", "8.6", 28, 1777, 7501, 192, "the 12 GB board"),
    _gpu("NVIDIA GeForce RTX 3060", "8.6", 28, 1777, 7501, 128, "the 8 GB board"),
    _gpu("NVIDIA GeForce RTX 3060 Ti", "8.6", 38, 1665, 7001, 256, "GDDR6"),
    _gpu("NVIDIA GeForce RTX 3060 Ti", "8.6", 38, 1665, 9501, 256, "the GDDR6X board"),
    _gpu("NVIDIA GeForce RTX 3070", "8.6", 46, 1725, 7001, 256),
    _gpu("NVIDIA GeForce RTX 3070 Ti", "8.6", 48, 1770, 9501, 256),
    _gpu("NVIDIA GeForce RTX 3080", "8.6", 68, 1710, 9501, 320, "the 10 GB board"),
    _gpu("NVIDIA GeForce RTX 3080", "8.6", 70, 1710, 9501, 384, "the 12 GB board"),
    _gpu("NVIDIA GeForce RTX 3080 Ti", "8.6", 80, 1665, 9501, 384),
    _gpu("NVIDIA GeForce RTX 3090", "8.6", 82, 1695, 9751, 384),
    _gpu("NVIDIA GeForce RTX 3090 Ti", "8.6", 84, 1860, 10501, 384),
    _gpu("NVIDIA GeForce RTX 3060 Laptop GPU", "8.6", 30, None, 7001, 192),
    _gpu("NVIDIA GeForce RTX 3070 Laptop GPU", "8.6", 40, None, 7001, 256),
    # Ada (sm_89): 128 FP32 lanes per SM.
    _gpu("NVIDIA L4", "8.9", 58, 2040, 6251, 192),
    _gpu("NVIDIA L40", "8.9", 142, 2490, 9001, 384),
    _gpu("NVIDIA L40S", "8.9", 142, 2520, 9001, 384),
    _gpu("NVIDIA RTX 6000 Ada Generation", "8.9", 142, 2505, 10001, 384),
    _gpu("NVIDIA GeForce RTX 4060", "8.9", 24, 2460, 8501, 128),
    _gpu("NVIDIA GeForce RTX 4060 Ti", "8.9", 34, 2535, 9001, 128),
    _gpu("NVIDIA GeForce RTX 4070", "8.9", 46, 2475, 10501, 192, "GDDR6X"),
    _gpu("NVIDIA GeForce RTX 4070", "8.9", 46, 2475, 10001, 192, "the GDDR6 board"),
    _gpu("NVIDIA GeForce RTX 4070 SUPER", "8.9", 56, 2475, 10501, 192),
    _gpu("NVIDIA GeForce RTX 4070 Ti", "8.9", 60, 2610, 10501, 192),
    _gpu("NVIDIA GeForce RTX 4070 Ti SUPER", "8.9", 66, 2610, 10501, 256),
    _gpu("NVIDIA GeForce RTX 4080", "8.9", 76, 2505, 11201, 256),
    _gpu("NVIDIA GeForce RTX 4080 SUPER", "8.9", 80, 2550, 11501, 256),
    _gpu("NVIDIA GeForce RTX 4090", "8.9", 128, 2520, 10501, 384),
    _gpu("NVIDIA GeForce RTX 4050 Laptop GPU", "8.9", 20, None, 8001, 96),
    _gpu("NVIDIA GeForce RTX 4060 Laptop GPU", "8.9", 24, None, 8001, 128),
    _gpu("NVIDIA GeForce RTX 4070 Laptop GPU", "8.9", 36, None, 8001, 128),
    _gpu("NVIDIA GeForce RTX 4080 Laptop GPU", "8.9", 58, None, 9001, 192),
    _gpu("NVIDIA GeForce RTX 4090 Laptop GPU", "8.9", 76, None, 9001, 256),
    # Hopper (sm_90): 128 FP32 lanes per SM.
    _gpu("NVIDIA H100 80GB HBM3", "9.0", 132, 1980, 2619, 5120,
         "as the kit's bench reports it on the H100 SXM: 3352 GB/s, 66908 GFLOP/s"),
    _gpu("NVIDIA H100 PCIe", "9.0", 114, 1755, 1593, 5120),
    _gpu("NVIDIA H100 NVL", "9.0", 132, 1785, 2619, 6016,
         "94 GB of HBM3; NVIDIA gives 3.9 TB/s: confirm with the bench's device figures on one"),
    _gpu("NVIDIA H200", "9.0", 132, 1980, 3201, 6016,
         "as the kit's bench reports it on the H200 (141 GB of HBM3e): 4814 GB/s, 66908 GFLOP/s"),
    _gpu("NVIDIA GH200 480GB", "9.0", 132, 1980, 2619, 6016,
         "96 GB of HBM3; NVIDIA gives 4.0 TB/s: confirm with the bench's device figures on one"),
)

# Letters that look alike, folded before names are compared: a name written with a
# Cyrillic "Н" or a zero typed as "O" is the same name to a reader, so it is to the grader.
_LOOKALIKES = str.maketrans({"о": "o", "О": "o", "Н": "h", "н": "h", "А": "a", "а": "a", "Е": "e", "е": "e",
                             "Т": "t", "т": "t", "Р": "p", "р": "p", "С": "c", "с": "c", "Х": "x", "х": "x",
                             "В": "b", "в": "b", "М": "m", "м": "m", "К": "k", "к": "k", "І": "i", "і": "i",
                             "Ѕ": "s", "ѕ": "s", "Ԍ": "g", "ԍ": "g", "Ї": "i", "ї": "i"})
_DIGIT_LOOKALIKES = str.maketrans({"o": "0", "i": "1", "l": "1"})


def key(name: str) -> str:
    """`name` as names are compared: letters and digits only, lower case, without a leading
    "nvidia" ("NVIDIA GeForce RTX 2080 Ti" and "GeForce RTX 2080 Ti" are one key)."""
    text = unicodedata.normalize("NFKC", name).translate(_LOOKALIKES).casefold()
    text = re.sub(r"[^a-z0-9]", "", text)
    return text.removeprefix("nvidia")


def skeleton(name: str) -> str:
    """`key(name)` with the letters that pass for digits made digits ("H1OO" -> "h100"; a
    garbled "NVlDIA" is dropped like "NVIDIA")."""
    return key(name).translate(_DIGIT_LOOKALIKES).removeprefix("nv1d1a")


_BY_KEY: dict[str, list[GpuSpec]] = {}
for _spec in TABLE:
    for _name in _spec.names:
        _BY_KEY.setdefault(key(_name), []).append(_spec)


def lookup(name: str) -> list[GpuSpec]:
    """The table's entries for a GPU name ([] when it is not in the table; several when boards share it)."""
    return list(_BY_KEY.get(key(name), []))


def known(name: str) -> bool:
    return key(name) in _BY_KEY


def peak(name: str, kind: str) -> float | None:
    """The peak `kind` ("dram", "fp32", "rsqrt") of the GPU `name`, or None when it is not in the
    table, the table does not know that peak, or boards of that name disagree on it."""
    values = [spec.peak(kind) for spec in lookup(name)]
    if not values or any(value is None for value in values):
        return None
    low, high = min(values), max(values)  # type: ignore[type-var]
    return high if high <= low * (1 + AGREE) else None


def device_label(device: Any) -> str:
    """How reports name a GPU, "NVIDIA H100 80GB HBM3 (sm_90)", from a bench JSON's or a
    report's device object (name, compute_capability); '' when it names none."""
    if not isinstance(device, dict) or not isinstance(device.get("name"), str) or not device["name"].strip():
        return ""
    cap = device.get("compute_capability")
    arch = cap.replace(".", "") if isinstance(cap, str) and re.fullmatch(r"\d+\.\d+", cap) else ""
    return device["name"].strip() + (f" (sm_{arch})" if arch else "")


def same_model(a: str, b: str) -> bool:
    """Whether two names name one GPU model (the same key, or the same table entry)."""
    if key(a) == key(b):
        return True
    found_a, found_b = lookup(a), lookup(b)
    return bool(found_a) and found_a == found_b
