"""Timing integrity in the grader: a noisy bench runs again and the quieter run is
scored; results faster than the roofline, wrong timed outputs, changed inputs and hidden
host work are flagged and earn no performance points."""

from __future__ import annotations

import copy
import json
import os
import textwrap
import time
import unittest
from pathlib import Path
from unittest import mock

from grader import bench, config, gpu_load, grade, gtest, outcome, score
from grader.stages import timing
from grader.tests.helpers import fake_bench, fake_gtest, load_fixture, write_script
from grader.tests.test_cli import LARGE_GPU_SMI, SEGFAULT, CliTestCase

SETTINGS = config.from_dict({}, None).lab("vectorAdd")


def bench_json(*, noisy: bool = False, rel_se: float = 0.004, ratio: float = 1.01, **student: object) -> dict:
    data = copy.deepcopy(load_fixture("bench-ok.json"))
    graded = data["workloads"][0]
    graded["pair"].update(noisy=noisy, ratio_rel_se=rel_se, ratio_median=ratio)
    graded["results"][0].update(student)
    return data


class NoiseTest(unittest.TestCase):
    def test_noise_order(self):
        quiet, noisy = bench_json(), bench_json(noisy=True, rel_se=0.05)
        self.assertEqual(bench.noise(quiet), (0, 0.004))
        self.assertEqual(bench.noise(noisy), (1, 0.05))
        a, b = bench.BenchRun(None, "", noisy), bench.BenchRun(None, "", quiet)
        self.assertIs(bench.less_noisy(a, b), b)
        self.assertIs(bench.less_noisy(b, a), b)
        failed = bench.BenchRun(object(), "crashed")  # a failed re-run never replaces a scorable run
        self.assertIs(bench.less_noisy(a, failed), a)
        self.assertTrue(bench.is_noisy(a))
        self.assertFalse(bench.is_noisy(b))


class DistrustTest(unittest.TestCase):
    def perf(self, data: dict) -> score.Performance:
        return score.score_performance(data, SETTINGS, correctness_full=True)

    # Faster than the roofline: flagged, not scored.
    def test_roofline(self):
        result = self.perf(bench_json(pct_peak=131.0, ratio=0.2))
        self.assertEqual((result.points, result.flags), (0, ["roofline"]))
        self.assertIn("131% of the device's peak", result.reason)
        lenient = config.from_dict({"defaults": {"max_pct_peak": 150}}, None).lab("vectorAdd")
        self.assertEqual(score.score_performance(bench_json(pct_peak=131.0), lenient, correctness_full=True).points, 30)

    def test_flags(self):
        for student, flag in (({"check_failures": 3}, "check_failures"), ({"inputs_changed": True}, "inputs_changed"),
                              ({"host_suspect": 2}, "host_suspect")):
            result = self.perf(bench_json(**student))
            self.assertEqual((result.points, result.flags), (0, [flag]), flag)
        self.assertEqual(self.perf(bench_json()).flags, [])


# A fake bench: noisy on its first call, quiet after (FAKE_BENCH_DIR holds the JSONs).
FAKE_BENCH = """
    import json, os, shutil, sys
    args = sys.argv[1:]
    folder = os.environ["FAKE_BENCH_DIR"]
    count = len(os.listdir(os.path.join(folder, "calls")))
    open(os.path.join(folder, "calls", str(count)), "w").write(" ".join(args))
    name = "first.json" if count == 0 else "later.json"
    data = json.load(open(os.path.join(folder, name)))
    data["seed"] = int(next(a.split("=", 1)[1] for a in args if a.startswith("--seed=")))
    data["judge"] = {"impl": next(a.split("=", 1)[1] for a in args if a.startswith("--impl="))}
    json.dump(data, open(args[args.index("--json") + 1], "w"))
"""


class RerunTest(CliTestCase):
    def setUp(self) -> None:
        super().setUp()
        self.fake_labs(self.bin)
        self.folder = self.tmp / "benchdata"
        (self.folder / "calls").mkdir(parents=True)
        write_script(self.bin / "vectorAdd_judge_bench", FAKE_BENCH)
        os.environ["FAKE_BENCH_DIR"] = str(self.folder)

    def use(self, first: dict, later: dict) -> None:
        (self.folder / "first.json").write_text(json.dumps(first))
        (self.folder / "later.json").write_text(json.dumps(later))

    def calls(self) -> int:
        return len(list((self.folder / "calls").iterdir()))

    # Noisy, then quiet: two runs, the quiet one scored, and a note says so.
    def test_noisy_bench_runs_again(self):
        self.use(bench_json(noisy=True, rel_se=0.08, ratio=2.0), bench_json(ratio=1.5))
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("timing... noisy, timing again... done", out)
        lab = self.report()["labs"][0]
        self.assertEqual((self.calls(), lab["bench_runs"]), (2, 2))
        self.assertEqual(lab["performance"]["ratio"], 1.5)
        self.assertIn("least noisy run was scored", " ".join(lab["notes"]))
        self.assertTrue((self.build / "results" / "vectorAdd.bench.2.json").is_file())

    # Stamps contradicted (as when another process used the GPU), then a clean run: the
    # clean run is scored. Contradicted twice: the points are withheld.
    def test_contradicted_stamps_time_again(self):
        self.use(bench_json(ratio=1.0, boundary_suspect=20, samples=40), bench_json(ratio=1.1))
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("timing... clock stamps contradicted, timing again... done", out)
        lab = self.report()["labs"][0]
        self.assertEqual((self.calls(), lab["bench_runs"], lab["performance"]["ratio"]), (2, 2, 1.1))
        self.assertEqual((lab["performance"]["points"], lab["performance"]["flags"]), (30, []))
        self.assertIn("the clean run was scored", " ".join(lab["notes"]))
        # What the first run's contradiction was, for whoever reads the report.
        self.assertIn("(the first run: in 20 of 40 samples of", " ".join(lab["notes"]))

    def test_contradicted_stamps_twice_are_withheld(self):
        forged = bench_json(ratio=0.5, boundary_suspect=40, samples=40)
        self.use(forged, forged)
        self.main("--no-build", "vectorAdd")
        lab = self.report()["labs"][0]
        self.assertEqual((self.calls(), lab["performance"]["points"], lab["performance"]["flags"]), (2, 0, ["boundary"]))
        self.assertIn("in two runs", " ".join(lab["notes"]))

    # Contradicted only a little past the bound: one run, scored, and a note that says
    # which samples the judge's clock timed and why that is no accusation.
    def test_marginal_contradictions_are_scored_with_a_note(self):
        slow_handover = bench_json(ratio=1.0, boundary_suspect=20, samples=40,
                                   boundary_misses={"bound_ms": 0.373, "gaps_ms": [0.389, 0.38, 0.395]})
        self.use(slow_handover, bench_json(ratio=1.1))
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertNotIn("clock stamps contradicted", out)
        lab = self.report()["labs"][0]
        self.assertEqual((self.calls(), lab["performance"]["ratio"], lab["performance"]["flags"]), (1, 1.0, []))
        notes = " ".join(lab["notes"])
        self.assertIn("in 20 of 40 samples of", notes)
        self.assertIn("busy 389 us (median) beyond the stamps, where 373 us is allowed", notes)
        self.assertNotIn("contradicted", notes)

    def test_quiet_bench_runs_once(self):
        self.use(bench_json(), bench_json())
        self.main("--no-build", "vectorAdd")
        self.assertEqual((self.calls(), self.report()["labs"][0]["bench_runs"]), (1, 1))

    # Where a run's time went: its phases' wall seconds, in the report and on the console.
    def test_phases_timed(self):
        self.use(bench_json(), bench_json())
        _, out, _ = self.main("--no-build", "vectorAdd")
        seconds = self.report()["seconds"]
        self.assertEqual(list(seconds), ["files", "build", "tests", "timing"])
        self.assertTrue(all(isinstance(v, float) and v >= 0 for v in seconds.values()), seconds)
        self.assertGreater(seconds["timing"], 0.0)  # the fake bench ran in it
        # How busy the processors were meanwhile (grader/cpu_load.py), where they can be read.
        load = self.report()["cpu_busy"]
        if Path("/proc/stat").exists():
            self.assertEqual(sorted(load), ["cores", "interval_s", "samples"])
            self.assertTrue(all(0 <= busy <= 1 for _, busy in load["samples"]), load)
        # And the GPU's (grader/gpu_load.py): none without a GPU (this test's nvidia-smi finds none).
        self.assertIn("gpu_busy", self.report())
        self.assertIsNone(self.report()["gpu_busy"])
        self.assertRegex(out, r"time: \d+ s in all; files [\d.]+ s, build [\d.]+ s, tests [\d.]+ s, timing [\d.]+ s \(")

    # With a GPU, its load is sampled through NVML (here a stand-in) for the GPU that grades.
    def test_gpu_load_sampled(self):
        self.use(bench_json(), bench_json())
        write_script(self.tmp / "gpu" / "nvidia-smi", LARGE_GPU_SMI)
        os.environ["PATH"] = f"{self.tmp / 'gpu'}{os.pathsep}{os.environ['PATH']}"
        opened: list[str] = []

        class Rates:
            def read(self):
                return 0.75, 0.25

            def close(self):
                pass

        with mock.patch.object(gpu_load, "INTERVAL_S", 0.01), \
                mock.patch.object(gpu_load.Nvml, "open", side_effect=lambda uuid: opened.append(uuid) or Rates()):
            code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(opened, ["GPU-0"])
        busy = self.report()["gpu_busy"]
        self.assertEqual((busy["gpu"], busy["interval_s"]), ("GPU-0", 0.01))
        self.assertTrue(busy["samples"], busy)
        self.assertTrue(all(sample[1:] == [0.75, 0.25] for sample in busy["samples"]), busy)

    def test_reruns_configurable(self):
        self.use(bench_json(noisy=True), bench_json(noisy=True))
        config_file = self.tmp / "c.toml"
        config_file.write_text("[grader]\nbench_reruns = 3\n")
        self.main("--no-build", "--config", str(config_file), "vectorAdd")
        self.assertEqual(self.calls(), 4)
        self.assertIn("(still noisy)", " ".join(self.report()["labs"][0]["notes"]))

    # Faster than the roofline: PASS, no performance points, the flag in the report.
    def test_roofline_flag_end_to_end(self):
        self.use(bench_json(pct_peak=250.0, ratio=0.3), bench_json())
        code, out, _ = self.main("--no-build", "vectorAdd")
        lab = self.report()["labs"][0]
        self.assertEqual((lab["status"], lab["performance"]["points"]), ("PASS", 0))
        self.assertEqual(lab["performance"]["flags"], ["roofline"])
        self.assertIn("faster than the hardware allows", out)


def passed_lab() -> grade.LabResult:
    """vectorAdd with its tests passed, before its timing."""
    return grade.LabResult("vectorAdd", grade.status.PASS, score.Correctness(70.0, 70.0, True),
                           score.Performance(0.0, 30.0))


class BenchSecondsTest(unittest.TestCase):
    """The scored bench run's "seconds" go into the lab's seconds; odd values and an older
    bench's JSON (no "seconds") leave them alone."""

    def test_kept_and_refused(self):
        result = passed_lab()
        timing.note_bench_seconds(result, {"seconds": {"set_up": 2.0, "gate": 0.5, "calibration": 0.4567,
                                                       "workloads": 1}})
        self.assertEqual(result.seconds, {"bench_calibration": 0.46, "bench_workloads": 1.0})
        for data in (None, [], {"seconds": "fast"}, {"seconds": {"calibration": True, "workloads": -1.0}},
                     {"seconds": {"calibration": "1", "workloads": float("nan")}}, {}):
            other = passed_lab()
            timing.note_bench_seconds(other, data)
            self.assertEqual(other.seconds, {}, data)


class BenchSpansTest(unittest.TestCase):
    """A bench run's set-up and its wait at the gate become spans, from its JSON's "seconds"
    and the moment the grader started it; odd values and an older bench leave none."""

    def test_kept_and_refused(self):
        result = passed_lab()
        outcome.start_run_clock()
        started = time.monotonic()
        timing.note_bench_spans(result, {"seconds": {"set_up": 2.0, "gate": 0.5, "calibration": 0.4}}, started + 1.0)
        timing.note_bench_spans(result, {"seconds": {"set_up": 1.5, "gate": 0, "calibration": 0.4}}, started + 9.0)
        (first, second), (gate,) = result.spans["bench_set_up"], result.spans["bench_gate"]
        self.assertAlmostEqual(first[0], 1.0, delta=0.05)
        self.assertAlmostEqual(first[1] - first[0], 2.0, delta=0.011)
        self.assertAlmostEqual(gate[0], first[1], delta=0.011)
        self.assertAlmostEqual(gate[1] - gate[0], 0.5, delta=0.011)
        self.assertAlmostEqual(second[1] - second[0], 1.5, delta=0.011)  # and no gate span for a run without one
        for data in (None, [], {"seconds": "fast"}, {"seconds": {"set_up": True}}, {"seconds": {"set_up": -1.0}},
                     {"seconds": {"set_up": 1.0, "gate": float("nan")}}, {"seconds": {"gate": 1.0}}, {}):
            other = passed_lab()
            timing.note_bench_spans(other, data, started)
            self.assertEqual(other.spans, {}, data)


class StabilitySummaryTest(unittest.TestCase):
    """grader/tests/stability.py: totals of several gradings against the 1% bound."""

    @staticmethod
    def report(seed: int, points: tuple[float, float]) -> dict:
        labs = [{"lab": "vectorAdd", "status": "PASS", "total": points[0]},
                {"lab": "reduction", "status": "PASS", "total": points[1]}]
        return {"seed": seed, "labs": labs, "total": sum(points), "max": 200}

    def test_within_and_beyond(self):
        from grader.tests import stability
        ok, text = stability.summarise([self.report(1, (100, 100)), self.report(2, (99, 100)),
                                        self.report(3, (100, 99.5))], 0.01)
        self.assertTrue(ok, text)
        self.assertIn("spread 1.00, allowed 2.00", text)
        ok, text = stability.summarise([self.report(1, (100, 100)), self.report(2, (97, 100))], 0.01)
        self.assertFalse(ok)
        self.assertIn("TOO LARGE", text)
        self.assertIn("vectorAdd: spread 3.00 points", text)
        failing = self.report(2, (100, 100))
        failing["labs"][0]["status"] = "NO_GPU"
        self.assertTrue(stability.summarise([self.report(1, (100, 100)), failing], 0.01)[0])
        ok, text = stability.summarise([self.report(1, (100, 100)), failing], 0.01, require_pass=True)
        self.assertFalse(ok)
        self.assertIn("not every lab passed in every run (vectorAdd)", text)


class BenchAloneTest(CliTestCase):
    """Labs are tested side by side, but a bench never times while any test runs: with no
    bench set up early (a small GPU) and with one set up early and waiting at its gate (a
    large GPU), its timing starts only after the last test ended."""

    def test_no_bench_while_tests_run(self):
        for prestart in (0, 1):
            with self.subTest(prestart_benches=prestart):
                self.fake_labs(self.bin)
                spans = self.tmp / f"spans-{prestart}"
                os.environ["SPANS"] = str(spans)
                stamp = ("open(os.environ['SPANS'], 'a').write('%s %s %s\\n' % ({what}, "
                         "os.path.basename(sys.argv[0]).split('_')[0], time.monotonic()))")
                # vectorAdd is tested at once and timed first; scan's tests are slow and crash.
                fake_gtest(self.bin / "scan_judge_test", None,
                           extra="\n".join(["import os, sys, time", stamp.format(what="'test-start'"),
                                            "time.sleep(1.5)", stamp.format(what="'test-end'"),
                                            textwrap.dedent(SEGFAULT)]))
                bench = fake_bench(self.bin / "vectorAdd_judge_bench", "bench-ok.json")
                head, body = bench.read_text().split("\n", 1)
                bench.write_text(head + "\n" + textwrap.dedent(GATED_BENCH_HEAD) + body)
                config = self.tmp / "side-by-side.toml"
                config.write_text(f"[grader]\nparallel_labs = 3\nprestart_benches = {prestart}\n")
                code, out, err = self.main("--no-build", "--config", str(config))
                self.assertEqual(code, 1, out + err)  # scan crashed
                events = {tuple(line.split()[:2]): float(line.split()[2]) for line in spans.read_text().splitlines()}
                self.assertLess(events[("test-start", "scan")], events[("go", "vectorAdd")])
                self.assertGreater(events[("go", "vectorAdd")], events[("test-end", "scan")],
                                   "vectorAdd was timed while scan was tested")
                # Set up early (its process started while scan was tested) only when a slot was given.
                early = events[("setup", "vectorAdd")] < events[("test-end", "scan")]
                self.assertEqual(early, prestart == 1)
                lab = self.report()["labs"][0]
                self.assertEqual(lab["lab"], "vectorAdd")
                # The bench's own account of its timing (the fixture's) beside the stages, and
                # the test binary's own time (the recording's "0s").
                self.assertEqual(sorted(lab["seconds"]), ["bench", "bench_calibration", "bench_workloads", "tests",
                                                          "tests_in_binary"])
                self.assertEqual(lab["seconds"]["tests_in_binary"], 0.0)
                # When each stage ran, from the run's start: the tests, then the bench's timing
                # after scan's tests ended (the run's own clock, as the stamps above show).
                spans = lab["spans"]
                (tests,), (timed,) = spans["tests"], spans["bench"]
                self.assertLessEqual(0.0, tests[0])
                self.assertLessEqual(tests[0], tests[1])
                self.assertLessEqual(tests[1], timed[0])
                self.assertLess(timed[0], timed[1])
                self.assertGreater(timed[1] - timed[0], 0.25)  # the fake bench sleeps 0.3 s after its go
                # The set-up from the bench's own account (the fixture's set_up 0.8 s, gate 0.1 s).
                ((start, end),) = spans["bench_set_up"]
                self.assertAlmostEqual(end - start, 0.8, delta=0.011)
                ((gate_start, gate_end),) = spans["bench_gate"]
                self.assertAlmostEqual(gate_start, end, delta=0.011)
                self.assertAlmostEqual(gate_end - gate_start, 0.1, delta=0.011)
                self.assertNotIn("sanitizer", spans)  # no tool ran
                self.assertIn("testing 3 labs, up to 3 at a time", out + err)


# Stamps of a fake gated bench: set-up, ready at its gate, go, end (SPANS names the file).
GATED_BENCH_HEAD = """
import os, socket, sys, time
def stamp(what):
    with open(os.environ["SPANS"], "a") as f:
        f.write("%s %s %s\\n" % (what, os.path.basename(sys.argv[0]).split("_")[0], time.monotonic()))
stamp("setup")
time.sleep(float(os.environ.get("SETUP_S_" + os.path.basename(sys.argv[0]).split("_")[0], "0")))
gate = next((int(a.split("=", 1)[1]) for a in sys.argv[1:] if a.startswith("--gate-fd=")), None)
if gate is not None:
    stamp("ready")  # before saying so: the grader may go on at once
    os.write(gate, b"r")
    if os.read(gate, 1) != b"g":
        sys.exit(4)
stamp("go")
time.sleep(0.3)
stamp("end")
"""


class PrestartTest(CliTestCase):
    """A lab whose tests passed sets its bench up while other labs are still tested; its
    timing still waits until every test is over and every bench is set up, and the
    timings run one at a time."""

    def test_set_up_early_timed_alone(self):
        self.fake_labs(self.bin)
        spans = self.tmp / "spans"
        os.environ["SPANS"] = str(spans)
        stamp = f"open({str(spans)!r}, 'a').write('%s %s %s\\n' % ({{what}}, sys.argv[0].split('/')[-1].split('_')[0], time.monotonic()))"
        # vectorAdd and reduction pass at once; scan is tested slowly, then crashes.
        fake_gtest(self.bin / "reduction_judge_test", "gtest-1.12-pass.json", "gtest-1.12-pass.stdout.txt")
        fake_gtest(self.bin / "scan_judge_test", None,
                   extra="\n".join(["import sys, time", stamp.format(what="'test-start'"), "time.sleep(2.0)",
                                    stamp.format(what="'test-end'"), textwrap.dedent(SEGFAULT)]))
        for lab in ("vectorAdd", "reduction"):
            bench = fake_bench(self.bin / f"{lab}_judge_bench", "bench-ok.json", argv_log=self.bench_log)
            head, body = bench.read_text().split("\n", 1)
            bench.write_text(head + "\n" + textwrap.dedent(GATED_BENCH_HEAD) + body)
        # reduction sets up for longer than scan is tested: no timing may start before it is done.
        os.environ.update(SETUP_S_vectorAdd="0.3", SETUP_S_reduction="3.0")
        config = self.tmp / "prestart.toml"
        config.write_text("[grader]\nparallel_labs = 3\nprestart_benches = 2\n")
        code, out, err = self.main("--no-build", "--config", str(config))
        self.assertEqual(code, 1, out + err)  # scan crashed
        events = {}
        for line in spans.read_text().splitlines():
            what, lab, when = line.split()
            events[(what, lab)] = float(when)
        for lab in ("vectorAdd", "reduction"):
            self.assertLess(events[("setup", lab)], events[("test-end", "scan")], f"{lab} was not set up early")
            self.assertGreater(events[("go", lab)], events[("test-end", "scan")], f"{lab} was timed during a test")
            self.assertGreater(events[("go", lab)], max(events[("ready", other)] for other in ("vectorAdd", "reduction")),
                               f"{lab} was timed while another bench was still setting up")
        self.assertGreater(events[("go", "reduction")], events[("end", "vectorAdd")], "two timings overlapped")
        self.assertTrue(all(any(a.startswith("--gate-fd=") for a in call) for call in self.bench_calls()))
        labs = {lab["lab"]: lab for lab in self.report()["labs"]}
        self.assertEqual((labs["vectorAdd"]["bench_runs"], labs["reduction"]["bench_runs"]), (1, 1))
        self.assertEqual(labs["vectorAdd"]["performance"]["points"], 30)
        self.assertIn("before", labs["vectorAdd"]["bench"]["telemetry"])

    # Ctrl-C during the first timing: the benches still waiting at their gates never time,
    # and nothing of theirs is left running.
    def test_interrupt_stops_the_waiting_benches(self):
        self.fake_labs(self.bin)
        spans = self.tmp / "spans"
        os.environ["SPANS"] = str(spans)
        fake_gtest(self.bin / "reduction_judge_test", "gtest-1.12-pass.json", "gtest-1.12-pass.stdout.txt")
        for lab in ("vectorAdd", "reduction"):
            bench = fake_bench(self.bin / f"{lab}_judge_bench", "bench-ok.json")
            head, body = bench.read_text().split("\n", 1)
            bench.write_text(head + "\n" + textwrap.dedent(GATED_BENCH_HEAD) + body)
        config = self.tmp / "prestart.toml"
        config.write_text("[grader]\nparallel_labs = 2\nprestart_benches = 2\n")
        real = timing.time_lab

        def interrupt(options, result, *args, **kwargs):
            if result.lab == "reduction":
                raise KeyboardInterrupt
            return real(options, result, *args, **kwargs)

        with mock.patch("grader.stages.timing.time_lab", side_effect=interrupt):
            code, out, err = self.main("--no-build", "--config", str(config))
        self.assertEqual(code, 130, out + err)
        events = [line.split()[:2] for line in spans.read_text().splitlines()]
        self.assertIn(["setup", "reduction"], events)
        self.assertIn(["go", "vectorAdd"], events)
        self.assertNotIn(["go", "reduction"], events)
        self.assertEqual([lab["lab"] for lab in self.report()["labs"]], ["vectorAdd"])

    # test_shards = "auto": one process per 20 s the lab's tests took last time, at most 3;
    # the file keeps the one-process estimate, so the next run shards the same way.
    def test_shards_from_the_last_run(self):
        self.fake_labs(self.bin)
        self.build.mkdir(parents=True, exist_ok=True)
        (self.build / "lab_seconds.json").write_text(json.dumps({"vectorAdd": {"tests": 45.0, "sanitizer": 5.0},
                                                                  "reduction": 30.0}))
        asked = {}
        real = gtest.run_tests

        def record(binary, **kwargs):
            asked[binary.name.split("_")[0]] = kwargs.get("shards")
            return real(binary, **kwargs)

        config = self.tmp / "auto.toml"
        config.write_text('[grader]\ntest_shards = "auto"\n')
        with mock.patch("grader.gtest.run_tests", side_effect=record):
            self.main("--no-build", "--config", str(config))
        self.assertEqual(asked, {"vectorAdd": 3, "reduction": 2, "scan": 1})
        saved = json.loads((self.build / "lab_seconds.json").read_text())
        labs = {lab["lab"]: lab for lab in self.report()["labs"]}
        self.assertAlmostEqual(saved["vectorAdd"]["tests"], round(labs["vectorAdd"]["seconds"]["tests"] * 3, 2), 1)
        config.write_text("[grader]\ntest_shards = 2\n")
        with mock.patch("grader.gtest.run_tests", side_effect=record):
            self.main("--no-build", "--config", str(config), "vectorAdd")
        self.assertEqual(asked["vectorAdd"], 2)

    # A lab_seconds.json that is not what the grader wrote changes nothing but the order.
    def test_unreadable_lab_seconds(self):
        self.fake_labs(self.bin)
        self.build.mkdir(parents=True, exist_ok=True)
        (self.build / "lab_seconds.json").write_text("[1, 2")
        code, out, err = self.main("--no-build", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertIn("vectorAdd", json.loads((self.build / "lab_seconds.json").read_text()))

    # With no slot the bench sets up in its turn, as before: no gate.
    def test_no_slots(self):
        self.fake_labs(self.bin)
        config = self.tmp / "none.toml"
        config.write_text("[grader]\nprestart_benches = 0\n")
        code, out, err = self.main("--no-build", "--config", str(config), "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertFalse(any(a.startswith("--gate-fd") for call in self.bench_calls() for a in call))

    # The labs tested first are the ones that took longest last time (lab_seconds.json).
    def test_longest_first(self):
        self.fake_labs(self.bin)
        self.build.mkdir(parents=True, exist_ok=True)
        (self.build / "lab_seconds.json").write_text(json.dumps({"vectorAdd": 1.0, "reduction": 9.0, "scan": 5.0}))
        order = []
        real = grade.test_lab

        def record(options, lab, *args, **kwargs):
            order.append(lab)
            return real(options, lab, *args, **kwargs)

        config = self.tmp / "one.toml"
        config.write_text("[grader]\nparallel_labs = 1\n")
        with mock.patch("grader.grade.test_lab", side_effect=record):
            self.main("--no-build", "--config", str(config))
        self.assertEqual(order, ["reduction", "scan", "vectorAdd"])
        saved = json.loads((self.build / "lab_seconds.json").read_text())
        self.assertEqual(sorted(saved), ["reduction", "scan", "vectorAdd"])
        self.assertNotEqual(saved["reduction"], 9.0, "this run's seconds were not kept")


if __name__ == "__main__":
    unittest.main()
