"""Entry point for `python3 -m grader`."""

from __future__ import annotations

import sys

NEEDED = (3, 11)


def too_old(version: tuple[int, ...]) -> str:
    """The one-line error for a Python older than the grader needs ('' when it is new enough)."""
    if tuple(version[:2]) >= NEEDED:
        return ""
    found = ".".join(str(part) for part in version[:3])
    return (f"grader: error: the grader needs Python {NEEDED[0]}.{NEEDED[1]} or newer; this is Python {found}. "
            f"Run it with python{NEEDED[0]}.{NEEDED[1]} (or newer), e.g. `python{NEEDED[0]}.{NEEDED[1]} -m grader`.")


if __name__ == "__main__":
    # Before anything else is imported: the grader reads its config with tomllib (3.11).
    problem = too_old(sys.version_info)
    if problem:
        sys.exit(problem)
    from grader import cli

    sys.exit(cli.main())
