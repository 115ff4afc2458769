"""Command-line plumbing shared by the grader's commands (export, package, batch, report)."""

from __future__ import annotations

import argparse
import sys

EXIT_USAGE = 2


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line, `grader <command>: error: ... (see --help)`,
    raised as SystemExit(message) instead of printing the usage and exiting inside argparse."""

    def __init__(self, *args, command: str, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.command = command

    def error(self, message: str):
        raise SystemExit(f"grader {self.command}: error: {message} (see --help)")


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace | int:
    """The parsed arguments, or the exit status when parsing ends the command: 0 after
    --help, EXIT_USAGE after a usage error (its message printed on stderr)."""
    try:
        return parser.parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            return EXIT_USAGE
        return int(exc.code or 0)
