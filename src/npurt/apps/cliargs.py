"""The one style of every `npurt` subcommand's arguments.

Every subcommand has an argparse parser made by `command_parser` (prog `npurt NAME`, the same
help layout, no abbreviated options). Bad or missing arguments print the usage and one
`npurt NAME: error: ...` line on stderr and exit with status 2; `-h` prints the help and exits
with 0. `parse` turns argparse's SystemExit into that return value, so each command's
`main(argv) -> int` can be called in-process.

Commands that run a program (`npurt run`, `npurt launch`) pass everything after the program's
name through untouched: `split_passthrough` separates their own options from the program and
its arguments, the way `python [options] script args` / `python -m mod args` / `python -c code
args` does.
"""
from __future__ import annotations

import argparse
import sys
import textwrap


class Exit(Exception):
    """Leave a command with this status (argparse's help, usage errors)."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises Exit instead of leaving the interpreter."""

    def exit(self, status: int = 0, message: str | None = None):
        if message:
            self._print_message(message, sys.stderr)
        raise Exit(status)


def command_parser(name: str, summary: str, epilog: str | None = None) -> CommandParser:
    """The parser of `npurt NAME`: one help format for every subcommand."""
    return CommandParser(prog=f"npurt {name}", description=textwrap.fill(summary, 78), epilog=epilog, allow_abbrev=False,
                         formatter_class=argparse.RawDescriptionHelpFormatter)


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse or raise Exit (status 0 after --help, 2 after a usage error)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:  # a plain ArgumentParser's exit
        raise Exit(exc.code if isinstance(exc.code, int) else 2) from None


def split_passthrough(argv: list[str], takes_value: set[str], program_flags: tuple[str, ...] = ()):
    """(own options, program part, program arguments) of `[options] PROGRAM [args...]`.

    Options come first; the first argument that is not an option (or that follows `--`) is the
    program, and everything after it belongs to the program. A flag of `program_flags` (`-m`,
    `-c`) is a program given by its value: `-m MOD args...`. Options in `takes_value` consume
    the next argument unless written `--opt=value`.
    """
    own: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            return own, argv[i + 1:i + 2], argv[i + 2:]
        flag = next((f for f in program_flags if arg == f or (arg.startswith(f) and len(arg) > 2)), None)
        if flag is not None:
            if arg == flag:
                return own, argv[i:i + 2], argv[i + 2:]
            return own, [flag, arg[len(flag):]], argv[i + 1:]    # -mpkg.mod, -c'code'
        if not arg.startswith("-") or arg == "-":
            return own, [arg], argv[i + 1:]
        own.append(arg)
        if arg in takes_value and i + 1 < len(argv):
            own.append(argv[i + 1])
            i += 1
        i += 1
    return own, [], []
