"""Helpers shared by the subcommands: JSON output, error reporting, loading data and scores.

Every subcommand reports bad input the same way: exit code 2 and one line
``cvxrank: error: <reason>`` on stderr (see :func:`error_message`); with ``--json`` it prints
exactly one JSON object on stdout (see :func:`emit_json`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cvxrank.data.lightgbm import read_lightgbm
from cvxrank.data.ranking_data import RankingData
from cvxrank.data.svmlight import read_svmlight
from cvxrank.errors import CvxrankError, DataFormatError

#: Exceptions that mean "bad input" (exit code 2, one line on stderr, no traceback).
INPUT_ERRORS: tuple[type[BaseException], ...] = (CvxrankError, ValueError, OSError)

#: Exit code for bad input and for usage errors (argparse's own code).
EXIT_INPUT_ERROR = 2

FORMATS = ("svmlight", "lightgbm")


# --------------------------------------------------------------------------- output


def add_json_flag(parser: argparse.ArgumentParser) -> None:
    """Add the ``--json`` flag every subcommand has."""
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object to stdout instead of text"
    )


def to_jsonable(value: Any) -> Any:
    """Convert numpy scalars/arrays, paths and tuples into plain JSON values.

    Non-finite floats become ``null`` so that the output is strict JSON.
    """
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def emit_json(obj: Mapping[str, Any], stream: Any = None) -> None:
    """Print ``obj`` as one JSON object (indented, strict: no NaN) to stdout."""
    out = sys.stdout if stream is None else stream
    out.write(json.dumps(to_jsonable(obj), indent=2, allow_nan=False) + "\n")


def error_message(exc: BaseException) -> str:
    """The one-line reason shown after ``cvxrank: error:``."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
    else:
        text = str(exc)
        if isinstance(exc, KeyError) and exc.args:  # KeyError's str() adds quotes
            text = str(exc.args[0])
    text = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return text or type(exc).__name__


def report_error(exc: BaseException, stream: Any = None) -> int:
    """Write ``cvxrank: error: <reason>`` (one line) to stderr and return exit code 2."""
    out = sys.stderr if stream is None else stream
    out.write(f"cvxrank: error: {error_message(exc)}\n")
    return EXIT_INPUT_ERROR


# --------------------------------------------------------------------------- data files


def add_data_format_options(parser: argparse.ArgumentParser) -> None:
    """``--format`` and ``--query``, shared by every subcommand that reads a data file."""
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


def first_data_line_has_qid(path: str | os.PathLike[str]) -> bool | None:
    """Whether the first data line of ``path`` has ``qid:`` (None when there is no data line)."""
    with open(path, encoding="utf-8") as fh:
        for raw in fh:
            parts = raw.partition("#")[0].split()
            if parts:
                return len(parts) > 1 and parts[1].startswith("qid:")
    return None


def detect_format(
    path: str | os.PathLike[str], fmt: str | None = None, query: str | None = None
) -> str:
    """Resolve the format of a data file: ``"svmlight"`` or ``"lightgbm"``.

    An explicit ``fmt`` wins; ``--query`` means LightGBM; otherwise the file is LightGBM when
    a sibling ``FILE.query`` exists and its first data line has no ``qid:``.
    """
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if query is not None:
        if fmt == "svmlight":
            raise ValueError("--query (LightGBM group sizes) cannot be used with --format svmlight")
        return "lightgbm"
    if fmt is not None:
        return fmt
    sibling = Path(os.fspath(path) + ".query")
    if sibling.is_file() and first_data_line_has_qid(path) is False:
        return "lightgbm"
    return "svmlight"


def load_data(
    path: str | os.PathLike[str], fmt: str | None = None, query: str | None = None
) -> tuple[RankingData, str, str | None]:
    """Read a data file; return the data, the format used and the group-sizes file (if any)."""
    with _text_file(path):
        used = detect_format(path, fmt, query)
    if used == "lightgbm":
        query_path = query if query is not None else os.fspath(path) + ".query"
        with _text_file(path, query_path):
            return read_lightgbm(path, query_path), used, query_path
    with _text_file(path):
        return read_svmlight(path), used, None


@contextlib.contextmanager
def _text_file(*paths: str | os.PathLike[str]) -> Iterator[None]:
    """Turn a UnicodeDecodeError (a binary or non-UTF-8 file) into an error naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        names = " or ".join(os.fspath(p) for p in paths)
        raise DataFormatError(names, None, f"not a UTF-8 text file ({exc.reason})") from None


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
        non-numeric or non-finite value; naming both counts when the number of scores differs
        from ``n_expected``; for an empty file.
    """
    path = os.fspath(path)
    scores: list[float] = []
    with _text_file(path), open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            parts = raw.split()
            if not parts:
                raise DataFormatError(path, lineno, "blank line; expected one score per line")
            if len(parts) > 1:
                raise DataFormatError(
                    path, lineno, f"{len(parts)} values on the line; expected one score per line"
                )
            try:
                value = float(parts[0])
            except ValueError:
                raise DataFormatError(path, lineno, f"score {parts[0]!r} is not a number") from None
            if not math.isfinite(value):
                raise DataFormatError(
                    path, lineno, f"score is {parts[0]!r}; expected a finite number"
                )
            scores.append(value)
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
