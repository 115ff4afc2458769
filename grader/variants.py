"""The lecture's progression, graded: the variants a lab requires a student to register.

A lab's manifest lists the steps of the lecture a student implements besides the graded
function ("required_variants": name, title, points), each registered in the student's
file with LAB_REGISTER_VARIANT(<function>, "<name>", ...). The kit's tests check every
registered variant: their cases are named `Registered/<Suite>.<Test>/<name>`. A required
variant earns its points when it is registered (it has such tests) and all of them pass.

An entry with "kind": "fix" is a find-the-bug exercise instead: an interface function of
the same name whose code the skeleton gives with the lecture's bug in it. Its tests carry
the same kind of name (`Registered/<Suite>.<Test>/<name>`), so it is graded the same way,
but it is not a variant of the graded function and the bench does not time it. An entry
with "kind": "part" is graded the same way: a further interface function the student
writes from a stub (a new task of the lab, such as scan's sparse matrix-vector product),
tested in a suite Part*Gpu.

A step must also be work of its own (check/steps.py, distinct()): it launches a kernel whose code
no earlier step launches, read from the compiled object; and, where the bench timed it, its
time lies within a band of the reference's same step (BAND_FAST, BAND_SLOW). A step that
fails either earns nothing, and the report names both registrations.

The bench times the required variants beside the reference's variants of the same name
(`ref:<name>`), so the report can show the student's own progression table: time,
throughput, % of peak and speed against the lecture's version of the same step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

PASSED, FAILED, MISSING, NOT_TESTED = "passed", "failed", "not registered", "not tested"
# A step whose tests passed but whose work is another step's (check/steps.py), or whose time is
# not that of the lecture's version of the step: no point.
REUSED, OFF_BAND = "same work as another step", "not this step's speed"
STEP, FIX, PART = "step", "fix", "part"  # a lecture step the student writes; a given bug the
# student fixes; a further graded part (an interface function of its own, as SpMV in scan)
KINDS = (STEP, FIX, PART)
SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")
# A step's time must fall within a band of the reference's version of the same step: at
# most BAND_FAST times as fast, at least 1 / BAND_SLOW times (the speed is t_reference /
# t_student). The reference against itself is 1.0 within a few percent; the lecture's steps
# are about 1.5x or more apart where the band is what tells them apart (CONTRACT.md).
BAND_FAST = 1.5
BAND_SLOW = 3.0


@dataclass(frozen=True)
class RequiredVariant:
    """One step of the lecture a lab asks for."""

    name: str
    title: str
    points: float
    kind: str = STEP
    # Fix exercises only: compute-sanitizer tools that must also find nothing in its tests
    # (a race the hardware hides from the tests, as in scan's Hillis-Steele exercise).
    sanitizer: tuple[str, ...] = ()


@dataclass
class VariantsResult:
    """The required variants of one lab: points, and one row per variant."""

    points: float = 0.0
    max: float = 0.0
    rows: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"points": self.points, "max": self.max, "rows": self.rows}


def parse(raw: Any, where: str) -> tuple[RequiredVariant, ...]:
    """The manifest's "required_variants" (a list of {name, title, points}); ValueError names the problem."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ValueError(f'{where}: "required_variants" must be a list of {{"name", "title", "points"}}')
    out, seen = [], set()
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ValueError(f'{where}: each of "required_variants" needs a "name" (the registered variant)')
        name = item["name"]
        if name == "default" or name in seen:
            raise ValueError(f'{where}: required variant {name!r} is "default" or listed twice')
        points = item.get("points", 1)
        if not isinstance(points, (int, float)) or isinstance(points, bool) or points < 0:
            raise ValueError(f'{where}: required variant {name!r}: "points" must be a number >= 0')
        title = item.get("title", name)
        if not isinstance(title, str):
            raise ValueError(f'{where}: required variant {name!r}: "title" must be a string')
        kind = item.get("kind", STEP)
        if kind not in KINDS:
            raise ValueError(f'{where}: required variant {name!r}: "kind" must be one of {", ".join(KINDS)}')
        tools = item.get("sanitizer", [])
        if (not isinstance(tools, list) or any(t not in SANITIZER_TOOLS for t in tools)
                or (tools and kind == STEP)):
            raise ValueError(f'{where}: required variant {name!r}: "sanitizer" must be a list of '
                             f'{", ".join(SANITIZER_TOOLS)}, for a "{FIX}" or "{PART}" entry only')
        seen.add(name)
        out.append(RequiredVariant(name, title or name, float(points), kind, tuple(tools)))
    return tuple(out)


def test_param(name: str) -> str:
    """The test-name suffix the kit's tests give variant `name` (non-alphanumerics become _)."""
    return re.sub(r"[^A-Za-z0-9]", "_", name) or "unnamed"


def tests_of(name: str, tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The test rows (score.Correctness.tests) that check variant `name`."""
    suffix = "/" + test_param(name)
    return [t for t in tests if t.get("name", "").startswith("Registered/") and t["name"].endswith(suffix)]


def test_filter(variant: RequiredVariant) -> str:
    """The --gtest_filter that selects a required variant's tests."""
    return f"Registered/*/{test_param(variant.name)}"


def grade(required: tuple[RequiredVariant, ...], tests: list[dict[str, Any]] | None,
          bench: dict[str, Any] | None = None, checked: dict[str, Any] | None = None,
          steps: dict[str, Any] | None = None) -> VariantsResult:
    """Points per required variant from the test rows of this run (None: the tests did not
    run), and its figures from the graded workload of the bench (when it ran). `checked`
    holds, per fix exercise with "sanitizer" tools, the sanitizer's run over its tests
    (sanitize.SanitizerResult, or None when none could run): a finding fails the exercise.
    `steps` is what the static checks read of the registrations (steps.Analysis.as_dict;
    None: not read): a step that does another step's work, or whose time is outside the
    band of the reference's same step, earns nothing (distinct())."""
    result = VariantsResult(max=sum(v.points for v in required))
    timed = progression(bench, [v.name for v in required if v.kind == STEP])
    verdicts = distinct([v.name for v in required if v.kind == STEP], steps)
    for variant in required:
        row: dict[str, Any] = {"name": variant.name, "title": variant.title, "max": variant.points, "points": 0.0,
                               "kind": variant.kind}
        if tests is None:
            row.update(status=NOT_TESTED, why="the tests did not run")
        else:
            mine = tests_of(variant.name, tests)
            if not mine and variant.kind == STEP and _registered(variant.name, steps):
                # Registered, but the run made no test of it: a registered variant's tests are
                # made from the worker's list of variants, which a machine without a GPU never reads.
                row.update(status=NOT_TESTED, why="registered in your file (the grader read its LAB_REGISTER_VARIANT "
                           "record), but no test ran it: its tests run on a GPU")
            else:
                row.update(_tested(variant, mine, checked))
            row["tests"] = len(mine)
        row.update(timed.get(variant.name, {}))
        if variant.kind == STEP:
            _judge_step(row, verdicts.get(variant.name, {}))
        result.points += row["points"]
        result.rows.append(row)
    result.points = round(result.points, 2)
    return result


def _registered(name: str, steps: dict[str, Any] | None) -> bool:
    """Whether the static checks found a LAB_REGISTER_VARIANT record of step `name` in the
    compiled file (steps.Analysis.as_dict; False when they did not read it)."""
    return isinstance(steps, dict) and bool(steps.get("ok")) and any(
        isinstance(r, dict) and r.get("name") == name for r in steps.get("variants") or [])


def _tested(variant: RequiredVariant, mine: list[dict[str, Any]], checked: dict[str, Any] | None) -> dict[str, Any]:
    """A variant's status, why, and points from its test rows (`mine`) and, for a fix
    exercise with "sanitizer" tools, the sanitizer's run over its tests."""
    failed = [t for t in mine if t.get("status") == "failed"]
    unproven = [t for t in mine if t.get("status") != "passed"]  # skipped (no GPU), or not run
    if not mine and variant.kind == FIX:
        return dict(status=MISSING, why=f"no test checked it: keep the function {variant.name} in your file "
                    "(fix its bug; do not remove it)")
    if not mine and variant.kind == PART:
        return dict(status=MISSING, why=f"no test checked it: keep the function {variant.name} in your file "
                    "(write its body; do not remove it)")
    if not mine:
        return dict(status=MISSING, why=f'no test checked it: register it with LAB_REGISTER_VARIANT(<function>, '
                    f'"{variant.name}", ...) in your file')
    if failed:
        return dict(status=FAILED, why=f"{len(failed)} of {len(mine)} tests failed: {failed[0]['name']}")
    if unproven:
        # Only a test that ran and passed proves anything: a skipped one (a machine
        # without a GPU) earns nothing.
        return dict(status=NOT_TESTED, why=f"{len(unproven)} of {len(mine)} tests did not run "
                    f"({unproven[0].get('status', '?')}: {unproven[0]['name']})")
    if not variant.sanitizer:
        return dict(status=PASSED, why=f"{len(mine)} tests passed", points=variant.points)
    found = (checked or {}).get(variant.name)
    findings = found.findings if found is not None else []
    if findings:
        return dict(status=FAILED, why=f"its {len(mine)} tests passed, but {findings[0].message}: the bug "
                    "is still there, the hardware only hid it from the tests")
    if found is None or not found.ran:
        return dict(status=PASSED, points=variant.points,
                    why=f"{len(mine)} tests passed; not checked with {', '.join(variant.sanitizer)} "
                    "(compute-sanitizer did not run)")
    return dict(status=PASSED, points=variant.points,
                why=f"{len(mine)} tests passed and {', '.join(variant.sanitizer)} found nothing")


def progression(bench: dict[str, Any] | None, names: list[str]) -> dict[str, dict[str, Any]]:
    """name -> the student's and the reference's figures for that variant in the bench's
    first graded workload: ms, GB/s (or the workload's unit), % of peak, speed vs ref."""
    if not isinstance(bench, dict):
        return {}
    workload = next((w for w in bench.get("workloads", []) if isinstance(w, dict) and w.get("graded")), None)
    if workload is None:
        return {}
    rows = {r.get("name"): r for r in workload.get("results", []) if isinstance(r, dict)}
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        mine, lecture = rows.get(name), rows.get("ref:" + name)
        figures: dict[str, Any] = {}
        if mine and isinstance(mine.get("median_ms"), (int, float)):
            figures.update(ms=mine["median_ms"], throughput=mine.get("throughput"), pct_peak=mine.get("pct_peak"))
        if lecture and isinstance(lecture.get("median_ms"), (int, float)):
            figures["reference_ms"] = lecture["median_ms"]
            if figures.get("ms"):
                figures["speed_vs_reference"] = round(lecture["median_ms"] / figures["ms"], 3)
        if figures:
            figures["unit"] = workload.get("unit", "")
            out[name] = figures
    return out


def _judge_step(row: dict[str, Any], verdict: dict[str, Any]) -> None:
    """A passing step keeps its point only when it is distinct work (verdict) and its time,
    when the bench took one, is within the band of the reference's same step."""
    name = row["name"]
    if verdict.get("kernels"):
        row["kernels"] = verdict["kernels"]
    if verdict.get("note"):
        row["note"] = verdict["note"]
    if row.get("status") != PASSED:
        return
    if verdict.get("unchecked"):
        row["distinct"] = f"not checked ({verdict['unchecked']})"
    if verdict.get("reuse"):
        row.update(status=REUSED, points=0.0, flag="reuse", reuse_of=verdict["reuse_of"], why=verdict["reuse"])
        return
    speed = row.get("speed_vs_reference")
    # speed_vs_reference is rounded to 3 decimals: the band's edges count as inside.
    if isinstance(speed, (int, float)) and speed > 0 and not 1 / BAND_SLOW - 5e-4 <= speed <= BAND_FAST + 5e-4:
        faster = speed > BAND_FAST
        row.update(status=OFF_BAND, points=0.0, flag="band",
                   why=(f"{speed:.2f}× the speed of the reference's {name} ({'faster' if faster else 'slower'} than "
                        f"the band of {1 / BAND_SLOW:.2f}× to {BAND_FAST:g}× a step's time must fall in): is this "
                        f"the step the lecture describes, or {'a later' if faster else 'an earlier'} one under its "
                        "name? Write the step as the lecture does"))


def distinct(names: list[str], steps: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per lecture step (names in the manifest's order): whether it is work of its own.

    A step registered for an interface function must launch, on every architecture of the
    object, a kernel whose code no earlier step of that function launches: else it is a
    reuse ("reuse": why, naming both registrations and their kernels; "reuse_of": the
    earlier steps). A step with no record of LAB_REGISTER_VARIANT, or that launches no
    kernel of the file the grader can find, is not distinct either. "unchecked" says why
    nothing could be told (the static checks did not read the object); "note" names a
    near copy of an earlier step's kernel, for the instructor; "kernels" lists what the
    step launches."""
    if not isinstance(steps, dict):
        return {}
    if not steps.get("ok"):
        why = str(steps.get("message") or "the compiled object could not be read")
        return {name: {"unchecked": why} for name in names}
    rows = [r for r in steps.get("variants") or [] if isinstance(r, dict)]
    out: dict[str, dict[str, Any]] = {}
    order = {name: i for i, name in enumerate(names)}
    for name in names:
        mine = [r for r in rows if r.get("name") == name]
        verdict: dict[str, Any] = {"kernels": sorted({k for r in mine for k in r.get("kernels") or []})}
        out[name] = verdict
        if not mine:
            verdict["reuse"] = (f'no LAB_REGISTER_VARIANT(<function>, "{name}", ...) found in the compiled file: '
                                "register the step with the macro, so that the grader can tell its kernels apart")
            verdict["reuse_of"] = []
            continue
        functions = [str(r.get("function")) for r in mine]
        twice = sorted({f for f in functions if functions.count(f) > 1})
        if twice:  # the macro leaves one record per registration: a second is not the kit's
            shown = ", ".join(str(r.get("symbol")) for r in mine if str(r.get("function")) == twice[0])
            verdict["reuse"] = (f'two records of step "{name}" of {twice[0]} in the compiled file (functions {shown}): '
                                "register each step once, with LAB_REGISTER_VARIANT")
            verdict["reuse_of"] = []
            continue
        for record in sorted(mine, key=lambda r: str(r.get("function"))):
            earlier = sorted((r for r in rows if r.get("function") == record.get("function")
                              and order.get(r.get("name"), len(names)) < order[name]),
                             key=lambda r: order[r["name"]])
            why = _reuse(record, earlier)
            if why:
                verdict["reuse"], verdict["reuse_of"] = why
                break
    for pair in steps.get("near") or []:
        if not isinstance(pair, dict) or pair.get("variant") not in order or pair.get("other") not in order:
            continue
        later, first = sorted((pair["variant"], pair["other"]), key=order.get, reverse=True)
        kernel, other = ((pair.get("kernel"), pair.get("other_kernel")) if later == pair["variant"]
                         else (pair.get("other_kernel"), pair.get("kernel")))
        out[later].setdefault("note", f"its kernel {kernel} is a near copy of {first}'s {other} "
                                      f"({float(pair.get('similarity', 0)):.0%} of the instructions the same): "
                                      "is it the step the lecture describes?")
    return out


def _reuse(record: dict[str, Any], earlier: list[dict[str, Any]]) -> tuple[str, list[str]] | None:
    """(why, the earlier steps) when `record` launches no kernel code of its own beside the
    `earlier` registrations of its function, on some architecture; None when it does."""
    where = f"{record.get('function')}'s \"{record.get('name')}\" ({record.get('symbol')})"
    kernels = ", ".join(record.get("kernels") or []) or "none"
    work = record.get("work") or {}
    if not work or not any(work.values()):
        return (f"{where} launches no kernel of your file that the grader can find: launch the step's own "
                "kernel from the function you register"), []
    for arch, prints in sorted(work.items()):
        mine = set(prints)
        if not mine:
            return (f"{where} launches no kernel of your file on {arch} that the grader can find: launch the step's "
                    "own kernel from the function you register"), []
        covering, before = [], set()
        for e in earlier:  # the earliest steps that together do all of this one's work
            theirs = set((e.get("work") or {}).get(arch) or [])
            if (mine & theirs) - before:
                covering.append(e)
                before |= theirs
        if mine <= before:
            others = "; ".join(f"\"{e.get('name')}\" ({e.get('symbol')}: {', '.join(e.get('kernels') or [])})"
                               for e in covering)
            return (f"{where} launches {kernels}, the same kernel code as {others}: a step needs a kernel of its "
                    "own (a copy under another name, or a template instance that changes nothing, is the same "
                    "work)"), [str(e.get("name")) for e in covering]
    return None
