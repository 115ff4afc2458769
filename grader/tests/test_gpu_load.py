"""The GPU-load sampler of a grading run (grader/gpu_load.py): NVML through a fake library
(its calls, its failures), the samples taken twice a second, nothing where NVML cannot be had."""

from __future__ import annotations

import ctypes
import time
import unittest

from grader import gpu_load


class FakeNvml:
    """A stand-in for libnvidia-ml: each function keeps its calls and answers as told."""

    def __init__(self, init: int = 0, handle: int = 0, rates: list[tuple[int, int, int]] | None = None) -> None:
        self.calls: list[str] = []
        self.init_code, self.handle_code = init, handle
        self.rates = list(rates or [])

        def init_v2() -> int:
            self.calls.append("init")
            return self.init_code

        def by_uuid(uuid: bytes, out) -> int:
            self.calls.append(f"handle {uuid.decode()}")
            out.contents.value = 0x1234
            return self.handle_code

        def utilization(handle, out) -> int:
            self.calls.append(f"rates {handle.value if hasattr(handle, 'value') else handle:#x}")
            code, gpu, memory = self.rates.pop(0) if self.rates else (0, 0, 0)
            out.contents.gpu, out.contents.memory = gpu, memory
            return code

        def shutdown() -> int:
            self.calls.append("shutdown")
            return 0

        self.nvmlInit_v2, self.nvmlDeviceGetHandleByUUID = init_v2, by_uuid
        self.nvmlDeviceGetUtilizationRates, self.nvmlShutdown = utilization, shutdown


def loader(lib: object):
    def load(name: str) -> object:
        assert name == gpu_load.LIBRARY
        return lib
    return load


class NvmlTest(unittest.TestCase):
    def test_reads_the_rates_of_the_gpu_named(self):
        lib = FakeNvml(rates=[(0, 45, 3), (0, 100, 100), (999, 50, 50), (0, 150, 0)])
        gpu = gpu_load.Nvml.open("GPU-abc", load=loader(lib))
        self.assertIsNotNone(gpu)
        self.assertEqual(gpu.read(), (0.45, 0.03))
        self.assertEqual(gpu.read(), (1.0, 1.0))
        self.assertIsNone(gpu.read())  # NVML answered with an error code
        self.assertEqual(gpu.read(), (1.0, 0.0))  # never above the whole
        gpu.close()
        self.assertEqual(lib.calls, ["init", "handle GPU-abc", "rates 0x1234", "rates 0x1234", "rates 0x1234",
                                     "rates 0x1234", "shutdown"])

    def test_none_without_library_driver_or_gpu(self):
        def missing(name: str) -> object:
            raise OSError(f"{name}: cannot open shared object file")
        self.assertIsNone(gpu_load.Nvml.open("GPU-abc", load=missing))
        self.assertIsNone(gpu_load.Nvml.open("GPU-abc", load=loader(object())))  # a library without NVML's names
        no_driver = FakeNvml(init=9)
        self.assertIsNone(gpu_load.Nvml.open("GPU-abc", load=loader(no_driver)))
        self.assertEqual(no_driver.calls, ["init"])
        unknown = FakeNvml(handle=13)
        self.assertIsNone(gpu_load.Nvml.open("GPU-zzz", load=loader(unknown)))
        self.assertEqual(unknown.calls, ["init", "handle GPU-zzz", "shutdown"])
        self.assertIsNone(gpu_load.Nvml.open("", load=loader(FakeNvml())))

    def test_this_host(self):
        # Here, without a GPU, NVML is missing or knows no such GPU; on a GPU host it opens
        # only for a real UUID. Either way no exception.
        gpu = gpu_load.Nvml.open("GPU-00000000-0000-0000-0000-000000000000")
        self.assertIsNone(gpu)


class FakeGpu:
    def __init__(self, readings: list[tuple[float, float] | None]) -> None:
        self.readings, self.closed = list(readings), False

    def read(self) -> tuple[float, float] | None:
        return self.readings.pop(0) if self.readings else (0.0, 0.0)

    def close(self) -> None:
        self.closed = True


class SamplerTest(unittest.TestCase):
    def wait_for(self, sampler: gpu_load.Sampler, count: int) -> None:
        deadline = time.monotonic() + 5
        while len(sampler.samples) < count and time.monotonic() < deadline:
            time.sleep(0.01)

    def test_samples_until_stopped(self):
        gpu = FakeGpu([(0.45, 0.03), None, (1.0, 0.5)])
        opened: list[str] = []
        origin = time.monotonic()
        sampler = gpu_load.Sampler(origin, "GPU-abc", interval=0.01,
                                   open_gpu=lambda uuid: opened.append(uuid) or gpu).start()
        self.wait_for(sampler, 3)
        found = sampler.stop()
        self.assertEqual(opened, ["GPU-abc"])
        self.assertEqual([sample[1:] for sample in found["samples"][:2]], [[0.45, 0.03], [1.0, 0.5]])  # None: skipped
        times = [sample[0] for sample in found["samples"]]
        self.assertEqual(times, sorted(times))
        self.assertGreater(times[0], 0.0)
        self.assertEqual((found["gpu"], found["interval_s"]), ("GPU-abc", 0.01))
        self.assertTrue(gpu.closed)
        count = len(sampler.samples)
        time.sleep(0.05)
        self.assertEqual(len(sampler.samples), count)  # stopped: no more

    def test_nothing_where_nvml_cannot_be_had(self):
        sampler = gpu_load.Sampler(time.monotonic(), "GPU-abc", interval=0.01, open_gpu=lambda uuid: None).start()
        time.sleep(0.03)
        self.assertIsNone(sampler.stop())
        self.assertIsNone(gpu_load.Sampler(time.monotonic(), "", open_gpu=lambda uuid: FakeGpu([])).start().stop())

    def test_samples_of(self):
        load = {"samples": [[0.5, 0.25, 0.0], [1, 1, 1], [1.5, 1.5, 0], [-1, 0.5, 0.5], [2.0, True, 0], "x",
                            [2.5, 0.5], [3.0, 0, 0.75]]}
        self.assertEqual(gpu_load.samples_of(load), [(0.5, 0.25, 0.0), (1.0, 1.0, 1.0), (3.0, 0.0, 0.75)])
        for load in (None, {}, {"samples": "busy"}, [[0.5, 0.5, 0.5]]):
            self.assertEqual(gpu_load.samples_of(load), [])


if __name__ == "__main__":
    unittest.main()
