"""Stage sanitize: compute-sanitizer over the lab's tests (when the lab's settings ask for it)
and over the tests of each find-the-bug exercise that names tools in the manifest, side by
side. Findings cost points in the scoring stage (scoring.apply_deductions)."""

from __future__ import annotations

import concurrent.futures
import time

from grader import layout, sanitize, status, variants
from grader.outcome import LabResult, note_span
from grader.stages.context import LabContext, kit_manifests, testing_environment

# The judge's option for the sanitizer's runs: the worker calls the student's code on copies
# of exactly each device argument's extent, so memcheck sees any access past an array.
EXACT_BOUNDS = "--exact-bounds"


def run(ctx: LabContext, result: LabResult) -> None:
    """The sanitizer over the lab's tests (run_sanitizer) and over each find-the-bug
    exercise or part that names tools (check_fixes), all side by side."""
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        fixes = pool.submit(check_fixes, ctx, result)
        run_sanitizer(ctx, result)
        fixes.result()
    if (result.sanitizer is not None and result.sanitizer.ran) or any(result.fix_checks.values()):
        end = time.monotonic()
        result.seconds["sanitizer"] = round(end - start, 2)
        note_span(result, "sanitizer", start, end)


def run_sanitizer(ctx: LabContext, result: LabResult) -> None:
    """The compute-sanitizer stage, when the lab's settings ask for it (result.sanitizer)."""
    options, settings, stage = ctx.options, ctx.settings, ctx.stage
    if not ctx.plan.sanitizer or not settings.sanitizer or not settings.sanitizer_tools:
        why = "--no-sanitizer" if not ctx.plan.sanitizer else "sanitizer = false in the config"
        result.sanitizer = sanitize.SanitizerResult(False, note=f"skipped ({why})")
        return
    if result.status is not status.PASS and settings.sanitizer_when != "always":
        result.sanitizer = sanitize.SanitizerResult(False, note="runs once every test passes "
                                                    '(sanitizer_when = "always" runs it anyway)')
        return
    tool = sanitize.find_sanitizer()
    if tool is None:
        result.sanitizer = sanitize.not_found(settings.sanitizer_filter)
        result.notes.append(result.sanitizer.note)
        stage("sanitizer skipped (compute-sanitizer not found)")
        return
    stage("sanitizer")
    # Exact bounds in every run of the stage (memcheck sees one element past an array), and
    # the same tests once without the tools, to compare what ran (sanitize.compare_with_plain).
    found = sanitize.run(ctx.test_bin, tools=settings.sanitizer_tools, test_filter=settings.sanitizer_filter,
                         seed=options.seed, timeout=options.config.grader["sanitizer_timeout_s"],
                         root=options.work_dir, cwd=options.root, sanitizer=tool,
                         extra_args=[*ctx.judge_args, EXACT_BOUNDS],
                         log_dir=layout.sanitizer_logs(options.results_dir, result.lab),
                         only=layout.worker(result.lab), env=testing_environment(options), compare=True)
    result.sanitizer = found
    if found.runs:  # the command of the first tool that found something, else the first tool's
        first = next((run for run in found.runs if run.status == "errors"), found.runs[0])
        result.reproduce["sanitizer"] = first.command
    result.notes += [run.note for run in found.runs if run.note] + found.notes
    stage(f"{len(found.findings)} sanitizer finding(s)" if found.findings else "clean")


def check_fixes(ctx: LabContext, result: LabResult) -> None:
    """compute-sanitizer over the tests of each find-the-bug exercise that names tools in
    its manifest entry and whose tests passed (result.fix_checks; variants.grade reads it)."""
    options = ctx.options
    wanted = _fixes_to_check(ctx, result)

    def one(variant: variants.RequiredVariant, tool) -> None:
        ctx.stage(f"{', '.join(variant.sanitizer)} on {variant.name}")
        result.fix_checks[variant.name] = sanitize.run(
            ctx.test_bin, tools=list(variant.sanitizer), test_filter=variants.test_filter(variant), seed=options.seed,
            timeout=options.config.grader["sanitizer_timeout_s"], root=options.work_dir, cwd=options.root,
            sanitizer=tool, extra_args=[*ctx.judge_args, EXACT_BOUNDS],
            log_dir=layout.sanitizer_logs(options.results_dir, result.lab, variant.name),
            only=layout.worker(result.lab), env=testing_environment(options))

    if wanted:  # each exercise's own run, side by side
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(wanted)) as pool:
            for done in [pool.submit(one, variant, tool) for variant, tool in wanted]:
                done.result()


def _fixes_to_check(ctx: LabContext, result: LabResult) -> list:
    """(exercise, compute-sanitizer) for each find-the-bug exercise to check; an exercise
    that cannot be checked (no sanitizer) gets None in result.fix_checks."""
    lab = kit_manifests(ctx.options.root).get(result.lab)
    wanted = []
    for variant in lab.required_variants if lab is not None else ():
        if variant.kind == variants.STEP or not variant.sanitizer:
            continue
        mine = variants.tests_of(variant.name, result.correctness.tests)
        if not mine or any(t.get("status") != "passed" for t in mine):
            continue  # failing already: nothing for the sanitizer to add
        tool = None if not ctx.plan.sanitizer else sanitize.find_sanitizer()
        if tool is None:
            result.fix_checks[variant.name] = None
            continue
        wanted.append((variant, tool))
    return wanted
