"""Stage score: the lab's required and forbidden patterns (apply_rules), its lecture steps
and find-the-bug exercises (grade_variants), the deductions for broken rules and sanitizer
findings (apply_deductions), its graded questions (grade_answers) and its write-up, graded by
hand (record_writeup)."""

from __future__ import annotations

from typing import Any

from grader import answers, build, gpu, layout, manifest, overlay, proc, profile_cache, rules, status, variants, writeup
from grader.outcome import LabResult, clocked
from grader.plan import Options
from grader.stages.context import LabContext


def run(ctx: LabContext, result: LabResult, *, check_rules: bool) -> None:
    """The lab's score after its timing; `check_rules`: the lab was graded (neither ERROR
    nor MISSING before its timing), so its rules apply."""
    if check_rules:
        apply_rules(ctx.options, result, ctx.taken, ctx.manifest)
    grade_variants(result, ctx.manifest)
    if result.status is not status.ERROR:
        apply_deductions(ctx.options, result)
        grade_answers(ctx.options, result, ctx.manifest)
        record_writeup(ctx.options, result, ctx.manifest)


def apply_rules(options: Options, result: LabResult, taken: overlay.Overlay | None = None,
                lab: manifest.Lab | None = None) -> None:
    """The lab's required and forbidden patterns from the config and the manifest, and, where the
    static checks could not run, the built-in patterns in their stead (student code only). A
    built-in rule is lifted by the course's config (`allow`) and by the lab's manifest
    ("rules": {"allow"}: vectorAdd's streams part lifts "own_streams")."""
    settings = options.config.lab(result.lab)
    allowed = set(settings.allow) | set(lab.allowed_rules if lab is not None else ())
    source_root = options.work_dir if taken is not None and not options.plan.solution else options.root
    files = rules.sources(source_root, result.lab, options.impl, settings.editable)
    builtin = {} if options.plan.solution or result.checked else {
        name: rule for name, rule in rules.BUILTIN_RULES.items() if name not in allowed}
    findings = rules.check(source_root, files, settings.required_patterns, settings.forbidden_patterns, builtin)
    result.rules = [r for r in result.rules if r.get("rule") not in allowed] + [f.as_dict() for f in findings]


def grade_variants(result: LabResult, lab: manifest.Lab | None) -> None:
    """The lab's required variants: registered and passing their tests (variants.py), with
    their figures from this run's bench."""
    if lab is None or not lab.required_variants:
        return
    ran = bool(result.correctness.tests) and result.status is not status.ERROR
    result.variants = variants.grade(lab.required_variants, result.correctness.tests if ran else None, result.bench,
                                     result.fix_checks, result.steps)
    # A step that is another step's work, or not the step's speed: flagged for the
    # instructor in the lab's notes too, with both registrations.
    result.notes += [f"lecture step {row['name']}: {row['why']}" for row in result.variants.rows if row.get("flag")]


def apply_deductions(options: Options, result: LabResult) -> None:
    """A broken rule costs rule_penalty, sanitizer findings sanitizer_penalty, each a
    fraction of the points the code earned otherwise (correctness, performance, and the
    steps, find-the-bug exercises and further parts, so that code that breaks a rule, such
    as including the reference, keeps no more of them than of the rest); together never
    more than those points. The graded questions are the student's own writing: not reduced."""
    settings = options.config.lab(result.lab)
    earned = result.correctness.points + result.performance.points + result.variants.points
    result.rule_deduction = round(earned * settings.rule_penalty, 2) if result.rules else 0.0
    sanitizer = 0.0
    if result.sanitizer is not None and result.sanitizer.findings:
        sanitizer = round(earned * settings.sanitizer_penalty, 2)
        result.sanitizer.deduction = sanitizer
    result.deduction = round(min(earned, result.rule_deduction + sanitizer), 2)


def grade_answers(options: Options, result: LabResult, lab: manifest.Lab | None) -> None:
    """The lab's graded questions: the student's answers.md (the solution's, with --impl
    solution) against the manifest, the instructor's key and this run's bench figures."""
    settings = options.config.lab(result.lab)
    if lab is None or not lab.questions or not settings.answers:
        return
    if options.plan.solution:
        path, shown = layout.solution_dir(options.root, result.lab) / "answers.md", f"solutions/{result.lab}/answers.md"
    else:
        path, shown = options.work_dir / lab.answers_file, lab.answers_file
    key_path = (options.answer_keys or options.root / "solutions") / result.lab / "answer_key.json"
    try:
        key = answers.read_key(key_path)
    except answers.AnswerKeyError as exc:
        key = {}
        result.notes.append(f"the answer key could not be used ({exc}): numeric answers were not checked")
    feedback = options.config.grader.get("answer_feedback", answers.VERDICT)
    taken = None
    if settings.profile_answers:
        with clocked(result, "profile"):
            taken = take_profile(options, result, lab)
    result.answers = answers.grade(lab.questions, path, shown, key, result.bench, settings.question_points,
                                   feedback=feedback, lab=result.lab, key_exists=key_path.is_file(), profile=taken)
    if result.answers.note:
        result.notes.append(result.answers.note)
    if any(q["status"] == answers.UNCHECKED and q["check"] == "key" for q in result.answers.questions):
        result.notes.append(f"no answer key at {key_path}: numeric answers were not checked (give the "
                            "instructor's keys with --answer-keys DIR)")


PROFILE_BUILD_TIMEOUT_S = 600


def take_profile(options: Options, result: LabResult, lab: manifest.Lab) -> dict[str, Any] | None:
    """The figures the lab's "profile" questions are checked against: Nsight Compute on the
    candidates they name, taken now by the grader itself (after this lab's timing, before
    the next lab's: alone on the GPU), or None (with a note) when none can be taken.

    Only the kit's own program is profiled, `<lab>_solution_bench`: the candidates are the
    reference's kernels, and no student code runs in that process, so nothing it prints or
    writes can be taken for ncu's output. Only where the kit is the instructor's pristine one
    (--submission, or --impl solution): in a student's own checkout the solution bench would
    be the student's to change. No file is read back (the figures go from ncu's output to the
    check in memory), except in the instructor's batch: with --profile-cache the figures are
    kept in the batch's own folder, where no student code writes, for the next submission."""
    from grader import profile  # ncu's parsing is only needed here
    candidates = profile.question_candidates(lab)
    if not candidates:
        return None
    if options.submission is None and not options.plan.solution:
        result.notes.append("profiler questions: not profiled (a grading run profiles only on the instructor's "
                            "pristine kit, with --submission): their points are pending")
        return None
    ncu = profile.find_ncu()
    if ncu is None:
        result.notes.append("profiler questions: ncu (Nsight Compute) not found: their points are pending")
        return None
    bench_path = layout.direct_bench_path(options.build_dir, result.lab, layout.SOLUTION)
    if not proc.is_executable(bench_path) and options.plan.build_kit:
        built = build.build_targets(options.build_dir, [bench_path.name], PROFILE_BUILD_TIMEOUT_S, options.root)
        if not built.ok:
            first = (built.message.splitlines() or [""])[0]
            result.notes.append(f"profiler questions: {bench_path.name} did not build ({first}): their points are pending")
            return None
    if not proc.is_executable(bench_path):
        result.notes.append(f"profiler questions: {bench_path.name} is not built: their points are pending")
        return None
    devices = gpu.devices()
    # The instructor's batch (--profile-cache): the same kit, GPU and ncu give the same
    # figures, so they are taken once and kept in the batch's own folder (grader/profile_cache.py).
    cache, wanted = options.profile_cache, None
    if cache is not None:
        try:
            wanted = profile_cache.key(bench_path, candidates, ncu, devices[0].name if devices else "",
                                       devices[0].uuid if devices else "")
        except OSError:
            wanted = None
    if wanted is not None and (kept := profile_cache.load(cache, lab.name, wanted)) is not None:
        return kept
    try:
        found, _ = profile.profile_candidates(bench_path, candidates, ncu=ncu, seed=options.seed)
    except (profile.ProfileError, proc.LaunchError) as exc:
        first = (str(exc).splitlines() or [""])[0]
        result.notes.append(f"profiler questions: the profile could not be taken ({first}): their points are pending")
        return None
    figures: dict[str, Any] = {who: [{"name": k.name, "metrics": k.metrics} for k in kernels]
                               for who, kernels in found.items()}
    figures["_gpu"] = devices[0].name if devices else ""
    if wanted is not None:
        profile_cache.store(cache, lab.name, wanted, figures)
    return figures


def record_writeup(options: Options, result: LabResult, lab: manifest.Lab | None) -> None:
    """The lab's write-up (labs/<lab>/WRITEUP.md): read, its form checked, its points pending
    (graded by hand with the manifest's rubric). With --impl solution, the solution's write-up
    where there is one."""
    if lab is None or lab.writeup is None:
        return
    if options.plan.solution:
        path = layout.solution_dir(options.root, result.lab) / writeup.FILE_NAME
        if not path.is_file():
            return  # a reference has no write-up to show
        shown = f"solutions/{result.lab}/{writeup.FILE_NAME}"
    else:
        path, shown = options.work_dir / lab.writeup_file, lab.writeup_file
    result.writeup = writeup.grade(lab.writeup, path, shown)
    if result.writeup.note and result.writeup.status == writeup.PENDING:  # a form to fix: said where it shows
        result.notes.append(result.writeup.note)
