"""Helpers shared by the subcommands: JSON output, error reporting, loading data and scores.

Every subcommand reports bad input the same way: exit code 2 and one line
``cvxrank: error: <reason>`` on stderr (see :func:`error_message`); with ``--json`` it prints
exactly one JSON object on stdout (see :func:`emit_json`).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from cvxrank.errors import CvxrankError, DataFormatError, UsageError
from cvxrank.utils.jsonable import to_jsonable

if TYPE_CHECKING:  # the heavy modules are imported where they are used (fast --help)
    import numpy as np

    from cvxrank.data.ranking_data import RankingData

#: Exceptions that mean "bad input" (exit code 2, one line on stderr, no traceback). A
#: MemoryError or OverflowError comes from an input too large for this machine or for a
#: number type; it is reported the same way.
INPUT_ERRORS: tuple[type[BaseException], ...] = (
    CvxrankError, ValueError, OSError, MemoryError, OverflowError
)

#: Exit code for bad input and for usage errors (argparse's own code).
EXIT_INPUT_ERROR = 2

#: The formats ``--format`` offers: :data:`cvxrank.data.files.FORMATS`, written again here so
#: that building the parsers (``--help``) imports no numpy (a test checks they agree).
FORMATS = ("svmlight", "lightgbm")

#: The names of the metric presets (:data:`cvxrank.metrics.PRESETS`, which
#: ``tests/cli/test_cli_imports.py`` checks them against), for the options' help without
#: importing numpy.
PRESET_NAMES = ("letor3", "letor4", "trec", "sklearn", "lightgbm")


# --------------------------------------------------------------------------- parsing


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, with a usage error reported as one line instead of usage + exit.

    :meth:`error` (unknown option, missing or invalid value, a subcommand's own check) raises
    :class:`~cvxrank.errors.UsageError`, which :func:`cvxrank.cli.main.main` reports like any
    bad input: exit code 2 and ``cvxrank: error: <reason>`` on stderr. Subparsers inherit the
    class (argparse creates them with the type of their parent).
    """

    def error(self, message: str) -> NoReturn:
        """Raise :class:`~cvxrank.errors.UsageError` naming the subcommand and its help."""
        command = self.prog.partition(" ")[2]  # "" for the top-level parser
        where = f"{command}: " if command else ""
        raise UsageError(f"{where}{message} (see '{self.prog} --help')")


_INTEGER = re.compile(r"[+-]?[0-9]+")


def _bounds(minimum: float | None, maximum: float | None, exclusive_minimum: bool) -> str:
    low = None if minimum is None else f"{'>' if exclusive_minimum else '>='} {minimum:g}"
    if maximum is None:
        return f" {low}" if low else ""
    if minimum is None:
        return f" <= {maximum:g}"
    left = "(" if exclusive_minimum else "["
    return f" in {left}{minimum:g}, {maximum:g}]"


def float_option(
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
) -> Callable[[str], float]:
    """An argparse ``type=``: a finite float within the given bounds.

    NaN and infinities are refused (``float`` would read ``nan`` and ``inf``), as is a value
    outside ``[minimum, maximum]`` (``(minimum, maximum]`` with ``exclusive_minimum``); the
    message says what was expected.
    """
    expected = f"a finite number{_bounds(minimum, maximum, exclusive_minimum)}"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        ok = math.isfinite(value)
        if ok and minimum is not None:
            ok = value > minimum if exclusive_minimum else value >= minimum
        if ok and maximum is not None:
            ok = value <= maximum
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = "finite float"
    return parse


def int_option(*, minimum: int | None = None, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type=``: a decimal integer within ``[minimum, maximum]``."""
    expected = f"an integer{_bounds(minimum, maximum, False)}"

    def parse(text: str) -> int:
        if not _INTEGER.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        value = int(text)
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    parse.__name__ = "integer"
    return parse


#: ``type=`` for a finite float > 0 (C, tolerances).
positive_float = float_option(minimum=0.0, exclusive_minimum=True)
#: ``type=`` for a finite float >= 0 (noise levels).
nonnegative_float = float_option(minimum=0.0)
#: ``type=`` for an integer >= 1 (sizes, counts, cut-offs, iteration limits).
positive_int = int_option(minimum=1)
#: ``type=`` for an integer >= 0 (seeds).
nonnegative_int = int_option(minimum=0)
#: ``type=`` for a number of BLAS threads: 0 (the library's default) to the number of CPUs.
blas_thread_count = int_option(minimum=0, maximum=os.cpu_count() or 1)


class ListOption(argparse.Action):
    """A list option written either way, the same on every command: ``--folds 1 2``,
    ``--folds 1,2`` or both (``--folds 1,2 5``); each item is read by ``element`` (an
    argparse ``type=``), a bad item is a usage error naming the option, and so is an item
    given twice where the items are a set (``unique``: folds, which a mean would otherwise
    count twice)."""

    def __init__(self, option_strings: list[str], dest: str, *,
                 element: Callable[[str], Any] = str, unique: bool = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("nargs", "+")
        super().__init__(option_strings, dest, **kwargs)
        self.element = element
        self.unique = unique

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        items = []
        for token in values:
            for part in token.split(","):
                try:
                    items.append(self.element(part))
                except (argparse.ArgumentTypeError, ValueError) as exc:
                    parser.error(f"argument {option_string}: {token!r}: {exc}")
        repeated = sorted({str(item) for item in items if items.count(item) > 1})
        if self.unique and repeated:
            parser.error(f"argument {option_string}: {', '.join(repeated)} given more than "
                         f"once")
        setattr(namespace, self.dest, items)


def clamp_k(k: int, longest_query: int) -> int:
    """The cut-off k actually used: at most the longest query's size.

    NDCG@k and P@k for k beyond the longest query add nothing that the table up to it does
    not say (every query is then shorter than k), and computing them costs a pass each:
    ``--k 100000000`` on six documents would run for minutes.
    """
    return min(k, longest_query)


# --------------------------------------------------------------------------- output


def add_progress_flag(parser: argparse.ArgumentParser) -> None:
    """``--progress/--no-progress`` (``--quiet`` the same as ``--no-progress``): the one way
    every long command shows its progress."""
    parser.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                        help="show progress on stderr as the command runs (default: on when "
                        "stderr is a terminal and the output is not --json)")
    parser.add_argument("--quiet", dest="progress", action="store_false",
                        help="no progress (as --no-progress)")


def progress_wanted(args: argparse.Namespace) -> bool:
    """``--progress`` as given, else on when stderr is a terminal and the output is not
    ``--json``."""
    if args.progress is not None:
        return bool(args.progress)
    return sys.stderr.isatty() and not getattr(args, "json", False)


def progress_lines(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where a command's progress lines go: stderr when :func:`progress_wanted`."""
    if not progress_wanted(args):
        return None
    return lambda line: print(line, file=sys.stderr, flush=True)


def add_force_flag(parser: argparse.ArgumentParser) -> None:
    """``--force``: the output folder may replace files that cvxrank did not write
    (:class:`cvxrank.utils.output_files.OutputDir`)."""
    parser.add_argument("--force", action="store_true",
                        help="replace existing files in the output folder that cvxrank did "
                        "not write (never an input file)")


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add the ``--json`` flag every subcommand has."""
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object to stdout instead of text"
    )


def json_text(obj: Mapping[str, Any]) -> str:
    """``obj`` as one JSON object (indented, strict: no NaN)."""
    return json.dumps(to_jsonable(obj), indent=2, allow_nan=False)


def emit_json(obj: Mapping[str, Any], stream: Any = None) -> None:
    """Print ``obj`` as one JSON object (:func:`json_text`) to stdout."""
    out = sys.stdout if stream is None else stream
    out.write(json_text(obj) + "\n")


def error_message(exc: BaseException) -> str:
    """The one-line reason shown after ``cvxrank: error:``."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc)
        if isinstance(exc, KeyError) and exc.args:  # KeyError's str() adds quotes
            text = str(exc.args[0])
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    if not isinstance(exc, CvxrankError):
        if isinstance(exc, MemoryError):
            return f"out of memory ({text})" if text else "out of memory"
        if isinstance(exc, OverflowError):
            return f"numeric overflow ({text})" if text else "numeric overflow"
    return text or type(exc).__name__


def report_error(exc: BaseException, stream: Any = None) -> int:
    """Write ``cvxrank: error: <reason>`` (one line) to stderr and return the exit code:
    the error's own ``exit_code`` when it has one, else 2 (bad input)."""
    out = sys.stderr if stream is None else stream
    out.write(f"cvxrank: error: {error_message(exc)}\n")
    return int(getattr(exc, "exit_code", EXIT_INPUT_ERROR))


# --------------------------------------------------------------------------- data files


def add_data_format_options(parser: argparse.ArgumentParser) -> None:
    """``--format``, ``--query`` and ``--no-read-cache``, shared by every subcommand that reads
    a data file."""
    parser.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="file format (default: detect; LightGBM when FILE.query exists and the file has "
        "no qid:)",
    )
    parser.add_argument(
        "--query",
        metavar="QUERY_FILE",
        default=None,
        help="LightGBM group sizes file (default FILE.query); implies --format lightgbm",
    )
    parser.add_argument(
        "--no-read-cache",
        dest="read_cache",
        action="store_false",
        default=None,
        help="parse data files again rather than map them from the cache of parsed files "
        "(used for files of 16 MiB or more; also CVXRANK_READ_CACHE=0)",
    )


def load_data(
    path: str | os.PathLike[str], fmt: str | None = None, query: str | None = None,
    cache: bool | None = None,
) -> tuple[RankingData, str, str | None]:
    """:func:`cvxrank.data.files.read_ranking_file` (imported on first use, so that the
    command line's start-up imports no numpy): the data, the format used and the group-sizes
    file (if any); ``cache`` False for ``--no-read-cache``."""
    from cvxrank.data.files import read_ranking_file

    return read_ranking_file(path, fmt, query, cache)


# --------------------------------------------------------------------------- scores


def read_scores(
    path: str | os.PathLike[str], n_expected: int | None = None, data_source: str | None = None
) -> np.ndarray:
    """Read a scores file: one finite number per line, aligned with a data file's data lines.

    Parameters
    ----------
    path : path-like
        The scores file.
    n_expected : int, optional
        The number of data lines (documents) the scores must match.
    data_source : str, optional
        The data file, named in the message when the counts differ.

    Returns
    -------
    ndarray of float64

    Raises
    ------
    DataFormatError
        Naming the file and line for a blank line, a line with more than one value, a
        non-numeric or non-finite value or one not in plain decimal notation (as in a data
        file: no ``1_000``); naming both counts when the number of scores differs from
        ``n_expected``; for an empty file or one that is not a regular file.
    """
    import numpy as np

    from cvxrank.data.files import text_file
    from cvxrank.data.svmlight import open_data_file, parse_number

    path = os.fspath(path)
    scores: list[float] = []
    with text_file(path), open_data_file(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            parts = raw.split()
            if not parts:
                raise DataFormatError(path, lineno, "blank line; expected one score per line")
            if len(parts) > 1:
                raise DataFormatError(
                    path, lineno, f"{len(parts)} values on the line; expected one score per line"
                )
            scores.append(parse_number(path, lineno, parts[0], "score"))
    if not scores:
        raise DataFormatError(path, None, "no scores (empty file)")
    if n_expected is not None and len(scores) != n_expected:
        data = f"the data file {data_source}" if data_source else "the data"
        raise DataFormatError(
            path,
            None,
            f"{len(scores)} scores (lines) but {data} has {n_expected} data lines; "
            "expected one score per data line",
        )
    return np.asarray(scores, dtype=np.float64)
