"""Entry point for `python3 -m grader`.

Written so that any Python can read it (no f-strings, no annotations): an old Python gets
one line that says what to run, and the usage exit status 2, not a SyntaxError."""

import sys

NEEDED = (3, 11)
EXIT_USAGE = 2


def too_old(version):
    """The one-line error for a Python older than the grader needs ('' when it is new enough)."""
    if tuple(version[:2]) >= NEEDED:
        return ""
    found = ".".join(str(part) for part in version[:3])
    wanted = "%d.%d" % NEEDED
    return ("grader: error: the grader needs Python %s or newer; this is Python %s. "
            "Run it with python%s (or newer), e.g. `python%s -m grader`." % (wanted, found, wanted, wanted))


if __name__ == "__main__":
    # Before anything else is imported: the grader reads its config with tomllib (3.11).
    problem = too_old(sys.version_info)
    if problem:
        sys.stderr.write(problem + "\n")
        sys.exit(EXIT_USAGE)
    from grader import cli

    sys.exit(cli.main())
