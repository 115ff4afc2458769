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

from grader.rules import BUILTIN_RULES

# Course order: the order the labs are graded and listed in.
COURSE_LABS: tuple[str, ...] = (
    "vectorAdd", "reduction", "scan", "compact", "histogram",
    "sort", "transpose", "matmul", "sobel", "electrostatics",
)

DEFAULTS: dict[str, Any] = {
    "grader": {
        "build_timeout_s": 1800,
        "configure_timeout_s": 600,
        "test_timeout_s": 300,
        "bench_timeout_s": 600,
        # Each compute-sanitizer run (one tool on the lab's small test filter).
        "sanitizer_timeout_s": 600,
        # A bench whose student/reference ratio stayed noisy is run again this many
        # times; the least noisy run is scored.
        "bench_reruns": 1,
        "seed": "random",
    },
    "defaults": {
        "correctness_points": 70,
        "performance_points": 30,
        "full_credit_ratio": 1.2,
        "reference_variant": "default",
        # Suites named *Cpu test the provided sequential version, not the student's
        # code: they run (a broken CPU version shows) but earn no points.
        "test_weights": {"*Cpu.*": 0.0},
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
    },
    "labs": {
        # The Sobel homework: "solutions using global memory only will receive little credit".
        "sobel": {"required_patterns": [r"__shared__"]},
    },
}


# Small, fast tests per lab for the compute-sanitizer stage (which runs 10-100x slower):
# sizes that are not multiples of a block, so tails and bounds are exercised.
SANITIZER_FILTERS: dict[str, str] = {
    "vectorAdd": "*VectorAddGpu.MatchesCpu/n_33:*VectorAddGpu.MatchesCpu/n_1025",
    "reduction": "*ReduceSumGpu.MatchesCpu/n_1025_integers:*ReduceMaxGpu.MatchesCpu/n_1025_uniform",
    "scan": "*ScanGpu.MatchesCpu/n_33:*ScanGpu.MatchesCpu/n_1025",
    "compact": "*CompactGpu.MatchesCpu/n_1025:*ExpandGpu.MatchesCpu/n_1025",
    "histogram": "*HistogramGpu.MatchesCpu/n_33:*HistogramGpu.MatchesCpu/n_1025",
    "sort": "*SortKeysGpu.MatchesCpu/n_1025:*SortPairsGpu.MatchesStableCpuSort/n_1025",
    "transpose": "*TransposeGpu.MatchesCpu/r33_c31:*TransposeGpu.MatchesCpu/r31_c33",
    "matmul": "*MatmulGpu.MatchesCpuWithinTolerance/m31_k32_n33:*MatmulGpu.MatchesCpuWithinTolerance/m17_k33_n65",
    "sobel": "*SobelGpu.MatchesCpu/w31_h33:*SobelGpu.MatchesCpu/w33_h31",
    "electrostatics": "*CoulombSliceGpu.MatchesExactSum/nx31_ny33:*CoulombCutoffGpu.MatchesExactSum/nx31_ny33",
}
# For a lab without a built-in filter: the GPU tests at a tail size.
GENERIC_SANITIZER_FILTER = "*Gpu*/*_33*:*Gpu*/*_1025*"

SANITIZER_TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


class ConfigError(Exception):
    """The configuration file cannot be used; the message says where and why."""


@dataclass(frozen=True)
class LabSettings:
    """The effective settings of one lab (per-lab values over [defaults])."""

    correctness_points: float
    performance_points: float
    full_credit_ratio: float
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
    enabled: bool

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
            merged["sanitizer_filter"] = SANITIZER_FILTERS.get(lab, GENERIC_SANITIZER_FILTER)
        return LabSettings(**merged)

    def as_dict(self) -> dict[str, Any]:
        """The effective configuration, for the report (so a grade can be redone)."""
        return {"path": str(self.path) if self.path else None, "grader": self.grader,
                "defaults": self.defaults, "labs": self.labs}


def load(path: Path | None) -> Config:
    """The defaults, overridden by the TOML file at `path` when one is given."""
    if path is None:
        return from_dict({}, None)
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    return from_dict(data, path)


def from_dict(data: dict[str, Any], path: Path | None) -> Config:
    """Validate `data` (parsed TOML) and merge it over the defaults."""
    where = str(path) if path else "config"
    merged = copy.deepcopy(DEFAULTS)
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
        if lab not in COURSE_LABS:
            raise ConfigError(f"{where}: unknown lab [labs.{lab}]: the labs are {', '.join(COURSE_LABS)}")
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

_GRADER_KEYS: dict[str, Check] = {
    "build_timeout_s": _TIMEOUT,
    "configure_timeout_s": _TIMEOUT,
    "test_timeout_s": _TIMEOUT,
    "bench_timeout_s": _TIMEOUT,
    "sanitizer_timeout_s": _TIMEOUT,
    "bench_reruns": (lambda v: isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 5,
                     "an integer from 0 to 5"),
    "seed": (lambda v: v == "random" or (isinstance(v, int) and not isinstance(v, bool)
                                         and 0 <= v < 2**64),
             '"random" or an integer >= 0'),
}
_LAB_KEYS: dict[str, Check] = {
    "correctness_points": _POINTS,
    "performance_points": _POINTS,
    "full_credit_ratio": (lambda v: _is_number(v) and v > 0,
                          "a ratio > 0 (t_student / t_reference, e.g. 1.2)"),
    "reference_variant": (lambda v: isinstance(v, str) and v != "",
                          'a variant name such as "default"'),
    "test_weights": (_weights_ok, 'a table of "glob pattern" = weight >= 0'),
    "required_patterns": (lambda v: _patterns_ok(v), "a list of regular expressions"),
    "forbidden_patterns": (lambda v: _patterns_ok(v), "a list of regular expressions"),
    "rule_penalty": _FRACTION,
    "allow": (lambda v: isinstance(v, list) and all(name in BUILTIN_RULES for name in v),
              f"a list of built-in rule names ({', '.join(BUILTIN_RULES)})"),
    "editable": (lambda v: _editable_ok(v),
                 'a non-empty list of paths relative to the kit, e.g. ["labs/{lab}/{lab}.cu"]'),
    "sanitizer": _ENABLED,
    "sanitizer_when": (lambda v: v in ("passed", "always"), '"passed" or "always"'),
    "sanitizer_tools": (lambda v: isinstance(v, list) and all(t in SANITIZER_TOOLS for t in v),
                        f"a list of tools from {', '.join(SANITIZER_TOOLS)}"),
    "sanitizer_filter": (lambda v: isinstance(v, str), 'a GoogleTest filter such as "*Gpu*/n_33"'),
    "sanitizer_penalty": _FRACTION,
    "max_pct_peak": (lambda v: _is_number(v) and v > 0, "a percentage > 0, e.g. 100"),
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
