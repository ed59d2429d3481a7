"""The ``cvxrank`` command line.

Each subcommand lives in its own module ``cvxrank.cli.<name>`` that exposes
``register(subparsers)``: it adds its parser and sets ``func(args) -> int``. Adding a
subcommand is one entry in :data:`COMMANDS`.

Exit codes: 0 on success; 2 for bad input (a :class:`cvxrank.errors.CvxrankError`, a
``ValueError`` or an ``OSError`` from reading or validating it; one line
``cvxrank: error: <reason>`` on stderr, no traceback) and for usage errors (argparse).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from cvxrank import __version__
from cvxrank.cli.common import EXIT_INPUT_ERROR, INPUT_ERRORS, report_error

#: Subcommand modules under ``cvxrank.cli``, in the order ``--help`` lists them.
COMMANDS: tuple[str, ...] = ("data", "evaluate", "verify", "fit", "figures", "reproduce")


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand of :data:`COMMANDS` registered."""
    parser = argparse.ArgumentParser(
        prog="cvxrank",
        description="Convex-optimization sandbox for learning to rank.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        importlib.import_module(f"cvxrank.cli.{name}").register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except SystemExit as exc:  # --help, --version, usage errors and a subcommand's parser.error
        return _exit_code(exc)
    except BrokenPipeError:  # stdout closed early (`cvxrank ... | head`): stop quietly
        _silence_stdout()
        return 1
    except INPUT_ERRORS as exc:
        return report_error(exc)
    except KeyboardInterrupt:
        sys.stderr.write("cvxrank: interrupted\n")
        return 130


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    return code if isinstance(code, int) else EXIT_INPUT_ERROR


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # pragma: no cover (no real stdout)
        pass


if __name__ == "__main__":
    sys.exit(main())
