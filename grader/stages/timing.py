"""Stage time: the judge times the student's and the reference's workers (a lab whose tests
all passed), and the lab's required steps beside the reference's; the bench runs again by
bench.py's rerun policy, and the scored run becomes the performance score."""

from __future__ import annotations

import time

from grader import bench, gpu, layout, proc, score, status
from grader.config import LabSettings
from grader.outcome import LabResult, clocked, fail, note_span
from grader.plan import Options
from grader.stages.context import LabContext, bench_environment, reference, required_steps


def run(ctx: LabContext, result: LabResult) -> None:
    """Phase two of a lab whose tests passed (result.implementation): its timing and the
    performance score."""
    options, lab, pending = ctx.options, result.lab, ctx.pending
    if result.implementation is None or result.status is not status.PASS:
        if pending is not None:
            pending.cancel()
        return
    settings = ctx.settings
    if not ctx.plan.bench:
        result.performance = score.score_performance(None, settings, correctness_full=True,
                                                     unavailable="bench skipped (--skip-bench)")
        return
    bench_bin = layout.judge_bench_path(options.build_dir, lab)
    if not proc.is_executable(bench_bin):
        result.performance = score.score_performance(None, settings, correctness_full=True,
                                                     unavailable="bench binary not found")
        fail(result, status.BUILD_ERROR, f"judge program {bench_bin} not found: build the lab "
             "(run the grader without --no-build), or pass --skip-bench")
        return
    with clocked(result, "bench"):
        time_lab(ctx, result)


def time_lab(ctx: LabContext, result: LabResult) -> None:
    """The bench runs (again when noisy, throttled or contradicted: bench.scored_run) and the score."""
    options, settings, pending = ctx.options, ctx.settings, ctx.pending
    required = required_steps(ctx.manifest)
    _, missing_reference = reference(options, result.lab)

    def one() -> bench.BenchRun:
        """One more bench run (result.bench_runs counts them; each writes its own JSON)."""
        result.bench_runs += 1
        if result.bench_runs == 1 and pending is not None:
            return pending.finish()  # set up while the tests ran: its timing starts now
        return run_bench(options, result, result.bench_runs, required)

    timed = bench.scored_run(bench.Reruns(
        one, lambda timed: contradicted(timed, settings), ctx.stage, result.notes,
        noisy_reruns=options.config.grader["bench_reruns"], cooldown_s=options.config.grader["cooldown_s"]))
    result.reproduce["bench"] = timed.command
    result.bench = timed.data
    note_bench_seconds(result, timed.data)
    if timed.status is not None:
        fail(result, timed.status, f"bench: {timed.message}", timed.command, timed.output)
    result.performance = score.score_performance(
        timed.data if timed.status is None else None, settings, correctness_full=True,
        unavailable=f"the bench failed: {timed.message}")
    if bench.slowdown(timed):
        result.performance.flags.append("throttled")
    if missing_reference:
        result.performance = score.Performance(0.0, settings.performance_points, reason=missing_reference)
    for w in result.performance.workloads:
        if w.get("boundary_marginal"):
            detail = f" ({w['boundary_detail']})" if w.get("boundary_detail") else ""
            result.notes.append(
                f"in {w['judge_clock_samples']} of {w.get('samples')} samples of {w['name']!r} the judge's clock ran "
                f"a little past the clock stamps around your call, on every try{detail}: a slow hand-over between "
                "processes does this, forged stamps run far past; those samples were timed by the judge's clock, "
                "which can only count them slower")
    doubted = [w["name"] for w in result.performance.workloads if w.get("benefit_of_doubt")]
    if doubted:
        result.notes.append(f"full performance points by the benefit of the doubt in {', '.join(doubted)}: "
                            f"slower than {settings.full_credit_ratio:g}x the reference's time, but within "
                            "the timing's 95% confidence interval of it")


def note_bench_seconds(result: LabResult, data: object) -> None:
    """Where the scored bench run's timing went, from its JSON's "seconds", beside the lab's
    own "bench" (every run, from the gate's opening to the process's end): the judge's
    boundary calibration and the workloads' measurements (what is left of "bench" is the
    process ending, the GPU's telemetry and any rerun). A diagnostic, in no score."""
    spent = bench_seconds(data)
    for key in ("calibration", "workloads"):
        if key in spent:
            result.seconds[f"bench_{key}"] = round(spent[key], 2)


def bench_seconds(data: object) -> dict[str, float]:
    """A bench JSON's "seconds", or nothing from an older bench or from one whose account
    holds a figure that is not a number of seconds."""
    spent = data.get("seconds") if isinstance(data, dict) else None
    if not isinstance(spent, dict) or not all(
            isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e6
            for value in spent.values()):
        return {}
    return {str(key): float(value) for key, value in spent.items()}


def run_bench(options: Options, result: LabResult, attempt: int, required: list[str],
              gate: proc.Gate | None = None) -> bench.BenchRun:
    """One run of the lab's judge bench on its implementation under test, with the GPU's
    clocks, temperature, power and clock-event reasons just before and just after it in its
    JSON ("telemetry"). With a `gate` it waits, set up, for the gate's opening
    (PendingBench.finish adds the telemetry then)."""
    lab = result.lab
    found, _ = reference(options, lab)
    before = gpu.telemetry(max_age_s=gpu.TELEMETRY_REUSE_S) if gate is None else None
    started = time.monotonic()
    timed = bench.run_bench(layout.judge_bench_path(options.build_dir, lab), seed=options.seed,
                            timeout=options.config.grader["bench_timeout_s"],
                            json_path=layout.bench_json(options.results_dir, lab, attempt),
                            reference=found, variant=options.config.lab(lab).reference_variant, cwd=options.root,
                            impl=result.implementation, time_variants=required, gate=gate,
                            env=bench_environment(options), floors=bench_floors(options))
    if timed.data is not None and gate is None:
        timed.data["telemetry"] = {"before": before, "after": gpu.telemetry()}
    note_bench_spans(result, timed.data, started)
    return timed


def note_bench_spans(result: LabResult, data: object, started: float) -> None:
    """The spans of a bench run's set-up and of its wait at the gate, from its JSON's
    "seconds" (the bench's own clock, from the process's start at `started`). A diagnostic."""
    spent = bench_seconds(data)
    if "set_up" not in spent:
        return  # an older bench, or none
    set_up, gate = spent["set_up"], spent.get("gate", 0.0)
    note_span(result, "bench_set_up", started, started + set_up)
    if gate > 0:
        note_span(result, "bench_gate", started + set_up, started + set_up + gate)


def bench_floors(options: Options) -> dict[str, float]:
    """The judge's bench options for the config's sampling floors (none where "auto")."""
    wanted = {"--warm-up": options.config.grader["bench_warm_up_s"],
              "--min-time": options.config.grader["bench_min_time_s"]}
    return {flag: float(value) for flag, value in wanted.items() if value != "auto"}


def contradicted(timed: bench.BenchRun, settings: LabSettings) -> str:
    """Why the run's performance would be withheld because the judge's clock contradicts
    the worker's clock stamps ("boundary"): the score's reason, "" when it would not."""
    performance = score.score_performance(timed.data, settings, correctness_full=True)
    return performance.reason if "boundary" in performance.flags else ""
