"""How busy the GPU was while a grading run went on: a thread asks the driver's management
library (NVML, libnvidia-ml) twice a second for the grading GPU's utilization rates, the
share of the last sample period during which a kernel ran and the share during which its
memory was read or written. A diagnostic, in no score, beside cpu_load.py: the report keeps
the samples ("gpu_busy") and `python3 -m grader.tests.gpu_check timeline` draws them under
the labs' stages. With the processors' row, it says what a phase waits for: a tests phase
whose processors and GPU are both far from full waits on latency (processes taking turns
on the GPU, round trips), not on work. The rates are the GPU's, whoever ran on it: other
graders on the same GPU count too. Where NVML cannot be loaded or does not know the GPU
(no driver, a container without the library), there are no samples.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Callable
from typing import Any

from grader import cpu_load

INTERVAL_S = 0.5
LIBRARY = "libnvidia-ml.so.1"
NVML_SUCCESS = 0


class _Utilization(ctypes.Structure):
    # nvmlUtilization_t: percent of the last sample period with a kernel running, with memory in use.
    _fields_ = [("gpu", ctypes.c_uint), ("memory", ctypes.c_uint)]


class Nvml:
    """One GPU's utilization rates through NVML; open() gives None where that cannot be had."""

    def __init__(self, lib: Any, handle: ctypes.c_void_p) -> None:
        self._lib, self._handle = lib, handle

    @classmethod
    def open(cls, uuid: str, load: Callable[[str], Any] = ctypes.CDLL) -> Nvml | None:
        """NVML for the GPU of `uuid` (nvidia-smi's "GPU-..."), or None: no library, no
        driver, no such GPU."""
        if not uuid:
            return None
        try:
            lib = load(LIBRARY)
            lib.nvmlInit_v2.restype = ctypes.c_int
            lib.nvmlDeviceGetHandleByUUID.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]
            lib.nvmlDeviceGetHandleByUUID.restype = ctypes.c_int
            lib.nvmlDeviceGetUtilizationRates.argtypes = [ctypes.c_void_p, ctypes.POINTER(_Utilization)]
            lib.nvmlDeviceGetUtilizationRates.restype = ctypes.c_int
        except (OSError, AttributeError):
            return None
        if lib.nvmlInit_v2() != NVML_SUCCESS:
            return None
        handle = ctypes.c_void_p()
        if lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.pointer(handle)) != NVML_SUCCESS:
            lib.nvmlShutdown()
            return None
        return cls(lib, handle)

    def read(self) -> tuple[float, float] | None:
        """(share of time a kernel ran, share of time memory was read or written), each from
        0 to 1, over NVML's last sample period; None when NVML does not answer."""
        rates = _Utilization()
        if self._lib.nvmlDeviceGetUtilizationRates(self._handle, ctypes.pointer(rates)) != NVML_SUCCESS:
            return None
        return min(1.0, rates.gpu / 100), min(1.0, rates.memory / 100)

    def close(self) -> None:
        self._lib.nvmlShutdown()


class Sampler:
    """Samples the GPU of `uuid` from start() to stop(): [seconds since `origin`, share of
    time a kernel ran, share of time its memory was in use] every `interval` s. NVML is
    opened by the sampling thread, so that the grading run does not wait for it."""

    def __init__(self, origin: float, uuid: str, interval: float = INTERVAL_S,
                 open_gpu: Callable[[str], Nvml | None] | None = None) -> None:
        self.origin, self.uuid, self.interval = origin, uuid, interval
        self.open_gpu = open_gpu or Nvml.open
        self.samples: list[list[float]] = []
        self.opened = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Sampler:
        if self.uuid:
            self._thread = threading.Thread(target=self._run, name="grader-gpu-load", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        gpu = self.open_gpu(self.uuid)
        if gpu is None:
            return
        self.opened = True
        try:
            while not self._stop.wait(self.interval):
                rates = gpu.read()
                if rates is not None:
                    kernels, memory = rates
                    self.samples.append([round(time.monotonic() - self.origin, 2), round(kernels, 3),
                                         round(memory, 3)])
        finally:
            gpu.close()

    def stop(self) -> dict[str, Any] | None:
        """Ends the sampling; the report's "gpu_busy" (None where NVML could not be had)."""
        self._stop.set()
        if self._thread is None:
            return None
        # NVML's first call can take a while (the driver's start): waited for, within bounds.
        self._thread.join(timeout=2 * self.interval + 5)
        if not self.opened:
            return None
        return {"gpu": self.uuid, "interval_s": self.interval, "samples": list(self.samples)}


def samples_of(load: Any) -> list[tuple[float, float, float]]:
    """The well-formed samples of a report's "gpu_busy" ([seconds, kernels, memory], the
    shares between 0 and 1); none for anything else."""
    return cpu_load.well_formed_samples(load, shares=2)
