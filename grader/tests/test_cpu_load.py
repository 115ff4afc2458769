"""The processor-load sampler of a grading run (grader/cpu_load.py): /proc/stat's first line
read, busy shares over each interval, nothing where the times cannot be read."""

from __future__ import annotations

import time
import unittest
from pathlib import Path

from grader import cpu_load


class ParseTest(unittest.TestCase):
    def test_first_line(self):
        # user nice system idle iowait irq softirq steal guest guest_nice
        text = "cpu  100 5 45 800 50 0 0 0 7 0\ncpu0 50 2 20 400 25 0 0 0 3 0\nintr 12345\n"
        self.assertEqual(cpu_load.parse_stat(text), (150, 1000))  # idle and iowait are not busy

    def test_not_a_stat_line(self):
        for text in ("", "intr 1 2 3", "cpu 1 2", "cpu a b c d e", "cpu0 1 2 3 4 5"):
            with self.subTest(text=text):
                self.assertIsNone(cpu_load.parse_stat(text))

    def test_this_host(self):
        if not Path("/proc/stat").exists():
            self.skipTest("no /proc/stat here")
        busy, total = cpu_load.read_stat()
        self.assertTrue(0 <= busy <= total and total > 0)


class SamplesOfTest(unittest.TestCase):
    # A report's samples as readers take them: malformed ones left out.
    def test_well_formed_only(self):
        load = {"samples": [[0.5, 0.25], [1, 1], [1.5, 1.5], [-1, 0.5], [2.0, True], "x", [2.5], [3.0, 0]]}
        self.assertEqual(cpu_load.samples_of(load), [(0.5, 0.25), (1.0, 1.0), (3.0, 0.0)])
        for load in (None, {}, {"samples": "busy"}, [[0.5, 0.5]]):
            self.assertEqual(cpu_load.samples_of(load), [])


class SamplerTest(unittest.TestCase):
    def test_shares_of_each_interval(self):
        # The counters a fake kernel reports, one reading per call: 30%, then 100%, then 0%.
        readings = iter([(0, 100), (0, 100), (30, 200), (130, 300), (130, 400)] + [(130, 400)] * 1000)
        origin = time.monotonic()
        sampler = cpu_load.Sampler(origin, interval=0.01, read=lambda: next(readings)).start()
        deadline = time.monotonic() + 5
        while len(sampler.samples) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        found = sampler.stop()
        self.assertEqual([busy for _, busy in found["samples"][:3]], [0.3, 1.0, 0.0])
        times = [when for when, _ in found["samples"]]
        self.assertEqual(times, sorted(times))
        self.assertGreater(times[0], 0.0)
        self.assertEqual(found["interval_s"], 0.01)
        self.assertIsInstance(found["cores"], int)
        # Once stopped it samples no more.
        count = len(sampler.samples)
        time.sleep(0.05)
        self.assertEqual(len(sampler.samples), count)

    def test_nothing_to_read(self):
        sampler = cpu_load.Sampler(time.monotonic(), interval=0.01, read=lambda: None).start()
        time.sleep(0.03)
        self.assertIsNone(sampler.stop())

    def test_counters_that_do_not_move_give_no_sample(self):
        sampler = cpu_load.Sampler(time.monotonic(), interval=0.01, read=lambda: (5, 10)).start()
        time.sleep(0.05)
        self.assertEqual(sampler.stop()["samples"], [])


if __name__ == "__main__":
    unittest.main()
