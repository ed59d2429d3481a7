"""The ``cvxrank`` command line.

Each subcommand lives in its own module ``cvxrank.cli.<name>`` that exposes
``register(subparsers)``: it adds its parser and sets ``func(args) -> int``. Adding a
subcommand is one entry in :data:`COMMANDS`.

Only the module of the subcommand being run is imported (the others appear in ``--help``
through their summary in :data:`COMMANDS`), so that ``cvxrank --help``, ``--version``,
``data``, ``evaluate`` and ``predict`` never import scikit-learn, nor CVXPY (but for a
ConeRank model's votes).

Exit codes: 0 on success; 2 for bad input (a :class:`cvxrank.errors.CvxrankError`, a
``ValueError``, an ``OSError``, a ``MemoryError`` or an ``OverflowError`` from reading or
validating it) and for usage errors (argparse's, raised as
:class:`cvxrank.errors.UsageError`): one line ``cvxrank: error: <reason>`` on stderr, no
traceback and no usage block.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Iterable, Sequence

from cvxrank import __version__
from cvxrank.cli.common import EXIT_INPUT_ERROR, INPUT_ERRORS, ArgumentParser, report_error
from cvxrank.errors import UsageError

#: Subcommand modules under ``cvxrank.cli``, in the order ``--help`` lists them, with the
#: summary it shows (the ``help=`` each module gives its parser; a test keeps them equal).
COMMANDS: dict[str, str] = {
    "data": "inspect ranking data files",
    "evaluate": "NDCG@k, P@k, MAP and MRR of a scores file",
    "verify": "check every fast solver against certified CVXPY optima",
    "fit": "train a ranking model (and evaluate it on a test file)",
    "predict": "score a data file with a saved model (scores file or TREC run)",
    "figures": "regenerate the convergence figures of figures/ (PNG + CSV)",
    "reproduce": "rerun a paper's experiment (table or figure)",
    "grid": "the LETOR protocol: grid per fold, select on vali, report test",
}


def build_parser(commands: Iterable[str] = ()) -> argparse.ArgumentParser:
    """The top-level parser, with the subcommands ``commands`` fully registered.

    Every other subcommand of :data:`COMMANDS` gets a placeholder parser holding its
    summary, enough for ``cvxrank --help`` and for argparse to recognize the name, without
    importing its module.
    """
    chosen = set(commands)
    parser = ArgumentParser(
        prog="cvxrank",
        description="Convex-optimization sandbox for learning to rank.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, summary in COMMANDS.items():
        if name in chosen:
            importlib.import_module(f"cvxrank.cli.{name}").register(subparsers)
        else:
            subparsers.add_parser(name, help=summary)
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv``: its first word not starting with ``-``, if known.

    The top-level parser has no option that takes a value (only ``--help`` and
    ``--version``), so that word is the subcommand.
    """
    word = next((a for a in argv if not a.startswith("-")), None)
    return word if word in COMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``); return the exit code.

    Run as the program (``argv`` None: the ``cvxrank`` script, ``python -m``), it ends by
    freezing the objects still alive (:func:`gc.freeze`), so that the interpreter's exit does
    not walk them again in its final garbage collections: after the imports of numpy, scipy
    and cvxrank that walk took about 0.08 s of CPU, a tenth of a one-fold fit
    (``benchmarks/bench_startup.py``). The exit is otherwise unchanged (``atexit`` handlers,
    standard streams flushed, objects released by reference counting finalized); only
    objects in reference cycles are left to the operating system, not collected. Called with
    ``argv`` (tests, other Python code), nothing is frozen.
    """
    code = _main(list(sys.argv[1:] if argv is None else argv))
    if argv is None:
        gc.freeze()
    return code


#: The commands of many fits: the first Ctrl-C stops the whole command (exit 130, nothing
#: written), where a lone ``fit`` returns its interrupted run (:func:`cvxrank.core.trace.
#: interruptible`).
MANY_FITS = frozenset({"grid", "reproduce", "verify", "figures"})


def _main(args_list: list[str]) -> int:
    """:func:`main` on a list of arguments."""
    command = command_of(args_list)
    try:
        parser = build_parser([] if command is None else [command])
        args, extras = parser.parse_known_args(args_list)
        if extras:  # reported here, so that the message points at the subcommand
            prog = f"cvxrank {command}" if command else "cvxrank"
            prefix = f"{command}: " if command else ""
            raise UsageError(
                f"{prefix}unrecognized arguments: {' '.join(extras)} (see '{prog} --help')"
            )
        if command in MANY_FITS:
            from cvxrank.core.interrupts import interruptible

            with interruptible(command=True):
                return int(args.func(args) or 0)
        return int(args.func(args) or 0)
    except SystemExit as exc:  # --help and --version
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
