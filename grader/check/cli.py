"""`python3 -m grader check`: the static checks from the command line.

Exit status: 0 clean, 1 findings (or a file that could not be checked), 2 bad usage (one
line on stderr), 130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from grader import config, manifest, rules
from grader.check.findings import CheckResult
from grader.check.stage import check_lab
from grader.check.tools import find_nvcc, tools_missing

EXIT_CLEAN, EXIT_FOUND, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _UsageError(Exception):
    """Bad command line; the message says what to do."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises _UsageError instead of exiting."""
    def error(self, message: str):  # one line instead of usage + exit inside argparse
        raise _UsageError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python3 -m grader check`."""
    parser = _Parser(prog="python3 -m grader check",
                     description="Static checks on what each lab's student file does (its includes, the functions "
                                 "its compiled object uses and defines, code that runs at load time, raw system "
                                 "calls), not on how it is spelled. Needs nvcc and binutils; no GPU.",
                     epilog="Exit status: 0 clean, 1 findings or a file that could not be checked, 2 bad usage.")
    parser.add_argument("labs", nargs="*", metavar="lab", help="labs to check (default: every lab of the kit)")
    parser.add_argument("--root", type=Path, metavar="KIT",
                        help="the kit's top directory (default: the directory holding grader/)")
    parser.add_argument("--submission", type=Path, metavar="DIR",
                        help="check a student's repository DIR: its editable files are copied into a clean "
                             "temporary folder and compiled against the kit's headers (default: the kit's own files)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the findings as JSON to FILE")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the course's grading config (default: <root>/grader.toml if present): a lab's "
                             "`allow` list lifts those rules' findings, as in grading")
    parser.add_argument("--nvcc", metavar="PATH",
                        help="the nvcc to use (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds allowed per lab (default: 120)")
    parser.add_argument("--quiet", action="store_true", help="print only the findings and the summary lines")
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader check`; returns the exit status."""
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
        root, source, labs = _resolve(args)
        settings = config.load_course(root, args.config)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (_UsageError, manifest.ManifestError, config.ConfigError) as exc:
        print(f"grader check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    report: dict[str, object] = {"schema": "labkit-check", "version": 1, "root": str(root),
                                 "submission": str(source) if args.submission else None, "labs": {}}
    status = EXIT_CLEAN
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="labkit-check-") as tmp:
        try:
            status = _check_labs(root, source, labs, Path(tmp), args, report, settings)
        except KeyboardInterrupt:  # Ctrl-C: what was checked so far, and no traceback
            interrupted = True
            print(f"\ngrader check: interrupted: {len(report['labs'])} of {len(labs)} labs checked",  # type: ignore[arg-type]
                  file=sys.stderr)
            report["interrupted"] = True
    if status == EXIT_USAGE:
        return status
    if args.json:
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"grader check: error: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_INTERRUPTED if interrupted else status


def _check_labs(root: Path, source: Path, labs: list[manifest.Lab], tmp: Path, args: argparse.Namespace,
                report: dict[str, object], settings: config.Config) -> int:
    """Checks each lab in turn, printing its findings and filling report["labs"]; the exit status.
    A finding of a rule the course's config allows for the lab is left out, and said once."""
    status = EXIT_CLEAN
    for lab in labs:
        if not args.quiet:
            print(f"[{lab.name}] checking ...", flush=True)
        result = _check_one(root, source, lab, tmp, args)
        allowed = set(settings.lab(lab.name).allow)
        lifted = sorted({f.rule for f in result.findings if f.rule in allowed})
        if lifted:
            result.findings = [f for f in result.findings if f.rule not in allowed]
            print(f"{lab.name}: note: the course's config allows {', '.join(lifted)}: those findings are left out")
        for finding in result.findings:
            print(finding.message)
        if not result.ok:
            print(f"{lab.name}: NOT CHECKED: {result.message}")
            status = EXIT_FOUND
        elif result.findings:
            print(f"{lab.name}: {len(result.findings)} finding(s)")
            status = EXIT_FOUND
        else:
            print(f"{lab.name}: clean")
        report["labs"][lab.name] = result.as_dict()  # type: ignore[index]
        if result.ok is False and result.message.startswith("nvcc not found"):
            print(f"grader check: error: {result.message}", file=sys.stderr)
            return EXIT_USAGE
    return status


def _resolve(args: argparse.Namespace) -> tuple[Path, Path, list[manifest.Lab]]:
    """The kit, where the files come from, and the labs to check; _UsageError for bad input."""
    root = (args.root or Path(__file__).resolve().parents[2]).resolve()  # grader/check/cli.py
    if not (root / "labs").is_dir():
        raise _UsageError(f"--root {root} has no labs/ folder: pass the kit's top directory")
    source = root
    if args.submission is not None:
        source = args.submission.resolve()
        if not source.is_dir():
            raise _UsageError(f"--submission {args.submission} is not a directory: pass the student's repository")
    known = manifest.labs(root)
    if not known:
        raise _UsageError(f"no lab found under {root}/labs (each lab needs labs/<lab>/lab.json)")
    by_name = {lab.name: lab for lab in known}
    try:
        wanted = manifest.resolve_names(args.labs, list(by_name)) if args.labs else list(by_name)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    if find_nvcc(args.nvcc) is None:
        where = args.nvcc or "looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin"
        raise _UsageError(f"nvcc not found ({where}): install the CUDA toolkit or pass --nvcc")
    if tools_missing():
        raise _UsageError(f"{', '.join(tools_missing())} not found: install binutils")
    return root, source, [by_name[name] for name in wanted]


def _check_one(root: Path, source: Path, lab: manifest.Lab, tmp: Path, args: argparse.Namespace) -> CheckResult:
    """Checks one lab's editable files from `source` (the kit or a submission)."""
    files = rules.editable_paths(source, lab.name, list(lab.editable))
    missing = [p for p in files if not p.is_file() or p.is_symlink()]
    if missing or not files:
        rel = ", ".join(_display(source, p) for p in missing) or "its editable files"
        return CheckResult(ok=False, message=f"{rel} not found (or not a regular file): nothing to check")
    work = tmp / lab.name
    if source != root:  # a submission: only its editable files, in a clean folder, against the kit
        copies = []
        for path in files:
            target = work / "submission" / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copies.append(target)
        files = copies
    return check_lab(root, lab, files, work_dir=work / "submission" if source != root else work,
                     nvcc=args.nvcc, timeout=args.timeout)


def _display(base: Path, path: Path) -> str:
    """`path` relative to `base` where it can be, for a message."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)
