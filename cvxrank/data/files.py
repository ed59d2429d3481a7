"""A ranking data file of either format, read by what it is: SVMlight/LETOR (``qid:`` on
every line) or LightGBM (the features with the group sizes in ``FILE.query``).

:func:`read_ranking_file` is the one reader of the command line (``--train``, ``--data``,
...), the experiments' file sources and the shards: an explicit format wins, a group-sizes
file means LightGBM, and otherwise a file with a sibling ``FILE.query`` and no ``qid:`` on
its first data line is LightGBM (:func:`detect_format`). A file that is not UTF-8 text is
refused naming it.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from cvxrank.errors import DataFormatError

if TYPE_CHECKING:
    from cvxrank.data.ranking_data import RankingData

#: The formats of a data file.
FORMATS = ("svmlight", "lightgbm")


def first_data_line_has_qid(path: str | os.PathLike[str]) -> bool | None:
    """Whether the first data line of ``path`` has ``qid:`` (None when there is no data line)."""
    from cvxrank.data.svmlight import open_data_file

    with open_data_file(path) as fh:
        for raw in fh:
            parts = raw.partition("#")[0].split()
            if parts:
                return len(parts) > 1 and parts[1].startswith("qid:")
    return None


def detect_format(
    path: str | os.PathLike[str], fmt: str | None = None, query: str | None = None
) -> str:
    """Resolve the format of a data file: ``"svmlight"`` or ``"lightgbm"``.

    An explicit ``fmt`` wins; ``query`` (a group-sizes file) means LightGBM; otherwise the
    file is LightGBM when a sibling ``FILE.query`` exists and its first data line has no
    ``qid:``.
    """
    if fmt is not None and fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if query is not None:
        if fmt == "svmlight":
            raise ValueError("--query (LightGBM group sizes) cannot be used with --format svmlight")
        return "lightgbm"
    if fmt is not None:
        return fmt
    if os.path.isfile(os.fspath(path) + ".query") and first_data_line_has_qid(path) is False:
        return "lightgbm"
    return "svmlight"


def read_ranking_file(
    path: str | os.PathLike[str], fmt: str | None = None, query: str | None = None,
    cache: bool | None = None,
) -> tuple[RankingData, str, str | None]:
    """Read a data file; return the data, the format used and the group-sizes file (if any).

    A LightGBM file (``fmt="lightgbm"``, ``query`` given, or detected) takes its queries from
    the group sizes; a ``qid:`` field in it is an error rather than silently overridden.
    ``cache`` is :func:`~cvxrank.data.svmlight.read_svmlight`'s (None: its default; False
    parses the file again).

    Raises
    ------
    cvxrank.errors.DataFormatError
        For a malformed file (naming it and the line) or one that is not UTF-8 text.
    """
    from cvxrank.data.lightgbm import read_lightgbm
    from cvxrank.data.svmlight import read_svmlight

    with text_file(path):
        used = detect_format(path, fmt, query)
    if used == "lightgbm":
        query_path = query if query is not None else os.fspath(path) + ".query"
        with text_file(path, query_path):
            return read_lightgbm(path, query_path, cache=cache), used, query_path
    with text_file(path):
        return read_svmlight(path, cache=cache), used, None


@contextlib.contextmanager
def text_file(*paths: str | os.PathLike[str]) -> Iterator[None]:
    """Turn a UnicodeDecodeError (a binary or non-UTF-8 file) into an error naming the file."""
    try:
        yield
    except UnicodeDecodeError as exc:
        names = " or ".join(os.fspath(p) for p in paths)
        raise DataFormatError(names, None, f"not a UTF-8 text file ({exc.reason})") from None
