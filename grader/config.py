"""Grading configuration: built-in defaults, overridden by an optional TOML file.

The grader runs with no file at all; a course's `grader.toml` changes only what it
names. Every key is checked, so a typo becomes an error that names the file, the key
and what was expected, instead of a setting that silently does nothing.
See `grader/grader.example.toml` for every key with its meaning.
"""

from __future__ import annotations

import copy
import fnmatch
import re
import tomllib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import manifest
from grader.answers import FEEDBACK as ANSWER_FEEDBACK
from grader.rules import BUILTIN_RULES, CHECK_RULES

# The kit this grader belongs to; its labs, in course order, come from their manifests
# (labs/<lab>/lab.json). A grading run reads the manifests of the kit it grades.
KIT = Path(__file__).resolve().parent.parent


def kit_labs(root: Path = KIT) -> dict[str, manifest.Lab]:
    """The manifests of the kit at `root`, by name, in course order ({} when it has none)."""
    try:
        return {lab.name: lab for lab in manifest.labs(root)}
    except manifest.ManifestError as exc:
        raise ConfigError(str(exc)) from exc


class ConfigError(Exception):
    """The configuration file cannot be used; the message says where and why."""


DEFAULTS: dict[str, Any] = {
    "grader": {
        # Building the kit's own part (once per build folder: judge programs, references).
        "build_timeout_s": 1800,
        # Compiling and linking one lab's student file (every submission), and the limits
        # of each compiler process: a template bomb ends as BUILD_ERROR within a minute.
        "student_build_timeout_s": 300,
        "compile_memory_mb": 6144,
        "compile_file_mb": 512,
        # One call of an interface function in the tests: a longer one is a hang.
        "call_timeout_s": 60,
        # Labs whose tests and sanitizer runs share the GPU at once ("auto": 8 on a GPU
        # of 60 GB or more, 4 from 40 GB, 2 from 16 GB, else 1, and at most half the CPU
        # cores); a bench always runs alone.
        "parallel_labs": "auto",
        # Benches set up while other labs are still tested (workers started, inputs made),
        # each then waiting for its turn to time alone on the GPU ("auto": from the GPU's
        # memory, about one per 5 GB above 20 GB; 0: none, each bench sets up in its turn).
        "prestart_benches": "auto",
        # Processes that run one lab's tests side by side (its listed tests dealt among
        # them): a number, or "auto" (one per 20 s the lab's tests took last time, at most
        # 3), so that one long lab does not hold up the end of the test phase.
        "test_shards": 1,
        # CUDA_DEVICE_MAX_CONNECTIONS for the tests and the sanitizer (0: the driver's
        # default, 8). Each connection is a hardware queue the driver sets up in every new
        # CUDA context, and contexts start one at a time in the driver: with 1, the judge
        # programs and workers of labs tested side by side start about 3x faster. Streams
        # then share one queue (their work stays correct, it only overlaps less).
        "test_device_connections": 1,
        # The same for the judge's benches, which set up while other labs are tested. Their
        # graded work is on the default stream (the rules allow students no other, but in
        # vectorAdd, whose streams part the grader does not time), whose kernels use one
        # queue in any case: on an H100 the graded ratios and the fairness table were the
        # same with 1 as with the driver's default.
        "bench_device_connections": 1,
        # The judge's benches' sampling floors per workload: its untimed warm-up and its
        # least sampling time, in seconds ("auto": the bench's own, 0.1 and 0.3). Lower ones
        # time a class faster and each figure less steadily: check a course's choice with
        # grader.tests.stability (totals of several gradings within 1%) before using it.
        "bench_warm_up_s": "auto",
        "bench_min_time_s": "auto",
        # Compile students' files where they can read only the toolchain, the system, the
        # kit's headers and build folder and their own folder (Linux Landlock): "auto" (where
        # the kernel has it and the kit's own file compiles inside it) or false.
        "compile_jail": "auto",
        "configure_timeout_s": 600,
        "test_timeout_s": 300,
        "bench_timeout_s": 600,
        # Each compute-sanitizer run (one tool on the lab's small test filter).
        "sanitizer_timeout_s": 600,
        # A bench whose student/reference ratio stayed noisy is run again this many
        # times; the least noisy run is scored.
        "bench_reruns": 1,
        # A bench during which the GPU slowed down for heat or a hardware fault (nvidia-smi's
        # clock-event reasons just after it) runs again after this pause.
        "cooldown_s": 30,
        "seed": "random",
        # What the report says about a bench answer (a figure of the student's own bench,
        # answers.py): "verdict", whether it is within tolerance and what to do, never the
        # grading run's figure (which a student could paste back); "figures", the figures
        # compared too (the instructor's batch runs, --answer-feedback figures).
        "answer_feedback": "verdict",
        # Graders that share a GPU take turns for timing (gpu_lock.py): every grader process
        # holds a lock of the GPU's own, SHARED while it tests, EXCLUSIVE while it times a
        # bench or profiles ("auto": where nvidia-smi gives the GPU's UUID; "off": none). Its
        # files go to gpu_lock_dir ("": <temporary folder>/labkit-gpu-locks, made with mode
        # 1777); a grader waits at most gpu_lock_timeout_s for it, then goes on without it
        # (the lab's report says its timing may have shared the GPU).
        "gpu_lock": "auto",
        "gpu_lock_dir": "",
        "gpu_lock_timeout_s": 3600,
    },
    "defaults": {
        "correctness_points": 70,
        "performance_points": 30,
        "full_credit_ratio": 1.2,
        # Beyond full_credit_ratio: "continuous" gives points * full_credit_ratio / ratio
        # (no step at the threshold); "cs149" gives points / ratio (CS149's curve).
        "performance_curve": "continuous",
        # Full points when the ratio's 95% confidence interval reaches full_credit_ratio.
        "benefit_of_doubt": True,
        "reference_variant": "default",
        # Suites named *Cpu test the provided sequential version, not the student's
        # code: they run (a broken CPU version shows) but earn no points.
        # Find-the-bug exercises (suites Fix*Gpu) and further parts (suites Part*Gpu) are
        # graded as steps of their own (variants.FIX, variants.PART), so their tests do not
        # count here: a bug not yet fixed or a part not yet written costs its own points,
        # not the lab's correctness or its performance points.
        "test_weights": {"*Cpu.*": 0.0, "Registered/Fix*Gpu.*": 0.0, "Registered/Part*Gpu.*": 0.0},
        # Regular expressions matched in the implementation's code (comments ignored).
        "required_patterns": [],
        "forbidden_patterns": [],
        # Fraction of the lab's earned points lost when a rule is broken.
        "rule_penalty": 0.75,
        # Names of built-in forbidden rules (rules.BUILTIN_RULES) this lab allows.
        "allow": [],
        # The files a student may change, relative to the kit ({lab} is the lab's name;
        # glob patterns allowed). Only these are taken from a submission (--submission).
        "editable": ["labs/{lab}/{lab}.cu"],
        # compute-sanitizer stage: the tools, run on a small test filter ("" = the
        # lab's built-in filter, SANITIZER_FILTERS) when the tests passed ("passed")
        # or also when some failed ("always"); findings cost sanitizer_penalty.
        "sanitizer": True,
        "sanitizer_when": "passed",
        "sanitizer_tools": ["memcheck", "racecheck", "synccheck"],
        "sanitizer_filter": "",
        "sanitizer_penalty": 0.25,
        # A student result above this % of the device's peak (faster than the roofline
        # allows) is flagged and earns no performance points.
        "max_pct_peak": 100.0,
        # Graded questions (labs/<lab>/answers.md, listed in the lab's manifest): whether
        # they are graded, and points per question id where the manifest's are not wanted.
        "answers": True,
        "question_points": {},
        # Questions checked against Nsight Compute's figures ("check": "profile"): whether the
        # grading run profiles the kernels they name (the kit's own solution bench under ncu,
        # after the lab's timing; about a minute per lab and submission, more on a busy
        # GPU). Off: such answers stay pending for the instructor.
        "profile_answers": False,
    },
    # Per-lab built-in values come from the labs' manifests (manifest_defaults).
    "labs": {},
}


def manifest_defaults(lab: manifest.Lab) -> dict[str, Any]:
    """A lab's built-in settings from its manifest: what its code must and must not contain
    (e.g. sobel requires __shared__: the homework gives global-memory-only solutions
    little credit), the files a student edits, the reference variant it is graded
    against, and the small tests the sanitizer stage runs."""
    values: dict[str, Any] = {"editable": list(lab.editable)}
    if lab.required_patterns:
        values["required_patterns"] = list(lab.required_patterns)
    if lab.forbidden_patterns:
        values["forbidden_patterns"] = list(lab.forbidden_patterns)
    if lab.reference_variant != "default":
        values["reference_variant"] = lab.reference_variant
    if lab.sanitizer_filter:
        values["sanitizer_filter"] = lab.sanitizer_filter
    return values


# For a lab whose manifest names no sanitizer tests: the GPU tests at a tail size.
GENERIC_SANITIZER_FILTER = "*Gpu*/*_33*:*Gpu*/*_1025*"

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


@dataclass(frozen=True)
class LabSettings:
    """The effective settings of one lab (per-lab values over [defaults])."""

    correctness_points: float
    performance_points: float
    full_credit_ratio: float
    performance_curve: str
    benefit_of_doubt: bool
    reference_variant: str
    # Glob pattern -> weight, in matching order: the lab's own patterns first.
    test_weights: dict[str, float]
    required_patterns: list[str]
    forbidden_patterns: list[str]
    rule_penalty: float
    allow: list[str]
    editable: list[str]
    sanitizer: bool
    sanitizer_when: str
    sanitizer_tools: list[str]
    sanitizer_filter: str
    sanitizer_penalty: float
    max_pct_peak: float
    answers: bool
    question_points: dict[str, float]
    enabled: bool
    profile_answers: bool = False

    def weight(self, test_name: str) -> float:
        """The weight of a test `Suite.Name`: the first matching pattern's, else 1."""
        for pattern, weight in self.test_weights.items():
            if fnmatch.fnmatchcase(test_name, pattern):
                return weight
        return 1.0


@dataclass
class Config:
    """Validated configuration; `path` is None when only the defaults are in use."""

    path: Path | None
    grader: dict[str, Any]
    defaults: dict[str, Any]
    labs: dict[str, dict[str, Any]]

    def lab(self, lab: str) -> LabSettings:
        """Settings for `lab`, with its [labs.<lab>] overrides applied."""
        own = self.labs.get(lab, {})
        merged = {**self.defaults, **own}
        weights = dict(own.get("test_weights", {}))
        for pattern, weight in self.defaults["test_weights"].items():
            weights.setdefault(pattern, weight)  # the lab's own value wins
        merged["test_weights"] = weights
        merged.setdefault("enabled", True)
        if not merged["sanitizer_filter"]:
            merged["sanitizer_filter"] = GENERIC_SANITIZER_FILTER
        return LabSettings(**merged)

    def as_dict(self) -> dict[str, Any]:
        """The effective configuration, for the report (so a grade can be redone)."""
        return {"path": str(self.path) if self.path else None, "grader": self.grader,
                "defaults": self.defaults, "labs": self.labs}


def load_course(root: Path, given: Path | None = None, labs: dict[str, manifest.Lab] | None = None) -> Config:
    """The config of the course whose kit is at `root`: the file `given` (--config), else the
    kit's grader.toml when it has one, else the defaults; with the kit's labs' manifests
    (`labs`, read from `root` when not given)."""
    path = given or root / "grader.toml"
    return load(path if given is not None or path.is_file() else None, kit_labs(root) if labs is None else labs)


def load(path: Path | None, labs: dict[str, manifest.Lab] | None = None) -> Config:
    """The defaults, overridden by the TOML file at `path` when one is given. `labs` are the
    manifests of the kit being graded (default: this grader's own kit)."""
    if path is None:
        return from_dict({}, None, labs)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") from exc
    return from_dict(data, path, labs)


def from_dict(data: dict[str, Any], path: Path | None, labs: dict[str, manifest.Lab] | None = None) -> Config:
    """Validate `data` (parsed TOML) and merge it over the defaults and the labs' manifests."""
    where = str(path) if path else "config"
    labs = kit_labs() if labs is None else labs
    merged = copy.deepcopy(DEFAULTS)
    for name, lab in labs.items():
        merged["labs"][name] = manifest_defaults(lab)
    _check_keys(where, "", data, ("grader", "defaults", "labs"))
    grader = _table(where, "grader", data.get("grader", {}))
    _check_values(where, "grader", grader, _GRADER_KEYS)
    merged["grader"].update(grader)
    defaults = _table(where, "defaults", data.get("defaults", {}))
    _check_values(where, "defaults", defaults, _LAB_KEYS)
    if "test_weights" in defaults:
        # The file's patterns come first (the first match wins); built-in ones it does
        # not mention still apply.
        builtin = merged["defaults"]["test_weights"]
        defaults = {**defaults, "test_weights": {**defaults["test_weights"],
                                                 **{k: v for k, v in builtin.items()
                                                    if k not in defaults["test_weights"]}}}
    merged["defaults"].update(defaults)
    for lab, table in _table(where, "labs", data.get("labs", {})).items():
        if lab not in labs:
            raise ConfigError(f"{where}: unknown lab [labs.{lab}]: the labs are {', '.join(labs)}")
        table = _table(where, f"labs.{lab}", table)
        _check_values(where, f"labs.{lab}", table, {**_LAB_KEYS, "enabled": _ENABLED})
        merged["labs"].setdefault(lab, {}).update(table)  # over the built-in per-lab values
    return Config(path, merged["grader"], merged["defaults"], merged["labs"])


# --- validation -----------------------------------------------------------------

def _is_number(value: Any) -> bool:
    # TOML booleans arrive as Python bools, which are ints: refuse them as numbers.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _weights_ok(value: Any) -> bool:
    return isinstance(value, dict) and all(_is_number(w) and w >= 0 for w in value.values())


Check = tuple[Callable[[Any], bool], str]
_TIMEOUT: Check = (lambda v: _is_number(v) and v > 0, "a number of seconds > 0")
_POINTS: Check = (lambda v: _is_number(v) and v >= 0, "a number of points >= 0")
_ENABLED: Check = (lambda v: isinstance(v, bool), "true or false")

_FRACTION: Check = (lambda v: _is_number(v) and 0 <= v <= 1, "a fraction from 0 to 1")

_MEGABYTES: Check = (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 64,
                     "a whole number of MiB >= 64")

_GRADER_KEYS: dict[str, Check] = {
    "build_timeout_s": _TIMEOUT,
    "student_build_timeout_s": _TIMEOUT,
    "compile_memory_mb": _MEGABYTES,
    "compile_file_mb": _MEGABYTES,
    "call_timeout_s": _TIMEOUT,
    "parallel_labs": (lambda v: v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 64),
                      '"auto" or a whole number from 1 to 64'),
    "prestart_benches": (lambda v: v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 64),
                         '"auto" or a whole number from 0 to 64'),
    "compile_jail": (lambda v: v == "auto" or v is False, '"auto" or false'),
    "test_shards": (lambda v: v == "auto" or (isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 16),
                    '"auto" or a whole number from 1 to 16'),
    "test_device_connections": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 32,
                                "a whole number from 0 (the driver's default) to 32"),
    "bench_device_connections": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 32,
                                 "a whole number from 0 (the driver's default) to 32"),
    "bench_warm_up_s": (lambda v: v == "auto" or (_is_number(v) and 0 <= v <= 10),
                        '"auto" or a number of seconds from 0 to 10'),
    "bench_min_time_s": (lambda v: v == "auto" or (_is_number(v) and 0.01 <= v <= 5),
                         '"auto" or a number of seconds from 0.01 to 5'),
    "configure_timeout_s": _TIMEOUT,
    "test_timeout_s": _TIMEOUT,
    "bench_timeout_s": _TIMEOUT,
    "sanitizer_timeout_s": _TIMEOUT,
    "cooldown_s": (lambda v: _is_number(v) and 0 <= v <= 600, "a number of seconds from 0 to 600"),
    "bench_reruns": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 5,
                     "an integer from 0 to 5"),
    "seed": (lambda v: v == "random" or (isinstance(v, int) and not isinstance(v, bool)
                                         and 0 <= v < 2**64),
             '"random" or an integer >= 0'),
    "answer_feedback": (lambda v: v in ANSWER_FEEDBACK, " or ".join(f'"{v}"' for v in ANSWER_FEEDBACK)),
    "gpu_lock": (lambda v: v in ("auto", "off"), '"auto" or "off"'),
    "gpu_lock_dir": (lambda v: isinstance(v, str) and (v == "" or (v.startswith("/") and "\0" not in v)),
                     'an absolute path of a folder, or "" (the temporary folder\'s labkit-gpu-locks)'),
    "gpu_lock_timeout_s": _TIMEOUT,
}
_LAB_KEYS: dict[str, Check] = {
    "correctness_points": _POINTS,
    "performance_points": _POINTS,
    "full_credit_ratio": (lambda v: _is_number(v) and v > 0,
                          "a ratio > 0 (t_student / t_reference, e.g. 1.2)"),
    "performance_curve": (lambda v: v in ("continuous", "cs149"), '"continuous" or "cs149"'),
    "benefit_of_doubt": _ENABLED,
    "reference_variant": (lambda v: isinstance(v, str) and v != "",
                          'a variant name such as "default"'),
    "test_weights": (_weights_ok, 'a table of "glob pattern" = weight >= 0'),
    "required_patterns": (lambda v: _patterns_ok(v), "a list of regular expressions"),
    "forbidden_patterns": (lambda v: _patterns_ok(v), "a list of regular expressions"),
    "rule_penalty": _FRACTION,
    "allow": (lambda v: isinstance(v, list) and all(name in BUILTIN_RULES or name in CHECK_RULES for name in v),
              f"a list of rule names ({', '.join((*CHECK_RULES, *BUILTIN_RULES))})"),
    "editable": (lambda v: _editable_ok(v),
                 'a non-empty list of paths relative to the kit, e.g. ["labs/{lab}/{lab}.cu"]'),
    "sanitizer": _ENABLED,
    "sanitizer_when": (lambda v: v in ("passed", "always"), '"passed" or "always"'),
    "sanitizer_tools": (lambda v: isinstance(v, list) and all(t in SANITIZER_TOOLS for t in v),
                        f"a list of tools from {', '.join(SANITIZER_TOOLS)}"),
    "sanitizer_filter": (lambda v: isinstance(v, str), 'a GoogleTest filter such as "*Gpu*/n_33"'),
    "sanitizer_penalty": _FRACTION,
    "max_pct_peak": (lambda v: _is_number(v) and v > 0, "a percentage > 0, e.g. 100"),
    "answers": _ENABLED,
    "question_points": (_weights_ok, 'a table of question id = points >= 0'),
    "profile_answers": _ENABLED,
}


def _editable_ok(value: Any) -> bool:
    if not isinstance(value, list) or not value:
        return False
    for path in value:
        if not isinstance(path, str) or not path or path.startswith("/") or "\\" in path:
            return False
        if ".." in path.split("/"):
            return False  # must stay inside the kit
    return True


def _patterns_ok(value: Any) -> bool:
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        return False
    try:
        for pattern in value:
            re.compile(pattern)
    except re.error:
        return False
    return True


def _table(where: str, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [{key}] must be a table, got {value!r}")
    return value


def _check_keys(where: str, section: str, table: dict[str, Any], known: Collection[str]) -> None:
    for key in table:
        if key not in known:
            place = f"[{section}] " if section else ""
            raise ConfigError(f"{where}: unknown key {place}{key!r}: known keys are {', '.join(known)}")


def _check_values(where: str, section: str, table: dict[str, Any], checks: dict[str, Check]) -> None:
    _check_keys(where, section, table, checks)
    for key, value in table.items():
        ok, expected = checks[key]
        if not ok(value):
            raise ConfigError(f"{where}: [{section}] {key}: expected {expected}, got {value!r}")
