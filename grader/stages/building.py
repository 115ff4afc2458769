"""Stage build: the kit's part once for every lab (build_kit), each lab's student file alone
(build_students, in the compile jail where it works), and for each lab the library under
test (run). A failed compile whose messages could quote a file outside the lab shows names
instead of the messages (quiet_foreign_errors)."""

from __future__ import annotations

import concurrent.futures
import os
import re
from pathlib import Path

from grader import build, check, layout, manifest, overlay, proc, status
from grader.outcome import LabResult, Progress, fail
from grader.plan import Options
from grader.stages.context import KitBuild, LabContext, reference


def build_kit(options: Options, labs: list[str], progress: Progress) -> KitBuild:
    """Configure the kit and build its judge programs, workers and references (no student code),
    once for all labs; afterwards, what each lab's student build needs from it."""
    kit = KitBuild()
    grader_settings = options.config.grader
    progress.note("configuring the kit with CMake...")
    args = build.configure_args(options.root, options.build_dir, solutions=options.plan.solution,
                                cuda_arch=options.cuda_arch)
    try:
        kit.configured = build.configure(args, options.build_dir, grader_settings["configure_timeout_s"])
    except Exception as exc:  # e.g. an unwritable build dir: every lab reports it
        kit.configured = build.BuildResult(ok=False, command=proc.command_string(args),
                                           message=f"could not run CMake ({type(exc).__name__}: {exc})")
    if not kit.configured.ok:
        return kit
    targets = {lab: layout.judge_targets(lab, reference=_builds_reference(options, lab)) for lab in labs
               if (options.root / "labs" / lab).is_dir()}
    everything = [t for lab_targets in targets.values() for t in lab_targets]
    shown = [-1]

    def show(done: int, total: int) -> None:
        step = max(1, total // 10)
        if done == total or done // step != shown[0]:
            shown[0] = done // step
            progress.note(f"  building the kit's judge programs: {done}/{total} steps")

    progress.note("building the kit's part (judge programs, workers, references; only what changed)...")
    whole = build.build_targets(options.build_dir, everything, grader_settings["build_timeout_s"], options.root,
                                progress=show, keep_going=True)
    for lab, lab_targets in targets.items():
        # After a failed whole build, each lab again alone: a no-op where it succeeded,
        # its own errors where it did not.
        result = whole if whole.ok else build.build_targets(
            options.build_dir, lab_targets, grader_settings["build_timeout_s"], options.root)
        if not result.ok:
            kit.failed[lab] = result
        elif not options.plan.solution:
            _read_commands(options, kit, lab)
    return kit


def _read_commands(options: Options, kit: KitBuild, lab: str) -> None:
    """How the kit compiles the lab's student file (kit.commands), or why it cannot tell."""
    try:
        kit.commands[lab] = build.student_commands(options.build_dir, lab, options.root)
    except build.CommandsError as exc:
        kit.command_errors[lab] = str(exc)


def compile_jail(options: Options, kit: KitBuild, lab: str, limits: proc.Limits) -> tuple[bool, str]:
    """Whether students' files compile inside the jail (build.jail_verdict), and a note when
    not. With `compile_jail = "auto"` (the default) it is used where the kernel has Landlock
    and the pristine kit's own file of `lab` compiles inside it (tried once per build
    folder, toolchain and kernel); `false` turns it off."""
    if options.config.grader.get("compile_jail", "auto") is False:
        return False, ""
    return build.jail_verdict(options.build_dir, kit.commands[lab], options.root, lab,
                              options.own_dir / layout.JAIL_TRIAL, limits=limits,
                              timeout=options.config.grader["student_build_timeout_s"])


def build_students(options: Options, labs: list[str], kit: KitBuild, taken: overlay.Overlay,
                   progress: Progress, notes: list[str] | None = None) -> dict[str, build.StudentBuild]:
    """Compile each lab's student file into its own library, the labs side by side, each in
    the compile jail where it works."""
    grader_settings = options.config.grader
    limits = proc.Limits(memory_bytes=grader_settings["compile_memory_mb"] << 20,
                         file_bytes=grader_settings["compile_file_mb"] << 20)
    wanted = [lab for lab in labs if lab in kit.commands and lab not in taken.missing]
    if not wanted:
        return {}
    jail, why = compile_jail(options, kit, wanted[0], limits)
    if why:
        progress.note(why)
        if notes is not None:
            notes.append(why)
    progress.note(f"compiling the student files of {len(wanted)} lab(s)...")

    def one(lab: str) -> build.StudentBuild:
        source = layout.student_source(options.work_dir, lab)
        return build.build_student(options.build_dir, kit.commands[lab], source, options.student_dir / lab, lab,
                                   timeout=grader_settings["student_build_timeout_s"], limits=limits,
                                   display_root=options.work_dir, jail=jail)

    workers = max(1, min(len(wanted), os.cpu_count() or 1))
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        built = dict(zip(wanted, pool.map(one, wanted)))
    for lab, student in built.items():
        if not student.ok:
            quiet_foreign_errors(options, lab, taken, student)
    return built


def load_students(options: Options, labs: list[str]) -> dict[str, build.StudentBuild]:
    """The builds an earlier --build-only run recorded (--prebuilt)."""
    return {lab: found for lab in labs if (found := build.StudentBuild.load(options.student_dir / lab))}


def save_students(options: Options, labs: list[str], kit: KitBuild, taken: overlay.Overlay,
                  students: dict[str, build.StudentBuild]) -> None:
    """Records each lab's build for a later --prebuilt run (--build-only)."""
    for lab in labs:
        built = students.get(lab) or build.StudentBuild(False, message=not_built(kit, taken, lab))
        built.save(options.student_dir / lab)


# A compiler diagnostic's location: "path(12): error", "path:12:3: error", "In file included from path:3".
_LOCATED = re.compile(r"^\s*(?:In file included from |from )?(?P<path>[^\s:()]+?)(?:\((?P<a>\d+)\)|:(?P<b>\d+))")


def only_own_files(text: str, options: Options, own: list[str]) -> bool:
    """Whether every diagnostic location in compiler output `text` is one of the student's
    own files (by the name shown, or its path in the submission folder)."""
    mine = {str(Path(rel)) for rel in own} | {str(options.work_dir / rel) for rel in own}
    for line in text.splitlines():
        found = _LOCATED.match(line)
        if found and (found.group("a") or found.group("b")) and found.group("path") not in mine:
            return False
    return True


def quiet_foreign_errors(options: Options, lab: str, taken: overlay.Overlay, student: build.StudentBuild) -> None:
    """A failed compile of a file that includes files outside the kit and the lab (anything the
    grading user can read) must not bring their lines into the report: the compiler's
    messages quote the lines they are about. Its messages are then replaced by the names."""
    lab_manifest = manifest.by_name(options.root).get(lab)
    if lab_manifest is None:
        return
    files = [options.work_dir / rel for rel in taken.copied.get(lab, [])]
    reads = check.foreign_reads(options.root, lab_manifest, files, work_dir=layout.checks_dir(options.own_dir, lab))
    if reads == []:
        return  # everything it reads is the kit's, the toolkit's, the system's or the student's
    if reads is None and only_own_files(student.message + "\n" + student.output, options, taken.copied.get(lab, [])):
        return  # the preprocessor failed in the student's own file (a misspelt #include, say)
    if reads:
        student.message = (f"compilation failed, and your file includes {', '.join(reads[:3])}, outside your lab "
                           "and the kit: the compiler's messages are not shown, since they would quote it. "
                           f"Include only {lab}.h and the kit's headers")
    else:
        student.message = ("compilation failed before its includes could be listed (nvcc -M failed): the "
                           "compiler's messages are not shown, since they could quote a file outside your lab. "
                           f"Check every #include of your file: only {lab}.h and the kit's headers may be included")
    student.output = ""


def not_built(kit: KitBuild, taken: overlay.Overlay, lab: str) -> str:
    """Why a lab's student library was not built."""
    if kit.configured is not None and not kit.configured.ok:
        return kit.configured.message
    if lab in kit.failed:
        return "the kit's own programs for this lab did not build:\n" + kit.failed[lab].message
    if lab in kit.command_errors:
        return kit.command_errors[lab]
    return taken.missing.get(lab, "not built")


def _builds_reference(options: Options, lab: str) -> bool:
    """Whether this run builds lab's reference library (else it comes from --reference or is absent)."""
    return options.reference_dir is None and layout.solution_dir(options.root, lab).is_dir()


def run(ctx: LabContext, result: LabResult) -> bool:
    """The stage for one lab: the kit's programs for it were built, and the library under
    test (ctx.implementation) is there; else the lab ends here (MISSING, BUILD_ERROR)."""
    lab, kit = ctx.lab, ctx.kit
    if not layout.lab_manifest(ctx.options.root, lab).is_file():
        fail(result, status.MISSING, f"labs/{lab}/lab.json not found: this kit has no {lab} lab "
             "(is --root the kit's top directory?)")
        return False
    if kit.configured is not None and not kit.configured.ok:
        fail(result, status.BUILD_ERROR, kit.configured.message, kit.configured.command, kit.configured.output)
        return False
    if lab in kit.failed:
        failed = kit.failed[lab]
        fail(result, status.BUILD_ERROR, "the kit's own programs for this lab did not build (not your "
             "file: the tests, the bench or the judge):\n" + failed.message, failed.command, failed.output)
        return False
    ctx.implementation = _implementation(ctx, result)
    return ctx.implementation is not None


def _implementation(ctx: LabContext, result: LabResult) -> Path | None:
    """The library under test, or None after marking `result` BUILD_ERROR (or MISSING)."""
    options, lab, student = ctx.options, ctx.lab, ctx.student
    if ctx.plan.solution:
        found, missing = reference(options, lab)
        if found is None:
            fail(result, status.MISSING, missing or f"{layout.solution_library(lab)} not found: --impl solution "
                 "needs the instructor's kit (solutions/) or --reference")
        return found
    if lab in ctx.kit.command_errors:
        fail(result, status.BUILD_ERROR, ctx.kit.command_errors[lab])
        return None
    if student is not None:
        result.reproduce["build"] = student.command
        if not student.ok:
            fail(result, status.BUILD_ERROR, student.message, student.command, student.output)
            return None
        return student.library
    library = layout.submission_library(options.student_dir, lab)
    if not ctx.plan.compiled and not library.is_file():
        library = layout.kit_student_library(options.build_dir, lab)  # the kit's own build of the file
    if not library.is_file():
        fail(result, status.BUILD_ERROR, f"{library} not found: build the lab (run the grader without --no-build)")
        return None
    return library
