"""The labs of a kit, from their manifests (labs/<lab>/lab.json).

A lab's facts live in its manifest, read by CMake (cmake/LabKitManifest.cmake) and
here: its place in the course, its interface functions, the files a student edits, the
patterns its code must or must not contain, the tests the sanitizer stage runs, its slow
variants and the reference variant it is graded against. The grader's lab list and
per-lab defaults come from here, so a new lab is one folder.

    python3 -m grader.manifest --check-tests LAB TEST_BINARY
        exits 1 when a sanitizer test the manifest names matches no test of the binary
        (the kit's CTest runs this for every lab)
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import rules as builtin_rules
from grader.answers import Question, parse_questions
from grader.variants import RequiredVariant
from grader.writeup import Rubric, parse_rubric
from grader.variants import parse as parse_variants

SCHEMA = "labkit-lab"
VERSION = 1


class ManifestError(Exception):
    """A manifest cannot be used; the message names the file and the key."""


@dataclass(frozen=True)
class Lab:
    """One lab's manifest."""

    name: str
    order: int
    title: str
    functions: tuple[str, ...]
    editable: tuple[str, ...]
    required_patterns: tuple[str, ...] = ()
    forbidden_patterns: tuple[str, ...] = ()
    # Built-in rules (grader.rules.BUILTIN_RULES) the lab's design lifts ("rules": {"allow"}):
    # their spelling and the static checks' symbols of the same family, e.g. vectorAdd's
    # "own_streams" for its streams part.
    allowed_rules: tuple[str, ...] = ()
    allowed_symbols: tuple[str, ...] = ()
    forbidden_symbols: tuple[str, ...] = ()
    sanitizer_tests: tuple[str, ...] = ()
    slow_variants: tuple[str, ...] = ()
    reference_variant: str = "default"
    required_variants: tuple[RequiredVariant, ...] = ()  # the lecture's steps a student registers
    questions: tuple[Question, ...] = ()  # graded questions, answered in labs/<lab>/answers.md
    # What each profiler figure means for this lab ("profile": {"hints": {...}}): keys dram,
    # sm, occupancy, stalls, and bank_conflicts / coalescing where the lab is about them.
    profile_hints: tuple[tuple[str, str], ...] = ()
    # The write-up graded by hand ("writeup": its rubric), written in labs/<lab>/WRITEUP.md.
    writeup: Rubric | None = None
    path: Path | None = field(default=None, compare=False)

    @property
    def answers_file(self) -> str:
        """The student's answers file, relative to the kit ('' when the lab asks no questions)."""
        return f"labs/{self.name}/answers.md" if self.questions else ""

    @property
    def writeup_file(self) -> str:
        """The student's write-up, relative to the kit ('' when the lab asks for none)."""
        return f"labs/{self.name}/WRITEUP.md" if self.writeup else ""

    @property
    def optional_files(self) -> list[str]:
        """The student's files besides the editable ones, taken from a submission when there:
        the answers and the write-up (without them, their points are not earned)."""
        return [rel for rel in (self.answers_file, self.writeup_file) if rel]

    @property
    def sanitizer_filter(self) -> str:
        """The GoogleTest filter of the sanitizer tests ('' when the manifest names none)."""
        return ":".join(self.sanitizer_tests)


def read(path: Path) -> Lab:
    """The manifest at `path`, validated."""
    fields = _Fields(path, _load(path))
    data, text, strings, table = fields.data, fields.text, fields.strings, fields.table
    order = data.get("order")
    if not isinstance(order, int) or isinstance(order, bool) or order < 0:
        raise ManifestError(f'{path}: "order" must be a whole number (the lab\'s place in the course)')
    name = text("name")
    if path.parent.name != name:
        raise ManifestError(f'{path}: "name" is {name!r} but the folder is labs/{path.parent.name}')
    functions = strings("functions", required=True)
    if not functions:
        raise ManifestError(f'{path}: "functions" must name the interface functions of {name}.h')
    editable = strings("editable", required=True)
    for item in editable:
        if item.startswith("/") or "\\" in item or ".." in item.split("/"):
            raise ManifestError(f'{path}: "editable" paths are relative to the kit and stay inside it: {item!r}')
    rules, symbols = table("rules"), table("symbols")
    allowed_rules = strings("allow", rules)
    unknown = [name for name in allowed_rules if name not in builtin_rules.BUILTIN_RULES]
    if unknown:
        raise ManifestError(f'{path}: "rules"."allow" names {unknown[0]!r}, which is no built-in rule '
                            f'({", ".join(builtin_rules.BUILTIN_RULES)})')
    try:
        questions = parse_questions(data.get("questions"), str(path))
        required_variants = parse_variants(data.get("required_variants"), str(path))
        writeup = parse_rubric(data.get("writeup"), str(path))
    except ValueError as exc:
        raise ManifestError(str(exc)) from exc
    hints = table("profile").get("hints", {})
    known = ("dram", "sm", "occupancy", "stalls", "bank_conflicts", "coalescing")
    if not isinstance(hints, dict) or not all(k in known and isinstance(v, str) and v for k, v in hints.items()):
        raise ManifestError(f'{path}: "profile"."hints" maps {", ".join(known)} to sentences')
    return Lab(name=name, order=order, title=text("title", name), functions=functions, editable=editable,
               required_patterns=strings("required", rules), forbidden_patterns=strings("forbidden", rules),
               allowed_rules=allowed_rules,
               allowed_symbols=strings("allow", symbols), forbidden_symbols=strings("forbid", symbols),
               sanitizer_tests=strings("sanitizer_tests"), slow_variants=strings("slow_variants"),
               reference_variant=text("reference_variant", "default"),
               required_variants=required_variants, questions=questions,
               profile_hints=tuple(hints.items()), writeup=writeup, path=path)


def _load(path: Path) -> dict[str, Any]:
    """The manifest's JSON object, of this schema and version (else ManifestError)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ManifestError(f"{path}: cannot read the lab manifest: {exc.strerror or exc}") from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise ManifestError(f"{path}: not valid JSON: {exc}") from exc
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise ManifestError(f'{path}: not a lab manifest (it needs "schema": "{SCHEMA}")')
    if data.get("version") != VERSION:
        raise ManifestError(f"{path}: manifest version {data.get('version')!r}; this kit reads version {VERSION}")
    return data


class _Fields:
    """Typed reads of a manifest's keys: a wrong type is a ManifestError naming the key."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path, self.data = path, data

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default)
        if not isinstance(value, str) or not value:
            raise ManifestError(f'{self.path}: "{key}" must be a non-empty string')
        return value

    def strings(self, key: str, where: dict[str, Any] | None = None, required: bool = False) -> tuple[str, ...]:
        source = self.data if where is None else where
        value = source.get(key, None if required else [])
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ManifestError(f'{self.path}: "{key}" must be a list of non-empty strings')
        return tuple(value)

    def table(self, key: str) -> dict[str, Any]:
        value = self.data.get(key, {})
        if not isinstance(value, dict):
            raise ManifestError(f'{self.path}: "{key}" must be an object')
        return value


def labs(root: Path) -> list[Lab]:
    """Every lab of the kit at `root` (a folder of labs/ with a lab.json), in course order."""
    folder = root / "labs"
    found = [read(p) for p in sorted(folder.glob("*/lab.json"))] if folder.is_dir() else []
    return sorted(found, key=lambda lab: (lab.order, lab.name))


def names(root: Path) -> list[str]:
    """The names of the kit's labs, in course order."""
    return [lab.name for lab in labs(root)]


def by_name(root: Path) -> dict[str, Lab]:
    return {lab.name: lab for lab in labs(root)}


def resolve_name(name: str, known: list[str]) -> str:
    """The course's spelling of `name` (case-insensitive), or ValueError with a suggestion."""
    by_lower = {lab.lower(): lab for lab in known}
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    close = difflib.get_close_matches(name.lower(), by_lower, n=1)
    hint = f"did you mean {by_lower[close[0]]}? " if close else ""
    raise ValueError(f"unknown lab {name!r}: {hint}the labs are {', '.join(known) or '(none found)'}")


def resolve_names(names_given: list[str], known: list[str]) -> list[str]:
    """`names_given` in the course's spelling and order, or ValueError for the first unknown one."""
    wanted = {resolve_name(name, known) for name in names_given}
    return [lab for lab in known if lab in wanted]


def unmatched_tests(lab: Lab, listed: list[str]) -> list[str]:
    """The manifest's sanitizer tests (GoogleTest patterns) that match none of `listed`."""
    return [pattern for pattern in lab.sanitizer_tests
            if not any(fnmatch.fnmatchcase(test, pattern) for test in listed)]


def _check_tests(lab_name: str, binary: str, root: Path) -> int:
    from grader.gtest import parse_test_list  # here: grader.gtest imports nothing from this module's users
    lab = by_name(root).get(lab_name)
    if lab is None:
        print(f"no manifest labs/{lab_name}/lab.json under {root}", file=sys.stderr)
        return 2
    try:
        done = subprocess.run([binary, "--gtest_list_tests"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print(f"cannot list the tests of {binary}: {exc}", file=sys.stderr)
        return 2
    listed = parse_test_list(done.stdout)
    missing = unmatched_tests(lab, listed)
    for pattern in missing:
        print(f"{lab.path}: the sanitizer test {pattern!r} matches no test of {Path(binary).name}: "
              "rename it in \"sanitizer_tests\" to a test that exists", file=sys.stderr)
    if not lab.sanitizer_tests:
        print(f"{lab.path}: names no sanitizer tests; the grader's sanitizer stage will run the GPU tests at "
              "tail sizes instead")
    if not missing:
        print(f"{lab_name}: {len(lab.sanitizer_tests)} sanitizer test pattern(s), each matches a test")
    disagree = _check_list_file(binary)
    return 1 if missing or disagree else 0


# The CPU tests: they run in a moment on any machine, with or without a GPU.
_LIST_CHECK_FILTER = "*Cpu*:-*Gpu*"


def _check_list_file(binary: str) -> bool:
    """Whether the list the binary writes as it runs (--list-file, which the grader reads)
    disagrees with its --gtest_list_tests (printed when it does)."""
    from grader.gtest import parse_test_list
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tests.list"
        try:
            listed = subprocess.run([binary, "--gtest_list_tests", f"--gtest_filter={_LIST_CHECK_FILTER}"],
                                    capture_output=True, text=True, timeout=60)
            subprocess.run([binary, f"--gtest_filter={_LIST_CHECK_FILTER}", f"--list-file={path}"],
                           capture_output=True, text=True, timeout=120)
            written = path.read_text().split() if path.is_file() else None
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"cannot run {binary}: {exc}", file=sys.stderr)
            return True
    expected = parse_test_list(listed.stdout)
    if written != expected:
        print(f"{Path(binary).name} --list-file wrote {written if written is None else len(written)} test name(s), "
              f"--gtest_list_tests listed {len(expected)}: the grader would count tests that never ran wrongly",
              file=sys.stderr)
        return True
    print(f"{Path(binary).name}: --list-file agrees with --gtest_list_tests ({len(expected)} CPU tests)")
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m grader.manifest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--check-tests", nargs=2, metavar=("LAB", "TEST_BINARY"),
                        help="check that the manifest's sanitizer tests exist in the test binary")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                        help="the kit's top directory")
    args = parser.parse_args(argv)
    try:
        if args.check_tests:
            return _check_tests(args.check_tests[0], args.check_tests[1], args.root)
        for lab in labs(args.root):
            print(f"{lab.order:3} {lab.name:16} {', '.join(lab.functions)}")
        return 0
    except ManifestError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
