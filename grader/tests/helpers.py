"""Shared helpers for the grader's unit tests: fixtures, fake programs, fake kits.

Fake programs are small Python scripts made executable in a temporary directory; they
stand in for test binaries, bench binaries and cmake so that no GPU, compiler or
network is needed.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import textwrap
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def fixture(name: str) -> Path:
    return FIXTURES / name


def load_fixture(name: str):
    return json.loads(fixture(name).read_text())


def write_script(path: Path, body: str) -> Path:
    """Write an executable Python script at `path` running `body`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body).lstrip())
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def fake_gtest(path: Path, json_fixture: str | None, stdout_fixture: str | None = None,
               exit_code: int = 0, extra: str = "", listing: list[str] | None = None) -> Path:
    """A fake test binary: checks the grader's flags (exit 2 if wrong), prints a recorded
    stdout, runs `extra`, then copies a recorded JSON to the --gtest_output path.
    With `listing` (names `Suite.Name`) it answers --gtest_list_tests as GoogleTest does."""
    lines = [
        "import os, shutil, signal, subprocess, sys, time",
        "args = sys.argv[1:]",
    ]
    if listing is not None:
        lines += [
            'if "--gtest_list_tests" in args:',
            '    print("[labkit] seed = 1")',
            f"    print({gtest_listing(listing)!r}, end='')",
            "    sys.exit(0)",
        ]
    lines += [
        'out = [a.split(":", 1)[1] for a in args if a.startswith("--gtest_output=json:")]',
        'seed = [a.split("=", 1)[1] for a in args if a.startswith("--seed=")]',
        'if not out or not seed or os.environ.get("LABKIT_SEED") != seed[0]:',
        '    sys.exit("fake gtest: bad arguments %r" % args)',
        'print("[labkit] seed = " + seed[0], flush=True)',
    ]
    if stdout_fixture:
        lines.append(f"print(open({str(fixture(stdout_fixture))!r}).read(), flush=True)")
    lines += textwrap.dedent(extra).strip().splitlines()
    if json_fixture:
        lines.append(f"shutil.copy({str(fixture(json_fixture))!r}, out[0])")
    lines.append(f"sys.exit({exit_code})")
    return write_script(path, "\n".join(lines) + "\n")


def gtest_listing(names: list[str]) -> str:
    """`--gtest_list_tests` output for tests `Suite.Name` (in the given order)."""
    out, suite = [], None
    for name in names:
        head, test = name.split(".", 1)
        if head != suite:
            out.append(f"{head}.")
            suite = head
        out.append(f"  {test}" + ("  # GetParam() = 1" if "/" in test else ""))
    return "\n".join(out) + "\n"


def fake_bench(path: Path, json_fixture: str | None, exit_code: int = 0, argv_log: Path | None = None) -> Path:
    """A fake bench binary: appends its argv to `argv_log`, writes a recorded JSON to the
    --json path with what a judge bench echoes of its command line (the seed, the library
    under test, the reference variant), exits with `exit_code`."""
    lines = ["import json, shutil, sys", "args = sys.argv[1:]"]
    if argv_log:
        lines.append(f"open({str(argv_log)!r}, 'a').write(json.dumps(args) + '\\n')")
    lines.append('if "--json" not in args: sys.exit(2)')
    if json_fixture:
        lines += [
            f"data = json.load(open({str(fixture(json_fixture))!r}))",
            "value = lambda flag: next((a.split('=', 1)[1] for a in args if a.startswith(flag + '=')), None)",
            "if isinstance(data, dict) and data.get('status') == 'ok':",
            "    data['seed'] = int(value('--seed') or data.get('seed', 0))",
            "    if value('--impl'): data['judge'] = {'impl': value('--impl')}",
            "    if '--reference-variant' in args and isinstance(data.get('reference'), dict):",
            "        data['reference']['variant'] = args[args.index('--reference-variant') + 1]",
            "json.dump(data, open(args[args.index('--json') + 1], 'w'))",
        ]
    lines.append(f"sys.exit({exit_code})")
    return write_script(path, "\n".join(lines) + "\n")


KIT = Path(__file__).resolve().parents[2]


def make_kit(root: Path, labs: list[str], solutions: bool = False, questions: bool = False) -> Path:
    """A kit root with the files that make a lab present: its manifest (the real kit's
    when it has the lab, else a minimal one) and its header. The real manifests' graded
    questions and required steps are left out unless `questions` (their points would
    change every total), and their reference variant is "default", the one the recorded
    bench fixtures name."""
    for order, lab in enumerate(labs, 1):
        folder = root / "labs" / lab
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{lab}.h").write_text("// interface\n")
        (folder / f"{lab}.cu").write_text(f"// {lab}: the student's file\n")
        real = KIT / "labs" / lab / "lab.json"
        if real.is_file():
            data = json.loads(real.read_text())
            if not questions:
                data.pop("questions", None)
                data.pop("required_variants", None)  # graded steps, like questions, change every total
            data["reference_variant"] = "default"
            (folder / "lab.json").write_text(json.dumps(data, indent=2) + "\n")
        else:
            (folder / "lab.json").write_text(json.dumps({
                "schema": "labkit-lab", "version": 1, "name": lab, "order": 100 + order, "title": lab,
                "functions": [lab], "editable": [f"labs/{lab}/{lab}.cu"]}) + "\n")
        if solutions:
            (root / "solutions" / lab).mkdir(parents=True, exist_ok=True)
    return root


def fake_libraries(build: Path, labs: list[str]) -> None:
    """Empty stand-ins for the libraries the judge programs load: the kit's build of each
    lab's student file and its reference (lib/lib<lab>_student.so, lib<lab>_solution.so)."""
    (build / "lib").mkdir(parents=True, exist_ok=True)
    for lab in labs:
        for kind in ("student", "solution"):
            (build / "lib" / f"lib{lab}_{kind}.so").write_text("")


def alive(pid: int) -> bool:
    """Whether process `pid` still runs (a zombie waiting to be reaped counts as gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def wait_gone(pid: int, seconds: float = 3.0) -> bool:
    """True once `pid` is gone, polling up to `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)

