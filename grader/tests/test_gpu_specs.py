"""The grader's table of GPU peaks (grader/gpu_specs.py): computed as the bench computes the
peaks of its own GPU, names matched as drivers spell them, and a peak known only where
every board of a name agrees."""

from __future__ import annotations

import re
import unittest

from grader import gpu_specs

# The H100 SXM's peaks as the kit's bench reports them (grader/CONTRACT.md, "Bench binaries").
H100_BENCH = {"dram": 3352.3, "fp32": 66908.2, "rsqrt": 4181.8}


class Peaks(unittest.TestCase):
    def test_computed_as_the_bench_computes_them(self):
        for kind, value in H100_BENCH.items():
            self.assertAlmostEqual(gpu_specs.peak("NVIDIA H100 80GB HBM3", kind), value, delta=0.05)
        # 64 FP32 lanes per SM on sm_70, sm_75 and sm_80; 128 from sm_86 (common/src/device.cpp).
        self.assertAlmostEqual(gpu_specs.peak("Tesla V100-SXM2-16GB", "fp32"), 2 * 80 * 64 * 1.530, delta=0.01)
        self.assertAlmostEqual(gpu_specs.peak("NVIDIA A100-SXM4-40GB", "fp32"), 2 * 108 * 64 * 1.410, delta=0.01)
        self.assertAlmostEqual(gpu_specs.peak("NVIDIA A10", "fp32"), 2 * 72 * 128 * 1.695, delta=0.01)
        self.assertAlmostEqual(gpu_specs.peak("NVIDIA L4", "rsqrt"), 16 * 58 * 2.040, delta=0.01)
        self.assertAlmostEqual(gpu_specs.peak("NVIDIA A100 80GB PCIe", "dram"), 2 * 1512 * 640 / 1000, delta=0.01)

    # The published figures the table must reproduce (NVIDIA's data sheets), within 2%.
    def test_published_figures(self):
        published = {("Tesla T4", "dram"): 320, ("Tesla T4", "fp32"): 8100, ("NVIDIA A100-SXM4-80GB", "dram"): 2039,
                     ("NVIDIA A100-SXM4-40GB", "fp32"): 19500, ("NVIDIA L40S", "fp32"): 91600,
                     ("NVIDIA GeForce RTX 4090", "dram"): 1008, ("NVIDIA GeForce RTX 4090", "fp32"): 82600,
                     ("NVIDIA GeForce RTX 3090", "dram"): 936, ("NVIDIA RTX A6000", "fp32"): 38700,
                     ("NVIDIA H100 PCIe", "dram"): 2039, ("NVIDIA H200", "dram"): 4800, ("NVIDIA L4", "dram"): 300}
        for (name, kind), value in published.items():
            with self.subTest(name=name, kind=kind):
                self.assertAlmostEqual(gpu_specs.peak(name, kind) / value, 1.0, delta=0.02)

    def test_laptops_and_shared_names(self):
        # A laptop part's clock is its maker's: only its DRAM peak is known.
        self.assertIsNotNone(gpu_specs.peak("NVIDIA GeForce RTX 4060 Laptop GPU", "dram"))
        self.assertIsNone(gpu_specs.peak("NVIDIA GeForce RTX 4060 Laptop GPU", "fp32"))
        # The RTX 3060 comes with 12 GB on 192 bits or 8 GB on 128: the same FP32 peak, two DRAM peaks.
        self.assertIsNone(gpu_specs.peak("NVIDIA GeForce RTX 3060", "dram"))
        self.assertAlmostEqual(gpu_specs.peak("NVIDIA GeForce RTX 3060", "fp32"), 2 * 28 * 128 * 1.777, delta=0.01)
        self.assertIsNone(gpu_specs.peak("NVIDIA GeForce GTX 1080", "dram"))  # not in the table
        self.assertIsNone(gpu_specs.peak("NVIDIA H100 80GB HBM3", "tensor"))

    def test_every_entry_is_sane(self):
        for spec in gpu_specs.TABLE:
            with self.subTest(spec.names[0]):
                self.assertRegex(spec.compute_cap, r"^(7\.0|7\.5|8\.0|8\.6|8\.9|9\.0)$")
                self.assertTrue(100 <= spec.peak_dram_gbps <= 6000, spec.peak_dram_gbps)
                if spec.peak_fp32_gflops is not None:
                    self.assertTrue(5000 <= spec.peak_fp32_gflops <= 100000, spec.peak_fp32_gflops)
                for name in spec.names:
                    self.assertTrue(re.fullmatch(r"[A-Za-z0-9 .-]+", name), name)


class Names(unittest.TestCase):
    def test_as_drivers_spell_them(self):
        for name in ("NVIDIA GeForce RTX 2080 Ti", "GeForce RTX 2080 Ti", "nvidia  geforce rtx 2080ti"):
            self.assertTrue(gpu_specs.known(name), name)
        self.assertTrue(gpu_specs.same_model("Tesla T4", "NVIDIA T4"))  # aliases of one entry
        self.assertFalse(gpu_specs.same_model("NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe"))
        self.assertFalse(gpu_specs.same_model("NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090 Laptop GPU"))
        self.assertTrue(gpu_specs.same_model("NVIDIA B200", "nvidia b200"))  # not in the table: by name

    def test_device_label(self):
        self.assertEqual(gpu_specs.device_label({"name": "NVIDIA H200", "compute_capability": "9.0"}),
                         "NVIDIA H200 (sm_90)")
        self.assertEqual(gpu_specs.device_label({"name": "NVIDIA H200"}), "NVIDIA H200")  # an older bench
        for odd in (None, "NVIDIA H200", {"name": " "}, {"name": 7}, {"name": "X", "compute_capability": "nine"}):
            self.assertIn(gpu_specs.device_label(odd), ("", "X"), odd)

    def test_lookalikes_fold(self):
        self.assertEqual(gpu_specs.skeleton("NVIDIA H1OO 80GB HBM3"), gpu_specs.skeleton("NVIDIA H100 80GB HBM3"))
        self.assertEqual(gpu_specs.skeleton("NVIDIA \u041d100 80GB HBM3"), gpu_specs.skeleton("H100 80GB HBM3"))
        self.assertEqual(gpu_specs.skeleton("NVlDIA H100 80GB HBM3"), gpu_specs.skeleton("NVIDIA H100 80GB HBM3"))
        self.assertNotEqual(gpu_specs.key("NVIDIA H1OO 80GB HBM3"), gpu_specs.key("NVIDIA H100 80GB HBM3"))


if __name__ == "__main__":
    unittest.main()
