"""Stage check: the static checks on the compiled student file (grader/check/); their findings
become broken rules, and a file that reads files of the machine ends the lab."""

from __future__ import annotations

from grader import check, layout, manifest, status
from grader.outcome import LabResult, clocked, fail
from grader.stages.context import LabContext


def run(ctx: LabContext, result: LabResult) -> bool:
    """The checks, where a student's file was compiled (in this run or an earlier --build-only
    one; never the reference); False when they end the lab (BUILD_ERROR)."""
    if not ctx.plan.checks or (ctx.student is None and not ctx.plan.compiled):
        return True
    with clocked(result, "checks"):
        run_checks(ctx, result)
    return result.status is not status.BUILD_ERROR


def run_checks(ctx: LabContext, result: LabResult) -> None:
    """The static checks on the compiled student file (grader/check/): findings become rules."""
    options, lab, student = ctx.options, ctx.lab, ctx.student
    lab_manifest = manifest.by_name(options.root).get(lab)
    if lab_manifest is None:
        return
    files = [options.work_dir / rel for rel in ctx.taken.copied.get(lab, [])]
    ctx.stage("checking")
    checked = check.check_lab(options.root, lab_manifest, files, work_dir=layout.checks_dir(options.own_dir, lab),
                              object_file=student.object if student is not None and student.ok else None)
    result.checked = checked.ok
    result.steps = getattr(checked, "steps", None)
    if getattr(checked, "exceeded", False):  # the checks' compile hit a limit: a bomb, not a clean file
        fail(result, status.BUILD_ERROR, f"static checks: {checked.message}",
             checked.commands[0] if checked.commands else "")
        return
    if not checked.ok:
        result.notes.append(f"static checks: {checked.message}")
        return
    result.rules += [finding.as_dict() for finding in checked.findings]
    if checked.commands:
        result.reproduce["check"] = checked.commands[0]
    reads = next((f for f in checked.findings if f.pattern == check.READS_FILES), None)
    if reads is not None:
        # The bytes of a file of this machine are in the program: any test message about
        # a wrong output could carry them into the student's report. Nothing runs.
        fail(result, status.BUILD_ERROR, f"static checks: {reads.message}", result.reproduce.get("check", ""))
