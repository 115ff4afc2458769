"""Handouts agree with the manifests, both ways.

Every graded question, lecture step, further part and find-the-bug exercise that a
handout (handouts/<lab>.md) names exists in its lab: in labs/<lab>/lab.json, and a
question also as a heading of the student's answer sheet (labs/<lab>/answers.md). And
every question, step, part and fix of a manifest is named where a student looks for it:
a question in the handout or the answer sheet, a step in the handout's table of the
lecture's steps, a fix in its "Find the bug" section, each of them in its row of the
grading table. A failure names the lab, the id and the file.

What counts as naming (the handouts' own conventions):
- a graded question: an id in backticks inside "(Graded: ...)" (also "Graded," and
  "graded:" inside parentheses), or after "question"/"questions" (`` question `id` ``,
  `` Questions `a` and `b` ask ``);
- a step: a row of the table under "### The lecture's steps" (`` | `name` | ... | ``);
- a fix: any `fix_...` in backticks; a part: an id in backticks in the grading table's
  "further parts" row;
- `Registered/<Suite>.*/<name>`: a test of the lab (the suite is in its tests) for the
  variant <name> (a Fix... suite for a fix, a Part... suite for a part).
An identifier in those places that is none of these must be one of the lab's own names
(its functions, a registered variant, or an identifier of its code) to pass: a question
renamed in the manifest but not in the handout fails.
"""

from __future__ import annotations

import re
import unittest
from pathlib import Path

from grader import manifest, variants
from grader.answers import Question, parse_answers
from grader.manifest import Lab
from grader.variants import RequiredVariant

KIT = Path(__file__).resolve().parents[2]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TICKED = re.compile(r"`([^`\n]+)`")
_GRADED = re.compile(r"(?<!not )\b[Gg]raded\b(?=[,:)]| in\b)|\([Gg]raded\b")
_QUESTION_LIST = re.compile(r"\b[Qq]uestions?\s+(?=`)")
_REGISTERED = re.compile(r"Registered/([A-Za-z0-9_<>*]+)\.\*(?:/([A-Za-z0-9_<>]+))?")
_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRINGS = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_VARIANT_NAME = re.compile(r'LAB_REGISTER_VARIANT\(\s*\w+\s*,\s*"([^"]+)"')


def ticked_identifiers(text: str) -> list[str]:
    """The identifiers written alone in backticks (`name`, not `a.md` or `x = 1`)."""
    return [t for t in _TICKED.findall(text) if _IDENTIFIER.fullmatch(t)]


def _to_close(text: str, start: int) -> int:
    """Where the parenthesis around `start` closes (the end of the paragraph if none does)."""
    depth = 0
    for index in range(start, len(text)):
        char = text[index]
        if char == "(":
            depth += 1
        elif char == ")":
            if depth == 0:
                return index
            depth -= 1
        elif text.startswith("\n\n", index):
            return index
    return len(text)


def graded_mentions(text: str) -> list[str]:
    """Identifiers a handout names as graded questions (see the module's docstring)."""
    found: list[str] = []
    for match in _GRADED.finditer(text):
        start = match.start() + (1 if text[match.start()] == "(" else 0)
        found += ticked_identifiers(text[start:_to_close(text, start)])
    for match in _QUESTION_LIST.finditer(text):
        # `a`, `b` (a note) and `c`: up to the end of the sentence.
        rest = text[match.end():]
        end = re.search(r"[.;:](?:\s|$)|\n\n", rest)
        found += ticked_identifiers(rest[:end.start() if end else len(rest)])
    return found


def section(text: str, heading: str) -> str:
    """The text under `heading` (a whole line, e.g. "### Find the bug") up to the next heading
    of the same or a higher level ('' when the handout has no such heading)."""
    lines = text.splitlines()
    if heading not in lines:
        return ""
    level = len(heading) - len(heading.lstrip("#"))
    body: list[str] = []
    for line in lines[lines.index(heading) + 1:]:
        hashes = len(line) - len(line.lstrip("#"))
        if 0 < hashes <= level and line[hashes:hashes + 1] == " ":
            break
        body.append(line)
    return "\n".join(body)


def table_names(text: str) -> list[str]:
    """The names in the first column of a Markdown table (`` | `name` | ... | ``)."""
    return re.findall(r"^\|\s*`([^`]+)`\s*\|", text, re.MULTILINE)


def grading_row(text: str, part: str) -> str | None:
    """The grading table's row of `part` ("lecture steps", "further parts", ...), or None."""
    for line in section(text, "## Grading").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if cells and cells[0] == part:
            return line
    return None


def code_names(root: Path, lab: str) -> set[str]:
    """The identifiers of a lab's code (comments and strings left out: a question id in a
    comment is no proof that it is a name of the code) and the names of the variants its
    skeleton and reference register."""
    names: set[str] = set()
    for folder in (root / "labs" / lab, root / "solutions" / lab):
        for path in sorted(folder.glob("*")):
            if path.suffix not in (".cu", ".cuh", ".h", ".cpp") or not path.is_file():
                continue
            code = path.read_text(encoding="utf-8", errors="replace")
            names |= set(_VARIANT_NAME.findall(code))
            if folder.parent.name == "labs":
                names |= set(_IDENTIFIER.findall(_STRINGS.sub(" ", _COMMENTS.sub(" ", code))))
    return names


def test_suites(root: Path, lab: str) -> str:
    """The source of a lab's tests, where its GoogleTest suites are declared."""
    return "\n".join(p.read_text(encoding="utf-8", errors="replace")
                     for p in sorted((root / "labs" / lab).glob("*_test.cu")))


def problems(lab: Lab, handout: str, sheet: str, *, known: set[str] = frozenset(), tests: str = "",
             handout_file: str = "", sheet_file: str = "", manifest_file: str = "",
             solution_sheet: str | None = None, solution_file: str = "") -> list[str]:
    """What disagrees between one lab's handout, answer sheet(s) and manifest: one line each,
    naming the lab, the id and the file."""
    handout_file = handout_file or f"handouts/{lab.name}.md"
    sheet_file = sheet_file or f"labs/{lab.name}/answers.md"
    manifest_file = manifest_file or f"labs/{lab.name}/lab.json"
    questions = {q.id for q in lab.questions}
    by_kind = {kind: [v.name for v in lab.required_variants if v.kind == kind] for kind in variants.KINDS}
    others = set(lab.functions) | {v.name for v in lab.required_variants} | {lab.reference_variant} | set(known)
    headings = set(parse_answers(sheet)) | set(re.findall(r"^##\s+([A-Za-z0-9_-]+)\s*$", sheet, re.MULTILINE))
    found: list[str] = []

    def say(what: str) -> None:
        if what not in found:
            found.append(f"{lab.name}: {what}")

    # Questions: what the handout names exists; what the manifest asks is named.
    for name in dict.fromkeys(graded_mentions(handout)):
        if name in questions:
            if name not in headings:
                say(f"{handout_file} names the graded question `{name}`, but {sheet_file} has no "
                    f"`## {name}` heading to answer it under")
        elif name not in others:
            say(f"{handout_file} names `{name}` as a graded question, but {manifest_file} has no question {name}")
    for name in sorted(headings - questions):
        say(f"{sheet_file} has a `## {name}` heading, but {manifest_file} has no question {name}")
    if solution_sheet is not None:
        for name in sorted(set(parse_answers(solution_sheet)) - questions):
            say(f"{solution_file} answers `{name}`, but {manifest_file} has no question {name}")
    for name in sorted(questions):
        if f"`{name}`" not in handout and name not in headings:
            say(f"{manifest_file} asks the question {name}, but neither {handout_file} nor {sheet_file} names it")

    # Steps: the handout's table of the lecture's steps, and the grading row.
    steps_section = section(handout, "### The lecture's steps")
    table = table_names(steps_section)
    for name in table:
        if name not in by_kind[variants.STEP]:
            say(f"{handout_file} lists `{name}` among the lecture's steps, but {manifest_file} has no step {name}")
    def grading_row_both_ways(title: str, names: list[str], noun: str, also: tuple[str, ...] = (),
                              has: str = "has the") -> None:
        """The grading row `title` names only `names` (or `also`), and names each of them."""
        row = grading_row(handout, title) or ""
        for name in ticked_identifiers(row):
            if name not in names and name not in also:
                say(f"{handout_file}'s grading row \"{title}\" names `{name}`, but {manifest_file} has no "
                    f"{noun} {name}")
        for name in names:
            if f"`{name}`" not in row:
                say(f"{manifest_file} {has} {noun} {name}, but {handout_file}'s grading row \"{title}\" "
                    "does not name it")

    grading_row_both_ways("lecture steps", by_kind[variants.STEP], "step", tuple(lab.functions), has="requires the")
    for name in by_kind[variants.STEP]:
        if name not in table:
            say(f"{manifest_file} requires the step {name}, but the table under \"### The lecture's steps\" "
                f"of {handout_file} does not list it")

    # Fixes: any `fix_...` is an exercise of the manifest; each exercise has its section and row.
    for name in dict.fromkeys(ticked_identifiers(handout)):
        if name.startswith("fix_") and name not in by_kind[variants.FIX]:
            say(f"{handout_file} names `{name}`, but {manifest_file} has no find-the-bug exercise {name}")
    fix_section = section(handout, "### Find the bug")
    grading_row_both_ways("find the bug", by_kind[variants.FIX], "find-the-bug exercise")
    for name in by_kind[variants.FIX]:
        if f"`{name}`" not in fix_section:
            say(f"{manifest_file} has the find-the-bug exercise {name}, but {handout_file} has no "
                "\"### Find the bug\" section that names it")

    # Parts: the grading row names them.
    grading_row_both_ways("further parts", by_kind[variants.PART], "further part")

    # Test names: the suite is the lab's, the variant its manifest's, of the suite's kind.
    for suite, name in dict.fromkeys(_REGISTERED.findall(handout)):
        if not _IDENTIFIER.fullmatch(suite):
            continue  # `Registered/<Suite>.*/<name>`, `Registered/Fix*Gpu.*`: a pattern, not a test
        if tests and not re.search(rf"\b{re.escape(suite)}\b", tests):
            say(f"{handout_file} names the tests Registered/{suite}.*, but labs/{lab.name}'s tests have no "
                f"suite {suite}")
        if not name or not _IDENTIFIER.fullmatch(name):
            continue
        kind = variants.FIX if suite.startswith("Fix") else variants.PART if suite.startswith("Part") else None
        wanted = by_kind[kind] if kind else [v.name for v in lab.required_variants]
        if name not in wanted:
            what = {variants.FIX: "find-the-bug exercise", variants.PART: "further part"}.get(kind, "step")
            say(f"{handout_file} names the tests Registered/{suite}.*/{name}, but {manifest_file} has no {what} {name}")
    return found


class KitHandouts(unittest.TestCase):
    """The kit's own handouts, answer sheets and manifests."""

    def test_every_lab_agrees_with_its_handout(self):
        labs = manifest.labs(KIT)
        self.assertTrue(labs, "no labs found")
        for lab in labs:
            with self.subTest(lab=lab.name):
                handout = KIT / "handouts" / f"{lab.name}.md"
                self.assertTrue(handout.is_file(), f"{lab.name}: no handout handouts/{lab.name}.md")
                sheet = KIT / "labs" / lab.name / "answers.md"
                solution = KIT / "solutions" / lab.name / "answers.md"
                found = problems(lab, handout.read_text(encoding="utf-8"),
                                 sheet.read_text(encoding="utf-8") if sheet.is_file() else "",
                                 known=code_names(KIT, lab.name), tests=test_suites(KIT, lab.name),
                                 solution_sheet=solution.read_text(encoding="utf-8") if solution.is_file() else None,
                                 solution_file=f"solutions/{lab.name}/answers.md")
                self.assertEqual(found, [], "\n".join(found))


# --- the checks themselves, on a made-up lab -----------------------------------------------

LAB = Lab(name="demo", order=1, title="demo", functions=("demo", "fix_demo", "demo_host"), editable=(),
          reference_variant="tiled",
          required_variants=(RequiredVariant("simple", "one per thread", 1.0),
                             RequiredVariant("tiled", "tiles", 1.0),
                             RequiredVariant("fix_demo", "find the bug", 1.0, variants.FIX),
                             RequiredVariant("demo_host", "the host program", 2.0, variants.PART)),
          questions=(Question("blocks_1025", "blocks", "number", 1.0, "key"),
                     Question("why_slow", "why", "text", 2.0, "manual")))

HANDOUT = """# demo

## Your task

### The lecture's steps

| name | the step |
|:--|:--|
| `simple` | one thread per element |
| `tiled` | shared-memory tiles |

### Find the bug

Your file starts with the lecture's kernel as `fix_demo`:

    ./build/dev/bin/demo_test --gtest_filter='*FixDemo*'

Question `why_slow` asks what went wrong. It earns its point when
`Registered/FixDemoGpu.*/fix_demo` passes.

## Grading

| part | points | how it is graded |
|:--|--:|:--|
| lecture steps | 2 | 1 point for each of `simple` and `tiled` registered for `demo` |
| find the bug | 1 | when the tests of `fix_demo` pass |
| further parts | 2 | 2 points for `demo_host` (`Registered/PartDemoHostGpu.*/demo_host`) |

## Questions

1. How many blocks for n = 1025 with `tiled`? (Graded: `blocks_1025`, counting the
   partial block (it has threads past n).)
"""

SHEET = "# demo\n\n## blocks_1025\nHow many?\n\nAnswer:\n\n## why_slow\nWhy?\n\nAnswer:\n"
TESTS = "class FixDemoGpu {};\nclass PartDemoHostGpu {};\n"


def check(handout: str = HANDOUT, sheet: str = SHEET, lab: Lab = LAB, **options) -> list[str]:
    return problems(lab, handout, sheet, tests=options.pop("tests", TESTS), **options)


class Checks(unittest.TestCase):
    """Each rule of `problems`, on a lab that agrees and on one change that breaks it."""

    def test_a_lab_that_agrees(self):
        self.assertEqual(check(), [])

    def test_graded_mentions(self):
        text = ("(Graded: `a_b` and the rest, `c` (nested `d`).) Questions `e` (a note) and `f` ask. "
                "Question `g`: more `h`. not graded: `i`. `j` is graded: `k`.\n\n(Graded) `l`")
        self.assertEqual(graded_mentions(text), ["a_b", "c", "d", "k", "e", "f", "g"])

    def test_an_unknown_question_is_named_with_its_file(self):
        found = check(HANDOUT.replace("(Graded: `blocks_1025`", "(Graded: `blocks_1024`"))
        self.assertIn("demo: handouts/demo.md names `blocks_1024` as a graded question, but labs/demo/lab.json "
                      "has no question blocks_1024", found)
        # A question renamed in the handout leaves the manifest's unnamed there, but the
        # answer sheet still names it: that alone is allowed.
        self.assertEqual(len(found), 1, found)

    def test_the_labs_own_names_are_not_questions(self):
        text = HANDOUT.replace("(Graded: `blocks_1025`", "(Graded: `blocks_1025`, with `demo` and `helper_kernel`")
        self.assertEqual([line for line in check(text) if "helper_kernel" in line],
                         ["demo: handouts/demo.md names `helper_kernel` as a graded question, but labs/demo/lab.json "
                          "has no question helper_kernel"])
        self.assertEqual(check(text, known={"helper_kernel"}), [])

    def test_a_question_needs_its_heading_and_a_mention(self):
        sheet = SHEET.replace("## why_slow\nWhy?\n\nAnswer:\n", "")
        self.assertEqual(check(sheet=sheet), [
            "demo: handouts/demo.md names the graded question `why_slow`, but labs/demo/answers.md has no "
            "`## why_slow` heading to answer it under"])
        text = HANDOUT.replace("Question `why_slow` asks what went wrong. ", "")
        self.assertEqual(check(text, sheet), [
            "demo: labs/demo/lab.json asks the question why_slow, but neither handouts/demo.md nor "
            "labs/demo/answers.md names it"])
        self.assertEqual(check(sheet=SHEET + "\n## old_question\nAnswer:\n"), [
            "demo: labs/demo/answers.md has a `## old_question` heading, but labs/demo/lab.json has no question "
            "old_question"])
        self.assertEqual(check(solution_sheet=SHEET + "\n## gone\nAnswer: 3\n", solution_file="solutions/demo/answers.md"),
                         ["demo: solutions/demo/answers.md answers `gone`, but labs/demo/lab.json has no question gone"])

    def test_steps_both_ways(self):
        extra = HANDOUT.replace("| `tiled` | shared-memory tiles |", "| `tiled` | shared-memory tiles |\n| `tiled32` | more |")
        self.assertEqual(check(extra), ["demo: handouts/demo.md lists `tiled32` among the lecture's steps, but "
                                        "labs/demo/lab.json has no step tiled32"])
        missing = HANDOUT.replace("| `tiled` | shared-memory tiles |\n", "")
        self.assertEqual(check(missing), ["demo: labs/demo/lab.json requires the step tiled, but the table under "
                                          "\"### The lecture's steps\" of handouts/demo.md does not list it"])
        row = HANDOUT.replace("`simple` and `tiled` registered", "`simple` and `tiled64` registered")
        self.assertEqual(sorted(check(row)), sorted([
            "demo: handouts/demo.md's grading row \"lecture steps\" names `tiled64`, but labs/demo/lab.json has no "
            "step tiled64",
            "demo: labs/demo/lab.json requires the step tiled, but handouts/demo.md's grading row \"lecture steps\" "
            "does not name it"]))

    def test_fixes_both_ways(self):
        renamed = HANDOUT.replace("as `fix_demo`:", "as `fix_demo_kernel`:")
        self.assertIn("demo: handouts/demo.md names `fix_demo_kernel`, but labs/demo/lab.json has no find-the-bug "
                      "exercise fix_demo_kernel", check(renamed))
        no_section = HANDOUT.replace("### Find the bug", "### The bug")
        self.assertIn("demo: labs/demo/lab.json has the find-the-bug exercise fix_demo, but handouts/demo.md has no "
                      "\"### Find the bug\" section that names it", check(no_section))
        row = HANDOUT.replace("when the tests of `fix_demo` pass", "when its tests pass")
        self.assertEqual(check(row), ["demo: labs/demo/lab.json has the find-the-bug exercise fix_demo, but "
                                      "handouts/demo.md's grading row \"find the bug\" does not name it"])

    def test_parts_both_ways(self):
        row = HANDOUT.replace("2 points for `demo_host` (", "2 points for `demo_host_pinned` (")
        self.assertEqual(sorted(check(row)), sorted([
            "demo: handouts/demo.md's grading row \"further parts\" names `demo_host_pinned`, but labs/demo/lab.json "
            "has no further part demo_host_pinned",
            "demo: labs/demo/lab.json has the further part demo_host, but handouts/demo.md's grading row "
            "\"further parts\" does not name it"]))

    def test_registered_test_names(self):
        wrong_kind = HANDOUT.replace("Registered/FixDemoGpu.*/fix_demo", "Registered/FixDemoGpu.*/demo_host")
        self.assertEqual(check(wrong_kind), ["demo: handouts/demo.md names the tests Registered/FixDemoGpu.*/demo_host, "
                                             "but labs/demo/lab.json has no find-the-bug exercise demo_host"])
        no_suite = HANDOUT.replace("Registered/FixDemoGpu.*/fix_demo", "Registered/FixDemoTiledGpu.*/fix_demo")
        self.assertEqual(check(no_suite), ["demo: handouts/demo.md names the tests Registered/FixDemoTiledGpu.*, but "
                                           "labs/demo's tests have no suite FixDemoTiledGpu"])
        pattern = HANDOUT + "\nEvery `Registered/<Suite>.*/<name>` and `Registered/Fix*Gpu.*` pattern.\n"
        self.assertEqual(check(pattern), [])


if __name__ == "__main__":
    unittest.main()
