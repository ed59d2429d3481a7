"""LightGBM ranking data: an SVMlight file without qid plus a ``.query`` file of group sizes.

The queries come from the group sizes only: a data line with ``qid:`` is refused rather than
having its qid silently overridden (read such a file with
:func:`cvxrank.data.svmlight.read_svmlight`).
"""

from __future__ import annotations

import os
import re

import numpy as np

from cvxrank.data.ranking_data import RankingData, qid_from_group
from cvxrank.data.svmlight import open_data_file, read_svmlight
from cvxrank.errors import DataFormatError

#: A query size: an optional sign and decimal digits (``int`` would also read ``1_0``).
_SIZE = re.compile(r"[+-]?[0-9]+")

#: Largest query size of a ``.query`` file: LightGBM's ``data_size_t`` is a 32-bit integer.
MAX_QUERY_SIZE = 2**31 - 1


def read_group_sizes(path: str | os.PathLike[str]) -> np.ndarray:
    """Read a LightGBM ``.query`` file: one positive integer (a query's size) per line.

    Raises
    ------
    DataFormatError
        Naming the file and line for a line that is not a positive decimal integer; for an
        empty file or one that is not a regular file.
    """
    path = os.fspath(path)
    sizes: list[int] = []
    with open_data_file(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            text = raw.strip()
            if not text:
                continue
            if not _SIZE.fullmatch(text):
                raise DataFormatError(path, lineno, f"{text!r} is not a query size")
            size = int(text)
            if size <= 0:
                raise DataFormatError(path, lineno, f"query size {size} must be >= 1")
            if size > MAX_QUERY_SIZE:
                raise DataFormatError(
                    path, lineno, f"query size {size} is above {MAX_QUERY_SIZE:,} (LightGBM "
                    "counts documents in 32-bit integers)"
                )
            sizes.append(size)
    if not sizes:
        raise DataFormatError(path, None, "no query sizes (empty file)")
    return np.asarray(sizes, dtype=np.int64)


def read_lightgbm(
    data_path: str | os.PathLike[str],
    query_path: str | os.PathLike[str] | None = None,
    *,
    n_features: int | None = None,
    dense: bool | None = None,
    cache: bool | None = None,
) -> RankingData:
    """Read LightGBM's ranking format (e.g. ``rank.train`` and ``rank.train.query``).

    Parameters
    ----------
    data_path : path-like
        SVMlight file without ``qid:`` (a line with ``qid:`` is an error).
    query_path : path-like, optional
        Group sizes, one per line; default ``data_path + ".query"``.
    n_features, dense, cache
        As in :func:`cvxrank.data.svmlight.read_svmlight`.

    Raises
    ------
    DataFormatError
        If the sizes do not add up to the number of data lines, a data line has ``qid:``, or
        either file is malformed.
    """
    data_path = os.fspath(data_path)
    query_path = os.fspath(query_path) if query_path is not None else data_path + ".query"
    raw = read_svmlight(
        data_path, n_features=n_features, require_qid=False, allow_qid=False, dense=dense,
        cache=cache,
    )
    sizes = read_group_sizes(query_path)
    if int(sizes.sum()) != raw.n_documents:
        raise DataFormatError(
            query_path, None,
            f"query sizes add up to {int(sizes.sum())} but {data_path} has {raw.n_documents} "
            "data lines",
        )
    return RankingData(
        raw.X, raw.y, qid_from_group(sizes), docid=raw.docid, comment=raw.comment,
        source=data_path, line=raw.line, n_lines=raw.n_lines,
    )
