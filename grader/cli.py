"""Command line of the grader: `python3 -m grader [lab ...]`, and its other commands.

Exit codes: 0 when every graded lab passed, 1 when any lab failed, 2 for bad usage or
configuration (one line on stderr, never a traceback), 3 when there is no usable GPU, or
a GPU the build (or the reference package) has no code for (grader/arch.py; both said
before anything is built), 130 when interrupted (the report is still written).
"""

from __future__ import annotations

import argparse
import importlib
import os
import secrets
import signal
import sys
import threading
from pathlib import Path

from grader import __version__, arch, build, config, gpu, gpu_lock, grade, manifest, overlay, proc, report, seed
from grader import layout
from grader.config import ConfigError
from grader.formats import html_page
from grader.outcome import phase_line

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_GPU, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
SEED_LIMIT = 2**64

# `python3 -m grader <command> ...`: commands other than grading live in their own
# modules, each with `main(argv) -> int` (argv without the command word). One line each
# for --help.
COMMAND_HELP = {
    "check": "static checks of the student files, no GPU needed (includes, symbols, constructors, system calls)",
    "profile": "Nsight Compute on your graded call and the reference's, with what each figure means",
    "export": "write the student template repository (instructors)",
    "package": "package the compiled reference libraries without their source (instructors)",
    "batch": "grade a roster of submissions into a gradebook, or a Slurm job array (instructors)",
    "report": "turn a JSON report into Markdown, HTML, JUnit, Classroom or Gradescope results",
    "similarity": "rank pairs of a class's submissions by code similarity, no GPU needed (instructors)",
}
EXIT_HELP = ("exit status: 0 every graded lab passed, 1 some lab failed, 2 usage or config error, "
             "3 no usable GPU, or one the build has no code for (said before anything is built; "
             "--allow-no-gpu grades anyway), "
             "130 interrupted (the report is still written)")
SUBCOMMANDS = {
    "export": "grader.instructor.export",    # write the student template repository
    "package": "grader.instructor.package",  # package the compiled reference libraries
    "batch": "grader.instructor.batch",      # grade a roster of submissions into a gradebook
    "report": "grader.formats",   # turn a JSON report into Markdown, JUnit, Classroom, Gradescope
    "check": "grader.check",
    "profile": "grader.profile",
    "similarity": "grader.instructor.similarity",  # rank pairs of submissions by code similarity
}


class UsageError(Exception):
    """Bad command line or configuration; the message says what to do."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one clear line instead of usage + exit inside argparse
        raise UsageError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    commands = "\n".join(f"  {name:<10} {text}" for name, text in COMMAND_HELP.items())
    parser = _Parser(
        prog="python3 -m grader",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Build, test, time and score the CUDA labs of this kit.\n\n"
                    "other commands (python3 -m grader COMMAND --help for each):\n" + commands,
        epilog=EXIT_HELP[0].upper() + EXIT_HELP[1:] + ".")
    _add_what_options(parser)
    _add_input_options(parser)
    _add_mode_options(parser)
    return parser


def _add_what_options(parser: argparse.ArgumentParser) -> None:
    """What to grade, where the kit and its build are, and the seed."""
    parser.add_argument("labs", nargs="*", metavar="lab",
                        help="labs to grade (default: every lab present, in course order: "
                             f"{' '.join(config.kit_labs())})")
    parser.add_argument("--impl", choices=("student", "solution"), default="student",
                        help="grade the student's code (default) or the reference solution itself")
    parser.add_argument("--root", type=Path, metavar="DIR",
                        help="the kit's top directory (default: the directory holding grader/); with "
                             "--submission, the default pristine kit")
    parser.add_argument("--build-dir", type=Path, metavar="DIR",
                        help="CMake build directory (default: the developer build <root>/build/dev when it is "
                             "configured for this kit, else <root>/build/grader; with --submission "
                             "<pristine>/build/grader)")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="grading config in TOML (default: <root>/grader.toml if present; "
                             "see grader/grader.example.toml)")
    parser.add_argument("--seed", type=_seed, metavar="N",
                        help='seed for the random inputs, an integer >= 0 or "random"; the report records the '
                             "seed of every run, and --seed with it reproduces a grade exactly (default: derived "
                             f"from --secret-file or ${seed.SECRET_ENV} when given, else the config's seed, "
                             "else random)")
    parser.add_argument("--submission", type=Path, metavar="DIR",
                        help="instructor mode: grade the student repository DIR. Only its student-editable files "
                             "(config key `editable`, by default labs/<lab>/<lab>.cu) are copied into a pristine "
                             "copy of the kit and built there; changes to any other file have no effect and are "
                             "listed in the report")
    parser.add_argument("--pristine", type=Path, metavar="DIR",
                        help="with --submission: the instructor's pristine kit to build the submission in "
                             "(default: $LABKIT_PRISTINE, else --root); its grader.toml is the config")
    parser.add_argument("--secret-file", type=Path, metavar="FILE",
                        help="derive the hidden seed from the instructor secret in FILE and the content of the "
                             "submission's editable files (HMAC-SHA256), so the same submission always gets the "
                             f"same seed; ${seed.SECRET_ENV} holding the secret does the same. The secret is never "
                             "written to the report")


def _add_input_options(parser: argparse.ArgumentParser) -> None:
    """The sanitizer, the references and answer keys, the architectures, the report's file."""
    parser.add_argument("--no-sanitizer", action="store_true",
                        help="skip the compute-sanitizer stage (memcheck, racecheck, synccheck on a small test "
                             "filter per lab)")
    parser.add_argument("--reference", type=Path, metavar="DIR",
                        help="directory holding lib<lab>_solution.so reference libraries "
                             "(default: $LABKIT_REFERENCE_DIR, else <build>/lib)")
    parser.add_argument("--answer-keys", type=Path, metavar="DIR",
                        help="the instructor's answer keys, DIR/<lab>/answer_key.json, for the graded "
                             "questions (default: $LABKIT_ANSWER_KEYS, else <kit>/solutions)")
    parser.add_argument("--profile-cache", type=Path, metavar="DIR",
                        help="the instructor's batch: keep the profiler questions' figures (Nsight Compute on the "
                             "kit's own reference kernels) in DIR and reuse them for every submission graded on the "
                             "same GPU with the same kit and ncu (grader batch passes it); never where students run "
                             "steps of their own (a Classroom runner): they could leave figures there")
    parser.add_argument("--answer-feedback", choices=("verdict", "figures"),
                        help="what the report says about an answer that is a figure of the student's own bench: "
                             "'verdict', within tolerance or not and what to do, never the grading run's figure; "
                             "'figures', the figures compared too (default: the config's answer_feedback, "
                             "else verdict)")
    parser.add_argument("--cuda-arch", metavar="ARCH",
                        help="CUDA architectures to compile for, passed as -DCMAKE_CUDA_ARCHITECTURES "
                             "(e.g. 90, or 80,90; an existing build folder is reconfigured for them; default: "
                             "the build folder's, else those of this machine's GPUs)")
    parser.add_argument("--json", type=Path, metavar="FILE",
                        help="where to write the JSON report (default: <build>/report.json)")


def _add_mode_options(parser: argparse.ArgumentParser) -> None:
    """How much of the grading runs, and how it is shown."""
    parser.add_argument("--no-build", action="store_true",
                        help="do not configure or build; grade the binaries already in the build directory")
    parser.add_argument("--skip-bench", action="store_true",
                        help="run the tests only (no timing, so no performance points)")
    parser.add_argument("--allow-no-gpu", action="store_true",
                        help="build and grade even where no GPU is found (every lab that builds is then NO_GPU), "
                             "or where the build has no code for a GPU; without it the grader stops at once with "
                             "exit status 3")
    parser.add_argument("--student-dir", type=Path, metavar="DIR",
                        help="a folder of this submission's own for its copied files, libraries, checks and raw "
                             "results (default: in the build folder); `batch` gives each student one, beside a "
                             "build folder the class shares")
    parser.add_argument("--build-only", action="store_true",
                        help="compile the submission's files into --student-dir (after building the kit's part as "
                             "needed) and grade nothing; a later run with --prebuilt grades them")
    parser.add_argument("--prebuilt", action="store_true",
                        help="grade what --build-only compiled into --student-dir: build nothing (the kit's part "
                             "must be built already)")
    parser.add_argument("--profile", action="store_true",
                        help="after grading, run Nsight Compute on the graded call of each lab whose tests all "
                             "passed, yours and the reference's (as `python3 -m grader profile`), and put the "
                             "tables in the report; feedback only, never scored. Your own code only: it runs "
                             "in your bench, outside the judge's sandbox, so not with --submission")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines; print only the score table and the failures")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")


def main(argv: list[str] | None = None) -> int:
    """Run the grader; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in SUBCOMMANDS:
        try:
            module = importlib.import_module(SUBCOMMANDS[argv[0]])
        except ModuleNotFoundError:
            print(f"grader: error: the '{argv[0]}' command is not part of this copy of the kit", file=sys.stderr)
            return EXIT_USAGE
        return int(module.main(argv[1:]))
    try:
        args = build_parser().parse_args(argv)
        options, labs = resolve(args)
        json_path = (args.json or options.build_dir / "report.json").resolve()
        _check_writable(json_path)
    except SystemExit as exc:  # --help, --version
        return int(exc.code or 0)
    except (UsageError, ConfigError) as exc:
        print(f"grader: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if not args.allow_no_gpu and not args.no_build and not args.build_only:
        found = gpu.probe()
        if not found.ok:
            print(f"grader: error: no usable GPU: {found.why}. Nothing was built. (--allow-no-gpu builds and "
                  "grades anyway: every lab that builds is then NO_GPU; `python3 -m grader check` runs the "
                  "static checks without a GPU.)", file=sys.stderr)
            return EXIT_NO_GPU
    if not args.allow_no_gpu and not args.build_only and not _architectures_fit(options, labs, quiet=args.quiet):
        return EXIT_NO_GPU
    seed_how = (options.seed_source or {}).get("how", "given")

    def checkpoint(run: grade.GradingRun) -> None:
        report.write_json(run, json_path)  # the report so far, in case the grader is killed

    with _sigterm_as_interrupt():
        run = grade.grade(options, labs, report.Progress(sys.stdout, quiet=args.quiet), checkpoint)
        if args.profile and not run.interrupted:
            _profile_labs(run, options, quiet=args.quiet)
    if options.build_only:
        return _built_summary(options, labs, run)
    print()
    print(report.console_table(run))
    if run.seconds:
        print(phase_line(run.seconds))
    details = report.failure_details(run)
    if details:
        print("\n" + details)
    try:
        report.write_json(run, json_path)
        html_path = write_html(run, json_path)
        print(f"\nseed {options.seed} ({seed_how}); report: {json_path}" + (f", {html_path}" if html_path else ""))
    except OSError as exc:
        print(f"grader: error: cannot write the report {json_path}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILED
    if run.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if run.failed else EXIT_OK


def _architectures_fit(options: grade.Options, labs: list[str], quiet: bool = False) -> bool:
    """Whether every GPU this run will use can run the build (and the reference package), as
    grader/arch.py tells; if not, says which GPU, what the build has and the flag that fixes it."""
    mode = arch.PREBUILT if options.prebuilt else arch.NO_BUILD if options.no_build else arch.BUILD
    verdict = arch.for_grading(root=options.root, build_dir=options.build_dir, mode=mode, cuda_arch=options.cuda_arch,
                               reference_dir=options.reference_dir, labs=[] if options.skip_bench else labs,
                               devices=gpu.devices())
    for line in verdict.errors:
        print(f"grader: error: {line} Nothing was built or graded.", file=sys.stderr)
    if verdict.ok and not quiet:
        for line in verdict.notes:
            print(f"note: {line}", flush=True)
    return verdict.ok


PROFILE_BUILD_TIMEOUT_S = 600


def _profile_labs(run: grade.GradingRun, options: grade.Options, quiet: bool = False) -> None:
    """--profile: Nsight Compute's table of each lab's graded call, into the lab's report
    (profile.profile_lab); a lab that cannot be profiled gets the reason instead."""
    from grader import profile  # ncu's parsing is only needed here

    def say(line: str) -> None:
        if not quiet:
            print(line, flush=True)

    ncu = profile.find_ncu()
    labs = manifest.by_name(options.root)
    lock = gpu_lock.for_settings(options.config.grader)  # ncu replays kernels: alone on the GPU
    for lab in run.labs:
        if ncu is None:
            lab.profile = {"error": "ncu (Nsight Compute) was not found on PATH, in /usr/local/cuda/bin or "
                                    "/opt/nvidia/nsight-compute: install it with the CUDA toolkit"}
            continue
        if not lab.correctness.full or lab.lab not in labs:
            lab.profile = {"error": "not profiled: not every test passed (a profile of wrong code says little)"}
            continue
        bench = profile.bench_program(options.build_dir, lab.lab, options.impl)
        say(f"{lab.lab}: building {bench.name} for the profile...")
        built = build.build_targets(options.build_dir, [bench.name], PROFILE_BUILD_TIMEOUT_S, options.root)
        if not built.ok:
            lab.profile = {"error": f"{bench.name} did not build: {built.message.splitlines()[0]}"}
            continue
        try:
            with lock.exclusive(on_wait=lambda name=lab.lab: say(f"{name}: {grade.WAITING_FOR_GPU}...")) as hold:
                text, figures = profile.profile_lab(labs[lab.lab], bench, ncu=ncu, seed=options.seed,
                                                    say=lambda line, name=lab.lab: say(f"{name}: {line}"))
        except (profile.ProfileError, proc.LaunchError) as exc:
            lab.profile = {"error": str(exc)}
            continue
        lab.profile = {"text": text, "kernels": figures}
        if hold.missed:
            lab.notes.append(gpu_lock.alone_note(hold, timed=False))


def write_html(run: grade.GradingRun, json_path: Path) -> Path | None:
    """Write the HTML page of the report beside it (report.html); None, with a warning,
    when it cannot be written: the JSON is the report, the page only shows it."""
    path = json_path.with_suffix(".html")
    if path == json_path:  # --json report.html: never overwrite the report itself
        path = json_path.with_name(json_path.name + ".html")
    try:
        path.write_text(html_page.html(report.to_json(run)), encoding="utf-8")
    except OSError as exc:
        print(f"grader: warning: cannot write the HTML report {path}: {exc.strerror or exc}", file=sys.stderr)
        return None
    return path


def _built_summary(options: grade.Options, labs: list[str], run: grade.GradingRun) -> int:
    """--build-only: one line per lab; 0 when every library was built."""
    failed = 0
    for lab in labs:
        built = build.StudentBuild.load(options.student_dir / lab)
        ok = built is not None and built.ok
        failed += not ok
        first = (built.message.splitlines() or [""])[0] if built is not None else "no record"
        print(f"{lab}: {'built' if ok else 'not built: ' + first}")
    if run.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_FAILED if failed else EXIT_OK


class _sigterm_as_interrupt:
    """While active, SIGTERM (a CI job's timeout, `kill`) stops the grading like Ctrl-C,
    so the labs graded so far are still reported."""

    def __enter__(self) -> None:
        self.old = None
        if threading.current_thread() is threading.main_thread():
            self.old = signal.signal(signal.SIGTERM, _raise_interrupt)

    def __exit__(self, *exc: object) -> None:
        if self.old is not None:
            signal.signal(signal.SIGTERM, self.old)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _check_writable(path: Path) -> None:
    """UsageError now, before any grading, when the report could not be written at the end."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the report's folder {folder}: {exc.strerror or exc} (choose --json)") from None
    if path.is_dir():
        raise UsageError(f"the report path {path} is a folder: give --json a file name")
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK):
        raise UsageError(f"cannot write the report {path}: permission denied (choose --json)")


def resolve(args: argparse.Namespace) -> tuple[grade.Options, list[str]]:
    """Options and the list of labs to grade, or UsageError/ConfigError."""
    root, submission = _kit_root(args)
    kit_labs = config.kit_labs(root)
    cfg = config.load_course(root, args.config, kit_labs)
    if args.answer_feedback is not None:
        cfg.grader["answer_feedback"] = args.answer_feedback

    reference = args.reference or (Path(os.environ["LABKIT_REFERENCE_DIR"])
                                   if os.environ.get("LABKIT_REFERENCE_DIR") else None)
    if reference is not None and not reference.is_dir():
        raise UsageError(f"reference directory {reference} not found: --reference (or "
                         f"LABKIT_REFERENCE_DIR) names a directory holding {layout.SOLUTION_LIBRARIES} files")
    present, labs = _labs_to_grade(args, root, kit_labs, cfg)
    chosen = _choose_seed(args, cfg, submission or root, present)
    if args.cuda_arch is not None:
        try:
            args.cuda_arch = arch.parse_cuda_arch(args.cuda_arch)  # "80,90" -> "80;90", as CMake takes it
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    build_dir = (args.build_dir or default_build_dir(root, submission is not None, args.cuda_arch)).resolve()
    _check_student_dir(args)
    options = grade.Options(root=root, build_dir=build_dir, impl=args.impl, seed=chosen.seed, config=cfg,
                            reference_dir=reference.resolve() if reference else None,
                            cuda_arch=args.cuda_arch, no_build=args.no_build, skip_bench=args.skip_bench,
                            no_sanitizer=args.no_sanitizer, submission=submission,
                            seed_source=chosen.as_dict(),
                            student_root=args.student_dir.resolve() if args.student_dir else None,
                            build_only=args.build_only, prebuilt=args.prebuilt,
                            answer_keys=_answer_keys(args.answer_keys),
                            profile_cache=args.profile_cache.resolve() if args.profile_cache else None)
    return options, labs


def _kit_root(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The kit to build in (with --submission, the pristine kit) and the submission, if any."""
    root = (args.root or Path(__file__).resolve().parent.parent).resolve()
    if not root.is_dir():
        raise UsageError(f"--root {root} is not a directory: pass the kit's top directory")
    submission = None
    if args.profile and (args.submission is not None or args.student_dir is not None or args.skip_bench):
        # The profile runs the lab's own bench, the code linked in and no sandbox around it.
        raise UsageError("--profile profiles your own code in your build: it cannot be combined with "
                         "--submission or --student-dir (another's code would run outside the judge's sandbox) "
                         "or with --skip-bench")
    if args.submission is not None:
        if args.impl == grade.SOLUTION:
            raise UsageError("--submission grades a student's code: it cannot be combined with --impl solution")
        submission = args.submission.resolve()
        if not submission.is_dir():
            raise UsageError(f"--submission {args.submission} is not a directory: pass the student's repository")
        pristine = args.pristine or (Path(os.environ["LABKIT_PRISTINE"]) if os.environ.get("LABKIT_PRISTINE")
                                     else root)
        root = pristine.resolve()
        if not (root / "labs").is_dir():
            raise UsageError(f"pristine kit {pristine} has no labs/ folder: pass --pristine (or set "
                             "LABKIT_PRISTINE to) the instructor's copy of the kit")
    elif args.pristine is not None:
        raise UsageError("--pristine is used with --submission (the student repository to grade)")
    return root, submission


def _labs_to_grade(args: argparse.Namespace, root: Path, kit_labs, cfg: config.Config) -> tuple[list[str], list[str]]:
    """The kit's labs, and those to grade: the ones named (even if disabled), else every enabled one."""
    present = grade.present_labs(root)
    if args.labs:
        try:
            labs = manifest.resolve_names(args.labs, list(kit_labs))  # explicit labs run even if disabled
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    else:
        labs = [lab for lab in present if cfg.lab(lab).enabled]
        if not labs:
            raise UsageError(f"no enabled lab found under {root}/labs (looked for labs/<lab>/lab.json): "
                             "pass --root the kit's top directory")
    return present, labs


def _choose_seed(args: argparse.Namespace, cfg: config.Config, source: Path, present: list[str]) -> seed.SeedChoice:
    """--seed, or derived from the secret and the submission's files, or the config's, or random."""

    def identity() -> str:
        files = [item for lab in present for item in overlay.editable_files(source, lab, cfg.lab(lab).editable)]
        return seed.identity(files)

    if args.seed == "random":
        return seed.SeedChoice(secrets.randbelow(2**seed.SEED_BITS - 1) + 1, "random")
    try:
        return seed.choose(cli_seed=args.seed, secret_file=args.secret_file,
                           config_seed=cfg.grader["seed"], identity_of=identity)
    except seed.SecretError as exc:
        raise UsageError(str(exc)) from None


def _check_student_dir(args: argparse.Namespace) -> None:
    """--build-only and --prebuilt: one of them, with a --student-dir (holding libraries for --prebuilt)."""
    if (args.build_only or args.prebuilt) and args.student_dir is None:
        raise UsageError("--build-only and --prebuilt need --student-dir (where the submission's libraries go)")
    if args.build_only and args.prebuilt:
        raise UsageError("--build-only compiles and --prebuilt grades what it compiled: give one of them")
    if args.prebuilt and not (args.student_dir / layout.LIB).is_dir():
        raise UsageError(f"--prebuilt: {args.student_dir}/lib holds no libraries: run with --build-only first")


def _answer_keys(given: Path | None) -> Path | None:
    """--answer-keys, else $LABKIT_ANSWER_KEYS: a folder, checked now rather than after grading."""
    keys = given or (Path(os.environ["LABKIT_ANSWER_KEYS"]) if os.environ.get("LABKIT_ANSWER_KEYS") else None)
    if keys is not None and not keys.is_dir():
        raise UsageError(f"the answer keys {keys} are not a folder: --answer-keys (or LABKIT_ANSWER_KEYS) names "
                         "a folder holding <lab>/answer_key.json")
    return keys.resolve() if keys is not None else None


def default_build_dir(root: Path, submission: bool, cuda_arch: str | None) -> Path:
    """The developer's build (build/dev, the README's test command) when it is a Ninja build
    of this kit, so the README's two commands share one build; else build/grader. A
    submission, or another architecture, gets the grader's own folder."""
    dev = root / "build" / "dev"
    if not submission and cuda_arch is None and build.is_configured(dev, root):
        return dev
    return root / "build" / "grader"


def _seed(text: str) -> int | str:
    if text == "random":
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r} is neither an integer nor "random"') from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"{value} is out of range (0 <= N < 2**64)")
    return value
